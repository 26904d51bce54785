"""Sharding: split one selection of tests across N machines.

    gpuconform run --shard 2/4     # this machine runs the second quarter

A test belongs to shard `sha256(name) mod total + 1` (the digest's first 8
bytes, big-endian): the shard depends on the test's NAME alone, not on its
position nor on Python's per-process hash(), so N machines given the same
selection cover it exactly once even when their builds list the tests in a
different order. The order of the input is kept.
Shards are balanced only statistically: with few tests, one may be empty.
"""

from __future__ import annotations

import argparse
import hashlib
import re
from typing import Sequence

__all__ = ["ShardError", "shard_of", "shard", "parse_shard", "shard_arg"]

_SPEC_RE = re.compile(r"([0-9]+)/([0-9]+)", re.ASCII)


class ShardError(ValueError):
    """A shard spec or index that cannot be used; str() is one line."""


def shard_of(name: str, total: int) -> int:
    """The 1-based shard of the test `name` among `total`."""
    if total < 1:
        raise ShardError(f"number of shards must be >= 1, not {total}")
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).digest()
    return int.from_bytes(digest[:8], "big") % total + 1


def shard(tests: Sequence[str], index: int, total: int) -> list[str]:
    """The tests of shard index/total (1-based index), in the order of tests."""
    if total < 1:
        raise ShardError(f"number of shards must be >= 1, not {total}")
    if not 1 <= index <= total:
        raise ShardError(f"shard index {index} out of 1..{total}")
    return [t for t in tests if shard_of(t, total) == index]


def parse_shard(spec: str) -> tuple[int, int]:
    """'2/4' -> (2, 4): the second of four shards."""
    m = _SPEC_RE.fullmatch(spec.strip())
    if m is None:
        raise ShardError(f"bad shard {spec[:40]!r}: expected INDEX/TOTAL, e.g. 2/4")
    index, total = int(m[1]), int(m[2])
    if total < 1:
        raise ShardError(f"bad shard {spec!r}: TOTAL must be >= 1")
    if not 1 <= index <= total:
        raise ShardError(f"bad shard {spec!r}: INDEX must be in 1..{total} (1-based)")
    return index, total


def shard_arg(spec: str) -> tuple[int, int]:
    """parse_shard() for argparse's type=: its message reaches the user."""
    try:
        return parse_shard(spec)
    except ShardError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
