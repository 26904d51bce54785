"""A run's results.json read back: checked, its metrics (all, or only those of
tests that ended as expected, what a baseline is made of), its durations and
the fingerprint it was measured on."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Mapping, Sequence

from .fingerprint import Fingerprint
from .results import RESULTS_FORMAT
from .hist import counts_problem
from .jsondoc import Doc, get, number, top_object, type_name
from .metrickey import MetricKey, name_problem
from .metrics import Metric, parse_better

__all__ = ["RunMetric", "load_results", "read_results", "run_metrics", "durations",
           "results_fingerprint"]


@dataclass(frozen=True)
class RunMetric:
    """A metric of a run: the Metric each copy of its test recorded (one a
    GPU, when the test ran once per GPU), together, under its key with its
    node (a metric of the node's scope, scope.py)."""
    key: MetricKey
    unit: str
    better: str
    samples: Sequence[float]  # every copy's, in GPU order (a Hist: together)
    # Each copy's samples when several copies (one a GPU) measured it, else ().
    parts: tuple[Sequence[float], ...] = ()
    gpus: tuple[int, ...] = ()  # the copies' GPU indexes, as parts

    @classmethod
    def of(cls, m: Metric) -> "RunMetric":
        return cls(m.key, m.unit, m.better, m.samples)

    @property
    def per_copy(self) -> int:
        """Samples of one copy (the fewest): what a baseline run's n counts."""
        return min(len(p) for p in self.parts) if len(self.parts) > 1 else len(self.samples)

    def joined(self, other: "RunMetric", gpu: int | None) -> "RunMetric":
        """This metric with another copy's samples (of GPU gpu) added."""
        parts = self.parts or (self.samples,)
        return replace(self, samples=self.samples + other.samples,
                       parts=parts + (other.samples,), gpus=self.gpus + ((gpu,) if gpu is not None
                                                                        else ()))


def load_results(path: Path) -> dict[str, Any]:
    """results.json (or a directory holding one), checked: a top-level object
    of format gpuconform-results with a "tests" object of records, each with a
    string "result", every metric well-formed. Returns the parsed object."""
    data: dict[str, Any] = read_results(path).data
    return data


def read_results(path: Path) -> Doc:
    """load_results(path) as a Doc, for a reader that checks more fields and
    blames a bad one by its line."""
    path = Path(path)
    if path.is_dir():
        path = path / "results.json"
    doc = Doc.read(path, "results")
    _check_results(doc)
    return doc


# The latest time a run's start or end may be: 9999-12-31T23:59:59Z (what
# time.gmtime and datetime render; a larger one is no time a run was made).
LAST_TIME_S = 253402300799
_NULL = type(None)


def _strings(doc: Doc, obj: Mapping[str, Any], path: list[str | int], key: str) -> None:
    """obj[key], where present: an array of strings, or null."""
    v = get(doc, obj, path, key, (list, _NULL), required=False)
    for i, x in enumerate(v or []):
        if not isinstance(x, str):
            raise doc.error(path + [key, i], f"is {type_name(x)}, not a string")


def _check_run(doc: Doc, d: Mapping[str, Any]) -> None:
    """The fields of "run" the commands read: of their kind, or absent / null."""
    run = get(doc, d, [], "run", (dict, _NULL), required=False)
    if not run:
        return
    where: list[str | int] = ["run"]
    for key in ("options", "node", "level"):
        get(doc, run, where, key, (dict, _NULL), required=False)
    for key in ("start", "end"):
        v = run.get(key)
        if v is not None and not 0 <= number(doc, v, where + [key], key) <= LAST_TIME_S:
            raise doc.error(where + [key], f"{key} {v} is no time a run was made (seconds "
                            "since 1970, up to the year 9999)")
    _strings(doc, run, where, "collection_errors")


def _check_results(doc: Doc) -> None:
    d = top_object(doc, "results", RESULTS_FORMAT)
    _check_run(doc, d)
    tests = get(doc, d, [], "tests", dict)
    for name, rec in tests.items():
        path: list[str | int] = ["tests", name]
        if not isinstance(rec, dict):
            raise doc.error(path, f"is {type_name(rec)}, not a record object")
        get(doc, rec, path, "result", str)
        _strings(doc, rec, path, "notes")
        placements = get(doc, rec, path, "placements", (list, _NULL), required=False)
        for i, c in enumerate(placements or []):
            if not isinstance(c, dict):
                raise doc.error(path + ["placements", i], f"is {type_name(c)}, not an object")
        dur = rec.get("duration")
        if dur is not None:
            number(doc, dur, path + ["duration"], "duration")
        mets = rec.get("metrics", [])
        if not isinstance(mets, list):
            raise doc.error(path + ["metrics"], f"is {type_name(mets)}, not an array")
        for i, m in enumerate(mets):
            _check_metric(doc, m, path + ["metrics", i])
        dyn = rec.get("dynamic", {})
        if dyn is not None and not isinstance(dyn, dict):
            raise doc.error(path + ["dynamic"], f"is {type_name(dyn)}, not an object")


def _check_metric(doc: Doc, m: Any, path: list[str | int]) -> Metric:
    if not isinstance(m, dict):
        raise doc.error(path, f"is {type_name(m)}, not a metric object")
    for k in ("test", "subtest", "name", "unit"):
        v = get(doc, m, path, k, str)
        if not v:
            raise doc.error(path + [k], "is empty")
    dyn = m.get("dynamic")
    if dyn is not None and (not isinstance(dyn, str) or not dyn):
        raise doc.error(path + ["dynamic"], "is neither null nor a non-empty string")
    bad_name = name_problem(m["name"])
    if bad_name is not None:
        raise doc.error(path + ["name"], bad_name)
    parse_better(doc, m.get("better"), path + ["better"])
    raw = get(doc, m, path, "samples", list)
    if not raw:
        raise doc.error(path + ["samples"], "empty sample set")
    for i, x in enumerate(raw):
        number(doc, x, path + ["samples", i])
    if "counts" in m:
        why = counts_problem(raw, m["counts"])
        if why is not None:
            raise doc.error(path + ["counts"], why)
    return Metric.from_json(m)


def run_metrics(records: Mapping[str, Any], *, clean_only: bool = False,
                source: str = "results", node: Any = None) -> dict[str, RunMetric]:
    """The metrics of results.json's "tests" records, by key. clean_only:
    only those of tests that ended as expected -- passed, or failed as an
    expectation rule says (a known driver finding: the measurement stands) --
    or of passing dynamic subtests of another test: what a baseline is made
    of. node: scope.labeler's labels (a node-scoped metric's key carries its
    node); None: none."""
    doc = Doc(source, "", "results", parse=False)  # for messages: no text, no lines
    out: dict[str, RunMetric] = {}
    for name, rec in records.items():
        if not isinstance(rec, Mapping):
            raise doc.error(["tests", name], f"is {type_name(rec)}, not a record object")
        mets = rec.get("metrics") or []
        if not isinstance(mets, list):
            raise doc.error(["tests", name, "metrics"], "is not an array")
        state = rec.get("result")
        dyn_states = {k: (v.get("result") if isinstance(v, Mapping) else None)
                      for k, v in (rec.get("dynamic") or {}).items()}
        for i, m in enumerate(mets):
            metric = _check_metric(doc, m, ["tests", name, "metrics", i])
            if clean_only and state != "pass" and rec.get("expected") is not True:
                if not metric.dynamic or dyn_states.get(metric.dynamic) != "pass":
                    continue
            gpu = m.get("gpu") if isinstance(m.get("gpu"), int) else None
            rm = RunMetric.of(metric)
            if node is not None:
                rm = replace(rm, key=rm.key.with_node(node(str(rm.key), rec)))
            key = str(rm.key)
            if key in out and gpu is not None:  # another GPU's copy of the test
                out[key] = out[key].joined(rm, gpu)
            else:
                out[key] = replace(rm, gpus=(gpu,) if gpu is not None else ())
    return out


def durations(records: Mapping[str, Any]) -> dict[str, float]:
    out: dict[str, float] = {}
    for name, rec in records.items():
        if not isinstance(rec, Mapping) or rec.get("result") in (None, "notrun"):
            continue
        d = rec.get("duration")
        if isinstance(d, (int, float)) and not isinstance(d, bool) and math.isfinite(d) and d >= 0:
            out[name] = float(d)
    return out


def results_fingerprint(data: Mapping[str, Any]) -> Fingerprint | None:
    for obj in (data.get("fingerprint"), (data.get("run") or {}).get("fingerprint")):
        if isinstance(obj, Mapping) and obj:
            return Fingerprint.from_json(obj)
    return None
