"""Which run a results.json is, and whether it is clean: what `baseline
update` may make a baseline of.

A run is known by its run id (results.json's run.run_id, kept by `resume`):
not by its path, since one run may be given by two paths (a directory and
its results.json, a symlink, a copy) and one path may hold another run
later. A merge (merge.py) is the runs it merged: their ids, sorted, joined
by "+".

A clean run: every test ended as expected (passed, skipped, or failed as an
expectation rule says), no collection error, not aborted, and, for a merge,
complete (no gap, missing shard, conflict or problem). A regression against
the baseline of the day does not make a run unclean: the measurement stands,
and a baseline rebuilt after a deliberate change is made of such runs.
"""

from __future__ import annotations

from typing import Any, Mapping

from ..core.fmt import one_line
from ..core.states import FAILURE_STATES

__all__ = ["run_id", "unclean"]

_FAILURES = frozenset(s.value for s in FAILURE_STATES)


def _run(data: Mapping[str, Any]) -> Mapping[str, Any]:
    run = data.get("run")
    return run if isinstance(run, Mapping) else {}


def _merged(data: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """A merge's inputs' "run" objects; [] for a run that is not a merge."""
    inputs = _run(data).get("merged_from")
    if not isinstance(inputs, list):
        return []
    return [i["run"] for i in inputs if isinstance(i, Mapping) and isinstance(i.get("run"),
                                                                               Mapping)]


def run_id(data: Mapping[str, Any]) -> str | None:
    """The run's id; a merge's: its runs' ids, sorted, joined by "+"; None
    when results.json does not say (not written by `gpuconform run`)."""
    if "merged_from" in _run(data):
        ids = [r.get("run_id") for r in _merged(data)]
        if not ids or not all(isinstance(i, str) and i for i in ids):
            return None
        return "+".join(sorted(set(ids)))
    rid = _run(data).get("run_id")
    return rid if isinstance(rid, str) and rid else None


def _unexpected(rec: Mapping[str, Any]) -> str | None:
    """The state an unexpected record counts as, else None (results.TestRecord.unexpected)."""
    result = str(rec.get("result"))
    expected = rec.get("expected")
    if isinstance(expected, bool):
        if expected:
            return None
        return "flake" if rec.get("final") == "flake" else \
            "fixed" if rec.get("final") == "pass" or result == "pass" else result
    return result if result in _FAILURES else None


def unclean(data: Mapping[str, Any]) -> str | None:
    """Why the run is not clean, in one line; None for a clean run."""
    why: list[str] = []
    run = _run(data)
    errors = run.get("collection_errors")
    if isinstance(errors, list) and errors:
        why.append(f"{len(errors)} collection error(s): {one_line(str(errors[0]), 120)}")
    aborted = [r.get("aborted") for r in [run, *_merged(data)] if r.get("aborted")]
    if aborted:
        why.append(f"aborted: {one_line(str(aborted[0]), 120)}")
    merge = run.get("merge")
    if isinstance(merge, Mapping) and merge.get("ok") is False:
        counts = [(len(merge[k]), what) for k, what in
                  (("gaps", "gap"), ("missing_shards", "missing shard"), ("problems", "problem"))
                  if isinstance(merge.get(k), list) and merge[k]]
        conflicts = [o for o in merge.get("overlaps") or []
                     if isinstance(o, Mapping) and o.get("kind") == "conflict"]
        if conflicts:
            counts.append((len(conflicts), "conflict"))
        parts = [f"{n} {what}{'s' if n > 1 else ''}" for n, what in counts]
        why.append("an incomplete merge" + (f" ({', '.join(parts)})" if parts else ""))
    tests = data.get("tests")
    by: dict[str, int] = {}
    for rec in (tests.values() if isinstance(tests, Mapping) else ()):
        state = _unexpected(rec) if isinstance(rec, Mapping) else None
        if state is not None:
            by[state] = by.get(state, 0) + 1
    if by:
        n = sum(by.values())
        why.append(f"{n} unexpected result{'s' if n > 1 else ''} ("
                   + ", ".join(f"{c} {s}" for s, c in sorted(by.items())) + ")")
    return "; ".join(why) or None
