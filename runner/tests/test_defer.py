"""lib/core's gc_defer() end to end: selftest_defer run directly, one subtest at a
time, its stdout (each cleanup prints "cleanup LABEL") and exit status checked
against what lib/core.h promises: last first, on every exit of the scope."""

from __future__ import annotations

import os
import re
import subprocess

import pytest

from gc_testutil import HANG_GUARD_S, Selftests

PASS, SKIP, FAIL = 0, 77, 98  # GC_EXIT_*
FIXTURE_END = ["teardown", "cleanup fixture"]  # setup's cleanup runs after teardown()


def run(st: Selftests, subtest: str, **env: str) -> tuple[int, list[str], str]:
    """Exit status, stdout lines without the banner and with times as (T), stderr."""
    full = dict(os.environ)
    full.pop("GPUCONFORM_SELFTEST_DEFER_SETUP_FAIL", None)
    full.update(env)
    p = subprocess.run([str(st.binary("selftest_defer")), "--run-subtest", subtest],
                       capture_output=True, text=True, timeout=HANG_GUARD_S, env=full)
    lines = [re.sub(r"\(\d+\.\d{3}s\)", "(T)", line) for line in p.stdout.splitlines()
             if not line.startswith("gpuconform-Version: ")]
    return p.returncode, lines, p.stderr


def test_pass_runs_cleanups_last_first(selftests: Selftests) -> None:
    code, out, err = run(selftests, "lifo-pass")
    assert code == PASS, err
    assert out == ["Starting subtest: lifo-pass", "body done",
                   "cleanup 3", "cleanup 2", "cleanup 1",
                   "Subtest lifo-pass: SUCCESS (T)", *FIXTURE_END]


def test_failed_assert_runs_what_was_deferred_before_it(selftests: Selftests) -> None:
    code, out, err = run(selftests, "lifo-assert")
    assert code == FAIL
    assert out == ["Starting subtest: lifo-assert", "cleanup 2", "cleanup 1",
                   "Subtest lifo-assert: FAIL (T)", *FIXTURE_END]
    assert "Failed assertion: 1 + 1 == 3" in err


def test_skip_runs_cleanups_and_still_skips(selftests: Selftests) -> None:
    code, out, _ = run(selftests, "lifo-skip")
    assert code == SKIP
    assert out == ["Starting subtest: lifo-skip",
                   "Skip reason: skipped after deferring two cleanups",
                   "cleanup 2", "cleanup 1", "Subtest lifo-skip: SKIP (T)", *FIXTURE_END]


def test_calloc_record_is_zeroed_and_dropped_in_order(selftests: Selftests) -> None:
    code, out, err = run(selftests, "calloc-record")
    assert code == PASS, err
    assert out == ["Starting subtest: calloc-record", "body done",
                   "cleanup after the record", "cleanup record 7",
                   "Subtest calloc-record: SUCCESS (T)", *FIXTURE_END]


def test_dynamic_cleanups_run_before_its_result_line(selftests: Selftests) -> None:
    code, out, err = run(selftests, "dynamic")
    assert code == FAIL
    assert out == [
        "Starting subtest: dynamic",
        "Starting dynamic subtest: pass",
        "cleanup pass-b", "cleanup pass-a",
        "Dynamic subtest pass: SUCCESS (T)",
        "Starting dynamic subtest: fail",
        "cleanup fail-a",
        "Dynamic subtest fail: FAIL (T)",
        "Starting dynamic subtest: bad-cleanup",
        "cleanup bad-c", "cleanup bad-b", "cleanup bad-a",  # bad-b fails; bad-a still runs
        "Dynamic subtest bad-cleanup: FAIL (T)",  # its body passed: the cleanup failed it
        "subtest body done",
        "cleanup subtest-2", "cleanup subtest-1",  # the subtest's own, at its end
        "Subtest dynamic: FAIL (T)",
        *FIXTURE_END,
    ]
    assert "cleanup bad-b breaks on purpose" in err


def test_dynamic_filtered_to_a_passing_one(selftests: Selftests) -> None:
    code, out, err = run(selftests, "dynamic@pass")
    assert code == PASS, err
    assert out == ["Starting subtest: dynamic", "Starting dynamic subtest: pass",
                   "cleanup pass-b", "cleanup pass-a", "Dynamic subtest pass: SUCCESS (T)",
                   "subtest body done", "cleanup subtest-2", "cleanup subtest-1",
                   "Subtest dynamic: SUCCESS (T)", *FIXTURE_END]


def test_failing_cleanup_fails_a_pass_and_the_rest_run(selftests: Selftests) -> None:
    code, out, err = run(selftests, "cleanup-fails")
    assert code == FAIL
    assert out == ["Starting subtest: cleanup-fails", "cleanup 3", "cleanup 2", "cleanup 1",
                   "Subtest cleanup-fails: FAIL (T)", *FIXTURE_END]
    assert "say_then_fail(): Failed assertion: 0\n  cleanup 2 breaks on purpose" in err


def test_a_cleanup_cannot_skip(selftests: Selftests) -> None:
    code, out, err = run(selftests, "cleanup-skips")
    assert code == FAIL
    assert out == ["Starting subtest: cleanup-skips", "cleanup 2", "cleanup 1",
                   "Subtest cleanup-skips: FAIL (T)", *FIXTURE_END]
    assert 'FAIL: a deferred cleanup cannot skip ("cleanup 2 tries to skip")' in err


def test_overflow_names_the_limit_and_runs_what_was_deferred(selftests: Selftests) -> None:
    code, out, err = run(selftests, "overflow")
    assert code == FAIL
    assert out == ["Starting subtest: overflow", "64 deferred, with the fixture's",
                   "cleanup count: 62 ran before",  # 63 of the subtest's, the first last
                   "Subtest overflow: FAIL (T)", *FIXTURE_END]
    assert "more than GC_DEFER_MAX (64) cleanups deferred at once" in err


def test_helper_thread_is_refused(selftests: Selftests) -> None:
    code, out, err = run(selftests, "thread")
    assert code == FAIL
    # the failure in a helper thread ends the process: no cleanup runs
    assert out == ["Starting subtest: thread", "Subtest thread: FAIL (T)"]
    assert "gc_defer() from a helper thread" in err


def test_forked_child_is_refused(selftests: Selftests) -> None:
    code, out, err = run(selftests, "child")
    assert code == PASS, err
    assert out == ["Starting subtest: child", "the child exited 98", "cleanup parent's",
                   "Subtest child: SUCCESS (T)", *FIXTURE_END]
    assert "gc_defer() in a gc_fork_run() child" in err
    assert "cleanup child's" not in out


def test_failed_fixture_setup_runs_its_cleanups_at_once(selftests: Selftests) -> None:
    code, out, err = run(selftests, "lifo-pass,lifo-skip",
                         GPUCONFORM_SELFTEST_DEFER_SETUP_FAIL="1")
    assert code == FAIL
    assert out == ["Starting subtest: lifo-pass", "cleanup fixture",
                   "Subtest lifo-pass: FAIL (T)",
                   "Starting subtest: lifo-skip", "Subtest lifo-skip: FAIL (T)"]
    assert "setup fails on purpose" in err


@pytest.mark.parametrize("subtest", ["lifo-pass", "lifo-assert", "overflow"])
def test_fixture_cleanup_runs_once_at_the_end(selftests: Selftests, subtest: str) -> None:
    _, out, _ = run(selftests, f"{subtest},cleanup-fails")
    assert out.count("cleanup fixture") == 1 and out[-2:] == FIXTURE_END
