"""Placement on a node of several GPUs: the GPUs found (devices.py), --devices
and --jobs, one copy of a one-GPU test per GPU side by side (gang.py), tests
that span GPUs or use none run once, a GPU that goes away mid-run.

The node is a directory standing for / (gc_testutil.fake_gpus, through
GPUCONFORM_DEVICE_ROOT) and the tests are the REAL selftest_placement
binary's, which use no GPU: what is tested is the runner's placement, never a
GPU."""

from __future__ import annotations

from pathlib import Path

import pytest

from gc_testutil import Selftests, fake_gpus
from gpuconform.core.devices import (
    DevicesError,
    check_jobs,
    find_gpus,
    node_env,
    pin_env,
    select_gpus,
)
from gpuconform.core.gang import combine
from gpuconform.core.results import DynamicRecord, TestRecord
from gpuconform.core.states import State
from test_run_flow import base_env, one_line_error, run

PLACEMENT = r"^selftest_placement@"


# ------------------------------------------------------------------ devices


def _amd_node(root: Path, n: int, unique_id: int, location: int) -> None:
    d = root / "sys/class/kfd/kfd/topology/nodes" / str(n)
    d.mkdir(parents=True)
    (d / "properties").write_text(f"simd_count 304\nunique_id {unique_id}\nlocation_id "
                                  f"{location}\ndomain 0\ngfx_target_version 90402\n")


def test_gpus_in_node_order(tmp_path: Path) -> None:
    uuids = fake_gpus(tmp_path, 3)
    cpu = tmp_path / "sys/class/kfd/kfd/topology/nodes/0"
    cpu.mkdir(parents=True)
    (cpu / "properties").write_text("simd_count 0\nunique_id 0\n")
    _amd_node(tmp_path, 2, 0xABC, 0x3A08)
    _amd_node(tmp_path, 1, 0xDEF, 0x1B00)
    gpus = find_gpus(tmp_path)
    assert [(g.index, g.vendor, g.uuid) for g in gpus] == [
        (0, "nvidia", uuids[0]), (1, "nvidia", uuids[1]), (2, "nvidia", uuids[2]),
        (3, "amd", "GPU-0000000000000def"), (4, "amd", "GPU-0000000000000abc")]
    assert [g.bus for g in gpus] == ["0000:18:00.0", "0000:20:00.0", "0000:28:00.0",
                                     "0000:1b:00.0", "0000:3a:01.0"]
    assert find_gpus(tmp_path / "nothing") == []


def test_devices_select_by_index_or_uuid_prefix(tmp_path: Path) -> None:
    u = fake_gpus(tmp_path, 4)
    gpus = find_gpus(tmp_path)
    assert select_gpus(gpus, None) == gpus
    assert [g.index for g in select_gpus(gpus, "2,0")] == [2, 0]
    assert [g.index for g in select_gpus(gpus, f"{u[3][:12]},1")] == [3, 1]


@pytest.mark.parametrize("spec, want", [
    ("7", "--devices 7: no GPU 7: this node has 4: gpu0 (GPU-00000000, 0000:18:00.0)"),
    ("0,0", "--devices 0,0: gpu0 (GPU-00000000, 0000:18:00.0) named twice"),
    ("1,GPU-00000001", "--devices 1,GPU-00000001: gpu1 (GPU-00000001, 0000:20:00.0) named twice"),
    ("GPU-0000", "--devices GPU-0000: GPU-0000 names 4 GPUs"),
    ("GPU-ffff", "--devices GPU-ffff: no GPU GPU-ffff: this node has 4"),
])
def test_devices_that_name_no_gpu_or_one_twice(tmp_path: Path, spec: str, want: str) -> None:
    fake_gpus(tmp_path, 4)
    with pytest.raises(DevicesError) as e:
        select_gpus(find_gpus(tmp_path), spec)
    assert str(e.value).startswith(want) and "\n" not in str(e.value)


def test_jobs_at_most_one_per_gpu(tmp_path: Path) -> None:
    fake_gpus(tmp_path, 2)
    gpus = find_gpus(tmp_path)
    assert check_jobs(None, gpus) == 2 and check_jobs(1, gpus) == 1
    assert check_jobs(None, []) == 1
    with pytest.raises(DevicesError, match=r"--jobs 3: more than the 2 GPU\(s\) of this run"):
        check_jobs(3, gpus)
    with pytest.raises(DevicesError, match="--jobs 2: more than the 0 GPU"):
        check_jobs(2, [])


def test_pinning_and_node_variables(tmp_path: Path) -> None:
    u = fake_gpus(tmp_path, 3)
    g = find_gpus(tmp_path)
    assert pin_env(g[1]) == {"GPUCONFORM_DEVICES": "1", "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
                             "CUDA_VISIBLE_DEVICES": u[1], "ROCR_VISIBLE_DEVICES": ""}
    assert node_env(g, g) == {"CUDA_DEVICE_ORDER": "PCI_BUS_ID", "GPUCONFORM_DEVICES": "0,1,2"}
    assert node_env(g, [g[2], g[0]]) == {
        "CUDA_DEVICE_ORDER": "PCI_BUS_ID", "GPUCONFORM_DEVICES": "0,2",
        "CUDA_VISIBLE_DEVICES": f"{u[0]},{u[2]}", "ROCR_VISIBLE_DEVICES": ""}
    assert node_env([], []) == {"CUDA_DEVICE_ORDER": "PCI_BUS_ID"}


# ------------------------------------------------------------- combining


def _copy(i: int, state: State, expected: bool, **kw: object) -> TestRecord:
    rec = TestRecord("b@s", "b", "s", state, reason=f"why{i}" if state is not State.PASS else "",
                     start=100.0 + i, end=110.0 + i, duration=10.0, **kw)  # type: ignore[arg-type]
    rec.gpu = {"index": i, "uuid": f"GPU-{i}"}
    rec.final, rec.expected, rec.judgement = state.value, expected, f"judged {i}"
    return rec


def test_combined_record_reports_the_copy_that_matters() -> None:
    metric = {"test": "b", "subtest": "s", "name": "lat", "unit": "ns", "better": "lower",
              "samples": [1.0]}
    copies = [_copy(0, State.PASS, True, metrics=[dict(metric)]),
              _copy(1, State.FAIL, False, metrics=[dict(metric)],
                    dynamic={"gpu1-k1": DynamicRecord(State.FAIL, "bad")}),
              _copy(2, State.CRASH, True)]  # more severe, but expected
    rec = combine(copies, "gpu")
    assert rec.result is State.FAIL and rec.reason == "gpu1: why1" and rec.expected is False
    assert rec.judgement == "gpu1: judged 1"
    assert [m["gpu"] for m in rec.metrics] == [0, 1] and not copies[0].metrics
    assert rec.dynamic["gpu1-k1"].result is State.FAIL
    assert rec.notes[0] == "ran on 3 GPUs: gpu0 pass, gpu1 fail, gpu2 crash"
    assert (rec.start, rec.end, rec.duration) == (100.0, 112.0, 12.0)
    assert [p.gpu["index"] for p in rec.placements if p.gpu] == [0, 1, 2]
    back = TestRecord.from_json("b@s", rec.to_json())
    assert [p.result for p in back.placements] == [State.PASS, State.FAIL, State.CRASH]


def test_all_expected_copies_make_an_expected_record() -> None:
    rec = combine([_copy(0, State.FAIL, True), _copy(1, State.FAIL, True)], "gpu")
    assert rec.expected is True and rec.result is State.FAIL and rec.reason == "gpu0: why0"
    one = combine([_copy(0, State.PASS, True)], "gpu")
    assert one.placements == [] and one.gpu == {"index": 0, "uuid": "GPU-0"}


# ------------------------------------------------------------- end to end


def _node(tmp_path: Path, n: int, **extra: str) -> tuple[list[str], dict[str, str]]:
    root = tmp_path / "node"
    uuids = fake_gpus(root, n)
    meet = tmp_path / "meet"
    meet.mkdir()
    return uuids, base_env(GPUCONFORM_DEVICE_ROOT=str(root),
                           GPUCONFORM_SELFTEST_PLACEMENT_DIR=str(meet),
                           GPUCONFORM_SELFTEST_PLACEMENT_N=str(n), **extra)


def _env_lines(out: str) -> dict[str, str]:
    pairs = (line.split(" ", 1)[1].split("=", 1) for line in out.splitlines()
             if line.startswith("env "))
    return {k: v for k, v in pairs}


def test_one_gpu_tests_run_once_per_gpu_side_by_side(selftests: Selftests,
                                                     tmp_path: Path) -> None:
    uuids, env = _node(tmp_path, 3)
    r = run(selftests, tmp_path / "r", "--include", PLACEMENT + "(env|rendezvous|alone|node|host)$",
            env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    t = r.tests()
    copies = t["selftest_placement@env"]["placements"]
    assert [c["gpu"]["index"] for c in copies] == [0, 1, 2]
    for i, c in enumerate(copies):
        got = _env_lines(c["out"])
        assert got["GPUCONFORM_DEVICES"] == str(i) and got["CUDA_VISIBLE_DEVICES"] == uuids[i]
        assert got["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID" and c["gpu"]["uuid"] == uuids[i]
    # every copy met the others: they ran at the same time
    assert t["selftest_placement@rendezvous"]["result"] == "pass"
    assert len(t["selftest_placement@rendezvous"]["placements"]) == 3
    # a gpu-alone test's copies never overlapped
    alone = t["selftest_placement@alone"]
    assert alone["result"] == "pass" and alone["placement"] == "gpu-alone"
    assert len(alone["placements"]) == 3
    node = t["selftest_placement@node"]
    assert node["placements"] == [] and node["gpu"] is None and node["placement"] == "node"
    got = _env_lines(node["out"])
    assert got["GPUCONFORM_DEVICES"] == "0,1,2" and got["CUDA_VISIBLE_DEVICES"] == "(unset)"
    host = _env_lines(t["selftest_placement@host"]["out"])
    assert host["GPUCONFORM_DEVICES"] == "(unset)" and host["CUDA_VISIBLE_DEVICES"] == "(unset)"
    starts = [x for x in r.journal() if x["event"] == "start"
              and x["test"] == "selftest_placement@env"]
    assert sorted(x["gpu"] for x in starts) == [0, 1, 2]
    node_info = r.json()["run"]["node"]
    assert [g["uuid"] for g in node_info["gpus"]] == uuids and node_info["jobs"] == 3


def test_jobs_one_runs_the_copies_one_after_another(selftests: Selftests,
                                                   tmp_path: Path) -> None:
    _, env = _node(tmp_path, 2, GPUCONFORM_SELFTEST_PLACEMENT_WAIT_MS="300")
    r = run(selftests, tmp_path / "r", "--include", PLACEMENT + "rendezvous$", "--jobs", "1",
            "--retries", "0", env=env)
    assert r.returncode == 1
    rec = r.tests()["selftest_placement@rendezvous"]
    assert rec["result"] == "fail" and rec["reason"].startswith("gpu0: ")
    assert "1 of 2 copies met" in rec["reason"]


def test_a_failure_on_one_gpu_names_it(selftests: Selftests, tmp_path: Path) -> None:
    _, env = _node(tmp_path, 3, GPUCONFORM_SELFTEST_FAIL_ON="1")
    r = run(selftests, tmp_path / "r", "--include", PLACEMENT + "fail-on$", "--retries", "0",
            env=env)
    assert r.returncode == 1
    rec = r.tests()["selftest_placement@fail-on"]
    assert rec["result"] == "fail" and rec["reason"].startswith("gpu1: ")
    assert [c["result"] for c in rec["placements"]] == ["pass", "fail", "pass"]
    assert "selftest_placement@fail-on: gpu1: " in (r.results / "summary.txt").read_text()


def test_devices_picks_the_gpus(selftests: Selftests, tmp_path: Path) -> None:
    uuids, env = _node(tmp_path, 4)
    r = run(selftests, tmp_path / "r", "--include", PLACEMENT + "(env|node)$",
            "--devices", f"2,{uuids[0][:14]}", env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    t = r.tests()
    assert [c["gpu"]["index"] for c in t["selftest_placement@env"]["placements"]] == [0, 2]
    got = _env_lines(t["selftest_placement@node"]["out"])
    assert got["GPUCONFORM_DEVICES"] == "0,2"
    assert got["CUDA_VISIBLE_DEVICES"] == f"{uuids[0]},{uuids[2]}"


def test_one_gpu_is_just_pinned(selftests: Selftests, tmp_path: Path) -> None:
    uuids, env = _node(tmp_path, 1)
    r = run(selftests, tmp_path / "r", "--include", PLACEMENT + "env$", env=env)
    rec = r.tests()["selftest_placement@env"]
    assert rec["placements"] == [] and rec["gpu"]["uuid"] == uuids[0]
    assert _env_lines(rec["out"])["CUDA_VISIBLE_DEVICES"] == uuids[0]


@pytest.mark.parametrize("args, want", [
    (["--devices", "5"], "--devices 5: no GPU 5: this node has 3"),
    (["--devices", "1,1"], "--devices 1,1: gpu1 "),
    (["--jobs", "4"], "--jobs 4: more than the 3 GPU(s) of this run"),
    (["--devices", "0", "--jobs", "2"], "--jobs 2: more than the 1 GPU(s) of this run"),
    (["--jobs", "0"], "--jobs 0: must be 1 or more"),
])
def test_bad_devices_or_jobs_is_one_line_and_runs_nothing(
        selftests: Selftests, tmp_path: Path, args: list[str], want: str) -> None:
    _, env = _node(tmp_path, 3)
    r = run(selftests, tmp_path / "r", "--include", PLACEMENT + "env$", *args, env=env)
    assert want in one_line_error(r)
    assert not (tmp_path / "r").exists()


def test_a_gpu_that_disappears_leaves_the_others_running(selftests: Selftests,
                                                         tmp_path: Path) -> None:
    uuids, env = _node(tmp_path, 3)
    gone = tmp_path / "node/proc/driver/nvidia/gpus/0000:20:00.0"
    env["GPUCONFORM_SELFTEST_HIDE"] = f"1:{gone}"
    r = run(selftests, tmp_path / "r", "--include", PLACEMENT + "(hide-device|env|node)$",
            env=env)
    assert r.returncode == 1
    t = r.tests()
    assert t["selftest_placement@hide-device"]["result"] == "pass"
    rec = t["selftest_placement@env"]
    assert rec["result"] == "notrun" and rec["expected"] is False
    why = f"gpu1 ({uuids[1][:12]}, 0000:20:00.0) disappeared during the run"
    assert rec["reason"].startswith(f"gpu1: not run: {why}")
    assert [c["result"] for c in rec["placements"]] == ["pass", "notrun", "pass"]
    assert t["selftest_placement@node"]["result"] == "pass"
    summary = (r.results / "summary.txt").read_text()
    assert why in summary
    assert r.json()["run"]["node"]["lost"]["1"].startswith(why)


# ------------------------------------------------- metrics of several copies


def test_a_metric_of_several_gpus_is_one_metric_of_the_run() -> None:
    from gpuconform.perf import gate
    from gpuconform.core.runmetrics import run_metrics

    def m(gpu: int, samples: list[float]) -> dict[str, object]:
        return {"test": "b", "subtest": "s", "name": "lat", "unit": "ns", "better": "lower",
                "samples": samples, "gpu": gpu}

    rec = {"result": "pass", "metrics": [m(0, [10.0, 11.0, 30.0]), m(1, [20.0, 21.0]),
                                         m(2, [12.0, 13.0, 14.0, 99.0])]}
    rm = run_metrics({"b@s": rec})["b@s:lat"]
    assert rm.samples == (10.0, 11.0, 30.0, 20.0, 21.0, 12.0, 13.0, 14.0, 99.0)
    assert rm.gpus == (0, 1, 2) and rm.per_copy == 2
    # each copy's good half weighs the same: (10.5 + 20 + 12.5) / 3
    assert gate.run_statistic(rm) == pytest.approx((10.5 + 20.0 + 12.5) / 3)
    assert gate.summarize(0, rm.samples, "lower", rm.parts).g == pytest.approx(43.0 / 3, rel=1e-4)
    assert gate.summarize(0, rm.samples, "lower", rm.parts).n == 2
    one = run_metrics({"b@s": {"result": "pass", "metrics": [m(3, [5.0, 6.0])]}})["b@s:lat"]
    assert one.gpus == (3,) and gate.run_statistic(one) == 5.0 and one.per_copy == 2


# ------------------------------------- one baseline per GPU model, nodes keyed


def _results(gpus: int, jobs: int, metrics: dict[str, list[list[float]]]) -> dict[str, object]:
    """results.json of a node of `gpus` GPUs running each test once per GPU:
    per test b@<name>, one sample list a GPU."""
    tests = {}
    for name, per_gpu in metrics.items():
        ms = [{"test": "b", "subtest": name, "name": "lat", "unit": "ns", "better": "lower",
               "samples": s, "gpu": i} for i, s in enumerate(per_gpu)]
        tests[f"b@{name}"] = {"result": "pass", "placement": "gpu", "metrics": ms,
                              "placements": [{}] * len(per_gpu) if len(per_gpu) > 1 else []}
    fp = {"gpu_model": "G", "gpus": f"{gpus}x G", "driver": "d", "runtime": "r", "kernel": "6.1",
          "arch": "x86_64", "cpu_model": "CPU"}
    return {"fingerprint": fp, "run": {"node": {"gpus": [{}] * gpus, "node_gpus": gpus,
                                                "jobs": jobs}}, "tests": tests}


def test_node_metrics_are_keyed_by_the_node_device_metrics_pooled(tmp_path: Path) -> None:
    from gc_testutil import gate_baseline
    from gpuconform.core.catalogue import load_catalogue
    from gpuconform.perf.judge import compare_run
    from gpuconform.core.runmetrics import run_metrics
    from gpuconform.perf.scope import labeler

    cat = tmp_path / "metrics.txt"
    cat.write_text("b@host:lat ns node  # timed on the host\nb@gpu:lat ns device\n")
    catalogue = load_catalogue(str(cat))
    one = _results(1, 1, {"host": [[10.0] * 8], "gpu": [[5.0] * 8]})
    four = _results(4, 4, {"host": [[12.0] * 8] * 4, "gpu": [[5.0] * 8] * 4})
    keys1 = set(run_metrics(one["tests"], node=labeler(one, catalogue)))  # type: ignore[arg-type]
    keys4 = set(run_metrics(four["tests"], node=labeler(four, catalogue)))  # type: ignore[arg-type]
    assert keys1 == {"b@host:lat [1 of 1 GPUs, 1 at once, CPU]", "b@gpu:lat"}
    assert keys4 == {"b@host:lat [4 of 4 GPUs, 4 at once, CPU]", "b@gpu:lat"}
    # a baseline of x1 runs: the x4 night compares its GPU metric with them, and
    # its host metric is new, not a regression, and the x1 entry is not "missing"
    runs = [[5.0 + i / 100] * 8 for i in range(5)]
    b = gate_baseline({"b@gpu:lat": ("ns", "lower", runs),
                       "b@host:lat [1 of 1 GPUs, 1 at once, CPU]": ("ns", "lower", runs)})
    got = {c.key: c.verdict for c in compare_run(four["tests"], b,  # type: ignore[arg-type]
                                                  labeler(four, catalogue))}
    assert got == {"b@gpu:lat": "unchanged", "b@host:lat [4 of 4 GPUs, 4 at once, CPU]": "new"}
    got1 = {c.key: c.verdict for c in compare_run(one["tests"], b,  # type: ignore[arg-type]
                                                   labeler(one, catalogue))}
    assert got1["b@host:lat [1 of 1 GPUs, 1 at once, CPU]"] == "regression"  # 10 ns vs 5


def test_the_report_shows_each_results_gpus(selftests: Selftests, tmp_path: Path) -> None:
    uuids, env = _node(tmp_path, 2, GPUCONFORM_SELFTEST_FAIL_ON="1")
    r = run(selftests, tmp_path / "r", "--include", PLACEMENT + "(fail-on|node)$", "--retries",
            "0", env=env)
    page = (r.results / "report.html").read_text()
    assert f'<span title="{uuids[0]} 0000:18:00.0">gpu0</span>' in page
    assert f'<span title="{uuids[1]} 0000:20:00.0">gpu1</span>' in page


def test_a_kernel_line_naming_one_gpu_of_several_loses_it(tmp_path: Path) -> None:
    from gpuconform.core.placement import NodePlan

    fake_gpus(tmp_path, 3)
    g = find_gpus(tmp_path)
    plan = NodePlan(g, g, 3)
    xid = "kernel log: <3>[1.0] NVRM: Xid (PCI:0000:20:00): 79, GPU has fallen off the bus."
    assert plan.lose("kernel log: GPU reset begin! (no address)") is None  # the run stops
    assert plan.lose(xid) == f"{g[1].label()} was lost: {xid}" and set(plan.lost) == {1}
    assert plan.lose(xid) is None  # already lost: a second line stops the run
    assert plan.lose("amdgpu 0000:18:00.0: amdgpu: GPU reset begin!") is not None
    assert plan.lose("NVRM: Xid (PCI:0000:28:00): 79") is None  # the last GPU left: stop
    one = NodePlan(g[:1], g[:1], 1)
    assert one.lose("NVRM: Xid (PCI:0000:18:00): 79") is None  # a node of one GPU stops


def test_a_gpu_fallen_off_the_bus_for_real_leaves_the_others_running(
        selftests: Selftests, tmp_path: Path) -> None:
    from test_run_flow import kmsg_usable

    why = kmsg_usable()
    if why:
        pytest.skip(why)
    _, env = _node(tmp_path, 3, GPUCONFORM_SELFTEST_XID="1:0000:20:00",
                   GPUCONFORM_SELFTEST_KMSG="1")
    r = run(selftests, tmp_path / "r", "--include", PLACEMENT + "(xid|env|node)$",
            "--kmsg", "/dev/kmsg", env=env)
    assert r.returncode == 1
    t = r.tests()
    x = t["selftest_placement@xid"]
    assert x["result"] == "abort" and "was lost: " in x["reason"] and "Xid" in x["reason"]
    assert any("Xid (PCI:0000:20:00): 79" in line for line in x["dmesg"]), x["dmesg"]
    env_rec = t["selftest_placement@env"]
    assert [c["result"] for c in env_rec["placements"]] == ["pass", "notrun", "pass"]
    assert t["selftest_placement@node"]["result"] == "pass"
    assert not r.json()["run"]["aborted"]


# ------------------------------------------------------------ per-GPU queues


def _started(r: object, gpu: int) -> list[str]:
    """The tests GPU gpu started, in the journal's order."""
    return [x["test"].split("@", 1)[1] for x in r.journal()  # type: ignore[attr-defined]
            if x["event"] == "start" and x.get("gpu") == gpu]


def _span(rec: dict[str, object]) -> tuple[float, float]:
    copies = rec["placements"] or [rec]
    return (min(c["time"]["start"] for c in copies),  # type: ignore[index]
            max(c["time"]["end"] for c in copies))  # type: ignore[index]


def test_each_gpu_walks_the_one_gpu_tests_from_its_own_start(selftests: Selftests,
                                                             tmp_path: Path) -> None:
    _, env = _node(tmp_path, 3, GPUCONFORM_SELFTEST_FAIL_ON="7")
    r = run(selftests, tmp_path / "r", "--include", PLACEMENT + "(env|alone|fail-on)$",
            env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    t = r.tests()
    # 2 tests over 3 GPUs: GPUs 0 and 1 start at the first, GPU 2 at the second
    assert [_started(r, g) for g in range(3)] == [["env", "fail-on", "alone"],
                                                  ["env", "fail-on", "alone"],
                                                  ["fail-on", "env", "alone"]]
    for name in ("env", "fail-on"):
        assert [c["gpu"]["index"] for c in t[f"selftest_placement@{name}"]["placements"]] == \
            [0, 1, 2]
    # the one-GPU tests were gathered before the gpu-alone one, which ran with nothing beside it
    alone = t["selftest_placement@alone"]
    assert alone["result"] == "pass"
    gpu_end = max(_span(t[f"selftest_placement@{n}"])[1] for n in ("env", "fail-on"))
    assert _span(alone)[0] >= gpu_end
    assert ("3 GPUs: one-GPU tests on each, each GPU walking them from its own start "
            "(per-GPU queues)") in (r.results / "summary.txt").read_text()


def test_lockstep_runs_each_tests_copies_together_in_the_lists_order(
        selftests: Selftests, tmp_path: Path) -> None:
    _, env = _node(tmp_path, 3, GPUCONFORM_SELFTEST_FAIL_ON="7")
    r = run(selftests, tmp_path / "r", "--include", PLACEMENT + "(env|alone|fail-on)$",
            "--lockstep", env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert [_started(r, g) for g in range(3)] == [["env", "alone", "fail-on"]] * 3
    t = r.tests()
    assert _span(t["selftest_placement@alone"])[1] <= _span(t["selftest_placement@fail-on"])[0]
    assert r.json()["run"]["options"]["lockstep"] is True
    assert "3 GPUs: one-GPU tests on each, in lockstep, 3 at a time" in \
        (r.results / "summary.txt").read_text()


def test_sigterm_in_the_queues_kills_every_copy_and_keeps_the_results(
        selftests: Selftests, tmp_path: Path, marker_env: bytes) -> None:
    import json

    from gc_testutil import processes_with, signal_when_running

    # 3 GPUs, each copy of rendezvous waiting for 4: they hang until killed
    _, env = _node(tmp_path, 3, GPUCONFORM_SELFTEST_PLACEMENT_WAIT_MS="600000")
    env["GPUCONFORM_SELFTEST_PLACEMENT_N"] = "4"
    results = tmp_path / "r"
    rc, out = signal_when_running(
        ["run", "--results", str(results), "--build", str(selftests.build), "--selftest",
         "--no-baseline", "--kmsg", "off", "--include", PLACEMENT + "(env|rendezvous)$"],
        env, marker_env, "--run-subtest rendezvous", copies=3)
    assert processes_with(marker_env) == []
    assert rc == 1, out
    tests = json.loads((results / "results.json").read_text())["tests"]
    # env waited for its copy on gpu2, which stood behind the hung rendezvous
    env_rec = tests["selftest_placement@env"]
    assert env_rec["result"] == "incomplete" and "SIGTERM" in env_rec["reason"], env_rec
    # every GPU had begun rendezvous: it is kept, saying which copies ended
    rec = tests["selftest_placement@rendezvous"]
    assert rec["result"] == "incomplete", rec
    assert "while the GPU queues ran it: gpu0 " in rec["reason"] and "SIGTERM" in rec["reason"]
    assert len(rec["placements"]) == 3
