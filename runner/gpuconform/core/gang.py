"""A test's copies on the run's GPUs (placement.py), run side by side, up to
`at_once` of them at a time, and their records made one.

Each copy is a whole test run of its own (attempts.run_test: its attempts,
retries and expectation rule), pinned to its GPU by its slot's environment. A
copy whose GPU went away before it started is not run: it ends notrun, saying
so, and the others go on.

The record of the test is its copies' record: the result and reason of the
copy that matters most (the most severe unexpected one, else the most severe),
expected only when every copy is, every copy's metrics and soaks (tagged with
its GPU's index: a baseline pools them), its dynamic subtests merged (per
device cases are named by the GPU, so they do not collide), and the copies
themselves, each with its GPU, under "placements".
"""

from __future__ import annotations

import threading
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Callable, Sequence

from .placement import Slot
from .results import DynamicRecord, TestRecord
from .states import State

__all__ = ["run_copies", "one_copy", "lost_record", "combine", "Stopped"]

# One copy's run: its record (judged).
Copy = Callable[[Slot], TestRecord]
# Why the slot's GPU can no longer be used, or None.
Lost = Callable[[Slot], "str | None"]


class Stopped(Exception):
    """Raised into a copy about to start after the run was interrupted."""


def lost_record(name: str, binary: str, subtest: str | None, slot: Slot, why: str) -> TestRecord:
    rec = TestRecord(name, binary, subtest, State.NOTRUN, reason=f"not run: {why}")
    rec.gpu = slot.gpu.to_json() if slot.gpu is not None else None
    rec.final, rec.expected, rec.judgement = State.NOTRUN.value, False, f"not run: {why}"
    return rec


def one_copy(name: str, binary: str, subtest: str | None, slot: Slot, one: Copy, lost: Lost,
             stopping: threading.Event) -> TestRecord:
    """The copy on slot, tagged with its GPU; notrun when the GPU went away."""
    if stopping.is_set():
        raise Stopped()
    why = lost(slot)
    if why is not None:
        return lost_record(name, binary, subtest, slot, why)
    rec = one(slot)
    rec.gpu = slot.gpu.to_json() if slot.gpu is not None else None
    return rec


def run_copies(name: str, binary: str, subtest: str | None, slots: Sequence[Slot],
               at_once: int, one: Copy, lost: Lost, stopping: threading.Event,
               kill: Callable[[], None]) -> list[TestRecord]:
    """Every slot's copy, at most at_once at a time, in slot order. On an
    interrupt (KeyboardInterrupt in the caller's thread) stopping is set, so
    that no copy starts after it, kill() ends the running ones, and the
    exception propagates once their threads are done."""

    def copy(slot: Slot) -> TestRecord:
        return one_copy(name, binary, subtest, slot, one, lost, stopping)

    if len(slots) == 1 or at_once <= 1:
        return [copy(s) for s in slots]
    pool = ThreadPoolExecutor(max_workers=at_once, thread_name_prefix="gpuconform-copy")
    futures: list[Future[TestRecord]] = []
    try:
        futures = [pool.submit(copy, s) for s in slots]
        return [f.result() for f in futures]
    except BaseException:
        stopping.set()
        for f in futures:
            f.cancel()
        kill()
        raise
    finally:
        pool.shutdown(wait=True)


def _tagged(items: list[dict[str, Any]], index: int | None) -> list[dict[str, Any]]:
    return [{**m, "gpu": index} for m in items] if index is not None else list(items)


def _which(copies: Sequence[TestRecord]) -> TestRecord:
    """The copy whose result the test reports."""
    bad = [c for c in copies if c.unexpected]
    pool = bad or list(copies)
    return max(pool, key=lambda c: c.result.severity)


def _label(c: TestRecord) -> str:
    return f"gpu{c.gpu['index']}" if c.gpu is not None else "unpinned"


def _merge_dynamic(copies: Sequence[TestRecord]) -> dict[str, DynamicRecord]:
    out: dict[str, DynamicRecord] = {}
    for c in copies:
        for k, d in c.dynamic.items():
            if k not in out or d.result.severity > out[k].result.severity:
                out[k] = d
    return out


def combine(copies: Sequence[TestRecord], placement: str) -> TestRecord:
    """The test's record from its copies' (one copy: that copy's own)."""
    if len(copies) == 1:
        copies[0].placement = placement
        return copies[0]
    rep = _which(copies)
    head = f"{_label(rep)}: " if rep.result is not State.PASS else ""
    rec = TestRecord(
        name=rep.name, binary=rep.binary, subtest=rep.subtest, result=rep.result,
        reason=head + rep.reason if rep.reason else "",
        out=rep.out, err=rep.err, out_bytes=rep.out_bytes, err_bytes=rep.err_bytes,
        start=min(c.start for c in copies if c.start) if any(c.start for c in copies) else 0.0,
        end=max(c.end for c in copies), reported_time=rep.reported_time,
        returncode=rep.returncode, command=list(rep.command), timeout=rep.timeout,
        dynamic=_merge_dynamic(copies), skip_at=rep.skip_at, placement=placement)
    rec.duration = max(0.0, rec.end - rec.start) if rec.start else max(c.duration for c in copies)
    for c in copies:
        idx = c.gpu["index"] if c.gpu is not None else None
        rec.metrics += _tagged(c.metrics, idx)
        rec.soaks += _tagged(c.soaks, idx)
        rec.dmesg += c.dmesg  # read after each copy in per-GPU queues (queues.py)
        rec.attempts += [{**a, "gpu": idx} for a in c.attempts]
        rec.notes += [f"{_label(c)}: {n}" for n in c.notes]
        c.metrics, c.soaks = [], []
    states = ", ".join(f"{_label(c)} {c.final or c.result.value}" for c in copies)
    rec.notes.insert(0, f"ran on {len(copies)} GPUs: {states}")
    rec.final, rec.rule = rep.final, rep.rule
    rec.expected = all(c.expected is True for c in copies)
    rec.judgement = f"{_label(rep)}: {rep.judgement}" if rep.judgement else ""
    rec.placements = list(copies)
    return rec
