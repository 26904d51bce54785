"""report.py: the page's content and safety, then the page in a real headless
chromium: the plots must be laid out with a non-empty bounding box (the
page's own script counts them into <body data-plots>)."""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest

from gc_testutil import REPO_ROOT, Selftests, gate_baseline
from gpuconform.perf.baseline import BaselineError, load_baseline
from gpuconform.perf.baseline_update import update_baseline
from gpuconform.perf.judge import compare_run
from gpuconform.core import stats
from gpuconform.core.fmt import nice_ticks
from gpuconform.report import report
from gpuconform.report.report import render_html, write_html

HOSTILE = ('<script>document.title="pwned"</script></pre></td><b id="injected">x</b>'
           '\x1b[31mred\x1b[0m \x00 nul \udcff surrogate &amp; <!-- -->')

# `gpuconform run` options: no checked-in baseline nor other jobs' kernel messages
# may decide these runs
RUN_ISOLATED = ["--no-baseline", "--kmsg", "off", "--taint-file", "off"]


def metric(sub: str, name: str, samples: list[float], better: str = "lower",
           unit: str = "ns") -> dict[str, Any]:
    return {"test": "bin", "subtest": sub, "dynamic": None, "name": name, "unit": unit,
            "better": better, "samples": samples}


def synthetic() -> dict[str, Any]:
    base = [1000.0 + 7 * i + (i % 5) * 13 for i in range(30)]
    tests = {
        "bin@fast": {"result": "pass", "duration": 0.25, "out": "fine\n", "err": "",
                     "metrics": [metric("fast", "lat", [x * 1.2 for x in base]),
                                 metric("fast", "bw", [800, 805, 799, 810, 802], "higher",
                                        "MB/s")]},
        "bin@slow": {"result": "pass", "duration": 3.5, "out": "", "err": "",
                     "metrics": [metric("slow", "lat", base)]},
        "bin@broken": {"result": "fail", "reason": "assertion " + HOSTILE, "duration": 0.5,
                       "notes": [HOSTILE], "out": HOSTILE * 3, "err": HOSTILE,
                       "metrics": []},
        "bin@crashy": {"result": "crash", "reason": "killed by SIGSEGV", "duration": 0.1,
                       "out": "", "err": "", "metrics": [],
                       "dynamic": {"d<1>": {"result": "crash", "reason": "", "time": None}}},
        "bin@skipped": {"result": "skip", "reason": "no GPU", "duration": 0.01, "metrics": [],
                        "skip_at": "../tests/x/y.c:12 (setup())"},
        "bin@never": {"result": "notrun", "reason": "", "duration": 0.0, "metrics": []},
        "bin@" + HOSTILE: {"result": "pass", "duration": 0.05, "metrics": []},
    }
    return {"format": "gpuconform-results", "version": 1,
            "run": {"hostname": "box<1>", "kernel": "Linux 6.1", "start": 0, "end": 10},
            "fingerprint": {"gpu_model": "none", "cpu_model": HOSTILE}, "tests": tests,
            "totals": {}}


def with_comparisons(data: dict[str, Any]) -> dict[str, Any]:
    base = [1000.0 + 7 * i + (i % 5) * 13 for i in range(30)]
    runs = [[x * (1 + d) for x in base] for d in (0.0, 0.002, -0.001, 0.001, -0.002)]
    noisy = [[x * f for x in base] for f in (1.0, 1.5, 0.7, 1.2, 0.9)]
    b = gate_baseline({
        "bin@fast:lat": ("ns", "lower", runs),
        "bin@slow:lat": ("ns", "lower", runs),
        "bin@slow:noisy": ("ns", "lower", noisy),
        "bin@broken:gone": ("ns", "lower", [[1.0], [2.0], [3.0]]),
    })
    tests = dict(data["tests"])
    tests["bin@slow"] = {**tests["bin@slow"],
                         "metrics": tests["bin@slow"]["metrics"] + [metric("slow", "noisy", base)]}
    comps = compare_run(tests, b)
    verdicts = {c.key: c.verdict for c in comps}
    assert verdicts == {"bin@fast:lat": "regression", "bin@slow:lat": "unchanged",
                        "bin@slow:noisy": "trend", "bin@fast:bw": "new",
                        "bin@broken:gone": "missing"}
    return {**data, "tests": tests, "comparisons": [c.to_json() for c in comps]}


def write(d: Path, data: dict[str, Any]) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    # surrogates as JSON escapes, as json.dumps writes them
    (d / "results.json").write_text(json.dumps(data), encoding="utf-8")
    return d


def plots_expected(page: str) -> int:
    m = re.search(r'data-plots-expected="(\d+)"', page)
    assert m, "no data-plots-expected"
    return int(m.group(1))


# ---------------------------------------------------------------- content


def test_page_is_self_contained_and_escaped(tmp_path: Path) -> None:
    out = write_html(write(tmp_path / "r", with_comparisons(synthetic())))
    assert out == tmp_path / "r" / "report.html"
    page = out.read_text(encoding="utf-8")
    # nothing to fetch: no URL, no external reference, and a policy forbidding any
    assert not re.search(r"\b(src|href|xlink:href)\s*=", page)
    assert not re.search(r"https?:|@import|url\(", page)
    assert "default-src 'none'" in page
    # every hostile string escaped: no injected element, no early end of a block
    assert '<b id="injected">' not in page
    assert "<script>document.title" not in page
    assert page.count("<script>") == 1 and page.count("</script>") == 1
    assert "&lt;b id=&quot;injected&quot;&gt;" in page
    assert "\\x1b[31mred" in page and "\\x00 nul" in page and "\x00" not in page
    assert "&amp;amp;" in page
    # plots: the 3 gated or flagged metrics with samples (fast:lat, fast:bw, slow:lat), the
    # missing one's baseline runs, and the duration chart; the trend-only slow:noisy is a
    # row of numbers
    assert page.count('<svg class="plot"') == plots_expected(page) == 5
    assert re.search(r'<tr id="metric-bin@slow:noisy"><td>bin@slow:noisy</td>.*?trend.*?'
                     r'<td>30</td>', page)
    # two rows for fast:lat, slow:lat: each baseline run's statistic, this run; one for
    # fast:bw (new) and the missing one's baseline
    assert page.count('class="median"') == 2 + 2 + 1 + 1
    assert page.count("baseline: 5 runs") == 2 and "baseline: 3 runs" in page
    # verdicts and their evidence, regressions first, trends last and marked
    assert page.index("bin@fast:lat") < page.index("bin@slow:lat") < page.index("bin@slow:noisy")
    assert "regression: good-half mean" in page and "beyond the limit 2.5%" in page
    assert "missing: bin@broken ended fail without recording it" in page
    assert page.count("(trend only: never fails a night)") == 1  # broken:gone, drawn
    # slow:noisy, trend only and unflagged: a row of numbers with its explanation
    assert re.search(r'<tr id="metric-bin@slow:noisy">.*?kept for trends only: MDE.*?</tr>', page)
    assert "trend: good-half mean" in page and "kept for trends only: MDE" in page


def test_results_table_failures_first(tmp_path: Path) -> None:
    page = render_html(synthetic())
    table = page[page.index('<table id="results">'):]
    order = [m.group(1) for m in re.finditer(r'<tr class="state-([a-z-]+)">', table)]
    assert order == ["crash", "fail", "pass", "pass", "pass", "skip", "notrun"]
    assert 'style="background:#c62828">fail<' in table


def test_durations_sorted_longest_first() -> None:
    page = render_html(synthetic())
    start = page.index('<h2 id="durations">')
    chart = page[start:page.index('</svg>', start)]
    names = re.findall(r'text-anchor="end">(bin@[^<]*)</text>', chart)
    assert names[:4] == ["bin@slow", "bin@broken", "bin@fast", "bin@crashy"]
    assert "bin@never" not in chart  # not run: no duration to show


def test_without_comparisons_the_metrics_are_numbers() -> None:
    """No baseline: nothing is gated, so no metric is drawn; each is a row of
    this run's n, median, p99, min and max (the samples stay in results.json)."""
    page = render_html(synthetic())
    assert plots_expected(page) == 1  # the durations
    assert "no baseline comparison in this run" in page
    assert "baseline n=" not in page
    row = re.search(r'<tr id="metric-bin@fast:bw">(.*?)</tr>', page)
    assert row and re.findall(r"<td>([^<]*)</td>", row.group(1))[1:] == [
        "5", "802", "809.8", "799", "810", "MB/s"]


def test_empty_run() -> None:
    page = render_html({"format": "gpuconform-results", "tests": {}})
    assert plots_expected(page) == 0 and "no test ran" in page and "no metrics" in page


def test_samples_one_ulp_apart_draw_one_tick() -> None:
    """Samples equal but for their last bit (a ratio of 1.0 and the next
    float up, as an H200 node measured) once made the axis step smaller than
    a float resolves: the tick loop never ended and took 108 GiB."""
    one_up = math.nextafter(1.0, 2.0)
    data = synthetic()
    data["tests"]["bin@fast"]["metrics"] = [metric("fast", "ratio", [1.0, one_up, 1.0], "lower", "x")]
    page = render_html(data)
    assert "bin@fast" in page and plots_expected(page) == 1
    # and drawn, as a gated metric would be
    view = report._distribution([("run", [1.0, one_up, 1.0], "#000")], "x", "ratio")
    assert len(view.axis.ticks) >= 1 and len(view.rows[0].dots) == 3


@pytest.mark.parametrize("lo, hi, want", [
    (0.0, 10.0, [0.0, 2.0, 4.0, 6.0, 8.0, 10.0]),
    (-1.0, 1.0, [-1.0, -0.5, 0.0, 0.5, 1.0]),
    (3.0, 3.0, [3.0]),
    (1.0, math.nextafter(1.0, 2.0), [1.0]),
])
def test_nice_ticks(lo: float, hi: float, want: list[float]) -> None:
    assert nice_ticks(lo, hi) == pytest.approx(want)


def test_nice_ticks_near_float_resolution_end() -> None:
    ticks = nice_ticks(1e17, 1e17 + 64)  # steps of 20 where floats are 16 apart
    assert 1 <= len(ticks) <= 6


def test_bad_results_are_one_line(tmp_path: Path) -> None:
    (tmp_path / "results.json").write_text('{"format": "gpuconform-results",\n "tests": 7}')
    with pytest.raises(BaselineError, match=r"results\.json:2: tests: is number, not object$"):
        write_html(tmp_path)
    assert not (tmp_path / "report.html").exists()


# ------------------------------------------------------------ dispatch gaps


def bubbles_metric(sub: str, name: str, samples: list[float], unit: str = "ns",
                   test: str = "cuda_bubbles") -> dict[str, Any]:
    return {"test": test, "subtest": sub, "dynamic": None, "name": name, "unit": unit,
            "better": "lower", "samples": samples}


GAP_MODES = ("stream", "graph", "graph-trace")
# wide16: recorded gaps only, so p50 / p99 / max come from these samples:
# 2000, 2010, ... 3000 ns -> p50 2500, p99 (rank 99 of 0..100) 2990, max 3000
WIDE16_GAPS = [2000.0 + 10 * i for i in range(101)]


def chain16_metrics() -> list[dict[str, Any]]:
    """Three modes with every summary metric, and two overhead ratios."""
    out = []
    for k, mode in enumerate(GAP_MODES):
        gaps = [1000.0 * (k + 1) + (i % 40) * 5 for i in range(400)] + [90000.0 * (k + 1)]
        out.append(bubbles_metric("chain16", f"gap.{mode}.chain16", gaps))
        out.append(bubbles_metric("chain16", f"gap-p50.{mode}.chain16", [1050.0 + k]))
        out.append(bubbles_metric("chain16", f"gap-p99.{mode}.chain16", [4321.0 + k]))
        out.append(bubbles_metric("chain16", f"gap-max.{mode}.chain16", [250000.0 + k]))
        out.append(bubbles_metric("chain16", f"bubbles.{mode}.chain16", [17.0 + k], "count"))
    out.append(bubbles_metric("chain16", "overhead.gap-p50-trace-over-graph.chain16", [1.42],
                              "x"))
    out.append(bubbles_metric("chain16", "overhead.graph-time-trace-over-graph.chain16", [2.5],
                              "x"))
    return out


def gap_results() -> dict[str, Any]:
    """synthetic() plus cuda_bubbles gap metrics of two shapes, wide16 listed first."""
    data = synthetic()
    wide = [bubbles_metric("wide16", f"gap.{mode}.wide16", WIDE16_GAPS) for mode in GAP_MODES]
    data["tests"]["cuda_bubbles@wide16"] = {"result": "pass", "duration": 2.0, "metrics": wide}
    data["tests"]["cuda_bubbles@chain16"] = {"result": "pass", "duration": 3.0,
                                             "metrics": chain16_metrics()}
    return data


def gap_section(page: str) -> str:
    assert page.count('<h2 id="gaps">Dispatch gaps</h2>') == 1
    return page[page.index('<h2 id="gaps">'):page.index('<h2 id="metrics">')]


def gap_cells(html_part: str, label: str) -> list[str]:
    """The cells after the mode's own of its row in a gap table."""
    rows = re.findall(r"<tr><td><span style=\"color:#[0-9a-f]{6}\">&#9632;</span> "
                      + re.escape(label) + r"</td>(.*?)</tr>", html_part)
    assert len(rows) == 1, (label, rows)
    return re.findall(r"<td>(.*?)</td>", rows[0])


def test_gap_section_one_plot_per_shape_with_numbers() -> None:
    page = render_html(gap_results())
    sec = gap_section(page)
    # one plot per shape, shapes in the suite's order (chain16 before wide16)
    assert sec.count('<svg class="plot"') == 2
    assert sec.index("<h3>chain16 ") < sec.index("<h3>wide16 ")
    assert "<title>dispatch gaps: cuda_bubbles: chain16</title>" in sec
    # no baseline: the gap metrics are rows of numbers in Metrics, not plots; the durations
    # and the 2 here
    assert plots_expected(page) == 1 + 2
    chain, wide = sec.split("<h3>wide16 ")
    # each plot: the three modes, in the suite's order, one median each
    for part in (chain, wide):
        svg = part[part.index("<svg"):part.index("</svg>")]
        labels = re.findall(r'font-size="12" text-anchor="end">([^<]+)</text>', svg)
        assert labels == list(GAP_MODES) and svg.count('class="median"') == 3
    # chain16: the recorded p50 / p99 / max / bubbles; its ratios below the plot
    assert gap_cells(chain, "graph-trace") == ["401", "1.052 us", "4.323 us", "250 us", "19"]
    assert gap_cells(chain, "stream") == ["401", "1.05 us", "4.321 us", "250 us", "17"]
    assert "of the subsample</span>" not in chain
    assert "<li>gap-p50-trace-over-graph: 1.42x</li>" in chain
    assert "<li>graph-time-trace-over-graph: 2.5x</li>" in chain
    assert chain.index("</svg>") < chain.index("<li>gap-p50-trace-over-graph")
    # its tail reaches 90x the bulk: a log axis
    assert "(log scale)" in chain
    # wide16: computed from the samples and labelled so; no bubble rule guessed
    sub = '<br><span class="muted">of the subsample</span>'
    assert gap_cells(wide, "graph") == ["101", "2.5 us" + sub, "2.99 us" + sub, "3 us" + sub,
                                        '<span class="muted">not recorded</span>']
    assert "no overhead ratios recorded" in wide and "(log scale)" not in wide


def test_no_gap_metrics_no_section() -> None:
    data = synthetic()
    # names that only resemble the family are not gap metrics
    data["tests"]["bin@fast"]["metrics"] += [metric("fast", "gap", [1.0, 2.0]),
                                             metric("fast", "gapx.graph.chain2", [1.0]),
                                             metric("fast", "gap-p50.graph.chain2", [1.0])]
    page = render_html(data)
    assert "Dispatch gaps" not in page and 'id="gaps"' not in page
    assert plots_expected(page) == 1  # the durations: the metrics are rows of numbers


def test_gap_mode_of_two_subtests_is_labelled_with_each() -> None:
    data = gap_results()
    data["tests"]["cuda_bubbles@detach"] = {"result": "pass", "duration": 1.0, "metrics": [
        bubbles_metric("detach", "gap.graph.chain16", [1500.0, 1600.0, 1700.0]),
        bubbles_metric("detach", "gap.graph-detached.chain16", [1550.0, 1650.0])]}
    chain = gap_section(render_html(data)).split("<h3>wide16 ")[0]
    # each keeps its own subtest's summary metrics; detach has none
    assert gap_cells(chain, "graph @chain16")[1] == "1.051 us"
    assert gap_cells(chain, "graph @detach")[1].endswith("of the subsample</span>")
    assert gap_cells(chain, "graph-detached")[0] == "2"
    svg = chain[chain.index("<svg"):chain.index("</svg>")]
    assert re.findall(r'font-size="12" text-anchor="end">([^<]+)</text>', svg) == [
        "stream", "graph @chain16", "graph @detach", "graph-trace", "graph-detached"]


def test_gap_plot_keeps_the_largest_gaps() -> None:
    gaps = [1000.0 + (i % 97) for i in range(10000)]
    gaps[7777] = 123456.0  # one bubble among 10,000: thinning must not drop it
    data = {"format": "gpuconform-results", "tests": {"cuda_bubbles@launch": {
        "result": "pass", "duration": 1.0,
        "metrics": [bubbles_metric("launch", "gap.graph.launch", gaps)]}}}
    svg = gap_section(render_html(data))
    dots = [float(x) for x in re.findall(r'M([0-9.]+) [0-9.]+h0', svg)]
    # a summary of 10,000 gaps: MAX_DOTS, the largest among them (an even thinning would
    # drop index 7777), the box over every gap
    assert len(dots) == report.MAX_DOTS
    # the bubble on the log axis [1000 / 1.25, 123456 x 1.25] of the plot's width from its left
    lo, hi = 1000 / 1.25, 123456 * 1.25
    left, width = report.GAP_PLOT_LEFT, report.GAP_PLOT_W
    assert max(dots) == pytest.approx(left + width * math.log10(123456 / lo) / math.log10(hi / lo),
                                      abs=0.1)


def test_gaps_of_each_gpu_are_rows_of_their_own_with_their_own_numbers() -> None:
    # a node of two GPUs: one copy of the test a GPU, each recording every gap metric
    def copy(gpu: int, tail: float) -> list[dict[str, Any]]:
        gaps = {"gap": [700.0, 704.0, 736.0, tail], "gap-max": [tail], "bubbles": [gpu + 1.0]}
        out = [{**bubbles_metric("traced", f"{kind}.{mode}.chain16", v,
                                 "count" if kind == "bubbles" else "ns"), "gpu": gpu}
               for kind, v in gaps.items() for mode in ("graph", "graph-trace")]
        return out + [{**bubbles_metric("traced", "overhead.gap-p50-trace-over-graph.chain16",
                                        [1.2 + gpu], "x"), "gpu": gpu}]
    data = {"format": "gpuconform-results", "tests": {"cuda_bubbles@traced": {
        "result": "pass", "duration": 1.0, "metrics": copy(0, 9000.0) + copy(1, 90000.0)}}}
    sec = gap_section(render_html(data))
    assert gap_cells(sec, "graph gpu0")[3:] == ["9 us", "1"]
    assert gap_cells(sec, "graph gpu1")[3:] == ["90 us", "2"]
    assert gap_cells(sec, "graph-trace gpu1")[3:] == ["90 us", "2"]
    svg = sec[sec.index("<svg"):sec.index("</svg>")]
    assert re.findall(r'font-size="12" text-anchor="end">([^<]+)</text>', svg) == [
        "graph gpu0", "graph gpu1", "graph-trace gpu0", "graph-trace gpu1"]
    assert "<li>gap-p50-trace-over-graph gpu0: 1.2x</li>" in sec
    assert "<li>gap-p50-trace-over-graph gpu1: 2.2x</li>" in sec


def test_a_long_label_keeps_its_gpu() -> None:
    assert report._short("graph-trace-serial @traced-serialized gpu7") == (
        "graph-trace-serial @tr... gpu7")
    assert report._short("graph @traced-concurrent gpu7") == "graph @traced-concurrent gpu7"
    assert report._short("x" * 40) == "x" * 27 + "..."


def test_gaps_as_a_histogram_are_summarised_over_every_gap() -> None:
    # wide16's 101 gaps as a histogram, each twice, and 50 more at 3000 ns: 252 gaps
    values = sorted(set(WIDE16_GAPS))
    counts = [2] * (len(values) - 1) + [52]
    data = gap_results()
    data["tests"]["cuda_bubbles@wide16"]["metrics"][1] = {
        **bubbles_metric("wide16", "gap.graph.wide16", values), "counts": counts}
    wide = gap_section(render_html(data)).split("<h3>wide16 ")[1]
    expanded = [v for v, c in zip(values, counts) for _ in range(c)]
    p50, p99 = stats.median(expanded), stats.quantile(expanded, 0.99)
    assert (p50, p99) == (2625.0, 3000.0)
    # every gap, so not marked as a subsample's
    assert gap_cells(wide, "graph")[:4] == ["252", "2.625 us", "3 us", "3 us"]
    assert gap_cells(wide, "stream")[0] == "101"  # the plain ones as before
    svg = wide[wide.index("<svg"):wide.index("</svg>")]
    assert svg.count('class="median"') == 3


def test_a_histogram_of_each_gpu_is_joined_in_the_metrics_table() -> None:
    one = {**bubbles_metric("chain2", "gap.graph.chain2", [704.0, 736.0]), "counts": [3, 1]}
    two = {**one, "samples": [736.0, 768.0], "counts": [2, 2]}
    joined = report._run_metrics({"a": {"metrics": [one]}, "b": {"metrics": [two]}})
    m = joined["cuda_bubbles@chain2:gap.graph.chain2"]
    assert (m["samples"], m["counts"]) == ([704.0, 736.0, 768.0], [3, 3, 2])


@pytest.mark.parametrize("n", [1, 5, 32, 33, 1000])
def test_summary_points_keep_the_extremes(n: int) -> None:
    values = [float((i * 7919) % n) for i in range(n)]
    pts = report._summary_points(values)
    assert len(pts) == min(n, report.MAX_DOTS)
    assert min(pts) == min(values) and max(pts) == max(values)
    if n > report.MAX_DOTS:  # the largest TAIL_DOTS all drawn, then ranks evenly spaced
        assert sorted(pts)[-report.TAIL_DOTS:] == sorted(values)[-report.TAIL_DOTS:]
        assert pts == sorted(pts)


def test_hostile_gap_names_are_escaped(tmp_path: Path) -> None:
    data = gap_results()
    # load_results refuses metric names outside [A-Za-z0-9._-]+, render_html takes
    # whatever it is given: hostile mode, shape and ratio names straight in
    data["tests"]["cuda_bubbles@chain16"]["metrics"] += [
        bubbles_metric("chain16", "gap.graph." + HOSTILE, [1.0, 2.0, 3.0]),
        bubbles_metric("chain16", "gap." + HOSTILE + ".chain16", [1.0, 2.0, 3.0]),
        bubbles_metric("chain16", "overhead." + HOSTILE + ".chain16", [1.0], HOSTILE)]
    # and what a results.json can hold: hostile test, subtest, dynamic and unit
    data["tests"]["cuda_bubbles@" + HOSTILE] = {"result": "pass", "duration": 1.0, "metrics": [
        {**bubbles_metric(HOSTILE, "gap.graph.chain2", [5.0, 6.0], HOSTILE, test=HOSTILE),
         "dynamic": HOSTILE}]}
    page = render_html(data)
    sec = gap_section(page)
    # chain2, chain16, wide16, HOSTILE, and the shape after the first "." in HOSTILE
    assert sec.count('<svg class="plot"') == 5
    shapes = re.findall(r"<h3>(.*?) <span", sec)
    assert shapes[:3] == ["chain2", "chain16", "wide16"]  # the suite's shapes, then the rest
    assert all(s.startswith("title=&quot;") or s.startswith("&lt;script") for s in shapes[3:])
    assert sec.count("&lt;b id=&quot;injected&quot;&gt;") >= 6
    assert '<b id="injected">' not in page and "<script>document.title" not in page
    assert page.count("<script>") == 1 and page.count("</script>") == 1
    assert "\\x1b[31mred" in sec and "\x00" not in page
    out = tmp_path / "report.html"
    out.write_text(page, encoding="utf-8")
    dom = render_in_chromium(out, tmp_path / "profile")
    assert_rendered(dom, plots_expected(page))


# --------------------------------------------------------------- chromium

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def render_in_chromium(page: Path, profile: Path) -> str:
    """--dump-dom of page: the DOM after the load event, scripts run."""
    if CHROMIUM is None:
        pytest.skip("chromium is not installed (scripts/deps.sh test installs it: "
                    "apt-get install chromium)")
    argv = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
            "--no-first-run", "--disable-background-networking", "--disable-component-update",
            "--disable-sync", "--disable-dev-shm-usage", f"--user-data-dir={profile}",
            "--dump-dom", page.absolute().as_uri()]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=180)  # a hang guard, not a threshold
    finally:
        try:  # chromium's helpers, should any outlive it: its own process group
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()
    dom = out.decode("utf-8", "replace")
    assert proc.returncode == 0 and "<body" in dom, \
        f"chromium exit {proc.returncode}: {err.decode('utf-8', 'replace')[-2000:]}"
    return dom


def assert_rendered(dom: str, expected: int) -> None:
    body = re.search(r"<body[^>]*>", dom)
    assert body, dom[:500]
    drawn = re.search(r'data-plots="(\d+)"', body.group(0))
    assert drawn, body.group(0)
    assert expected > 0 and int(drawn.group(1)) == expected, \
        f"{drawn.group(1)} of {expected} plots rendered with a non-empty bounding box"
    assert '<b id="injected">' not in dom
    assert "<title>pwned</title>" not in dom


def test_chromium_renders_the_synthetic_report(tmp_path: Path) -> None:
    out = write_html(write(tmp_path / "r", with_comparisons(synthetic())))
    dom = render_in_chromium(out, tmp_path / "profile")
    assert_rendered(dom, plots_expected(out.read_text(encoding="utf-8")))
    assert "<svg" in dom and 'class="dots"' in dom  # the SVG reached the DOM as SVG


def test_chromium_renders_a_real_selftest_run(selftests: Selftests, tmp_path: Path) -> None:
    results = tmp_path / "run"
    p = subprocess.run(
        [str(REPO_ROOT / "gpuconform"), "run", "--build", str(selftests.build),
         "--selftest", "-k", "metrics", "--results", str(results),
         *RUN_ISOLATED],
        capture_output=True, text=True, timeout=300)
    assert (results / "results.json").is_file(), p.stdout + p.stderr
    assert p.returncode == 1  # bad-name and not-finite fail on purpose
    # this run against a baseline of itself: every verdict path of a real file (not a
    # clean run, on purpose: --force takes it, its tests that passed)
    b = load_baseline(update_baseline([results], tmp_path / "baseline.json", force=True))
    data = json.loads((results / "results.json").read_text())
    data["comparisons"] = [c.to_json() for c in compare_run(data["tests"], b)]
    keys = {c["key"] for c in data["comparisons"]}
    assert {"selftest_metrics@metrics:latency", "selftest_metrics@spin:spin"} <= keys
    (results / "results.json").write_text(json.dumps(data))
    out = write_html(results)
    page = out.read_text(encoding="utf-8")
    assert "selftest_metrics@bad-name" in page and "not [A-Za-z0-9._-]+" in page
    dom = render_in_chromium(out, tmp_path / "profile")
    assert_rendered(dom, plots_expected(page))


def test_chromium_renders_the_gap_plots(tmp_path: Path) -> None:
    out = write_html(write(tmp_path / "r", gap_results()))
    page = out.read_text(encoding="utf-8")
    assert gap_section(page).count('<svg class="plot"') == 2
    dom = render_in_chromium(out, tmp_path / "profile")
    assert_rendered(dom, plots_expected(page))
    assert 'id="gaps"' in dom and "of the subsample" in dom


def test_a_skip_shows_where_it_was_called() -> None:
    page = render_html(synthetic())
    row = page.split('<td>bin@skipped</td>')[1].split("</tr>")[0]
    assert "skipped at ../tests/x/y.c:12 (setup())" in row


# ------------------------------------------------------------------ soaks


def soak_series(name: str, unit: str, verdict: str, slope: float | None,
                n: int = 40) -> dict[str, Any]:
    x = [25 * i for i in range(n)]
    y = [100.0 + (slope or 0.0) * c + (i % 3) for i, c in enumerate(x)]
    return {"name": name, "unit": unit, "x": x, "y": y, "from": 250, "to": x[-1],
            "slope": slope, "growth": None if slope is None else slope * (x[-1] - 250),
            "relative": None if slope is None else 0.01,
            "bound": f"grows by more than 0.25 {unit} a cycle", "verdict": verdict}


def soak_results() -> dict[str, Any]:
    """A run whose cuda_mem@fill soak leaks rss, and whose host_io@soak is calm."""
    def soak(test: str, sub: str, rss: str, rss_slope: float) -> dict[str, Any]:
        return {"test": test, "subtest": sub, "dynamic": None, "soak": sub,
                "cycle": "fill 90% of free device memory, then free it " + HOSTILE,
                "level": "long", "cycles": 975, "seconds": 61.2,
                "series": [soak_series("rss", "KiB", rss, rss_slope),
                           soak_series("fds", "count", "ok", 0.0),
                           soak_series("device", "MiB", "few-samples", None, n=2),
                           soak_series("latency", "us", "ok", 0.0001)]}
    data = synthetic()
    tests = dict(data["tests"])
    tests["host_io@soak"] = {"result": "pass", "duration": 60.0, "metrics": [],
                             "soaks": [soak("host_io", "soak", "ok", 0.0)]}
    tests["cuda_mem@fill"] = {"result": "fail", "reason": "rss grows", "duration": 61.0,
                              "metrics": [], "soaks": [soak("cuda_mem", "fill", "grows", 2.0)]}
    tests["bin@fast"] = {**tests["bin@fast"], "soaks": []}
    return {**data, "tests": tests}


def soak_section(page: str) -> str:
    return page[page.index('<h2 id="soaks">'):page.index('<h2 id="metrics">')]


def test_soak_section_draws_every_series_and_marks_the_leak() -> None:
    page = render_html(soak_results())
    section = soak_section(page)
    # the soaks come before the metrics, the leaking test first
    assert section.index("cuda_mem@fill") < section.index("host_io@soak")
    assert "2 soak(s)" in section and "1 with a growing series" in section
    # 4 series a soak, each drawn: 8 plots more than the run without soaks
    assert section.count('<svg class="plot soakplot') == 8
    assert plots_expected(page) == plots_expected(render_html(synthetic())) + 8
    # the leak: one plot marked, its card and its soak too, its fitted line drawn
    assert section.count('<svg class="plot soakplot grows"') == 1
    assert section.count('class="soakseries grows"') == 1
    assert section.count('class="soak grows"') == 1
    assert "slope 2 KiB/cycle over cycles 250 to 975" in section
    assert "bound: grows by more than 0.25 KiB a cycle" in section
    # a fitted line for every series with a slope; few-samples has none
    assert section.count('<line class="fit"') == 6
    assert section.count("not fitted (2 samples)") == 2
    assert section.count('class="warmup"') == 8  # every series: cycles before 250
    # what a cycle is, escaped
    assert '<b id="injected">' not in section and "&lt;b id=&quot;injected&quot;&gt;" in section


def test_a_soak_its_budget_cut_short_says_so() -> None:
    data = soak_results()
    data["tests"]["host_io@soak"]["soaks"][0].update(
        level="standard", stopped="budget", cycles_asked=256000, budget_s=20)
    section = soak_section(render_html(data))
    assert section.count("stopped by its 20 s budget after 975 of 256000 cycles") == 1
    assert "budget" not in soak_section(render_html(soak_results()))


def test_no_soaks_no_section() -> None:
    for data in (synthetic(), {"format": "gpuconform-results", "tests": {}}):
        page = render_html(data)
        assert 'id="soaks"' not in page and "soakplot" not in page
    data = synthetic()
    data["tests"]["bin@fast"]["soaks"] = []  # a test that did not soak
    assert 'id="soaks"' not in render_html(data)


def test_chromium_renders_the_soak_plots(tmp_path: Path) -> None:
    out = write_html(write(tmp_path / "r", soak_results()))
    page = out.read_text(encoding="utf-8")
    dom = render_in_chromium(out, tmp_path / "profile")
    assert_rendered(dom, plots_expected(page))
    assert "<polyline" in dom and 'class="fit"' in dom
