"""Timing baseline files: the format, writing one, reading and checking one,
finding the one of a fingerprint. (Made by baseline_update.py from the
metrics runmetrics.py reads back; a run is judged against one in judge.py.)

A baseline is what K clean runs of one fingerprint (fingerprint.py) measured:
per metric, a summary of each run (gate.SUMMARY_FIELDS: its sample count,
quartiles, extremes, the good-half mean the gate compares and, for a run that
measured it on several GPUs, each GPU's good-half mean), the metric's
resolution, and what gate.py derives from them: the limit a night must exceed,
the minimum detectable effect, or why the metric is kept for trends only. Per
test, the duration (for the progress line's ETA). data/baselines/<key>.json,
one metric a line (data/baselines/README.md shows one):

    {"format": "gpuconform-baseline", "version": 3,
     "fingerprint": {...}, "created": "2026-11-25T12:00:00Z",
     "gate": {"min_effect": 0.05, "alpha": 0.05, "power": 0.95, "trend_above": 0.2,
              "family": 150},
     "summary": ["run", "n", "min", "p25", "p50", "p75", "max", "g", "copies"],
     "runs": [{"source": ".../results/x", "start": "...", "host": "vm",
               "devices": ["GPU-..."]}, ...],
     "metrics": {"BIN@SUB[@DYN]:NAME": {"unit": "us", "better": "lower",
                 "res": 0.032, "limit": 0.025, "mde": 0.0297,
                 "runs": [[0, 1000, 458.1, ..., 460.2, [459.8, 460.6]], ...]}, ...},
     "durations": {"BIN@SUB": 1.25}}

Why summaries and not the samples (version 1 kept every sample): the gate
needs one number per run, the report a box per run, and a dispatch-gap metric
had 10,000 samples a run (now every gap, millions, as a histogram: hist.py):
430 metrics of 5 runs were 30 MB of samples and are 200 KB of summaries, a
file a person can review.

The derived fields ("limit", "mde", "trend", "family") are written so that a
reader sees what each metric can catch on a night on one GPU (a night on more
GPUs than one may be judged by a narrower limit: gate.py, "copies"); loading
recomputes them and refuses a
file whose stored values do not follow from its runs (edited by hand, or
written by another rule). Every problem is one line: "FILE:LINE: FIELD: why".
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from . import gate
from ..core.atomic import atomic_write
from ..core.fingerprint import Fingerprint
from .gate import Assessment, Gate, RunSummary
from ..core.jsondoc import Doc, DocError, get, number, top_object, type_name
from ..core.metrickey import MetricKey
from ..core.metrics import parse_better

__all__ = [
    "BASELINE_FORMAT", "BASELINE_VERSION", "DEFAULT_BASELINE_DIR", "BaselineError",
    "BaselineMetric", "Baseline", "RunInfo", "load_baseline", "write_baseline", "find_baseline",
    "asked_baseline",
    "check_fingerprint",
]

BASELINE_FORMAT = "gpuconform-baseline"
BASELINE_VERSION = 3
# Version 2 had no "copies" field: each run reads as one copy, the gate as it was.
V2_SUMMARY_FIELDS = gate.SUMMARY_FIELDS[:-1]
DEFAULT_BASELINE_DIR = Path(__file__).resolve().parents[3] / "data" / "baselines"

BaselineError = DocError


# ----------------------------------------------------------------- format


@dataclass(frozen=True)
class RunInfo:
    """One run a baseline was made from: where it came from, which host, its
    run id (results.json's run.run_id; a merge's: its runs' ids joined by
    "+"), and why it was not clean when `baseline update --force` took it
    anyway (None: a clean run). Files written before run ids were kept have
    neither: such a run is known by its start, host and GPUs (same_run)."""
    source: str
    start: str
    host: str
    devices: tuple[str, ...] = ()
    run_id: str | None = None
    unclean: str | None = None

    def ids(self) -> frozenset[str]:
        return frozenset(self.run_id.split("+")) if self.run_id else frozenset()

    def same_run(self, other: "RunInfo") -> bool:
        """Whether the two are (or share) one run: by run id where both have
        one, else by start, host and GPUs."""
        if self.run_id and other.run_id:
            return bool(self.ids() & other.ids())
        return (self.start, self.host, self.devices) == (other.start, other.host,
                                                         other.devices) and self.start != "?"

    def to_json(self) -> dict[str, Any]:
        j: dict[str, Any] = {"source": self.source, "start": self.start, "host": self.host,
                             "devices": list(self.devices)}
        if self.run_id is not None:
            j["run_id"] = self.run_id
        if self.unclean is not None:
            j["unclean"] = self.unclean
        return j


@dataclass(frozen=True)
class BaselineMetric:
    unit: str
    better: str  # "lower" | "higher"
    runs: tuple[RunSummary, ...]
    res: float | None = None  # the smallest step between two of its samples

    @property
    def gs(self) -> list[float]:
        return [r.g for r in self.runs]

    @property
    def copies(self) -> list[tuple[float, ...]]:
        return [r.copies for r in self.runs]


def _name(key: str) -> str:
    """The NAME of a key (gate.is_maximum reads it), without the node that
    follows it in a key of the node's scope."""
    k = MetricKey.parse(key)
    return k.name if k else key


@dataclass
class Baseline:
    fingerprint: dict[str, str]
    created: str
    runs: list[RunInfo]
    metrics: dict[str, BaselineMetric] = field(default_factory=dict)
    durations: dict[str, float] = field(default_factory=dict)
    gate: Gate = field(default_factory=Gate)
    path: Path | None = None
    _assessed: dict[int, dict[str, Assessment]] = field(default_factory=dict, repr=False,
                                                        compare=False)

    def family(self) -> int:
        """How many metrics could gate: the Bonferroni count of the limit."""
        return sum(1 for m in self.metrics.values()
                   if len(m.runs) >= gate.MIN_RUNS and min(m.gs) > 0)

    def assessments(self, night: int = 1) -> dict[str, Assessment]:
        """Every metric's assessment for a night that measured it on `night`
        GPUs (gate.assess); the file states the one-GPU night's, the widest."""
        if night not in self._assessed:
            fam = self.family()
            self._assessed[night] = {
                k: gate.assess(m.gs, m.res, fam, self.gate, _name(k),
                               all(r.n == 1 for r in m.runs), m.copies, night)
                for k, m in self.metrics.items()}
        return self._assessed[night]

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
                           get(doc, r, path, "host", str), tuple(devs),
                           # absent from files written before they were kept
                           get(doc, r, path, "run_id", str, required=False),
                           get(doc, r, path, "unclean", str, required=False)))
    return out


def _parse_copies(doc: Doc, v: Any, path: list[str | int], g: float) -> tuple[float, ...]:
    """A run's copies: none, or two or more whose mean is its g."""
    if not isinstance(v, list) or len(v) == 1:
        raise doc.error(path, f"copies is {type_name(v)} {json.dumps(v)[:40]}, not an array "
                        "of each GPU's good-half mean (empty for a run on one GPU)")
    copies = tuple(number(doc, x, path + [i], "copy") for i, x in enumerate(v))
    if copies and not math.isclose(math.fsum(copies) / len(copies), g, rel_tol=1e-5):
        raise doc.error(path, f"the copies' mean {math.fsum(copies) / len(copies):.6g} is not "
                        f"the run's g {g}")
    return copies


def _parse_summary(doc: Doc, v: Any, path: list[str | int], n_runs: int,
                   fields: Sequence[str]) -> RunSummary:
    width = len(fields)
    if not isinstance(v, list) or len(v) != width:
        raise doc.error(path, f"is {type_name(v)}, not an array of the {width} summary fields")
    run = _count(doc, v[0], path + [0], "run", 0)
    if run >= n_runs:
        raise doc.error(path + [0], f"run {run} is not one of the {n_runs} runs")
    n = _count(doc, v[1], path + [1], "n", 1)
    nums = [number(doc, x, path + [i + 2], fields[i + 2]) for i, x in enumerate(v[2:8])]
    lo, p25, p50, p75, hi, g = nums
    if not lo <= p25 <= p50 <= p75 <= hi:
        raise doc.error(path, "min <= p25 <= p50 <= p75 <= max does not hold")
    if not lo <= g <= hi:
        raise doc.error(path + [7], f"g {g} is outside [min, max] = [{lo}, {hi}]")
    copies = _parse_copies(doc, v[8], path + [8], g) if width > 8 else ()
    return RunSummary(run, n, lo, p25, p50, p75, hi, g, copies)


def _parse_metric(doc: Doc, key: str, entry: Any, n_runs: int,
                  fields: Sequence[str]) -> BaselineMetric:
    path: list[str | int] = ["metrics", key]
    if MetricKey.parse(key) is None:
        raise doc.error(path, "metric key is not BINARY@SUBTEST[@DYNAMIC]:NAME[ [NODE]] "
                        "(NAME of [A-Za-z0-9._-])")
    if not isinstance(entry, dict):
        raise doc.error(path, f"is {type_name(entry)}, not an object")
    unit = get(doc, entry, path, "unit", str)
    better = parse_better(doc, get(doc, entry, path, "better", str), path + ["better"])
    res = entry.get("res")
    if res is not None and number(doc, res, path + ["res"], "res") <= 0:
        raise doc.error(path + ["res"], f"res {res} is not positive")
    raw = get(doc, entry, path, "runs", list)
    if not raw:
        raise doc.error(path + ["runs"], "no runs")
    runs = tuple(_parse_summary(doc, r, path + ["runs", i], n_runs, fields)
                 for i, r in enumerate(raw))
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
                        f"runner reads versions 2 and {BASELINE_VERSION} (a summary per run): "
                        "rebuild it with `gpuconform baseline update` from the clean runs it "
                        "came from")
    if isinstance(ver, bool) or ver not in (2, BASELINE_VERSION):
        raise doc.error(["version"] if "version" in d else [],
                        f"unknown version {json.dumps(ver)[:40]} (this runner reads 2 and "
                        f"{BASELINE_VERSION})")
    fields = list(gate.SUMMARY_FIELDS if ver == BASELINE_VERSION else V2_SUMMARY_FIELDS)
    fp = get(doc, d, [], "fingerprint", dict)
    for k, v in fp.items():
        if not isinstance(v, str):
            raise doc.error(["fingerprint", k], f"is {type_name(v)}, not string")
    created = get(doc, d, [], "created", str)
    g = _parse_gate(doc, d)
    summary = get(doc, d, [], "summary", list)
    if summary != fields:
        raise doc.error(["summary"], f"{json.dumps(summary)[:80]} is not version {ver}'s "
                        f"summary {json.dumps(fields)}")
    runs = _parse_runs(doc, d)
    metrics = {k: _parse_metric(doc, k, e, len(runs), fields)
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


def _holds(d: Path, shown: int = 5) -> str:
    """"DIR holds a.json, b.json": what a directory of baselines has."""
    try:
        names = sorted(p.name for p in d.glob("*.json"))
    except OSError as e:
        return f"{d} cannot be listed: {e.strerror or e}"
    if not names:
        return f"{d} holds no .json file"
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return f"{d} holds {', '.join(names[:shown])}{more}"


def asked_baseline(dirs: Sequence[str | Path] | None, file: str | Path | None,
                   fp: Fingerprint | None) -> Baseline | None:
    """The baseline a run asked for by name, before the run: --baseline FILE
    (that file), --baselines DIR... (the file of fp's key in the first DIR
    that has one). Loaded, and checked to be fp's. BaselineError, one line,
    when it was asked for and is not there, is not a baseline or is another
    machine's: a nightly job with a typo in its baseline path must fail, not
    run green with nothing compared. None when none was asked for (the run
    looks in data/baselines/ and notes when there is none). fp None: the run
    will be on other machines (a fleet, submitted from a login node): only
    that the paths are there (and FILE a baseline) is checked."""
    if file is not None and dirs is not None:
        raise BaselineError("--baseline FILE and --baselines DIR: give one of them")
    if file is not None:
        p = Path(file)
        if not p.exists():
            raise BaselineError(f"--baseline {p}: no such file")
        if p.is_dir():
            raise BaselineError(f"--baseline {p}: a directory (a directory of baselines, "
                                "searched by this machine's fingerprint, is --baselines DIR)")
        b = load_baseline(p)
        if fp is not None:
            check_fingerprint(b, fp)
        return b
    if dirs is None:
        return None
    paths = [Path(d) for d in dirs]
    for d in paths:
        if not d.exists():
            raise BaselineError(f"--baselines {d}: no such directory")
        if not d.is_dir():
            raise BaselineError(f"--baselines {d}: not a directory (one baseline file is "
                                "--baseline FILE)")
    if fp is None:
        return None
    found = find_baseline(fp, paths)
    if found is None:
        raise BaselineError(
            f"--baselines {', '.join(map(str, paths))}: no baseline of this machine's "
            f"fingerprint: looked for {fp.key()}.json ({fp.describe()}); "
            + "; ".join(_holds(d) for d in paths))
    b = load_baseline(found)
    check_fingerprint(b, fp)
    return b


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
