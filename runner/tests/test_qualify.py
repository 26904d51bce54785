"""qualify.py: the qualification record built from a results.json, written in
its one form, verified: any byte changed after writing is rejected with a
message that says what; a signature checked by a real gpg in a throwaway
GnuPG home (skipped, saying so, without gpg on PATH)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from gc_testutil import CliRun, Selftests, run_launcher
from gpuconform import __version__
from gpuconform.core.fingerprint import Fingerprint
from gpuconform.qualify import qualify, seal
from gpuconform.qualify.qualify import (RecordError, build_record, content_hash, record_text,
                                        verify_record, write_record)

HOSTILE = '<b id="injected">x</b> & "quotes" \u00e9 \U0001f600'
FP = {"gpu_model": "1x NVIDIA H100 80GB HBM3", "driver": "nvidia 580.159.04",
      "runtime": "cuda 13.0", "kernel": "6.18", "arch": "x86_64",
      "cpu_model": "Intel(R) Xeon(R) Processor", "kernel_release": "6.18.44-test"}
RULES = "data/expectations/nvidia.txt"

# A small contract table, so that the areas do not move with data/contracts.txt.
CONTRACTS = """\
mem/lifecycle        amd     kfd_mem@lifecycle-vram
mem/lifecycle        nvidia  cuda_mem@lifecycle
mem/map-past         amd     none "not written"
mem/map-past         nvidia  cuda_mem@map-past-reservation cuda_mem@peer-access-self
interrupt/storm      amd     kfd_interrupt@storm
interrupt/storm      nvidia  cuda_interrupt@storm
interrupt/storm      host    host_interrupt@pipe-read-eintr
"""


def rec(result: str, reason: str = "", expected: bool | None = True, final: str | None = None,
        rule: str | None = None, judgement: str = "", **more: Any) -> dict[str, Any]:
    return {"result": result, "reason": reason, "expected": expected,
            "final": final or result, "rule": rule, "judgement": judgement,
            "duration": 0.5, "metrics": [], "out": "", "err": "", **more}


def soak_series(name: str, unit: str, slope: float | None, verdict: str) -> dict[str, Any]:
    x = [0, 250, 500, 750, 1000, 1234]
    y = [100.0 + (slope or 0.0) * c for c in x]
    return {"name": name, "unit": unit, "x": x, "y": y, "from": 250, "to": 1234,
            "slope": slope, "growth": None if slope is None else slope * 984,
            "relative": None if slope is None else 0.001,
            "bound": "grows by more than 256 B a cycle and 4096 KiB in all", "verdict": verdict}


def soak() -> dict[str, Any]:
    return {"test": "cuda_context", "subtest": "soak", "dynamic": None, "soak": "create-destroy",
            "cycle": "create and destroy a primary context", "level": "long", "cycles": 1234,
            "seconds": 61.2,
            "series": [soak_series("rss", "KiB", 0.75, "grows"),
                       soak_series("fds", "count", 0.0, "ok"),
                       soak_series("device", "MiB", None, "few-samples"),
                       soak_series("latency", "us", 0.001, "ok")]}


def results() -> dict[str, Any]:
    fail_rule = f"{RULES}:8: fail cuda_mem@map-past-reservation platform=*__nvidia-580.*"
    tests = {
        "cuda_mem@lifecycle": rec("pass", judgement="passed"),
        "cuda_mem@map-past-reservation": rec(
            "fail", "cuMemMap accepted a range past its reservation", rule=fail_rule,
            judgement=f"fail in 2 attempts, as expected (rule {fail_rule})"),
        "cuda_mem@peer-access-self": rec("crash", "killed by SIGSEGV", expected=False,
                                         judgement="crash; no fail or flake rule"),
        "kfd_mem@lifecycle-vram": rec("skip", "/dev/kfd: No such file or directory",
                                      judgement="skipped"),
        "kfd_interrupt@storm": rec("skip", "/dev/kfd: No such file or directory",
                                   judgement="skipped"),
        "cuda_interrupt@storm": rec("fail", "read() returned EINTR after copying 4096 bytes",
                                    expected=False, judgement="fail; no fail or flake rule"),
        "host_interrupt@pipe-read-eintr": rec("pass", judgement="passed"),
        "host_io@direct-read": rec("pass", judgement="passed"),
        "host_io@flaky": rec("pass", final="flake", rule=f"{RULES}:20: flake host_io@flaky",
                             judgement=f"flaky as expected: fail, pass (rule {RULES}:20: "
                                       "flake host_io@flaky)"),
        "cuda_bubbles@traced": rec("pass", expected=False, rule=f"{RULES}:38: fail x",
                                   judgement=f"fixed: passes although expected to fail "
                                             f"(rule {RULES}:38: fail x)"),
        "cuda_context@soak": rec("fail", "rss grows by 0.75 KiB a cycle " + HOSTILE,
                                 expected=False, judgement="fail; no fail or flake rule",
                                 soaks=[soak()]),
        "nvml_session@exclusive-node": rec("notrun", expected=False,
                                           judgement="not run (the run stopped before it)"),
        "cuda_multigpu@oom-spanning": rec("skip", "needs 2 GPUs, found 1", judgement="skipped"),
    }
    return {
        "format": "gpuconform-results", "version": 1,
        "run": {"start": 1795597159.25, "end": 1795597688.75, "run_id": "b89d3a47",
                "hostname": "gpu-host-7", "kernel": "Linux 6.18.44-test x86_64",
                "devices": ["GPU-4d396d29"],
                "level": {"name": "long", "duration_s": 3600.0,
                          "soak_seconds": {"cuda_context@soak": 60.0}}},
        "tests": tests,
        "totals": {"pass": 5, "fail": 3, "skip": 3, "crash": 1, "notrun": 1},
        "fingerprint": FP,
        "outcome": {"status": 1, "unexpected": ["cuda_mem@peer-access-self"], "regressions": 0,
                    "line": "failed: 5 unexpected"},
    }


@pytest.fixture
def contracts(tmp_path: Path) -> Path:
    p = tmp_path / "contracts.txt"
    p.write_text(CONTRACTS)
    return p


def results_dir(where: Path, data: dict[str, Any] | None = None) -> Path:
    d = where / "run"
    d.mkdir(parents=True, exist_ok=True)
    (d / "results.json").write_text(json.dumps(data or results(), indent=1))
    return d


@pytest.fixture
def written(tmp_path: Path, contracts: Path) -> Path:
    """An unsigned record written from results()."""
    d = results_dir(tmp_path)
    write_record(d, build_record(d, contracts), None)
    return d / "qualification.json"


def record_tests(record: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {t["name"]: {**t, "area": a} for a, v in record["areas"].items() for t in v["tests"]}


def reseal(path: Path, change: Callable[[dict[str, Any]], Any]) -> None:
    """Change the record as someone who knows the hash would: hash and form right."""
    data = json.loads(path.read_text())
    change(data)
    data["content_hash"]["value"] = content_hash(data)
    path.write_text(record_text(data))


def rejected(path: Path, match: str, named: Path | None = None) -> str:
    """verify_record(path)'s one-line error, naming path (or named)."""
    with pytest.raises(RecordError) as e:
        verify_record(path)
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith(f"{named or path}:"), msg
    assert match in msg, msg
    return msg


# ---------------------------------------------------------------- building


def test_record_holds_what_the_run_showed(tmp_path: Path, contracts: Path) -> None:
    r = build_record(results_dir(tmp_path), contracts)
    assert (r["format"], r["version"]) == ("gpuconform-qualification", 1)
    assert r["suite"] == {"name": "gpuconform", "version": __version__}
    assert r["level"] == {"name": "long", "duration_s": 3600.0, "ran_s": 529.5}
    assert r["run"] == {"id": "b89d3a47", "results": "run", "start": "2026-11-25T08:59:19Z",
                        "end": "2026-11-25T09:08:08Z"}
    assert r["machine"] == {"fingerprint": Fingerprint.from_json(FP).to_json(),
                            "key": Fingerprint.from_json(FP).key(),
                            "hostname": "gpu-host-7", "kernel": "Linux 6.18.44-test x86_64",
                            "devices": ["GPU-4d396d29"]}
    assert r["versions"] == {"driver": "nvidia 580.159.04", "runtime": "cuda 13.0",
                             "kernel_release": "6.18.44-test"}
    counts = {a: v["counts"] for a, v in r["areas"].items()}
    zero = dict.fromkeys(qualify.VERDICTS, 0)
    assert counts == {
        "mem": {**zero, "pass": 1, "fail": 1, "skip": 1, "expected-failure": 1},
        "interrupt": {**zero, "pass": 1, "fail": 1, "skip": 1},
        "host": {**zero, "pass": 1, "expected-failure": 1},
        "other": {**zero, "fail": 1, "skip": 1, "other-unexpected": 2},
    }
    t = record_tests(r)
    assert t["cuda_mem@lifecycle"] == {"name": "cuda_mem@lifecycle", "state": "pass",
                                       "verdict": "pass", "reason": "", "rule": None,
                                       "area": "mem"}
    xf = t["cuda_mem@map-past-reservation"]
    assert (xf["verdict"], xf["state"]) == ("expected-failure", "fail")
    assert xf["rule"] == f"{RULES}:8: fail cuda_mem@map-past-reservation platform=*__nvidia-580.*"
    assert xf["reason"] == "cuMemMap accepted a range past its reservation"
    assert (t["cuda_mem@peer-access-self"]["verdict"],
            t["cuda_mem@peer-access-self"]["state"]) == ("fail", "crash")
    assert t["kfd_mem@lifecycle-vram"]["reason"] == "/dev/kfd: No such file or directory"
    assert t["host_interrupt@pipe-read-eintr"]["area"] == "interrupt"  # its row's, not "host"
    flake = t["host_io@flaky"]
    assert (flake["state"], flake["verdict"], flake["area"]) == ("flake", "expected-failure",
                                                                 "host")
    assert flake["reason"].startswith("flaky as expected") and flake["rule"]
    assert t["cuda_bubbles@traced"]["verdict"] == "other-unexpected"
    assert t["cuda_bubbles@traced"]["reason"].startswith("fixed: passes although")
    assert t["nvml_session@exclusive-node"]["verdict"] == "other-unexpected"
    assert t["cuda_context@soak"]["reason"].endswith(HOSTILE)
    # the soak, with every series' numbers and points
    [s] = r["soaks"]
    assert {k: s[k] for k in ("test", "soak", "cycle", "level", "cycles", "seconds")} == {
        "test": "cuda_context@soak", "soak": "create-destroy",
        "cycle": "create and destroy a primary context", "level": "long", "cycles": 1234,
        "seconds": 61.2}
    assert [x["name"] for x in s["series"]] == ["rss", "fds", "device", "latency"]
    assert s["series"][0] == soak_series("rss", "KiB", 0.75, "grows")
    assert s["series"][2]["slope"] is None
    # a soak line from before soaks said how they ended
    assert (s["stopped"], s["cycles_asked"], s["budget_s"]) == (None, None, None)
    assert r["totals"] == results()["totals"] and r["outcome"] == results()["outcome"]
    assert r["signing"] is None
    assert r["content_hash"] == {"algorithm": "sha256", "value": content_hash(r)}


def test_the_real_contract_table_gives_the_areas(tmp_path: Path) -> None:
    r = build_record(results_dir(tmp_path))
    t = record_tests(r)
    assert t["cuda_mem@lifecycle"]["area"] == "mem"
    assert t["host_io@direct-read"]["area"] in ("host", "fastpath")


def test_the_hash_covers_everything_but_itself(tmp_path: Path, contracts: Path) -> None:
    r = build_record(results_dir(tmp_path), contracts)
    body = {k: v for k, v in r.items() if k != "content_hash"}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    import hashlib
    assert r["content_hash"]["value"] == hashlib.sha256(text.encode()).hexdigest()
    other = json.loads(json.dumps(r))
    other["machine"]["hostname"] = "gpu-host-8"
    assert content_hash(other) != content_hash(r)


@pytest.mark.parametrize("change, match", [
    (lambda d: d.pop("fingerprint"), "no machine fingerprint"),
    (lambda d: d["tests"]["cuda_context@soak"]["soaks"][0]["series"][1].update(y=[1, 2]),
     "soaks[0].series[1].y: has 2 values, x has 6"),
    (lambda d: d["tests"]["cuda_context@soak"]["soaks"][0]["series"][0]["y"].__setitem__(
        1, True), "series[0].y[1]: is boolean, not a finite number or null"),
    (lambda d: d["tests"]["cuda_context@soak"]["soaks"][0]["series"][0]["x"].__setitem__(
        2, "NaN"), "series[0].x[2]: is string, not a finite number"),
    (lambda d: d["tests"]["cuda_context@soak"]["soaks"][0].update(seconds=float("nan")),
     "soaks[0].seconds: is number NaN, not a finite number or null"),
    (lambda d: d["tests"]["cuda_context@soak"]["soaks"][0].pop("series"),
     "soaks[0]: missing field 'series'"),
    (lambda d: d["tests"]["cuda_context@soak"].update(soaks={}), "soaks: is object, not an array"),
    (lambda d: d.update(tests=[]), "tests: is array, not object"),
])
def test_unusable_results_are_one_line(tmp_path: Path, contracts: Path,
                                       change: Callable[[dict[str, Any]], Any],
                                       match: str) -> None:
    data = results()
    change(data)
    d = results_dir(tmp_path, data)
    with pytest.raises(RecordError) as e:
        build_record(d, contracts)
    assert str(e.value).startswith(str(d / "results.json")) and "\n" not in str(e.value)
    assert match in str(e.value)


def test_a_sample_not_taken_is_kept_as_null(tmp_path: Path, contracts: Path) -> None:
    data = results()
    data["tests"]["cuda_context@soak"]["soaks"][0]["series"][2]["y"][3] = None
    d = results_dir(tmp_path, data)
    r = build_record(d, contracts)
    assert r["soaks"][0]["series"][2]["y"][3] is None
    write_record(d, r, None)
    verify_record(d / "qualification.json")
    assert (d / "qualification.html").read_text().count('<svg class="plot soakplot') == 4


def test_a_soak_its_budget_cut_short_is_recorded(tmp_path: Path, contracts: Path) -> None:
    data = results()
    data["tests"]["cuda_context@soak"]["soaks"][0].update(
        level="standard", stopped="budget", cycles_asked=256000, budget_s=20)
    d = results_dir(tmp_path, data)
    r = build_record(d, contracts)
    assert {k: r["soaks"][0][k] for k in ("stopped", "cycles_asked", "budget_s")} == {
        "stopped": "budget", "cycles_asked": 256000, "budget_s": 20}
    write_record(d, r, None)
    verify_record(d / "qualification.json")
    page = (d / "qualification.html").read_text()
    assert "stopped by its 20 s budget after 1234 of 256000 cycles" in page


def test_missing_results_are_one_line(tmp_path: Path) -> None:
    with pytest.raises(RecordError, match=r"results\.json: cannot read results: No such file"):
        build_record(tmp_path)


def test_a_run_without_a_level(tmp_path: Path, contracts: Path) -> None:
    data = results()
    del data["run"]["level"], data["run"]["end"]
    r = build_record(results_dir(tmp_path, data), contracts)
    assert r["level"] == {"name": None, "duration_s": None, "ran_s": None}


# ------------------------------------------------------- writing, verifying


def test_written_in_one_form_and_verified(tmp_path: Path, contracts: Path) -> None:
    d = results_dir(tmp_path)
    r = build_record(d, contracts)
    before = json.dumps(r, sort_keys=True)
    paths = write_record(d, r, None)
    assert paths == [d / "qualification.json", d / "qualification.html"]
    assert json.dumps(r, sort_keys=True) == before  # the caller's record is left alone
    text = paths[0].read_text()
    assert text == record_text(json.loads(text)) and text.isascii() and text.endswith("}\n")
    assert "\\u00e9" in text  # ASCII: non-ASCII escaped
    ok = verify_record(paths[0])
    assert ok == (f"{paths[0]}: ok: gpuconform qualification record, level long, machine "
                  f"{Fingerprint.from_json(FP).key()}, sha256 {r['content_hash']['value']}, "
                  "unsigned")
    assert not [p for p in d.iterdir() if p.name.startswith(".")]  # no temporary left


def nth(text: str, needle: str, n: int = 0) -> int:
    """The offset of the n-th occurrence of needle."""
    i = -1
    for _ in range(n + 1):
        i = text.index(needle, i + 1)
    return i


def replace_byte(path: Path, offset: int, new: bytes) -> None:
    raw = bytearray(path.read_bytes())
    assert raw[offset:offset + 1] != new
    raw[offset:offset + 1] = new
    path.write_bytes(bytes(raw))


@pytest.mark.parametrize("where, new, match", [
    # a digit in a value: the soak's cycles, 1234 -> 1235
    (lambda t: nth(t, '"cycles": 1234') + len('"cycles": 123'), b"5",
     "content hash does not match"),
    # a digit of a sample
    (lambda t: nth(t, "100.0") + 2, b"1", "content hash does not match"),
    # a letter of a test's name
    (lambda t: nth(t, "cuda_mem@lifecycle"), b"k", "content hash does not match"),
    # a letter of a key's name
    (lambda t: nth(t, '"hostname"') + 1, b"H", "content hash does not match"),
    # a hex digit of the stored hash itself
    (lambda t: nth(t, '"value": "') + len('"value": "'), None, "content hash does not match"),
    # a space of the indentation, made a tab: the same JSON, not the written form
    (lambda t: nth(t, '\n  "') + 1, b"\t", "not in the form gpuconform writes: changed after it "
     "was written (line"),
    # the last newline, made a space
    (lambda t: len(t) - 1, b" ", "not in the form gpuconform writes"),
    # a comma made a space: no longer JSON
    (lambda t: nth(t, ",\n"), b" ", "not JSON: Expecting ',' delimiter (column"),
    # a byte that is not UTF-8
    (lambda t: nth(t, "gpu-host-7"), b"\xff", "not JSON: byte"),
    # the format's name
    (lambda t: nth(t, "gpuconform-qualification"), b"G", "not a gpuconform qualification record"),
    # the record's version
    (lambda t: nth(t, '"version": 1') + len('"version": '), b"2",
     "qualification record version 2: this gpuconform reads version 1"),
    # the suite's version
    (lambda t: nth(t, f'"version": "{__version__}"') + len('"version": "'), b"9",
     "written by gpuconform 9"),
])
def test_one_byte_changed_is_rejected(written: Path, where: Callable[[str], int],
                                      new: bytes | None, match: str) -> None:
    text = written.read_text()
    offset = where(text)
    if new is None:
        new = b"0" if text[offset] != "0" else b"1"
    replace_byte(written, offset, new)
    rejected(written, match)


def test_every_byte_changed_is_rejected(tmp_path: Path, contracts: Path) -> None:
    data = results()
    data["tests"] = {k: v for k, v in data["tests"].items()
                     if k in ("cuda_mem@lifecycle", "cuda_mem@map-past-reservation",
                              "kfd_mem@lifecycle-vram", "cuda_context@soak")}
    d = results_dir(tmp_path, data)
    write_record(d, build_record(d, contracts), None)
    path = d / "qualification.json"
    good = path.read_bytes()
    verify_record(path)
    for i, b in enumerate(good):
        ch = chr(b)
        new = ("1" if ch == "0" else "0") if ch.isdigit() else \
            ch.swapcase() if ch.isalpha() else "\t" if ch == " " else "x"
        path.write_bytes(good[:i] + new.encode() + good[i + 1:])
        with pytest.raises(RecordError) as e:
            verify_record(path)
        assert "\n" not in str(e.value), (i, str(e.value))
    assert len(good) > 2000


def test_another_suite_version_is_rejected(written: Path) -> None:
    reseal(written, lambda d: d["suite"].update(version="0.0.9"))
    rejected(written, f"{written}: written by gpuconform 0.0.9, this is {__version__}: verify it "
                      "with that version")


@pytest.mark.parametrize("text, match", [
    ('{"format": "gpuconform-results", "tests": {}}', 'not a gpuconform qualification record '
                                                      '(format "gpuconform-results")'),
    ("[1, 2]", "not a gpuconform qualification record"),
    ('{"format": "gpuconform-qualification",\n "version": 1,\n  x}',
     ":3: not JSON: Expecting property name enclosed in double quotes (column 3)"),
    ('{"format": "gpuconform-qualification", "version": 1e400}',
     "not JSON: number 1e400 is out of range"),
    ("", "not JSON"),
    ("[" * 100000 + "]" * 100000, "not JSON: maximum recursion depth"),
    ('{"a": NaN}', "not JSON: NaN is not a JSON value"),
    ('{"format": "gpuconform-qualification", "version": 1}', "no suite version"),
])
def test_not_a_record(tmp_path: Path, text: str, match: str) -> None:
    p = tmp_path / "q.json"
    p.write_text(text)
    rejected(p, match)


def test_hash_missing_or_of_another_kind(written: Path) -> None:
    data = json.loads(written.read_text())
    del data["content_hash"]
    written.write_text(record_text(data))
    rejected(written, "no content hash")
    data["content_hash"] = {"algorithm": "md5", "value": "0"}
    written.write_text(record_text(data))
    rejected(written, 'content hash algorithm "md5": this gpuconform checks sha256')


def test_a_hash_made_right_over_no_record(written: Path) -> None:
    reseal(written, lambda d: d.pop("machine"))
    rejected(written, "not a record gpuconform writes: no 'machine'")
    reseal(written, lambda d: d.update(machine=[], soaks={}))
    rejected(written, "not a record gpuconform writes: 'machine' is array")


def test_unreadable_record(tmp_path: Path) -> None:
    rejected(tmp_path / "nothing.json", "cannot read: No such file or directory")
    rejected(tmp_path, "cannot read: Is a directory")


def test_a_record_that_says_it_was_signed_needs_its_signature(written: Path) -> None:
    reseal(written, lambda d: d.update(signing={"key": "ABCD", "signature": "x.asc"}))
    rejected(written, 'signed with key ABCD (its "signing" says so) but qualification.json.asc '
                      "is missing beside it")


def test_a_signature_without_gpg(written: Path, tmp_path: Path,
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "empty").mkdir()
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    asc = written.with_name("qualification.json.asc")
    asc.write_text("-----BEGIN PGP SIGNATURE-----\n")
    with pytest.raises(RecordError) as e:
        verify_record(written)
    assert str(e.value) == (f"{asc}: cannot check the signature: gpg is not on PATH "
                            "(apt-get install gnupg)")
    before = sorted((p.name, p.read_bytes()) for p in written.parent.iterdir())
    with pytest.raises(RecordError, match=r"cannot sign .*qualification\.json with key K: gpg "
                                          r"is not on PATH"):
        write_record(written.parent, json.loads(written.read_text()), "K")
    assert sorted((p.name, p.read_bytes()) for p in written.parent.iterdir()) == before


def test_a_gpg_that_never_answers(written: Path, tmp_path: Path,
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A gpg that hangs (a pinentry nobody answers) is one line naming the wait."""
    (tmp_path / "bin").mkdir()
    gpg = tmp_path / "bin" / "gpg"
    gpg.write_text(f"#!/bin/sh\nexec {shutil.which('sleep')} 600\n")
    gpg.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    monkeypatch.setattr(seal, "GPG_TIMEOUT_S", 0.5)
    asc = written.with_name("qualification.json.asc")
    asc.write_text("-----BEGIN PGP SIGNATURE-----\n")
    with pytest.raises(RecordError) as e:
        verify_record(written)
    assert str(e.value) == f"{asc}: gpg did not finish checking the signature in 0.5 s"
    asc.unlink()
    with pytest.raises(RecordError, match=r"cannot sign .*qualification\.json with key K: gpg "
                                          r"did not finish in 0\.5 s \(waiting for a passphrase"):
        write_record(written.parent, json.loads(written.read_text()), "K")


def test_unwritable_directory(tmp_path: Path, contracts: Path) -> None:
    r = build_record(results_dir(tmp_path), contracts)
    with pytest.raises(RecordError, match=r"qualification\.json: cannot write: No such file"):
        write_record(tmp_path / "gone", r, None)


# --------------------------------------------------------------------- page


def test_page_shows_the_record(written: Path) -> None:
    page = written.with_name("qualification.html").read_text()
    record = json.loads(written.read_text())
    assert "<script" not in page and "default-src 'none'" in page
    assert "https:" not in page and "http:" not in page
    assert '<b id="injected">' not in page and "&lt;b id=&quot;injected&quot;&gt;" in page
    assert record["content_hash"]["value"] in page and "unsigned" in page
    assert record["machine"]["key"] in page and "nvidia 580.159.04" in page
    assert "8 min 50 s" in page and "1 h 00 min" in page  # ran for, duration asked
    areas = page[page.index('id="areas-table"'):page.index("</table>", page.index("areas-table"))]
    assert [a for a in ("host", "interrupt", "mem", "other") if f"<td>{a}</td>" in areas] == \
        ["host", "interrupt", "mem", "other"]
    expected = page[page.index('id="expected-table"'):]
    assert f"{RULES}:8: fail cuda_mem@map-past-reservation" in expected.split("</table>")[0]
    # the skips grouped by reason, the reason of most tests first
    skips = page[page.index('id="skips-table"'):].split("</table>")[0]
    assert skips.index("/dev/kfd: No such file or directory") < skips.index("needs 2 GPUs")
    assert "<b>2</b>: kfd_interrupt@storm, kfd_mem@lifecycle-vram" in skips
    soaks = page[page.index('id="soaks-table"'):].split("</table>")[0]
    assert soaks.count('<svg class="plot soakplot') == 4
    assert soaks.count('<svg class="plot soakplot grows"') == 1
    assert "0.75 KiB/cycle" in soaks and "GROWS" in soaks
    failures = page[page.index('id="failures-table"'):].split("</table>")[0]
    assert "cuda_interrupt@storm" in failures and "killed by SIGSEGV" in failures


# ---------------------------------------------------------------------- gpg

GPG = shutil.which("gpg")
needs_gpg = pytest.mark.skipif(GPG is None, reason="gpg is not on PATH (apt-get install gnupg): "
                                                   "the signature tests need it")
UID = "gpuconform test <t@example.invalid>"


def gnupg_home() -> str:
    # short: gpg-agent's socket path must fit in sun_path (108 bytes)
    home = tempfile.mkdtemp(prefix="gq", dir="/tmp")
    os.chmod(home, 0o700)
    return home


def kill_agent(home: str) -> None:
    subprocess.run(["gpgconf", "--kill", "gpg-agent"], env={**os.environ, "GNUPGHOME": home},
                   capture_output=True, timeout=30)
    shutil.rmtree(home, ignore_errors=True)


@pytest.fixture(scope="module")
def keyring() -> Iterator[tuple[str, str]]:
    """(GNUPGHOME, fingerprint) of a throwaway keyring with one ed25519 key."""
    if GPG is None:
        pytest.skip("gpg is not on PATH")
    home = gnupg_home()
    env = {**os.environ, "GNUPGHOME": home}
    try:
        subprocess.run([GPG, "--batch", "--passphrase", "", "--quick-gen-key", UID, "ed25519",
                        "sign", "never"], env=env, check=True, capture_output=True, timeout=60)
        out = subprocess.run([GPG, "--batch", "--with-colons", "--list-secret-keys"], env=env,
                             check=True, capture_output=True, text=True, timeout=30).stdout
        fpr = next(line.split(":")[9] for line in out.splitlines() if line.startswith("fpr:"))
        yield home, fpr
    finally:
        kill_agent(home)


@pytest.fixture
def signed(keyring: tuple[str, str], tmp_path: Path, contracts: Path,
           monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("GNUPGHOME", keyring[0])
    d = results_dir(tmp_path)
    paths = write_record(d, build_record(d, contracts), keyring[1])
    assert paths == [d / "qualification.json", d / "qualification.html",
                     d / "qualification.json.asc"]
    return paths[0]


@needs_gpg
def test_signed_record_verifies(signed: Path, keyring: tuple[str, str]) -> None:
    assert "BEGIN PGP SIGNATURE" in signed.with_name("qualification.json.asc").read_text()
    data = json.loads(signed.read_text())
    assert data["signing"] == {"key": keyring[1], "signature": "qualification.json.asc"}
    assert verify_record(signed).endswith(f", signed by {UID} (key {keyring[1]})")
    assert f"signed with key {keyring[1]}" in signed.with_name("qualification.html").read_text()


@needs_gpg
def test_tampered_signed_record_is_a_bad_signature(signed: Path) -> None:
    # hash and form made right again: only the signature can tell
    reseal(signed, lambda d: d["machine"].update(hostname="another-host"))
    msg = rejected(signed, "signature not accepted: BADSIG",
                   signed.with_name("qualification.json.asc"))
    assert "the record or the signature was changed after signing" in msg


@needs_gpg
def test_signature_by_a_key_not_in_the_keyring(signed: Path, keyring: tuple[str, str],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    other = gnupg_home()
    try:
        monkeypatch.setenv("GNUPGHOME", other)
        msg = rejected(signed, "NO_PUBKEY ", signed.with_name("qualification.json.asc"))
        assert keyring[1][-16:] in msg and "not in this keyring" in msg
    finally:
        kill_agent(other)


@needs_gpg
def test_signing_with_an_unknown_key_writes_nothing(signed: Path) -> None:
    d = signed.parent
    before = sorted((p.name, p.read_bytes()) for p in d.iterdir())
    with pytest.raises(RecordError) as e:
        write_record(d, json.loads(signed.read_text()), "nobody@example.invalid")
    assert str(e.value) == (f"cannot sign {signed} with key nobody@example.invalid: gpg: "
                            "signing failed: No secret key")
    assert sorted((p.name, p.read_bytes()) for p in d.iterdir()) == before
    verify_record(signed)


@needs_gpg
def test_rewritten_unsigned_drops_the_old_signature(signed: Path) -> None:
    write_record(signed.parent, json.loads(signed.read_text()), None)
    assert not signed.with_name("qualification.json.asc").exists()
    assert verify_record(signed).endswith(", unsigned")


@needs_gpg
def test_not_a_signature(signed: Path) -> None:
    signed.with_name("qualification.json.asc").write_text("hello\n")
    rejected(signed, "signature not accepted: NODATA", signed.with_name("qualification.json.asc"))


# -------------------------------------------------------------- the command
#
# `gpuconform qualify` end to end over the real selftest binaries: what can be
# checked before the run (the level, the results directory, the signing key)
# is, and nothing is run or written when it fails; the hash it prints is the
# written record's, the one `gpuconform verify` checks.

QUICK = ["--selftest", "--level", "quick", "--kmsg", "off", "--include", "selftest_results@pass"]


def gpuconform(argv: list[str], env: dict[str, str] | None = None) -> CliRun:
    return run_launcher(argv, env if env is not None else dict(os.environ), None)


def no_gpg_path(where: Path) -> str:
    """A PATH of everything /usr/bin has but gpg (and its tools)."""
    where.mkdir()
    for entry in os.listdir("/usr/bin"):
        if not entry.startswith("gpg"):
            (where / entry).symlink_to(Path("/usr/bin") / entry)
    return str(where)


def one_error_line(r: CliRun, line: str) -> None:
    assert (r.returncode, r.stdout, r.stderr) == (2, "", line + "\n")


@needs_gpg
def test_qualify_with_a_key_gpg_lacks_runs_nothing(selftests: Selftests, tmp_path: Path,
                                                  keyring: tuple[str, str]) -> None:
    out = tmp_path / "r"
    r = gpuconform(["qualify", "--build", str(selftests.build), *QUICK, "--results", str(out),
                    "--sign", "nobody@example.invalid"], {**os.environ, "GNUPGHOME": keyring[0]})
    one_error_line(r, "gpuconform: qualify --sign: cannot sign with key nobody@example.invalid: "
                      "gpg: signing failed: No secret key; nothing was run")
    assert not out.exists()


@pytest.mark.parametrize("key, no_gpg, why", [
    ("K", True, "gpg is not on PATH (apt-get install gnupg)"),
    ("", False, "an empty key id names no key"),
], ids=["without-gpg", "empty-key"])
def test_qualify_with_a_key_it_cannot_use_runs_nothing(selftests: Selftests, tmp_path: Path,
                                                       key: str, no_gpg: bool, why: str) -> None:
    out = tmp_path / "r"
    env = {**os.environ, "PATH": no_gpg_path(tmp_path / "bin")} if no_gpg else None
    r = gpuconform(["qualify", "--build", str(selftests.build), *QUICK, "--results", str(out),
                    "--sign", key], env)
    one_error_line(r, f"gpuconform: qualify --sign: cannot sign with key {key}: {why}; "
                      "nothing was run")
    assert not out.exists()


@needs_gpg
def test_qualify_prints_the_hash_verify_checks(selftests: Selftests, tmp_path: Path,
                                               keyring: tuple[str, str]) -> None:
    out = tmp_path / "r"
    env = {**os.environ, "GNUPGHOME": keyring[0]}
    r = gpuconform(["qualify", "--build", str(selftests.build), *QUICK, "--results", str(out),
                    "--sign", keyring[1]], env)
    assert r.returncode == 0, r.stderr
    record = out / "qualification.json"
    printed = re.search(rf"^gpuconform: qualification record: {re.escape(str(record))} "
                        r"\(sha256 ([0-9a-f]+)\), signed by (.*)$", r.stdout, re.M)
    assert printed, r.stdout
    stored = json.loads(record.read_text())["content_hash"]["value"]
    assert printed[1] == stored == content_hash(json.loads(record.read_text()))
    assert printed[2] == f"{UID} (key {keyring[1]})"
    v = gpuconform(["verify", str(record)], env)
    assert v.returncode == 0 and f", sha256 {printed[1]}, signed by {printed[2]}\n" in v.stdout


def test_qualify_unsigned_prints_the_records_hash(selftests: Selftests, tmp_path: Path) -> None:
    out = tmp_path / "r"
    r = gpuconform(["qualify", "--build", str(selftests.build), *QUICK, "--results", str(out)])
    assert r.returncode == 0, r.stderr
    stored = json.loads((out / "qualification.json").read_text())["content_hash"]["value"]
    assert f" (sha256 {stored}), unsigned\n" in r.stdout


@pytest.mark.parametrize("argv, line", [
    ([], "gpuconform: qualify: --level quick|standard|long is required"),
    (["--level", "quick", "--duration", "1h"],
     "gpuconform: --duration: only --level long has a length (quick and standard run fixed "
     "counts)"),
])
def test_qualify_level_checked_before_the_run(selftests: Selftests, tmp_path: Path,
                                              argv: list[str], line: str) -> None:
    out = tmp_path / "r"
    r = gpuconform(["qualify", "--build", str(selftests.build), "--selftest", *argv,
                    "--results", str(out), "--sign", "nobody@example.invalid"])
    one_error_line(r, line)
    assert not out.exists()


def test_qualify_results_directory_checked_as_run_checks_it(selftests: Selftests,
                                                            tmp_path: Path) -> None:
    out = tmp_path / "r"
    first = gpuconform(["run", "--build", str(selftests.build), *QUICK, "--results", str(out)])
    assert first.returncode == 0, first.stderr
    before = sorted((p.name, p.read_bytes()) for p in out.iterdir())
    run = gpuconform(["run", "--build", str(selftests.build), *QUICK, "--results", str(out)])
    qual = gpuconform(["qualify", "--build", str(selftests.build), *QUICK, "--results", str(out),
                       "--sign", "nobody@example.invalid"])
    one_error_line(run, f"gpuconform: {out} already holds a run (journal.jsonl): give another "
                        f"--results, or continue it with: gpuconform resume {out}")
    one_error_line(qual, run.stderr.rstrip("\n"))
    assert sorted((p.name, p.read_bytes()) for p in out.iterdir()) == before


def test_qualify_of_a_run_that_could_not_start_writes_no_record(selftests: Selftests,
                                                                tmp_path: Path) -> None:
    out = tmp_path / "r"
    r = gpuconform(["qualify", "--build", str(selftests.build), *QUICK, "--results", str(out),
                    "-k", "pass and ("])
    assert r.returncode == 2 and "Traceback" not in r.stdout + r.stderr
    assert "qualification record" not in r.stdout
    assert not (out / "qualification.json").exists()
