"""shard.py: every test in exactly one shard, by name alone, whatever the order."""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import subprocess
import sys

import pytest

from gc_testutil import RUNNER_DIR
from gpuconform.core.shard import ShardError, parse_shard, shard, shard_arg, shard_of

TESTS = [f"bin_{b}@sub-{s}" for b in range(12) for s in range(40)] + [
    "host_io@direct-read", "kfd_multigpu@map-partial@gpu1-gpu2", "kfd_mem"]


@pytest.mark.parametrize("total", [1, 2, 3, 4, 7, 16])
def test_shards_partition_the_tests(total: int) -> None:
    parts = [shard(TESTS, i, total) for i in range(1, total + 1)]
    assert sorted(t for p in parts for t in p) == sorted(TESTS)  # union, no duplicates
    for i, p in enumerate(parts):
        for q in parts[i + 1:]:
            assert not set(p) & set(q)
        assert p == [t for t in TESTS if t in set(p)]  # input order kept


def test_shard_of_one_is_everything() -> None:
    assert shard(TESTS, 1, 1) == TESTS
    assert shard([], 1, 3) == []


def test_membership_depends_on_the_name_alone() -> None:
    shuffled = list(TESTS)
    random.Random(7).shuffle(shuffled)
    subset = shuffled[: len(shuffled) // 3]  # another build listing fewer tests
    for i in range(1, 5):
        a, b, c = set(shard(TESTS, i, 4)), set(shard(shuffled, i, 4)), set(shard(subset, i, 4))
        assert a == b
        assert c == a & set(subset)


def test_shards_are_roughly_balanced() -> None:
    sizes = [len(shard(TESTS, i, 4)) for i in range(1, 5)]
    assert all(len(TESTS) / 8 < n < len(TESTS) * 3 / 8 for n in sizes), sizes


# Pinned: a change of the function would split one run's machines differently
# as soon as they run different versions of the runner.
GOLDEN = {
    "host_io@direct-read": 1,
    "host_interrupt@sigiter-read": 4,
    "kfd_multigpu@map-partial@gpu1-gpu2": 4,
}


def test_the_function_is_pinned() -> None:
    assert {t: shard_of(t, 4) for t in GOLDEN} == GOLDEN
    # the documented formula: the first 8 bytes of sha256(name), big-endian, mod TOTAL, + 1
    for t in TESTS:
        h = int.from_bytes(hashlib.sha256(t.encode()).digest()[:8], "big")
        assert shard_of(t, 7) == h % 7 + 1


def test_stable_across_processes_and_hash_seeds() -> None:
    code = ("import json, sys; from gpuconform.core.shard import shard; "
            "print(json.dumps([shard(json.loads(sys.argv[1]), i, 5) for i in range(1, 6)]))")
    outs = []
    for seed in ("1", "2", "random"):
        env = dict(os.environ, PYTHONHASHSEED=seed, PYTHONPATH=str(RUNNER_DIR))
        p = subprocess.run([sys.executable, "-c", code, json.dumps(TESTS)], env=env,
                           capture_output=True, text=True, timeout=120, check=True)
        outs.append(json.loads(p.stdout))
    assert outs[0] == outs[1] == outs[2] == [shard(TESTS, i, 5) for i in range(1, 6)]


@pytest.mark.parametrize(
    "spec, want", [("2/4", (2, 4)), ("1/1", (1, 1)), (" 4/4 ", (4, 4)), ("03/10", (3, 10))])
def test_parse_shard(spec: str, want: tuple[int, int]) -> None:
    assert parse_shard(spec) == want
    assert shard_arg(spec) == want


@pytest.mark.parametrize(
    "spec, words",
    [
        ("0/4", "INDEX must be in 1..4"),
        ("5/4", "INDEX must be in 1..4"),
        ("1/0", "TOTAL must be >= 1"),
        ("2", "expected INDEX/TOTAL"),
        ("2/4/6", "expected INDEX/TOTAL"),
        ("-1/4", "expected INDEX/TOTAL"),
        ("a/b", "expected INDEX/TOTAL"),
        ("2 / 4", "expected INDEX/TOTAL"),
        ("\uff12/\uff14", "expected INDEX/TOTAL"),  # fullwidth digits: int() takes them, we do not
        ("", "expected INDEX/TOTAL"),
    ],
)
def test_bad_shard_specs(spec: str, words: str) -> None:
    with pytest.raises(ShardError) as ei:
        parse_shard(spec)
    assert words in str(ei.value) and "\n" not in str(ei.value)
    with pytest.raises(argparse.ArgumentTypeError, match="bad shard"):
        shard_arg(spec)


def test_bad_shard_arguments() -> None:
    with pytest.raises(ShardError, match="out of 1..3"):
        shard(TESTS, 0, 3)
    with pytest.raises(ShardError, match="out of 1..3"):
        shard(TESTS, 4, 3)
    with pytest.raises(ShardError, match=">= 1"):
        shard(TESTS, 1, 0)
    with pytest.raises(ShardError, match=">= 1"):
        shard_of("a@b", 0)


def test_argparse_shows_the_message(capsys: pytest.CaptureFixture[str]) -> None:
    p = argparse.ArgumentParser(prog="gpuconform")
    p.add_argument("--shard", type=shard_arg)
    assert p.parse_args(["--shard", "2/4"]).shard == (2, 4)
    with pytest.raises(SystemExit):
        p.parse_args(["--shard", "5/4"])
    assert "INDEX must be in 1..4" in capsys.readouterr().err
