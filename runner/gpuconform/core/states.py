"""Result states and the pure classification of one subtest run.

classify() looks only at what it is given (exit status or signal, whether the
runner timed the binary out, the parsed stdout, the subtest asked for) and says
which state the subtest ended in, and why, in one line.
"""

from __future__ import annotations

import enum
import signal
from dataclasses import dataclass, field

from .protocol import LineResult, ParsedOutput, Subtest

__all__ = [
    "State",
    "ExitCode",
    "Verdict",
    "DynamicVerdict",
    "classify",
    "apply_dmesg",
    "signal_name",
    "worst",
    "FAILURE_STATES",
    "failed",
]


class State(str, enum.Enum):
    NOTRUN = "notrun"  # selected, never executed (run stopped early)
    SKIP = "skip"
    PASS = "pass"
    DMESG_WARN = "dmesg-warn"  # passed, with kernel log warnings in its window
    DMESG_FAIL = "dmesg-fail"  # failed with kernel log warnings, or passed with kernel errors
    FAIL = "fail"
    ERROR = "error"  # the runner could not run it as asked (exit 79, cannot exec...)
    INCOMPLETE = "incomplete"  # the binary ended without saying how the subtest ended
    TIMEOUT = "timeout"
    CRASH = "crash"
    ABORT = "abort"  # the binary said the system is in no state to go on

    @property
    def severity(self) -> int:
        return _SEVERITY[self]

    @property
    def is_failure(self) -> bool:
        return self in FAILURE_STATES


_SEVERITY: dict[State, int] = {s: i for i, s in enumerate(State)}

# States that make a run unsuccessful (gpuconform run exits 1).
FAILURE_STATES: frozenset[State] = frozenset(
    {
        State.DMESG_WARN,
        State.DMESG_FAIL,
        State.FAIL,
        State.ERROR,
        State.INCOMPLETE,
        State.TIMEOUT,
        State.CRASH,
        State.ABORT,
    }
)


def failed(state: str) -> bool:
    """A record's state text is a failure; a text that is no State counts as
    one (something to look at, never a pass)."""
    try:
        return State(state).is_failure
    except ValueError:
        return True


def worst(states: "list[State] | tuple[State, ...]") -> State:
    """The most severe of states (NOTRUN for none)."""
    return max(states, key=lambda s: s.severity, default=State.NOTRUN)


class ExitCode(enum.IntEnum):
    """igt_core's IGT_EXIT_* values (lib/core.h GC_EXIT_*)."""

    SUCCESS = 0
    SKIP = 77
    TIMEOUT = 78
    INVALID = 79
    FAILURE = 98
    ABORT = 112


_LINE_STATE: dict[LineResult, State] = {
    LineResult.SUCCESS: State.PASS,
    LineResult.FAIL: State.FAIL,
    LineResult.SKIP: State.SKIP,
    LineResult.CRASH: State.CRASH,
    LineResult.TIMEOUT: State.TIMEOUT,
}


def signal_name(signum: int) -> str:
    """SIGSEGV for 11; "signal 77" for a number with no name."""
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def describe_exit(returncode: int | None) -> str:
    if returncode is None:
        return "still running"
    if returncode < 0:
        return f"killed by {signal_name(-returncode)}"
    try:
        return f"exit status {returncode} ({ExitCode(returncode).name.lower()})"
    except ValueError:
        return f"exit status {returncode}"


@dataclass
class DynamicVerdict:
    state: State
    reason: str = ""
    time: float | None = None


@dataclass
class Verdict:
    state: State
    reason: str = ""
    dynamic: dict[str, DynamicVerdict] = field(default_factory=dict)
    # Facts worth reporting that did not decide the state.
    notes: list[str] = field(default_factory=list)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _classify_dynamic(
    st: Subtest, returncode: int | None, timed_out: bool
) -> dict[str, DynamicVerdict]:
    out: dict[str, DynamicVerdict] = {}
    for d in st.dynamic.values():
        if d.result is not None:
            state = _LINE_STATE[d.result]
            reason = ""
            if state is State.SKIP:
                reason = d.skip_reason or "(no skip reason given)"
            elif state is State.CRASH:
                reason = "reported CRASH"
                if returncode is not None and returncode < 0:
                    reason = f"killed by {signal_name(-returncode)}"
            out[d.name] = DynamicVerdict(state, reason, d.time)
            continue
        # Started, never finished.
        if timed_out:
            out[d.name] = DynamicVerdict(State.TIMEOUT, "running when the runner's timeout hit")
        elif returncode is not None and returncode < 0:
            out[d.name] = DynamicVerdict(
                State.CRASH, f"killed by {signal_name(-returncode)} while running"
            )
        elif returncode == ExitCode.ABORT:
            out[d.name] = DynamicVerdict(State.ABORT, "running when the binary aborted")
        else:
            out[d.name] = DynamicVerdict(
                State.INCOMPLETE,
                f"started, no result line ({describe_exit(returncode)})",
            )
    return out


def _failure_detail(failures: list[str]) -> str:
    return f": {failures[0]}" if failures else ""


def classify(
    subtest: str,
    parsed: ParsedOutput,
    *,
    returncode: int | None,
    timed_out: bool = False,
    timeout_s: float | None = None,
    failures: list[str] | None = None,
) -> Verdict:
    """State of `subtest` after `BIN --run-subtest subtest`.

    returncode: the exit status, or -SIGNUM when a signal killed the binary
    (subprocess's convention); None when it could not be reaped (stuck in the
    kernel even after SIGKILL: only with timed_out). failures: the failure
    messages the binary printed on stderr (protocol.scan_failures), used to
    make a FAIL's reason specific.
    """
    failures = failures or []
    st = parsed.get(subtest)
    line = st.result if st is not None else None
    dyn = _classify_dynamic(st, returncode, timed_out) if st is not None else {}
    notes: list[str] = []
    others = sorted(n for n in parsed.subtests if n != subtest)
    if others:
        notes.append(f"output has results for other subtests too: {', '.join(others[:5])}")
    notes.extend(f"protocol: {a}" for a in parsed.anomalies)
    if parsed.anomalies_dropped:
        notes.append(f"protocol: {parsed.anomalies_dropped} more anomalies not listed")
    running_dyn = st.unfinished_dynamic() if st is not None else []
    where = f" during dynamic subtest {running_dyn[-1]}" if running_dyn else ""
    line_word = line.value if line is not None else None
    no_line = f"no 'Subtest {subtest}:' result line"

    def verdict(state: State, reason: str) -> Verdict:
        return Verdict(state, reason, dyn, notes)

    def line_against(status: str, want: LineResult, named: str) -> Verdict | None:
        """An exit status (as `status`, then as `named`) without its result
        line, or with another: INCOMPLETE or FAIL; None when the line agrees."""
        if line is None:
            return verdict(State.INCOMPLETE, f"exit status {status} but {no_line}{where}")
        if line is not want:
            return verdict(
                State.FAIL, f"the subtest reported {line_word} but the exit status is {named}"
            )
        return None

    # 1. The runner's timeout outranks whatever the binary managed to say.
    if timed_out:
        limit = f" after {timeout_s:g}s" if timeout_s is not None else ""
        reason = f"timed out{limit}{where}"
        if line is not None:
            reason += f" (the subtest had reported {line_word}; the binary did not exit)"
        elif st is None or not st.started:
            reason += " (the subtest never started)"
        if returncode is None:
            reason += "; the process did not die even after SIGKILL"
        return verdict(State.TIMEOUT, reason)
    if returncode is None:
        return verdict(State.ERROR, "the binary's exit status is unknown")

    # 2. Death by a signal is a crash, whatever was printed before it.
    if returncode < 0:
        reason = f"killed by {signal_name(-returncode)}{where}"
        if line is LineResult.CRASH or line is None:
            pass
        else:
            reason += f" after the subtest reported {line_word}"
        return verdict(State.CRASH, reason)

    # 3. The exit statuses that speak for themselves.
    if returncode == ExitCode.ABORT:
        return verdict(State.ABORT, f"the binary aborted (exit status 112){where}"
                       + _failure_detail([f for f in failures if "Test abort" in f] or failures))
    if returncode == ExitCode.INVALID:
        return verdict(
            State.ERROR,
            "the binary rejected the invocation (exit status 79, invalid)"
            + _failure_detail(failures),
        )
    if returncode == ExitCode.TIMEOUT:
        return verdict(State.TIMEOUT, f"the binary reported its own timeout (exit status 78){where}")

    # 4. A CRASH line: the binary caught the signal but did not die of it.
    if line is LineResult.CRASH:
        return verdict(State.CRASH, f"the subtest reported CRASH ({describe_exit(returncode)})")

    if returncode == ExitCode.SUCCESS:
        disagreed = line_against("0", LineResult.SUCCESS, "0 (success)")
        if disagreed is not None:
            return disagreed
        bad = [n for n, d in dyn.items() if d.state.is_failure]
        if bad:
            return verdict(
                State.FAIL,
                f"the subtest reported SUCCESS but dynamic subtest(s) did not pass: {', '.join(bad)}",
            )
        return verdict(State.PASS, "")

    if returncode == ExitCode.SKIP:
        disagreed = line_against("77 (skip)", LineResult.SKIP, "77 (skip)")
        if disagreed is not None:
            return disagreed
        assert st is not None
        if st.skip_reason:
            return verdict(State.SKIP, st.skip_reason)
        notes.append("the binary gave no 'Skip reason:' line")
        return verdict(State.SKIP, "(no skip reason given)")

    if returncode == ExitCode.FAILURE:
        bad = [n for n, d in dyn.items() if d.state.is_failure]
        if line is None:
            return verdict(State.FAIL, f"exit status 98 (failure) and {no_line}{where}"
                           + _failure_detail(failures))
        if line is not LineResult.FAIL:
            return verdict(
                State.FAIL,
                f"the subtest reported {line_word} but the exit status is 98 (failure)"
                + _failure_detail(failures),
            )
        if bad:
            return verdict(
                State.FAIL,
                f"{_plural(len(bad), 'dynamic subtest')} failed: {', '.join(bad)}"
                + _failure_detail(failures),
            )
        return verdict(State.FAIL, "the subtest reported FAIL" + _failure_detail(failures))

    # 5. Anything else is outside the protocol.
    hint = ""
    if 128 < returncode < 128 + 65:
        hint = f" (128 + {returncode - 128}: {signal_name(returncode - 128)} in a wrapper?)"
    said = f"; the subtest reported {line_word}" if line is not None else f"; {no_line}"
    return verdict(State.FAIL, f"unexpected exit status {returncode}{hint}{said}")


def apply_dmesg(
    state: State, reason: str, warnings: list[str], failures: list[str]
) -> tuple[State, str]:
    """The state once the kernel log of the test's window is weighed (igt_runner):

        pass + warnings            -> dmesg-warn
        pass + "fail" lines        -> dmesg-fail
        fail + warnings or "fail"  -> dmesg-fail
        anything else              -> unchanged (a skip, a crash... say more already)

    warnings / failures: the kernel log lines kmsg.classify_dmesg() sorted."""
    if state is State.PASS:
        if failures:
            return State.DMESG_FAIL, f"kernel log: {failures[0]}"
        if warnings:
            return State.DMESG_WARN, f"kernel log: {warnings[0]}"
        return state, reason
    if state is State.FAIL and (failures or warnings):
        line = (failures or warnings)[0]
        return State.DMESG_FAIL, f"{reason}; kernel log: {line}" if reason else f"kernel log: {line}"
    return state, reason
