"""A fleet of several machines merged: each shard keeps its machine's
fingerprint and its own comparison with that fingerprint's baseline, and the
merged summary and report.html group the results by machine (merge.py,
report.py), on synthetic results directories."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from gpuconform.cli import run_status
from gpuconform.core.fingerprint import Fingerprint
from gpuconform.fleet.merge import merge_results
from gpuconform.report.report import render_html
from gpuconform.core.results import TestRecord, write_results
from gpuconform.core.shard import shard
from gpuconform.core.states import State

SELECTION = [f"bin_{b}@sub-{s}" for b in range(2) for s in range(6)]
H100 = Fingerprint("1x NVIDIA H100 80GB HBM3", "nvidia 550.54.15", "cuda 12.4", "6.1", "x86_64",
                   "AMD EPYC 9454")
MI300 = Fingerprint("8x AMD gfx942 [0x74a1]", "amdgpu in-tree", "rocm 6.1.0", "6.8", "x86_64",
                    "AMD EPYC 9654")


def comparison(test: str, verdict: str) -> dict[str, Any]:
    return {"key": f"{test}:lat", "test": test, "metric": "lat", "unit": "ns", "better": "lower",
            "verdict": verdict, "explain": f"{verdict}: made up", "samples_base": [1.0, 2.0],
            "samples_run": [1.5]}


def shard_dir(path: Path, index: int, total: int, fp: Fingerprint | None,
              verdicts: dict[str, str] | None = None) -> Path:
    tests = shard(SELECTION, index, total)
    records = {t: TestRecord(t, t.split("@")[0], t.split("@")[1],
                             State.FAIL if t == tests[0] else State.PASS) for t in tests}
    extra: dict[str, Any] = {
        "selection": SELECTION, "shard": [index, total],
        "fingerprint": fp.to_json() if fp else None,
        "baseline": {"path": f"data/baselines/{fp.key()}.json" if fp else None, "error": None},
        "comparisons": [comparison(t, (verdicts or {}).get(t, "unchanged")) for t in tests],
    }
    write_results(path, records, {"start": 1.0, "end": 2.0, "collection_errors": []}, extra)
    return path


def load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((path / "results.json").read_text())
    return data


def test_each_shard_keeps_its_machine_and_its_own_comparison(tmp_path: Path) -> None:
    s2 = shard(SELECTION, 2, 3)
    dirs = [shard_dir(tmp_path / "shard-1", 1, 3, H100),
            shard_dir(tmp_path / "shard-2", 2, 3, MI300, {s2[1]: "regression"}),
            shard_dir(tmp_path / "shard-3", 3, 3, H100)]
    report = merge_results(dirs, tmp_path / "merged")
    assert report.ok, report.render()
    data = load(tmp_path / "merged")
    assert data["fingerprint"] is None  # no one machine's run: no baseline is made of it
    groups = {g["key"]: g for g in data["fingerprints"]}
    assert set(groups) == {H100.key(), MI300.key()}
    assert groups[MI300.key()]["inputs"] == [str(dirs[1])]
    assert groups[MI300.key()]["tests"] == [t for t in SELECTION if t in set(s2)]
    assert groups[H100.key()]["inputs"] == [str(dirs[0]), str(dirs[2])]
    assert sorted(groups[H100.key()]["tests"] + groups[MI300.key()]["tests"]) == sorted(SELECTION)
    assert groups[MI300.key()]["fingerprint"] == MI300.to_json()
    assert groups[MI300.key()]["baselines"] == [f"data/baselines/{MI300.key()}.json"]
    # every comparison kept once, tagged with the machine whose baseline judged it
    comps = data["comparisons"]
    assert sorted(c["test"] for c in comps) == sorted(SELECTION)
    assert {c["test"]: c["fingerprint"] for c in comps} == {
        t: (MI300.key() if t in s2 else H100.key()) for t in SELECTION}
    assert [c["test"] for c in comps if c["verdict"] == "regression"] == [s2[1]]
    assert [m["fingerprint"] for m in data["run"]["merged_from"]] == [
        H100.key(), MI300.key(), H100.key()]
    summary = (tmp_path / "merged" / "summary.txt").read_text()
    assert "machines: 2 fingerprints" in summary
    assert f"  {MI300.key()}: {len(s2)} tests from {dirs[1]}; data/baselines/" in summary
    # the MI300's regression counts against the merged run
    status, line = run_status(tmp_path / "merged" / "results.json", 0)
    assert status == 1 and "1 metric regression(s)" in line


def test_one_machine_keeps_its_fingerprint(tmp_path: Path) -> None:
    dirs = [shard_dir(tmp_path / f"s{i}", i, 2, H100) for i in (1, 2)]
    merge_results(dirs, tmp_path / "merged")
    data = load(tmp_path / "merged")
    assert data["fingerprint"] == H100.to_json()
    assert [g["key"] for g in data["fingerprints"]] == [H100.key()]


def test_inputs_without_fingerprint(tmp_path: Path) -> None:
    dirs = [shard_dir(tmp_path / f"s{i}", i, 2, None) for i in (1, 2)]
    report = merge_results(dirs, tmp_path / "merged")
    data = load(tmp_path / "merged")
    assert [g["key"] for g in data["fingerprints"]] == ["unknown"]
    assert "unknown: 12 tests" in report.render()


def test_report_groups_results_by_machine(tmp_path: Path) -> None:
    dirs = [shard_dir(tmp_path / "shard-1", 1, 2, H100), shard_dir(tmp_path / "shard-2", 2, 2, MI300)]
    merge_results(dirs, tmp_path / "merged")
    data = load(tmp_path / "merged")
    page = render_html(data)
    machines = page[page.index('<table id="machines-table">'):]
    machines = machines[:machines.index("</table>")]
    assert H100.describe() in machines and MI300.describe() in machines
    assert str(dirs[1]) in machines and f"data/baselines/{MI300.key()}.json" in machines
    # the results table: a header row per machine, then that machine's tests
    table = page[page.index('<table id="results">'):]
    rows = re.findall(r'<tr class="machine"><th colspan="4">([^<]*)</th></tr>|'
                      r'<tr class="state-[a-z-]+"><td>([^<]*)</td>', table)
    groups: dict[str, list[str]] = {}
    current = None
    for head, test in rows:
        if head:
            current = head.split(" ")[0]
            groups[current] = []
        else:
            assert current is not None, "a test row before any machine"
            groups[current].append(test)
    want = {g["key"]: sorted(g["tests"]) for g in data["fingerprints"]}
    assert {k: sorted(v) for k, v in groups.items()} == want
    # a single machine's run: no grouping, no machines section
    single = render_html(load(dirs[0]))
    assert 'class="machine"' not in single and 'id="machines"' not in single
