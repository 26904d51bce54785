"""optable.py: every run option goes from `gpuconform run`'s arguments to
RunOptions, to the pytest arguments that give it, back to RunOptions (the
plugin's), to run.json and back (resume) unchanged, and none of them is
missing from a place the table makes."""

from __future__ import annotations

import json
from dataclasses import replace
from types import SimpleNamespace
from typing import Any

import pytest
from _pytest.config.argparsing import Parser

from gpuconform import plugin
from gpuconform.cli import build_parser
from gpuconform.core.optable import (
    BY_FIELD,
    OPTIONS,
    check_cli_given,
    check_pytest_given,
)
from gpuconform.core.options import FIELD_ORDER, InputError, RunOptions, options_to_args

# field -> (`gpuconform run` arguments giving it, the field's value then):
# one sample per option of the command line, none its default.
SAMPLES: dict[str, tuple[list[str], Any]] = {
    "testlists": (["--testlist", "quick", "--testlist", "/lists/a.txt"],
                  ["quick", "/lists/a.txt"]),
    "include": (["--include", "a@b", "--include", "c.*"], ["a@b", "c.*"]),
    "exclude": (["--exclude", "slow"], ["slow"]),
    "shard": (["--shard", "2/3"], (2, 3)),
    "timeout": (["--timeout", "1.5"], 1.5),
    "timeout_overrides": (["--timeout-override", "a@b=2", "--timeout-override", "x@*=0.25"],
                          [("a@b", 2.0), ("x@*", 0.25)]),
    "grace": (["--grace", "0"], 0.0),
    "devices": (["--devices", "0,GPU-8f3c"], "0,GPU-8f3c"),
    "jobs": (["--jobs", "3"], 3),
    "lockstep": (["--lockstep"], True),
    "scratch_dir": (["--scratch-dir", "/scratch"], "/scratch"),
    "expectations": (["--expectations", "/e/a.txt", "/e/b.txt"], ["/e/a.txt", "/e/b.txt"]),
    "platform": (["--platform", "lab"], "lab"),
    "retries": (["--retries", "0"], 0),
    "dmesg_patterns": (["--dmesg-patterns", "/p/patterns.txt"], "/p/patterns.txt"),
    "catalogue": (["--catalogue", "/p/metrics.txt"], "/p/metrics.txt"),
    "kmsg": (["--kmsg", "off"], "off"),
    "taint_file": (["--taint-file", "off"], "off"),
    "baselines": (["--baselines", "/b1", "--baselines", "/b2"], ["/b1", "/b2"]),
    "baseline": (["--baseline", "/b/one.json"], "/b/one.json"),
    "openmetrics": (["--openmetrics", "/m/gpuconform.prom"], "/m/gpuconform.prom"),
    "no_baseline": (["--no-baseline"], True),
    "regressions_expected": (["--regressions-expected"], True),
    "report": (["--no-report"], False),
    "level": (["--level", "long"], "long"),
    "duration": (["--duration", "1h30m"], 5400.0),
}
# field -> a value: the options pytest has and `gpuconform run` does not
PYTEST_ONLY: dict[str, Any] = {"list_timeout": 7.5}


def from_cli(argv: list[str], command: str = "run") -> RunOptions:
    args = build_parser().parse_args([command, *argv])
    return RunOptions.from_args(args, selection_only=command == "list")


def pytest_getoption(args: list[str]) -> Any:
    """The plugin's options parsed by pytest's own parser: config.getoption."""
    parser = Parser(_ispytest=True)
    plugin.pytest_addoption(parser)
    ns = parser.parse(args)
    return lambda name: getattr(ns, name)


def from_pytest(args: list[str]) -> RunOptions:
    return RunOptions.from_config(SimpleNamespace(getoption=pytest_getoption(args)))  # type: ignore[arg-type]


def through_run_json(o: RunOptions) -> RunOptions:
    return RunOptions.from_json(json.loads(json.dumps(o.to_json())))


def test_the_table_has_one_entry_per_field() -> None:
    assert sorted(o.field for o in OPTIONS) == sorted(FIELD_ORDER)
    assert len({o.gc for o in OPTIONS}) == len(OPTIONS)
    assert len({o.cli for o in OPTIONS if o.cli is not None}) == len(SAMPLES)


def test_every_option_has_a_sample() -> None:
    """A new option needs its sample here, so that the tests below cover it."""
    assert set(SAMPLES) == {o.field for o in OPTIONS if o.cli is not None}
    assert set(PYTEST_ONLY) == {o.field for o in OPTIONS if o.cli is None}


def test_defaults_are_the_fields_defaults_everywhere() -> None:
    assert from_cli([]) == RunOptions()
    assert from_pytest([]) == RunOptions()
    assert options_to_args(RunOptions()) == []
    assert through_run_json(RunOptions()) == RunOptions()


@pytest.mark.parametrize("field", sorted(SAMPLES))
def test_option_round_trips(field: str) -> None:
    argv, value = SAMPLES[field]
    entry = BY_FIELD[field]
    expected = replace(RunOptions(), **{field: value})
    assert getattr(RunOptions(), field) != value  # the sample shows something
    o = from_cli(argv)
    assert o == expected  # argparse -> RunOptions
    assert from_cli(argv, "qualify") == expected
    if entry.selection:
        assert from_cli(argv, "list") == expected
    args = options_to_args(o)
    assert entry.gc in args
    assert from_pytest(args) == expected  # -> pytest arguments -> RunOptions
    stored = json.loads(json.dumps(o.to_json()))
    assert o.to_json() == stored  # JSON's own types: no tuple
    assert list(stored) == list(FIELD_ORDER)
    resumed = RunOptions.from_json(stored)  # -> run.json -> resume
    assert resumed == expected
    assert from_pytest(options_to_args(resumed)) == expected


def test_all_options_at_once_round_trip() -> None:
    """Every sample together (but --baseline: --baselines excludes it)."""
    argv = [a for f, (given, _) in SAMPLES.items() if f != "baseline" for a in given]
    expected = RunOptions(**{f: v for f, (_, v) in SAMPLES.items() if f != "baseline"})
    o = from_cli(argv)
    assert o == expected
    assert from_pytest(options_to_args(o)) == expected
    assert through_run_json(o) == expected
    assert from_pytest(options_to_args(through_run_json(o))) == expected


@pytest.mark.parametrize("field", sorted(PYTEST_ONLY))
def test_pytest_only_option_round_trips(field: str) -> None:
    expected = replace(RunOptions(), **{field: PYTEST_ONLY[field]})
    assert from_pytest(options_to_args(expected)) == expected
    assert through_run_json(expected) == expected
    with pytest.raises(SystemExit):  # not an option of the command line
        build_parser().parse_args(["run", f"--{field.replace('_', '-')}", "1"])


def test_no_expectations_round_trips() -> None:
    """expectations [] (--selftest's default) is its own pytest flag."""
    o = RunOptions(expectations=[])
    assert options_to_args(o) == ["--gc-no-expectations"]
    assert from_pytest(options_to_args(o)) == o
    assert from_pytest(["--gc-expectations", "/e.txt", "--gc-no-expectations"]) == o
    assert through_run_json(o) == o


def test_relative_paths_are_made_absolute_by_the_command_line_only(
        tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    o = from_cli(["--scratch-dir", "s", "--expectations", "e.txt", "--dmesg-patterns", "p.txt",
                  "--catalogue", "m.txt", "--baselines", "b", "--kmsg", "k", "--testlist", "t"])
    assert (o.scratch_dir, o.expectations, o.dmesg_patterns, o.catalogue, o.baselines) == (
        str(tmp_path / "s"), [str(tmp_path / "e.txt")], str(tmp_path / "p.txt"),
        str(tmp_path / "m.txt"), [str(tmp_path / "b")])
    assert (o.kmsg, o.testlists) == ("k", ["t"])  # as given (cli.py resolves test lists)
    assert from_cli(["--baseline", "f.json"]).baseline == str(tmp_path / "f.json")
    assert from_pytest(["--gc-scratch-dir", "s"]).scratch_dir == "s"


@pytest.mark.parametrize("flag", ["kmsg", "taint-file"])
def test_a_kernel_source_given_must_be_readable(flag: str, tmp_path: Any) -> None:
    missing = str(tmp_path / "none")
    args = build_parser().parse_args(["run", f"--{flag}", missing])
    with pytest.raises(InputError, match=f"^--{flag} {missing}: cannot be read"):
        check_cli_given(args)
    with pytest.raises(InputError, match=f"^--gc-{flag} {missing}: cannot be read"):
        check_pytest_given(pytest_getoption([f"--gc-{flag}", missing]))
    for given in (["run", f"--{flag}", "off"], ["run"]):
        check_cli_given(build_parser().parse_args(given))
    check_pytest_given(pytest_getoption([f"--gc-{flag}", "off"]))



def test_path_options_are_the_table_s() -> None:
    """fleet_script makes these absolute for the shards; the table says which
    run options take paths (each value, or each of --expectations' list)."""
    from gpuconform.fleet.fleet_script import _PATH_OPTIONS
    from gpuconform.core.optable import path_options

    assert path_options() == {
        "--testlist": 1, "--scratch-dir": 1, "--expectations": None, "--dmesg-patterns": 1,
        "--catalogue": 1, "--kmsg": 1, "--taint-file": 1, "--baselines": 1, "--baseline": 1,
        "--openmetrics": 1}
    assert _PATH_OPTIONS == {"--build": 1, **path_options()}
