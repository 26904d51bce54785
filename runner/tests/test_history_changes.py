"""history/changes.py: the change points of a night's series and the state
changes of a test (pure logic)."""

from __future__ import annotations

import random

import pytest

from gpuconform.history.changes import MIN_SHIFT, shifts_of, state_changes


def test_a_step_is_dated_by_its_first_night() -> None:
    rnd = random.Random(1)
    series = [100 + rnd.gauss(0, 0.2) for _ in range(8)] + [103 + rnd.gauss(0, 0.2) for _ in range(6)]
    (s,) = shifts_of(series)
    assert s.index == 8 and s.relative == pytest.approx(0.03, abs=0.005) and s.p < 0.01


def test_a_dip_that_comes_back_is_two_changes() -> None:
    """One host 2% faster, then a slower kernel on it: the H100 nights of
    graph-time.graph.chain256 (lease G from night 10, the 5% longer spin from 13)."""
    series = [458.0, 458.0, 457.7, 458.0, 458.7, 458.7, 458.7, 458.8, 458.3,
              450.1, 450.0, 450.0, 458.5, 458.5, 458.5]
    assert [s.index for s in shifts_of(series)] == [9, 12]


def test_noise_alone_is_no_change() -> None:
    rnd = random.Random(2)
    for _ in range(20):
        assert shifts_of([50 + rnd.gauss(0, 1) for _ in range(30)]) == []


def test_constant_series_and_short_ones_have_none() -> None:
    assert shifts_of([7.0] * 10) == []
    assert shifts_of([1.0, 2.0, 3.0]) == []
    assert shifts_of([]) == []


def test_a_shift_below_min_shift_is_not_reported_however_steady() -> None:
    tiny = 1 + MIN_SHIFT / 2
    assert shifts_of([1.0] * 5 + [tiny] * 5) == []
    assert [s.index for s in shifts_of([1.0] * 5 + [1.02] * 5)] == [5]


def test_state_changes_skip_nights_without_the_test() -> None:
    assert state_changes(["pass", "pass", None, "fail", "fail", "pass"]) == [3, 5]
    assert state_changes([None, "pass", None]) == []
    assert state_changes(["fail, expected", "fail"]) == [1]
