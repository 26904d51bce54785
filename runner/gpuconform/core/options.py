"""The options of a run: their values parsed and checked (one-line errors), the
form run.json stores them in and `gpuconform resume` reads back, the pytest
arguments that give them again, and the inputs they name (test lists,
expectation rules, kernel log patterns, the metric catalogue), loaded before
anything runs."""

from __future__ import annotations

import argparse
import fnmatch
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

import pytest

from .catalogue import DEFAULT_CATALOGUE, Catalogue, CatalogueError, load_catalogue
from .execute import (
    DEFAULT_GRACE_S,
    DEFAULT_LIST_TIMEOUT_S,
    DEFAULT_TIMEOUT_S,
)
from .expectations import (
    ExpectationError,
    Expectations,
    default_expectation_files,
    load_expectations,
)
from .kmsg import (
    KMSG_PATH,
    TAINT_PATH,
    DmesgPatternError,
    DmesgPatterns,
    load_patterns,
)
from .devices import DevicesError, check_jobs, find_gpus, select_gpus
from .placement import NodePlan
from .optable import (
    DEFAULT_PATTERNS,
    DEFAULT_RETRIES,
    OPTIONS,
    SCRATCH_ENV,
    cli_values,
    pytest_values,
)
from .optvalues import (
    InputError,
    argtype,
    check_kernel_source,
    check_scratch_dir,
    parse_devices,
    parse_jobs,
    parse_retries,
    parse_timeout_override,
    seconds,
    seconds_or_zero,
)
from .testlist import TestlistError, TestPattern, load_testlist, resolve_testlist

__all__ = [
    "DATA_DIR", "DEFAULT_PATTERNS", "DEFAULT_RETRIES", "FIELD_ORDER", "SCRATCH_ENV", "parse_jobs",
    "PROGRESS_MODES", "InputError", "RunOptions", "RunInputs", "argtype", "check_kernel_source",
    "check_scratch_dir",
    "load_inputs", "options_to_args", "seconds", "seconds_or_zero", "parse_devices", "parse_retries", "parse_timeout_override",
]

REPO_ROOT = Path(__file__).resolve().parents[3]
DATA_DIR = REPO_ROOT / "data"
PROGRESS_MODES = ("auto", "tty", "plain", "off")


# ---------------------------------------------------------------- options


@dataclass
class RunOptions:
    """Everything that decides what a run does: run.json keeps it for resume."""

    timeout: float = DEFAULT_TIMEOUT_S
    grace: float = DEFAULT_GRACE_S
    list_timeout: float = DEFAULT_LIST_TIMEOUT_S
    testlists: list[str] = field(default_factory=list)  # names or paths, as given
    include: list[str] = field(default_factory=list)
    exclude: list[str] = field(default_factory=list)
    timeout_overrides: list[tuple[str, float]] = field(default_factory=list)
    devices: str | None = None  # indexes or UUIDs; None: every GPU of the node (devices.py)
    jobs: int | None = None  # copies of a one-GPU test at once; None: one per GPU
    lockstep: bool = False  # a one-GPU test's copies at once, the next when all end (queues.py)
    scratch_dir: str | None = None  # exported as GPUCONFORM_SCRATCH_DIR
    shard: tuple[int, int] | None = None
    expectations: list[str] | None = None  # None: data/expectations/*.txt for the suite
    platform: str | None = None  # None: this machine's fingerprint key
    retries: int = DEFAULT_RETRIES
    dmesg_patterns: str = str(DEFAULT_PATTERNS)
    catalogue: str = str(DEFAULT_CATALOGUE)  # the metric catalogue (catalogue.py)
    kmsg: str = KMSG_PATH  # "off": not read
    taint_file: str = TAINT_PATH  # "off": not watched
    baselines: list[str] | None = None  # None: data/baselines (given: must hold this machine's)
    baseline: str | None = None  # the baseline file to compare with (None: found by fingerprint)
    no_baseline: bool = False
    regressions_expected: bool = False
    report: bool = True
    openmetrics: str | None = None  # a Prometheus text file written after results.json
    level: str | None = None  # levels.py; None: not asked for (binaries run their standard counts)
    duration: float | None = None  # seconds: long's --duration (None: the level's default)

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        for opt in OPTIONS:
            if opt.to_json is not None:
                d[opt.field] = opt.to_json(getattr(self, opt.field))
        return d

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> "RunOptions":
        known = {k: v for k, v in obj.items() if k in cls.__dataclass_fields__}
        o = cls(**known)
        for opt in OPTIONS:
            if opt.from_json is not None:
                setattr(o, opt.field, opt.from_json(getattr(o, opt.field)))
        return o

    @classmethod
    def from_config(cls, config: pytest.Config) -> "RunOptions":
        """The --gc-* options' (not checked: check_pytest_given)."""
        return cls(**pytest_values(config.getoption))

    @classmethod
    def from_args(cls, args: argparse.Namespace, *, selection_only: bool = False
                  ) -> "RunOptions":
        """`gpuconform run`'s (not checked: check_cli_given), or where
        selection_only the selection options' alone (`gpuconform list`)."""
        return cls(**cli_values(args, selection_only=selection_only))

    def timeout_for(self, test: str) -> float:
        """The first --timeout-override whose GLOB matches, else --timeout."""
        for glob, secs in self.timeout_overrides:
            if fnmatch.fnmatchcase(test, glob):
                return secs
        return self.timeout


# run.json's order of the options, and pytest --help's
FIELD_ORDER = tuple(f.name for f in fields(RunOptions))


def options_to_args(o: RunOptions) -> list[str]:
    """The --gc-* pytest arguments that give RunOptions o (those that are
    not their default)."""
    default = RunOptions()
    return [a for opt in OPTIONS
            for a in opt.pytest_args(getattr(o, opt.field), getattr(default, opt.field))]


@dataclass
class RunInputs:
    """The files the options name, loaded and checked."""

    patterns: list[TestPattern] | None
    testlist_files: list[Path]
    expectations: Expectations
    expectation_files: list[Path]
    dmesg: DmesgPatterns
    catalogue: Catalogue
    platform: str
    fingerprint: dict[str, str] | None
    node: NodePlan
    fingerprint_error: str | None = None


def _fingerprint() -> tuple[dict[str, str] | None, str, str | None]:
    """(fingerprint json, key, error): never raises."""
    try:
        from .fingerprint import current_fingerprint

        fp = current_fingerprint()
        return fp.to_json(), fp.key(), None
    except Exception as e:  # noqa: BLE001 - a missing or broken module is reported, not fatal
        return None, "", f"fingerprint: {type(e).__name__}: {' '.join(str(e).split())[:200]}"


def load_inputs(o: RunOptions, *, selftest: bool = False) -> RunInputs:
    """Read the test lists, expectations, kernel log patterns and the metric
    catalogue; InputError (one line, naming the file and line) for anything
    wrong. (The timing baseline asked for by name is perf's, loaded after
    these by the caller: plugin.load_run_inputs.)"""
    files: list[Path] = []
    patterns: list[TestPattern] | None = None
    try:
        for t in o.testlists:
            path = resolve_testlist(t, DATA_DIR)
            files.append(path)
            patterns = (patterns or []) + load_testlist(path)
    except TestlistError as e:
        raise InputError(str(e)) from None
    if o.scratch_dir is not None:
        check_scratch_dir(o.scratch_dir)
    fp, key, fp_error = _fingerprint()
    platform = o.platform if o.platform is not None else key
    if o.expectations is not None:
        exp_files = [Path(p) for p in o.expectations]
    else:
        exp_files = [] if selftest else default_expectation_files(DATA_DIR)
    try:
        exp = load_expectations(exp_files, platform=platform)
    except ExpectationError as e:
        raise InputError(str(e)) from None
    try:
        dmesg = load_patterns(o.dmesg_patterns)
    except DmesgPatternError as e:
        raise InputError(str(e)) from None
    try:
        catalogue = load_catalogue(o.catalogue)
    except CatalogueError as e:
        raise InputError(str(e)) from None
    return RunInputs(patterns, files, exp, exp_files, dmesg, catalogue, platform, fp,
                     node_plan(o), fp_error)


def node_plan(o: RunOptions) -> NodePlan:
    """The GPUs the run uses and how many copies run at once; InputError (one
    line) for a --devices or --jobs this node cannot honour."""
    gpus = find_gpus()
    try:
        chosen = select_gpus(gpus, o.devices)
        return NodePlan(gpus, chosen, check_jobs(o.jobs, chosen))
    except DevicesError as e:
        raise InputError(str(e)) from None
