"""progress.py: ETA arithmetic, the line, tty and plain output (fake clock, no sleeping)."""

from __future__ import annotations

import io

import pytest

from gpuconform.core.progress import Progress, estimate_remaining, format_duration, format_line


@pytest.mark.parametrize("s, text", [(0, "0s"), (59.4, "59s"), (60, "1m00s"), (200, "3m20s"),
                                     (3600, "1h00m"), (3725, "1h02m"), (-3, "0s")])
def test_format_duration(s: float, text: str) -> None:
    assert format_duration(s) == text


def test_eta_prefers_the_baseline_then_the_mean_so_far() -> None:
    remaining = ["a", "b", "c"]
    assert estimate_remaining(remaining, {"a": 10, "b": 20, "c": 30}, []) == 60
    assert estimate_remaining(remaining, {"a": 10}, [2, 4]) == 10 + 3 + 3
    assert estimate_remaining(remaining, {"a": 10}, []) is None  # b, c: nothing to go on
    assert estimate_remaining([], {}, []) == 0
    # the running test's elapsed time comes off its share, never below 0
    assert estimate_remaining(remaining, {"a": 10, "b": 20, "c": 30}, [], "a", 4) == 56
    assert estimate_remaining(remaining, {"a": 10, "b": 20, "c": 30}, [], "a", 40) == 50


def test_line() -> None:
    line = format_line(12, 340, {"pass": 10, "fail": 1, "skip": 1, "crash": 0}, 200,
                       "host_io@direct-read", 4.2)
    assert line == ("gpuconform: [12/340] 10 pass, 1 fail, 1 skip | ETA 3m20s | "
                    "host_io@direct-read 4s")
    assert format_line(0, 3, {}, None) == "gpuconform: [0/3] | ETA ?"
    assert len(format_line(1, 2, {"pass": 1}, 5, "x" * 200, 0, width=40)) == 39


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def test_what_the_running_test_waits_on_follows_its_name() -> None:
    clock = Clock()
    p = Progress(io.StringIO(), ["a@x", "b@y"], {"a@x": 5, "b@y": 5}, tty=False, clock=clock)
    p.note = lambda: "4 GPU queues: 3 of 8 copies ended"
    p.start_test("a@x")
    clock.t += 2
    assert p.line().endswith("| a@x (4 GPU queues: 3 of 8 copies ended) 2s")
    p.end_test("a@x", "pass", 2)
    assert "queues" not in p.line()  # nothing running: no note


def test_plain_mode_prints_every_ten_seconds_and_at_the_end() -> None:
    out, clock = io.StringIO(), Clock()
    p = Progress(out, ["a", "b", "c"], {"a": 5, "b": 5, "c": 5}, tty=False, clock=clock)
    p.start_test("a")
    clock.t += 4
    p.tick()
    assert out.getvalue() == ""  # nothing before the first 10 s
    clock.t += 6
    p.tick()
    assert out.getvalue() == "gpuconform: [0/3] | ETA 10s | a 10s\n"
    p.end_test("a", "pass", 10.5)
    p.start_test("b")
    clock.t += 3
    p.tick()
    assert out.getvalue().count("\n") == 1  # 3 s since the last line
    p.end_test("b", "fail", 1.0)
    clock.t += 10
    p.tick()
    assert out.getvalue().splitlines()[-1] == "gpuconform: [2/3] 1 fail, 1 pass | ETA 5s"
    p.end_test("c", "pass", 1.0)
    p.close()
    assert out.getvalue().splitlines()[-1] == "gpuconform: [3/3] 2 pass, 1 fail | ETA 0s"
    p.close()  # twice: nothing more
    assert out.getvalue().count("\n") == 3


def test_plain_line_starts_on_a_fresh_line_when_the_log_is_mid_line() -> None:
    out, clock = io.StringIO(), Clock()
    p = Progress(out, ["a"], tty=False, clock=clock, line_start=lambda: False)
    p.start_test("a")
    clock.t += 11
    p.tick()
    assert out.getvalue().startswith("\ngpuconform: [0/1]")


def test_tty_mode_redraws_in_place_and_clears() -> None:
    out, clock = io.StringIO(), Clock()
    p = Progress(out, ["a", "b"], tty=True, clock=clock, width=lambda: 80,
                 done={"a": "pass"})  # resumed: a is done already
    p.start_test("b")
    assert out.getvalue() == "\rgpuconform: [1/2] 1 pass | ETA ? | b 0s\x1b[K"
    clock.t += 2
    p.tick()
    assert out.getvalue().endswith("\rgpuconform: [1/2] 1 pass | ETA ? | b 2s\x1b[K")
    p.clear()
    assert out.getvalue().endswith("\r\x1b[K")
    n = len(out.getvalue())
    p.clear()  # nothing drawn: nothing written
    assert len(out.getvalue()) == n
    p.end_test("b", "skip", 2.0)
    p.close()
    assert out.getvalue().endswith("\r\x1b[K") and "\n" not in out.getvalue()


def test_a_broken_stream_never_raises() -> None:
    out = io.StringIO()
    out.close()
    p = Progress(out, ["a"], tty=True)
    p.start_test("a")
    p.end_test("a", "pass", 1.0)
    p.close()


def test_on_stderr_modes() -> None:
    """progress.on_stderr: off, and auto under -v, give no line; plain gives a started
    line on its own stream, which release() closes."""
    from gpuconform.core.progress import on_stderr

    def at_start() -> bool:
        return True

    assert on_stderr("off", 0, ["a@b"], {}, {}, at_start) is None
    assert on_stderr("auto", 1, ["a@b"], {}, {}, at_start) is None
    p = on_stderr("plain", 1, ["a@b", "a@c"], {"a@b": 2.0}, {"a@b": "pass"}, at_start)
    assert p is not None and not p.tty and p.owns_stream and p.finished == {"a@b"}
    stream = p.stream
    p.release()
    assert stream.closed and not p.owns_stream
    p.release()  # twice is harmless
