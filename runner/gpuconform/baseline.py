"""Timing baselines: the file format, finding one, updating it, comparing with it.

A baseline is what one fingerprint (fingerprint.py) measured: per metric the
samples of one or more clean runs, per test its duration.
data/baselines/<key>.json (data/baselines/README.md documents it all):

    {"format": "gpuconform-baseline", "version": 1,
     "fingerprint": {"gpu_model": ..., ...}, "created": "2024-05-01T12:00:00Z",
     "source": "results/20240501T115800Z",
     "metrics": {"BIN@SUB[@DYN]:NAME": {"unit": "ns", "better": "lower",
                                         "samples": [1200.0, ...],
                                         "runs": [50, 50, 50]}},
     "durations": {"BIN@SUB": 1.25}}

"runs" (optional) are the sizes of the clean runs the samples came from, in
order: run i is the next runs[i] samples, and the runs are the LAST
sum(runs) samples (any before them came from runs not recorded: a file
written before "runs" existed, then appended to). A fresh update writes one
run, each update_baseline(append=True) adds one. Why sizes and not a copy
of each run's samples (or its median and quartiles): "samples" already
holds every sample, so the sizes are all it takes to recover each run's
samples exactly, any statistic of them can be computed later, and the file
does not grow. Why the version stays 1: the field is an addition that
older runners ignore (unknown fields are), and they compare a file that has
it exactly as before, on the pooled samples; a version 2 would make them
refuse it for nothing.

The rule (compare_run), per metric present in both the baseline and the run,
with m baseline samples and n run samples. min_effect (default 5%) is the
smallest change the comparison must catch.

  insufficient  when the sizes cannot give p < alpha whatever the data: the
                smallest one-sided Mann-Whitney p-value is 1 / C(m+n, m)
                (every run sample beyond every baseline sample), so the
                comparison needs C(m+n, m) > 1 / alpha. For alpha = 0.01:
                5 + 5 samples (C(10,5) = 252), 4 + 6 (210), 3 + 7 (120),
                2 + 13 (105), 1 + 100; 4 + 4 (70) or 3 + 6 (84) are not enough.
  regression    when BOTH
                (1) the one-sided Mann-Whitney test says the run is worse
                    (larger for "lower is better", smaller for "higher"):
                    p < alpha; and
                (2) the run's good-side quartile (the 25th percentile when
                    lower is better, the 75th when higher is better) moved
                    in the bad direction by at least the limit, relative to
                    the baseline's same quartile (pooled over its runs).
                    The limit is min_effect / 2; where the baseline records
                    K >= 3 runs (MIN_DRIFT_RUNS), the larger of that and
                    k(K) x drift, drift being the between-run spread of
                    that quartile: max over the runs r of
                    |q_r - q_pooled| / |q_pooled|, q_r the quartile of run
                    r's own samples (the median's spread alike is reported
                    beside it, not used).
  improvement   the same in the good direction.
  unchanged     otherwise.
  new / missing a metric only in the run / only in the baseline (missing
                only for tests that are in the run's records at all, so a
                run of a few tests does not call the rest missing).

Why. Measured on a shared 2-core VM (bench/detection_power.py, numbers in
data/baselines/README.md), the noise that matters is not the spread within a
run but what moves a whole run: drift of the machine between runs (a run
1-4% faster or slower than another, every sample alike) and co-tenants that
preempt part of a run (some samples 20-80% slower). A p-value computed from
the samples of one run sees neither: clean runs compared with a clean
baseline routinely give p < 1e-10. So (1), significance, is necessary (it
keeps small and noisy sample sets from deciding anything) but the size
condition (2) is what separates a slowdown from noise:
  - the good-side quartile, not the median: interference only ever makes
    time samples slower (throughput lower), so the best quarter of a run is
    the part the environment disturbs least, while a slower driver or
    kernel moves every sample, that quarter included;
  - min_effect / 2, not min_effect: a true change of exactly min_effect is
    observed, after drift, anywhere in min_effect +- drift, so a threshold
    at min_effect would miss about half of them; halfway between no change
    and min_effect splits the drift margin evenly: a change of min_effect is
    caught and no change is flagged as long as drift stays under
    min_effect / 2.
  - k x drift: min_effect / 2 only holds where the machine drifts by less
    than that. Some do not (an H100 host VM: a latency whose run medians
    went 95, 66, 114 us; a 144 -> 152 ns syscall at p = 1e-300 because its
    samples are many and tight), and the samples of one run cannot show it,
    since they all share that run's offset. The runs of the baseline can: a
    new clean run is one more draw of the same drift, so it is compared
    with how far the baseline's own runs strayed. drift is the largest
    deviation, not a MAD: the MAD of 3 to 5 values is about 0 as soon as
    two or three runs happen to agree, the largest deviation is a figure
    one can check by eye in explain(), and a baseline with one disturbed
    run errs the safe way (a higher limit). k(K) (_DRIFT_FACTORS) is
    what makes that a test at a known level: for normally distributed run
    offsets, a clean run exceeds k(K) x the drift of K baseline runs, in
    one direction, with probability DRIFT_LEVEL = 2.5%, whatever the size
    of the drift (4.53 for 3 runs, 2.17 for 5, 1.36 for 10: the fewer the
    runs, the less their largest deviation says). 2.5% a direction is the
    suite's target of at most 1 clean run in 20 flagged (either way) spent
    on drift; 1% (k(5) = 2.94) would cost power on a quiet machine: on the
    2-core dev VM, 5-run baselines drawn from 75 clean runs catch a 5%
    slowdown 72% of the time with k at 1%, 94% at 2.5% (100% with
    min_effect / 2 alone; see data/baselines/README.md). Checked by
    simulating the whole rule (runs of 50 samples, quartiles, pooled
    reference) with drift 0.1x to 50x the within-run noise, K = 3, 5, 10:
    1.5-3.0% of clean runs flagged as regressions, 0.4-2.2% as
    improvements; with 1 run in 10 three times as far off, 1.6-3.5% and
    0.9-2.5%.
    With fewer than 3 runs the drift is not estimated: the limit is
    min_effect / 2 and the comparison's note (and explain()) says "baseline
    has N run(s): between-run drift unknown". A baseline that records no
    runs (a file written before "runs") compares exactly as before, explain()
    included; only its note says "baseline records no runs: between-run
    drift unknown".
What this gives up: a regression that only slows the worst samples (a new
tail latency) does not move the good-side quartile; tail behaviour must be
recorded as a metric of its own (a per-run p99, a max) to be compared. And
on a metric whose runs drift by d, nothing smaller than about k(K) x d is
flagged: the machine cannot show it; more baseline runs lower k(K), a
quieter machine lowers d. Samples are assumed independent within a run;
they are not across runs, which is why a baseline is made of several clean
runs (update_baseline with append=True).

Every problem in a file is a BaselineError whose message is one line:
"FILE:LINE: FIELD: what is wrong".
"""

from __future__ import annotations

import json
import math
import os
import re
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from json.decoder import scanstring  # type: ignore[attr-defined]
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from . import stats
from .fingerprint import Fingerprint, current_fingerprint

__all__ = [
    "BASELINE_FORMAT",
    "BASELINE_VERSION",
    "DEFAULT_BASELINE_DIR",
    "VERDICTS",
    "BaselineError",
    "BaselineMetric",
    "Baseline",
    "Comparison",
    "ResultsDiff",
    "load_baseline",
    "load_results",
    "write_baseline",
    "find_baseline",
    "baseline_from_results",
    "update_baseline",
    "compare_metric",
    "compare_run",
    "run_spread",
    "drift_factor",
    "MIN_DRIFT_RUNS",
    "DRIFT_LEVEL",
    "diff_results",
    "compare_results",
    "run_metrics",
    "format_value",
]

BASELINE_FORMAT = "gpuconform-baseline"
BASELINE_VERSION = 1
RESULTS_FORMAT = "gpuconform-results"
DEFAULT_BASELINE_DIR = Path(__file__).resolve().parents[2] / "data" / "baselines"
# A change is flagged from this fraction of min_effect on (see the module docstring).
DECISION_FRACTION = 0.5
# The between-run drift is estimated from this many baseline runs on.
MIN_DRIFT_RUNS = 3
# k(K) for a baseline of K runs: the quartile must move by k times the largest
# deviation of a baseline run's quartile from the pooled one. k(K) is the
# one-sided 97.5% point of (x_new - mean) / max_i |x_i - mean| for K + 1
# independent normal run offsets x (a new clean run against the K of the
# baseline): a clean run exceeds k(K) times the baseline's own largest
# deviation with probability DRIFT_LEVEL, whatever the size of the drift.
# Computed (the mean is independent of the deviations, so the tail is
# E[1 - Phi(k M / sqrt(1 + 1/K))] over M = max_i |x_i - mean|) from 2e5 draws
# of M per K, two seeds agreeing to 0.5%, rounded up. Beyond 30 runs, k(30):
# a little conservative. The level: see the module docstring.
DRIFT_LEVEL = 0.025
_DRIFT_FACTORS: dict[int, float] = {
    3: 4.53, 4: 2.79, 5: 2.17, 6: 1.86, 7: 1.66, 8: 1.53, 9: 1.43, 10: 1.36, 11: 1.30,
    12: 1.25, 13: 1.21, 14: 1.18, 15: 1.15, 16: 1.13, 17: 1.10, 18: 1.08, 19: 1.07, 20: 1.05,
    21: 1.03, 22: 1.02, 23: 1.01, 24: 1.00, 25: 0.98, 26: 0.98, 27: 0.97, 28: 0.96, 29: 0.95,
    30: 0.94,
}
VERDICTS = ("regression", "improvement", "unchanged", "new", "missing", "insufficient")
_NAME_RE = re.compile(r"[A-Za-z0-9._-]+\Z")
_FAILURE_STATES = frozenset(
    {"dmesg-warn", "dmesg-fail", "fail", "error", "incomplete", "timeout", "crash", "abort"}
)


class BaselineError(Exception):
    """A baseline or results file that cannot be used; str() is one line."""


# ------------------------------------------------------- locating a field

_WS = re.compile(r"[ \t\n\r]*")


def _locate(text: str, path: Sequence[str | int]) -> int | None:
    """1-based line of the value at path in JSON text (best effort: None
    when the text does not have that path)."""
    dec = json.JSONDecoder()

    def ws(p: int) -> int:
        m = _WS.match(text, p)
        return m.end() if m else p

    try:
        pos = ws(0)
        for comp in path:
            ch = text[pos]
            if ch == "{" and isinstance(comp, str):
                pos = ws(pos + 1)
                while True:
                    if text[pos] != '"':
                        return None
                    key, pos = scanstring(text, pos + 1)
                    pos = ws(pos)
                    if text[pos] != ":":
                        return None
                    pos = ws(pos + 1)
                    if key == comp:
                        break
                    _, pos = dec.raw_decode(text, pos)
                    pos = ws(pos)
                    if text[pos] != ",":
                        return None
                    pos = ws(pos + 1)
            elif ch == "[" and isinstance(comp, int):
                pos = ws(pos + 1)
                for _ in range(comp):
                    _, pos = dec.raw_decode(text, pos)
                    pos = ws(pos)
                    if text[pos] != ",":
                        return None
                    pos = ws(pos + 1)
                if text[pos] == "]":
                    return None
            else:
                return None
        return text.count("\n", 0, pos) + 1
    except (IndexError, ValueError):
        return None


def _field_name(path: Sequence[str | int]) -> str:
    out = ""
    for comp in path:
        if isinstance(comp, int):
            out += f"[{comp}]"
        elif re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", comp):
            out += f".{comp}" if out else comp
        else:
            out += f"[{json.dumps(comp)}]"
    return out or "(top level)"


class _Doc:
    """A parsed JSON file and the means to blame one of its fields."""

    def __init__(self, path: Path | str, text: str, what: str, parse: bool = True) -> None:
        self.path = str(path)
        self.text = text
        self.data: Any = None
        if not parse:
            return
        try:
            self.data = json.loads(text)
        except json.JSONDecodeError as e:
            raise BaselineError(f"{self.path}:{e.lineno}: malformed {what} JSON: {e.msg} "
                                f"(column {e.colno})") from None
        except (ValueError, RecursionError) as e:
            raise BaselineError(f"{self.path}: malformed {what} JSON: {e}") from None

    @classmethod
    def read(cls, path: Path, what: str) -> "_Doc":
        try:
            text = path.read_text(encoding="utf-8", errors="surrogateescape")
        except OSError as e:
            raise BaselineError(f"{path}: cannot read {what}: {e.strerror or e}") from None
        return cls(path, text, what)

    def error(self, path: Sequence[str | int], why: str) -> BaselineError:
        line = _locate(self.text, path)
        where = f"{self.path}:{line}" if line is not None else self.path
        return BaselineError(f"{where}: {_field_name(path)}: {why}")


_JSON_TYPE_NAMES: dict[type, str] = {dict: "object", list: "array", str: "string",
                                     bool: "boolean", type(None): "null", int: "number",
                                     float: "number"}


def _type_name(v: Any) -> str:
    return _JSON_TYPE_NAMES.get(type(v), type(v).__name__)


def _get(doc: _Doc, obj: Mapping[str, Any], path: list[str | int], key: str,
         want: type | tuple[type, ...], required: bool = True) -> Any:
    if key not in obj:
        if required:
            raise doc.error(path, f"missing field {key!r}")
        return None
    v = obj[key]
    if not isinstance(v, want) or (isinstance(v, bool) and bool not in _as_tuple(want)):
        names = "/".join(sorted({_JSON_TYPE_NAMES.get(t, t.__name__) for t in _as_tuple(want)}))
        raise doc.error(path + [key], f"is {_type_name(v)}, not {names}")
    return v


def _as_tuple(t: type | tuple[type, ...]) -> tuple[type, ...]:
    return t if isinstance(t, tuple) else (t,)


def _number(doc: _Doc, v: Any, path: list[str | int], what: str = "sample") -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        shown = "" if v is None else f" {json.dumps(v)[:40]}"
        raise doc.error(path, f"{what} is {_type_name(v)}{shown}, not a number")
    if not math.isfinite(v):
        raise doc.error(path, f"{what} is not finite ({v})")
    return float(v)


def _samples(doc: _Doc, v: Any, path: list[str | int]) -> tuple[float, ...]:
    if not isinstance(v, list):
        raise doc.error(path, f"is {_type_name(v)}, not an array of numbers")
    if not v:
        raise doc.error(path, "empty sample set")
    return tuple(_number(doc, x, path + [i]) for i, x in enumerate(v))


def _run_sizes(doc: _Doc, v: Any, n_samples: int, path: list[str | int]) -> tuple[int, ...]:
    if not isinstance(v, list):
        raise doc.error(path, f"is {_type_name(v)}, not an array of run sizes")
    out: list[int] = []
    for i, n in enumerate(v):
        if isinstance(n, bool) or not isinstance(n, int) or n <= 0:
            shown = json.dumps(n)[:40]
            raise doc.error(path + [i], f"run size is {_type_name(n)} {shown}, not a positive "
                            "integer")
        out.append(n)
    if sum(out) > n_samples:
        raise doc.error(path, f"run sizes add up to {sum(out)}, more than the {n_samples} "
                        "samples")
    return tuple(out)


def _better(doc: _Doc, v: Any, path: list[str | int]) -> str:
    if v not in ("lower", "higher"):
        raise doc.error(path, f"is {json.dumps(v)[:40]}, not \"lower\" or \"higher\"")
    return str(v)


# ----------------------------------------------------------------- format


@dataclass(frozen=True)
class BaselineMetric:
    """One metric's baseline: every sample (pooled over the runs that made
    it) and the sizes of those runs, in order.

    runs[i] samples of run i; together they are the LAST sum(runs) samples
    (samples before them came from runs that were not recorded: a file
    written before run sizes were kept, then appended to). () when no run is
    recorded. Equality is that of the measurements (unit, better, samples):
    the run sizes only say how they were grouped.
    """

    unit: str
    better: str  # "lower" | "higher"
    samples: tuple[float, ...]
    runs: tuple[int, ...] = field(default=(), compare=False)

    def __post_init__(self) -> None:
        if any(isinstance(n, bool) or not isinstance(n, int) or n <= 0 for n in self.runs):
            raise ValueError(f"run sizes {self.runs}: not all positive integers")
        if sum(self.runs) > len(self.samples):
            raise ValueError(f"run sizes {self.runs} add up to more than the "
                             f"{len(self.samples)} samples")

    @property
    def ungrouped(self) -> int:
        """How many of the first samples belong to no recorded run."""
        return len(self.samples) - sum(self.runs)

    @property
    def run_groups(self) -> tuple[tuple[float, ...], ...]:
        """The samples of each recorded run, in order."""
        out: list[tuple[float, ...]] = []
        pos = self.ungrouped
        for n in self.runs:
            out.append(self.samples[pos:pos + n])
            pos += n
        return tuple(out)

    def to_json(self) -> dict[str, Any]:
        j: dict[str, Any] = {"unit": self.unit, "better": self.better,
                             "samples": list(self.samples)}
        if self.runs:
            j["runs"] = list(self.runs)
        return j


@dataclass
class Baseline:
    fingerprint: dict[str, str]
    created: str
    source: str
    metrics: dict[str, BaselineMetric] = field(default_factory=dict)
    durations: dict[str, float] = field(default_factory=dict)
    path: Path | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "format": BASELINE_FORMAT,
            "version": BASELINE_VERSION,
            "fingerprint": dict(self.fingerprint),
            "created": self.created,
            "source": self.source,
            "metrics": {k: m.to_json() for k, m in self.metrics.items()},
            "durations": dict(self.durations),
        }


def _split_key(key: str) -> tuple[str, str] | None:
    """"BIN@SUB[@DYN]:NAME" -> ("BIN@SUB[@DYN]", "NAME"); None if malformed."""
    test, sep, name = key.rpartition(":")
    if not sep or not _NAME_RE.match(name) or "@" not in test or test.startswith("@"):
        return None
    return test, name


def _record_name(test: str) -> str:
    """"BIN@SUB@DYN" -> "BIN@SUB": the results.json record a metric belongs to."""
    return "@".join(test.split("@", 2)[:2])


def _parse_baseline(doc: _Doc) -> Baseline:
    d = doc.data
    if not isinstance(d, dict):
        raise doc.error([], f"is {_type_name(d)}, not a baseline object")
    fmt = d.get("format")
    if fmt != BASELINE_FORMAT:
        raise doc.error(["format"] if "format" in d else [],
                        f"unknown format {json.dumps(fmt)[:60]} (want \"{BASELINE_FORMAT}\")")
    ver = d.get("version")
    if isinstance(ver, bool) or ver != BASELINE_VERSION:
        raise doc.error(["version"] if "version" in d else [],
                        f"unknown version {json.dumps(ver)[:40]} (this runner reads "
                        f"{BASELINE_VERSION})")
    fp = _get(doc, d, [], "fingerprint", dict)
    for k, v in fp.items():
        if not isinstance(v, str):
            raise doc.error(["fingerprint", k], f"is {_type_name(v)}, not string")
    created = _get(doc, d, [], "created", str)
    source = _get(doc, d, [], "source", str)
    metrics_obj = _get(doc, d, [], "metrics", dict)
    metrics: dict[str, BaselineMetric] = {}
    for key, entry in metrics_obj.items():
        path: list[str | int] = ["metrics", key]
        if _split_key(key) is None:
            raise doc.error(path, "metric key is not BINARY@SUBTEST[@DYNAMIC]:NAME "
                            "(NAME of [A-Za-z0-9._-])")
        if not isinstance(entry, dict):
            raise doc.error(path, f"is {_type_name(entry)}, not an object")
        unit = _get(doc, entry, path, "unit", str)
        better = _better(doc, _get(doc, entry, path, "better", str), path + ["better"])
        if "samples" not in entry:
            raise doc.error(path, "missing field 'samples'")
        samples = _samples(doc, entry["samples"], path + ["samples"])
        runs = _run_sizes(doc, entry.get("runs", []), len(samples), path + ["runs"])
        metrics[key] = BaselineMetric(unit, better, samples, runs)
    dur_obj = _get(doc, d, [], "durations", dict)
    durations: dict[str, float] = {}
    for name, v in dur_obj.items():
        secs = _number(doc, v, ["durations", name], "duration")
        if secs < 0:
            raise doc.error(["durations", name], f"duration is negative ({secs})")
        durations[name] = secs
    return Baseline(dict(fp), created, source, metrics, durations, Path(doc.path))


def load_baseline(path: Path) -> Baseline:
    """Read and validate a baseline file; BaselineError (one line) if unusable."""
    return _parse_baseline(_Doc.read(Path(path), "baseline"))


def _render_baseline(b: Baseline) -> str:
    """Top level indented, one metric / duration a line: readable diffs, and
    line numbers in error messages that point at the metric."""
    j = b.to_json()
    lines = ["{"]
    lines.append(f' "format": {json.dumps(j["format"])},')
    lines.append(f' "version": {j["version"]},')
    lines.append(f' "fingerprint": {json.dumps(j["fingerprint"], sort_keys=True)},')
    lines.append(f' "created": {json.dumps(j["created"])},')
    lines.append(f' "source": {json.dumps(j["source"])},')

    def block(name: str, items: dict[str, Any], last: bool) -> None:
        if not items:
            lines.append(f' "{name}": {{}}' + ("" if last else ","))
            return
        lines.append(f' "{name}": {{')
        keys = sorted(items)
        for i, k in enumerate(keys):
            comma = "," if i < len(keys) - 1 else ""
            lines.append(f"  {json.dumps(k)}: {json.dumps(items[k])}{comma}")
        lines.append(" }" + ("" if last else ","))

    block("metrics", j["metrics"], False)
    block("durations", j["durations"], True)
    lines.append("}")
    return "\n".join(lines) + "\n"


def write_baseline(b: Baseline, path: Path) -> Path:
    """Write b to path atomically (temporary file, fsync, rename)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.parent / f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}"
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(_render_baseline(b))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise BaselineError(f"{path}: cannot write baseline: {e.strerror or e}") from None
    return path


def find_baseline(fp: Fingerprint, dirs: Iterable[Path] | None = None) -> Path | None:
    """The first DIR/<fp.key()>.json of dirs (default: data/baselines/)."""
    name = fp.key() + ".json"
    for d in (list(dirs) if dirs is not None else [DEFAULT_BASELINE_DIR]):
        p = Path(d) / name
        if p.is_file():
            return p
    return None


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
    doc = _Doc.read(path, "results")
    _check_results(doc)
    data: dict[str, Any] = doc.data
    return data


def _check_results(doc: _Doc) -> None:
    d = doc.data
    if not isinstance(d, dict):
        raise doc.error([], f"is {_type_name(d)}, not a results object")
    fmt = d.get("format")
    if fmt != RESULTS_FORMAT:
        raise doc.error(["format"] if "format" in d else [],
                        f"unknown format {json.dumps(fmt)[:60]} (want \"{RESULTS_FORMAT}\")")
    tests = _get(doc, d, [], "tests", dict)
    for name, rec in tests.items():
        path: list[str | int] = ["tests", name]
        if not isinstance(rec, dict):
            raise doc.error(path, f"is {_type_name(rec)}, not a record object")
        _get(doc, rec, path, "result", str)
        dur = rec.get("duration")
        if dur is not None:
            _number(doc, dur, path + ["duration"], "duration")
        mets = rec.get("metrics", [])
        if not isinstance(mets, list):
            raise doc.error(path + ["metrics"], f"is {_type_name(mets)}, not an array")
        for i, m in enumerate(mets):
            _check_metric(doc, m, path + ["metrics", i])
        dyn = rec.get("dynamic", {})
        if dyn is not None and not isinstance(dyn, dict):
            raise doc.error(path + ["dynamic"], f"is {_type_name(dyn)}, not an object")


def _check_metric(doc: _Doc, m: Any, path: list[str | int]) -> RunMetric:
    if not isinstance(m, dict):
        raise doc.error(path, f"is {_type_name(m)}, not a metric object")
    for k in ("test", "subtest", "name", "unit"):
        v = _get(doc, m, path, k, str)
        if not v:
            raise doc.error(path + [k], "is empty")
    dyn = m.get("dynamic")
    if dyn is not None and (not isinstance(dyn, str) or not dyn):
        raise doc.error(path + ["dynamic"], "is neither null nor a non-empty string")
    if not _NAME_RE.match(m["name"]):
        raise doc.error(path + ["name"], f"metric name {m['name']!r} is not [A-Za-z0-9._-]+")
    better = _better(doc, m.get("better"), path + ["better"])
    if "samples" not in m:
        raise doc.error(path, "missing field 'samples'")
    samples = _samples(doc, m["samples"], path + ["samples"])
    test = f"{m['test']}@{m['subtest']}" + (f"@{dyn}" if dyn else "")
    return RunMetric(test, m["name"], m["unit"], better, samples)


def run_metrics(records: Mapping[str, Any], *, passing_only: bool = False,
                source: str = "results") -> dict[str, RunMetric]:
    """The metrics of results.json's "tests" records, by key. passing_only:
    only those of passing tests (or of passing dynamic subtests of a test
    that did not pass) -- what a baseline is made of."""
    doc = _Doc(source, "", "results", parse=False)  # for messages: no text, no lines
    out: dict[str, RunMetric] = {}
    for name, rec in records.items():
        if not isinstance(rec, Mapping):
            raise doc.error(["tests", name], f"is {_type_name(rec)}, not a record object")
        mets = rec.get("metrics") or []
        if not isinstance(mets, list):
            raise doc.error(["tests", name, "metrics"], "is not an array")
        state = rec.get("result")
        dyn_states = {k: (v.get("result") if isinstance(v, Mapping) else None)
                      for k, v in (rec.get("dynamic") or {}).items()}
        for i, m in enumerate(mets):
            rm = _check_metric(doc, m, ["tests", name, "metrics", i])
            if passing_only and state != "pass":
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


def _results_fingerprint(data: Mapping[str, Any]) -> Fingerprint | None:
    for obj in (data.get("fingerprint"), (data.get("run") or {}).get("fingerprint")):
        if isinstance(obj, Mapping) and obj:
            return Fingerprint.from_json(obj)
    return None


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def baseline_from_results(data: Mapping[str, Any], fingerprint: Fingerprint,
                          source: str) -> Baseline:
    """A baseline of the passing metrics and the durations of results data."""
    records = data.get("tests") or {}
    metrics = {
        k: BaselineMetric(m.unit, m.better, m.samples, (len(m.samples),))
        for k, m in run_metrics(records, passing_only=True, source=source).items()
    }
    return Baseline(fingerprint.to_json(), _now(), source, metrics, _durations(records))


def update_baseline(results_dir: Path, out: Path | None = None, *, append: bool = False) -> Path:
    """Write the baseline of results_dir/results.json; returns its path.

    out defaults to data/baselines/<key>.json for the fingerprint stored in
    results.json ("fingerprint", top level or under "run"), else this
    machine's. An existing baseline at out is updated: the metrics and
    durations this run measured replace theirs, the others are kept (a run
    of a few tests does not erase the rest); with append=True this run's
    samples are added to those already there instead (a baseline of several
    clean runs, which carries the machine's run-to-run drift). Only metrics
    of passing tests (or passing dynamic subtests) go in; durations of every
    test that ran.
    """
    results_dir = Path(results_dir)
    rj = results_dir if results_dir.is_file() else results_dir / "results.json"
    data = load_results(rj)
    fp = _results_fingerprint(data) or current_fingerprint()
    if not data["tests"]:
        raise BaselineError(f"{rj}: tests: no test records, nothing to make a baseline of")
    new = baseline_from_results(data, fp, str(rj.parent.absolute()))
    target = Path(out) if out is not None else DEFAULT_BASELINE_DIR / (fp.key() + ".json")
    if target.exists():
        old = load_baseline(target)
        old_fp = Fingerprint.from_json(old.fingerprint)
        if old_fp.key() != fp.key():
            raise BaselineError(
                f"{target}: fingerprint: the baseline is for {old_fp.describe()}, "
                f"the run for {fp.describe()}; give another output file")
        metrics = dict(old.metrics)
        for key, m in new.metrics.items():
            prev = metrics.get(key)
            if append and prev is not None and (prev.unit, prev.better) == (m.unit, m.better):
                m = BaselineMetric(m.unit, m.better, prev.samples + m.samples,
                                   prev.runs + (len(m.samples),))
            metrics[key] = m
        durations = dict(old.durations)
        durations.update(new.durations)
        source = f"{old.source}, {new.source}" if append and old.source else new.source
        new = Baseline(new.fingerprint, new.created, source, metrics, durations)
    return write_baseline(new, target)


# ------------------------------------------------------------- comparison


def _finite_or_none(v: float | None) -> float | None:
    return v if v is not None and math.isfinite(v) else None


@dataclass
class Comparison:
    test: str  # BIN@SUB[@DYN]
    metric: str  # NAME
    unit: str
    better: str
    n_base: int
    n_run: int
    median_base: float | None
    median_run: float | None
    rel_change: float | None  # (median_run - median_base) / |median_base|
    p_value: float | None  # one-sided Mann-Whitney, in the direction of the change
    verdict: str
    method: str = ""  # "exact" | "normal" | ""
    quartile_base: float | None = None  # the good-side quartile (25th / 75th percentile)
    quartile_run: float | None = None
    quartile_change: float | None = None  # relative change of that quartile: the decision
    shift: float | None = None  # Hodges-Lehmann shift of the run, relative to median_base
    alpha: float = 0.01
    min_effect: float = 0.05
    note: str = ""  # why a verdict that is not a test result was given; drift unknown
    samples_base: tuple[float, ...] = ()
    samples_run: tuple[float, ...] = ()
    base_runs: int = 0  # runs recorded in the baseline metric (0: none recorded)
    # between-run drift (>= MIN_DRIFT_RUNS runs): the largest relative deviation of
    # a baseline run's good-side quartile (median) from the pooled one
    drift: float | None = None
    drift_median: float | None = None
    drift_factor: float | None = None  # k: the quartile must move by k * drift

    @property
    def key(self) -> str:
        return f"{self.test}:{self.metric}"

    @property
    def threshold(self) -> float:
        """The quartile change from which min_effect flags a change."""
        return self.min_effect * DECISION_FRACTION

    @property
    def drift_limit(self) -> float | None:
        """k times the between-run drift, None where it is unknown."""
        if self.drift is None or self.drift_factor is None:
            return None
        return self.drift_factor * self.drift

    @property
    def limit(self) -> float:
        """The quartile change that decides: the larger of threshold (a
        change of at least it is flagged) and drift_limit (one of more than
        it is)."""
        d = self.drift_limit
        return self.threshold if d is None else max(self.threshold, d)

    def to_json(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "test": self.test,
            "metric": self.metric,
            "unit": self.unit,
            "better": self.better,
            "verdict": self.verdict,
            "n_base": self.n_base,
            "n_run": self.n_run,
            "median_base": _finite_or_none(self.median_base),
            "median_run": _finite_or_none(self.median_run),
            "rel_change": _finite_or_none(self.rel_change),
            "p_value": _finite_or_none(self.p_value),
            "method": self.method,
            "quartile_base": _finite_or_none(self.quartile_base),
            "quartile_run": _finite_or_none(self.quartile_run),
            "quartile_change": _finite_or_none(self.quartile_change),
            "shift": _finite_or_none(self.shift),
            "alpha": self.alpha,
            "min_effect": self.min_effect,
            "note": self.note,
            "baseline_runs": self.base_runs,
            "drift": _finite_or_none(self.drift),
            "drift_median": _finite_or_none(self.drift_median),
            "drift_factor": self.drift_factor,
            "limit": _finite_or_none(self.limit),
            "explain": self.explain(),
            "samples_base": list(self.samples_base),
            "samples_run": list(self.samples_run),
        }

    def explain(self) -> str:
        """The evidence for the verdict, in one line."""
        v = self.verdict
        if v == "new":
            med = f"median {format_value(self.median_run, self.unit)} over {self.n_run} samples"
            return f"new: {self.note or 'no baseline for this metric'} ({med})"
        if v == "missing":
            return (f"missing: {self.note or 'in the baseline but not recorded by this run'} "
                    f"(baseline median {format_value(self.median_base, self.unit)} over "
                    f"{self.n_base} samples)")
        head = (f"median {format_value(self.median_base, self.unit)} -> "
                f"{format_value(self.median_run, self.unit)} "
                f"({_pct(self.rel_change)}, {self.better} is better)")
        if v == "insufficient":
            return (f"insufficient: {head}; {self.n_base} + {self.n_run} samples cannot give "
                    f"p < {self.alpha:g} (smallest possible p "
                    f"{stats.min_p_value(self.n_base, self.n_run):.3g}; needs "
                    f"C(m+n, m) > {1 / self.alpha:g}, e.g. 5 + 5 at alpha 0.01)")
        q = "25th" if self.better == "lower" else "75th"
        quart = (f"{q} percentile {format_value(self.quartile_base, self.unit)} -> "
                 f"{format_value(self.quartile_run, self.unit)} ({_pct(self.quartile_change)})")
        mw = (f"Mann-Whitney one-sided p={_p(self.p_value)} ({self.method}, "
              f"n={self.n_base}/{self.n_run})")
        limit = _pct_abs(self.limit)
        d = self.drift_limit
        by_drift = d is not None and d >= self.threshold  # "more than" it, not "at least"
        if v in ("regression", "improvement"):
            moved = f"more than {limit}" if by_drift else f"{limit} or more"
            why = f"p < {self.alpha:g} and the {q} percentile moved by {moved}"
        elif self.p_value is not None and self.p_value < self.alpha:
            moved = f"no more than {limit}" if by_drift else f"less than {limit}"
            why = f"significant, but the {q} percentile moved by {moved}"
        else:
            why = f"p >= {self.alpha:g}: no evidence of a change"
        return f"{v}: {head}; {quart}; {mw}: {why}{self._drift_clause(q)}"

    def _drift_clause(self, q: str) -> str:
        """What the between-run drift added to the limit ("" where the
        baseline records no runs: the line of a baseline without them)."""
        d = self.drift_limit
        if d is None or self.drift is None or self.drift_factor is None:
            return f"; {self.note}" if self.base_runs else ""
        return (f"; limit {_pct_abs(self.limit)} = the larger of min_effect/2 = "
                f"{_pct_abs(self.threshold)} and {self.drift_factor:.2f} x the between-run "
                f"drift {_pct_abs(self.drift)} (the farthest any of the {self.base_runs} baseline "
                f"runs' {q} percentiles lay from the pooled one; their medians: "
                f"{_pct_abs(self.drift_median)})")


_TIME_SCALE = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}


def format_value(v: float | None, unit: str) -> str:
    """"1.884e+07 ns" as "18.84 ms": time units scaled to put the value in
    [1, 1000); other units as they are, 4 significant digits."""
    if v is None:
        return "?"
    if not math.isfinite(v):
        return f"{v} {unit}".rstrip()
    if unit in _TIME_SCALE and v != 0:
        secs = abs(v) * _TIME_SCALE[unit]
        best = "ns"
        for name, scale in _TIME_SCALE.items():
            if secs >= scale:
                best = name
        return f"{v * _TIME_SCALE[unit] / _TIME_SCALE[best]:.4g} {best}"
    return f"{v:.4g} {unit}".rstrip()


def _pct(v: float | None) -> str:
    if v is None:
        return "?"
    if math.isinf(v):
        return "+inf%" if v > 0 else "-inf%"
    return f"{100 * v:+.2f}%"


def _pct_abs(v: float | None) -> str:
    """A relative size as a percentage, 3 significant digits: 0.025 "2.5%"."""
    if v is None:
        return "?"
    return "inf%" if math.isinf(v) else f"{100 * v:.3g}%"


def _p(v: float | None) -> str:
    if v is None:
        return "?"
    return "<1e-300" if v < 1e-300 else f"{v:.2g}"  # the normal tail underflows to 0


def _relative(v: float, base: float) -> float:
    return stats.relative_change(0.0, v) if base == 0 else v / abs(base)


def compare_metric(key: str, base: BaselineMetric | None, run: RunMetric | None,
                   min_effect: float = 0.05, alpha: float = 0.01, note: str = "") -> Comparison:
    """The verdict on one metric (see the module docstring for the rule)."""
    split = _split_key(key) or (key, "")
    test, name = split
    ref = run if run is not None else base
    assert ref is not None, "compare_metric needs a baseline or a run metric"
    unit, better = ref.unit, ref.better
    bs = base.samples if base is not None else ()
    rs = run.samples if run is not None else ()
    mb = stats.median(bs) if bs else None
    mr = stats.median(rs) if rs else None
    common: dict[str, Any] = dict(alpha=alpha, min_effect=min_effect,
                                  samples_base=tuple(bs), samples_run=tuple(rs),
                                  base_runs=len(base.runs) if base is not None else 0)
    if base is None or run is None:
        verdict = "new" if base is None else "missing"
        return Comparison(test, name, unit, better, len(bs), len(rs), mb, mr, None, None,
                          verdict, note=note, **common)
    assert mb is not None and mr is not None
    rel = stats.relative_change(mb, mr)
    if (base.unit, base.better) != (run.unit, run.better):
        return Comparison(
            test, name, unit, better, len(bs), len(rs), mb, mr, rel, None, "new",
            note=(f"the metric changed from {base.unit!r}, {base.better} is better, to "
                  f"{run.unit!r}, {run.better} is better: not comparable"), **common)
    if not stats.can_reach(len(bs), len(rs), alpha):
        return Comparison(test, name, unit, better, len(bs), len(rs), mb, mr, rel, None,
                          "insufficient", note=note, **common)
    # "worse" is larger for lower-is-better: the run is "greater" than the baseline
    worse_alt: stats.Alternative = "greater" if better == "lower" else "less"
    better_alt: stats.Alternative = "less" if better == "lower" else "greater"
    p_worse = stats.mann_whitney_u(rs, bs, worse_alt).p_value
    mw_better = stats.mann_whitney_u(rs, bs, better_alt)
    p_better = mw_better.p_value
    level = 0.25 if better == "lower" else 0.75  # the side interference does not reach
    qb, qr = stats.quantile(bs, level), stats.quantile(rs, level)
    qchange = stats.relative_change(qb, qr)
    sign = 1.0 if better == "lower" else -1.0  # sign * change > 0: worse
    drift = drift_median = factor = None
    groups = base.run_groups
    if len(groups) >= MIN_DRIFT_RUNS:
        drift = run_spread(groups, qb, level)
        drift_median = run_spread(groups, mb, 0.5)
        factor = drift_factor(len(groups))
    else:
        note = "; ".join(n for n in (note, _drift_unknown(base)) if n)
    threshold = min_effect * DECISION_FRACTION
    drift_limit = factor * drift if drift is not None and factor is not None else -math.inf

    def beyond(change: float) -> bool:  # at least min_effect / 2, and more than k x drift
        return change >= threshold and change > drift_limit

    if p_worse < alpha and beyond(sign * qchange):
        verdict, p = "regression", p_worse
    elif p_better < alpha and beyond(-sign * qchange):
        verdict, p = "improvement", p_better
    else:
        verdict, p = "unchanged", min(p_worse, p_better)
    shift = _relative(stats.hodges_lehmann(bs, rs).estimate, mb)
    return Comparison(test, name, unit, better, len(bs), len(rs), mb, mr, rel, p, verdict,
                      method=mw_better.method, quartile_base=qb, quartile_run=qr,
                      quartile_change=qchange, shift=shift, note=note,
                      drift=drift, drift_median=drift_median, drift_factor=factor, **common)


def _drift_unknown(base: BaselineMetric) -> str:
    k = len(base.runs)
    if k == 0:
        return "baseline records no runs: between-run drift unknown"
    extra = (f" (and {base.ungrouped} samples of unrecorded runs)" if base.ungrouped else "")
    return f"baseline has {k} run(s){extra}: between-run drift unknown"


def run_spread(groups: Sequence[Sequence[float]], pooled: float, level: float) -> float:
    """The between-run drift of a statistic: the largest relative deviation
    max_r |q_r - pooled| / |pooled| of the level-quantile q_r of each run r
    from the pooled samples' (pooled given); +inf when pooled is 0 and a
    run's is not."""
    return max(abs(stats.relative_change(pooled, stats.quantile(g, level))) for g in groups)


def drift_factor(runs: int) -> float:
    """k for a baseline of that many runs (>= MIN_DRIFT_RUNS; beyond the
    table, its last entry): see _DRIFT_FACTORS."""
    if runs < MIN_DRIFT_RUNS:
        raise ValueError(f"{runs} run(s): the between-run drift needs {MIN_DRIFT_RUNS}")
    return _DRIFT_FACTORS[min(runs, max(_DRIFT_FACTORS))]


def compare_run(records: Mapping[str, dict[str, Any]], baseline: Baseline,
                min_effect: float = 0.05, alpha: float = 0.01) -> list[Comparison]:
    """Every metric of records (results.json's "tests") against baseline,
    plus the baseline's metrics that tests of records did not record.
    Sorted by key."""
    if not 0.0 < alpha < 0.5:
        raise ValueError(f"alpha {alpha} outside (0, 0.5)")
    if not (min_effect >= 0.0 and math.isfinite(min_effect)):
        raise ValueError(f"min_effect {min_effect} is not a finite number >= 0")
    run = run_metrics(records, source="results")
    out: list[Comparison] = []
    for key, rm in run.items():
        out.append(compare_metric(key, baseline.metrics.get(key), rm, min_effect, alpha))
    for key, bm in baseline.metrics.items():
        if key in run:
            continue
        split = _split_key(key)
        rec_name = _record_name(split[0]) if split else ""
        rec = records.get(rec_name)
        if not isinstance(rec, Mapping):
            continue  # not selected in this run: no verdict
        state = rec.get("result", "?")
        note = (f"{rec_name} ended {state} without recording it" if state != "pass"
                else f"{rec_name} passed without recording it")
        out.append(compare_metric(key, bm, None, min_effect, alpha, note=note))
    out.sort(key=lambda c: c.key)
    return out


# ----------------------------------------------------------- A against B


@dataclass
class ResultsDiff:
    a: str
    b: str
    n_a: int
    n_b: int
    fixed: list[tuple[str, str, str]]  # (name, state in A, state in B)
    regressed: list[tuple[str, str, str, str]]  # (name, A, B, reason in B)
    changed: list[tuple[str, str, str]]
    new: list[tuple[str, str]]  # (name, state in B)
    removed: list[tuple[str, str]]  # (name, state in A)
    comparisons: list[Comparison]

    @property
    def perf_regressions(self) -> list[Comparison]:
        return [c for c in self.comparisons if c.verdict == "regression"]

    def render(self) -> str:
        lines = [f"gpuconform compare: A = {self.a} ({self.n_a} tests), "
                 f"B = {self.b} ({self.n_b} tests)"]
        counts = {v: sum(1 for c in self.comparisons if c.verdict == v) for v in VERDICTS}
        lines.append(
            f"tests: {len(self.fixed)} fixed, {len(self.regressed)} regressed, "
            f"{len(self.changed)} changed, {len(self.new)} new, {len(self.removed)} removed; "
            f"metrics: " + (", ".join(f"{n} {v}" for v, n in counts.items() if n) or "none"))

        def section(title: str, rows: list[str]) -> None:
            if rows:
                lines.append(f"{title} ({len(rows)}):")
                lines.extend(f"  {r}" for r in rows)

        section("fixed", [f"{n}: {a} -> {b}" for n, a, b in self.fixed])
        section("regressed", [f"{n}: {a} -> {b}" + (f": {_one_line(r)}" if r else "")
                              for n, a, b, r in self.regressed])
        section("changed", [f"{n}: {a} -> {b}" for n, a, b in self.changed])
        section("new", [f"{n}: {s}" for n, s in self.new])
        section("removed", [f"{n}: {s}" for n, s in self.removed])
        order = {v: i for i, v in enumerate(VERDICTS)}
        perf = sorted(self.comparisons, key=lambda c: (order[c.verdict], c.key))
        if perf:
            lines.append(f"perf ({len(perf)} metrics, A is the baseline):")
            lines.extend(f"  {c.key}: {c.explain()}" for c in perf)
        return "\n".join(lines) + "\n"


def _one_line(text: str, limit: int = 200) -> str:
    t = " ".join(str(text).split())
    return t if len(t) <= limit else t[: limit - 3] + "..."


def diff_results(a_dir: Path, b_dir: Path, min_effect: float = 0.05,
                 alpha: float = 0.01) -> ResultsDiff:
    da = load_results(Path(a_dir))
    db = load_results(Path(b_dir))
    ta: dict[str, Any] = da["tests"]
    tb: dict[str, Any] = db["tests"]
    fixed: list[tuple[str, str, str]] = []
    regressed: list[tuple[str, str, str, str]] = []
    changed: list[tuple[str, str, str]] = []
    for name in ta:
        if name not in tb:
            continue
        sa, sb = ta[name]["result"], tb[name]["result"]
        if sa == sb:
            continue
        if sa in _FAILURE_STATES and sb == "pass":
            fixed.append((name, sa, sb))
        elif sa == "pass" and sb in _FAILURE_STATES:
            regressed.append((name, sa, sb, str(tb[name].get("reason", ""))))
        else:
            changed.append((name, sa, sb))
    new = [(n, tb[n]["result"]) for n in tb if n not in ta]
    removed = [(n, ta[n]["result"]) for n in ta if n not in tb]
    ma = run_metrics(ta, source=str(a_dir))
    mb = run_metrics(tb, source=str(b_dir))
    comps: list[Comparison] = []
    for key in sorted(set(ma) | set(mb)):
        a, b = ma.get(key), mb.get(key)
        base = (BaselineMetric(a.unit, a.better, a.samples, (len(a.samples),))
                if a is not None else None)
        if a is None or b is not None:
            comps.append(compare_metric(key, base, b, min_effect, alpha))
        elif _record_name(a.test) in tb:
            comps.append(compare_metric(key, base, None, min_effect, alpha,
                                        note=f"B's {_record_name(a.test)} did not record it"))
    return ResultsDiff(str(a_dir), str(b_dir), len(ta), len(tb), fixed, regressed, changed,
                       new, removed, comps)


def compare_results(a_dir: Path, b_dir: Path) -> str:
    """The `gpuconform compare A B` report: test state changes and per-metric
    perf deltas (A taken as the baseline, the rule of compare_run)."""
    return diff_results(a_dir, b_dir).render()
