"""A metric's samples given as a histogram: each distinct value once, ascending,
with how many times it occurred (a binary writes the gaps between kernels so:
millions of them, on a clock of 32 ns steps, are a few thousand values).

Hist is the sorted sequence of every sample, without holding each: len() is
the number of samples, h[i] the i-th smallest, iteration yields each sample,
so code written for a list of samples gives the same answer on a Hist (slowly,
where it iterates). What runs on every night takes the fast way: the
functions below and stats.py's medians and quantiles.
"""

from __future__ import annotations

import bisect
import math
from itertools import accumulate, repeat
from typing import Any, Iterator, Sequence, overload

__all__ = ["Hist", "counts_problem", "samples_of", "distinct", "weighted", "best_mean",
           "samples_json"]


class Hist(Sequence[float]):
    """Samples as distinct values (strictly ascending) and their counts (each
    at least 1). Immutable; equal to another Hist of the same pairs."""

    __slots__ = ("values", "counts", "_ends")

    def __init__(self, values: Sequence[float], counts: Sequence[int]) -> None:
        why = counts_problem(values, counts)
        if why is None and not all(math.isfinite(v) for v in values):
            why = "a histogram's values must be finite"
        if why is not None:
            raise ValueError(why)
        self.values: tuple[float, ...] = tuple(float(v) for v in values)
        self.counts: tuple[int, ...] = tuple(int(c) for c in counts)
        self._ends: tuple[int, ...] = tuple(accumulate(self.counts))  # samples up to each value

    @classmethod
    def of(cls, samples: Sequence[float]) -> "Hist":
        """The histogram of plain samples (any order)."""
        values, counts = weighted(samples)
        return cls(values, counts)

    def __len__(self) -> int:
        return self._ends[-1] if self._ends else 0

    @overload
    def __getitem__(self, i: int) -> float: ...

    @overload
    def __getitem__(self, i: slice) -> Sequence[float]: ...

    def __getitem__(self, i: int | slice) -> float | Sequence[float]:
        if isinstance(i, slice):
            return list(self)[i]  # rare: every sample, as a list
        n = len(self)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError("Hist index out of range")
        return self.values[bisect.bisect_right(self._ends, i)]

    def __iter__(self) -> Iterator[float]:
        for v, c in zip(self.values, self.counts):
            yield from repeat(v, c)

    def __reversed__(self) -> Iterator[float]:
        for v, c in zip(reversed(self.values), reversed(self.counts)):
            yield from repeat(v, c)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Hist):
            return NotImplemented
        return (self.values, self.counts) == (other.values, other.counts)

    def __hash__(self) -> int:
        return hash((self.values, self.counts))

    def __repr__(self) -> str:
        return f"Hist({len(self.values)} values, {len(self)} samples)"

    def __add__(self, other: Sequence[float]) -> "Hist":
        """Both sample sets together (what joining two GPUs' copies does)."""
        a, b = weighted(self), weighted(other)
        merged: dict[float, int] = {}
        for v, c in zip(a[0] + b[0], a[1] + b[1]):
            merged[v] = merged.get(v, 0) + c
        keys = sorted(merged)
        return Hist(keys, [merged[k] for k in keys])

    def __radd__(self, other: Sequence[float]) -> "Hist":
        return self + other

    def scaled(self, factor: float) -> "Hist":
        """Every sample times factor > 0 (a unit change)."""
        return Hist([v * factor for v in self.values], self.counts)


def counts_problem(samples: Sequence[Any], counts: Any) -> str | None:
    """Why counts (a metric's JSON member) does not make samples a histogram,
    or None: a list of positive integers as long as samples, whose values
    ascend strictly. The message names the first bad index."""
    if not isinstance(counts, (list, tuple)):
        return f"'counts' is {type(counts).__name__}, not a list"
    if len(counts) != len(samples):
        return f"'counts' has {len(counts)} entries for {len(samples)} samples"
    for i, c in enumerate(counts):
        if isinstance(c, bool) or not isinstance(c, int) or c < 1:
            return f"count {i} is not a positive integer: {c!r}"
    for i in range(1, len(samples)):
        if not samples[i - 1] < samples[i]:
            return (f"sample {i} ({samples[i]!r}) does not ascend from {samples[i - 1]!r}: "
                    "a histogram's values are distinct and ascending")
    return None


def samples_of(obj: Any) -> Sequence[float]:
    """A metric object's samples (results.json, a metrics line): a Hist when
    it has counts, else a tuple. The object was checked on reading."""
    samples = tuple(float(x) for x in obj["samples"])
    counts = obj.get("counts")
    return Hist(samples, counts) if counts is not None else samples


def samples_json(samples: Sequence[float]) -> dict[str, list[Any]]:
    """The JSON members of samples: samples, and counts for a Hist."""
    if isinstance(samples, Hist):
        return {"samples": list(samples.values), "counts": list(samples.counts)}
    return {"samples": list(samples)}


def distinct(samples: Sequence[float]) -> Sequence[float]:
    """Each value that occurs (a Hist's values; plain samples as they are,
    repeats kept): what a resolution is read from."""
    return samples.values if isinstance(samples, Hist) else samples


def weighted(samples: Sequence[float]) -> tuple[tuple[float, ...], tuple[int, ...]]:
    """(values ascending, counts) of any samples."""
    if isinstance(samples, Hist):
        return samples.values, samples.counts
    values: list[float] = []
    counts: list[int] = []
    for x in sorted(float(v) for v in samples):
        if values and values[-1] == x:
            counts[-1] += 1
        else:
            values.append(x)
            counts.append(1)
    return tuple(values), tuple(counts)


def best_mean(samples: Sequence[float], k: int, largest: bool) -> float:
    """The mean of the k smallest samples (the k largest when largest)."""
    values, counts = weighted(samples)
    if not 0 < k <= sum(counts):
        raise ValueError(f"{k} of {sum(counts)} samples")
    pairs = zip(reversed(values), reversed(counts)) if largest else zip(values, counts)
    total: list[float] = []
    left = k
    for v, c in pairs:
        take = min(c, left)
        total.append(v * take)
        left -= take
        if not left:
            break
    return math.fsum(total) / k
