"""Per-GPU queues: the one-GPU tests of a run (placement gpu), each GPU
walking them in the run's order from its own starting point.

In lockstep (gang.run_copies) a test's copies start together and the next
test waits for the slowest. What the copies share then meets itself: on a node
of 4 H200s the driver serialises context creation across the node (a
0.41 s test took 1.68 s as four copies) and every cuFile copy writes to the one
disk. Spread over the queue, GPU g starts at test floor(g * T / N) of T and
wraps around, so the GPUs run different tests at any moment: one GPU's context
creation or disk writes overlap the others' GPU-bound work, and a GPU never
waits for another's slowest copy.

Every GPU still runs every test once; a test's record is made (gang.combine)
when its last copy has ended, in the run's order, so results, journal and
report read as in lockstep. What changes is a copy's neighbours: other tests,
not copies of itself. The metrics that such neighbours disturb (host-timed
figures, the disk) belong to gpu-alone and node placements, which still have
the node to themselves (the queues are drained before they run). Measured on
4 H200s, the gated GPU-timed metrics kept their MDE but one class: CUPTI's
concurrent-tracing overhead ratios, which one night's neighbours moved 8-14%
(data/baselines/README.md); --lockstep keeps the old neighbours.
"""

from __future__ import annotations

import threading
from typing import Callable, Sequence

from .placement import Slot
from .results import TestRecord

__all__ = ["start_offsets", "queue_order", "GpuQueues"]

# One copy of a test on its slot: its record (judged), or raises.
Copy = Callable[[str, Slot], TestRecord]


def start_offsets(tests: int, gpus: int) -> list[int]:
    """Where each of gpus GPUs starts in a queue of tests: evenly spread
    (GPU 0 at the first test; fewer tests than GPUs: some start together)."""
    return [g * tests // gpus for g in range(max(0, gpus))]


def queue_order(names: Sequence[str], gpus: int) -> list[list[str]]:
    """Each GPU's order: names from its start offset, wrapping around."""
    return [list(names[o:]) + list(names[:o]) for o in start_offsets(len(names), gpus)]


class GpuQueues:
    """One thread a slot, each running its queue's copies one after another;
    wait(name) gives a test's copies, in slot order, once all have ended.
    stop() keeps any further copy from starting and waits for the threads."""

    def __init__(self, names: Sequence[str], slots: Sequence[Slot], one: Copy,
                 stopping: threading.Event) -> None:
        self.names = list(names)
        self.slots = list(slots)
        self._one = one
        self._stopping = stopping
        self._closed = threading.Event()
        self._done: dict[tuple[str, int], TestRecord | BaseException] = {}
        self.ended = 0  # copies ended so far, of len(names) * len(slots)
        self._cond = threading.Condition()
        self._threads = [
            threading.Thread(target=self._walk, args=(i, order), daemon=True,
                             name=f"gpuconform-queue{i}")
            for i, order in enumerate(queue_order(self.names, len(self.slots)))]
        for t in self._threads:
            t.start()

    def __contains__(self, name: str) -> bool:
        return name in self.names

    def _walk(self, i: int, order: list[str]) -> None:
        for name in order:
            if self._stopping.is_set() or self._closed.is_set():
                return
            try:
                out: TestRecord | BaseException = self._one(name, self.slots[i])
            except BaseException as e:  # handed to wait() in the run's thread
                out = e
            with self._cond:
                self._done[(name, i)] = out
                self.ended += 1
                self._cond.notify_all()

    def describe(self) -> str:
        """How far the queues are, for the progress line."""
        total = len(self.names) * len(self.slots)
        return f"{len(self.slots)} GPU queues: {self.ended} of {total} copies ended"

    def _ready(self, name: str) -> bool:
        return all((name, i) in self._done for i in range(len(self.slots)))

    def wait(self, name: str) -> list[TestRecord | None]:
        """name's copies in slot order, once every one has ended (None: a
        copy that never started, the queues having been closed first); a
        copy's exception is raised here."""
        with self._cond:
            while not self._ready(name) and any(t.is_alive() for t in self._threads):
                self._cond.wait(timeout=0.5)
            outs = [self._done.pop((name, i), None) for i in range(len(self.slots))]
        for o in outs:
            if isinstance(o, BaseException):
                raise o
        return [o if isinstance(o, TestRecord) else None for o in outs]

    def take(self, name: str) -> list[TestRecord | BaseException | None]:
        """name's copies as they are now, in slot order, without waiting
        (None: not ended, or never started): what an interrupted run keeps."""
        with self._cond:
            return [self._done.pop((name, i), None) for i in range(len(self.slots))]

    def close(self) -> None:
        """No copy starts after this (the running ones end as they will)."""
        self._closed.set()

    def stop(self, kill: Callable[[], None] | None = None) -> None:
        """No copy starts after this; the running ones killed (kill) and waited for."""
        self._closed.set()
        if kill is not None and any(t.is_alive() for t in self._threads):
            kill()
        for t in self._threads:
            t.join()
