"""Clean runs made into a baseline, or added to one (`gpuconform baseline
update`): each results directory one run of the baseline."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Mapping, Sequence

from . import baseline, gate
from .baseline import (
    Baseline,
    BaselineError,
    BaselineMetric,
    RunInfo,
    check_fingerprint,
    load_baseline,
    write_baseline,
)
from .fingerprint import Fingerprint, current_fingerprint
from .gate import Gate, RunSummary
from .catalogue import Catalogue, CatalogueError
from .runmetrics import durations, load_results, results_fingerprint, run_metrics
from .scope import catalogue_of, labeler

__all__ = ["update_baseline"]


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
    target = Path(out) if out is not None else baseline.DEFAULT_BASELINE_DIR / (fp.key() + ".json")
    old = load_baseline(target) if target.exists() else None
    if old is not None:
        try:
            check_fingerprint(old, fp)
        except BaselineError as e:
            raise BaselineError(f"{e}; give another output file") from None
    b = _merge(old, fp, loaded, append)
    return write_baseline(b, target)


def _catalogue(rj: Path, data: Mapping[str, Any]) -> Catalogue:
    try:
        return catalogue_of(data)
    except CatalogueError as e:
        raise BaselineError(f"{rj}: the metric catalogue, which keys its node's metrics: {e}")


def _merge(old: Baseline | None, fp: Fingerprint,
           loaded: Sequence[tuple[Path, Mapping[str, Any]]], append: bool) -> Baseline:
    runs = list(old.runs) if old is not None else []
    summaries: dict[str, list[RunSummary]] = {}
    raw: dict[str, list[float]] = {}
    kinds: dict[str, tuple[str, str]] = {}
    times = dict(old.durations) if old is not None else {}
    for rj, data in loaded:
        index = len(runs)
        runs.append(_run_info(data, rj.parent))
        node = labeler(data, _catalogue(rj, data))
        for key, m in run_metrics(data["tests"], clean_only=True, source=str(rj),
                                  node=node).items():
            if kinds.setdefault(key, (m.unit, m.better)) != (m.unit, m.better):
                raise BaselineError(f"{rj}: {key}: unit or direction differs from an earlier "
                                    f"run's ({m.unit}, {m.better} is better)")
            summaries.setdefault(key, []).append(gate.summarize(index, m.samples, m.better,
                                                                m.parts))
            raw.setdefault(key, []).extend(m.samples)
        times.update(durations(data["tests"]))
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
    return _pruned(Baseline(fp.to_json(), _now(), runs, metrics, times,
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

