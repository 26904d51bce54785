"""A run's results.json in piglit's TestrunResult JSON, the format IGT's
igt_runner and igt_results write and `piglit summary` reads.

    export_piglit(RESULTS) -> RESULTS/piglit/results.json

results.json stays the one source of truth: this is a view of it, made on
demand (any run, resumed, merged, old), never a second record a run keeps.

Format facts (IGT's runner/resultgen.c; Debian's piglit 0~git20220119,
framework/results.py and backends/json.py): results_version 10; a test
per subtest named igt@BINARY@SUBTEST and one per dynamic subtest,
igt@BINARY@SUBTEST@DYNAMIC, all lowercase; each with out, err, dmesg (strings),
result (one of IGT's words) and time, a TimeAttribute from 0.0 to the
runtime; totals "" and "root" (the whole run) and per binary igt@BINARY,
every word counted, subtests and dynamic subtests alike; runtimes per binary.

Ours to theirs: every state is an IGT word but "error" (the runner could not
run it as asked), written as "fail" with a first line of err saying so. A
test's reason, when it has one, is the first line of its err. "abort" stays
"abort", as IGT writes it, although that piglit does not know the word.
Expectations, metrics, baselines and GPU placements stay in results.json.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator, Mapping

from ..core.atomic import atomic_write
from ..core.jsondoc import Doc
from ..core.runmetrics import read_results
from ..core.states import State

__all__ = ["ExportError", "IGT_RESULTS", "RESULTS_VERSION", "export_piglit", "out_path",
           "piglit_name", "piglit_result", "testrun"]

RESULTS_VERSION = 10
# Every result word IGT's totals count (resultgen.c's get_totals_object).
IGT_RESULTS = ("crash", "pass", "dmesg-fail", "dmesg-warn", "skip", "incomplete", "abort",
               "timeout", "notrun", "fail", "warn")
_STATES = frozenset(s.value for s in State)


class ExportError(Exception):
    """A results file that cannot be exported, or an output that cannot be
    written; str() is one line."""


def piglit_name(*parts: str) -> str:
    """igt@BINARY[@SUBTEST[@DYNAMIC]], lowercase as IGT names its tests."""
    return "@".join(("igt",) + parts).lower()


def piglit_result(state: str) -> str:
    """Our state as IGT's word: itself, but "error", which IGT has not."""
    return "fail" if state == State.ERROR.value else state


def _time(seconds: float) -> dict[str, Any]:
    return {"__type__": "TimeAttribute", "start": 0.0, "end": seconds}


def _why(state: str, reason: str) -> str:
    """The line err begins with: what gpuconform recorded, and why."""
    if state == State.ERROR.value:
        return (f"gpuconform recorded error (the runner could not run it as asked; IGT has no "
                f"such result, so it is written as fail): {reason or '(no reason given)'}")
    return f"gpuconform recorded {state}: {reason}" if reason else ""


def _entry(state: str, reason: str, seconds: float, out: str = "", err: str = "",
           dmesg: str = "") -> dict[str, Any]:
    why = _why(state, reason)
    return {"out": out, "err": f"{why}\n{err}" if why else err, "dmesg": dmesg,
            "result": piglit_result(state), "time": _time(seconds)}


def _checked_state(doc: Doc, obj: Mapping[str, Any], path: list[str | int]) -> str:
    v = obj.get("result")
    if v not in _STATES:
        raise doc.error(path + ["result"], f"{json.dumps(v)[:40]} is not a gpuconform state "
                        f"({', '.join(sorted(_STATES))})")
    return str(v)


def _text(doc: Doc, obj: Mapping[str, Any], path: list[str | int], key: str) -> str:
    """obj[key] as a string: a string, absent or null, or (dmesg) lines."""
    v = obj.get(key)
    if v is None:
        return ""
    if isinstance(v, list) and all(isinstance(x, str) for x in v):
        return "\n".join(v)
    if not isinstance(v, str):
        raise doc.error(path + [key], "is neither a string nor an array of strings")
    return v


def _seconds(doc: Doc, v: Any, path: list[str | int]) -> float:
    if v is None:
        return 0.0
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v < float("inf"):
        raise doc.error(path, f"{json.dumps(v)[:40]} is not a number of seconds")
    return float(v)


def _tests(doc: Doc) -> Iterator[tuple[str, str, dict[str, Any], bool]]:
    """(piglit name, binary, entry, whether dynamic) of each subtest, then of
    its dynamic subtests, in results.json's order."""
    for key, rec in doc.data["tests"].items():
        path: list[str | int] = ["tests", key]
        binary, _, subtest = key.partition("@")
        state = _checked_state(doc, rec, path)
        seconds = _seconds(doc, rec.get("duration"), path + ["duration"])
        yield (piglit_name(binary, subtest) if subtest else piglit_name(binary), binary,
               _entry(state, str(rec.get("reason") or ""), seconds,
                      _text(doc, rec, path, "out"), _text(doc, rec, path, "err"),
                      _text(doc, rec, path, "dmesg")), False)
        for dyn, d in (rec.get("dynamic") or {}).items():
            dpath = path + ["dynamic", dyn]
            if not isinstance(d, dict):
                raise doc.error(dpath, "is not an object")
            yield (piglit_name(binary, subtest, dyn), binary,
                   _entry(_checked_state(doc, d, dpath), _text(doc, d, dpath, "reason"),
                          _seconds(doc, d.get("time"), dpath + ["time"])), True)


def _run_facts(run: Mapping[str, Any], key: str) -> list[str]:
    """run[key], or, for a merge, each merged run's, where a non-empty string."""
    runs = [run] + [m.get("run") or {} for m in run.get("merged_from") or []
                    if isinstance(m, dict)]
    return [r[key] for r in runs if isinstance(r, dict) and isinstance(r.get(key), str)
            and r[key]]


def testrun(doc: Doc, name: str) -> dict[str, Any]:
    """A checked results.json (runmetrics.read_results) as piglit's
    TestrunResult, named name."""
    run = doc.data.get("run") or {}
    out: dict[str, Any] = {"__type__": "TestrunResult", "results_version": RESULTS_VERSION,
                           "name": name}
    kernels = set(_run_facts(run, "kernel"))
    if len(kernels) == 1:
        out["uname"] = kernels.pop()
    out["time_elapsed"] = {"__type__": "TimeAttribute",
                           "start": float(run.get("start") or 0.0),
                           "end": float(run.get("end") or 0.0)}
    tests: dict[str, Any] = {}
    totals: dict[str, dict[str, int]] = {k: dict.fromkeys(IGT_RESULTS, 0) for k in ("", "root")}
    runtimes: dict[str, float] = {}
    for pname, binary, entry, dynamic in _tests(doc):
        if pname in tests:
            raise doc.error(["tests"], f"two tests have the piglit name {pname} (IGT's names "
                            "are lowercase)")
        tests[pname] = entry
        for k in ("", "root", piglit_name(binary)):
            totals.setdefault(k, dict.fromkeys(IGT_RESULTS, 0))[entry["result"]] += 1
        if not dynamic:  # a dynamic subtest's time is part of its parent's
            b = piglit_name(binary)
            runtimes[b] = runtimes.get(b, 0.0) + entry["time"]["end"]
    aborted = _run_facts(run, "aborted")
    if aborted:  # as igt_runner says that a run stopped early
        tests["igt@runner@aborted"] = _entry("fail", "", 0.0, out="\n".join(aborted) + "\n")
        for k in ("", "root", "igt@runner"):
            totals.setdefault(k, dict.fromkeys(IGT_RESULTS, 0))["fail"] += 1
    out["tests"] = tests
    out["totals"] = totals
    out["runtimes"] = {b: {"time": _time(t)} for b, t in runtimes.items()}
    return out


def out_path(source: Path, out: Path | None) -> Path:
    """Where the export of source (a results.json) goes: out, checked, or
    by default a directory of its own beside it (piglit given a directory
    reads the first file there whose name begins with "result": ours)."""
    if out is None:
        return source.parent / "piglit" / "results.json"
    if out.suffix != ".json":
        raise ExportError(f"{out}: piglit picks its reader by the file's extension: give a "
                          "name ending in .json")
    if out.is_dir():
        raise ExportError(f"{out}: is a directory (give the file to write, e.g. "
                          f"{out / 'results.json'})")
    if not out.parent.is_dir():
        raise ExportError(f"{out}: cannot write: {out.parent} is not a directory")
    if out.exists() and out.resolve() == source.resolve():
        raise ExportError(f"{out}: is the run's own results.json: give another file")
    return out


def export_piglit(results: Path, out: Path | None = None) -> tuple[Path, dict[str, Any]]:
    """Write results (a results directory or its results.json) as piglit's
    TestrunResult to out_path(); returns the path and what was written."""
    source = results / "results.json" if results.is_dir() else results
    target = out_path(source, out)
    doc = read_results(source)
    name = source.parent.resolve().name or str((doc.data.get("run") or {}).get("run_id") or "")
    data = testrun(doc, name or "gpuconform")
    try:
        if out is None:
            target.parent.mkdir(exist_ok=True)
        atomic_write(target, json.dumps(data, indent=1) + "\n")
    except OSError as e:
        raise ExportError(f"{target}: cannot write: {e.strerror or e}") from None
    return target, data
