"""One block of gpu tests run from per-GPU queues (queues.py), for the
plugin's session: the block's tests, the kernel log weighed into each copy
as it ends (a line that names another GPU of the run held for that GPU's
copy), why the queues had to stop, and what an interrupt leaves behind.

The session (plugin.GcSession) runs a copy and judges, journals and kills;
this module holds only what lives as long as one block.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Protocol, Sequence

from .attempts import TestRun
from .gang import combine, lost_record
from .kmsg import KmsgCapture, KmsgRecord
from .kwatch import KernelWatch
from .placement import NodePlan, Slot
from .queues import GpuQueues
from .results import TestRecord
from .states import State

__all__ = ["QueueBlock", "QueuedItem", "QueueHost"]


class _Entry(Protocol):
    path: Path


class QueuedItem(Protocol):
    """What the block reads of a test's item (plugin.SubtestItem)."""
    name: str
    entry: _Entry
    subtest: str | None
    placement: str


class QueueHost(Protocol):
    """What the block asks of the session that runs it."""
    kernel: KernelWatch | None
    node: NodePlan
    messages: list[str]
    stopping: threading.Event

    def copy_record(self, item: QueuedItem, slot: Slot) -> TestRecord: ...
    def judge_record(self, rec: TestRecord) -> TestRecord: ...
    def new_record(self, item: QueuedItem, state: State, reason: str) -> TestRecord: ...
    def finish_record(self, rec: TestRecord, interrupted: bool = False) -> None: ...
    def kill_running(self) -> None: ...


class QueueBlock:
    """The queues of one block of gpu tests, started at once."""

    def __init__(self, host: QueueHost, items: Sequence[QueuedItem], slots: list[Slot]) -> None:
        self.host = host
        self.items = {it.name: it for it in items}
        self.aborts: dict[str, str] = {}  # test -> why the run must stop
        self._kernel_lock = threading.Lock()  # each queue reads the kernel log after a copy
        self._held: dict[int | None, list[KmsgRecord]] = {}  # lines for a GPU's next copy
        self._copies_left = {s.gpu.index: len(items) for s in slots if s.gpu is not None}
        self.queues = GpuQueues(list(self.items), slots, self._copy, host.stopping)

    def __contains__(self, name: str) -> bool:
        return name in self.queues

    def describe(self) -> str:
        return self.queues.describe()

    def close(self, kill: bool = False) -> None:
        """No copy starts after this; the queues' threads waited for; kill:
        the running copies killed first."""
        self.queues.stop(self.host.kill_running if kill else None)

    def _copy(self, name: str, slot: Slot) -> TestRecord:
        """One copy of a queued test (a queue's thread), the kernel log read
        as it ends: a line naming one GPU of several loses that GPU at once
        (its later copies do not run), any other abort stops the queues."""
        rec = self.host.copy_record(self.items[name], slot)
        with self._kernel_lock:
            why = self._weigh(rec, slot)
            if why is not None:
                lost = self.host.node.lose(why)
                if lost is not None:
                    rec.reason = lost
                    self.host.messages.append(lost)
                else:
                    self.aborts.setdefault(name, why)
                    self.queues.close()
        return rec

    def _weigh(self, rec: TestRecord, slot: Slot) -> str | None:
        """(Under the kernel lock, as a queued copy ends.) The kernel lines
        since the last read, a line that names another GPU of the run held for
        that GPU's copy to end, the others and those held for this GPU weighed
        into rec; the abort reason, if any. A copy not run passes its lines on."""
        kernel = self.host.kernel
        if kernel is None:
            return None
        me = slot.gpu.index if slot.gpu is not None else None
        window, mine = kernel.read(), []
        for r in window.records:
            g = self.host.node.named(r.message)
            if g is not None and g != me and self._copies_left.get(g, 0) > 0:
                self._held.setdefault(g, []).append(r)
            else:
                mine.append(r)
        if me is not None:
            self._copies_left[me] = self._copies_left.get(me, 1) - 1
        mine = self._held.pop(me, []) + mine
        if rec.result is State.NOTRUN:
            self._held.setdefault(None, []).extend(mine)
            return None
        records = self._held.pop(None, []) + mine
        window.total += len(records) - len(window.records)  # what moved between copies
        window.records = records
        return kernel.weigh(rec, self.host.judge_record, window)

    def result(self, item: QueuedItem, notes: list[str]) -> TestRun:
        """item's record made of its copies, once every queue has run its
        copy (an interrupt meanwhile: interrupted() first, then raised)."""
        name, slots = item.name, self.queues.slots
        try:
            copies = self.queues.wait(name)
        except BaseException as e:
            self.host.stopping.set()
            self.close(kill=True)
            self.interrupted(name, e)
            raise
        stopped = next(iter(self.aborts.values()), "the GPU queues were stopped")
        rec = combine([c if c is not None else lost_record(name, str(item.entry.path),
                                                           item.subtest, s,
                                                           f"the run aborted: {stopped}")
                       for c, s in zip(copies, slots)], item.placement)
        rec.notes[:0] = notes
        # its own time: the copies ran at the queues' offsets, not together
        rec.duration = max((c.duration for c in copies if c is not None), default=0.0)
        abort = self.aborts.pop(name, None)
        left = [r for rs in self._held.values() for r in rs]
        kernel = self.host.kernel
        if name == self.queues.names[-1] and left and kernel is not None:  # the block's last
            self._held = {}
            window = KmsgCapture(records=left, total=len(left))
            abort = abort or kernel.weigh(rec, self.host.judge_record, window)
        return TestRun(rec, f"{name}: {abort}" if abort is not None else None)

    def interrupted(self, waiting: str, e: BaseException) -> None:
        """An interrupt while waiting for `waiting` (whose own record the item
        makes): every later queued test that a GPU had begun is recorded
        incomplete, with its copies: those that ended, those killed."""
        why = f"interrupted ({e or type(e).__name__})"
        names = self.queues.names
        for name in names[names.index(waiting) + 1:]:
            item = self.items[name]
            copies, states = [], []
            for o, slot in zip(self.queues.take(name), self.queues.slots):
                label = f"gpu{slot.gpu.index}" if slot.gpu is not None else "unpinned"
                if o is None:
                    states.append(f"{label} not started")
                    continue
                if not isinstance(o, TestRecord):  # killed as it ran
                    o = self.host.new_record(item, State.INCOMPLETE, f"{why}: killed")
                    o.gpu = slot.gpu.to_json() if slot.gpu is not None else None
                copies.append(o)
                states.append(f"{label} {o.result.value}")
            if copies:
                rec = self.host.new_record(item, State.INCOMPLETE,
                                           f"{why} while the GPU queues ran it: "
                                           f"{', '.join(states)}")
                rec.placement, rec.placements = item.placement, copies
                self.host.finish_record(rec, interrupted=True)
