"""The `gpuconform` command.

    gpuconform list [--build DIR] [--selftest]
    gpuconform run  [--build DIR] [--results DIR] [--timeout S] [--grace S] [-k EXPR]
                    [--selftest] [-- PYTEST ARGS...]

`run` is pytest with the plugin and the manifest. It exits 0 when no test
ended in a failure state (fail, crash, timeout, abort, incomplete, error,
dmesg-*; skips are fine), 1 otherwise (including a run that selected nothing),
2 when it cannot start (no build directory, no manifest, bad arguments).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Sequence

from .execute import DEFAULT_GRACE_S, DEFAULT_TIMEOUT_S, ExecOptions, list_subtests
from .manifest import Manifest, ManifestError, manifest_path, read_manifest
from .states import FAILURE_STATES, State

REPO_ROOT = Path(__file__).resolve().parents[2]
EXIT_OK = 0
EXIT_FAILED = 1
EXIT_CANNOT_START = 2


class CliError(Exception):
    """A one-line reason the command cannot start."""


def _positive(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text}") from None
    if not v > 0 or v == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds: {text}")
    return v


def _non_negative(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text}") from None
    if not v >= 0 or v == float("inf"):
        raise argparse.ArgumentTypeError(f"must be >= 0 seconds: {text}")
    return v


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="gpuconform", description="GPU driver stack conformance suite")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", required=True)

    def common(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--build", metavar="DIR", type=Path, default=None,
                        help=f"meson build directory (default: {REPO_ROOT / 'build'})")
        sp.add_argument("--selftest", action="store_true",
                        help="use the selftest manifest (the runner's own misbehaving subjects)")

    ls = sub.add_parser("list", help="list BINARY@SUBTEST names")
    common(ls)
    run = sub.add_parser("run", help="run the suite under pytest")
    common(run)
    run.add_argument("--results", metavar="DIR", type=Path, default=None,
                     help="results directory (default: results/<UTC timestamp> in the repository)")
    run.add_argument("--timeout", metavar="S", type=_positive, default=DEFAULT_TIMEOUT_S,
                     help=f"per-subtest timeout in seconds (default {DEFAULT_TIMEOUT_S:g})")
    run.add_argument("--grace", metavar="S", type=_non_negative, default=DEFAULT_GRACE_S,
                     help=f"SIGTERM to SIGKILL grace in seconds (default {DEFAULT_GRACE_S:g})")
    run.add_argument("-k", metavar="EXPR", dest="keyword", default=None,
                     help="pytest -k expression over BINARY@SUBTEST names")
    run.add_argument("pytest_args", nargs="*", metavar="PYTEST_ARGS",
                     help="after --: passed to pytest as they are")
    return p


def _manifest(args: argparse.Namespace) -> Manifest:
    build = (args.build or REPO_ROOT / "build").absolute()
    if not build.is_dir():
        raise CliError(f"build directory {build} does not exist (meson setup {build} && ninja -C {build})")
    path = manifest_path(build, args.selftest)
    if not path.is_file():
        raise CliError(f"{path}: no such manifest (is {build} a gpuconform build? run ninja -C {build})")
    try:
        return read_manifest(path)
    except ManifestError as e:
        raise CliError(str(e)) from None


def cmd_list(args: argparse.Namespace) -> int:
    manifest = _manifest(args)
    options = ExecOptions()
    status = EXIT_OK
    for entry in manifest.entries:
        ls = list_subtests(entry.path, options)
        for name in ls.names:
            print(f"{entry.name}@{name}")
        for problem in ls.problems:
            print(f"gpuconform: {entry.name}: --list-subtests: {problem}", file=sys.stderr)
            status = EXIT_FAILED
        if ls.error is not None:
            print(f"gpuconform: {entry.name}: {ls.error}", file=sys.stderr)
            status = EXIT_FAILED
    return status


def _default_results_dir() -> Path:
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    base = REPO_ROOT / "results"
    path = base / stamp
    n = 1
    while path.exists():
        n += 1
        path = base / f"{stamp}-{n}"
    return path


def run_status(results_json: Path, pytest_status: int) -> tuple[int, str]:
    """The exit status of `gpuconform run` and a one-line verdict."""
    try:
        data = json.loads(results_json.read_text(encoding="utf-8"))
        totals: dict[str, int] = data["totals"]
        errors: list[str] = data.get("run", {}).get("collection_errors", [])
    except (OSError, ValueError, KeyError, TypeError) as e:
        return EXIT_FAILED, f"no usable {results_json} ({e}); pytest exit status {pytest_status}"
    bad = {s.value: totals.get(s.value, 0) for s in FAILURE_STATES if totals.get(s.value, 0)}
    ran = sum(n for s, n in totals.items() if s != State.NOTRUN.value)
    if errors:
        return EXIT_FAILED, f"{len(errors)} collection error(s): {errors[0]}"
    if bad:
        what = ", ".join(f"{n} {s}" for s, n in sorted(bad.items()))
        return EXIT_FAILED, f"failed: {what}"
    if ran == 0:
        return EXIT_FAILED, "no subtest ran (nothing selected? check -k and the manifest)"
    if pytest_status not in (0, 1):
        return EXIT_FAILED, f"pytest exit status {pytest_status} (interrupted or internal error)"
    return EXIT_OK, f"ok: {ran} subtests, no failures"


def cmd_run(args: argparse.Namespace) -> int:
    manifest = _manifest(args)
    results = (args.results or _default_results_dir()).absolute()
    pytest_args = [
        "-p", "gpuconform.plugin",
        "--gc-results", str(results),
        "--gc-timeout", repr(args.timeout),
        "--gc-grace", repr(args.grace),
        "--rootdir", str(manifest.path.parent),
    ]
    if args.keyword is not None:
        pytest_args += ["-k", args.keyword]
    pytest_args += list(args.pytest_args)
    pytest_args.append(str(manifest.path))

    import pytest

    status = int(pytest.main(pytest_args))
    code, line = run_status(results / "results.json", status)
    print(f"gpuconform: {line}; results in {results}", file=sys.stderr if code else sys.stdout)
    return code


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if args.command == "list":
            return cmd_list(args)
        return cmd_run(args)
    except CliError as e:
        print(f"gpuconform: {e}", file=sys.stderr)
        return EXIT_CANNOT_START
    except KeyboardInterrupt:
        print("gpuconform: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `gpuconform list | head`
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_FAILED
