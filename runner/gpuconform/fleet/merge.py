"""Merging results directories (shards of one run, or a run and its re-runs).

    gpuconform merge OUT DIR...

Each DIR holds a results.json written by results.py. Two optional keys, at
the top level or in "run", describe how the run was cut:

    "selection": every test selected BEFORE sharding (a list of names)
    "shard":     [INDEX, TOTAL] (1-based), or null for an unsharded run

merge_results() reads every input (a bad one is a MergeError naming it; then
nothing is written), then writes OUT/results.json (same format, totals
recomputed) and OUT/summary.txt (the usual summary, then the merge report).
The MergeReport lists:

  * overlaps: a test present in several inputs. Identical records are fine.
    A notrun record beside records that ran is resolved by the one that ran
    (a re-run of what an interrupted run left). Anything else is a conflict:
    the most severe record is kept (the first input's on a tie), with a note
    naming the others, so no failure disappears;
  * gaps: tests of the inputs' selections that no input has, and, for sharded
    inputs, the shard indexes no input brings;
  * problems: inputs that cannot be shards of one run (different numbers of
    shards or selections, a shard given twice, tests in the wrong shard).

The merge is complete (MergeReport.ok) when there is no conflict, gap or
problem.

Machines: each input keeps its machine's fingerprint (fingerprint.py) and its
own comparison with the baseline of that fingerprint (made when it ran, see
judge.py): a fleet of several GPU SKUs is never judged against one SKU's
baseline. OUT/results.json gets "fingerprints" (per fingerprint key: the
fingerprint, the inputs, the merged tests whose record came from them, their
baselines), "comparisons" (every input's, each tagged with its "fingerprint"
key and "input" directory), and "fingerprint" only when every input has the
same one (a merge of several is no one machine's run: no baseline is made
from it). The summary lists the machines; report.html groups the tests by
them.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from ..core.atomic import atomic_write
from ..core.metrickey import record_of
from ..core.fingerprint import Fingerprint
from ..core.jsondoc import dumps
from ..core.results import RESULTS_FORMAT, RESULTS_VERSION, TestRecord, render_summary, results_json
from ..core.shard import shard_of
from ..core.states import State

__all__ = [
    "MergeError",
    "MergeInput",
    "Overlap",
    "MergeReport",
    "read_input",
    "merge_results",
    "SHOWN",
]

SHOWN = 10  # names listed in the summary before "... (N in all)"
UNKNOWN = "unknown"  # the machine of an input without a fingerprint


class MergeError(Exception):
    """An input or output that cannot be used; str() is one line."""


@dataclass
class MergeInput:
    dir: Path
    records: dict[str, TestRecord]
    run: dict[str, Any]
    selection: list[str] | None = None
    shard: tuple[int, int] | None = None
    fingerprint: dict[str, str] | None = None  # the machine it ran on
    comparisons: list[dict[str, Any]] = field(default_factory=list)  # with its own baseline
    baseline: dict[str, Any] | None = None  # {"path", "error"} as results.json has it

    @property
    def machine(self) -> str:
        """The fingerprint's key; "unknown" for an input that has none."""
        return Fingerprint.from_json(self.fingerprint).key() if self.fingerprint else UNKNOWN

    def describe(self) -> str:
        how = f"shard {self.shard[0]}/{self.shard[1]}" if self.shard else "unsharded"
        sel = f", selection of {len(self.selection)}" if self.selection is not None else ""
        return f"{self.dir}: {how}, {len(self.records)} tests{sel}"


@dataclass
class Overlap:
    name: str
    dirs: list[Path]
    results: list[str]
    kept: Path
    kind: str  # "identical", "notrun" (resolved by the record that ran) or "conflict"

    @property
    def is_conflict(self) -> bool:
        return self.kind == "conflict"

    def describe(self) -> str:
        seen = ", ".join(f"{d} {r}" for d, r in zip(self.dirs, self.results))
        if self.kind == "identical":
            return f"{self.name}: identical in {seen}"
        return f"{self.name}: {seen} -> kept {self.kept}" + (
            " [CONFLICT]" if self.is_conflict else "")

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "dirs": [str(d) for d in self.dirs], "results": self.results,
                "kept": str(self.kept), "kind": self.kind}


@dataclass
class MergeReport:
    out: Path
    inputs: list[MergeInput] = field(default_factory=list)
    overlaps: list[Overlap] = field(default_factory=list)
    gaps: list[str] = field(default_factory=list)  # selected tests no input has
    missing_shards: list[int] = field(default_factory=list)
    shard_total: int | None = None
    problems: list[str] = field(default_factory=list)
    tests: int = 0
    machines: list[dict[str, Any]] = field(default_factory=list)  # results.json "fingerprints"

    @property
    def conflicts(self) -> list[Overlap]:
        return [o for o in self.overlaps if o.is_conflict]

    @property
    def ok(self) -> bool:
        return not (self.conflicts or self.gaps or self.missing_shards or self.problems)

    def verdict(self) -> str:
        """One line: complete, or what is wrong."""
        if self.ok:
            return f"merge of {len(self.inputs)} inputs complete: {self.tests} tests"
        what = []
        if self.conflicts:
            what.append(f"{len(self.conflicts)} conflicting overlaps")
        if self.gaps:
            what.append(f"{len(self.gaps)} selected tests in no input")
        if self.missing_shards:
            what.append("missing shards " + ", ".join(
                f"{i}/{self.shard_total}" for i in self.missing_shards))
        if self.problems:
            what.append(f"{len(self.problems)} problems")
        return f"merge of {len(self.inputs)} inputs INCOMPLETE: " + "; ".join(what)

    def render(self) -> str:
        lines = [f"merge: {len(self.inputs)} inputs into {self.out}"]
        lines.extend(f"  {i.describe()}" for i in self.inputs)
        if self.overlaps:
            lines.append(f"overlaps: {len(self.overlaps)} ({len(self.conflicts)} conflicting)")
            shown = self.conflicts + [o for o in self.overlaps if not o.is_conflict]
            lines.extend(f"  {o.describe()}" for o in shown[:SHOWN])
            if len(shown) > SHOWN:
                lines.append(f"  ... {len(shown) - SHOWN} more (results.json: run.merge.overlaps)")
        if self.missing_shards:
            lines.append("missing shards: " + ", ".join(
                f"{i}/{self.shard_total}" for i in self.missing_shards))
        if self.gaps:
            more = f", ... ({len(self.gaps)} in all)" if len(self.gaps) > SHOWN else ""
            lines.append(f"gaps: {len(self.gaps)} selected tests in no input: "
                         + ", ".join(self.gaps[:SHOWN]) + more)
        if self.problems:
            lines.append("problems:")
            lines.extend(f"  {p}" for p in self.problems)
        if self.machines:
            lines.append(f"machines: {len(self.machines)} fingerprints")
            for m in self.machines:
                base = ", ".join(m["baselines"]) or "no baseline"
                lines.append(f"  {m['key']}: {len(m['tests'])} tests from "
                             f"{', '.join(m['inputs'])}; {base}")
        lines.append(self.verdict())
        return "\n".join(lines) + "\n"

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "inputs": [
                {"dir": str(i.dir), "tests": len(i.records),
                 "shard": list(i.shard) if i.shard else None}
                for i in self.inputs
            ],
            "overlaps": [o.to_json() for o in self.overlaps],
            "gaps": list(self.gaps),
            "missing_shards": list(self.missing_shards),
            "shard_total": self.shard_total,
            "problems": list(self.problems),
        }


def _key(data: Mapping[str, Any], name: str) -> Any:
    if name in data:
        return data[name]
    run = data.get("run")
    return run.get(name) if isinstance(run, dict) else None


def read_input(directory: Path) -> MergeInput:
    """One results directory (or its results.json); MergeError when unusable."""
    directory = Path(directory)
    path = directory if directory.name == "results.json" and directory.is_file() \
        else directory / "results.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise MergeError(f"{path}: no such file (is {directory} a results directory?)") from None
    except OSError as e:
        raise MergeError(f"{path}: cannot read: {e.strerror or e}") from None
    except (ValueError, UnicodeDecodeError) as e:
        raise MergeError(f"{path}: not JSON: {' '.join(str(e).split())}") from None
    if not isinstance(data, dict) or data.get("format") != RESULTS_FORMAT:
        raise MergeError(f"{path}: not a gpuconform results file (no \"format\": \"{RESULTS_FORMAT}\")")
    if data.get("version") != RESULTS_VERSION:
        raise MergeError(f"{path}: results version {data.get('version')!r}, "
                         f"this runner reads version {RESULTS_VERSION}")
    tests = data.get("tests")
    if not isinstance(tests, dict):
        raise MergeError(f"{path}: \"tests\" is not an object")
    records: dict[str, TestRecord] = {}
    for name, obj in tests.items():
        try:
            if not isinstance(obj, dict):
                raise TypeError("not an object")
            records[name] = TestRecord.from_json(name, obj)
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise MergeError(f"{path}: test {name[:80]!r}: bad record: "
                             f"{type(e).__name__}: {' '.join(str(e).split())}") from None
    run = data.get("run")
    if run is None:
        run = {}
    if not isinstance(run, dict):
        raise MergeError(f"{path}: \"run\" is not an object")
    selection = _key(data, "selection")
    if selection is not None and (
        not isinstance(selection, list) or not all(isinstance(t, str) for t in selection)
    ):
        raise MergeError(f"{path}: \"selection\" is not a list of test names")
    sh = _key(data, "shard")
    shard: tuple[int, int] | None = None
    if sh is not None:
        if (not isinstance(sh, list) or len(sh) != 2
                or not all(isinstance(x, int) and not isinstance(x, bool) for x in sh)
                or not 1 <= sh[0] <= sh[1]):
            raise MergeError(f"{path}: \"shard\" is not [INDEX, TOTAL] with 1 <= INDEX <= TOTAL: {sh!r}")
        shard = (sh[0], sh[1])
    fp = _key(data, "fingerprint")
    if fp is not None and not (isinstance(fp, dict) and all(isinstance(v, str) for v in fp.values())):
        raise MergeError(f"{path}: \"fingerprint\" is not an object of strings")
    comparisons = data.get("comparisons") or []
    if not isinstance(comparisons, list) or not all(isinstance(c, dict) for c in comparisons):
        raise MergeError(f"{path}: \"comparisons\" is not a list of objects")
    baseline = data.get("baseline")
    return MergeInput(path.parent, records, run, selection, shard, fp or None, comparisons,
                      baseline if isinstance(baseline, dict) else None)


def _resolve(name: str, seen: list[tuple[MergeInput, TestRecord]]) -> tuple[TestRecord, Overlap]:
    dirs = [i.dir for i, _ in seen]
    results = [r.result.value for _, r in seen]
    first = seen[0][1].to_json()
    if all(r.to_json() == first for _, r in seen[1:]):
        return seen[0][1], Overlap(name, dirs, results, seen[0][0].dir, "identical")
    ran = [(i, r) for i, r in seen if r.result is not State.NOTRUN]
    if ran and all(r.to_json() == ran[0][1].to_json() for _, r in ran[1:]):
        return ran[0][1], Overlap(name, dirs, results, ran[0][0].dir, "notrun")
    # Conflict: the most severe record stays, the first on a tie.
    kept_in, kept = seen[0]
    for i, r in seen[1:]:
        if r.result.severity > kept.result.severity:
            kept_in, kept = i, r
    others = [(i, r) for i, r in seen if r is not kept]
    rec = TestRecord.from_json(name, kept.to_json())  # a copy: the notes change
    for i, r in others:
        reason = f": {r.reason.strip().splitlines()[0][:200]}" if r.reason.strip() else ""
        rec.notes.append(f"merge: also in {i.dir} with result {r.result.value}{reason}")
    return rec, Overlap(name, dirs, results, kept_in.dir, "conflict")


def _shard_checks(report: MergeReport, inputs: list[MergeInput]) -> None:
    sharded = [i for i in inputs if i.shard is not None]
    if not sharded:
        return
    totals = sorted({i.shard[1] for i in sharded if i.shard})
    if len(totals) > 1:
        report.problems.append(
            "inputs disagree on the number of shards: "
            + ", ".join(f"{i.dir} {i.shard[0]}/{i.shard[1]}" for i in sharded if i.shard))
        return
    total = totals[0]
    report.shard_total = total
    by_index: dict[int, MergeInput] = {}
    for i in sharded:
        assert i.shard is not None
        prev = by_index.get(i.shard[0])
        if prev is not None:
            report.problems.append(f"shard {i.shard[0]}/{total} given twice: {prev.dir} and {i.dir}")
        else:
            by_index[i.shard[0]] = i
    report.missing_shards = [n for n in range(1, total + 1) if n not in by_index]
    ref = next((i for i in sharded if i.selection is not None), None)
    for i in sharded:
        assert i.shard is not None
        if ref is not None and i.selection is not None and i is not ref \
                and set(i.selection) != set(ref.selection or ()):
            a, b = set(ref.selection or ()), set(i.selection)
            example = sorted(a ^ b)[0]
            where = ref.dir if example in a else i.dir
            report.problems.append(
                f"{i.dir} and {ref.dir} are shards of different selections "
                f"({len(b)} vs {len(a)} tests; {example} only in {where})")
        if i.selection is not None:
            sel = set(i.selection)
            wrong = [t for t in i.records if t in sel and shard_of(t, total) != i.shard[0]]
            if wrong:
                report.problems.append(
                    f"{i.dir} (shard {i.shard[0]}/{total}) has {len(wrong)} tests of other "
                    f"shards, e.g. {wrong[0]} (of shard {shard_of(wrong[0], total)})")


def _run_info(inputs: list[MergeInput], report: MergeReport,
              selection: list[str] | None) -> dict[str, Any]:
    starts = [i.run["start"] for i in inputs if isinstance(i.run.get("start"), (int, float))]
    ends = [i.run["end"] for i in inputs if isinstance(i.run.get("end"), (int, float))]
    errors: list[str] = []
    merged_from = []
    for i in inputs:
        for e in i.run.get("collection_errors") or []:
            errors.append(f"{i.dir}: {e}")
        merged_from.append({
            "dir": str(i.dir),
            "shard": list(i.shard) if i.shard else None,
            "tests": len(i.records),
            "fingerprint": i.machine,
            "baseline": i.baseline,
            "run": {k: v for k, v in i.run.items()
                    if k not in ("selection", "collection_errors", "merge", "merged_from")},
        })
    info: dict[str, Any] = {
        "merged_from": merged_from,
        "start": min(starts) if starts else None,
        "end": max(ends) if ends else None,
        "shard": None,
        "collection_errors": errors,
        "merge": report.to_json(),
    }
    if selection is not None:
        info["selection"] = selection
    return info


def _machines(inputs: list[MergeInput], merged: Mapping[str, TestRecord],
              source: Mapping[str, Path]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Per fingerprint: its inputs, the merged tests they brought, their
    baselines; and results.json's "fingerprints", "comparisons", "fingerprint".
    An input's comparisons are kept for the tests whose record came from it."""
    groups: dict[str, dict[str, Any]] = {}
    comparisons: list[dict[str, Any]] = []
    by_dir = {i.dir: i for i in inputs}
    for i in inputs:
        g = groups.setdefault(i.machine, {"key": i.machine, "fingerprint": i.fingerprint,
                                          "inputs": [], "tests": [], "baselines": []})
        g["inputs"].append(str(i.dir))
        path = (i.baseline or {}).get("path")
        if path and path not in g["baselines"]:
            g["baselines"].append(str(path))
        for c in i.comparisons:
            if source.get(record_of(str(c.get("test")))) in (i.dir, None):
                comparisons.append({**c, "fingerprint": i.machine, "input": str(i.dir)})
    for name in merged:
        d = source.get(name)
        if d is not None:
            groups[by_dir[d].machine]["tests"].append(name)
    machines = list(groups.values())
    fps = {i.machine for i in inputs}
    only = inputs[0].fingerprint if len(fps) == 1 else None
    return machines, {"fingerprints": machines, "comparisons": comparisons, "fingerprint": only}


def merge_results(dirs: Sequence[Path], out: Path) -> MergeReport:
    """Merge the results directories `dirs` into `out` (created if needed).

    Raises MergeError, before writing anything, when an input cannot be read
    or the output would overwrite an input or a run that is not a merge."""
    if not dirs:
        raise MergeError("nothing to merge: no results directory given")
    out = Path(out)
    inputs: list[MergeInput] = []
    seen_dirs: dict[str, Path] = {}
    for d in dirs:
        inp = read_input(Path(d))
        key = os.path.realpath(inp.dir)
        if key in seen_dirs:
            raise MergeError(f"{d}: given twice (also as {seen_dirs[key]})")
        seen_dirs[key] = Path(d)
        inputs.append(inp)
    out_key = os.path.realpath(out)
    if out_key in seen_dirs:
        raise MergeError(f"{out}: the output is one of the inputs; merge into a new directory")
    existing = out / "results.json"
    if existing.exists():
        try:
            prev = json.loads(existing.read_text(encoding="utf-8"))
            is_merge = isinstance(prev, dict) and "merged_from" in (prev.get("run") or {})
        except (OSError, ValueError, UnicodeDecodeError, AttributeError):
            is_merge = False
        if not is_merge:
            raise MergeError(f"{existing}: exists and is not a merge; merge into a new directory")

    report = MergeReport(out=out, inputs=inputs)
    where: dict[str, list[tuple[MergeInput, TestRecord]]] = {}
    for inp in inputs:
        for name, rec in inp.records.items():
            where.setdefault(name, []).append((inp, rec))

    selection: list[str] | None = None
    if any(i.selection is not None for i in inputs):
        sel: dict[str, None] = {}
        for i in inputs:
            for t in i.selection or ():
                sel.setdefault(t, None)
        selection = list(sel)

    in_selection = set(selection or ())
    order = list(selection or ()) + [n for n in where if n not in in_selection]
    merged: dict[str, TestRecord] = {}
    source: dict[str, Path] = {}  # the input each merged record came from
    for name in order:
        seen = where.get(name)
        if not seen:
            report.gaps.append(name)
            continue
        if len(seen) == 1:
            merged[name] = seen[0][1]
            source[name] = seen[0][0].dir
            continue
        rec, overlap = _resolve(name, seen)
        merged[name] = rec
        source[name] = overlap.kept
        report.overlaps.append(overlap)
    report.tests = len(merged)
    _shard_checks(report, inputs)
    report.machines, extra = _machines(inputs, merged, source)

    info = _run_info(inputs, report, selection)
    try:
        out.mkdir(parents=True, exist_ok=True)
        atomic_write(out / "results.json",
                     dumps(results_json(merged, info, extra)) + "\n")
        summary = render_summary(merged.values(), info["collection_errors"]) + report.render()
        atomic_write(out / "summary.txt", summary)
    except OSError as e:
        raise MergeError(f"{out}: cannot write the merged results: {e.strerror or e}") from None
    return report
