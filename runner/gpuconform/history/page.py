"""history.html: one self-contained page over many nights, per machine
(fingerprint): first the changes, each with the night it first appeared and
what changed between that night and the one before; then per test a strip
of its states; then per gated metric a chart across nights with the
baseline's band and the baseline runs that made it, the change marked.

This module computes what is shown (positions, labels, colours); the markup
is templates/history.html.j2 (Jinja2, every value escaped: core/page.py).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from ..core.atomic import atomic_write
from ..core.fmt import nice_ticks
from ..core.page import EXPECTED_COLOUR, STATE_COLOURS, Badge, environment
from .changes import Shift, shifts_of, state_changes
from .nights import Night

__all__ = ["render", "write"]

TEMPLATES = Path(__file__).resolve().parent / "templates"
W, H, LEFT, RIGHT, TOP, BOTTOM = 900, 130, 250, 10, 8, 22  # a chart's box, pixels
BASE_W = 40  # the baseline runs' column, left of the nights
VERDICT_COLOURS = {"regression": "#c62828", "improvement": "#2e7d32"}


def _day(t: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.gmtime(t))


NOT_RUN = Badge("not run", "#ffffff")


@dataclass(frozen=True)
class _Change:
    night: int  # its index among the machine's nights
    what: str  # the test or metric
    detail: str
    since: list[str]  # what the facts say changed since the night before


@dataclass(frozen=True)
class _NightChanges:
    """The changes first seen on one night, and what changed since the night before."""
    night: int
    when: str
    path: str
    since: list[str]
    changes: list[_Change]


@dataclass(frozen=True)
class _Strip:
    test: str
    cells: list[tuple[float, float, str, str]]  # x, width, colour, title (runs of one state)


@dataclass(frozen=True)
class _Chart:
    key: str
    unit: str
    better: str
    band: tuple[float, float] | None  # y top, y bottom of the baseline's band
    base: list[float]  # y of each baseline run's statistic (x: the base column)
    points: list[tuple[float, float, str, str]]  # x, y, colour, title
    path: str  # the nights' line
    ticks: list[tuple[float, str]]  # y, label
    change_x: list[float]  # x of each change, between its night and the one before
    change: list[str]  # and what it was


@dataclass(frozen=True)
class _Machine:
    key: str
    describe: str
    nights: list[tuple[str, str]]  # when, results directory
    changes: list[_NightChanges]  # by night
    n_changes: int
    strips: list[_Strip]
    charts: list[_Chart]
    x_labels: list[tuple[float, str]]


def _x(i: int, n: int) -> float:
    span = W - LEFT - RIGHT - BASE_W
    return LEFT + BASE_W + (span * (i + 0.5) / n)


def _since(nights: Sequence[Night], i: int) -> list[str]:
    if i == 0:
        return []
    a, b = nights[i - 1].facts, nights[i].facts
    return [f"{k}: {a.get(k)} -> {b.get(k)}" for k in b if a.get(k) != b.get(k)]


def _strip(test: str, nights: Sequence[Night]) -> _Strip:
    n, cells, i = len(nights), [], 0
    states = [night.states.get(test, NOT_RUN) for night in nights]
    while i < n:
        j = i
        while j + 1 < n and states[j + 1] == states[i]:
            j += 1
        x0, x1 = _x(i, n) - (_x(1, n) - _x(0, n)) / 2, _x(j, n) + (_x(1, n) - _x(0, n)) / 2
        cells.append((x0, x1 - x0, states[i].colour,
                      f"{test}: {states[i].text} (nights {i + 1}-{j + 1})"))
        i = j + 1
    return _Strip(test, cells)


def _chart(key: str, nights: Sequence[Night], shifts: list[Shift],
           idx: list[int]) -> _Chart:
    pts = [nights[i].metrics[key] for i in idx]
    last = pts[-1]
    lo_band = hi_band = None
    if last.center is not None and last.limit is not None:
        lo_band, hi_band = last.center * (1 - last.limit), last.center * (1 + last.limit)
    values = [p.value for p in pts] + list(last.baseline_runs)
    values += [v for v in (lo_band, hi_band) if v is not None]
    lo, hi = min(values), max(values)
    if hi <= lo:
        lo, hi = lo - abs(lo) * 0.01 - 1e-9, hi + abs(hi) * 0.01 + 1e-9
    pad = (hi - lo) * 0.08
    lo, hi = lo - pad, hi + pad

    def y(v: float) -> float:
        return TOP + (hi - v) / (hi - lo) * (H - TOP - BOTTOM)

    n = len(nights)
    points = [(_x(i, n), y(p.value), VERDICT_COLOURS.get(p.verdict, "#1565c0"),
               f"night {i + 1}: {p.value:.6g} {p.unit} ({p.verdict})") for i, p in zip(idx, pts)]
    path = "".join(("M" if k == 0 else "L") + f"{x:.1f} {yy:.1f}"
                   for k, (x, yy, _, _) in enumerate(points))
    ticks = [(y(t), f"{t:.4g}") for t in nice_ticks(lo, hi)]
    band = (y(hi_band), y(lo_band)) if lo_band is not None and hi_band is not None else None
    marks = [(_x(idx[sh.index] - 1, n) + _x(idx[sh.index], n)) / 2 for sh in shifts]
    texts = [_shift_text(sh, idx, last.unit) for sh in shifts]
    return _Chart(key, last.unit, last.better, band, [y(v) for v in last.baseline_runs],
                  points, path, ticks, marks, texts)


def _shift_text(sh: Shift, idx: list[int], unit: str) -> str:
    return (f"from night {idx[sh.index] + 1}: {sh.before:.6g} -> {sh.after:.6g} {unit} "
            f"({sh.relative:+.2%}, p {sh.p:.2g})")


def _machine(key: str, nights: list[Night]) -> _Machine:
    changes: list[_Change] = []
    tests = sorted({t for n in nights for t in n.states})
    for t in tests:
        states = [b.text if (b := n.states.get(t)) else None for n in nights]
        for i in state_changes(states):
            before = next(s for s in reversed(states[:i]) if s is not None)
            changes.append(_Change(i, t, f"{before} -> {states[i]}", _since(nights, i)))
    charts = []
    for mkey in sorted({k for n in nights for k in n.metrics}):
        idx = [i for i, n in enumerate(nights) if mkey in n.metrics]
        shifts = shifts_of([nights[i].metrics[mkey].value for i in idx])
        charts.append(_chart(mkey, nights, shifts, idx))
        for sh, text in zip(shifts, charts[-1].change):
            changes.append(_Change(idx[sh.index], mkey, text, _since(nights, idx[sh.index])))
    changes.sort(key=lambda c: (c.night, c.what))
    # charts with a change first, then by key
    charts.sort(key=lambda c: (not c.change_x, c.key))
    n = len(nights)
    by_night = [_NightChanges(i, _day(nights[i].start), str(nights[i].path), _since(nights, i),
                              [c for c in changes if c.night == i])
                for i in sorted({c.night for c in changes})]
    return _Machine(key, nights[-1].describe, [(_day(x.start), str(x.path)) for x in nights],
                    by_night, len(changes), [_strip(t, nights) for t in tests], charts,
                    [(_x(i, n), str(i + 1)) for i in range(n)])


def render(nights: list[Night], errors: Sequence[str], title: str = "gpuconform history") -> str:
    """The page of nights (load_nights' order), machines apart; errors: the
    results directories that could not be read, one line each."""
    by: dict[str, list[Night]] = {}
    for night in nights:
        by.setdefault(night.machine, []).append(night)
    machines = [_machine(k, v) for k, v in sorted(by.items())]
    legend = [Badge(s, c) for s, c in STATE_COLOURS.items()] + [Badge("fail, expected",
                                                                      EXPECTED_COLOUR)]
    return environment(TEMPLATES).get_template("history.html.j2").render(
        title=title, machines=machines, errors=list(errors), n_nights=len(nights),
        legend=legend, W=W, H=H, LEFT=LEFT, BASE_X=LEFT + BASE_W / 2, RIGHT=W - RIGHT,
        BOTTOM=H - BOTTOM)


def write(out: Path, nights: list[Night], errors: Sequence[str]) -> Path:
    atomic_write(out, render(nights, errors))
    return out
