"""RESULTS/report.html: one self-contained page (no network, no external file).

    write_html(results_dir) -> results_dir/report.html

From results_dir/results.json, in the order a night's reader needs it:
  - the verdict first: the line the run ended with (results.json "outcome",
    as the exit status and summary.txt say it; worked out again from the
    records where a results.json has none), then the state counts, an
    expected failure counted and badged apart ("fail, expected", never a
    plain red "fail");
  - what counts against the run: tests judged unexpected (no rule, flakes,
    fixed) and metric regressions with the limit they passed;
  - the expected failures, each with the rule that matched;
  - the run and its fingerprint, then the results table by contract area;
  - per gated or flagged metric an inline SVG strip + box plot: the
    baseline's runs (one good-half mean each: what the gate compares) and
    this run's samples, medians marked, with the comparison's verdict and
    its evidence (results.json "comparisons": judge.GateComparison.to_json());
    every other metric (trend-only, or no baseline) a row of this run's
    numbers (n, median, p99, min, max). A row's box and median are over
    every sample; its dots are a summary (_summary_points: at most MAX_DOTS,
    the extremes kept), one path; the samples stay in results.json;
  - where tests soaked (results.json "soaks"), a "Soaks" section:
    per soak each series (rss, fds, device, latency) against cycles with
    its fitted slope, verdict and bound, growing series first and in red
    (soakplot.py, templates/soakplot.svg.j2, shared with qualification.html);
  - where the run holds gap.MODE.SHAPE metrics (the bubbles binaries), a
    "Dispatch gaps" section: per shape one plot of every mode's gaps on a
    shared axis, p50 / p99 / max and bubbles per mode beside it, the
    shape's overhead ratios below;
  - per test its duration, a bar chart sorted longest first;
  - where the run holds a test of the contract table (data/contracts.txt),
    a "Contracts across vendors" section: per contract subtest each
    vendor's subtests side by side with their states in this run, or why a
    vendor has none (contracts.view);
  - in the results table, failures first in each area, states in colour,
    every reason, note and output escaped (test output can contain anything);
  - for a merge of several machines (results.json "fingerprints", merge.py):
    a "Machines" section, one row per fingerprint (what the machine is, the
    results directories it ran, its tests by state, the baselines its
    metrics were judged against), and the results table grouped by machine.

This module reads the data and computes what is shown: units, axes, ticks,
quartiles, the points drawn and where, colours, the rows' order. The markup
is Jinja2's: templates/report.html.j2 (the page, its tables and badges) and
templates/plots.svg.j2 (the SVG), given plain views (the dataclasses below)
and never pre-rendered HTML. Every value they interpolate is cleaned and
escaped (page.py).

Plots are <svg class="plot">; a small inline script counts those with a
non-empty bounding box once laid out and writes the count to
<body data-plots>, so a headless browser can prove they rendered. A
Content-Security-Policy forbids every fetch: the page cannot reach out.
"""

from __future__ import annotations

import bisect
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from ..core.atomic import atomic_write
from ..core.contracts import (
    TABLE_PATH,
    ContractsError,
    display_path,
    expectation_counts,
    load_table,
    view,
)
from ..core.fingerprint import Fingerprint
from ..core.fmt import nice_ticks
from ..core.hist import Hist, distinct, samples_json, samples_of
from ..core.jsondoc import DocError
from ..core.metrickey import MetricKey
from ..core.metrics import Metric
from ..core.page import STATE_COLOURS, Badge, environment, record_badge, state_badge
from ..core.results import expected_failure, outcome_of
from ..core.runmetrics import load_results
from ..core.soakplot import SoakView, soak_views
from ..core.stats import median, quantile
from ..core.states import State, failed

__all__ = ["write_html", "render_html", "REPORT_NAME"]

REPORT_NAME = "report.html"
TEMPLATES = Path(__file__).resolve().parent / "templates"
MAX_DOTS = 32  # per distribution row drawn: a summary (_summary_points), the samples stay in results.json
TAIL_DOTS = 8  # of those, the largest values, always drawn (a tail is what a reader looks for)
HEAD_DOTS = 4  # and the smallest
MAX_BARS = 400
MAX_OUTPUT_CHARS = 64 * 1024  # per stream in the table; the rest is in results.json

_VERDICT_COLOURS = {
    "regression": "#c62828", "improvement": "#2e7d32", "unchanged": "#1565c0",
    "trend": "#546e7a", "new": "#6a1b9a", "missing": "#ef6c00", "insufficient": "#757575",
}
_BASE_COLOUR = "#78909c"


def _clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"[... {len(text) - limit} characters before, in results.json ...]\n" + text[-limit:]


def _num(v: float) -> str:
    if v == 0:
        return "0"
    return f"{v:.4g}"


# ------------------------------------------------------------------- units

_TIME_UNITS = [("ns", 1e-9), ("us", 1e-6), ("ms", 1e-3), ("s", 1.0)]


def _display_unit(unit: str, values: Sequence[float]) -> tuple[float, str]:
    """A factor and unit that put time values' median in [1, 1000)."""
    scales = dict(_TIME_UNITS)
    if unit not in scales or not values:
        return 1.0, unit
    m = abs(median(values)) * scales[unit]  # seconds
    best = "ns"
    for name, s in _TIME_UNITS:
        if m >= s:
            best = name
    return scales[unit] / scales[best], best


def _summary_points(values: Sequence[float]) -> list[float]:
    """The points a row draws: every value when there are at most MAX_DOTS,
    else the TAIL_DOTS largest and HEAD_DOTS smallest (the extremes are kept)
    and, between them, values at evenly spaced ranks (a quantile dot plot:
    where the dots crowd, the samples do). The box and median are computed
    over every value; results.json keeps the samples themselves."""
    if len(values) <= MAX_DOTS:
        return list(values)
    ranked = _ranked(values)
    n = len(ranked)
    k = MAX_DOTS - HEAD_DOTS - TAIL_DOTS
    step = (n - HEAD_DOTS - TAIL_DOTS - 1) / (k - 1)
    picks = [*range(HEAD_DOTS), *(HEAD_DOTS + round(i * step) for i in range(k)),
             *range(n - TAIL_DOTS, n)]
    return [ranked[i] for i in picks]


def _ranked(values: Sequence[float]) -> Sequence[float]:
    """values ascending: a Hist (every gap, hist.py) already is."""
    return values if isinstance(values, Hist) else sorted(values)


def _pooled(sets: Sequence[Sequence[float]]) -> Sequence[float]:
    """Several rows' values as one sequence (a Hist when one of them is)."""
    if any(isinstance(s, Hist) for s in sets):
        return sum(sets, Hist((), ()))
    return [v for s in sets for v in s]


def _scaled(values: Sequence[float], factor: float) -> Sequence[float]:
    return values.scaled(factor) if isinstance(values, Hist) else [v * factor for v in values]


# ------------------------------------------------------------------- plots


@dataclass(frozen=True)
class _Axis:
    """Maps values (already in the shown unit) to x pixels: linear, or log10
    where log is set (values <= lo are drawn at lo)."""
    lo: float
    hi: float
    left: int
    width: int  # of the plot area, pixels
    log: bool = False

    def x(self, v: float) -> float:
        if self.log:
            frac = math.log10(max(v, self.lo) / self.lo) / math.log10(self.hi / self.lo)
        else:
            frac = (v - self.lo) / (self.hi - self.lo)
        return self.left + frac * self.width

    def ticks(self) -> list[float]:
        return _log_ticks(self.lo, self.hi) if self.log else nice_ticks(self.lo, self.hi)


def _log_ticks(lo: float, hi: float) -> list[float]:
    """Ticks at 1, then 1-2-5, then every digit times the powers of ten in
    [lo, hi]: the first of these that gives at least 4."""
    decades = range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1)
    ticks: list[float] = []
    for mantissas in ((1,), (1, 2, 5), tuple(range(1, 10))):
        ticks = [m * 10.0 ** k for k in decades for m in mantissas if lo <= m * 10.0 ** k <= hi]
        if len(ticks) >= 4:
            break
    return ticks


def _padded(lo: float, hi: float) -> tuple[float, float]:
    """[lo, hi] widened by 5% each side (1% of the value, or 1, when empty)."""
    pad = (hi - lo) * 0.05 if hi > lo else abs(lo) * 0.01 or 1.0
    return lo - pad, hi + pad


# The views the templates draw: positions in pixels, labels as text.

ROW_H, ROW_BOX_H, ROW_MEDIAN_H = 46, 28, 36  # a strip plot's row, its box, its median bar


@dataclass(frozen=True)
class _AxisView:
    """Grid lines from top down to the axis line at y, a label per tick
    below it, then the unit (right) and a note (left)."""
    left: int
    right: int
    top: int
    y: int
    label_y: int
    caption_y: int
    ticks: list[tuple[float, str]]  # (x, label)
    unit: str
    note: str


@dataclass(frozen=True)
class _RowView:
    """One row of a strip + box plot around the line y: its label, the
    quartiles' box, a line from min to max, the points and the median."""
    label: str
    colour: str
    label_x: int
    label_y: float
    y: float
    box_x: float
    box_top: float
    box_w: float
    box_h: int
    span_x1: float
    span_x2: float
    dots: list[tuple[float, float]]  # (x, y) of each point drawn
    median_x: float
    median_top: float
    median_bottom: float
    median: str


@dataclass(frozen=True)
class _StripBoxView:
    title: str
    width: int
    height: int
    axis: _AxisView
    rows: list[_RowView]


def _axis_view(axis: _Axis, top: int, axis_y: int, shown_unit: str, note: str) -> _AxisView:
    return _AxisView(axis.left, axis.left + axis.width, top, axis_y, axis_y + 14, axis_y + 30,
                     [(axis.x(t), _num(t)) for t in axis.ticks()], shown_unit, note)


def _row_view(label: str, vals: Sequence[float], points: Sequence[float], colour: str,
              cy: float, axis: _Axis) -> _RowView:
    """One row's geometry; values in the shown unit, points the ones drawn
    (jittered, deterministically, by up to 11 px either side of cy)."""
    x = axis.x
    q1, q2, q3 = quantile(vals, 0.25), median(vals), quantile(vals, 0.75)
    dots = [(x(v), cy + ((j * 37) % 23 - 11) * 1.0) for j, v in enumerate(points)]
    return _RowView(label, colour, axis.left - 8, cy + 4, cy,
                    x(q1), cy - ROW_BOX_H / 2, max(x(q3) - x(q1), 1.0), ROW_BOX_H,
                    x(_ranked(vals)[0]), x(_ranked(vals)[-1]), dots,
                    x(q2), cy - ROW_MEDIAN_H / 2, cy + ROW_MEDIAN_H / 2, _num(q2))


def _strip_box(rows: list[tuple[str, Sequence[float], str]], axis: _Axis, shown_unit: str,
               title: str, thin: Callable[[Sequence[float]], list[float]],
               note: str = "") -> _StripBoxView:
    """Rows [(label, values in the shown unit, colour)] on one axis; thin
    picks the points drawn of a row's values."""
    width, top = axis.left + axis.width + 20, 10
    height = top + ROW_H * len(rows) + 38
    axis_y = top + ROW_H * len(rows) + 4
    views = [_row_view(label, vals, thin(vals), colour, top + ROW_H * i + ROW_H / 2, axis)
             for i, (label, vals, colour) in enumerate(rows)]
    return _StripBoxView(title, width, height, _axis_view(axis, top, axis_y, shown_unit, note),
                         views)


def _distribution(rows: list[tuple[str, Sequence[float], str]], unit: str,
                  title: str) -> _StripBoxView:
    """Strip plot with a box (quartiles) and the median per row:
    rows = [(label, samples, colour)]."""
    factor, shown_unit = _display_unit(unit, _pooled([s for _, s, _ in rows]))
    scaled = [(label, _scaled(s, factor), colour) for label, s, colour in rows]
    allv = _ranked(_pooled([s for _, s, _ in scaled]))
    lo, hi = _padded(allv[0], allv[-1])
    return _strip_box(scaled, _Axis(lo, hi, 130, 610), shown_unit, title, _summary_points)


@dataclass(frozen=True)
class _Bar:
    label: str  # the name, cut to 60 characters
    name: str
    secs: str
    colour: str
    y: int
    text_y: int
    w: float
    value_x: float


@dataclass(frozen=True)
class _BarChart:
    """Bars from x = left, names right-aligned at label_x, an axis line to right."""
    width: int
    height: int
    label_x: int
    left: int
    right: int
    bar_h: int
    axis_y: int
    caption_y: int
    longest: str
    total: int  # tests with a duration; the MAX_BARS longest are drawn
    bars: list[_Bar]


def _durations(items: list[tuple[str, float, str]]) -> _BarChart:
    """Horizontal bars, longest first: items = [(name, seconds, colour)]."""
    shown = sorted(items, key=lambda t: (-t[1], t[0]))[:MAX_BARS]
    width, label_w, right, bar_h, top = 900, 380, 90, 16, 6
    plot_w = width - label_w - right
    longest = max((s for _, s, _ in shown), default=0.0) or 1.0
    bars = []
    for i, (name, secs, colour) in enumerate(shown):
        y = top + i * bar_h
        w = max(secs / longest * plot_w, 1.0)
        label = name if len(name) <= 60 else name[:57] + "..."
        bars.append(_Bar(label, name, f"{secs:.3f} s", colour, y + 2, y + 12, w,
                         label_w + w + 4))
    axis_y = top + bar_h * len(shown) + 2
    return _BarChart(width, top + bar_h * len(shown) + 28, label_w - 6, label_w,
                     label_w + plot_w, bar_h - 4, axis_y, axis_y + 16, f"{longest:.3f} s",
                     len(items), bars)


# ------------------------------------------------------------------- model


def _severity(state: str) -> int:
    try:
        return State(state).severity
    except ValueError:
        return len(State)  # unknown states are shown first: something to look at


def _samples(m: Mapping[str, Any]) -> Sequence[float]:
    """A metric object's samples, a Hist where it has counts (results.json
    was checked when read: runmetrics)."""
    return samples_of(m) if "counts" in m else _floats(m.get("samples"))


def _floats(v: Any) -> list[float]:
    if not isinstance(v, list):
        return []
    return [float(x) for x in v if isinstance(x, (int, float)) and not isinstance(x, bool)
            and math.isfinite(x)]


def _comparisons(data: Mapping[str, Any]) -> list[dict[str, Any]]:
    raw = data.get("comparisons")
    if not isinstance(raw, list):
        return []
    return [c for c in raw if isinstance(c, dict) and isinstance(c.get("key"), str)]


def _run_metrics(tests: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Each metric of the run, every GPU's samples together (a test run once
    per GPU records it once a copy)."""
    out: dict[str, dict[str, Any]] = {}
    for rec in tests.values():
        for m in rec.get("metrics") or []:
            key = str(Metric.from_json(m).key)
            if key in out:
                joined = _samples(out[key]) + _samples(m)
                out[key] = {**{k: v for k, v in out[key].items() if k != "counts"},
                            **samples_json(joined)}
            else:
                out[key] = m
    return out


def _unnoded(key: str) -> str:
    """A comparison's key without its node (scope.py): one node a run."""
    k = MetricKey.parse(key)
    return str(k.with_node(None)) if k else key

# ------------------------------------------------------------ dispatch gaps
#
# The bubbles binaries (cuda_bubbles, hip_bubbles) record, per MODE and SHAPE:
# gap.MODE.SHAPE (every gap between dependent kernels as a histogram; a
# subsample of them before the binaries wrote histograms),
# gap-p50 / gap-p99 / gap-max.MODE.SHAPE (over all gaps), bubbles.MODE.SHAPE
# and overhead.RATIO.SHAPE. The section draws, per shape, every mode's gaps on
# one shared axis, with the numbers beside the plot and the ratios below it.
#
# Why box + strip on one axis, not a histogram per mode: the question is how
# the modes differ (stream vs graph, traced vs untraced), and rows sharing an
# axis line up the boxes and medians for direct comparison, while every dot is
# a real gap, so the tail and its bubbles stand out as dots far to the right;
# histograms need a panel each and their peaks read less precisely across
# panels. Why log10 once the values span more than LOG_AXIS_SPAN: gap tails
# reach tens to thousands of times the median, which squashes the boxes into
# a few pixels on a linear axis; on a log axis a ratio is a distance, as the
# overhead ratios are reported.

GAP_SHAPES = ("chain2", "chain16", "chain256", "chain8192", "wide16", "wide256", "mixed",
              "launch")
GAP_MODES = ("stream", "graph", "graph-trace", "graph-trace-serial", "graph-detached")
_GAP_KINDS = ("gap", "gap-p50", "gap-p99", "gap-max", "bubbles", "overhead")
_GAP_STATS = (("gap-p50", 0.5), ("gap-p99", 0.99), ("gap-max", 1.0))
_MODE_COLOURS = {"stream": "#ef6c00", "graph": "#1565c0", "graph-trace": "#c62828",
                 "graph-trace-serial": "#6a1b9a", "graph-detached": "#2e7d32"}
_OTHER_MODE_COLOUR = "#424242"
LOG_AXIS_SPAN = 10.0  # max / smallest positive value beyond which the gap axis is log10
GAP_PLOT_LEFT, GAP_PLOT_W = 180, 410  # label column, plot area (pixels): the table fits beside
GAP_LABEL_CHARS = 30  # a mode, its subtest and its GPU: graph @traced-concurrent gpu7


@dataclass(frozen=True)
class _GapSet:
    """One metric KIND.MODE.SHAPE of test@subtest[@dynamic] (MODE is the
    ratio's name for KIND overhead)."""
    test: str
    dynamic: str
    subtest: str
    kind: str
    mode: str
    shape: str
    unit: str
    samples: Sequence[float]  # a Hist: every gap
    gpu: int | None = None  # the GPU of the copy that recorded it (a node of several)


@dataclass(frozen=True)
class _GapRow:
    """One mode's gaps in one shape's plot, and the metrics that summarise them."""
    label: str
    colour: str
    gaps: _GapSet
    stats: Mapping[str, _GapSet]  # kind -> metric


def _parse_gap_name(name: str) -> tuple[str, str, str] | None:
    """(kind, mode, shape) of a gap-family metric name, else None."""
    parts = name.split(".", 2)
    if len(parts) != 3 or parts[0] not in _GAP_KINDS or not parts[1] or not parts[2]:
        return None
    return parts[0], parts[1], parts[2]


def _gap_sets(tests: Mapping[str, Any]) -> list[_GapSet]:
    out = []
    for rec in tests.values():
        for m in rec.get("metrics") or []:
            parsed = _parse_gap_name(str(m.get("name", "")))
            samples = _samples(m)
            if parsed is None or not samples:
                continue
            gpu = m.get("gpu")
            out.append(_GapSet(str(m.get("test", "")), str(m.get("dynamic") or ""),
                               str(m.get("subtest", "")), *parsed, str(m.get("unit", "")),
                               samples, gpu if isinstance(gpu, int) else None))
    return out


def _rank(name: str, order: Sequence[str]) -> tuple[int, str]:
    """Known names in their order, then any other by name."""
    return (order.index(name), "") if name in order else (len(order), name)


def _gap_groups(sets: list[_GapSet]) -> list[list[_GapSet]]:
    """The sets per (shape, test, dynamic), shapes in GAP_SHAPES order: one
    plot each (a merged run of two binaries or devices plots each apart)."""
    groups: dict[tuple[str, str, str], list[_GapSet]] = {}
    for s in sets:
        groups.setdefault((s.shape, s.test, s.dynamic), []).append(s)
    keys = sorted(groups, key=lambda k: (_rank(k[0], GAP_SHAPES), k[1], k[2]))
    return [groups[k] for k in keys]


def _row_stat(group: list[_GapSet], gaps: _GapSet, kind: str) -> _GapSet | None:
    """The KIND metric of gaps' mode and GPU: from gaps' own subtest, else the
    only one where no other subtest recorded gaps of that mode (it could be
    theirs)."""
    found = [s for s in group if s.kind == kind and s.mode == gaps.mode and s.gpu == gaps.gpu]
    same = [s for s in found if s.subtest == gaps.subtest]
    if same:
        return same[0]
    shared = any(s.kind == "gap" and s.mode == gaps.mode and s.subtest != gaps.subtest
                 and s.gpu == gaps.gpu for s in group)
    return found[0] if len(found) == 1 and not shared else None


def _gap_rows(group: list[_GapSet]) -> list[_GapRow]:
    """One row per gap metric, modes in GAP_MODES order; a mode recorded by
    more than one subtest is labelled with the subtest, by more than one GPU
    (a copy a GPU) with the GPU."""
    gaps = sorted((s for s in group if s.kind == "gap"),
                  key=lambda s: (_rank(s.mode, GAP_MODES), s.subtest, s.gpu or 0))
    subtests: dict[str, set[str]] = {}
    gpus: dict[str, set[int | None]] = {}
    for g in gaps:
        subtests.setdefault(g.mode, set()).add(g.subtest)
        gpus.setdefault(g.mode, set()).add(g.gpu)
    rows = []
    for g in gaps:
        label = g.mode + (f" @{g.subtest}" if len(subtests[g.mode]) > 1 else "")
        label += f" gpu{g.gpu}" if len(gpus[g.mode]) > 1 else ""
        stats = {k: s for k in ("gap-p50", "gap-p99", "gap-max", "bubbles")
                 if (s := _row_stat(group, g, k)) is not None}
        rows.append(_GapRow(label, _MODE_COLOURS.get(g.mode, _OTHER_MODE_COLOUR), g, stats))
    return rows


def _gap_axis(values: Sequence[float]) -> _Axis:
    """Log10 over [smallest positive, max] when that spans more than
    LOG_AXIS_SPAN, else linear over [min, max], padded either way."""
    positive = [v for v in values if v > 0]
    if positive and max(positive) / min(positive) > LOG_AXIS_SPAN:
        return _Axis(min(positive) / 1.25, max(positive) * 1.25, GAP_PLOT_LEFT, GAP_PLOT_W,
                     log=True)
    lo, hi = _padded(min(values), max(values))
    return _Axis(lo, hi, GAP_PLOT_LEFT, GAP_PLOT_W)


def _short(label: str) -> str:
    """label cut to GAP_LABEL_CHARS, its GPU (a last word gpuN) kept."""
    if len(label) <= GAP_LABEL_CHARS:
        return label
    head, _, last = label.rpartition(" ")
    tail = f" {last}" if head and last.startswith("gpu") else ""
    return label[:GAP_LABEL_CHARS - 3 - len(tail)] + "..." + tail



def _fmt(v: float, unit: str) -> str:
    """A value in the unit that suits it: 1234 ns -> 1.234 us; 'x' attached."""
    factor, shown = _display_unit(unit, [v])
    return f"{_num(v * factor)}{shown}" if shown == "x" else f"{_num(v * factor)} {shown}"



def _gaps_plot(rows: list[_GapRow], title: str) -> _StripBoxView:
    """Every row's gaps on one axis, in the unit that suits their median."""
    unit = rows[0].gaps.unit
    factor, shown_unit = _display_unit(unit, _pooled([r.gaps.samples for r in rows]))
    scaled = [(_short(r.label), _scaled(r.gaps.samples, factor), r.colour) for r in rows]
    axis = _gap_axis(distinct(_pooled([vals for _, vals, _ in scaled])))
    clamped = sum(bisect.bisect_left(_ranked(vals), axis.lo)
                  for _, vals, _ in scaled) if axis.log else 0
    note = f"{clamped} gaps <= 0 drawn at the left end" if clamped else ""
    return _strip_box(scaled, axis, shown_unit + (" (log scale)" if axis.log else ""),
                      title, _summary_points, note)


@dataclass(frozen=True)
class _Cell:
    value: str
    subsample: bool  # computed from a plotted subsample, not over all gaps


@dataclass(frozen=True)
class _GapTableRow:
    label: str
    colour: str
    n: int
    stats: list[_Cell]  # p50, p99, max
    bubbles: str | None  # None: not recorded


@dataclass(frozen=True)
class _Ratio:
    name: str
    value: str
    n: int  # samples; the value is their median


@dataclass(frozen=True)
class _GapShapeView:
    source: str
    shape: str
    plot: _StripBoxView
    rows: list[_GapTableRow]
    ratios: list[_Ratio]


def _stat_cell(row: _GapRow, kind: str, q: float) -> _Cell:
    """The recorded KIND (over all gaps) or, without it, the quantile q of
    the gaps: of every gap where they are a histogram, else of a subsample."""
    m = row.stats.get(kind)
    if m is not None:
        return _Cell(_fmt(median(m.samples), m.unit), False)
    gaps = row.gaps.samples
    return _Cell(_fmt(quantile(gaps, q), row.gaps.unit), not isinstance(gaps, Hist))


def _gap_table_row(row: _GapRow) -> _GapTableRow:
    # without bubbles.MODE.SHAPE: the rule (a multiple of the shape's p50) is the binary's,
    # not guessed here
    m = row.stats.get("bubbles")
    return _GapTableRow(row.label, row.colour, len(row.gaps.samples),
                        [_stat_cell(row, kind, q) for kind, q in _GAP_STATS],
                        None if m is None else _num(median(m.samples)))


def _ratios(group: list[_GapSet]) -> list[_Ratio]:
    ratios = sorted((s for s in group if s.kind == "overhead"),
                    key=lambda s: (s.mode, s.subtest, s.gpu or 0))
    several = len({s.gpu for s in ratios}) > 1
    return [_Ratio(s.mode + (f" gpu{s.gpu}" if several else ""), _fmt(median(s.samples), s.unit),
                   len(s.samples)) for s in ratios]


def _gap_shape(group: list[_GapSet]) -> _GapShapeView:
    first = group[0]
    source = first.test + (f"@{first.dynamic}" if first.dynamic else "")
    rows = _gap_rows(group)
    plot = _gaps_plot(rows, f"dispatch gaps: {source}: {first.shape}")
    return _GapShapeView(source, first.shape, plot, [_gap_table_row(r) for r in rows],
                         _ratios(group))


def _gap_shapes(tests: Mapping[str, Any]) -> list[_GapShapeView]:
    """Per shape with gap metrics its plot and numbers; none without gap metrics."""
    groups = _gap_groups(_gap_sets(tests))
    return [_gap_shape(g) for g in groups if any(s.kind == "gap" for s in g)]


# -------------------------------------------------------------------- page


@dataclass(frozen=True)
class _Count:
    badge: Badge
    n: int


def _verdict_badge(verdict: str) -> Badge:
    return Badge(verdict, _VERDICT_COLOURS.get(verdict, "#424242"))


@dataclass(frozen=True)
class _MetricView:
    key: str
    unit: str
    better: str
    verdict: Badge | None  # None: no comparison with a baseline
    trend: bool  # kept for trends only
    explain: str
    plot: _StripBoxView | None  # gated or flagged metrics only: the rest is a table row
    summary: list[str]  # this run's n, median, p99, min, max (shown unit last)


# A metric's verdicts that a reader must see drawn, gated or not.
FLAGGED = ("regression", "improvement", "missing", "new", "insufficient")


def _summary(samples: Sequence[float], unit: str) -> list[str]:
    """n, median, p99, min and max of this run's samples, then the unit shown."""
    if not samples:
        return ["0", "", "", "", "", unit]
    factor, shown = _display_unit(unit, samples)
    ranked = _ranked(samples)
    stats = (median(ranked), quantile(ranked, 0.99), ranked[0], ranked[-1])
    return [str(len(samples)), *(_num(v * factor) for v in stats), shown]


@dataclass(frozen=True)
class _TestRow:
    name: str
    state: Badge
    duration: str
    reason: str
    skip_at: str
    notes: list[str]
    dynamic: list[tuple[str, Badge]]
    out: str  # clipped to MAX_OUTPUT_CHARS, as err
    err: str
    # The GPUs it ran on (placement.py): ("gpu2", "GPU-8f3c... 0000:1b:00.0", its state).
    gpus: list[tuple[str, str, Badge]] = field(default_factory=list)


@dataclass(frozen=True)
class _ContractCell:
    test: str
    state: Badge | None  # None: not in this run
    expect: str = ""  # what the sources say (contracts.EXPECT_STATES) where the table says it
    why: str = ""  # the source and the code


@dataclass(frozen=True)
class _ContractSide:
    cells: list[_ContractCell]
    reason: str  # why the vendor has no twin ("" when it has entries)
    missing: bool  # neither entries nor a reason: the table breaks its rule


@dataclass(frozen=True)
class _ContractRow:
    name: str
    sides: list[_ContractSide]


@dataclass(frozen=True)
class _ContractsView:
    table: str  # the table's path
    vendors: list[str]
    rows: list[_ContractRow]
    error: str  # the table could not be read: why (and no rows)
    counts: str = ""  # the AMD entries per expectation status, one line


@dataclass(frozen=True)
class _MachineView:
    key: str
    describe: str
    inputs: list[str]
    states: list[_Count]
    n_tests: int
    baselines: str


@dataclass(frozen=True)
class _Verdict:
    """The run's verdict, as its exit status and summary.txt say it."""
    line: str
    ok: bool


@dataclass(frozen=True)
class _Flagged:
    """One thing the verdict counts against the run, or one expected failure."""
    name: str
    badge: Badge
    why: str  # the reason (a test) or the gate's explanation with its limit (a metric)
    rule: str = ""  # the expectation rule that matched, where one did


@dataclass(frozen=True)
class _TestGroup:
    title: str
    rows: list[_TestRow]
    kind: str = "machine"  # or "area": the groups of one machine's run


@dataclass(frozen=True)
class _Page:
    title: str
    n_plots: int
    n_tests: int
    verdict: _Verdict
    unexpected: list[_Flagged]  # tests judged unexpected, then metric regressions
    expected: list[_Flagged]  # expected failures, with their rules
    states: list[_Count]  # most severe first; expected failures apart
    info: list[tuple[str, str]]  # the run's and the fingerprint's
    soaks: list[SoakView]  # tests with a growing series first
    gap_shapes: list[_GapShapeView]
    verdicts: list[_Count]
    metrics: list[_MetricView]
    durations: _BarChart | None
    test_groups: list[_TestGroup]
    contracts: _ContractsView | None
    machines: list[_MachineView]


def _metric_view(key: str, c: Mapping[str, Any] | None, m: Mapping[str, Any] | None
                 ) -> _MetricView:
    """A metric's comparison c with the baseline and its samples m in this run, either absent."""
    unit = str((c or m or {}).get("unit", ""))
    better = str((c or m or {}).get("better", ""))
    rows: list[tuple[str, Sequence[float], str]] = []
    mine = _samples(m) if m else []
    if c is None:
        return _MetricView(key, unit, better, None, False, "", None, _summary(mine, unit))
    verdict = str(c.get("verdict", ""))
    base = _floats(c.get("samples_base"))
    runs = _floats(c.get("samples_run")) or mine
    if c.get("trend") and verdict not in FLAGGED:
        return _MetricView(key, unit, better, _verdict_badge(verdict), True,
                           str(c.get("explain", "")), None, _summary(mine or runs, unit))
    if base:
        # a gate comparison's baseline: one statistic per clean run, not samples
        label = f"baseline: {len(base)} runs" if "baseline_runs" in c else f"baseline n={len(base)}"
        rows.append((label, base, _BASE_COLOUR))
    if runs:
        rows.append((f"this run n={len(runs)}", runs, _VERDICT_COLOURS.get(verdict, "#1565c0")))
    return _MetricView(key, unit, better, _verdict_badge(verdict), bool(c.get("trend")),
                       str(c.get("explain", "")), _distribution(rows, unit, key) if rows else None,
                       _summary(mine or runs, unit))


def _metric_views(data: Mapping[str, Any]) -> list[_MetricView]:
    """Every metric compared or recorded, regressions first, trends last."""
    comps = {_unnoded(str(c["key"])): c for c in _comparisons(data)}
    run = _run_metrics(data.get("tests") or {})
    order = {"regression": 0, "improvement": 1, "missing": 2, "new": 3, "insufficient": 4,
             "unchanged": 5, "trend": 6}
    keys = sorted(set(comps) | set(run),
                  key=lambda k: (order.get(str(comps.get(k, {}).get("verdict")), 6), k))
    return [_metric_view(k, comps.get(k), run.get(k)) for k in keys]


def _is_seconds(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _gpu_cells(rec: Mapping[str, Any]) -> list[tuple[str, str, Badge]]:
    """Each GPU the test ran on, with its UUID and address and the copy's state."""
    copies = [c for c in rec.get("placements") or [] if isinstance(c, Mapping)] or [rec]
    out = []
    for c in copies:
        g = c.get("gpu")
        if isinstance(g, Mapping) and "index" in g:
            out.append((f"gpu{g['index']}", f"{g.get('uuid', '')} {g.get('bus', '')}".strip(),
                        state_badge(str(c.get("result", "?")))))
    return out


def _test_row(name: str, rec: Mapping[str, Any]) -> _TestRow:
    dur = rec.get("duration")
    dyn = rec.get("dynamic") or {}
    dynamic = [(str(k), state_badge(str(v.get("result", "?")) if isinstance(v, dict) else "?"))
               for k, v in dyn.items()] if isinstance(dyn, dict) else []
    return _TestRow(
        name, record_badge(rec),
        f"{dur:.3f} s" if _is_seconds(dur) else "",
        str(rec["reason"]) if rec.get("reason") else "",
        str(rec["skip_at"]) if rec.get("skip_at") else "",
        [str(n) for n in rec.get("notes") or []], dynamic,
        _clip(str(rec.get("out", "")), MAX_OUTPUT_CHARS),
        _clip(str(rec.get("err", "")), MAX_OUTPUT_CHARS), _gpu_cells(rec))


def _test_rows(tests: Mapping[str, Any]) -> list[_TestRow]:
    """Failures first, then by name."""
    names = sorted(tests, key=lambda n: (-_severity(str(tests[n].get("result"))), n))
    return [_test_row(n, tests[n]) for n in names]


def _machine_groups(data: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """results.json's "fingerprints" of a merge (merge.py), well-formed ones only."""
    groups = data.get("fingerprints")
    if not isinstance(groups, list):
        return []
    return [g for g in groups if isinstance(g, Mapping) and isinstance(g.get("tests"), list)]


def _machines(data: Mapping[str, Any]) -> list[_MachineView]:
    tests: Mapping[str, Any] = data.get("tests") or {}
    out = []
    for g in _machine_groups(data):
        fp = g.get("fingerprint")
        names = [str(n) for n in g["tests"] if n in tests]
        states = _counts([str(tests[n].get("result", "?")) for n in names])
        out.append(_MachineView(
            str(g.get("key", "?")),
            Fingerprint.from_json(fp).describe() if isinstance(fp, Mapping) and fp
            else "no fingerprint recorded",
            [str(i) for i in g.get("inputs") or []],
            [_Count(state_badge(st), n) for st, n in sorted(states.items(),
                                                             key=lambda kv: -_severity(kv[0]))],
            len(names), ", ".join(str(b) for b in g.get("baselines") or []) or "none"))
    return out


def contract_area(test: str) -> str:
    """The contract area of BINARY@SUBTEST: the binary's name after its stack
    (cuda_mem, hip_mem: mem; cufile_io: io); selftests are one area."""
    binary = test.partition("@")[0]
    if binary.startswith("selftest"):
        return "selftest"
    return binary.partition("_")[2] or binary


def _area_groups(tests: Mapping[str, Any]) -> list[_TestGroup]:
    """The tests by contract area, areas by name, failures first in each."""
    areas: dict[str, dict[str, Any]] = {}
    for name, rec in tests.items():
        areas.setdefault(contract_area(name), {})[name] = rec
    return [_TestGroup(f"{area} ({len(recs)} test{'s' if len(recs) != 1 else ''})",
                       _test_rows(recs), "area") for area, recs in sorted(areas.items())]


def _test_groups(data: Mapping[str, Any]) -> list[_TestGroup]:
    """By contract area, or by machine when a merge has several."""
    tests: Mapping[str, Any] = data.get("tests") or {}
    groups = _machine_groups(data)
    if len(groups) < 2:
        return _area_groups(tests)
    out, seen = [], set()
    for g in groups:
        names = [str(n) for n in g["tests"] if n in tests and n not in seen]
        seen.update(names)
        out.append(_TestGroup(f"{g.get('key', '?')} ({len(names)} tests)",
                              _test_rows({n: tests[n] for n in names})))
    rest = {n: rec for n, rec in tests.items() if n not in seen}
    if rest:
        out.append(_TestGroup(f"no machine recorded ({len(rest)} tests)", _test_rows(rest)))
    return out


def _contracts(tests: Mapping[str, Any], table_path: Path) -> _ContractsView | None:
    """The contract table with this run's states; None when the run has no
    test of it; the error alone when the table cannot be read."""
    try:
        table = load_table(table_path)
    except ContractsError as e:
        return _ContractsView(display_path(table_path), [], [], str(e))
    if not any(test in tests for test in table.entries()):
        return None
    states = {name: str(rec.get("result", "?")) for name, rec in tests.items()}
    rows = view(table, states)
    vendors = [side.vendor for side in rows[0].sides] if rows else []
    return _ContractsView(display_path(table_path), vendors, [
        _ContractRow(r.name, [_ContractSide(
            [_ContractCell(c.test, None if c.state == "-" or c.state is None
                           else record_badge(tests[c.test]), c.expect, c.why)
             for c in side.cells],
            side.reason or "", side.missing) for side in r.sides])
        for r in rows], "", ", ".join(f"{n} {s}" for s, n in expectation_counts(table).items()))


def _info(data: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The run's host, kernel, times and timeout, then the fingerprint."""
    run = data.get("run") if isinstance(data.get("run"), dict) else {}
    fp = data.get("fingerprint") or (run or {}).get("fingerprint")
    info = []
    for k in ("hostname", "kernel", "start", "end", "timeout"):
        if run and k in run:
            v = run[k]
            if k in ("start", "end") and isinstance(v, (int, float)):
                v = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(v))
            info.append((k, str(v)))
    if isinstance(fp, dict):
        info.extend((str(k), str(v)) for k, v in fp.items())
    return info


def _counts(values: list[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for v in values:
        out[v] = out.get(v, 0) + 1
    return out


def _verdict(data: Mapping[str, Any]) -> _Verdict:
    """The line `gpuconform run` ended with (summary.txt's, the exit status's)."""
    try:
        out = outcome_of(data)
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        return _Verdict(f"no verdict: results.json cannot give one ({e})", False)
    return _Verdict(f"gpuconform: {out.line}", out.status == 0)


def _unexpected(data: Mapping[str, Any]) -> list[_Flagged]:
    """What the verdict counts: tests judged unexpected (failures without a
    rule, flakes, fixed tests), then metric regressions with their limit."""
    tests: Mapping[str, Any] = data.get("tests") or {}
    out = []
    for name in sorted(tests, key=lambda n: (-_severity(str(tests[n].get("result"))), n)):
        rec = tests[name]
        judged = rec.get("expected")
        if judged is False or (judged is None and failed(str(rec.get("result", "?")))):
            why = str(rec.get("judgement") or rec.get("reason") or "")
            final = rec.get("final")
            badge = (Badge(f"{rec.get('result')}, {final}", STATE_COLOURS["fail"])
                     if final == "flake" else state_badge(str(rec.get("result", "?"))))
            out.append(_Flagged(name, badge, why))
    run = data.get("run") if isinstance(data.get("run"), Mapping) else {}
    options = run.get("options") if isinstance(run.get("options"), Mapping) else {}
    if options.get("regressions_expected"):  # --regressions-expected: they do not count
        return out
    for c in _comparisons(data):
        if c.get("verdict") == "regression":
            out.append(_Flagged(str(c["key"]), _verdict_badge("regression"),
                                str(c.get("explain", ""))))
    return out


def _expected_failures(tests: Mapping[str, Any]) -> list[_Flagged]:
    return [_Flagged(name, record_badge(rec), str(rec.get("reason") or ""),
                     str(rec.get("rule") or ""))
            for name, rec in sorted(tests.items()) if expected_failure(rec)]


def _state_counts(tests: Mapping[str, Any]) -> list[_Count]:
    """Per state its count, most severe first; expected failures counted apart."""
    counts: dict[str, tuple[Badge, int, int]] = {}
    for rec in tests.values():
        b = record_badge(rec)
        sev = _severity(str(rec.get("result", "?"))) - (100 if expected_failure(rec) else 0)
        _, n, _ = counts.get(b.text, (b, 0, sev))
        counts[b.text] = (b, n + 1, sev)
    return [_Count(b, n) for b, n, _ in sorted(counts.values(), key=lambda t: -t[2])]


def _page(data: Mapping[str, Any], title: str, contracts_table: Path) -> _Page:
    tests: Mapping[str, Any] = data.get("tests") or {}
    verdicts = _counts([str(c.get("verdict")) for c in _comparisons(data)])
    metrics = _metric_views(data)
    gap_shapes = _gap_shapes(tests)
    soaks = soak_views(tests)
    durations = [(name, float(rec["duration"]), STATE_COLOURS.get(str(rec.get("result")), "#000"))
                 for name, rec in tests.items()
                 if _is_seconds(rec.get("duration")) and math.isfinite(rec["duration"])
                 and rec.get("result") != "notrun"]
    n_plots = (sum(1 for m in metrics if m.plot) + len(gap_shapes) + (1 if durations else 0)
               + sum(1 for k in soaks for s in k.series if s.plot))
    return _Page(
        title, n_plots, len(tests), _verdict(data), _unexpected(data),
        _expected_failures(tests), _state_counts(tests), _info(data), soaks, gap_shapes,
        [_Count(_verdict_badge(v), n) for v, n in sorted(verdicts.items())],
        metrics, _durations(durations) if durations else None, _test_groups(data),
        _contracts(tests, contracts_table), _machines(data))


def render_html(data: Mapping[str, Any], title: str = "gpuconform results",
                contracts_table: Path = TABLE_PATH) -> str:
    """The report page of parsed results.json data (contracts_table: the
    contract table its section shows)."""
    return environment(TEMPLATES).get_template("report.html.j2").render(
        page=_page(data, title, contracts_table))


def write_html(results_dir: Path) -> Path:
    """results_dir/report.html from results_dir/results.json; returns its
    path. DocError (one line) when results.json is unusable."""
    results_dir = Path(results_dir)
    data = load_results(results_dir / "results.json")
    page = render_html(data, title=f"gpuconform results: {results_dir.name}")
    out = results_dir / REPORT_NAME
    try:
        atomic_write(out, page)
    except OSError as e:
        raise DocError(f"{out}: cannot write report: {e.strerror or e}") from None
    return out
