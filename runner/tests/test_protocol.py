"""protocol.py: parsing of --list-subtests and of a run's stdout and stderr."""

from __future__ import annotations

import pytest

from gpuconform.core.protocol import (
    LineResult,
    OutputParser,
    is_valid_name,
    parse_list_output,
    parse_output,
    scan_failures,
    skip_location,
)

# ------------------------------------------------------------ list-subtests


def test_list_plain() -> None:
    out = parse_list_output(b"alpha\nbeta-2\ngamma_3\n")
    assert out.names == ["alpha", "beta-2", "gamma_3"]
    assert out.problems == []


def test_list_blank_lines_crlf_and_no_final_newline() -> None:
    out = parse_list_output("\nalpha\r\n\n  beta  \ngamma")
    assert out.names == ["alpha", "beta", "gamma"]
    assert out.problems == []


def test_list_empty() -> None:
    out = parse_list_output(b"")
    assert out.names == [] and out.problems == []


@pytest.mark.parametrize(
    "line",
    ["has space", "glob*", "q?", "br[ack]et", "a,b", "sub@dyn", "tab\there", "\x01ctl", "naïve"],
)
def test_list_rejects_what_run_subtest_cannot_select(line: str) -> None:
    out = parse_list_output(f"good\n{line}\n")
    assert out.names == ["good"]
    assert len(out.problems) == 1
    assert out.problems[0].startswith("line 2: not a subtest name")


def test_list_duplicates() -> None:
    out = parse_list_output(b"a\nb\na\n")
    assert out.names == ["a", "b"]
    assert out.problems == ["line 3: duplicate subtest a"]


def test_list_binary_garbage_never_raises() -> None:
    out = parse_list_output(bytes(range(256)) * 4)
    assert all(is_valid_name(n) for n in out.names)
    assert len(out.problems) <= 20


def test_is_valid_name() -> None:
    assert is_valid_name("map-partial_2")
    assert not is_valid_name("")
    assert not is_valid_name("a b")
    assert not is_valid_name("a\n")


# -------------------------------------------------------------- run stdout


def test_success() -> None:
    p = parse_output("Starting subtest: basic\nSubtest basic: SUCCESS (0.001s)\n")
    st = p.subtests["basic"]
    assert st.started and st.result is LineResult.SUCCESS
    assert st.time == pytest.approx(0.001)
    assert st.skip_reason is None and st.dynamic == {}
    assert p.anomalies == []


@pytest.mark.parametrize("word", ["SUCCESS", "FAIL", "SKIP", "CRASH", "TIMEOUT"])
def test_every_result_word(word: str) -> None:
    p = parse_output(f"Starting subtest: x\nSubtest x: {word} (12.500s)\n")
    assert p.subtests["x"].result is LineResult(word)
    assert p.subtests["x"].time == 12.5


def test_skip_reason_attaches_to_the_skip_line() -> None:
    p = parse_output(
        "Starting subtest: s\nsome log\nSkip reason: needs 2 GPUs, found 1\n"
        "Subtest s: SKIP (0.000s)\n"
    )
    assert p.subtests["s"].skip_reason == "needs 2 GPUs, found 1"


def test_skip_reason_is_not_given_to_a_non_skip_result() -> None:
    p = parse_output("Starting subtest: s\nSkip reason: stale\nSubtest s: FAIL (0.000s)\n")
    assert p.subtests["s"].result is LineResult.FAIL
    assert p.subtests["s"].skip_reason is None


def test_skip_reason_does_not_leak_into_the_next_subtest() -> None:
    p = parse_output(
        "Starting subtest: a\nSkip reason: from a\nSubtest a: FAIL (0.1s)\n"
        "Starting subtest: b\nSubtest b: SKIP (0.1s)\n"
    )
    assert p.subtests["b"].skip_reason is None


def test_skip_without_start_line_is_a_fixture_decision() -> None:
    p = parse_output("Skip reason: fixture: no device\nSubtest a: SKIP (0.000s)\n")
    st = p.subtests["a"]
    assert not st.started and st.result is LineResult.SKIP
    assert st.skip_reason == "fixture: no device"
    assert p.anomalies == []


def test_interleaved_with_other_output() -> None:
    text = (
        "gpuconform-Version: 0.1.0\n"
        "random noise\n"
        "Starting subtest: a\n"
        "child says hi\n"
        "Subtest is a word in prose\n"
        "progress 10%\n"
        "Subtest a: SUCCESS (0.250s)\n"
        "trailing\n"
    )
    p = parse_output(text)
    assert list(p.subtests) == ["a"]
    assert p.subtests["a"].result is LineResult.SUCCESS


def test_junk_before_a_protocol_line_on_the_same_line() -> None:
    # A child's partial line, then the parent's result line.
    p = parse_output("Starting subtest: a\npartial without newlineSubtest a: SUCCESS (0.1s)\n")
    assert p.subtests["a"].result is LineResult.SUCCESS
    assert any("same line" in a for a in p.anomalies)


def test_crlf_and_color_codes() -> None:
    p = parse_output("Starting subtest: a\r\n\x1b[1mSubtest a: SUCCESS (0.1s)\x1b[0m\r\n")
    assert p.subtests["a"].result is LineResult.SUCCESS


def test_truncated_result_line_is_not_a_result() -> None:
    p = parse_output("Starting subtest: a\nSubtest a: SUCC")
    assert p.subtests["a"].started
    assert p.subtests["a"].result is None


def test_truncated_time_is_not_a_result() -> None:
    p = parse_output("Starting subtest: a\nSubtest a: SUCCESS (0.1")
    assert p.subtests["a"].result is None


def test_last_line_without_newline_counts() -> None:
    p = parse_output("Starting subtest: a\nSubtest a: SUCCESS (0.100s)")
    assert p.subtests["a"].result is LineResult.SUCCESS


def test_start_only_means_unfinished() -> None:
    p = parse_output("Starting subtest: a\n")
    assert p.subtests["a"].started and p.subtests["a"].result is None


@pytest.mark.parametrize(
    "text",
    [
        "",
        "\n\n\n",
        "Subtest?? noise: MAYBE\n\x01\x02 binary junk \xff\xfe\nStarting subtest: but never finishing",
        "Subtest a: SUCCESS\n",  # no time
        "Subtest a: SUCCESS (fast)\n",
        "Subtest : SUCCESS (0.1s)\n",
        "subtest a: SUCCESS (0.1s)\n",  # wrong case
        "Starting subtest:\n",
        "Starting subtest: two words\n",
        "Subtest a: success (0.1s)\n",
    ],
)
def test_garbage_yields_no_result(text: str) -> None:
    p = parse_output(text)
    assert all(st.result is None for st in p.subtests.values())
    assert all(" " not in name for name in p.subtests)


def test_random_bytes_never_raise() -> None:
    import random

    rng = random.Random(1234)
    for _ in range(50):
        blob = bytes(rng.randrange(256) for _ in range(rng.randrange(2000)))
        blob += b"\nSubtest x: CRASH (0.5s)\n" if rng.random() < 0.5 else b""
        p = parse_output(blob)
        assert isinstance(p.subtests, dict)


def test_unknown_result_word_is_an_anomaly() -> None:
    p = parse_output("Starting subtest: a\nSubtest a: MAYBE (0.1s)\n")
    assert p.subtests["a"].result is None
    assert any("unknown result 'MAYBE'" in a for a in p.anomalies)


def test_crash_line_written_by_the_signal_handler() -> None:
    p = parse_output(
        "Starting subtest: crash-segv\nSubtest crash-segv: CRASH (0.002s)\n"
    )
    assert p.subtests["crash-segv"].result is LineResult.CRASH


def test_dynamic_subtests() -> None:
    text = (
        "Starting subtest: mixed\n"
        "Starting dynamic subtest: pass-0\n"
        "Dynamic subtest pass-0: SUCCESS (0.001s)\n"
        "Starting dynamic subtest: fail-1\n"
        "noise\n"
        "Dynamic subtest fail-1: FAIL (0.002s)\n"
        "Starting dynamic subtest: skip-2\n"
        "Skip reason: dynamic skip 2\n"
        "Dynamic subtest skip-2: SKIP (0.000s)\n"
        "Subtest mixed: FAIL (0.010s)\n"
    )
    p = parse_output(text)
    st = p.subtests["mixed"]
    assert st.result is LineResult.FAIL
    assert list(st.dynamic) == ["pass-0", "fail-1", "skip-2"]
    assert st.dynamic["pass-0"].result is LineResult.SUCCESS
    assert st.dynamic["fail-1"].result is LineResult.FAIL
    assert st.dynamic["fail-1"].time == pytest.approx(0.002)
    assert st.dynamic["skip-2"].skip_reason == "dynamic skip 2"
    assert st.skip_reason is None  # the dynamic's reason was consumed
    assert st.unfinished_dynamic() == []
    assert p.anomalies == []


def test_dynamic_crash_lines_from_the_handler() -> None:
    text = (
        "Starting subtest: s\nStarting dynamic subtest: gpu1\n"
        "Dynamic subtest gpu1: CRASH (0.100s)\nSubtest s: CRASH (0.200s)\n"
    )
    p = parse_output(text)
    assert p.subtests["s"].dynamic["gpu1"].result is LineResult.CRASH
    assert p.subtests["s"].result is LineResult.CRASH


def test_dynamic_unfinished() -> None:
    p = parse_output("Starting subtest: s\nStarting dynamic subtest: d1\nDynamic subtest d1: SUCCESS (0s)\n"
                     "Starting dynamic subtest: d2\n")
    assert p.subtests["s"].unfinished_dynamic() == ["d2"]
    assert p.subtests["s"].result is None


def test_dynamic_outside_a_subtest_is_an_anomaly() -> None:
    p = parse_output("Starting dynamic subtest: d\nDynamic subtest d: SUCCESS (0.1s)\n")
    assert p.subtests == {}
    assert len(p.anomalies) == 2


def test_dynamic_result_without_start() -> None:
    p = parse_output("Starting subtest: s\nDynamic subtest d: SKIP (0.1s)\nSubtest s: SKIP (0.1s)\n")
    assert p.subtests["s"].dynamic["d"].result is LineResult.SKIP
    assert any("never started" in a for a in p.anomalies)


def test_duplicate_result_line_keeps_the_last_and_notes_it() -> None:
    p = parse_output("Starting subtest: a\nSubtest a: SUCCESS (0.1s)\nSubtest a: FAIL (0.2s)\n")
    assert p.subtests["a"].result is LineResult.FAIL
    assert any("second result line" in a for a in p.anomalies)


def test_nested_start_is_an_anomaly() -> None:
    p = parse_output("Starting subtest: a\nStarting subtest: b\nSubtest b: SUCCESS (0.1s)\n")
    assert p.subtests["a"].result is None
    assert p.subtests["b"].result is LineResult.SUCCESS
    assert any("while a had no result" in a for a in p.anomalies)


def test_several_subtests() -> None:
    text = "".join(
        f"Starting subtest: t{i}\nSubtest t{i}: SUCCESS ({i}.000s)\n" for i in range(100)
    )
    p = parse_output(text)
    assert len(p.subtests) == 100
    assert p.subtests["t42"].time == 42.0


def test_anomalies_are_capped() -> None:
    text = "Starting subtest: a\n" + "Subtest a: SUCCESS (0.1s)\n" * 100
    p = parse_output(text)
    assert len(p.anomalies) == 20
    assert p.anomalies_dropped == 79


# ---------------------------------------------------------------- streaming


def _feed_in_pieces(data: bytes, size: int) -> OutputParser:
    parser = OutputParser()
    for i in range(0, len(data), size):
        parser.feed(data[i : i + size])
    return parser


@pytest.mark.parametrize("size", [1, 2, 3, 7, 64, 4096])
def test_streaming_any_chunking_gives_the_same_result(size: int) -> None:
    data = (
        b"noise\nStarting subtest: s\nStarting dynamic subtest: d\n"
        b"Skip reason: because\nDynamic subtest d: SKIP (0.001s)\n"
        b"Skip reason: every dynamic subtest skipped\nSubtest s: SKIP (0.002s)\ntail"
    )
    whole = parse_output(data)
    pieces = _feed_in_pieces(data, size).close()
    assert pieces.subtests == whole.subtests
    assert pieces.total_bytes == len(data)
    assert pieces.subtests["s"].skip_reason == "every dynamic subtest skipped"


def test_flood_between_protocol_lines() -> None:
    parser = OutputParser()
    parser.feed(b"Starting subtest: flood\n")
    junk = (b"x" * 4095 + b"\n") * 256
    for _ in range(16):
        parser.feed(junk)
    parser.feed(b"Subtest flood: SUCCESS (1.000s)\n")
    p = parser.close()
    assert p.subtests["flood"].result is LineResult.SUCCESS
    assert p.total_bytes == 16 * len(junk) + 56


def test_one_huge_line_keeps_memory_bounded_and_its_end() -> None:
    parser = OutputParser()
    parser.feed(b"Starting subtest: a\n")
    for _ in range(64):
        parser.feed(b"y" * 65536)  # 4 MiB without a newline
    parser.feed(b"Subtest a: SUCCESS (0.5s)\n")
    p = parser.close()
    assert p.subtests["a"].result is LineResult.SUCCESS


def test_feed_after_close_is_an_error() -> None:
    parser = OutputParser()
    parser.close()
    with pytest.raises(ValueError):
        parser.feed(b"x")


def test_str_input() -> None:
    p = parse_output("Starting subtest: ü\nSubtest ü: SUCCESS (0.1s)\n")
    assert "ü" in p.subtests  # names are not validated here; --list-subtests is


# ------------------------------------------------------------------- stderr


def test_scan_failures_core_formats() -> None:
    err = (
        "WARNING: something\n"
        "../tests/x.c:20: fail(): Failed assertion: got == 4\n"
        "  got = 5\n"
        "  4 = 4\n"
        "../lib/y.c:3: f(): FAIL: leak: 1 resource(s) open\n"
        "../a.c:1: g(): Failed call: open(p) returned -1: errno 2 (ENOENT, No such file)\n"
        "../b.c:9: h(): Test abort in abort: no state to go on\n"
        "Received signal SIGSEGV.\n"
    )
    msgs = scan_failures(err)
    assert msgs == [
        "../tests/x.c:20: fail(): Failed assertion: got == 4; got = 5; 4 = 4",
        "../lib/y.c:3: f(): FAIL: leak: 1 resource(s) open",
        "../a.c:1: g(): Failed call: open(p) returned -1: errno 2 (ENOENT, No such file)",
        "../b.c:9: h(): Test abort in abort: no state to go on",
        "Received signal SIGSEGV.",
    ]


def test_scan_failures_limit_and_garbage() -> None:
    assert scan_failures("FAIL: x\n" * 10, limit=3) == ["FAIL: x"] * 3
    assert scan_failures(b"\xff\xfe\x00 nothing here\n") == []
    assert scan_failures("") == []


def test_skip_location() -> None:
    """lib/core.h prints a skip's place on stderr; the last one is the subtest's own."""
    err = ("noise: 1 2\n"
           "../tests/kfd/mem.c:212: require_dgpu(): SKIP: no dGPU (dynamic gpu1)\n"
           "warning: something\n"
           "../tests/kfd/mem.c:640: mem_setup(): SKIP: /dev/kfd: No such file or directory\n")
    assert skip_location(err) == "../tests/kfd/mem.c:640 (mem_setup())"
    assert skip_location("Skip reason: no\n") is None
    assert skip_location("") is None
    # a failure's location is not a skip's
    assert skip_location("x.c:3: f(): Failed assertion: 1 == 2\n") is None
