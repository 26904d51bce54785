"""RESULTS/report.html: one self-contained page (no network, no external file).

    write_html(results_dir) -> results_dir/report.html

From results_dir/results.json:
  - a summary (totals, the run, the fingerprint, the metric verdicts);
  - per metric an inline SVG strip + box plot: the baseline's runs (one
    good-half mean each: what the gate compares) and this run's samples,
    medians marked, with the comparison's verdict and its evidence, and a
    mark on metrics the baseline keeps for trends only (results.json
    "comparisons": judge.GateComparison.to_json(); a run without them
    plots this run's samples alone);
  - where the run holds gap.MODE.SHAPE metrics (the bubbles binaries), a
    "Dispatch gaps" section: per shape one plot of every mode's gaps on a
    shared axis, p50 / p99 / max and bubbles per mode beside it, the
    shape's overhead ratios below;
  - per test its duration, a bar chart sorted longest first;
  - the results table, failures first, states in colour, every reason, note
    and output escaped (test output can contain anything).

Plots are <svg class="plot"> drawn here; a small inline script counts those
with a non-empty bounding box once laid out and writes the count to
<body data-plots>, so a headless browser can prove they rendered. A
Content-Security-Policy forbids every fetch: the page cannot reach out.
"""

from __future__ import annotations

import html
import math
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from .atomic import atomic_write
from .baseline import BaselineError
from .runmetrics import load_results
from .stats import median, quantile
from .states import State

__all__ = ["write_html", "render_html", "REPORT_NAME"]

REPORT_NAME = "report.html"
MAX_POINTS = 1500  # per distribution drawn; more are thinned evenly
MAX_BARS = 400
MAX_OUTPUT_CHARS = 64 * 1024  # per stream in the table; the rest is in results.json

_CONTROL_RE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_STATE_COLOURS = {
    "pass": "#2e7d32", "skip": "#757575", "notrun": "#9e9e9e", "fail": "#c62828",
    "crash": "#8e0000", "timeout": "#ef6c00", "abort": "#6a1b9a", "incomplete": "#f9a825",
    "error": "#ad1457", "dmesg-warn": "#f9a825", "dmesg-fail": "#c62828",
}
_VERDICT_COLOURS = {
    "regression": "#c62828", "improvement": "#2e7d32", "unchanged": "#1565c0",
    "trend": "#546e7a", "new": "#6a1b9a", "missing": "#ef6c00", "insufficient": "#757575",
}
_BASE_COLOUR = "#78909c"


def _clean(text: Any) -> str:
    """Any value as text safe to escape: no lone surrogates, control
    characters shown as \\xNN."""
    s = str(text).encode("utf-8", "replace").decode("utf-8")
    return _CONTROL_RE.sub(lambda m: f"\\x{ord(m.group()):02x}", s)


def _e(text: Any) -> str:
    return html.escape(_clean(text), quote=True)


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


def _nice_ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    if hi <= lo:
        return [lo]
    raw = (hi - lo) / count
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    start = math.ceil(lo / step) * step
    ticks = []
    t = start
    while t <= hi + step * 1e-9:
        ticks.append(0.0 if abs(t) < step * 1e-9 else t)
        t += step
    return ticks


def _thin(values: Sequence[float], limit: int) -> list[float]:
    if len(values) <= limit:
        return list(values)
    step = len(values) / limit
    return [values[int(i * step)] for i in range(limit)]


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
        return _log_ticks(self.lo, self.hi) if self.log else _nice_ticks(self.lo, self.hi)


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


def _axis_svg(axis: _Axis, top: int, axis_y: float, shown_unit: str, note: str) -> list[str]:
    """Grid lines at the ticks, their labels, the axis line, its unit and a note."""
    parts = []
    for t in axis.ticks():
        tx = axis.x(t)
        parts.append(f'<line x1="{tx:.1f}" y1="{top}" x2="{tx:.1f}" y2="{axis_y}" '
                     f'stroke="#e0e0e0"/>')
        parts.append(f'<text x="{tx:.1f}" y="{axis_y + 14}" font-size="11" '
                     f'text-anchor="middle">{_e(_num(t))}</text>')
    end = axis.left + axis.width
    parts.append(f'<line x1="{axis.left}" y1="{axis_y}" x2="{end}" y2="{axis_y}" '
                 f'stroke="#424242"/>')
    parts.append(f'<text x="{end}" y="{axis_y + 30}" font-size="11" '
                 f'text-anchor="end">{_e(shown_unit)}</text>')
    if note:
        parts.append(f'<text x="{axis.left}" y="{axis_y + 30}" font-size="11" '
                     f'fill="#757575">{_e(note)}</text>')
    return parts


def _row_svg(label: str, vals: Sequence[float], points: Sequence[float], colour: str,
             cy: float, axis: _Axis, shown_unit: str) -> list[str]:
    """One row of a strip + box plot: label, quartiles' box, a line from min
    to max, the points (jittered) and the median; values in the shown unit."""
    x = axis.x
    parts = [f'<text x="{axis.left - 8}" y="{cy + 4:.1f}" font-size="12" '
             f'text-anchor="end">{_e(label)}</text>']
    q1, q2, q3 = quantile(vals, 0.25), median(vals), quantile(vals, 0.75)
    parts.append(f'<rect x="{x(q1):.1f}" y="{cy - 14:.1f}" '
                 f'width="{max(x(q3) - x(q1), 1.0):.1f}" height="28" fill="{colour}" '
                 f'fill-opacity="0.15" stroke="{colour}"/>')
    parts.append(f'<line x1="{x(min(vals)):.1f}" y1="{cy:.1f}" x2="{x(max(vals)):.1f}" '
                 f'y2="{cy:.1f}" stroke="{colour}" stroke-opacity="0.5"/>')
    for j, v in enumerate(points):
        jitter = ((j * 37) % 23 - 11) * 1.0  # deterministic spread, +-11 px
        parts.append(f'<circle cx="{x(v):.1f}" cy="{cy + jitter:.1f}" r="2.2" '
                     f'fill="{colour}" fill-opacity="0.6"/>')
    parts.append(f'<line class="median" x1="{x(q2):.1f}" y1="{cy - 18:.1f}" '
                 f'x2="{x(q2):.1f}" y2="{cy + 18:.1f}" stroke="{colour}" '
                 f'stroke-width="3"><title>median {_e(_num(q2))} {_e(shown_unit)}'
                 f'</title></line>')
    return parts


def _strip_box_svg(rows: list[tuple[str, list[float], str]], axis: _Axis, shown_unit: str,
                   title: str, thin: Callable[[list[float]], list[float]],
                   note: str = "") -> str:
    """Rows [(label, values in the shown unit, colour)] on one axis; thin
    picks the points drawn of a row's values."""
    width, row_h, top = axis.left + axis.width + 20, 46, 10
    height = top + row_h * len(rows) + 38
    axis_y = top + row_h * len(rows) + 4
    parts = [f'<svg class="plot" role="img" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}"><title>{_e(title)}</title>']
    parts.extend(_axis_svg(axis, top, axis_y, shown_unit, note))
    for i, (label, vals, colour) in enumerate(rows):
        parts.extend(_row_svg(label, vals, thin(vals), colour, top + row_h * i + row_h / 2,
                              axis, shown_unit))
    parts.append("</svg>")
    return "".join(parts)


def _distribution_svg(rows: list[tuple[str, Sequence[float], str]], unit: str,
                      title: str) -> str:
    """Strip plot with a box (quartiles) and the median per row:
    rows = [(label, samples, colour)]."""
    factor, shown_unit = _display_unit(unit, [v for _, s, _ in rows for v in s])
    scaled = [(label, [v * factor for v in s], colour) for label, s, colour in rows]
    allv = [v for _, s, _ in scaled for v in s]
    lo, hi = _padded(min(allv), max(allv))
    return _strip_box_svg(scaled, _Axis(lo, hi, 130, 610), shown_unit, title,
                          lambda v: _thin(v, MAX_POINTS))


def _durations_svg(items: list[tuple[str, float, str]]) -> str:
    """Horizontal bars, longest first: items = [(name, seconds, colour)]."""
    items = sorted(items, key=lambda t: (-t[1], t[0]))[:MAX_BARS]
    width, label_w, right, bar_h, top = 900, 380, 90, 16, 6
    plot_w = width - label_w - right
    height = top + bar_h * len(items) + 28
    longest = max((s for _, s, _ in items), default=0.0) or 1.0
    parts = [f'<svg class="plot" role="img" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}"><title>durations</title>']
    for i, (name, secs, colour) in enumerate(items):
        y = top + i * bar_h
        w = max(secs / longest * plot_w, 1.0)
        shown = name if len(name) <= 60 else name[:57] + "..."
        parts.append(f'<text x="{label_w - 6}" y="{y + 12}" font-size="11" '
                     f'text-anchor="end">{_e(shown)}</text>')
        parts.append(f'<rect x="{label_w}" y="{y + 2}" width="{w:.1f}" height="{bar_h - 4}" '
                     f'fill="{colour}"><title>{_e(name)}: {secs:.3f} s</title></rect>')
        parts.append(f'<text x="{label_w + w + 4:.1f}" y="{y + 12}" font-size="11">'
                     f'{secs:.3f} s</text>')
    axis_y = top + bar_h * len(items) + 2
    parts.append(f'<line x1="{label_w}" y1="{axis_y}" x2="{label_w + plot_w}" y2="{axis_y}" '
                 f'stroke="#424242"/>')
    parts.append(f'<text x="{label_w + plot_w}" y="{axis_y + 16}" font-size="11" '
                 f'text-anchor="end">seconds (longest {longest:.3f} s)</text>')
    parts.append("</svg>")
    return "".join(parts)


# ------------------------------------------------------------------- model


def _severity(state: str) -> int:
    try:
        return State(state).severity
    except ValueError:
        return len(State)  # unknown states are shown first: something to look at


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
    out: dict[str, dict[str, Any]] = {}
    for rec in tests.values():
        for m in rec.get("metrics") or []:
            dyn = m.get("dynamic")
            key = f"{m['test']}@{m['subtest']}" + (f"@{dyn}" if dyn else "") + f":{m['name']}"
            out[key] = m
    return out


# ------------------------------------------------------------ dispatch gaps
#
# The bubbles binaries (cuda_bubbles, hip_bubbles) record, per MODE and SHAPE:
# gap.MODE.SHAPE (a subsample of the gaps between dependent kernels),
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
GAP_PLOT_LEFT, GAP_PLOT_W = 130, 460  # label column, plot area (pixels): the table fits beside
GAP_TAIL_POINTS = MAX_POINTS // 10  # the largest gaps, always drawn
GAP_LABEL_CHARS = 22


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
    samples: tuple[float, ...]


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
            samples = tuple(_floats(m.get("samples")))
            if parsed is None or not samples:
                continue
            out.append(_GapSet(str(m.get("test", "")), str(m.get("dynamic") or ""),
                               str(m.get("subtest", "")), *parsed, str(m.get("unit", "")),
                               samples))
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
    """The KIND metric of gaps' mode: from gaps' own subtest, else the only
    one where no other subtest recorded gaps of that mode (it could be theirs)."""
    found = [s for s in group if s.kind == kind and s.mode == gaps.mode]
    same = [s for s in found if s.subtest == gaps.subtest]
    if same:
        return same[0]
    shared = any(s.kind == "gap" and s.mode == gaps.mode and s.subtest != gaps.subtest
                 for s in group)
    return found[0] if len(found) == 1 and not shared else None


def _gap_rows(group: list[_GapSet]) -> list[_GapRow]:
    """One row per gap metric, modes in GAP_MODES order; a mode recorded by
    more than one subtest is labelled with the subtest."""
    gaps = sorted((s for s in group if s.kind == "gap"),
                  key=lambda s: (_rank(s.mode, GAP_MODES), s.subtest))
    per_mode: dict[str, int] = {}
    for g in gaps:
        per_mode[g.mode] = per_mode.get(g.mode, 0) + 1
    rows = []
    for g in gaps:
        label = g.mode if per_mode[g.mode] == 1 else f"{g.mode} @{g.subtest}"
        stats = {k: s for k in ("gap-p50", "gap-p99", "gap-max", "bubbles")
                 if (s := _row_stat(group, g, k)) is not None}
        rows.append(_GapRow(label, _MODE_COLOURS.get(g.mode, _OTHER_MODE_COLOUR), g, stats))
    return rows


def _thin_keep_tail(values: list[float]) -> list[float]:
    """At most MAX_POINTS of values: the GAP_TAIL_POINTS largest (the
    bubbles are what a gap plot is for), the rest thinned evenly in order."""
    if len(values) <= MAX_POINTS:
        return values
    cut = sorted(values)[-GAP_TAIL_POINTS]
    tail = [v for v in values if v >= cut][-GAP_TAIL_POINTS:]
    return _thin([v for v in values if v < cut], MAX_POINTS - len(tail)) + tail


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
    return label if len(label) <= GAP_LABEL_CHARS else label[:GAP_LABEL_CHARS - 3] + "..."


def _gaps_svg(rows: list[_GapRow], title: str) -> str:
    """Every row's gaps on one axis, in the unit that suits their median."""
    unit = rows[0].gaps.unit
    factor, shown_unit = _display_unit(unit, [v for r in rows for v in r.gaps.samples])
    scaled = [(_short(r.label), [v * factor for v in r.gaps.samples], r.colour) for r in rows]
    axis = _gap_axis([v for _, vals, _ in scaled for v in vals])
    clamped = sum(1 for _, vals, _ in scaled for v in vals if v < axis.lo) if axis.log else 0
    note = f"{clamped} gaps <= 0 drawn at the left end" if clamped else ""
    return _strip_box_svg(scaled, axis, shown_unit + (" (log scale)" if axis.log else ""),
                          title, _thin_keep_tail, note)


def _fmt(v: float, unit: str) -> str:
    """A value in the unit that suits it: 1234 ns -> 1.234 us; 'x' attached."""
    factor, shown = _display_unit(unit, [v])
    return f"{_num(v * factor)}{shown}" if shown == "x" else f"{_num(v * factor)} {shown}"


def _stat_cell(row: _GapRow, kind: str, q: float) -> str:
    """The recorded KIND (over all gaps) or, without it, the subsample's quantile q."""
    m = row.stats.get(kind)
    if m is not None:
        return _e(_fmt(median(m.samples), m.unit))
    return (f"{_e(_fmt(quantile(row.gaps.samples, q), row.gaps.unit))}"
            '<br><span class="muted">of the subsample</span>')


def _bubbles_cell(row: _GapRow) -> str:
    m = row.stats.get("bubbles")
    if m is None:  # the rule (a multiple of the shape's p50) is the binary's: not guessed here
        return '<span class="muted">not recorded</span>'
    return _e(_num(median(m.samples)))


def _gap_table(rows: list[_GapRow]) -> str:
    out = ['<table class="gapstats"><tr><th>mode</th><th>n</th><th>p50</th><th>p99</th>'
           "<th>max</th><th>bubbles</th></tr>"]
    for r in rows:
        cells = [_stat_cell(r, kind, q) for kind, q in _GAP_STATS] + [_bubbles_cell(r)]
        out.append(f'<tr><td><span style="color:{r.colour}">&#9632;</span> {_e(r.label)}</td>'
                   f"<td>{len(r.gaps.samples)}</td>"
                   + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    out.append("</table>")
    return "".join(out)


def _overhead_list(group: list[_GapSet]) -> str:
    ratios = sorted((s for s in group if s.kind == "overhead"), key=lambda s: (s.mode, s.subtest))
    if not ratios:
        return '<div class="explain muted">no overhead ratios recorded for this shape</div>'
    items = []
    for s in ratios:
        many = f" (median of {len(s.samples)})" if len(s.samples) > 1 else ""
        items.append(f"<li>{_e(s.mode)}: {_e(_fmt(median(s.samples), s.unit))}{many}</li>")
    return '<ul class="overheads">' + "".join(items) + "</ul>"


def _gap_group_html(group: list[_GapSet]) -> str:
    first = group[0]
    source = first.test + (f"@{first.dynamic}" if first.dynamic else "")
    rows = _gap_rows(group)
    title = f"dispatch gaps: {source}: {first.shape}"
    return (f'<div class="gapshape" id="gaps-{_e(source)}-{_e(first.shape)}">'
            f'<h3>{_e(first.shape)} <span class="muted">{_e(source)}</span></h3>'
            f'<div class="gaprow">{_gaps_svg(rows, title)}{_gap_table(rows)}</div>'
            f"{_overhead_list(group)}</div>")


def _gap_section(tests: Mapping[str, Any]) -> tuple[list[str], int]:
    """The "Dispatch gaps" section and its plot count; nothing without gap metrics."""
    groups = [g for g in _gap_groups(_gap_sets(tests)) if any(s.kind == "gap" for s in g)]
    if not groups:
        return [], 0
    out = ['<h2 id="gaps">Dispatch gaps</h2>',
           '<p class="explain">Idle time between dependent kernels, from the kernels\' own '
           "device timestamps: per shape, every mode's gaps on one axis (box: quartiles, "
           "bar: median, dots: gaps, the largest always drawn). p50 / p99 / max are over all "
           "gaps where the binary recorded them, else of the subsample plotted; bubbles: gaps "
           "over the binary's stated multiple of the shape's p50.</p>"]
    out.extend(_gap_group_html(g) for g in groups)
    return out, len(groups)


# -------------------------------------------------------------------- page

_CSS = """
body{font-family:system-ui,sans-serif;margin:1.5em;color:#212121;max-width:1200px}
h1{font-size:1.4em}h2{font-size:1.15em;margin-top:1.6em;border-bottom:1px solid #ccc}
table{border-collapse:collapse;width:100%;font-size:13px}
td,th{border:1px solid #ddd;padding:3px 6px;vertical-align:top;text-align:left}
th{background:#f5f5f5}
.state{color:#fff;font-weight:bold;border-radius:3px;padding:1px 6px;white-space:nowrap}
.verdict{color:#fff;font-weight:bold;border-radius:3px;padding:1px 6px}
.metric{margin:1em 0;padding:.5em;border:1px solid #e0e0e0;border-radius:4px}
.explain{font-size:13px;margin:.3em 0}
pre{white-space:pre-wrap;word-break:break-all;background:#fafafa;border:1px solid #eee;
padding:4px;max-height:30em;overflow:auto;font-size:12px}
.muted{color:#757575}
.gaprow{display:flex;flex-wrap:wrap;align-items:flex-start;gap:1em}
table.gapstats{width:auto;flex:1 1 0;font-size:12px}
table.gapstats td:first-child{white-space:nowrap}h3{font-size:1em;margin:1em 0 .3em}
"""

_SCRIPT = """
(function () {
  var plots = document.querySelectorAll('svg.plot'), drawn = 0;
  for (var i = 0; i < plots.length; i++) {
    var b = plots[i].getBBox();
    if (b.width > 0 && b.height > 0) drawn++;
  }
  document.body.dataset.plots = String(drawn);
})();
"""


def _verdict_badge(verdict: str) -> str:
    colour = _VERDICT_COLOURS.get(verdict, "#424242")
    return f'<span class="verdict" style="background:{colour}">{_e(verdict)}</span>'


def _state_badge(state: str) -> str:
    colour = _STATE_COLOURS.get(state, "#000")
    return f'<span class="state" style="background:{colour}">{_e(state)}</span>'


def _metric_sections(data: Mapping[str, Any]) -> tuple[list[str], int]:
    tests: Mapping[str, Any] = data.get("tests") or {}
    comps = {c["key"]: c for c in _comparisons(data)}
    run = _run_metrics(tests)
    order = {"regression": 0, "improvement": 1, "missing": 2, "new": 3, "insufficient": 4,
             "unchanged": 5, "trend": 6}
    keys = sorted(set(comps) | set(run),
                  key=lambda k: (order.get(str(comps.get(k, {}).get("verdict")), 6), k))
    out: list[str] = []
    plots = 0
    for key in keys:
        c = comps.get(key)
        m = run.get(key)
        unit = str((c or m or {}).get("unit", ""))
        better = str((c or m or {}).get("better", ""))
        rows: list[tuple[str, Sequence[float], str]] = []
        if c is not None:
            verdict = str(c.get("verdict", ""))
            base = _floats(c.get("samples_base"))
            runs = _floats(c.get("samples_run")) or (_floats(m.get("samples")) if m else [])
            if base:
                # a gate comparison's baseline: one statistic per clean run, not samples
                label = (f"baseline: {len(base)} runs" if "baseline_runs" in c
                         else f"baseline n={len(base)}")
                rows.append((label, base, _BASE_COLOUR))
            if runs:
                rows.append((f"this run n={len(runs)}", runs,
                             _VERDICT_COLOURS.get(verdict, "#1565c0")))
            head = f"{_verdict_badge(verdict)} "
            if c.get("trend"):
                head += '<span class="muted">(trend only: never fails a night)</span> '

            explain = f'<div class="explain">{_e(c.get("explain", ""))}</div>'
        else:
            runs = _floats(m.get("samples")) if m else []
            if runs:
                rows.append((f"this run n={len(runs)}", runs, "#1565c0"))
            head = ""
            explain = '<div class="explain muted">no baseline comparison in this run</div>'
        out.append(f'<div class="metric" id="metric-{_e(key)}">')
        out.append(f"<div>{head}<b>{_e(key)}</b> "
                   f'<span class="muted">({_e(unit)}, {_e(better)} is better)</span></div>')
        out.append(explain)
        if rows:
            out.append(_distribution_svg(rows, unit, key))
            plots += 1
        out.append("</div>")
    return out, plots


def _results_table(tests: Mapping[str, Any]) -> list[str]:
    names = sorted(tests, key=lambda n: (-_severity(str(tests[n].get("result"))), n))
    out = ['<table id="results"><tr><th>test</th><th>state</th><th>time</th>'
           "<th>reason, notes, output</th></tr>"]
    for name in names:
        rec = tests[name]
        state = str(rec.get("result", "?"))
        dur = rec.get("duration")
        dur_s = f"{dur:.3f} s" if isinstance(dur, (int, float)) and not isinstance(dur, bool) \
            else ""
        cell = []
        if rec.get("reason"):
            cell.append(f"<div>{_e(rec['reason'])}</div>")
        if rec.get("skip_at"):
            cell.append(f'<div class="muted">skipped at {_e(rec["skip_at"])}</div>')
        for n in rec.get("notes") or []:
            cell.append(f'<div class="muted">{_e(n)}</div>')
        dyn = rec.get("dynamic") or {}
        if isinstance(dyn, dict) and dyn:
            items = ", ".join(
                f"{_e(k)}: "
                + _state_badge(str(v.get("result", "?")) if isinstance(v, dict) else "?")
                for k, v in dyn.items())
            cell.append(f"<div>dynamic: {items}</div>")
        out_text, err_text = str(rec.get("out", "")), str(rec.get("err", ""))
        if out_text or err_text:
            cell.append("<details><summary>output</summary>")
            if out_text:
                cell.append(f"<div class='muted'>stdout</div><pre>"
                            f"{_e(_clip(out_text, MAX_OUTPUT_CHARS))}</pre>")
            if err_text:
                cell.append(f"<div class='muted'>stderr</div><pre>"
                            f"{_e(_clip(err_text, MAX_OUTPUT_CHARS))}</pre>")
            cell.append("</details>")
        out.append(f'<tr class="state-{_e(state)}"><td>{_e(name)}</td>'
                   f"<td>{_state_badge(state)}</td><td>{_e(dur_s)}</td>"
                   f"<td>{''.join(cell)}</td></tr>")
    out.append("</table>")
    return out


def render_html(data: Mapping[str, Any], title: str = "gpuconform results") -> str:
    """The report page of parsed results.json data."""
    tests: Mapping[str, Any] = data.get("tests") or {}
    run = data.get("run") if isinstance(data.get("run"), dict) else {}
    fp = data.get("fingerprint") or (run or {}).get("fingerprint")
    counts: dict[str, int] = {}
    for rec in tests.values():
        s = str(rec.get("result", "?"))
        counts[s] = counts.get(s, 0) + 1
    comps = _comparisons(data)
    vcounts: dict[str, int] = {}
    for c in comps:
        vcounts[str(c.get("verdict"))] = vcounts.get(str(c.get("verdict")), 0) + 1

    metric_html, n_metric_plots = _metric_sections(data)
    gap_html, n_gap_plots = _gap_section(tests)
    durations = [(name, float(rec["duration"]), _STATE_COLOURS.get(str(rec.get("result")), "#000"))
                 for name, rec in tests.items()
                 if isinstance(rec.get("duration"), (int, float))
                 and not isinstance(rec.get("duration"), bool)
                 and math.isfinite(rec["duration"]) and rec.get("result") != "notrun"]
    n_plots = n_metric_plots + n_gap_plots + (1 if durations else 0)

    p: list[str] = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        # no fetch of any kind: scripts and styles only inline
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
        "style-src 'unsafe-inline'; script-src 'unsafe-inline'\">",
        f"<title>{_e(title)}</title><style>{_CSS}</style></head>",
        f'<body data-plots="0" data-plots-expected="{n_plots}">',
        f"<h1>{_e(title)}</h1>",
        "<p>" + ", ".join(f"{_state_badge(s)} {n}" for s, n in
                          sorted(counts.items(), key=lambda kv: -_severity(kv[0])))
        + f" &mdash; {len(tests)} tests</p>",
    ]
    info = []
    if run:
        for k in ("hostname", "kernel", "start", "end", "timeout"):
            if k in run:
                v = run[k]
                if k in ("start", "end") and isinstance(v, (int, float)):
                    v = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(v))
                info.append(f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>")
    if isinstance(fp, dict):
        for k, v in fp.items():
            info.append(f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>")
    if info:
        p.append('<table id="run" style="width:auto">' + "".join(info) + "</table>")

    p.extend(gap_html)  # before the per-metric plots, which can run to hundreds
    p.append('<h2 id="metrics">Metrics</h2>')
    if comps:
        p.append("<p>" + ", ".join(f"{_verdict_badge(v)} {n}" for v, n in sorted(vcounts.items()))
                 + "</p>")
    elif not metric_html:
        p.append('<p class="muted">no metrics in this run</p>')
    else:
        p.append('<p class="muted">no baseline comparison in this run</p>')
    p.extend(metric_html)

    p.append('<h2 id="durations">Durations</h2>')
    if durations:
        if len(durations) > MAX_BARS:
            p.append(f'<p class="muted">the {MAX_BARS} longest of {len(durations)}</p>')
        p.append(_durations_svg(durations))
    else:
        p.append('<p class="muted">no test ran</p>')

    p.append('<h2 id="tests">Tests</h2>')
    p.extend(_results_table(tests))
    p.append(f"<script>{_SCRIPT}</script></body></html>")
    return "\n".join(p) + "\n"


def write_html(results_dir: Path) -> Path:
    """results_dir/report.html from results_dir/results.json; returns its
    path. BaselineError (one line) when results.json is unusable."""
    results_dir = Path(results_dir)
    data = load_results(results_dir / "results.json")
    page = render_html(data, title=f"gpuconform results: {results_dir.name}")
    out = results_dir / REPORT_NAME
    try:
        atomic_write(out, page)
    except OSError as e:
        raise BaselineError(f"{out}: cannot write report: {e.strerror or e}") from None
    return out
