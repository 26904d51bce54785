"""`gpuconform history`: nights written as a run writes them, read back,
machines kept apart, a slowdown dated with what changed since the night
before, an unreadable night named by its file and line."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from gc_testutil import CliRun, run_launcher

FP_A = {"gpu_model": "NVIDIA H100 80GB HBM3", "driver": "nvidia 580.159.04",
        "runtime": "cuda 13.0", "kernel": "6.18", "arch": "x86_64", "gpus": "1x NVIDIA H100 80GB HBM3"}
FP_B = {**FP_A, "gpu_model": "NVIDIA H200", "gpus": "2x NVIDIA H200"}


def night(root: Path, i: int, fp: dict[str, str], value: float, state: str,
          env: dict[str, str]) -> None:
    d = root / f"2026110{i // 10}T{i % 10}0000Z"
    d.mkdir(parents=True)
    data: dict[str, Any] = {
        "format": "gpuconform-results", "version": 1, "fingerprint": fp,
        "run": {"start": 1_790_000_000 + 86400 * i, "suite": "gpuconform 0.1.0 sources abc",
                "environment": env, "devices": ["GPU-1"], "hostname": "n1"},
        "tests": {"cuda_bubbles@gaps": {"result": "pass", "metrics": []},
                  "cuda_mem@oom": {"result": state, "expected": state == "pass"}},
        "comparisons": [{"key": "cuda_bubbles@gaps:graph-time.graph.chain256", "gated": True,
                         "unit": "us", "better": "lower", "verdict": "unchanged",
                         "value": value, "center": 450.0, "limit": 0.04,
                         "samples_base": [449.0, 450.0, 451.0]}]}
    (d / "results.json").write_text(json.dumps(data), encoding="utf-8")


def history(*args: str) -> CliRun:
    return run_launcher(["history", *args], dict(os.environ), None)


def test_a_slowdown_is_dated_with_what_changed(tmp_path: Path) -> None:
    root = tmp_path / "nights"
    for i in range(12):
        slow = i >= 8
        night(root, i, FP_A, 458.5 if slow else 450.0 + 0.01 * (i % 3),
              "fail" if i >= 10 else "pass",
              {"GPUCONFORM_BUBBLES_WORK_NS": "1050"} if slow else {})
        night(root / "other", i, FP_B, 300.0, "pass", {})  # another machine: its own series
    p = history(str(root))
    assert p.returncode == 0, p.stderr
    assert "history of 24 night(s) written" in p.stdout
    page = (root / "history.html").read_text(encoding="utf-8")
    machines = re.findall(r'<h2 id="machine-\d+">([^<]*)</h2>', page)
    assert len(machines) == 2 and machines[0].startswith("nvidia-h100")
    h100 = page[:page.index('<h2 id="machine-2">')]
    groups = re.findall(r'<tr class="night"><th colspan="2">night (\d+) \(.*?\): (\d+) change\(s\); '
                        r"since the night before: (.*?)</th></tr>(.*?)(?=<tr class=\"night\"|</table>)",
                        h100, re.S)
    by = {int(n): (int(k), since, dict(re.findall(r"<tr><td>([^<]*)</td><td>([^<]*)</td></tr>",
                                                  rows)))
          for n, k, since, rows in groups}
    assert sorted(by) == [9, 11]
    k, since, rows = by[9]
    assert k == 1 and "environment: none set -&gt; GPUCONFORM_BUBBLES_WORK_NS=1050" in since
    assert re.match(r"from night 9: 450\.0\d* -&gt; 458\.5 us \(\+1\.89%",
                    rows["cuda_bubbles@gaps:graph-time.graph.chain256"])
    k, since, rows = by[11]
    assert rows == {"cuda_mem@oom": "pass -&gt; fail"} and "nothing recorded changed" in since
    # the other machine's flat series: no change, and its own chart
    other = page[page.index('<h2 id="machine-2">'):]
    assert "<h3>Changes: 0, first seen on 0 night(s)</h3>" in other and other.count('<svg class="plot"') == 1


def test_an_unreadable_night_is_one_line_and_the_rest_is_shown(tmp_path: Path) -> None:
    root = tmp_path / "nights"
    for i in range(3):
        night(root, i, FP_A, 450.0, "pass", {})
    bad = root / "bad"
    bad.mkdir()
    (bad / "results.json").write_text('{"format": "gpuconform-results",\n "tests": []}\n')
    p = history(str(root), "-o", str(tmp_path / "h.html"))
    assert p.returncode == 1
    assert re.search(r"not read: \S*bad/results.json:2: tests: ", p.stderr), p.stderr
    page = (tmp_path / "h.html").read_text(encoding="utf-8")
    assert "3 night(s) on 1 machine(s)" in page and "bad/results.json:2" in page


def test_no_results_at_all_is_an_error(tmp_path: Path) -> None:
    p = history(str(tmp_path))
    assert p.returncode != 0 and f"no results.json under {tmp_path}" in p.stderr


def test_an_expected_failure_is_drawn_and_named_as_the_report_does() -> None:
    from gpuconform.core.page import EXPECTED_COLOUR, STATE_COLOURS, record_badge
    from gpuconform.history.nights import Night
    from gpuconform.history.page import _machine

    recs = [{"result": "pass"}, {"result": "fail", "expected": True}, {"result": "fail"}]
    nights = [Night(Path(f"n{i}"), float(i), "m", "machine", {}, {"t@s": record_badge(r)})
              for i, r in enumerate(recs)]
    m = _machine("m", nights)
    assert [c[2] for c in m.strips[0].cells] == [STATE_COLOURS["pass"], EXPECTED_COLOUR,
                                                 STATE_COLOURS["fail"]]
    assert [(c.night, c.changes[0].detail) for c in m.changes] == [
        (1, "pass -> fail, expected"), (2, "fail, expected -> fail")]
