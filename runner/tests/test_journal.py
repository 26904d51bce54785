"""journal.py: the append-only journal, torn lines, the lock, run.json; kill_orphans."""

from __future__ import annotations

import errno
import fcntl
import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from gc_testutil import journal_held, processes_with
from gpuconform.core.execute import kill_orphans
from gpuconform.core.journal import (
    RUN_ID_ENV,
    Journal,
    JournalError,
    is_locked,
    read_journal,
    read_run_json,
    repair_journal,
    write_run_json,
)


def rec(result: str = "pass") -> dict[str, object]:
    return {"result": result, "reason": ""}


def lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(x) for x in path.read_text().splitlines()]


def test_journal_lines_and_state(tmp_path: Path) -> None:
    path = tmp_path / "journal.jsonl"
    j = Journal(path)
    j.start("a@1", 1, 100, "tok-a")
    j.result("a@1", rec())
    j.start("a@2", 1, 101, "tok-b")
    j.start("a@2", 2, 102, "tok-c")  # a retry
    j.event("abort", test="a@2", reason="r")
    j.close()
    got = lines(path)
    assert [x["event"] for x in got] == ["start", "result", "start", "start", "abort"]
    assert got[0]["pid"] == got[0]["pgid"] == 100 and got[0]["token"] == "tok-a"
    st = read_journal(path)
    assert list(st.records) == ["a@1"] and st.records["a@1"] == rec()
    assert [(s.test, s.attempt, s.pgid, s.token, s.line) for s in st.running] == [
        ("a@2", 2, 102, "tok-c", 4)]
    assert len(st.starts) == 3 and st.aborts[0]["reason"] == "r"
    assert st.torn is None and st.good_size == path.stat().st_size


def test_missing_journal_is_empty(tmp_path: Path) -> None:
    st = read_journal(tmp_path / "none.jsonl")
    assert st.records == {} and st.running == [] and st.lines == 0


def test_torn_last_line_is_dropped_and_repaired(tmp_path: Path) -> None:
    path = tmp_path / "journal.jsonl"
    j = Journal(path)
    j.start("a@1", 1, 7, "t")
    j.close()
    good = path.stat().st_size
    with open(path, "ab") as f:
        f.write(b'{"event":"result","test":"a@1","rec')  # power loss mid-write
    st = read_journal(path)
    assert st.records == {} and [s.test for s in st.running] == ["a@1"]
    assert st.torn is not None and st.torn.startswith(f"{path}:2: torn last line (")
    repair_journal(st)
    assert path.stat().st_size == good
    j = Journal(path)
    j.result("a@1", rec("incomplete"))
    j.close()
    assert read_journal(path).records["a@1"]["result"] == "incomplete"


def test_nul_filled_tail_is_torn_too(tmp_path: Path) -> None:
    path = tmp_path / "journal.jsonl"
    path.write_bytes(b'{"event":"start","test":"a@1"}\n\0\0\0\0\n\0\0')
    st = read_journal(path)
    assert st.torn is not None and st.lines == 1 and st.good_size == 31


def test_complete_last_line_without_newline_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "journal.jsonl"
    path.write_bytes(b'{"event":"result","test":"a@1","record":{"result":"pass"}}')
    st = read_journal(path)
    assert list(st.records) == ["a@1"] and st.torn is None and st.missing_newline
    repair_journal(st)
    assert path.read_bytes().endswith(b"}\n")


@pytest.mark.parametrize("body, error", [
    (b'{"event":"start","test":"a@1"}\nnot json\n{"event":"end"}\n', ":2: not a journal line"),
    (b'{"event":"result","test":"a@1"}\n{"event":"end"}\n', ":1: result line without a record"),
    (b'{"event":"start"}\n{"event":"end"}\n', ":1: start line without a test name"),
    (b'{"event":"bogus"}\n{"event":"end"}\n', ":1: not a journal line"),
])
def test_bad_line_before_good_ones_is_an_error(tmp_path: Path, body: bytes, error: str) -> None:
    path = tmp_path / "journal.jsonl"
    path.write_bytes(body)
    with pytest.raises(JournalError) as e:
        read_journal(path)
    assert str(e.value).startswith(f"{path}{error}") and "\n" not in str(e.value)
    assert path.read_bytes() == body  # left as it is


def test_duplicate_result_keeps_the_first(tmp_path: Path) -> None:
    path = tmp_path / "journal.jsonl"
    j = Journal(path)
    j.result("a@1", rec("fail"))
    j.result("a@1", rec("pass"))
    j.close()
    st = read_journal(path)
    assert st.records["a@1"]["result"] == "fail"
    assert st.duplicates == [f"{path}:2: second result for a@1 (ignored)"]


def test_the_lock_tells_a_live_run_from_a_dead_one(tmp_path: Path) -> None:
    path = tmp_path / "journal.jsonl"
    j = Journal(path)
    assert is_locked(path)
    with pytest.raises(JournalError, match="another gpuconform process is using this run"):
        Journal(path)
    j.close()
    assert not is_locked(path)
    # A process killed with SIGKILL drops it too.
    with journal_held(path):
        assert is_locked(path)
    assert not is_locked(path)


def nfs_flock(real: Any) -> Any:
    """fcntl.flock as an NFS client does it (flock(2), NOTES, "NFS details": flock()
    is emulated there as an fcntl(2) byte-range lock on the whole file, so "in order
    to place an exclusive lock, the file must be opened for writing"): LOCK_EX on a
    descriptor opened read-only fails with EBADF. A local file system has no such
    rule, which is how a check that opened the journal read-only passed here."""
    def flock(fd: int, op: int) -> None:
        if op & fcntl.LOCK_EX and fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE == os.O_RDONLY:
            raise OSError(errno.EBADF, os.strerror(errno.EBADF))
        real(fd, op)
    return flock


def test_the_lock_check_opens_the_journal_for_writing(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """With NFS's rule, a read-only check took EBADF for "locked": a dead run
    stayed "still going" for ever. The check opens the journal for writing, as
    the runner does (neither creating nor truncating it), and tells a live run
    from a dead one."""
    monkeypatch.setattr(fcntl, "flock", nfs_flock(fcntl.flock))
    path = tmp_path / "journal.jsonl"
    j = Journal(path)
    j.start("a@1", 1, 100, "tok-a")
    j.close()
    before = path.read_bytes()
    assert not is_locked(path)  # dead: no holder
    with journal_held(path):
        assert is_locked(path)
    assert not is_locked(path)
    assert path.read_bytes() == before  # not truncated
    assert not is_locked(tmp_path / "none.jsonl") and not (tmp_path / "none.jsonl").exists()


def test_a_lock_that_fails_otherwise_is_no_live_run(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Only EWOULDBLOCK means a holder: a file system without locks (Lustre
    without -o flock: ENOSYS; NFS without a lock manager: ENOLCK) is said, in
    one line naming the file, by the check and by the runner alike."""
    path = tmp_path / "journal.jsonl"
    path.write_text("")

    def no_locks(fd: int, op: int) -> None:
        raise OSError(errno.ENOLCK, os.strerror(errno.ENOLCK))

    monkeypatch.setattr(fcntl, "flock", no_locks)
    with pytest.raises(JournalError) as ei:
        is_locked(path)
    assert str(ei.value) == (f"{path}: cannot tell whether a run holds the journal: flock: "
                             "No locks available (a file system without locks?)")
    with pytest.raises(JournalError) as ei:
        Journal(path)
    assert str(ei.value).startswith(f"{path}: cannot lock the journal: flock: No locks available")


def test_run_json_round_trip_and_errors(tmp_path: Path) -> None:
    info = {"manifest": "/b/m.txt", "run_id": "r", "options": {}, "selection": ["a@1", "a@2"],
            "tests": ["a@1"], "shard": [1, 2]}
    write_run_json(tmp_path, info)
    assert read_run_json(tmp_path)["selection"] == ["a@1", "a@2"]
    with pytest.raises(JournalError, match=r"run.json: no such file"):
        read_run_json(tmp_path / "nope")
    (tmp_path / "run.json").write_text('{"format": "gpuconform-run",\n "version": 1,,}')
    with pytest.raises(JournalError, match=r"run.json:2: not JSON"):
        read_run_json(tmp_path)
    (tmp_path / "run.json").write_text('{"format": "other"}')
    with pytest.raises(JournalError, match="not a gpuconform run file"):
        read_run_json(tmp_path)
    bad = dict(info, format="gpuconform-run", version=1, tests="a@1")
    (tmp_path / "run.json").write_text(json.dumps(bad))
    with pytest.raises(JournalError, match="field 'tests' missing or of the wrong type"):
        read_run_json(tmp_path)
    bad = dict(info, format="gpuconform-run", version=1, shard=[1])
    (tmp_path / "run.json").write_text(json.dumps(bad))
    with pytest.raises(JournalError, match=r"field 'shard'"):
        read_run_json(tmp_path)


def test_kill_orphans_finds_by_environment_and_kills_the_group(
        tmp_path: Path, marker_env: bytes) -> None:
    """A 'test' left by a dead runner: a group of two sleepers, one of them
    with the run id; another process in its own session with the token."""
    run_id, token = "run-123", "tok-456"
    env = dict(os.environ, **{RUN_ID_ENV: run_id})
    leader = subprocess.Popen(["sh", "-c", "sleep 300 & exec sleep 301"], env=env,
                              start_new_session=True)
    escaped = subprocess.Popen(["sleep", "302"], start_new_session=True,
                               env=dict(os.environ, GPUCONFORM_RUN_TOKEN=token))
    bystander = subprocess.Popen(["sleep", "303"], start_new_session=True)
    try:
        # Settled, as a dead runner's test is: the leader has exec'd into its
        # sleep (during execve its environ reads empty) and forked the other.
        deadline = time.monotonic() + 30
        while (Path(f"/proc/{leader.pid}/cmdline").read_bytes() != b"sleep\x00301\x00"
               or len(processes_with(f"{RUN_ID_ENV}={run_id}".encode())) < 2):
            assert time.monotonic() < deadline, "the leader did not settle in 30 s"
            time.sleep(0.01)
        found = kill_orphans([f"{RUN_ID_ENV}={run_id}", f"GPUCONFORM_RUN_TOKEN={token}"],
                             [leader.pid])
        assert leader.wait(timeout=60) == -9 and escaped.wait(timeout=60) == -9
        assert all(p.dead for p in found)
        assert {p.pid for p in found if p.escaped} == {escaped.pid}
        assert leader.pid in {p.pid for p in found if not p.escaped}
        assert bystander.poll() is None  # not ours: untouched
        left = [pid for pid, _ in processes_with(marker_env) if pid != bystander.pid]
        assert left == []
    finally:
        for p in (leader, escaped, bystander):
            if p.poll() is None:
                p.kill()
                p.wait()


def test_kill_orphans_spares_a_recycled_group(marker_env: bytes) -> None:
    """After a reboot the recorded pgid may be a stranger's: no env match, no kill."""
    p = subprocess.Popen(["sleep", "300"], start_new_session=True)
    try:
        assert kill_orphans([f"{RUN_ID_ENV}=not-this"], [p.pid]) == []
        assert p.poll() is None
    finally:
        p.kill()
        p.wait()

