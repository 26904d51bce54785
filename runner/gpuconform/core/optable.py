"""The table of a run's options: one entry per RunOptions field, from which
`gpuconform run`'s (and `qualify`'s, and `list`'s selection) arguments, the
plugin's --gc-* pytest options, the field's value read from either, the pytest
arguments that give it again and its form in run.json are all made. A new run
option is a field of RunOptions (options.py) and an entry here (one whose value
is a path: path=True, and fleet_script makes it absolute for the shards).

The entries are in `gpuconform run --help`'s order; RunOptions' fields keep
run.json's (and pytest --help's)."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence

from .catalogue import DEFAULT_CATALOGUE
from .execute import DEFAULT_GRACE_S, DEFAULT_LIST_TIMEOUT_S, DEFAULT_TIMEOUT_S
from .kmsg import KMSG_PATH, TAINT_PATH
from .levels import LEVEL_ENV, LEVELS, parse_duration
from .optvalues import (
    argtype,
    check_kernel_source,
    check_output_file,
    non_negative_arg,
    parse_devices,
    parse_jobs,
    parse_retries,
    parse_timeout_override,
    positive_arg,
    seconds,
    seconds_or_zero,
)
from .shard import parse_shard

__all__ = [
    "VALUE", "LIST", "OPTIONAL_LIST", "FLAG", "NOT_FLAG", "RunOption", "OPTIONS", "BY_FIELD",
    "add_cli_arguments", "add_pytest_options", "cli_values", "pytest_values", "check_cli_given",
    "check_pytest_given", "path_options", "DEFAULT_PATTERNS", "DEFAULT_RETRIES", "SCRATCH_ENV",
]

REPO_ROOT = Path(__file__).resolve().parents[3]
DEFAULT_PATTERNS = REPO_ROOT / "data" / "dmesg" / "patterns.txt"
# One retry: enough to tell a flake from a failure that repeats, for the price
# of running only the failing tests once more; more would hide intermittent
# bugs behind passes and multiply the cost of every timeout.
DEFAULT_RETRIES = 1
SCRATCH_ENV = "GPUCONFORM_SCRATCH_DIR"  # lib/io.h GC_SCRATCH_ENV

# What an option's value is, which decides its argparse action, its value
# when absent and how pytest is given it again.
VALUE = "value"  # one value, or None; given when not the field's default
LIST = "list"  # repeatable; absent: []
OPTIONAL_LIST = "optional list"  # repeatable; absent: None (a default chosen later)
FLAG = "flag"  # store_true: the field is the flag
NOT_FLAG = "not flag"  # store_true: the field is its negation (--no-report: report)


def _same(value: Any) -> Any:
    return value


def _absolute(path: str | None) -> str | None:
    return str(Path(path).absolute()) if path is not None else None


def _absolute_if_given(path: str | None) -> str | None:
    """--scratch-dir's: an empty one is none."""
    return str(Path(path).absolute()) if path else None


def _absolute_all(paths: list[str] | None) -> list[str] | None:
    """The paths of an option made absolute; None (the option not given) stays None."""
    return [str(Path(p).absolute()) for p in paths] if paths is not None else None


def _or_kmsg(path: str | None) -> str:
    return path or KMSG_PATH


def _or_taint(path: str | None) -> str:
    return path or TAINT_PATH


def _readable_unless_off(option: str, path: str | None) -> None:
    """A kernel log or taint file given must be readable (before anything runs)."""
    if path is not None and path != "off":
        check_kernel_source(option, path)


def _shard_arg(shard: tuple[int, int]) -> str:
    return f"{shard[0]}/{shard[1]}"


def _override_arg(override: tuple[str, float]) -> str:
    return f"{override[0]}={override[1]!r}"


def _shard_to_json(shard: tuple[int, int] | None) -> list[int] | None:
    return list(shard) if shard else None


def _shard_from_json(shard: Any) -> tuple[int, int] | None:
    return (int(shard[0]), int(shard[1])) if shard else None


def _overrides_to_json(overrides: list[tuple[str, float]]) -> list[list[Any]]:
    return [[g, s] for g, s in overrides]


def _overrides_from_json(overrides: Any) -> list[tuple[str, float]]:
    return [(str(g), float(s)) for g, s in overrides]


def _dest(flag: str) -> str:
    """argparse's (and pytest's) attribute of a --flag."""
    return flag.lstrip("-").replace("-", "_")


@dataclass(frozen=True)
class RunOption:
    """One run option: RunOptions' field, its `gpuconform run` argument (cli,
    help, type) and its pytest option (gc, gc_help, gc_type where it parses
    otherwise), and the hooks of the few whose value is not taken as it is."""

    field: str  # RunOptions' attribute, run.json's key
    gc: str  # the plugin's pytest option
    gc_help: str
    cli: str | None = None  # `gpuconform run`'s option; None: pytest's only
    help: str = ""  # its line in `gpuconform run --help`
    kind: str = VALUE
    metavar: str | None = None
    type: Callable[[str], Any] | None = None  # argparse's; pytest's too unless gc_type
    gc_type: Callable[[str], Any] | None = None
    gc_metavar: str | None = None  # pytest's, where not metavar
    choices: tuple[str, ...] | None = None
    default: Any = None  # VALUE: both parsers' default
    selection: bool = False  # one of the selection options, which `list` takes too
    cli_extend: bool = False  # OPTIONAL_LIST: `--opt A B ...` (nargs="+") instead of append
    exclusive: str | None = None  # the argparse group of options that exclude each other
    gc_empty: tuple[str, str] | None = None  # OPTIONAL_LIST: pytest's flag giving [], its help
    from_cli: Callable[[Any], Any] = _same  # argparse's value -> the field's
    from_gc: Callable[[Any], Any] = _same  # pytest's value -> the field's
    arg: Callable[[Any], str] = str  # a value (a list's item) as pytest's argument
    to_json: Callable[[Any], Any] | None = None  # run.json's form, where not the field's
    from_json: Callable[[Any], Any] | None = None
    check: Callable[[str, Any], None] | None = None  # a given value, checked before the run
    path: bool = False  # its values are paths: fleet_script makes them absolute for the shards

    @property
    def cli_dest(self) -> str:
        assert self.cli is not None
        return _dest(self.cli)

    @property
    def gc_dest(self) -> str:
        return _dest(self.gc)

    def cli_kwargs(self) -> dict[str, Any]:
        """add_argument's keywords for `gpuconform run`'s option."""
        if self.kind in (FLAG, NOT_FLAG):
            return {"action": "store_true", "help": self.help}
        kw: dict[str, Any] = {"help": self.help}
        if self.metavar is not None:
            kw["metavar"] = self.metavar
        if self.kind == VALUE:
            kw["default"] = self.default
        elif self.cli_extend:
            kw.update(nargs="+", action="extend", default=None)
        else:
            kw.update(action="append", default=[] if self.kind == LIST else None)
        if self.type is not None:
            kw["type"] = self.type
        if self.choices is not None:
            kw["choices"] = list(self.choices)
        return kw

    def gc_kwargs(self) -> dict[str, Any]:
        """addoption's keywords for the pytest option."""
        if self.kind in (FLAG, NOT_FLAG):
            return {"action": "store_true", "help": self.gc_help}
        kw: dict[str, Any] = {"help": self.gc_help}
        if (self.gc_metavar or self.metavar) is not None:
            kw["metavar"] = self.gc_metavar or self.metavar
        if self.kind == VALUE:
            kw["default"] = self.default
        else:
            kw["action"] = "append"
        if self.gc_type is not None or self.type is not None:
            kw["type"] = self.gc_type or self.type
        if self.choices is not None:
            kw["choices"] = list(self.choices)
        return kw

    def pytest_args(self, value: Any, default: Any) -> list[str]:
        """The pytest arguments that give value (nothing for the field's default)."""
        if self.kind == FLAG:
            return [self.gc] if value else []
        if self.kind == NOT_FLAG:
            return [] if value else [self.gc]
        if self.kind == VALUE:
            return [] if value == default else [self.gc, self.arg(value)]
        if value == [] and self.gc_empty is not None:
            return [self.gc_empty[0]]
        return [a for item in value or [] for a in (self.gc, self.arg(item))]


_SELECTION = (
    RunOption(
        "testlists", "--gc-testlist", "select the tests of a test list (repeatable: their union)",
        cli="--testlist", kind=LIST, metavar="NAME|FILE", selection=True,
        help="run the tests of a test list: a name of data/testlists/NAME.txt or a file "
        "(repeatable: their union)", path=True),
    RunOption(
        "include", "--gc-include", "keep only tests whose name matches one of these regexes",
        cli="--include", kind=LIST, metavar="RE", selection=True,
        help="keep only tests whose name matches one of these regexes"),
    RunOption(
        "exclude", "--gc-exclude", "drop tests matching RE",
        cli="--exclude", kind=LIST, metavar="RE", selection=True,
        help="drop the tests whose name matches RE (repeatable)"),
    RunOption(
        "shard", "--gc-shard", "run the I-th of N shards of the selection",
        cli="--shard", metavar="I/N", type=argtype(parse_shard, "I/N"), selection=True,
        help="run only the I-th of N shards of the selection (1-based)",
        arg=_shard_arg, to_json=_shard_to_json, from_json=_shard_from_json),
)

_RUN = (
    RunOption(
        "timeout", "--gc-timeout", f"per-subtest timeout in seconds (default {DEFAULT_TIMEOUT_S:g})",
        cli="--timeout", metavar="S", type=positive_arg, gc_type=seconds,
        default=DEFAULT_TIMEOUT_S, arg=repr,
        help=f"per-subtest timeout in seconds (default {DEFAULT_TIMEOUT_S:g})"),
    RunOption(
        "timeout_overrides", "--gc-timeout-override",
        "timeout of the tests matching GLOB (the first matching one wins)",
        cli="--timeout-override", kind=LIST, metavar="GLOB=S",
        type=argtype(parse_timeout_override, "GLOB=SECONDS"),
        help="timeout of the tests matching GLOB (repeatable; the first match wins)",
        arg=_override_arg, to_json=_overrides_to_json, from_json=_overrides_from_json),
    RunOption(
        "grace", "--gc-grace",
        f"seconds between SIGTERM and SIGKILL on timeout (default {DEFAULT_GRACE_S:g})",
        cli="--grace", metavar="S", type=non_negative_arg, gc_type=seconds_or_zero,
        default=DEFAULT_GRACE_S, arg=repr,
        help=f"SIGTERM to SIGKILL grace in seconds (default {DEFAULT_GRACE_S:g})"),
    RunOption(
        "devices", "--gc-devices", "the GPUs the run uses, by index or UUID (default: every GPU)",
        cli="--devices", metavar="LIST", type=argtype(parse_devices, "LIST"),
        help="the GPUs the run uses, by index (nvidia-smi's order) or UUID: 0,2 or GPU-8f3c "
        "(default: every GPU of the node)"),
    RunOption(
        "jobs", "--gc-jobs", "copies of a one-GPU test at once (default: one per GPU)",
        cli="--jobs", metavar="N", type=argtype(parse_jobs, "N"),
        help="copies of a one-GPU test that run at once, each on its own GPU "
        "(default: one per GPU, each GPU walking the tests on its own; fewer: in lockstep, "
        "N at a time; 1: one GPU at a time)"),
    RunOption(
        "lockstep", "--gc-lockstep",
        "a one-GPU test's copies start together, the next test when all have ended",
        cli="--lockstep", kind=FLAG,
        help="run a one-GPU test's copies together and the next test when all have ended "
        "(default: each GPU walks the one-GPU tests from its own starting point)"),
    RunOption(
        "scratch_dir", "--gc-scratch-dir",
        f"directory of the tests' scratch files: exported as {SCRATCH_ENV}",
        cli="--scratch-dir", metavar="DIR", from_cli=_absolute_if_given,
        help=f"directory of the tests' scratch files, exported as {SCRATCH_ENV} "
        f"(default: the environment's {SCRATCH_ENV}, else /var/tmp)", path=True),
    RunOption(
        "expectations", "--gc-expectations",
        "expectations file (repeatable; default data/expectations/*.txt)",
        cli="--expectations", kind=OPTIONAL_LIST, metavar="FILE", cli_extend=True,
        gc_empty=("--gc-no-expectations", "no expectations file at all"),
        from_cli=_absolute_all,
        help="expectation files (default: data/expectations/*.txt for the suite, "
        "none for --selftest)", path=True),
    RunOption(
        "platform", "--gc-platform",
        "the platform expectation rules are matched with (default: this machine's fingerprint "
        "key)",
        cli="--platform", metavar="KEY",
        help="platform matched by platform= in expectation rules "
        "(default: this machine's fingerprint key)"),
    RunOption(
        "retries", "--gc-retries", f"retries of a failing test (default {DEFAULT_RETRIES})",
        cli="--retries", metavar="N", type=argtype(parse_retries, "N"), default=DEFAULT_RETRIES,
        help=f"run a failing test again up to N times (default {DEFAULT_RETRIES}: "
        "tells a flake from a failure that repeats)"),
    RunOption(
        "dmesg_patterns", "--gc-dmesg-patterns",
        "kernel log rules (default data/dmesg/patterns.txt)",
        cli="--dmesg-patterns", metavar="FILE", default=str(DEFAULT_PATTERNS),
        from_cli=_absolute, help="kernel log rules (default data/dmesg/patterns.txt)", path=True),
    RunOption(
        "catalogue", "--gc-catalogue",
        "the metric catalogue: a metric it lacks fails its test (default data/metrics.txt)",
        cli="--catalogue", metavar="FILE", default=str(DEFAULT_CATALOGUE), from_cli=_absolute,
        help="the metric catalogue: a test recording a metric it lacks, or in another unit, "
        "fails (default data/metrics.txt)", path=True),
    RunOption(
        "kmsg", "--gc-kmsg",
        f"kernel log device (default {KMSG_PATH}, a note when it cannot be read; a PATH given "
        "that cannot be opened stops the run before it starts; off: not read)",
        cli="--kmsg", metavar="PATH|off", from_cli=_or_kmsg, from_gc=_or_kmsg,
        check=_readable_unless_off,
        help=f"kernel log to watch (default {KMSG_PATH}: a note when it cannot be read; a PATH "
        "given that cannot be read stops the run before it starts)", path=True),
    RunOption(
        "taint_file", "--gc-taint-file",
        f"kernel taint file (default {TAINT_PATH}; a PATH given must open; off: not watched)",
        cli="--taint-file", metavar="PATH|off", from_cli=_or_taint, from_gc=_or_taint,
        check=_readable_unless_off,
        help=f"kernel taint to watch (default {TAINT_PATH}; a PATH given must be readable)", path=True),
    RunOption(
        "baselines", "--gc-baselines",
        "where to look for the fingerprint's baseline (default data/baselines); given, it must "
        "be there",
        cli="--baselines", kind=OPTIONAL_LIST, metavar="DIR", exclusive="baseline",
        from_cli=_absolute_all,
        help="where the baseline of this machine's fingerprint is looked for instead of "
        "data/baselines (repeatable); one of them must hold it, or nothing runs (default: "
        "data/baselines, and none there is a note)", path=True),
    RunOption(
        "baseline", "--gc-baseline",
        "the baseline file to compare with (it must be this machine's)",
        cli="--baseline", metavar="FILE", exclusive="baseline", from_cli=_absolute,
        help="the baseline file to compare with; it must be a baseline of this machine's "
        "fingerprint, or nothing runs", path=True),
    RunOption(
        "no_baseline", "--gc-no-baseline", "no baseline comparison",
        cli="--no-baseline", kind=FLAG,
        help="no baseline comparison (whatever --baseline(s) say)"),
    RunOption(
        "regressions_expected", "--gc-regressions-expected",
        "metric regressions do not count as unexpected",
        cli="--regressions-expected", kind=FLAG,
        help="metric regressions are reported but do not fail the run"),
    RunOption(
        "report", "--gc-no-report", "do not write report.html",
        cli="--no-report", kind=NOT_FLAG, help="do not write report.html"),
    RunOption(
        "openmetrics", "--gc-openmetrics",
        "also write the run's verdict, counts and gated metrics to FILE (Prometheus text format)",
        cli="--openmetrics", metavar="FILE", from_cli=_absolute, check=check_output_file,
        help="also write the run's verdict, counts by state and every gated metric's value and "
        "verdict to FILE in the Prometheus text format, replaced whole (for node_exporter's "
        "textfile collector: a FILE named *.prom in its directory)", path=True),
    RunOption(
        "level", "--gc-level", "the qualification level (levels.py): exported as " + LEVEL_ENV,
        cli="--level", choices=tuple(LEVELS),
        help="qualification level: quick (under a minute: does the stack answer), standard "
        "(the nightly), long (the nightly, then the soaks sharing what is left of --duration); "
        "its test list unless --testlist is given; exported as " + LEVEL_ENV),
    RunOption(
        "duration", "--gc-duration",
        f"--gc-level long: the run's length in seconds (default {LEVELS['long'].duration_s:g})",
        cli="--duration", metavar="LENGTH", type=argtype(parse_duration, "LENGTH"),
        gc_type=seconds, gc_metavar="S", arg=repr,
        help="with --level long: the run's length (8m, 1h, 90s; default 1h)"),
    RunOption(
        "list_timeout", "--gc-list-timeout",
        f"timeout of --list-subtests (default {DEFAULT_LIST_TIMEOUT_S:g})",
        metavar="S", type=seconds, default=DEFAULT_LIST_TIMEOUT_S, arg=repr),
)

OPTIONS: tuple[RunOption, ...] = _SELECTION + _RUN
BY_FIELD: Mapping[str, RunOption] = {o.field: o for o in OPTIONS}


def path_options() -> dict[str, int | None]:
    """`gpuconform run`'s options whose values are paths -> how many values
    each takes (None: one or more, up to the next option)."""
    return {o.cli: None if o.cli_extend else 1 for o in OPTIONS if o.path and o.cli}


def _before(hooks: Mapping[str, Callable[[], Any]], field: str) -> None:
    hook = hooks.get(field)
    if hook is not None:
        hook()


def add_cli_arguments(parser: argparse.ArgumentParser, *, selection: bool,
                      before: Mapping[str, Callable[[], Any]] | None = None) -> None:
    """The selection options (selection True) or the others of `gpuconform
    run`, in the table's order; before[field]() first adds the command's own
    options that --help shows ahead of that field's."""
    groups: dict[str, Any] = {}
    for o in OPTIONS:
        if o.cli is None or o.selection != selection:
            continue
        _before(before or {}, o.field)
        target: Any = parser
        if o.exclusive is not None:
            if o.exclusive not in groups:
                groups[o.exclusive] = parser.add_mutually_exclusive_group()
            target = groups[o.exclusive]
        target.add_argument(o.cli, **o.cli_kwargs())


def add_pytest_options(group: Any, order: Sequence[str],
                       before: Mapping[str, Callable[[], Any]] | None = None) -> None:
    """The --gc-* options (group: pytest's OptionGroup) in order (field
    names), before[field]() as add_cli_arguments'."""
    for field in order:
        o = BY_FIELD[field]
        _before(before or {}, field)
        group.addoption(o.gc, **o.gc_kwargs())
        if o.gc_empty is not None:
            group.addoption(o.gc_empty[0], action="store_true", help=o.gc_empty[1])


def _options(selection_only: bool) -> Iterator[RunOption]:
    return (o for o in OPTIONS if o.cli is not None and (o.selection or not selection_only))


def cli_values(args: argparse.Namespace, *, selection_only: bool = False) -> dict[str, Any]:
    """RunOptions' fields as `gpuconform run`'s arguments give them (the
    selection options' alone where selection_only)."""
    out: dict[str, Any] = {}
    for o in _options(selection_only):
        v = getattr(args, o.cli_dest)
        if o.kind == NOT_FLAG:
            v = not v
        elif o.kind in (LIST, OPTIONAL_LIST) and v is not None:
            v = list(v)
        out[o.field] = o.from_cli(v)
    return out


def pytest_values(getoption: Callable[[str], Any]) -> dict[str, Any]:
    """RunOptions' fields as the --gc-* options give them (getoption: pytest
    config's)."""
    out: dict[str, Any] = {}
    for o in OPTIONS:
        v = getoption(o.gc_dest)
        if o.kind == NOT_FLAG:
            v = not v
        elif o.kind == LIST:
            v = list(v or [])
        elif o.kind == OPTIONAL_LIST:
            v = list(v) if v is not None else None
            if o.gc_empty is not None and getoption(_dest(o.gc_empty[0])):
                v = []
        out[o.field] = o.from_gc(v)
    return out


def check_cli_given(args: argparse.Namespace) -> None:
    """The checks of the values given to `gpuconform run` that have one
    (InputError naming the option)."""
    for o in OPTIONS:
        if o.check is not None and o.cli is not None:
            o.check(o.cli, getattr(args, o.cli_dest))


def check_pytest_given(getoption: Callable[[str], Any]) -> None:
    """check_cli_given of the --gc-* options."""
    for o in OPTIONS:
        if o.check is not None:
            o.check(o.gc, getoption(o.gc_dest))
