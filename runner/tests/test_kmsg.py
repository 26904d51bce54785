"""kmsg.py: kernel log records, patterns, classification, taint; /dev/kmsg for real as root."""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Iterator

import pytest

from gc_testutil import REPO_ROOT
from gpuconform.core.kmsg import (
    DmesgPatternError,
    KmsgCapture,
    KmsgReader,
    KmsgRecord,
    TaintWatch,
    classify_dmesg,
    describe_taint,
    load_patterns,
    parse_patterns,
    parse_record,
)
from gpuconform.core.states import State, apply_dmesg

DEFAULT = REPO_ROOT / "data" / "dmesg" / "patterns.txt"


def rec(msg: str, level: int = 6, seq: int = 1) -> KmsgRecord:
    return KmsgRecord(level, 0, seq, 1_500_000, msg)


# ------------------------------------------------------------------ records


def test_parse_record() -> None:
    r = parse_record(b"12,344,1702997774,-;gpuconform-probe: hello\n")
    assert r == KmsgRecord(4, 1, 344, 1702997774, "gpuconform-probe: hello")
    assert r.text() == "<4>[ 1702.997774] gpuconform-probe: hello"


def test_parse_record_with_continuation_lines_and_more_prefix_fields() -> None:
    data = (b"3,1001,5140900,-,caller=T1;amdgpu 0000:03:00.0: ring gfx timeout\n"
            b" SUBSYSTEM=pci\n DEVICE=+pci:0000:03:00.0\n")
    r = parse_record(data)
    assert r is not None and r.level == 3 and r.facility == 0 and r.seq == 1001
    assert r.message == "amdgpu 0000:03:00.0: ring gfx timeout"
    assert r.fields == (("SUBSYSTEM", "pci"), ("DEVICE", "+pci:0000:03:00.0"))


@pytest.mark.parametrize("data", [b"", b"no semicolon\n", b"1,2;too few fields\n",
                                  b"x,2,3,-;not a number\n", b"-1,2,3,-;negative\n"])
def test_parse_record_rejects(data: bytes) -> None:
    assert parse_record(data) is None


def fake_reads(monkeypatch: pytest.MonkeyPatch, script: list[bytes | int]) -> KmsgReader:
    """A reader whose os.read() returns the script: bytes, or an errno to raise."""
    items = iter(script)

    def read(fd: int, n: int) -> bytes:
        item = next(items, errno.EAGAIN)
        if isinstance(item, int):
            raise OSError(item, os.strerror(item)) if item != errno.EAGAIN else \
                BlockingIOError(item, "again")
        return item

    r = KmsgReader.__new__(KmsgReader)
    r.path, r.fd, r.error, r._last_seq = "/dev/kmsg", 99, None, None
    monkeypatch.setattr(os, "read", read)  # the os module kmsg reads with
    return r


def test_reader_counts_overwritten_records_from_the_sequence_gap(monkeypatch: pytest.MonkeyPatch) -> None:
    r = fake_reads(monkeypatch, [b"6,5,1,-;a\n", errno.EPIPE, b"6,9,2,-;b\n", b"junk", b"4,10,3,-;c\n"])
    cap = r.read()
    assert [x.message for x in cap.records] == ["a", "b", "c"]
    assert cap.lost == 3 and cap.malformed == 1 and cap.total == 3
    notes = cap.notes()
    assert any("3 record(s) overwritten" in n and "EPIPE" in n for n in notes)
    assert any("1 unparsable" in n for n in notes)


def test_reader_epipe_first_in_a_window_counts_at_least_one(monkeypatch: pytest.MonkeyPatch) -> None:
    r = fake_reads(monkeypatch, [errno.EPIPE, b"6,40,1,-;x\n"])
    assert r.read().lost == 1


def test_reader_keeps_a_bounded_number_of_records(monkeypatch: pytest.MonkeyPatch) -> None:
    r = fake_reads(monkeypatch, [f"6,{i},1,-;m{i}\n".encode() for i in range(10)])
    cap = r.read(keep=4)
    assert len(cap.records) == 4 and cap.total == 10
    assert any("10 records, the first 4 kept" in n for n in cap.notes())


def test_reader_other_errors_stop_the_window(monkeypatch: pytest.MonkeyPatch) -> None:
    r = fake_reads(monkeypatch, [b"6,1,1,-;a\n", errno.EIO])
    cap = r.read()
    assert len(cap.records) == 1 and cap.error and "Input/output error" in cap.error


def test_unreadable_kmsg_says_why(tmp_path: Path) -> None:
    r = KmsgReader(str(tmp_path / "no-such-kmsg"))
    assert not r.available and r.error == f"{tmp_path / 'no-such-kmsg'}: No such file or directory"
    r.mark()
    assert r.read().records == []


# ----------------------------------------------------------------- patterns


def test_patterns_first_match_decides_then_the_level() -> None:
    p = parse_patterns("# c\nlevel 3\nignore harmless\nabort GPU reset\nfail oops\nwarn odd\n", "P")
    assert p.warn_level == 3
    assert p.action_of(rec("harmless GPU reset", level=0))[0] is None  # ignore came first
    assert p.action_of(rec("amdgpu: GPU reset begin!"))[0] == "abort"
    assert p.action_of(rec("an oops", level=7))[0] == "fail"
    assert p.action_of(rec("something odd", level=7))[0] == "warn"
    assert p.action_of(rec("plain error", level=3)) == ("warn", None)  # level 3 <= 3
    assert p.action_of(rec("plain warning", level=4)) == (None, None)  # level 4 > 3
    rule = p.action_of(rec("odd", level=7))[1]
    assert rule is not None and rule.where == "P:6"


@pytest.mark.parametrize("text, error", [
    ("warn ok\nexplode now\n", "P:2: unknown action 'explode'"),
    ("abort\n", "P:1: abort without a regular expression"),
    ("fail (unclosed\n", "P:1: bad regular expression '(unclosed'"),
    ("level 9\n", "P:1: level: '9' is not a level 0..7"),
    ("level 4\n\nlevel 3\n", "P:3: 'level' given twice (first on line 1)"),
])
def test_pattern_errors_name_file_and_line(text: str, error: str) -> None:
    with pytest.raises(DmesgPatternError) as e:
        parse_patterns(text, "P")
    assert str(e.value).startswith(error) and "\n" not in str(e.value)


def test_load_patterns_errors(tmp_path: Path) -> None:
    with pytest.raises(DmesgPatternError, match=r"cannot read: No such file"):
        load_patterns(tmp_path / "none.txt")
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"warn a\nwarn \xff\n")
    with pytest.raises(DmesgPatternError, match=r"bad.txt:2: not UTF-8"):
        load_patterns(bad)


@pytest.mark.parametrize("msg, level, action", [
    ("amdgpu 0000:03:00.0: amdgpu: GPU reset begin!", 3, "abort"),
    ("[drm:amdgpu_job_timedout [amdgpu]] *ERROR* ring gfx_0.0.0 timeout, signaled seq=1", 3,
     "abort"),
    ("NVRM: Xid (PCI:0000:01:00): 79, pid=1234, GPU has fallen off the bus.", 4, "abort"),
    ("NVRM: GPU at PCI:0000:01:00: GPU has fallen off the bus.", 0, "abort"),
    ("BUG: kernel NULL pointer dereference, address: 0000000000000008", 1, "fail"),
    ("WARNING: CPU: 3 PID: 1234 at drivers/gpu/drm/amd/amdgpu/amdgpu_vm.c:123", 4, "fail"),
    ("INFO: task kworker/3:1:123 blocked for more than 120 seconds.", 3, "fail"),
    ("gpuconform-selftest: simulated warning", 4, "warn"),
    ("amdgpu: failed to write reg", 3, "warn"),
    ("usb 1-1: new high-speed USB device", 6, None),
])
def test_default_patterns(msg: str, level: int, action: str | None) -> None:
    p = load_patterns(DEFAULT)
    assert p.warn_level == 4
    assert p.action_of(rec(msg, level))[0] == action


def test_classify_and_apply_dmesg() -> None:
    p = parse_patterns("abort GPU reset\nfail BUG\n", "P")
    cap = KmsgCapture(records=[rec("info", 6), rec("a warning", 4), rec("BUG: x", 6),
                               rec("GPU reset begin", 3)], total=4, lost=2)
    v = classify_dmesg(cap, p)
    assert len(v.lines) == 4 and v.lines[1] == "<4>[    1.500000] a warning"
    assert v.warnings == ["<4>[    1.500000] a warning"]
    assert v.failures == ["<6>[    1.500000] BUG: x"]
    assert v.abort_reason == "kernel log: <3>[    1.500000] GPU reset begin"
    assert any("2 record(s) overwritten" in n for n in v.notes)
    assert apply_dmesg(State.PASS, "", v.warnings, [])[0] is State.DMESG_WARN
    assert apply_dmesg(State.PASS, "", v.warnings, v.failures) == (
        State.DMESG_FAIL, "kernel log: <6>[    1.500000] BUG: x")
    st, why = apply_dmesg(State.FAIL, "boom", v.warnings, [])
    assert st is State.DMESG_FAIL and why == "boom; kernel log: <4>[    1.500000] a warning"
    for other in (State.SKIP, State.CRASH, State.TIMEOUT):
        assert apply_dmesg(other, "r", v.warnings, v.failures) == (other, "r")
    assert apply_dmesg(State.PASS, "", [], []) == (State.PASS, "")


# -------------------------------------------------------------------- taint


def test_taint_watch(tmp_path: Path) -> None:
    f = tmp_path / "tainted"
    f.write_text("0\n")
    t = TaintWatch(str(f))
    assert t.initial == 0 and t.error is None and t.check() is None
    f.write_text("1\n")  # P: a proprietary module was loaded: noted, no abort
    c = t.check()
    assert c is not None and c.new_bits == 1 and not c.aborts
    assert "new P (proprietary module loaded)" in c.describe()
    f.write_text("513\n")  # + W
    c = t.check()
    assert c is not None and c.new_bits == 512 and c.aborts
    assert c.describe() == "kernel taint 1 -> 513: new W (kernel issued a warning (WARN_ON))"
    assert t.check() is None  # no NEW bit
    f.write_text("1\n")
    assert t.check() is None  # bits going away are no news


def test_taint_watch_errors(tmp_path: Path) -> None:
    t = TaintWatch(str(tmp_path / "none"))
    assert t.value is None and "No such file" in (t.error or "")
    f = tmp_path / "bad"
    f.write_text("tainted!\n")
    t = TaintWatch(str(f))
    assert t.value is None and t.error == f"{f}: not a number: 'tainted!'"
    assert describe_taint(1 << 40) == "bit 40 (unknown)"


# ------------------------------------------------------- /dev/kmsg for real


@pytest.fixture
def real_kmsg() -> Iterator[KmsgReader]:
    r = KmsgReader()
    if not r.available:
        pytest.skip(f"/dev/kmsg not readable: {r.error}")
    if not os.access("/dev/kmsg", os.W_OK):
        r.close()
        pytest.skip("/dev/kmsg not writable (not root)")
    yield r
    r.close()


def test_real_kmsg_window(real_kmsg: KmsgReader) -> None:
    with open("/dev/kmsg", "w") as f:
        f.write("<6>gpuconform-test: before the window\n")
    real_kmsg.mark()
    with open("/dev/kmsg", "w") as f:
        f.write("<4>gpuconform-test: inside the window\n")
    cap = real_kmsg.read()
    msgs = [r.message for r in cap.records]
    assert "gpuconform-test: inside the window" in msgs
    assert "gpuconform-test: before the window" not in msgs
    mine = [r for r in cap.records if r.message == "gpuconform-test: inside the window"][0]
    assert mine.level == 4 and mine.facility == 1  # written by user space: LOG_USER
    assert real_kmsg.read().records == []  # nothing new since


def test_kernel_watch_weighs_taint_into_the_record(tmp_path: Path) -> None:
    """kwatch.KernelWatch with the log off and a taint file: a new P is a note,
    a new W between tests aborts before the next one, after a test it ends ABORT."""
    from gpuconform.core.kwatch import KernelWatch
    from gpuconform.core.results import TestRecord

    f = tmp_path / "tainted"
    f.write_text("0\n")
    patterns = load_patterns(REPO_ROOT / "data" / "dmesg" / "patterns.txt")
    w = KernelWatch("off", str(f), patterns)
    assert w.note == "not watched (--kmsg off)" and not w.log_watched and w.messages == []
    assert w.between("b@one") == (None, [])
    f.write_text("1\n")
    abort, notes = w.between("b@two")
    assert abort is None and notes and notes[0].startswith("before the test started: kernel taint")
    f.write_text("513\n")
    abort, _ = w.between("b@three")
    assert abort is not None and abort.endswith("(between tests, before b@three)")
    rec = TestRecord("b@four", "/b", "four", State.PASS)
    assert w.after(rec) is None and rec.result is State.PASS  # nothing new
    f.write_text("515\n")  # + bit 1 (F): noted, no abort
    assert w.after(rec) is None and rec.notes[-1].startswith("kernel taint 513 -> 515")
    f.write_text("16899\n")  # + bit 14 (L: a soft lockup): aborts
    reason = w.after(rec)
    assert reason is not None and rec.result is State.ABORT
    assert rec.reason == f"run aborted: {reason}" and rec.notes[0] == "the test itself ended pass"
    assert w.to_json() == {"watched": False, "note": "not watched (--kmsg off)", "taint": 16899}
    already = KernelWatch("off", str(f), patterns)
    assert already.messages[0].startswith("kernel already tainted when the run started: 16899")
    w.close()


def test_weigh_judges_a_record_again_only_when_the_kernel_changed_it(tmp_path: Path) -> None:
    """A record judged before the kernel is read (a test's copies combined) keeps
    a stale verdict unless weigh() judges it again; unchanged, it is left alone."""
    from gpuconform.core.kwatch import KernelWatch
    from gpuconform.core.results import TestRecord

    f = tmp_path / "tainted"
    f.write_text("0\n")
    w = KernelWatch("off", str(f), load_patterns(REPO_ROOT / "data" / "dmesg" / "patterns.txt"))
    judged: list[State] = []
    rec = TestRecord("b@one", "/b", "one", State.PASS)
    assert w.weigh(rec, lambda r: judged.append(r.result)) is None and judged == []
    f.write_text("16384\n")  # bit 14 (L: a soft lockup): aborts
    assert w.weigh(rec, lambda r: judged.append(r.result)) is not None
    assert judged == [State.ABORT]
    w.close()
