"""run_bounded: a step of a run's end that hangs, grows or fails costs one line."""

from __future__ import annotations

import os
import time

import pytest

from gpuconform.core.bounded import BoundedError, run_bounded


def _add(a: int, b: int) -> int:
    return a + b


def _hang() -> None:
    while True:
        time.sleep(1)


def _grow() -> None:
    hoard = []
    while True:
        hoard.append(bytearray(64 << 20))


def _fail() -> None:
    raise ValueError("no such thing")


def _die() -> None:
    os._exit(3)


def test_returns_the_value() -> None:
    assert run_bounded(_add, 2, 3, timeout_s=30, memory_bytes=1 << 30) == 5


def test_a_hang_is_killed() -> None:
    with pytest.raises(BoundedError, match=r"still running after 1 s: killed"):
        run_bounded(_hang, timeout_s=1, memory_bytes=1 << 30)


def test_growth_stops_at_its_limit() -> None:
    with pytest.raises(BoundedError, match=r"ran out of its 1 GiB of memory"):
        run_bounded(_grow, timeout_s=60, memory_bytes=1 << 30)


def test_an_exception_is_one_line() -> None:
    with pytest.raises(BoundedError, match=r"^no such thing$"):
        run_bounded(_fail, timeout_s=30, memory_bytes=1 << 30)


def test_a_child_that_dies_says_its_exit() -> None:
    with pytest.raises(BoundedError, match=r"without an answer \(exit 3\)"):
        run_bounded(_die, timeout_s=30, memory_bytes=1 << 30)
