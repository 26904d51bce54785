"""report.py: the page's content and safety, then the page in a real headless
chromium: the plots must be laid out with a non-empty bounding box (the
page's own script counts them into <body data-plots>)."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from gc_testutil import REPO_ROOT, Selftests
from gpuconform.baseline import (
    Baseline,
    BaselineError,
    BaselineMetric,
    compare_run,
    load_baseline,
    update_baseline,
)
from gpuconform.report import render_html, write_html

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
        "bin@skipped": {"result": "skip", "reason": "no GPU", "duration": 0.01, "metrics": []},
        "bin@never": {"result": "notrun", "reason": "", "duration": 0.0, "metrics": []},
        "bin@" + HOSTILE: {"result": "pass", "duration": 0.05, "metrics": []},
    }
    return {"format": "gpuconform-results", "version": 1,
            "run": {"hostname": "box<1>", "kernel": "Linux 6.1", "start": 0, "end": 10},
            "fingerprint": {"gpu_model": "none", "cpu_model": HOSTILE}, "tests": tests,
            "totals": {}}


def with_comparisons(data: dict[str, Any]) -> dict[str, Any]:
    base = [1000.0 + 7 * i + (i % 5) * 13 for i in range(30)]
    b = Baseline({}, "", "", {
        "bin@fast:lat": BaselineMetric("ns", "lower", tuple(base)),
        "bin@slow:lat": BaselineMetric("ns", "lower", tuple(base)),
        "bin@broken:gone": BaselineMetric("ns", "lower", (1.0, 2.0, 3.0)),
    }, {})
    comps = compare_run(data["tests"], b)
    verdicts = {c.key: c.verdict for c in comps}
    assert verdicts == {"bin@fast:lat": "regression", "bin@slow:lat": "unchanged",
                        "bin@fast:bw": "new", "bin@broken:gone": "missing"}
    return {**data, "comparisons": [c.to_json() for c in comps]}


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
    # plots: 3 metrics with samples (fast:lat, fast:bw, slow:lat), the missing
    # one's baseline samples, and the duration chart
    assert page.count('<svg class="plot"') == plots_expected(page) == 5
    assert page.count('class="median"') == 2 + 2 + 1 + 1  # two rows for fast:lat, slow:lat
    # verdicts and their evidence, regressions first
    assert page.index("bin@fast:lat") < page.index("bin@slow:lat")
    assert "regression: median" in page and "Mann-Whitney one-sided p=" in page
    assert "missing: bin@broken ended fail without recording it" in page


def test_results_table_failures_first(tmp_path: Path) -> None:
    page = render_html(synthetic())
    table = page[page.index('<table id="results">'):]
    order = [m.group(1) for m in re.finditer(r'<tr class="state-([a-z-]+)">', table)]
    assert order == ["crash", "fail", "pass", "pass", "pass", "skip", "notrun"]
    assert 'style="background:#c62828">fail<' in table


def test_durations_sorted_longest_first() -> None:
    page = render_html(synthetic())
    chart = page[page.index('<h2 id="durations">'):page.index('<h2 id="tests">')]
    names = re.findall(r'text-anchor="end">(bin@[^<]*)</text>', chart)
    assert names[:4] == ["bin@slow", "bin@broken", "bin@fast", "bin@crashy"]
    assert "bin@never" not in chart  # not run: no duration to show


def test_without_comparisons_plots_this_run_alone() -> None:
    page = render_html(synthetic())
    assert plots_expected(page) == 4  # fast:lat, fast:bw, slow:lat, durations
    assert "no baseline comparison in this run" in page
    assert "baseline n=" not in page


def test_empty_run() -> None:
    page = render_html({"format": "gpuconform-results", "tests": {}})
    assert plots_expected(page) == 0 and "no test ran" in page and "no metrics" in page


def test_bad_results_are_one_line(tmp_path: Path) -> None:
    (tmp_path / "results.json").write_text('{"format": "gpuconform-results",\n "tests": 7}')
    with pytest.raises(BaselineError, match=r"results\.json:2: tests: is number, not object$"):
        write_html(tmp_path)
    assert not (tmp_path / "report.html").exists()


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
    assert "<svg" in dom and "<circle" in dom  # the SVG reached the DOM as SVG


def test_chromium_renders_a_real_selftest_run(selftests: Selftests, tmp_path: Path) -> None:
    results = tmp_path / "run"
    p = subprocess.run(
        [sys.executable, str(REPO_ROOT / "gpuconform"), "run", "--build", str(selftests.build),
         "--selftest", "-k", "metrics", "--results", str(results),
         *RUN_ISOLATED],
        capture_output=True, text=True, timeout=300)
    assert (results / "results.json").is_file(), p.stdout + p.stderr
    assert p.returncode == 1  # bad-name and not-finite fail on purpose
    # this run against a baseline of itself: every verdict path of a real file
    b = load_baseline(update_baseline(results, tmp_path / "baseline.json"))
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
