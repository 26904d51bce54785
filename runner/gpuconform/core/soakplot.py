"""A soak's series drawn small: y against cycles, the fitted slope over its
window, the verdict; what report.html and qualification.html both show.

A soak (lib/soak.h; results.json "tests"[NAME]["soaks"], and the
qualification record's "soaks", which keep the same keys) holds series:

    {"name": "rss", "unit": "KiB", "x": [cycles...], "y": [values...],
     "from": 250, "to": 1234, "slope": 0.0021, "growth": 2.07,
     "relative": 0.001, "bound": "...", "verdict": "ok" | "grows" | "few-samples"}

    series_view(series)       one series: its numbers as text and its plot
    soak_view(test, soak)     one soak: what a cycle is, level, cycles, seconds,
                              whether its budget cut it short, its series
    soak_views(tests)         every soak of results.json's "tests", the tests
                              with a growing series first

The fitted line is drawn over the window [from, to] through the median of y
in the window at the window's middle: y = median + slope * (x - xmid). A
Theil-Sen fit passes near that point, and the line drawn so shows the slope
the verdict was given on against the points it was fitted to. The warm-up
(cycles before "from", not fitted) is shaded. A series that grows is drawn
red on a red ground, its verdict in capitals: a leak is seen at a glance.

Anything malformed (a missing field, a non-number) is shown as "?", never an
exception: the page of a broken run must still render. The markup is the
macros of templates/soakplot.svg.j2; this module computes the positions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from .fmt import nice_ticks
from .stats import median

__all__ = ["SeriesPlot", "SeriesView", "SoakView", "series_view", "soak_view", "soak_views",
           "VERDICT_COLOURS", "GROWS"]

GROWS = "grows"
VERDICT_COLOURS = {"ok": "#2e7d32", GROWS: "#c62828", "few-samples": "#757575"}
_OTHER_COLOUR = "#424242"
_LINE_COLOURS = {"ok": "#1565c0", GROWS: "#c62828", "few-samples": "#757575"}
_FIT_COLOURS = {"ok": "#ef6c00", GROWS: "#8e0000"}

# Geometry, pixels: the plot area [LEFT, RIGHT] x [TOP, BOTTOM] of a W x H box.
W, H = 270, 150
LEFT, RIGHT, TOP, BOTTOM = 54, 262, 18, 118
MAX_POINTS = 512  # the spec's limit; more are thinned evenly
MAX_DOTS = 64  # a dot per sample up to this many; beyond, the line alone


@dataclass(frozen=True)
class SeriesPlot:
    """One series' SVG: positions in pixels, labels as text."""
    title: str
    width: int
    height: int
    left: int
    right: int
    top: int
    bottom: int
    grows: bool
    line: str  # the line's colour
    fit_colour: str
    ground: str  # the plot area's fill
    warmup: tuple[float, float] | None  # x1, x2 of the shaded warm-up
    points: str  # polyline "x,y x,y ..."
    dots: list[tuple[float, float]]
    fit: tuple[float, float, float, float] | None  # x1, y1, x2, y2 of the fitted line
    xticks: list[tuple[float, str]]
    yticks: list[tuple[float, str]]
    xlabel_y: int  # the cycles' labels
    caption_y: int  # "cycles", under them at the right
    unit: str  # the y unit, above the y labels


@dataclass(frozen=True)
class SeriesView:
    name: str
    unit: str
    verdict: str
    colour: str  # the verdict's
    grows: bool
    fitted: bool  # a slope was fitted (not too few samples)
    slope: str  # "0.0021 KiB/cycle", "?" when not fitted
    growth: str  # "2.07 KiB"
    relative: str  # "0.1%"
    window: str  # "cycles 250 to 1234"
    bound: str
    samples: int
    plot: SeriesPlot | None  # None: no sample to draw


@dataclass(frozen=True)
class SoakView:
    test: str  # BINARY@SUBTEST[@DYNAMIC]
    soak: str
    cycle: str  # what one cycle is
    level: str
    cycles: str
    seconds: str
    grows: bool  # some series grows
    series: list[SeriesView]
    stopped: str = ""  # "stopped by its 20 s budget after 9800 of 256000 cycles", or ""


def _number(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        return None
    return float(v)


def _text(v: Any) -> str:
    return "?" if v is None else str(v)


def num(v: float | None) -> str:
    """4 significant digits; "?" for none."""
    if v is None:
        return "?"
    return "0" if v == 0 else f"{v:.4g}"


def _count(v: Any) -> str:
    """A count of cycles in full; "?" for anything else."""
    return str(v) if isinstance(v, int) and not isinstance(v, bool) else "?"


def _pct(v: float | None) -> str:
    return "?" if v is None else f"{100 * v:.3g}%"


def _padded(lo: float, hi: float) -> tuple[float, float]:
    pad = (hi - lo) * 0.06 if hi > lo else abs(lo) * 0.01 or 1.0
    return lo - pad, hi + pad


def _pairs(series: Mapping[str, Any]) -> list[tuple[float, float]]:
    """The (x, y) samples that are both numbers, thinned to MAX_POINTS."""
    xs, ys = series.get("x"), series.get("y")
    if not isinstance(xs, list) or not isinstance(ys, list):
        return []
    pairs = [(x, y) for x, y in ((_number(a), _number(b)) for a, b in zip(xs, ys))
             if x is not None and y is not None]
    if len(pairs) > MAX_POINTS:
        step = len(pairs) / MAX_POINTS
        pairs = [pairs[int(i * step)] for i in range(MAX_POINTS - 1)] + [pairs[-1]]
    return pairs


def fitted_line(pairs: Sequence[tuple[float, float]], lo: float | None, hi: float | None,
                slope: float | None) -> tuple[float, float, float, float] | None:
    """(x1, y1, x2, y2) in data units of the line drawn over the window
    [lo, hi] (the samples' range where not given): through the median of y
    in the window at the window's middle, with the slope. None without a
    slope or a sample in the window."""
    if slope is None or not pairs:
        return None
    x1 = lo if lo is not None else min(x for x, _ in pairs)
    x2 = hi if hi is not None else max(x for x, _ in pairs)
    inside = [y for x, y in pairs if x1 <= x <= x2]
    if not inside or x2 < x1:
        return None
    anchor, xmid = median(inside), (x1 + x2) / 2
    return x1, anchor + slope * (x1 - xmid), x2, anchor + slope * (x2 - xmid)


def _plot(name: str, unit: str, verdict: str, pairs: list[tuple[float, float]],
          lo: float | None, hi: float | None, slope: float | None) -> SeriesPlot:
    fit = fitted_line(pairs, lo, hi, slope)
    xs = [x for x, _ in pairs] + [v for v in (lo, hi) if v is not None]
    ys = [y for _, y in pairs] + ([fit[1], fit[3]] if fit else [])
    x_lo, x_hi = min(xs), max(xs)
    if x_hi <= x_lo:
        x_lo, x_hi = _padded(x_lo, x_hi)
    y_lo, y_hi = _padded(min(ys), max(ys))

    def px(x: float) -> float:
        return LEFT + (x - x_lo) / (x_hi - x_lo) * (RIGHT - LEFT)

    def py(y: float) -> float:
        return BOTTOM - (y - y_lo) / (y_hi - y_lo) * (BOTTOM - TOP)

    grows = verdict == GROWS
    warmup = (LEFT, px(lo)) if lo is not None and lo > x_lo else None
    return SeriesPlot(
        f"{name} ({unit}) against cycles: {verdict}", W, H, LEFT, RIGHT, TOP, BOTTOM, grows,
        _LINE_COLOURS.get(verdict, _OTHER_COLOUR), _FIT_COLOURS.get(verdict, "#ef6c00"),
        "#ffebee" if grows else "#ffffff", warmup,
        " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in pairs),
        [(px(x), py(y)) for x, y in pairs] if len(pairs) <= MAX_DOTS else [],
        (px(fit[0]), py(fit[1]), px(fit[2]), py(fit[3])) if fit else None,
        [(px(t), num(t)) for t in nice_ticks(x_lo, x_hi, 4) if x_lo <= t <= x_hi],
        [(py(t), num(t)) for t in nice_ticks(y_lo, y_hi, 4) if y_lo <= t <= y_hi],
        BOTTOM + 13, H - 4, unit)


def series_view(series: Mapping[str, Any]) -> SeriesView:
    """One series of a soak, drawn; malformed fields shown as "?"."""
    name, unit = _text(series.get("name")), _text(series.get("unit"))
    verdict = _text(series.get("verdict"))
    lo, hi = _number(series.get("from")), _number(series.get("to"))
    slope = _number(series.get("slope"))
    pairs = _pairs(series)
    window = f"cycles {num(lo)} to {num(hi)}" if lo is not None or hi is not None else "all cycles"
    return SeriesView(
        name, unit, verdict, VERDICT_COLOURS.get(verdict, _OTHER_COLOUR), verdict == GROWS,
        slope is not None, "?" if slope is None else f"{num(slope)} {unit}/cycle",
        "?" if (g := _number(series.get("growth"))) is None else f"{num(g)} {unit}",
        _pct(_number(series.get("relative"))), window, _text(series.get("bound")), len(pairs),
        _plot(name, unit, verdict, pairs, lo, hi, slope) if pairs else None)


def stopped_text(soak: Mapping[str, Any]) -> str:
    """Why the soak ran fewer cycles than its level asks, where its budget
    ended it; "" otherwise (the count or long's seconds ended it, or an
    older line that does not say)."""
    if soak.get("stopped") != "budget":
        return ""
    return (f"stopped by its {num(_number(soak.get('budget_s')))} s budget after "
            f"{_count(soak.get('cycles'))} of {_count(soak.get('cycles_asked'))} cycles")


def soak_view(test: str, soak: Mapping[str, Any]) -> SoakView:
    """One soak of test (its full name: BINARY@SUBTEST[@DYNAMIC])."""
    raw = soak.get("series")
    series = [series_view(s) for s in raw if isinstance(s, Mapping)] if isinstance(raw, list) \
        else []
    seconds = _number(soak.get("seconds"))
    cycles = soak.get("cycles")
    return SoakView(test, _text(soak.get("soak")), _text(soak.get("cycle")),
                    _text(soak.get("level")),
                    str(cycles) if isinstance(cycles, int) and not isinstance(cycles, bool)
                    else num(_number(cycles)),
                    "?" if seconds is None else f"{seconds:.1f} s",
                    any(s.grows for s in series), series, stopped_text(soak))


def soak_test_name(name: str, soak: Mapping[str, Any]) -> str:
    """The soak's test: its record's name, with its dynamic subtest if any."""
    dyn = soak.get("dynamic")
    return f"{name}@{dyn}" if isinstance(dyn, str) and dyn and not name.endswith(f"@{dyn}") \
        else name


def soak_views(tests: Mapping[str, Any]) -> list[SoakView]:
    """Every soak of results.json's "tests": the tests with a growing series
    first, then by name; a test's soaks in their order."""
    out = []
    for name, rec in tests.items():
        soaks = rec.get("soaks") if isinstance(rec, Mapping) else None
        if isinstance(soaks, list):
            out += [soak_view(soak_test_name(str(name), s), s) for s in soaks
                    if isinstance(s, Mapping)]
    by_test: dict[str, bool] = {}
    for v in out:
        by_test[v.test] = by_test.get(v.test, False) or v.grows
    return sorted(out, key=lambda v: (not by_test[v.test], v.test))
