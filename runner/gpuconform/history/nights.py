"""The nights `gpuconform history` reads: results directories (given, or
found under a root such as scripts/nightly.sh's RESULTS_ROOT), each read
once into what the page needs: when it ran, on which machine (the
fingerprint's key: nights of different machines are never one series),
what could explain a change (driver, kernel, runtime, suite, GPUs, host),
each test's state and each gated metric's statistic with its baseline."""

from __future__ import annotations

import os
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

from ..core.fingerprint import Fingerprint
from ..core.jsondoc import DocError
from ..core.page import Badge, record_badge
from ..core.runmetrics import load_results

__all__ = ["Night", "Point", "find_results", "load_night", "load_nights"]


@dataclass(frozen=True)
class Point:
    """A gated metric on one night: the gate's statistic of the run, and the
    baseline it was judged against (center, limit as a fraction of it, one
    statistic per baseline run)."""
    value: float
    unit: str
    better: str
    verdict: str
    center: float | None
    limit: float | None
    baseline_runs: tuple[float, ...]


@dataclass(frozen=True)
class Night:
    path: Path
    start: float
    machine: str  # Fingerprint.key()
    describe: str
    facts: dict[str, str]  # what can explain a change: driver, kernel, ..., in this order
    states: dict[str, Badge]  # test -> its state, as the report badges it ("fail, expected")
    metrics: dict[str, Point] = field(default_factory=dict)  # gated metrics only


def find_results(roots: Iterable[Path]) -> list[Path]:
    """The results directories in roots: a root holding results.json is one,
    else every directory below it that holds one (sorted by path)."""
    out: list[Path] = []
    for root in roots:
        if (root / "results.json").is_file():
            out.append(root)
            continue
        for d, _, files in os.walk(root):
            if "results.json" in files:
                out.append(Path(d))
    return sorted(set(out))


def _float(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _facts(data: Mapping[str, Any], fp: Fingerprint) -> dict[str, str]:
    run = data.get("run") if isinstance(data.get("run"), Mapping) else {}
    devices = run.get("devices") if isinstance(run.get("devices"), list) else []
    return {"driver": fp.driver, "runtime": fp.runtime,
            "kernel": fp.kernel_release or fp.kernel, "GPUs": fp.gpus,
            "GPU ids": ", ".join(str(d) for d in devices) or "not recorded",
            "suite": str(run.get("suite") or "not recorded"),
            "environment": (", ".join(f"{k}={v}" for k, v in sorted(env.items())) or "none set")
            if isinstance(env := run.get("environment"), Mapping) else "not recorded",
            "host": str(run.get("hostname") or "not recorded")}


def _points(data: Mapping[str, Any]) -> dict[str, Point]:
    out = {}
    for c in data.get("comparisons") or []:
        if not isinstance(c, Mapping) or c.get("gated") is not True:
            continue
        value = _float(c.get("value"))
        if value is None or not isinstance(c.get("key"), str):
            continue
        base = tuple(x for x in (_float(v) for v in c.get("samples_base") or []) if x is not None)
        out[c["key"]] = Point(value, str(c.get("unit", "")), str(c.get("better", "")),
                              str(c.get("verdict", "")), _float(c.get("center")),
                              _float(c.get("limit")), base)
    return out


def load_night(path: Path) -> Night:
    """One results directory; DocError (one line, the file and line) when
    its results.json cannot be used."""
    data = load_results(path)
    fp_raw = data.get("fingerprint")
    fp = Fingerprint.from_json(fp_raw) if isinstance(fp_raw, Mapping) else Fingerprint()
    run = data.get("run") if isinstance(data.get("run"), Mapping) else {}
    start = _float(run.get("start"))
    if start is None:
        start = (path / "results.json").stat().st_mtime
    states = {name: record_badge(rec) for name, rec in data["tests"].items()}
    return Night(path, start, fp.key(), fp.describe(), _facts(data, fp), states, _points(data))


def _load(path: Path) -> Night | str:
    try:
        return load_night(path)
    except DocError as e:
        return str(e)
    except OSError as e:
        return f"{path}: {e.strerror or e}"


def load_nights(paths: Iterable[Path]) -> tuple[list[Night], list[str]]:
    """Every usable night, oldest first, and one line per unusable one. Read
    by a process per CPU: each results.json is parsed and checked whole."""
    paths = list(paths)
    if len(paths) > 4 and (os.cpu_count() or 1) > 1:
        with ProcessPoolExecutor() as pool:
            loaded = list(pool.map(_load, paths, chunksize=4))
    else:
        loaded = [_load(p) for p in paths]
    nights = [n for n in loaded if isinstance(n, Night)]
    nights.sort(key=lambda n: (n.start, str(n.path)))
    return nights, [e for e in loaded if isinstance(e, str)]
