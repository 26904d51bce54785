"""report.html, what a night's reader sees first: the verdict as the run
ended with it, then what counts against the run, then the expected failures
with their rules, then the tests by contract area; and a page of a whole
night's size that stays small (a summary of each distribution, the samples
in results.json)."""

from __future__ import annotations

import json
import random
import re
from typing import Any

from gpuconform.core.jsondoc import dumps
from gpuconform.core.page import EXPECTED_COLOUR
from gpuconform.report import report
from gpuconform.report.report import render_html

RULE = "data/expectations/nvidia.txt:8: fail cuda_mem@map-past-reservation platform=*"


def rec(result: str, expected: bool | None, **kw: Any) -> dict[str, Any]:
    return {"result": result, "expected": expected, "duration": 1.0, "metrics": [], **kw}


def night(outcome: dict[str, Any] | None) -> dict[str, Any]:
    tests = {
        "cuda_mem@lifecycle": rec("pass", True),
        "cuda_mem@map-past-reservation": rec("fail", True, reason="cuMemMap accepted it",
                                             rule=RULE, judgement="fail, as expected"),
        "cufile_io@read-async": rec("pass", True),
        "nvml_session@exclusive-node": rec("skip", True, reason="no such node"),
    }
    data: dict[str, Any] = {"format": "gpuconform-results", "version": 1, "run": {},
                            "tests": tests}
    if outcome is not None:
        data["outcome"] = outcome
    return data


def headings(page: str) -> list[str]:
    return re.findall(r'<h2 id="([a-z-]+)"', page)


def test_nothing_unexpected_is_the_first_line_and_the_expected_failure_is_not_red() -> None:
    line = "ok: 4 subtests, nothing unexpected"
    page = render_html(night({"status": 0, "unexpected": [], "regressions": 0, "line": line}))
    body = page[page.index("</h1>") + 5:]
    first = re.match(r'\s*<p id="verdict"[^>]*background:#2e7d32[^>]*>([^<]*)</p>', body)
    assert first and first.group(1) == f"gpuconform: {line}"
    # no plain red "fail" badge anywhere: the expected failure reads so, in brown
    assert 'background:#c62828">fail<' not in page
    assert f'background:{EXPECTED_COLOUR}">fail, expected<' in page
    assert "unexpected" not in headings(page)
    exp = page[page.index('<h2 id="expected">'):page.index('<h2 id="tests">')]
    assert "cuda_mem@map-past-reservation" in exp and RULE in exp
    # then the tests, by contract area (mem, io, session), before any plot
    assert headings(page)[:2] == ["expected", "tests"]
    areas = re.findall(r'<tr class="area"><th colspan="4">([^<]*)</th>', page)
    assert areas == ["io (1 test)", "mem (2 tests)", "session (1 test)"]


def test_what_counts_against_the_run_comes_first_with_its_limit() -> None:
    data = night(None)  # no "outcome": worked out again from the records, as `run` does
    data["tests"]["cuda_mem@lifecycle"] = rec("fail", False, reason="leaked 2 MiB",
                                              judgement="fail: no rule expects it")
    data["tests"]["cufile_io@read-async"] = rec("pass", False, final="flake",
                                                judgement="flake: failed, then passed")
    data["comparisons"] = [{"key": "cuda_mem@latency:map", "verdict": "regression",
                            "trend": False, "unit": "ns", "better": "lower",
                            "explain": "regression: +7.1% beyond the limit 2.5%",
                            "samples_base": [1.0, 1.1, 0.9]}]
    page = render_html(data)
    verdict = re.search(r'<p id="verdict"[^>]*background:#c62828[^>]*>([^<]*)</p>', page)
    assert verdict and verdict.group(1) == ("gpuconform: failed: 2 unexpected (1 fail, 1 flake), "
                                            "1 metric regression(s)")
    assert headings(page)[:3] == ["unexpected", "expected", "tests"]
    sec = page[page.index('<h2 id="unexpected">'):page.index('<h2 id="expected">')]
    assert "Unexpected: 3" in sec
    for what in ("cuda_mem@lifecycle", "fail: no rule expects it", "cufile_io@read-async",
                 "pass, flake", "cuda_mem@latency:map", "beyond the limit 2.5%"):
        assert what in sec, what


def test_a_results_json_without_tests_says_it_has_no_verdict() -> None:
    page = render_html({"format": "gpuconform-results", "outcome": {"line": "x"}})
    assert re.search(r'<p id="verdict"[^>]*>no verdict: results.json cannot give one', page)


# A whole night, shaped as the H100 run of the README's command (main at 7cf89f9,
# 20261126T174601Z): 96 tests, 454 metrics of which 43 gap subsamples of up to 1000 and 22
# series of about 2000 samples, 346 metrics under 100 samples, 91 gated comparisons, 9 soaks,
# 250 KB of test output. Its report was 11.6 MB before the summaries.
def whole_night(seed: int = 7) -> dict[str, Any]:
    rnd = random.Random(seed)
    tests: dict[str, Any] = {}
    comps = []
    sizes = [1000] * 43 + [2000] * 22 + [1000] * 14 + [250] * 23 + [150] * 34 + [50] * 318
    for i in range(96):
        tests[f"cuda_area{i % 12}@sub{i}"] = rec("pass", True, out="x" * 2600, metrics=[])
    for j, n in enumerate(sizes):
        test = f"cuda_area{j % 12}@sub{j % 96}"
        name = f"gap.graph.chain{j}" if j < 43 else f"lat{j}"
        samples = [rnd.lognormvariate(7, 0.3) for _ in range(n)]
        tests[test]["metrics"].append({"test": test.partition("@")[0], "subtest": f"sub{j % 96}",
                                       "dynamic": None, "name": name, "unit": "ns",
                                       "better": "lower", "samples": samples})
        comps.append({"key": f"{test}:{name}", "verdict": "unchanged" if j < 91 else "trend",
                      "trend": j >= 91, "unit": "ns", "better": "lower",
                      "explain": "unchanged: good-half mean within the limit 2.5%",
                      "samples_base": [rnd.lognormvariate(7, 0.01) for _ in range(9)]})
    return {"format": "gpuconform-results", "version": 1, "run": {}, "tests": tests,
            "comparisons": comps,
            "outcome": {"status": 0, "line": "ok: 96 subtests, nothing unexpected"}}


def test_a_whole_night_page_is_at_most_2_mb() -> None:
    data = whole_night()
    page = render_html(data)
    assert len(page.encode("utf-8")) <= 2 * 1024 * 1024, len(page)
    # every gated metric drawn, each row a summary of at most MAX_DOTS points
    assert page.count('<div class="metric"') == 91
    for d in re.findall(r'<path class="dots" d="([^"]*)"', page):
        assert d.count("h0") <= report.MAX_DOTS


def test_results_json_keeps_a_series_on_one_line() -> None:
    data = whole_night()
    text = dumps(data)
    assert json.loads(text) == data
    samples = sum(len(m["samples"]) for t in data["tests"].values() for m in t["metrics"])
    # a line a field, not a line a sample
    assert text.count("\n") < samples / 10
    assert len(re.findall(r'"samples": \[[0-9]', text)) == 454


def test_regressions_a_run_was_told_to_expect_are_not_listed_as_unexpected() -> None:
    data = night({"status": 0, "unexpected": [], "regressions": 0,
                  "line": "ok: 4 subtests, nothing unexpected"})
    data["run"] = {"options": {"regressions_expected": True}}
    data["comparisons"] = [{"key": "cuda_mem@latency:map", "verdict": "regression",
                            "explain": "regression: +7.1% beyond the limit 2.5%"}]
    page = render_html(data)
    assert "unexpected" not in headings(page) and "beyond the limit 2.5%" in page
