"""soakplot.py: one soak series drawn small: the fitted line through the
window's median at its middle, the warm-up shaded, a growing series marked,
anything malformed shown as "?" and never an exception."""

from __future__ import annotations

import math
import re
from typing import Any

import pytest

from gpuconform.core import soakplot
from gpuconform.core.soakplot import fitted_line, series_view, soak_view, soak_views


def series(name: str = "rss", unit: str = "KiB", slope: float | None = 0.5,
           verdict: str = "ok", xs: list[float] | None = None,
           ys: list[float] | None = None, lo: float | None = 20, hi: float | None = 80
           ) -> dict[str, Any]:
    xs = xs if xs is not None else [10.0 * i for i in range(11)]
    ys = ys if ys is not None else [5 + 2 * x for x in xs]
    return {"name": name, "unit": unit, "x": xs, "y": ys, "from": lo, "to": hi,
            "slope": slope, "growth": None if slope is None else slope * ((hi or 0) - (lo or 0)),
            "relative": 0.01, "bound": "grows by more than 1 KiB a cycle", "verdict": verdict}


def polyline(points: str) -> list[tuple[float, float]]:
    return [(float(a), float(b)) for a, b in (p.split(",") for p in points.split())]


def test_fitted_line_goes_through_the_window_median_at_its_middle() -> None:
    pairs = [(0.0, 1.0), (1.0, 5.0), (2.0, 2.0), (3.0, 100.0), (9.0, 1e6)]
    # window [0, 3]: y 1, 5, 2, 100 -> median 3.5 at x 1.5; the point at 9 is outside
    assert fitted_line(pairs, 0, 3, 1.0) == (0, 2.0, 3, 5.0)
    assert fitted_line(pairs, 0, 3, None) is None  # too few samples: no slope, no line
    assert fitted_line(pairs, 4, 8, 1.0) is None  # no sample in the window
    # no window given: the samples' range
    assert fitted_line([(0.0, 0.0), (2.0, 4.0)], None, None, 2.0) == (0.0, 0.0, 2.0, 4.0)


def test_a_straight_series_and_its_fit_coincide_in_pixels() -> None:
    # y = 5 + 2x, window [20, 80]: the median of y in it is y(50), its middle
    v = series(slope=2.0)
    p = series_view(v).plot
    assert p is not None and p.fit is not None
    pts = dict(polyline(p.points))
    by_x = {round(x): y for x, y in polyline(p.points)}
    xs = sorted(pts)
    x20, x80 = xs[2], xs[8]
    assert p.fit[0] == pytest.approx(x20, abs=0.06) and p.fit[2] == pytest.approx(x80, abs=0.06)
    assert p.fit[1] == pytest.approx(by_x[round(x20)], abs=0.06)
    assert p.fit[3] == pytest.approx(by_x[round(x80)], abs=0.06)
    # upward in the data is upward on screen (SVG's y grows down)
    assert p.fit[3] < p.fit[1]
    # the warm-up (cycles before "from") is shaded, from the left edge to x(20)
    assert p.warmup is not None and p.warmup[0] == soakplot.LEFT
    assert p.warmup[1] == pytest.approx(x20, abs=0.06)


def test_a_growing_series_is_marked() -> None:
    ok, grows = series_view(series(verdict="ok")), series_view(series(verdict="grows"))
    assert not ok.grows and grows.grows
    assert grows.colour == soakplot.VERDICT_COLOURS["grows"] != ok.colour
    assert grows.plot is not None and ok.plot is not None
    assert grows.plot.grows and grows.plot.ground != ok.plot.ground
    assert grows.plot.line != ok.plot.line
    assert grows.slope == "0.5 KiB/cycle" and grows.growth == "30 KiB"
    assert grows.relative == "1%" and grows.window == "cycles 20 to 80"


def test_a_sample_not_taken_is_left_out() -> None:
    ys: list[Any] = [5 + 2 * 10.0 * i for i in range(11)]
    ys[5] = None
    v = series_view(series(slope=2.0, ys=ys))
    assert v.samples == 10 and v.plot is not None and len(polyline(v.plot.points)) == 10
    # the window's median of the 6 samples left: (y(40) + y(60)) / 2 = y(50)
    assert fitted_line([(10.0 * i, y) for i, y in enumerate(ys) if y is not None], 20, 80,
                       2.0) == (20, 45.0, 80, 165.0)


def test_few_samples_has_no_fit() -> None:
    v = series_view(series(slope=None, verdict="few-samples", xs=[0.0, 1.0], ys=[3.0, 3.0]))
    assert not v.fitted and v.slope == "?" and v.growth == "?"
    assert v.plot is not None and v.plot.fit is None and len(v.plot.dots) == 2


@pytest.mark.parametrize("bad", [
    {},
    {"x": "1,2", "y": [1]},
    {"x": [1, "a", None, math.nan, 4], "y": [1, 2, 3, 4, True], "from": "x", "slope": "1"},
    {"name": None, "unit": 7, "verdict": ["grows"], "x": [1], "y": [2], "from": None,
     "to": None, "slope": math.inf},
])
def test_malformed_series_show_question_marks(bad: dict[str, Any]) -> None:
    v = series_view(bad)
    assert isinstance(v.name, str) and isinstance(v.slope, str)
    assert v.slope == "?"
    assert v.plot is None or v.plot.fit is None


def test_many_samples_are_thinned_keeping_the_last() -> None:
    xs = [float(i) for i in range(5000)]
    p = series_view(series(xs=xs, ys=xs, lo=1000, hi=4999)).plot
    assert p is not None
    pts = polyline(p.points)
    assert len(pts) == soakplot.MAX_POINTS and p.dots == []
    assert pts[-1][0] == pytest.approx(soakplot.RIGHT, abs=0.06)


def test_a_flat_series_still_has_an_axis() -> None:
    p = series_view(series(slope=0.0, ys=[12.0] * 11)).plot
    assert p is not None and p.yticks and p.fit is not None
    assert p.fit[1] == p.fit[3] and soakplot.TOP < p.fit[1] < soakplot.BOTTOM


def test_soak_views_put_the_growing_tests_first() -> None:
    def soak(verdict: str) -> dict[str, Any]:
        return {"soak": "s", "cycle": "one", "level": "long", "cycles": 100, "seconds": 1.25,
                "series": [series(verdict="ok"), series("fds", "count", verdict=verdict)]}
    tests = {"a@calm": {"soaks": [soak("ok")]}, "b@leaky": {"soaks": [soak("grows")]},
             "c@none": {"soaks": []}, "d@old": {"result": "pass"},
             "e@dyn": {"soaks": [{**soak("ok"), "dynamic": "gpu0"}]}}
    views = soak_views(tests)
    assert [v.test for v in views] == ["b@leaky", "a@calm", "e@dyn@gpu0"]
    assert views[0].grows and not views[1].grows
    assert (views[0].cycles, views[0].seconds, views[0].level) == ("100", "1.2 s", "long")


def test_a_soak_its_budget_cut_short_says_so() -> None:
    base = {"soak": "s", "cycle": "one", "level": "standard", "cycles": 9800, "seconds": 20.01,
            "cycles_asked": 256000, "series": [series()]}
    v = soak_view("t", {**base, "stopped": "budget", "budget_s": 20})
    assert v.stopped == "stopped by its 20 s budget after 9800 of 256000 cycles"
    # the count ran out, long's seconds did, or a line from before soaks said: nothing to say
    assert soak_view("t", {**base, "stopped": "cycles", "budget_s": 20}).stopped == ""
    assert soak_view("t", {**base, "stopped": "seconds", "cycles_asked": None}).stopped == ""
    assert soak_view("t", base).stopped == ""
    # malformed numbers: "?", never an exception
    assert soak_view("t", {"stopped": "budget", "cycles": "many", "budget_s": None}).stopped == \
        "stopped by its ? s budget after ? of ? cycles"


def test_soak_view_of_nonsense() -> None:
    v = soak_view("t", {"series": "no", "cycles": "many", "seconds": None})
    assert v.series == [] and v.cycles == "?" and v.seconds == "?" and v.soak == "?"


def test_labels_are_numbers() -> None:
    p = series_view(series()).plot
    assert p is not None
    for _, label in p.xticks + p.yticks:
        assert re.fullmatch(r"-?[0-9.e+-]+", label), label
