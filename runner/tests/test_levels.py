"""Qualification levels (levels.py): --duration's grammar, the long level's
share of time per soak, and `gpuconform run --level` end to end over
selftest_soak, whose subjects keep their resources or leak on purpose."""

from __future__ import annotations

from pathlib import Path

import pytest

from gc_testutil import Selftests
from gpuconform.core.levels import (SOAK_FLOOR_S, SOAK_OVERHEAD_S, LevelError, SoakPlan,
                                    parse_duration)
from test_run_flow import one_line_error, run


@pytest.mark.parametrize("text,secs", [("8m", 480), ("1h", 3600), ("90s", 90), ("90", 90),
                                       ("1h30m", 5400), ("2.5m", 150), ("1m30s", 90)])
def test_duration(text: str, secs: float) -> None:
    assert parse_duration(text) == secs


@pytest.mark.parametrize("text", ["", "m", "8x", "-5m", "0", "0m", "1d", "5 m 3"])
def test_bad_duration(text: str) -> None:
    with pytest.raises(LevelError, match="--duration"):
        parse_duration(text)


def test_plan_shares_what_is_left() -> None:
    plan = SoakPlan(start=1000.0, duration_s=600.0, soaks=["a@x", "b@y", "c@z"])
    # 300 s of other tests ran first: 300 s left for three soaks.
    assert plan.seconds_for("a@x", 1300.0) == 100 - SOAK_OVERHEAD_S
    # a took 150 s in all: 150 s left for two.
    assert plan.seconds_for("b@y", 1450.0) == 75 - SOAK_OVERHEAD_S
    assert plan.seconds_for("b@y", 1500.0) == 75 - SOAK_OVERHEAD_S  # a retry: the same
    # Past the end: each soak still gets enough samples for a slope.
    assert plan.seconds_for("c@z", 1700.0) == SOAK_FLOOR_S
    assert plan.given == {"a@x": 95.0, "b@y": 70.0, "c@z": SOAK_FLOOR_S}


def test_long_level_runs_soaks_last_with_their_seconds(selftests: Selftests, tmp_path: Path) -> None:
    r = run(selftests, tmp_path / "r", "--level", "long", "--duration", "25s", "--retries", "0",
            "--include", r"^selftest_soak@(steady|threads|undeclared)$")
    assert r.returncode == 1  # undeclared fails: a soak outside .soaks
    data = r.json()
    level = data["run"]["level"]
    assert level["name"] == "long" and level["duration_s"] == 25
    assert set(level["soak_seconds"]) == {"selftest_soak@steady", "selftest_soak@threads"}
    assert list(data["tests"]) [0] == "selftest_soak@undeclared"  # non-soaks first
    for name in level["soak_seconds"]:
        t = data["tests"][name]
        assert t["result"] == "pass", t["err"]
        (soak,) = t["soaks"]
        assert soak["level"] == "long"
        assert {s["name"] for s in soak["series"]} == {"rss", "fds", "latency"}
        assert all(s["verdict"] == "ok" for s in soak["series"]), soak["series"]
        # It ran for the seconds it was given, not a count of cycles.
        assert soak["seconds"] >= level["soak_seconds"][name] * 0.95
    assert "not in the test's .soaks" in data["tests"]["selftest_soak@undeclared"]["err"]


def test_levels_set_the_counts(selftests: Selftests, tmp_path: Path) -> None:
    cycles = {}
    for lv in ("quick", "standard"):
        r = run(selftests, tmp_path / lv, "--level", lv, "--include", r"^selftest_soak@steady$")
        assert r.returncode == 0, r.stderr
        (soak,) = r.tests()["selftest_soak@steady"]["soaks"]
        assert soak["level"] == lv
        cycles[lv] = soak["cycles"]
        assert r.json()["run"]["level"]["name"] == lv
    assert cycles == {"quick": 200, "standard": 2000}


def test_a_leak_fails_at_standard(selftests: Selftests, tmp_path: Path) -> None:
    r = run(selftests, tmp_path / "r", "--level", "standard", "--retries", "0",
            "--include", r"^selftest_soak@(rss-leak|fd-leak|slowdown)$")
    tests = r.tests()
    grows = {n: [s["name"] for s in t["soaks"][0]["series"] if s["verdict"] == "grows"]
             for n, t in tests.items()}
    assert grows["selftest_soak@rss-leak"] == ["rss"]
    assert "fds" in grows["selftest_soak@fd-leak"]
    assert grows["selftest_soak@slowdown"] == ["latency"]
    assert all(t["result"] == "fail" for t in tests.values())


def test_bad_level_input(selftests: Selftests, tmp_path: Path) -> None:
    err = one_line_error(run(selftests, tmp_path / "a", "--level", "extended"))
    assert "--level" in err and "extended" in err and "quick" in err
    err = one_line_error(run(selftests, tmp_path / "b", "--level", "quick", "--duration", "8m"))
    assert "--duration: only --level long" in err
    err = one_line_error(run(selftests, tmp_path / "c", "--level", "long", "--duration", "8x"))
    assert "--duration '8x'" in err
