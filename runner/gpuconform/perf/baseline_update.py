"""Clean runs made into a baseline, or added to one (`gpuconform baseline
update`): each results directory one run of the baseline, each run once.

A run that is not clean (cleanrun.py: an unexpected result, an abort, a
collection error, an incomplete merge) is refused, naming why, unless
forced: then the baseline's entry of the run says why (RunInfo.unclean).
A run is known by its run id, so the same run given twice, or added
(--append) to a baseline that has it, is refused whatever its path."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

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
from .cleanrun import run_id, unclean
from ..core.fingerprint import Fingerprint, current_fingerprint
from .gate import Gate, RunSummary
from ..core.catalogue import Catalogue, CatalogueError, load_catalogue
from ..core.metrickey import MetricKey
from ..core.hist import distinct
from ..core.runmetrics import durations, load_results, results_fingerprint, run_metrics
from .scope import catalogue_of, labeler

__all__ = ["update_baseline"]


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _run_info(data: Mapping[str, Any], source: Path, rid: str,
              why: str | None) -> RunInfo:
    run = data.get("run") if isinstance(data.get("run"), Mapping) else {}
    start = run.get("start")
    when = (datetime.fromtimestamp(start, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
            if isinstance(start, (int, float)) and not isinstance(start, bool) else "?")
    devs = run.get("devices")
    return RunInfo(str(source), when, str(run.get("hostname", "?")),
                   tuple(x for x in devs if isinstance(x, str)) if isinstance(devs, list)
                   else (), rid, why)


def _short(rid: str) -> str:
    return "+".join(i[:12] for i in rid.split("+"))


def _read_run(rj: Path, force: bool) -> tuple[Mapping[str, Any], RunInfo]:
    """One results.json, checked to be a run this baseline may take."""
    data = load_results(rj)
    if not data["tests"]:
        raise BaselineError(f"{rj}: tests: no test records, nothing to make a baseline of")
    rid = run_id(data)
    if rid is None:
        raise BaselineError(f"{rj}: run.run_id: missing: not a run written by `gpuconform "
                            "run` (a baseline tells its runs apart by their ids)")
    why = unclean(data)
    if why is not None and not force:
        raise BaselineError(f"{rj}: not a clean run: {why}: a baseline is made of clean "
                            "runs (--force takes it all the same, and the baseline "
                            "records why)")
    return data, _run_info(data, rj.parent, rid, why)


def update_baseline(results_dirs: Path | Sequence[Path], out: Path | None = None, *,
                    append: bool = False, force: bool = False,
                    forced: Callable[[str], None] | None = None,
                    left_out: Callable[[str], None] | None = None) -> Path:
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

    Each run must be clean, and each one run of the baseline once: the same
    run id twice among results_dirs, or (append) already in the baseline,
    is a BaselineError. force takes runs that are not clean (only their
    tests that ended as expected, as always), each entry saying why, and
    tells forced() of each.

    A metric of a catalogued binary that no line of the catalogue
    (data/metrics.txt) names any more is left out, the runs' and the old
    baseline's alike: the binary no longer records it (a run made before its
    test changed), so it could only ever be reported missing. left_out() is
    told how many and the first.
    """
    dirs = [Path(results_dirs)] if isinstance(results_dirs, (str, Path)) else \
        [Path(d) for d in results_dirs]
    if not dirs:
        raise BaselineError("baseline update: no results given")
    loaded: list[tuple[Path, Mapping[str, Any], RunInfo]] = []
    fp: Fingerprint | None = None
    for d in dirs:
        rj = d if d.is_file() else d / "results.json"
        data, info = _read_run(rj, force)
        for prev, _, other in loaded:
            if info.same_run(other):
                raise BaselineError(f"{rj}: run {_short(info.run_id or '?')} is given twice "
                                    f"(also as {prev}): a baseline is made of distinct runs")
        this = results_fingerprint(data) or current_fingerprint()
        if fp is not None and this.key() != fp.key():
            raise BaselineError(f"{rj}: fingerprint: this run is {this.describe()}, the "
                                f"first is {fp.describe()}: one baseline is one fingerprint")
        fp = this
        loaded.append((rj, data, info))
    assert fp is not None
    target = Path(out) if out is not None else baseline.DEFAULT_BASELINE_DIR / (fp.key() + ".json")
    old = load_baseline(target) if target.exists() else None
    if old is not None:
        try:
            check_fingerprint(old, fp)
        except BaselineError as e:
            raise BaselineError(f"{e}; give another output file") from None
    b, gone = _catalogued(_merge(old, fp, loaded, append), load_catalogue())
    if gone and left_out is not None:
        left_out(f"{len(gone)} metrics left out, no line of the catalogue names them (no "
                 f"binary records them now), e.g. {gone[0]}")
    _check_distinct(b, old, [info for _, _, info in loaded], target)
    written = write_baseline(b, target)
    for rj, _, info in loaded:
        if info.unclean is not None and forced is not None:
            forced(f"{rj}: not a clean run, taken (--force): {info.unclean}")
    return written


def _check_distinct(b: Baseline, old: Baseline | None, new: Sequence[RunInfo],
                    target: Path) -> None:
    """No run of new is one that b kept from old (append: it is added to its
    own runs; without append the new run replaces the old one's metrics,
    and a run whose metrics are all replaced is gone)."""
    fresh = {id(r) for r in new}
    index = {id(o): i for i, o in enumerate(old.runs)} if old is not None else {}
    for r in b.runs:
        if id(r) not in fresh:
            continue
        for o in b.runs:
            if id(o) in index and r.same_run(o):
                how = "" if o.run_id else ": no run id there, the same start, host and GPUs"
                raise BaselineError(
                    f"{r.source}: run {_short(r.run_id or '?')} is already in {target} (its "
                    f"run {index[id(o)]}, from {o.source}{how}): a baseline is made of "
                    "distinct runs")


def _catalogue(rj: Path, data: Mapping[str, Any]) -> Catalogue:
    try:
        return catalogue_of(data)
    except CatalogueError as e:
        raise BaselineError(f"{rj}: the metric catalogue, which keys its node's metrics: {e}")


def _merge(old: Baseline | None, fp: Fingerprint,
           loaded: Sequence[tuple[Path, Mapping[str, Any], RunInfo]], append: bool) -> Baseline:
    runs = list(old.runs) if old is not None else []
    summaries: dict[str, list[RunSummary]] = {}
    raw: dict[str, list[float]] = {}
    kinds: dict[str, tuple[str, str]] = {}
    times = dict(old.durations) if old is not None else {}
    for rj, data, info in loaded:
        index = len(runs)
        runs.append(info)
        node = labeler(data, _catalogue(rj, data))
        for key, m in run_metrics(data["tests"], clean_only=True, source=str(rj),
                                  node=node).items():
            if kinds.setdefault(key, (m.unit, m.better)) != (m.unit, m.better):
                raise BaselineError(f"{rj}: {key}: unit or direction differs from an earlier "
                                    f"run's ({m.unit}, {m.better} is better)")
            summaries.setdefault(key, []).append(gate.summarize(index, m.samples, m.better,
                                                                m.parts))
            raw.setdefault(key, []).extend(distinct(m.samples))
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


def _catalogued(b: Baseline, cat: Catalogue) -> tuple[Baseline, list[str]]:
    """b without the metrics of a binary cat catalogues that no entry of cat
    names (their keys, sorted); a binary cat has no line for is kept whole."""
    binaries = {e.binary for e in cat.entries}
    keys = {k: MetricKey.of_baseline(k) for k in b.metrics}
    gone = sorted(t for t, k in keys.items() if k.binary in binaries and
                  cat.lookup(str(k.with_node(None))) is None)
    if not gone:
        return b, []
    kept = {k: m for k, m in b.metrics.items() if k not in set(gone)}
    return _pruned(replace(b, metrics=kept)), gone


def _pruned(b: Baseline) -> Baseline:
    """b without the runs no metric refers to, the others renumbered."""
    used = sorted({r.run for m in b.metrics.values() for r in m.runs})
    renum = {old: new for new, old in enumerate(used)}
    metrics = {k: BaselineMetric(m.unit, m.better,
                                 tuple(replace(r, run=renum[r.run]) for r in m.runs), m.res)
               for k, m in b.metrics.items()}
    return Baseline(b.fingerprint, b.created, [b.runs[i] for i in used], metrics, b.durations,
                    b.gate)

