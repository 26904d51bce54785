"""Per-GPU queues (queues.py): each GPU runs every queued test once, from its
own starting point; a test's copies come back in slot order once all ended;
a copy's exception reaches the waiter; stop() starts nothing more."""

from __future__ import annotations

import threading
import time

import pytest

from gpuconform.core.devices import Gpu
from gpuconform.core.placement import Slot
from gpuconform.core.queues import GpuQueues, queue_order, start_offsets
from gpuconform.core.results import TestRecord
from gpuconform.core.states import State


def _slots(n: int) -> list[Slot]:
    return [Slot(Gpu(i, "nvidia", f"GPU-{i}", "m", "", f"g{i}"), {}) for i in range(n)]


def test_offsets_spread_the_gpus_evenly() -> None:
    assert start_offsets(10, 4) == [0, 2, 5, 7]
    assert start_offsets(2, 3) == [0, 0, 1]
    assert start_offsets(1, 4) == [0, 0, 0, 0]
    assert start_offsets(0, 2) == [0, 0]


def test_each_gpu_walks_every_test_once_from_its_own_start() -> None:
    orders = queue_order(["a", "b", "c", "d"], 2)
    assert orders == [["a", "b", "c", "d"], ["c", "d", "a", "b"]]
    for o in queue_order([str(i) for i in range(7)], 3):
        assert sorted(o) == [str(i) for i in range(7)]


def _record(name: str, slot: Slot) -> TestRecord:
    rec = TestRecord(name, "bin", name, State.PASS)
    rec.gpu = slot.gpu.to_json() if slot.gpu else None
    return rec


def test_copies_come_back_in_slot_order_and_the_gpus_never_wait_for_each_other() -> None:
    ran: list[tuple[int, str]] = []
    lock = threading.Lock()
    slow = threading.Event()

    def one(name: str, slot: Slot) -> TestRecord:
        assert slot.gpu is not None
        if slot.gpu.index == 0 and name == "a":
            slow.wait(5)  # GPU 0 is held on its first test ...
        with lock:
            ran.append((slot.gpu.index, name))
        return _record(name, slot)

    q = GpuQueues(["a", "b", "c", "d"], _slots(2), one, threading.Event())
    deadline = time.monotonic() + 5
    while len(ran) < 4 and time.monotonic() < deadline:  # ... while GPU 1 runs all four
        time.sleep(0.01)
    assert [n for g, n in ran] == ["c", "d", "a", "b"] and {g for g, _ in ran} == {1}
    slow.set()
    for name in "abcd":
        copies = q.wait(name)
        assert [c.gpu["index"] for c in copies if c.gpu] == [0, 1]
        assert {c.name for c in copies} == {name}
    q.stop()
    assert sorted(ran) == sorted((g, n) for g in (0, 1) for n in "abcd")


def test_a_copys_exception_reaches_the_waiter() -> None:
    def one(name: str, slot: Slot) -> TestRecord:
        if name == "b" and slot.gpu is not None and slot.gpu.index == 1:
            raise OSError("journal full")
        return _record(name, slot)

    q = GpuQueues(["a", "b"], _slots(2), one, threading.Event())
    assert len(q.wait("a")) == 2
    with pytest.raises(OSError, match="journal full"):
        q.wait("b")
    q.stop()


def test_after_stop_no_copy_starts_and_a_waiter_gets_none_for_it() -> None:
    started: list[str] = []
    gate = threading.Event()

    def one(name: str, slot: Slot) -> TestRecord:
        started.append(name)
        gate.wait(5)
        return _record(name, slot)

    stopping = threading.Event()
    q = GpuQueues(["a", "b", "c"], _slots(1), one, stopping)
    while not started:
        time.sleep(0.01)
    killed: list[bool] = []

    def kill() -> None:
        killed.append(True)
        gate.set()  # the running copy ends, as a killed process would

    q.stop(kill)
    assert started == ["a"] and killed == [True]
    assert q.wait("c") == [None]


def test_the_progress_line_says_how_far_the_queues_are() -> None:
    q = GpuQueues(["a", "b", "c"], _slots(2), _record, threading.Event())
    for name in "abc":
        q.wait(name)
    assert q.describe() == "2 GPU queues: 6 of 6 copies ended"
    q.stop()
