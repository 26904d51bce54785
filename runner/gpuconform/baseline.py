"""Timing baselines: the file, finding one, making or updating one from clean
runs, and judging a run against it.

A baseline is what K clean runs of one fingerprint (fingerprint.py) measured:
per metric, a summary of each run (gate.SUMMARY_FIELDS: its sample count,
quartiles, extremes and the good-half mean the gate compares), the metric's
resolution, and what gate.py derives from them: the limit a night must exceed,
the minimum detectable effect, or why the metric is kept for trends only. Per
test, the duration (for the progress line's ETA). data/baselines/<key>.json,
one metric a line (data/baselines/README.md shows one):

    {"format": "gpuconform-baseline", "version": 2,
     "fingerprint": {...}, "created": "2026-11-25T12:00:00Z",
     "gate": {"min_effect": 0.05, "alpha": 0.05, "power": 0.95, "trend_above": 0.2,
              "family": 150},
     "summary": ["run", "n", "min", "p25", "p50", "p75", "max", "g"],
     "runs": [{"source": ".../results/x", "start": "...", "host": "vm",
               "devices": ["GPU-..."]}, ...],
     "metrics": {"BIN@SUB[@DYN]:NAME": {"unit": "us", "better": "lower",
                 "res": 0.032, "limit": 0.025, "mde": 0.0297,
                 "runs": [[0, 1000, 458.1, ...], ...]}, ...},
     "durations": {"BIN@SUB": 1.25}}

Why summaries and not the samples (version 1 kept every sample): the gate
needs one number per run, the report a box per run, and a dispatch-gap metric
has 10,000 samples a run: 430 metrics of 5 runs were 30 MB of samples and are
200 KB of summaries, a file a person can review.

The derived fields ("limit", "mde", "trend", "family") are written so that a
reader sees what each metric can catch; loading recomputes them and refuses a
file whose stored values do not follow from its runs (edited by hand, or
written by another rule). Every problem is one line: "FILE:LINE: FIELD: why".
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from . import fmt, gate
from .atomic import atomic_write
from .fingerprint import Fingerprint, current_fingerprint
from .gate import Assessment, Gate, RunSummary
from .jsondoc import Doc, DocError, get, number, top_object, type_name

__all__ = [
    "BASELINE_FORMAT", "BASELINE_VERSION", "DEFAULT_BASELINE_DIR", "VERDICTS", "BaselineError",
    "BaselineMetric", "Baseline", "RunInfo", "RunMetric", "MetricComparison", "GateComparison",
    "load_baseline",
    "load_results", "write_baseline", "find_baseline", "check_fingerprint", "update_baseline",
    "compare_run",
    "run_metrics", "split_key", "record_name", "results_fingerprint",
]

BASELINE_FORMAT = "gpuconform-baseline"
BASELINE_VERSION = 2
RESULTS_FORMAT = "gpuconform-results"
DEFAULT_BASELINE_DIR = Path(__file__).resolve().parents[2] / "data" / "baselines"
VERDICTS = ("regression", "improvement", "unchanged", "trend", "new", "missing",
            "insufficient")
# A night's sample count under this fraction of the baseline runs' median: its
# statistic is noisier than the spread the limit was made for.
MIN_SAMPLE_FRACTION = 0.5
_NAME_RE = re.compile(r"[A-Za-z0-9._-]+\Z")

BaselineError = DocError


def split_key(key: str) -> tuple[str, str] | None:
    """"BIN@SUB[@DYN]:NAME" -> ("BIN@SUB[@DYN]", "NAME"); None if malformed."""
    test, sep, name = key.rpartition(":")
    if not sep or not _NAME_RE.match(name) or "@" not in test or test.startswith("@"):
        return None
    return test, name


def record_name(test: str) -> str:
    """"BIN@SUB@DYN" -> "BIN@SUB": the results.json record a metric belongs to."""
    return "@".join(test.split("@", 2)[:2])


# ----------------------------------------------------------------- format


@dataclass(frozen=True)
class RunInfo:
    """One clean run a baseline was made from: where it came from, which host."""
    source: str
    start: str
    host: str
    devices: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"source": self.source, "start": self.start, "host": self.host,
                "devices": list(self.devices)}


@dataclass(frozen=True)
class BaselineMetric:
    unit: str
    better: str  # "lower" | "higher"
    runs: tuple[RunSummary, ...]
    res: float | None = None  # the smallest step between two of its samples

    @property
    def gs(self) -> list[float]:
        return [r.g for r in self.runs]


@dataclass
class Baseline:
    fingerprint: dict[str, str]
    created: str
    runs: list[RunInfo]
    metrics: dict[str, BaselineMetric] = field(default_factory=dict)
    durations: dict[str, float] = field(default_factory=dict)
    gate: Gate = field(default_factory=Gate)
    path: Path | None = None
    _assessed: dict[str, Assessment] | None = field(default=None, repr=False, compare=False)

    def family(self) -> int:
        """How many metrics could gate: the Bonferroni count of the limit."""
        return sum(1 for m in self.metrics.values()
                   if len(m.runs) >= gate.MIN_RUNS and min(m.gs) > 0)

    def assessments(self) -> dict[str, Assessment]:
        if self._assessed is None:
            fam = self.family()
            self._assessed = {k: gate.assess(m.gs, m.res, fam, self.gate,
                                             k.rpartition(":")[2],
                                             all(r.n == 1 for r in m.runs))
                              for k, m in self.metrics.items()}
        return self._assessed

    def to_json(self) -> dict[str, Any]:
        a = self.assessments()
        return {
            "format": BASELINE_FORMAT,
            "version": BASELINE_VERSION,
            "fingerprint": dict(self.fingerprint),
            "created": self.created,
            "gate": {**self.gate.to_json(), "family": self.family()},
            "summary": list(gate.SUMMARY_FIELDS),
            "runs": [r.to_json() for r in self.runs],
            "metrics": {k: _metric_json(m, a[k]) for k, m in sorted(self.metrics.items())},
            "durations": dict(sorted(self.durations.items())),
        }


def _sig4(v: float | None) -> float | None:
    return None if v is None else float(f"{v:.4g}")


def _metric_json(m: BaselineMetric, a: Assessment) -> dict[str, Any]:
    j: dict[str, Any] = {"unit": m.unit, "better": m.better, "res": m.res,
                         "limit": _sig4(a.limit), "mde": _sig4(a.mde)}
    if a.trend:
        j["trend"] = a.trend
    j["runs"] = [r.to_json() for r in m.runs]
    return j


def _render(b: Baseline) -> str:
    """Top level indented, one run and one metric a line: readable diffs, and
    line numbers in error messages that point at the metric."""
    j = b.to_json()
    lines = ["{"]
    for k in ("format", "version", "fingerprint", "created", "gate", "summary"):
        lines.append(f" {json.dumps(k)}: {json.dumps(j[k], sort_keys=k == 'fingerprint')},")

    def block(name: str, items: Sequence[tuple[str | None, Any]], opener: str, closer: str,
              last: bool) -> None:
        end = "" if last else ","
        if not items:
            lines.append(f" {json.dumps(name)}: {opener}{closer}{end}")
            return
        lines.append(f" {json.dumps(name)}: {opener}")
        for i, (k, v) in enumerate(items):
            comma = "," if i < len(items) - 1 else ""
            head = f"{json.dumps(k)}: " if k is not None else ""
            lines.append(f"  {head}{json.dumps(v)}{comma}")
        lines.append(f" {closer}{end}")

    block("runs", [(None, r) for r in j["runs"]], "[", "]", False)
    block("metrics", list(j["metrics"].items()), "{", "}", False)
    block("durations", list(j["durations"].items()), "{", "}", True)
    lines.append("}")
    return "\n".join(lines) + "\n"


def write_baseline(b: Baseline, path: Path) -> Path:
    """Write b to path, whole or not at all (atomic_write)."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, _render(b))
    except OSError as e:
        raise BaselineError(f"{path}: cannot write baseline: {e.strerror or e}") from None
    return path


# ---------------------------------------------------------------- parsing


def _better(doc: Doc, v: Any, path: list[str | int]) -> str:
    if v not in ("lower", "higher"):
        raise doc.error(path, f"is {json.dumps(v)[:40]}, not \"lower\" or \"higher\"")
    return str(v)


def _count(doc: Doc, v: Any, path: list[str | int], what: str, low: int) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < low:
        raise doc.error(path, f"{what} is {type_name(v)} {json.dumps(v)[:40]}, not an integer "
                        f">= {low}")
    return v


def _parse_gate(doc: Doc, d: Mapping[str, Any]) -> Gate:
    g = get(doc, d, [], "gate", dict)
    vals: dict[str, float] = {}
    for k, lo, hi in (("min_effect", 0.0, 1.0), ("alpha", 0.0, 0.5), ("power", 0.5, 1.0),
                      ("trend_above", 0.0, math.inf)):
        if k not in g:
            raise doc.error(["gate"], f"missing field {k!r}")
        v = number(doc, g[k], ["gate", k], k)
        if not lo < v < hi and not (k == "min_effect" and v == 0):
            raise doc.error(["gate", k], f"{v} is outside ({lo}, {hi})")
        vals[k] = v
    _count(doc, g.get("family"), ["gate", "family"], "family", 0)
    return Gate(**vals)


def _parse_runs(doc: Doc, d: Mapping[str, Any]) -> list[RunInfo]:
    runs = get(doc, d, [], "runs", list)
    out: list[RunInfo] = []
    for i, r in enumerate(runs):
        path: list[str | int] = ["runs", i]
        if not isinstance(r, dict):
            raise doc.error(path, f"is {type_name(r)}, not a run object")
        devs = get(doc, r, path, "devices", list)
        for j, x in enumerate(devs):
            if not isinstance(x, str):
                raise doc.error(path + ["devices", j], f"is {type_name(x)}, not string")
        out.append(RunInfo(get(doc, r, path, "source", str), get(doc, r, path, "start", str),
                           get(doc, r, path, "host", str), tuple(devs)))
    return out


def _parse_summary(doc: Doc, v: Any, path: list[str | int], n_runs: int) -> RunSummary:
    width = len(gate.SUMMARY_FIELDS)
    if not isinstance(v, list) or len(v) != width:
        raise doc.error(path, f"is {type_name(v)}, not an array of the {width} summary fields")
    run = _count(doc, v[0], path + [0], "run", 0)
    if run >= n_runs:
        raise doc.error(path + [0], f"run {run} is not one of the {n_runs} runs")
    n = _count(doc, v[1], path + [1], "n", 1)
    nums = [number(doc, x, path + [i + 2], gate.SUMMARY_FIELDS[i + 2])
            for i, x in enumerate(v[2:])]
    lo, p25, p50, p75, hi, g = nums
    if not lo <= p25 <= p50 <= p75 <= hi:
        raise doc.error(path, "min <= p25 <= p50 <= p75 <= max does not hold")
    if not lo <= g <= hi:
        raise doc.error(path + [7], f"g {g} is outside [min, max] = [{lo}, {hi}]")
    return RunSummary(run, n, lo, p25, p50, p75, hi, g)


def _parse_metric(doc: Doc, key: str, entry: Any, n_runs: int) -> BaselineMetric:
    path: list[str | int] = ["metrics", key]
    if split_key(key) is None:
        raise doc.error(path, "metric key is not BINARY@SUBTEST[@DYNAMIC]:NAME "
                        "(NAME of [A-Za-z0-9._-])")
    if not isinstance(entry, dict):
        raise doc.error(path, f"is {type_name(entry)}, not an object")
    unit = get(doc, entry, path, "unit", str)
    better = _better(doc, get(doc, entry, path, "better", str), path + ["better"])
    res = entry.get("res")
    if res is not None and number(doc, res, path + ["res"], "res") <= 0:
        raise doc.error(path + ["res"], f"res {res} is not positive")
    raw = get(doc, entry, path, "runs", list)
    if not raw:
        raise doc.error(path + ["runs"], "no runs")
    runs = tuple(_parse_summary(doc, r, path + ["runs", i], n_runs) for i, r in enumerate(raw))
    seen = [r.run for r in runs]
    if len(set(seen)) != len(seen):
        raise doc.error(path + ["runs"], f"a run appears twice: {seen}")
    return BaselineMetric(unit, better, runs, None if res is None else float(res))


def _check_derived(doc: Doc, b: Baseline, d: Mapping[str, Any]) -> None:
    """The stored limit, MDE, trend and family must be what the runs give."""
    rebuild = "edited by hand, or written by another rule? rebuild it with " \
              "`gpuconform baseline update`"
    fam = b.family()
    if d["gate"].get("family") != fam:
        raise doc.error(["gate", "family"], f"{d['gate'].get('family')} does not follow "
                        f"from the metrics ({fam} of them can gate): {rebuild}")
    for key, a in b.assessments().items():
        entry = d["metrics"][key]
        for f in ("limit", "mde"):
            want = _sig4(getattr(a, f))
            got = entry.get(f)
            if got is not None and (isinstance(got, bool) or not isinstance(got, (int, float))):
                raise doc.error(["metrics", key, f], f"is {type_name(got)}, not a number")
            if (got is None) != (want is None) or (
                    want is not None and not math.isclose(got, want, rel_tol=1e-3)):
                raise doc.error(["metrics", key, f], f"{got} does not follow from its runs "
                                f"(they give {want}): {rebuild}")
        if (entry.get("trend") is None) != (a.trend is None):
            said = "kept for trends" if a.trend is None else "gated"
            raise doc.error(["metrics", key, "trend" if a.trend is None else "runs"],
                            f"the file has it {said}, its runs say otherwise "
                            f"({a.trend or 'it gates'}): {rebuild}")


def _parse(doc: Doc) -> Baseline:
    d = top_object(doc, "baseline", BASELINE_FORMAT)
    ver = d.get("version")
    if ver == 1 and not isinstance(ver, bool):
        raise doc.error(["version"], "a version 1 baseline (every sample of every run); this "
                        "runner reads version 2 (a summary per run): rebuild it with "
                        "`gpuconform baseline update` from the clean runs it came from")
    if isinstance(ver, bool) or ver != BASELINE_VERSION:
        raise doc.error(["version"] if "version" in d else [],
                        f"unknown version {json.dumps(ver)[:40]} (this runner reads "
                        f"{BASELINE_VERSION})")
    fp = get(doc, d, [], "fingerprint", dict)
    for k, v in fp.items():
        if not isinstance(v, str):
            raise doc.error(["fingerprint", k], f"is {type_name(v)}, not string")
    created = get(doc, d, [], "created", str)
    g = _parse_gate(doc, d)
    summary = get(doc, d, [], "summary", list)
    if summary != list(gate.SUMMARY_FIELDS):
        raise doc.error(["summary"], f"{json.dumps(summary)[:80]} is not this runner's "
                        f"summary {json.dumps(list(gate.SUMMARY_FIELDS))}")
    runs = _parse_runs(doc, d)
    metrics = {k: _parse_metric(doc, k, e, len(runs))
               for k, e in get(doc, d, [], "metrics", dict).items()}
    durations: dict[str, float] = {}
    for name, v in get(doc, d, [], "durations", dict).items():
        secs = number(doc, v, ["durations", name], "duration")
        if secs < 0:
            raise doc.error(["durations", name], f"duration is negative ({secs})")
        durations[name] = secs
    b = Baseline(dict(fp), created, runs, metrics, durations, g, Path(doc.path))
    _check_derived(doc, b, d)
    return b


def load_baseline(path: Path) -> Baseline:
    """Read and validate a baseline file; BaselineError (one line) if unusable."""
    return _parse(Doc.read(Path(path), "baseline"))


def find_baseline(fp: Fingerprint, dirs: Iterable[Path] | None = None) -> Path | None:
    """The first DIR/<fp.key()>.json of dirs (default: data/baselines/)."""
    name = fp.key() + ".json"
    for d in (list(dirs) if dirs is not None else [DEFAULT_BASELINE_DIR]):
        p = Path(d) / name
        if p.is_file():
            return p
    return None


def check_fingerprint(b: Baseline, fp: Fingerprint) -> None:
    """BaselineError naming the file's line when b is another fingerprint's
    (a file copied or renamed under this machine's key)."""
    theirs = Fingerprint.from_json(b.fingerprint)
    if theirs.key() == fp.key():
        return
    text = b.path.read_text(encoding="utf-8", errors="replace") if b.path else ""
    raise Doc(b.path or "baseline", text, "baseline", parse=False).error(
        ["fingerprint"], f"the baseline is for {theirs.describe()}, this machine is "
        f"{fp.describe()}")


# ---------------------------------------------------------------- results


@dataclass(frozen=True)
class RunMetric:
    test: str  # BIN@SUB[@DYN]
    name: str
    unit: str
    better: str
    samples: tuple[float, ...]

    @property
    def key(self) -> str:
        return f"{self.test}:{self.name}"


def load_results(path: Path) -> dict[str, Any]:
    """results.json (or a directory holding one), checked: a top-level object
    of format gpuconform-results with a "tests" object of records, each with a
    string "result", every metric well-formed. Returns the parsed object."""
    path = Path(path)
    if path.is_dir():
        path = path / "results.json"
    doc = Doc.read(path, "results")
    _check_results(doc)
    data: dict[str, Any] = doc.data
    return data


def _check_results(doc: Doc) -> None:
    d = top_object(doc, "results", RESULTS_FORMAT)
    tests = get(doc, d, [], "tests", dict)
    for name, rec in tests.items():
        path: list[str | int] = ["tests", name]
        if not isinstance(rec, dict):
            raise doc.error(path, f"is {type_name(rec)}, not a record object")
        get(doc, rec, path, "result", str)
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


def _check_metric(doc: Doc, m: Any, path: list[str | int]) -> RunMetric:
    if not isinstance(m, dict):
        raise doc.error(path, f"is {type_name(m)}, not a metric object")
    for k in ("test", "subtest", "name", "unit"):
        v = get(doc, m, path, k, str)
        if not v:
            raise doc.error(path + [k], "is empty")
    dyn = m.get("dynamic")
    if dyn is not None and (not isinstance(dyn, str) or not dyn):
        raise doc.error(path + ["dynamic"], "is neither null nor a non-empty string")
    if not _NAME_RE.match(m["name"]):
        raise doc.error(path + ["name"], f"metric name {m['name']!r} is not [A-Za-z0-9._-]+")
    better = _better(doc, m.get("better"), path + ["better"])
    raw = get(doc, m, path, "samples", list)
    if not raw:
        raise doc.error(path + ["samples"], "empty sample set")
    samples = tuple(number(doc, x, path + ["samples", i]) for i, x in enumerate(raw))
    test = f"{m['test']}@{m['subtest']}" + (f"@{dyn}" if dyn else "")
    return RunMetric(test, m["name"], m["unit"], better, samples)


def run_metrics(records: Mapping[str, Any], *, clean_only: bool = False,
                source: str = "results") -> dict[str, RunMetric]:
    """The metrics of results.json's "tests" records, by key. clean_only:
    only those of tests that ended as expected -- passed, or failed as an
    expectation rule says (a known driver finding: the measurement stands) --
    or of passing dynamic subtests of another test: what a baseline is made
    of."""
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
            rm = _check_metric(doc, m, ["tests", name, "metrics", i])
            if clean_only and state != "pass" and rec.get("expected") is not True:
                dyn = m.get("dynamic")
                if not dyn or dyn_states.get(dyn) != "pass":
                    continue
            out[rm.key] = rm
    return out


def _durations(records: Mapping[str, Any]) -> dict[str, float]:
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


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _run_info(data: Mapping[str, Any], source: Path) -> RunInfo:
    run = data.get("run") if isinstance(data.get("run"), Mapping) else {}
    start = run.get("start")
    when = (datetime.fromtimestamp(start, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
            if isinstance(start, (int, float)) and not isinstance(start, bool) else "?")
    devs = run.get("devices")
    return RunInfo(str(source), when, str(run.get("hostname", "?")),
                   tuple(x for x in devs if isinstance(x, str)) if isinstance(devs, list)
                   else ())


# ----------------------------------------------------------------- update


def update_baseline(results_dirs: Path | Sequence[Path], out: Path | None = None, *,
                    append: bool = False) -> Path:
    """Make or update the baseline of the clean runs in results_dirs (each a
    results directory or results.json); returns its path.

    out defaults to data/baselines/<key>.json of the runs' fingerprint (the
    one stored in results.json, else this machine's); every run must be of
    that fingerprint, and so must an existing file at out. Each run becomes
    one run of the baseline. An existing baseline is updated: with append,
    the runs are added to its runs of each metric they measured; without,
    they replace its runs of those metrics (the other metrics stay: a run of
    a few tests refreshes only those). Only metrics of tests that ended as
    expected go in (run_metrics' clean_only); durations of every test that
    ran, the last run's.
    """
    dirs = [Path(results_dirs)] if isinstance(results_dirs, (str, Path)) else \
        [Path(d) for d in results_dirs]
    if not dirs:
        raise BaselineError("baseline update: no results given")
    loaded = []
    fp: Fingerprint | None = None
    for d in dirs:
        rj = d if d.is_file() else d / "results.json"
        data = load_results(rj)
        if not data["tests"]:
            raise BaselineError(f"{rj}: tests: no test records, nothing to make a baseline of")
        this = results_fingerprint(data) or current_fingerprint()
        if fp is not None and this.key() != fp.key():
            raise BaselineError(f"{rj}: fingerprint: this run is {this.describe()}, the "
                                f"first is {fp.describe()}: one baseline is one fingerprint")
        fp = this
        loaded.append((rj, data))
    assert fp is not None
    target = Path(out) if out is not None else DEFAULT_BASELINE_DIR / (fp.key() + ".json")
    old = load_baseline(target) if target.exists() else None
    if old is not None:
        try:
            check_fingerprint(old, fp)
        except BaselineError as e:
            raise BaselineError(f"{e}; give another output file") from None
    b = _merge(old, fp, loaded, append)
    return write_baseline(b, target)


def _merge(old: Baseline | None, fp: Fingerprint,
           loaded: Sequence[tuple[Path, Mapping[str, Any]]], append: bool) -> Baseline:
    runs = list(old.runs) if old is not None else []
    summaries: dict[str, list[RunSummary]] = {}
    raw: dict[str, list[float]] = {}
    kinds: dict[str, tuple[str, str]] = {}
    durations = dict(old.durations) if old is not None else {}
    for rj, data in loaded:
        index = len(runs)
        runs.append(_run_info(data, rj.parent))
        for key, m in run_metrics(data["tests"], clean_only=True, source=str(rj)).items():
            if kinds.setdefault(key, (m.unit, m.better)) != (m.unit, m.better):
                raise BaselineError(f"{rj}: {key}: unit or direction differs from an earlier "
                                    f"run's ({m.unit}, {m.better} is better)")
            summaries.setdefault(key, []).append(gate.summarize(index, m.samples, m.better))
            raw.setdefault(key, []).extend(m.samples)
        durations.update(_durations(data["tests"]))
    metrics = dict(old.metrics) if old is not None else {}
    for key, new in summaries.items():
        unit, better = kinds[key]
        res = gate.resolution(raw[key])
        prev = metrics.get(key)
        if append and prev is not None and (prev.unit, prev.better) == (unit, better):
            steps = [r for r in (prev.res, res) if r is not None]
            metrics[key] = BaselineMetric(unit, better, prev.runs + tuple(new),
                                          min(steps) if steps else None)
        else:
            metrics[key] = BaselineMetric(unit, better, tuple(new), res)
    return _pruned(Baseline(fp.to_json(), _now(), runs, metrics, durations,
                            old.gate if old is not None else Gate()))


def _pruned(b: Baseline) -> Baseline:
    """b without the runs no metric refers to, the others renumbered."""
    used = sorted({r.run for m in b.metrics.values() for r in m.runs})
    renum = {old: new for new, old in enumerate(used)}
    metrics = {k: BaselineMetric(m.unit, m.better,
                                 tuple(replace(r, run=renum[r.run]) for r in m.runs), m.res)
               for k, m in b.metrics.items()}
    return Baseline(b.fingerprint, b.created, [b.runs[i] for i in used], metrics, b.durations,
                    b.gate)


# ------------------------------------------------------------- comparison


@dataclass
class MetricComparison:
    """One metric of a run against a reference: what every kind of
    comparison has (results.json's "comparisons", the report, the summary)."""
    test: str  # BIN@SUB[@DYN]
    metric: str  # NAME
    unit: str
    better: str
    verdict: str
    note: str = ""  # why a verdict that is not a measurement was given
    trend: str | None = None  # why the baseline keeps this metric for trends only
    samples_base: tuple[float, ...] = field(default=(), repr=False)
    samples_run: tuple[float, ...] = field(default=(), repr=False)

    @property
    def key(self) -> str:
        return f"{self.test}:{self.metric}"


@dataclass
class GateComparison(MetricComparison):
    """One metric of a run against the baseline (gate.py's rule);
    samples_base holds each baseline run's statistic g."""
    n_run: int = 0
    base_runs: int = 0
    center: float | None = None  # the baseline runs' geometric mean of g
    value: float | None = None  # this run's g
    change: float | None = None  # value / center - 1
    limit: float | None = None
    mde: float | None = None
    spread: float | None = None

    @property
    def gated(self) -> bool:
        return self.trend is None and self.verdict in ("regression", "improvement",
                                                       "unchanged")

    def explain(self) -> str:
        v = self.verdict
        if v == "new":
            return (f"new: {self.note or 'not in the baseline'} (good-half mean "
                    f"{fmt.value(self.value, self.unit)} over {self.n_run} samples)")
        if v == "missing":
            return (f"missing: {self.note or 'in the baseline, not recorded by this run'} "
                    f"(baseline {fmt.value(self.center, self.unit)} over {self.base_runs} runs)")
        head = (f"good-half mean {fmt.value(self.center, self.unit)} (baseline, "
                f"{self.base_runs} runs) -> {fmt.value(self.value, self.unit)} "
                f"({fmt.pct(self.change)}, {self.better} is better)")
        if v == "insufficient":
            return f"insufficient: {head}; {self.note}"
        if v == "trend":
            return f"trend: {head}; kept for trends only: {self.trend}"
        within = "beyond" if v in ("regression", "improvement") else "within"
        return (f"{v}: {head}; {within} the limit {fmt.pct_abs(self.limit)} "
                f"(MDE {fmt.pct_abs(self.mde)}, run-to-run spread "
                f"{fmt.pct_abs(self.spread)})")

    def to_json(self) -> dict[str, Any]:
        def num(v: float | None) -> float | None:
            return v if v is not None and math.isfinite(v) else None

        return {"key": self.key, "test": self.test, "metric": self.metric, "unit": self.unit,
                "better": self.better, "verdict": self.verdict, "gated": self.gated,
                "n_run": self.n_run, "baseline_runs": self.base_runs,
                "center": num(self.center), "value": num(self.value),
                "change": num(self.change), "limit": num(self.limit), "mde": num(self.mde),
                "spread": num(self.spread), "trend": self.trend, "note": self.note,
                "explain": self.explain(), "samples_base": list(self.samples_base),
                "samples_run": list(self.samples_run)}


def _judge_metric(key: str, bm: BaselineMetric, a: Assessment, rm: RunMetric) -> GateComparison:
    test, name = split_key(key) or (key, "")
    g = gate.good_half_mean(rm.samples, rm.better)
    c = GateComparison(test, name, rm.unit, rm.better, "unchanged", trend=a.trend,
                       samples_base=tuple(bm.gs), samples_run=rm.samples,
                       n_run=len(rm.samples), base_runs=len(bm.runs), center=a.center, value=g,
                       limit=a.limit, mde=a.mde, spread=a.spread)
    if (bm.unit, bm.better) != (rm.unit, rm.better):
        c.verdict = "new"
        c.note = (f"the metric changed from {bm.unit!r}, {bm.better} is better, to "
                  f"{rm.unit!r}, {rm.better} is better: not comparable")
        return c
    if a.center is not None:
        c.change = g / a.center - 1
    typical = sorted(r.n for r in bm.runs)[len(bm.runs) // 2]
    if a.gates and len(rm.samples) < MIN_SAMPLE_FRACTION * typical:
        c.verdict = "insufficient"
        c.note = (f"this run has {len(rm.samples)} samples, the baseline's runs a median of "
                  f"{typical}: its statistic is noisier than the limit was made for")
        return c
    c.verdict = gate.judge(a, g, rm.better)
    return c


def compare_run(records: Mapping[str, Any], baseline: Baseline) -> list[GateComparison]:
    """Every metric of records (results.json's "tests") against baseline,
    plus the baseline's metrics that tests of records ran without recording.
    Sorted by key."""
    run = run_metrics(records, source="results")
    assessed = baseline.assessments()
    out: list[GateComparison] = []
    for key, rm in run.items():
        bm = baseline.metrics.get(key)
        if bm is None:
            test, name = split_key(key) or (key, "")
            out.append(GateComparison(test, name, rm.unit, rm.better, "new",
                                      samples_run=rm.samples, n_run=len(rm.samples),
                                      value=gate.good_half_mean(rm.samples, rm.better)))
        else:
            out.append(_judge_metric(key, bm, assessed[key], rm))
    for key, bm in baseline.metrics.items():
        if key in run:
            continue
        test, name = split_key(key) or (key, "")
        rec = records.get(record_name(test))
        if not isinstance(rec, Mapping):
            continue  # not selected in this run: no verdict
        state = rec.get("result", "?")
        a = assessed[key]
        out.append(GateComparison(
            test, name, bm.unit, bm.better, "missing", trend=a.trend, samples_base=tuple(bm.gs),
            base_runs=len(bm.runs), center=a.center,
            note=(f"{record_name(test)} ended {state} without recording it" if state != "pass"
                  else f"{record_name(test)} passed without recording it")))
    out.sort(key=lambda c: c.key)
    return out
