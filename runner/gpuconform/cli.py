"""The `gpuconform` command.

    gpuconform run      [--build DIR] [--selftest] [--results DIR] [selection, timeouts,
                        expectations, kernel log, baseline options] [-- PYTEST ARGS...]
    gpuconform list     [--build DIR] [--selftest] [--testlist ...] [--include RE] ...
    gpuconform list     --contracts [--build DIR] [--results DIR]
    gpuconform resume   RESULTS_DIR [-- PYTEST ARGS...]
    gpuconform compare  A B
    gpuconform baseline update RESULTS... [--out FILE] [--append] [--force]
    gpuconform report   RESULTS
    gpuconform export   --format piglit RESULTS [-o OUT]
    gpuconform merge    OUT DIR...
    gpuconform doctor   [--scratch-dir DIR] [--fix] [--json]
    gpuconform fleet submit --results DIR --shards N [--partition P] [--gres G]
                        [--gpus-per-node N] [--time T] [--sbatch-arg=OPT]... [--share-nodes]
                        [--no-probe] [-- RUN OPTIONS...]
    gpuconform fleet status DIR [--json]
    gpuconform fleet resume DIR [--partition P] [--gres G] [--gpus-per-node N] [--time T]
                                [--sbatch-arg=OPT]...
    gpuconform fleet wait DIR                  (the merge job's first step)

`run` is pytest with the plugin and the manifest (plugin.py says what a run
does). Exit status: 0 when nothing was unexpected (expectations.judge: no
failure without a rule, no unexpected pass or flake, no metric regression
unless --regressions-expected, no collection error, something ran), 1
otherwise, 2 when it cannot start (no build directory or manifest, a bad
option, a malformed test list / expectations / patterns file, a test list
naming a test that does not exist, a baseline asked for by --baseline FILE or
--baselines DIR that is not there, not a baseline or another machine's).
Every such error is one line. No option is taken for another it begins
with (argparse's abbreviations are off). `baseline update` exits 2 on a run
that is not clean (unless --force) or one given twice.
`resume` continues a run whose runner or machine died, with the same exit
statuses. `doctor` prints what the fastpath (GPU-direct file I/O) needs and
what this machine has (doctor.py): exit 0 when every item the present GPU
stacks need is ok, 1 when one is missing, 2 on bad usage (--fix not as root).
`list --contracts` prints the contract table (contracts.py) with a run's
results: exit 1 when the table breaks its rule (with --build, against the
built binaries' subtests too), 2 when the table is malformed.
`export --format piglit` writes a run's results as piglit's TestrunResult
JSON (piglit.py), by default to RESULTS/piglit/results.json: exit 0, 2 when
RESULTS or OUT cannot be used (one line naming it).
`fleet` runs the suite on Slurm (fleet.py): `submit` exits 0 once the jobs
are submitted, 2 when nothing was (one line says why; DIR is left as it was);
`status`, `resume` and `wait` exit 0, 2 when the fleet cannot be read or
Slurm cannot be used.
"""

from __future__ import annotations

import argparse
import json
import os
import stat
import sys
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator, NoReturn, Sequence

from .core.contracts import (
    TABLE_PATH,
    ContractsError,
    check,
    display_path,
    expectation_counts,
    load_table,
    render_text,
    view,
)
from .core.execute import ExecOptions, list_subtests
from .core.fmt import one_line
from .core.journal import JOURNAL_NAME, JournalError, is_locked, read_run_json
from .core.manifest import Manifest, ManifestError, manifest_path, read_manifest
from .core.optable import add_cli_arguments, check_cli_given
from .core.options import (
    DATA_DIR,
    PROGRESS_MODES,
    SCRATCH_ENV,
    InputError,
    RunInputs,
    RunOptions,
    options_to_args,
)
from .core.optvalues import positive_arg
from .core.levels import LEVELS
from .plugin import LEAN_ARGS, RunControl, load_run_inputs
from .core.results import TestRecord, outcome_of
from .core.runmetrics import load_results
from .core.shard import shard
from .core.testlist import TestlistError, select_tests

REPO_ROOT = Path(__file__).resolve().parents[2]
EXIT_OK = 0
EXIT_FAILED = 1
EXIT_CANNOT_START = 2


class CliError(Exception):
    """A one-line reason the command cannot start."""


class _Parser(argparse.ArgumentParser):
    """argparse, with its errors on one line, and no option taken for another
    it begins (argparse's allow_abbrev: `--baseline FILE` was `--baselines`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_CANNOT_START, f"{self.prog}: error: {' '.join(message.split())} "
                  f"(see {self.prog} --help)\n")


def _build_and_selection(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("--build", metavar="DIR", type=Path, default=None,
                    help=f"meson build directory (default: {REPO_ROOT / 'build'})")
    sp.add_argument("--selftest", action="store_true",
                    help="use the selftest manifest (the runner's own misbehaving subjects)")
    add_cli_arguments(sp, selection=True)


def _run_arguments(run: argparse.ArgumentParser) -> None:
    """`run`'s options after the build and selection ones (`qualify` has them too)."""
    _build_and_selection(run)
    run.add_argument("--results", metavar="DIR", type=Path, default=None,
                     help="results directory (default: results/<UTC timestamp> in the repository)")

    def keyword() -> None:
        run.add_argument("-k", metavar="EXPR", dest="keyword", default=None,
                         help="pytest -k expression over BINARY@SUBTEST names")

    def progress() -> None:
        run.add_argument("--progress", choices=PROGRESS_MODES, default="auto",
                         help="progress line on stderr (default auto: redrawn on a terminal, a "
                         "line every ~10 s otherwise)")

    add_cli_arguments(run, selection=False, before={"devices": keyword, "level": progress})
    run.add_argument("pytest_args", nargs="*", metavar="PYTEST_ARGS",
                     help="after --: passed to pytest as they are")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="gpuconform", description="GPU driver stack conformance suite")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", required=True)

    ls = sub.add_parser("list", help="list BINARY@SUBTEST names (after the selection options)")
    _build_and_selection(ls)
    ls.add_argument("--contracts", action="store_true",
                    help="the contract table instead (data/contracts.txt): per contract subtest "
                    "each vendor's BINARY@SUBTESTs side by side with their results, or why a "
                    "vendor has none; with --build, marks what that build lacks and checks that "
                    "every subtest it built is in the table (exit 1 when the table breaks its "
                    "rule)")
    ls.add_argument("--results", metavar="DIR", type=Path, default=None,
                    help="with --contracts: the run whose results are shown (default: the newest "
                    "results/*/results.json)")

    run = sub.add_parser("run", help="run the suite under pytest",
                         description="Run the suite (plugin.py); exit 0 iff nothing unexpected.")
    _run_arguments(run)

    qual = sub.add_parser("qualify", help="run a level and write its qualification record",
                          description="Run the suite at --level (as `run` does, with every "
                          "`run` option), then write RESULTS/qualification.json (machine, "
                          "versions, verdicts per contract area, soak slopes, a content hash) "
                          "and qualification.html; --sign KEYID signs it with GnuPG.")
    _run_arguments(qual)
    qual.add_argument("--sign", metavar="KEYID", default=None,
                      help="sign the record with this GnuPG key (RESULTS/qualification.json.asc)")

    ver = sub.add_parser("verify", help="check a qualification record's hash and signature",
                         description="Exit 0 when RECORD's content hash matches, it was written "
                         "by this suite version, and its GnuPG signature (RECORD.asc), where "
                         "there is one, is good; otherwise one line saying which.")
    ver.add_argument("record", metavar="RECORD", type=Path)

    res = sub.add_parser("resume", help="continue a run whose runner or machine died",
                         description="Continue the run of RESULTS_DIR: completed tests are "
                         "kept, the test that was running becomes incomplete (its orphaned "
                         "processes are killed), the rest run; then the results are written "
                         "as for a run.")
    res.add_argument("dir", metavar="RESULTS_DIR", type=Path)
    res.add_argument("--progress", choices=PROGRESS_MODES, default="auto",
                     help="progress line on stderr (default auto)")
    res.add_argument("pytest_args", nargs="*", metavar="PYTEST_ARGS",
                     help="after --: more pytest arguments")

    cmp_ = sub.add_parser("compare", help="compare two results directories (A is the reference)")
    cmp_.add_argument("a", metavar="A", type=Path)
    cmp_.add_argument("b", metavar="B", type=Path)

    bl = sub.add_parser("baseline", help="timing baselines")
    blsub = bl.add_subparsers(dest="baseline_command", metavar="ACTION", required=True)
    up = blsub.add_parser("update", help="make or update the baseline of a run's fingerprint")
    up.add_argument("results", metavar="RESULTS", type=Path, nargs="+",
                    help="results directories of clean runs, each one run of the baseline "
                    "(a run given twice, or already in the baseline, is refused)")
    up.add_argument("--out", metavar="FILE", type=Path, default=None,
                    help="baseline file (default data/baselines/<fingerprint key>.json)")
    up.add_argument("--append", action="store_true",
                    help="add these runs to the baseline's runs instead of replacing them "
                    "(the gate needs 3 runs, 5 or more on 2 hosts or more to be useful)")
    up.add_argument("--force", action="store_true",
                    help="take runs that are not clean (an unexpected result, an abort, an "
                    "incomplete merge): their tests that ended as expected go in, and the "
                    "baseline's entry of each says why it was not clean")

    rep = sub.add_parser("report", help="write RESULTS/report.html")
    rep.add_argument("results", metavar="RESULTS", type=Path)

    hist = sub.add_parser("history", help="one page over many nights: changes, states, charts",
                          description="Read every results directory under the PATHs (a "
                          "RESULTS_ROOT of scripts/nightly.sh, or results directories) and write "
                          "one self-contained page: per machine (fingerprint) the changes, each "
                          "with the night it first appeared and what changed since the night "
                          "before, each test's states across nights and each gated metric's "
                          "chart with its baseline's band. Exit 1 when a directory could not be "
                          "read (the page says which and shows the rest).")
    hist.add_argument("paths", metavar="PATH", type=Path, nargs="+")
    hist.add_argument("-o", "--out", metavar="OUT", type=Path, default=None,
                      help="the page to write (default PATH/history.html for one PATH, else "
                      "./history.html)")

    fnd = sub.add_parser("findings", help="a bundle per failure for the vendor: reproducer, "
                         "output, environment, commands",
                         description="For each failure of RESULTS (expected or not), write "
                         "RESULTS/findings/<binary>.<subtest>/: the finding's standalone "
                         "reproducer and README (data/findings) where one exists, the "
                         "subtest's output, the run's environment and the commands to build "
                         "and run the reproducer and to rerun the subtest alone.")
    fnd.add_argument("results", metavar="RESULTS", type=Path)

    exp = sub.add_parser("export", help="write a run's results in another tool's format",
                         description="Write RESULTS/results.json (a run, resumed, merged or "
                         "old) in another tool's format; results.json stays the record. "
                         "piglit: the TestrunResult JSON of IGT's igt_runner, which `piglit "
                         "summary console|html` reads.")
    exp.add_argument("--format", choices=["piglit"], required=True,
                     help="piglit: piglit's TestrunResult JSON, results_version 10")
    exp.add_argument("results", metavar="RESULTS", type=Path,
                     help="a results directory, or its results.json")
    exp.add_argument("-o", "--out", metavar="OUT", type=Path, default=None,
                     help="the file to write, named *.json (default "
                     "RESULTS/piglit/results.json: a directory of its own, which `piglit "
                     "summary` can be given)")

    mg = sub.add_parser("merge", help="merge results directories (shards, re-runs) into OUT")
    mg.add_argument("out", metavar="OUT", type=Path)
    mg.add_argument("dirs", metavar="DIR", type=Path, nargs="+")

    doc = sub.add_parser("doctor", help="what the fastpath needs and what this machine has",
                         description="Print, per GPU stack, what GPU-direct file I/O needs and "
                         "what this machine has; exit 0 iff every item the present stacks "
                         "need is ok. Changes nothing unless --fix.")
    doc.add_argument("--scratch-dir", metavar="DIR", default=None,
                     help=f"scratch directory to examine (default: {SCRATCH_ENV}, else /var/tmp)")
    doc.add_argument("--fix", action="store_true",
                     help="write the scratch device's missing udev record (root only; says "
                     "exactly what it wrote)")
    doc.add_argument("--json", action="store_true", help="print the facts as one JSON object")
    _fleet_parser(sub)
    return p


def _sbatch_options(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("--partition", metavar="P", default=None,
                    help="Slurm partition (default: the cluster's default partition)")
    sp.add_argument("--time", metavar="LIMIT", default=None,
                    help="each job's time limit, as sbatch --time takes it (e.g. 4:00:00)")
    sp.add_argument("--gres", metavar="SPEC", default=None,
                    help="each shard's generic resources, as sbatch --gres (e.g. gpu:8)")
    sp.add_argument("--gpus-per-node", metavar="N", default=None,
                    help="each shard's GPUs, as sbatch --gpus-per-node")
    sp.add_argument("--sbatch-arg", metavar="OPT", action="append", default=[],
                    help="any other sbatch option, given as one argument: "
                    "--sbatch-arg=--account=lab (repeatable)")


def _fleet_parser(sub: Any) -> None:
    fl = sub.add_parser("fleet", help="run the suite across GPU nodes with Slurm",
                        description="One selection across many GPU nodes of a Slurm cluster: "
                        "one array task per shard, a merge job after them (fleet.py).")
    flsub = fl.add_subparsers(dest="fleet_command", metavar="ACTION", required=True)
    fs = flsub.add_parser(
        "submit", help="write and submit the array of shards and the merge job",
        description="Check that DIR and this checkout are visible to the nodes (a probe job), "
        "write DIR/fleet-array.sh, DIR/fleet-merge.sh and DIR/fleet.json, submit the array "
        "(one task per shard: gpuconform run --shard I/N --results DIR/shard-I RUN OPTIONS) "
        "and the merge job (afterany). Nothing is submitted when a check fails.")
    fs.add_argument("--results", metavar="DIR", type=Path, required=True,
                    help="the fleet's results directory, on a file system every node mounts at "
                    "the same path (as must be this checkout)")
    fs.add_argument("--shards", metavar="N", type=int, required=True,
                    help="number of shards: array tasks, each on a node of its own")
    _sbatch_options(fs)
    fs.add_argument("--share-nodes", action="store_true",
                    help="let shards share a node (no sbatch --exclusive): by default each "
                    "shard has its node to itself, all of its GPUs")
    fs.add_argument("--no-probe", action="store_true",
                    help="submit without the probe job that proves the nodes see DIR and the "
                    "checkout (for a busy cluster; the tmpfs check stays)")
    fs.add_argument("--probe-timeout", metavar="S", type=positive_arg, default=300.0,
                    help="how long the probe job may wait for a node and run (default 300)")
    fs.add_argument("run_args", nargs=argparse.REMAINDER, metavar="-- RUN OPTIONS",
                    help="after --: options of `gpuconform run` for every shard (selection, "
                    "timeouts, --build, --selftest, ...; not --shard nor --results)")
    st = flsub.add_parser("status", help="each shard's node, state, progress and unexpected "
                          "results")
    st.add_argument("dir", metavar="DIR", type=Path)
    st.add_argument("--json", action="store_true", help="print the status as one JSON object")
    rs = flsub.add_parser("resume", help="submit again the shards that did not finish, then "
                          "merge again",
                          description="Shards not done and no longer pending or running in "
                          "Slurm (node lost, cancelled, time limit) are submitted again as one "
                          "array; each resumes its own journal, so no finished test runs twice. "
                          "A new merge job follows them. A shard whose run still holds its "
                          "journal's lock is never submitted again. The options go to sbatch "
                          "over the scripts' own (--gres and --gpus-per-node to the shards).")
    rs.add_argument("dir", metavar="DIR", type=Path)
    _sbatch_options(rs)
    wt = flsub.add_parser("wait", help="wait until no shard's run holds its journal's lock "
                          "(the merge job's first step)")
    wt.add_argument("dir", metavar="DIR", type=Path)
    wt.add_argument("--poll", metavar="S", type=positive_arg, default=10.0,
                    help="seconds between two looks (default 10)")


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


def _selection_options(args: argparse.Namespace) -> RunOptions:
    return RunOptions.from_args(args, selection_only=True)


def list_manifest(manifest: Manifest, options: ExecOptions | None = None
                  ) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """Each binary's subtest names (--list-subtests), and per binary that
    could not be listed cleanly its problems, one line each."""
    subtests: dict[str, list[str]] = {}
    problems: dict[str, list[str]] = {}
    options = options or ExecOptions()
    for entry in manifest.entries:
        ls = list_subtests(entry.path, options)
        subtests[entry.name] = list(ls.names)
        lines = [f"--list-subtests: {p}" for p in ls.problems]
        if ls.error is not None:
            lines.append(ls.error)
        if lines:
            problems[entry.name] = lines
    return subtests, problems


def _print_problems(problems: dict[str, list[str]]) -> int:
    for binary, lines in problems.items():
        for line in lines:
            print(f"gpuconform: {binary}: {line}", file=sys.stderr)
    return EXIT_FAILED if problems else EXIT_OK


def cmd_list(args: argparse.Namespace) -> int:
    if args.contracts:
        return cmd_list_contracts(args)
    if args.results is not None:
        raise CliError("list: --results goes with --contracts")
    manifest = _manifest(args)
    opts = _selection_options(args)
    inputs = _inputs(args, opts)
    names, problems = _listed(manifest)
    status = _print_problems(problems)
    chosen = _select(names, inputs, opts)
    if opts.shard:
        chosen = shard(chosen, *opts.shard)
    for name in chosen:
        if "@" in name:
            print(name)
    return status


def newest_results(base: Path) -> Path | None:
    """The directory under base whose results.json was written last; None without one."""
    try:
        found = [((d / "results.json").stat().st_mtime_ns, d.name, d) for d in base.iterdir()
                 if (d / "results.json").is_file()]
    except OSError:
        return None
    return max(found)[2] if found else None


def cmd_list_contracts(args: argparse.Namespace) -> int:
    if args.selftest or args.testlist or args.include or args.exclude or args.shard:
        raise CliError("list --contracts shows the whole table: --selftest, --testlist, "
                       "--include, --exclude and --shard do not apply")
    try:
        table = load_table(TABLE_PATH)
    except ContractsError as e:
        raise CliError(str(e)) from None
    status = EXIT_OK
    built: dict[str, list[str]] | None = None
    if args.build is not None:
        built, problems = list_manifest(_manifest(args))
        status = _print_problems(problems)
    results = args.results or newest_results(REPO_ROOT / "results")
    states: dict[str, str] | None = None
    if results is not None:
        data = _call(load_results, _results_input(results))
        states = {name: str(rec["result"]) for name, rec in data["tests"].items()}
    counts = expectation_counts(table)
    header = (f"# {display_path(table.path)}: {len(table.rows)} contract subtests; AMD "
              f"expectations: {', '.join(f'{n} {s}' for s, n in counts.items())}; results: "
              f"{results if results is not None else 'none (no results/*/results.json)'}"
              f"{'; build: ' + str(args.build) if built is not None else ''}\n")
    sys.stdout.write(render_text(view(table, states, built), header))
    for problem in check(table, built):
        print(f"gpuconform: {problem}", file=sys.stderr)
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
    """The exit status of `gpuconform run` (or resume) and a one-line verdict."""
    try:
        data = json.loads(results_json.read_text(encoding="utf-8"))
        for n, r in data["tests"].items():
            TestRecord.from_json(n, r)  # a record of the wrong shape: no usable results.json
        out = outcome_of(data)
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        return EXIT_FAILED, f"no usable {results_json} ({e}); pytest exit status {pytest_status}"
    if pytest_status in (3, 4):
        return EXIT_FAILED, f"pytest exit status {pytest_status} (internal or usage error)"
    return out.status, out.line


def _check_keyword(expr: str | None) -> None:
    """-k's expression parsed as pytest will parse it: CliError before anything
    runs (pytest would say it only after collection)."""
    if expr is None:
        return
    try:
        from _pytest.mark.expression import Expression, ParseError
    except ImportError:  # another pytest: it says so itself, nothing is written
        return
    try:
        Expression.compile(expr)
    except ParseError as e:
        raise CliError(f"-k {expr!r}: not a pytest -k expression: {e}") from None


def _check_before_run(args: argparse.Namespace, results: Path) -> None:
    """What a run needs and can be checked before it: the results directory
    (resultsdir.py), -k's expression, a --kmsg or --taint-file given."""
    from .core.resultsdir import ResultsDirError, check_results_dir

    try:
        check_results_dir(results)
    except ResultsDirError as e:
        raise CliError(str(e)) from None
    _check_keyword(args.keyword)
    try:
        check_cli_given(args)
    except InputError as e:
        raise CliError(str(e)) from None


# pytest loads every plugin installed in its Python (entry points "pytest11")
# into every run. The GPU machines' venv holds nine (xdist, hypothesis, cov,
# jaxtyping, anyio, benchmark, mock, timeout, looponfail), installed for other
# work; in a conformance run they cost about 2 ms a subtest there, 30-40% of
# the runner's cost (bench/runner_overhead.py, two hosts). They stay out unless the
# caller's environment sets the variable itself (empty: load them); one plugin
# is loaded by module with `-p MODULE` after `--`.
AUTOLOAD_ENV = "PYTEST_DISABLE_PLUGIN_AUTOLOAD"


@contextmanager
def _no_plugin_autoload() -> Iterator[None]:
    """AUTOLOAD_ENV=1 while pytest runs, unless the environment already says."""
    if AUTOLOAD_ENV in os.environ:
        yield
        return
    os.environ[AUTOLOAD_ENV] = "1"
    try:
        yield
    finally:
        os.environ.pop(AUTOLOAD_ENV, None)


def _run_pytest(pytest_args: list[str], control: RunControl, results: Path) -> int:
    import pytest

    with _no_plugin_autoload():
        status = int(pytest.main(pytest_args, plugins=[control]))
    if control.fatal is not None:
        raise CliError(control.fatal)
    if control.stopped is not None:  # started, then could no longer record: one line, last
        print(f"gpuconform: {control.stopped}", file=sys.stderr)
        return EXIT_FAILED if control.recorded else EXIT_CANNOT_START  # 2: it did nothing
    if status == 4:  # usage error: pytest printed it (ERROR: ...)
        return EXIT_CANNOT_START
    code, line = run_status(results / "results.json", status)
    print(f"gpuconform: {line}; results in {results}", file=sys.stderr if code else sys.stdout)
    return code


def _run_options(args: argparse.Namespace, *, here: bool = True) -> RunOptions:
    """`run`'s options, every input file checked (CliError); here False: the
    run is for other machines (fleet submit), whose fingerprints are not
    this one's."""
    opts = RunOptions.from_args(args)
    _apply_level(opts, bool(args.include or args.keyword))
    if opts.expectations is None and args.selftest:
        opts.expectations = []
    try:
        load_run_inputs(opts, selftest=args.selftest, here=here)  # every error, before pytest
    except InputError as e:
        raise CliError(str(e)) from None
    return opts


def _apply_level(opts: RunOptions, narrowed: bool) -> None:
    """The level's test list where none was given (not when --include / -k
    narrow the run themselves), long's default --duration; CliError for a
    --duration without --level long."""
    if opts.duration is not None and opts.level != "long":
        raise CliError("--duration: only --level long has a length (quick and standard "
                       "run fixed counts)")
    if opts.level is None:
        return
    lv = LEVELS[opts.level]
    if not opts.testlists and not narrowed:
        opts.testlists = [lv.testlist]
    if opts.level == "long" and opts.duration is None:
        opts.duration = lv.duration_s


def _prepare_run(args: argparse.Namespace) -> tuple[list[str], RunControl, Path]:
    """`run`'s pytest arguments, control and results directory, every check
    that can be made before the run made (CliError); nothing written yet."""
    manifest = _manifest(args)
    results = (args.results or _default_results_dir()).absolute()
    _check_before_run(args, results)
    opts = _run_options(args)
    # Test lists are stored resolved: resume must not depend on the cwd.
    opts.testlists = [str(Path(t).absolute()) if ("/" in t or Path(t).is_file()) and
                      not (DATA_DIR / "testlists" / f"{t}.txt").is_file() else t
                      for t in opts.testlists]
    pytest_args = [
        "-p", "gpuconform.plugin", *LEAN_ARGS,
        "--gc-results", str(results),
        "--gc-progress", args.progress,
        "--rootdir", str(manifest.path.parent),
        *options_to_args(opts),
    ]
    if args.keyword is not None:
        pytest_args += ["-k", args.keyword]
    pytest_args += list(args.pytest_args)
    pytest_args.append(str(manifest.path))
    control = RunControl(pytest_args=list(args.pytest_args), selftest=args.selftest)
    return pytest_args, control, results


def cmd_run(args: argparse.Namespace) -> int:
    return _run_pytest(*_prepare_run(args))


def cmd_qualify(args: argparse.Namespace) -> int:
    """`run` at a level, then the record of its results directory. What can
    be checked before the run is: `run`'s checks, then the signing key (a
    probe signature), so that a key gpg lacks costs no run."""
    if args.level is None:
        raise CliError("qualify: --level quick|standard|long is required")
    args.results = (args.results or _default_results_dir()).absolute()
    prepared = _prepare_run(args)
    if args.sign is not None:
        try:
            with _needs("seal.check_signing_key"):
                from .qualify.seal import check_signing_key
            _call(check_signing_key, args.sign)
        except CliError as e:
            raise CliError(f"qualify --sign: {e}; nothing was run") from None
    status = _run_pytest(*prepared)
    if status == EXIT_CANNOT_START:  # pytest said why; a run that did not start has no record
        return status
    if not (args.results / "results.json").is_file():
        print(f"gpuconform: qualify: no results.json in {args.results}: no record written",
              file=sys.stderr)
        return status if status != EXIT_OK else EXIT_CANNOT_START
    with _needs("qualify.build_record"):
        from .qualify.qualify import build_record, write_record
        from .qualify.seal import check_record
    record = _call(build_record, args.results)
    paths = _call(write_record, args.results, record, sign=args.sign)
    # the hash shown is the written file's, checked as `gpuconform verify` checks it
    verified = _call(check_record, paths[0])
    print(f"gpuconform: qualification record: {paths[0]} (sha256 {verified.digest}), "
          f"{verified.signed}")
    for p in paths[1:]:
        print(f"gpuconform:   {p}")
    return status


def cmd_verify(args: argparse.Namespace) -> int:
    _readable_file(args.record)
    with _needs("seal.verify_record"):
        from .qualify.seal import verify_record  # no jinja2 needed
    line = _call(verify_record, args.record, inputs=[args.record])
    print(f"gpuconform: {line}")
    return EXIT_OK


def cmd_resume(args: argparse.Namespace) -> int:
    results = args.dir.absolute()
    try:
        run = read_run_json(results)
        locked = is_locked(results / JOURNAL_NAME)
    except JournalError as e:
        raise CliError(str(e)) from None
    if locked:
        raise CliError(f"{results}: the run is still going (a live gpuconform holds "
                       f"{JOURNAL_NAME}'s lock)")
    manifest = Path(run["manifest"])
    if not manifest.is_file():
        raise CliError(f"{results / 'run.json'}: manifest {manifest} is gone (rebuilt elsewhere?)")
    try:
        load_run_inputs(RunOptions.from_json(run["options"]), selftest=bool(run.get("selftest")))
    except (TypeError, ValueError) as e:
        raise CliError(f"{results / 'run.json'}: options: {e}") from None
    except InputError as e:
        raise CliError(str(e)) from None
    stored = [a for a in run.get("pytest_args") or [] if isinstance(a, str)]
    pytest_args = [
        "-p", "gpuconform.plugin", *LEAN_ARGS,
        "--gc-resume", str(results),
        "--gc-progress", args.progress,
        "--rootdir", str(manifest.parent),
        *stored, *args.pytest_args, str(manifest),
    ]
    control = RunControl(pytest_args=stored, selftest=bool(run.get("selftest")))
    return _run_pytest(pytest_args, control, results)


def _one_line(e: BaseException) -> str:
    return one_line(e) or type(e).__name__


@contextmanager
def _needs(what: str) -> Iterator[None]:
    """Around a command's import of what it runs (a product, imported when
    the command runs): an ImportError (jinja2 not installed) is a CliError
    saying what is not available and why."""
    try:
        yield
    except ImportError as e:
        raise CliError(f"{what} is not available: {_one_line(e)}") from None


def _call(fn: Any, *a: Any, inputs: Sequence[Path] = (), **kw: Any) -> Any:
    """fn(*a, **kw), any error it raises one line (CliError): a gpuconform
    error as it says, an OSError naming its file, anything else (an input
    gpuconform did not foresee) naming the inputs, so that no traceback
    reaches a user."""
    try:
        return fn(*a, **kw)
    except CliError:
        raise
    except OSError as e:
        where = f"{e.filename}: " if e.filename else ""
        raise CliError(f"{where}{e.strerror or _one_line(e)}") from None
    except Exception as e:  # noqa: BLE001 - one line, exit 2, whatever it was
        if type(e).__module__.startswith("gpuconform") or not inputs:
            raise CliError(_one_line(e)) from None
        raise CliError(f"{', '.join(map(str, inputs))}: cannot use it: "
                       f"{type(e).__name__}: {_one_line(e)}") from None


_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"))


def _readable_file(path: Path, what: str = "") -> None:
    """path is a regular file this user may read (not a FIFO, whose read
    would wait for a writer forever): CliError naming it otherwise ("PATH:
    cannot read WHAT: why")."""
    try:
        mode = os.stat(path).st_mode
        if stat.S_ISREG(mode):
            os.close(os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC))
            return
    except OSError as e:
        raise CliError(f"{path}: cannot read{' ' + what if what else ''}: "
                       f"{e.strerror or _one_line(e)}") from None
    kind = next((k for test, k in _KINDS if test(mode)), "not a regular file")
    raise CliError(f"{path}: cannot read{' ' + what if what else ''}: it is {kind}, not a file")


def _results_input(arg: Path, *, file_ok: bool = True) -> Path:
    """The results.json of ARG (a results directory, or where file_ok the
    file itself), checked before a command reads it: there, a regular file
    this user may read, a gpuconform results.json whose fields are of their
    kind (runmetrics.load_results). CliError, one line naming it."""
    try:
        mode = os.stat(arg).st_mode
    except OSError as e:
        raise CliError(f"{arg}: cannot read results: {e.strerror or _one_line(e)}") from None
    if stat.S_ISDIR(mode):
        path = arg / "results.json"
        if not os.path.lexists(path) and os.access(arg, os.X_OK):
            raise CliError(f"{path}: cannot read results: no such file ({arg} is not a results "
                           "directory)")
    elif not file_ok:
        raise CliError(f"{arg}: cannot read results: not a directory (give the results "
                       "directory, the one holding results.json)")
    else:
        path = arg
    _readable_file(path, "results")
    _call(load_results, path)
    return path


def cmd_compare(args: argparse.Namespace) -> int:
    inputs = [_results_input(args.a), _results_input(args.b)]
    with _needs("compare.compare_results"):
        from .perf.compare import compare_results
    text = _call(compare_results, args.a, args.b, inputs=inputs)
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
    return EXIT_OK


def cmd_baseline(args: argparse.Namespace) -> int:
    def forced(line: str) -> None:
        print(f"gpuconform: baseline update: {line}", file=sys.stderr)

    inputs = [_results_input(d) for d in args.results]
    with _needs("baseline_update.update_baseline"):
        from .perf.baseline_update import update_baseline
    path = _call(update_baseline, args.results, args.out,
                 append=args.append, force=args.force, forced=forced, left_out=forced,
                 inputs=inputs)
    print(f"gpuconform: baseline written: {path}")
    return EXIT_OK


def cmd_report(args: argparse.Namespace) -> int:
    inputs = [_results_input(args.results, file_ok=False)]
    with _needs("report.write_html"):
        from .report.report import write_html
    path = _call(write_html, args.results, inputs=inputs)
    print(f"gpuconform: report written: {path}")
    return EXIT_OK


def cmd_history(args: argparse.Namespace) -> int:
    for p in args.paths:
        if not p.is_dir():
            raise CliError(f"{p}: not a directory (a results root, or a results directory)")
    with _needs("history.page"):
        from .history.nights import find_results, load_nights
        from .history.page import write
    found = find_results(args.paths)
    if not found:
        raise CliError(f"no results.json under {', '.join(map(str, args.paths))}")
    nights, errors = load_nights(found)
    out = args.out or (args.paths[0] / "history.html" if len(args.paths) == 1
                       else Path("history.html"))
    path = _call(write, out, nights, errors)
    for e in errors:
        print(f"gpuconform: history: not read: {e}", file=sys.stderr)
    print(f"gpuconform: history of {len(nights)} night(s) written: {path}")
    return EXIT_FAILED if errors else EXIT_OK


def cmd_findings(args: argparse.Namespace) -> int:
    inputs = [_results_input(args.results, file_ok=False)]
    from .report.findings import write_findings

    bundles = _call(write_findings, args.results, inputs=inputs)
    for b in bundles:
        how = "reproducer" if b.reproducer else "no reproducer: rerun it alone, commands.txt"
        print(f"gpuconform: findings: {b.test} ({'expected' if b.expected else 'unexpected'}, "
              f"{how}): {b.path}")
    print(f"gpuconform: {len(bundles)} finding bundle(s)"
          + (f" in {args.results / 'findings'}" if bundles else ": no failure in this run"))
    return EXIT_OK


def cmd_export(args: argparse.Namespace) -> int:
    inputs = [_results_input(args.results)]
    with _needs("piglit.export_piglit"):
        from .export.piglit import export_piglit
    path, data = _call(export_piglit, args.results, args.out, inputs=inputs)
    aborts = data["totals"]["root"]["abort"]
    if aborts:
        print(f"gpuconform: export: {aborts} result(s) abort, as IGT writes them: piglit "
              "0~git20220119 (Debian 12) knows no such result and its summary stops on it",
              file=sys.stderr)
    print(f"gpuconform: piglit results written: {path}")
    return EXIT_OK


def cmd_merge(args: argparse.Namespace) -> int:
    inputs = [_results_input(d, file_ok=d.name == "results.json") for d in args.dirs]
    with _needs("merge.merge_results"):
        from .fleet.merge import merge_results
    report = _call(merge_results, args.dirs, args.out, inputs=inputs)
    sys.stdout.write(report.render())
    return EXIT_OK if report.ok else EXIT_FAILED


def cmd_fleet(args: argparse.Namespace) -> int:
    from .fleet import fleet
    from .fleet.fleet_slurm import Slurm

    try:
        if args.fleet_command == "submit":
            return _fleet_submit(args)
        if args.fleet_command == "status":
            st = fleet.status(args.dir, Slurm())
            if args.json:
                print(json.dumps(st.to_json(), indent=1))
            else:
                sys.stdout.write(fleet.render_status(st))
            return EXIT_OK
        if args.fleet_command == "wait":
            fleet.wait_runs(args.dir, args.poll, lambda line: print(line, flush=True))
            return EXIT_OK
        r = fleet.resume(args.dir, partition=args.partition, time_limit=args.time,
                         gres=args.gres, gpus_per_node=args.gpus_per_node,
                         sbatch_args=args.sbatch_arg, slurm=Slurm())
        sys.stdout.write(fleet.render_resume(r))
        return EXIT_OK
    except fleet.FleetError as e:
        raise CliError(f"fleet {args.fleet_command}: {e}") from None


def _fleet_submit(args: argparse.Namespace) -> int:
    from .fleet import fleet
    from .fleet.fleet_script import absolute_run_args
    from .fleet.fleet_slurm import Slurm

    run_args = list(args.run_args)
    if run_args[:1] == ["--"]:
        run_args = run_args[1:]
    run = build_parser().parse_args(["run", *run_args])  # a bad option: one line, exit 2
    if run.shard is not None or run.results is not None:
        raise CliError("fleet submit: --shard and --results are the fleet's own: give "
                       "--shards N and --results DIR before --")
    manifest = _manifest(run)
    _run_options(run, here=False)
    run_args = absolute_run_args(run_args, Path.cwd())
    # Shards share one build directory: pytest's cache there is no use to them.
    run_args += ["-p", "no:cacheprovider"] if "--" in run_args else ["--", "-p", "no:cacheprovider"]
    f, sub = fleet.submit(args.results, REPO_ROOT / "gpuconform", manifest.path, args.shards,
                          run_args, partition=args.partition, gres=args.gres,
                          gpus_per_node=args.gpus_per_node, time_limit=args.time,
                          sbatch_args=args.sbatch_arg, probe=not args.no_probe,
                          probe_timeout=args.probe_timeout, share_nodes=args.share_nodes,
                          tests=_selected_tests(run, manifest), slurm=Slurm())
    sys.stdout.write(fleet.render_submit(f, sub))
    return EXIT_OK


def _selected_tests(run: argparse.Namespace, manifest: Manifest) -> list[str]:
    """The tests `gpuconform run` with these options would select (as `list`
    shows them), before sharding."""
    opts = _selection_options(run)
    inputs = _inputs(run, opts)
    return _select(_listed(manifest)[0], inputs, opts)


def _inputs(args: argparse.Namespace, opts: RunOptions) -> RunInputs:
    try:
        return load_run_inputs(opts, selftest=args.selftest)[0]
    except InputError as e:
        raise CliError(str(e)) from None


def _listed(manifest: Manifest) -> tuple[list[str], dict[str, Any]]:
    """Every BINARY@SUBTEST of the manifest (a binary that could not be
    listed by its bare name), and the listing problems by binary."""
    subtests, problems = list_manifest(manifest)
    names: list[str] = []
    for binary, listed in subtests.items():
        names.extend(f"{binary}@{name}" for name in listed)
        if binary in problems:
            names.append(binary)
    return names, problems


def _select(names: list[str], inputs: RunInputs, opts: RunOptions) -> list[str]:
    """names as the options select them (test lists, --include, --exclude)."""
    try:
        return select_tests(names, inputs.patterns, opts.include, opts.exclude)
    except TestlistError as e:
        raise CliError(str(e)) from None


def cmd_doctor(args: argparse.Namespace) -> int:
    with _needs("doctor.run_doctor"):
        from .doctor.doctor import run_doctor
    return int(_call(run_doctor, args.scratch_dir, fix=args.fix, as_json=args.json))


COMMANDS = {
    "list": cmd_list,
    "run": cmd_run,
    "qualify": cmd_qualify,
    "verify": cmd_verify,
    "resume": cmd_resume,
    "compare": cmd_compare,
    "baseline": cmd_baseline,
    "report": cmd_report,
    "history": cmd_history,
    "findings": cmd_findings,
    "export": cmd_export,
    "merge": cmd_merge,
    "doctor": cmd_doctor,
    "fleet": cmd_fleet,
}


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return COMMANDS[args.command](args)
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
