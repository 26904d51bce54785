"""profiler-sessions (lib/prof_sessions.c) through the runner's eyes: the subtest
re-executes its binary once per plan and relays what the plan printed into its
own output. unit_gaps' sess-protocol runs it on a fake device; the runner's own
protocol parser must find each plan as a dynamic subtest with its result, and no
anomaly: a relayed framing line ("Subtest ...: FAIL") read as this process's own
would lose every plan's result."""

from __future__ import annotations

import subprocess

from gc_testutil import HANG_GUARD_S, Selftests
from gpuconform.core.protocol import parse_output


def test_each_plan_is_one_dynamic_subtest_and_the_relay_adds_no_protocol_line(
        selftests: Selftests) -> None:
    unit = selftests.build / "tests" / "unit" / "unit_gaps"
    p = subprocess.run([str(unit), "--run-subtest", "sess-protocol"], capture_output=True,
                       text=True, timeout=HANG_GUARD_S)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    parsed = parse_output(p.stdout)
    assert parsed.anomalies == []
    st = parsed.get("sess-protocol")
    assert st is not None and st.result is not None and st.result.value == "SUCCESS"
    assert {k: d.result.value for k, d in st.dynamic.items() if d.result} == \
        {"kernel-cs": "SUCCESS", "kernel-sc": "SUCCESS", "copies": "SUCCESS"}
    assert "  | plan kernel-cs: 2 sessions of a kernel kind" in p.stdout  # the plan's lines
