"""Qualification levels: quick, standard, long (as `dcgmi diag -r 1/2/3`).

A level is a test list and a length for the soaks (lib/soak.h): every binary
reads one knob, $GPUCONFORM_LEVEL, and at long the seconds its soak may take,
$GPUCONFORM_SOAK_SECONDS, which the runner gives each soaking subtest (those
a binary lists with --list-soak) as its share of what --duration leaves:

  quick     data/testlists/quick.txt; soaks run a few cycles (does the stack answer)
  standard  data/testlists/qualification.txt (today: the nightly's every test); soaks run
            the nightly's fixed counts
  long      the same list; the soaks run last and share the rest of --duration
            (default 1 h): a soak starting gets (time left) / (soaks left)
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Container, Iterable

from .optvalues import InputError

__all__ = ["LEVELS", "Level", "LEVEL_ENV", "SOAK_SECONDS_ENV", "SoakPlan", "parse_duration",
           "list_soaks", "plan_soaks", "LevelError"]

LEVEL_ENV = "GPUCONFORM_LEVEL"  # lib/soak.h GC_LEVEL_ENV
SOAK_SECONDS_ENV = "GPUCONFORM_SOAK_SECONDS"  # lib/soak.h GC_SOAK_SECONDS_ENV
# A soak's own set-up and tear-down (contexts, 256 threads, files) beside its
# seconds of cycles: kept aside per soak still to run.
SOAK_OVERHEAD_S = 5.0
# Fewer seconds than this and a soak has too few samples for a slope.
SOAK_FLOOR_S = 10.0


class LevelError(InputError):
    """A bad --duration; str() is one line."""


@dataclass(frozen=True)
class Level:
    name: str
    testlist: str  # the list run when no --testlist is given
    duration_s: float | None  # long's default --duration; None: the soaks have counts
    what: str


LEVELS = {
    "quick": Level("quick", "quick", None,
                   "does the stack answer: a subtest or two per stack, soaks a few cycles"),
    "standard": Level("standard", "qualification", None,
                      "the nightly: every test, soaks at their fixed counts"),
    "long": Level("long", "qualification", 3600.0,
                  "the nightly's tests, then the soaks sharing what is left of --duration"),
}

_DURATION_RE = re.compile(r"(?:(\d+(?:\.\d+)?)h)?(?:(\d+(?:\.\d+)?)m)?(?:(\d+(?:\.\d+)?)s?)?\Z")


def parse_duration(text: str) -> float:
    """'8m' -> 480, '1h30m' -> 5400, '90s' or '90' -> 90; LevelError otherwise."""
    m = _DURATION_RE.match(text.strip())
    if not text.strip() or m is None or not any(m.groups()):
        raise LevelError(f"--duration {text[:40]!r}: expected a length like 8m, 1h, 90s or 1h30m")
    h, mi, s = (float(g) if g else 0.0 for g in m.groups())
    total = h * 3600 + mi * 60 + s
    if total <= 0:
        raise LevelError(f"--duration {text[:40]!r}: must be more than 0")
    return total


def list_soaks(binary: Path, timeout_s: float = 30.0) -> tuple[set[str], str | None]:
    """The subtests BINARY --list-soak names, and a one-line note when it
    could not say (not ours, or broken): then none of its subtests soak."""
    try:
        p = subprocess.run([str(binary), "--list-soak"], capture_output=True, text=True,
                           timeout=timeout_s, check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        return set(), f"{binary.name} --list-soak: {type(e).__name__}: {e}"
    if p.returncode != 0:
        return set(), f"{binary.name} --list-soak: exit {p.returncode}: its subtests run as listed"
    return {line.strip() for line in p.stdout.splitlines() if line.strip()}, None


class SoakPlan:
    """At long: each soak's seconds as it starts, so that the run ends near
    start + duration whatever the tests before took. Pure bookkeeping: the
    clock is passed in."""

    def __init__(self, start: float, duration_s: float, soaks: Iterable[str]) -> None:
        self.end = start + duration_s
        self.left = list(soaks)
        self.given: dict[str, float] = {}

    def seconds_for(self, name: str, now: float) -> float:
        """The share of the time left for soak `name` (once; a retry gets the same)."""
        if name in self.given:
            return self.given[name]
        others = max(len(self.left), 1)
        share = (self.end - now) / others - SOAK_OVERHEAD_S
        secs = max(SOAK_FLOOR_S, round(share, 1))
        self.given[name] = secs
        if name in self.left:
            self.left.remove(name)
        return secs


def plan_soaks(tests: list[str], binaries: Iterable[str], start: float,
               duration_s: float | None, done: Container[str]
               ) -> tuple[list[str], SoakPlan, list[str]]:
    """At level long: tests (BINARY@SUBTEST) with the soaking ones (each of
    binaries' --list-soak) moved last, in their order; the plan giving each
    soak not done yet its share of duration_s (default: long's) from start;
    the notes of the binaries that could not say."""
    soaking: set[str] = set()
    notes: list[str] = []
    for path in sorted(binaries):
        subs, note = list_soaks(Path(path))
        if note:
            notes.append(note)
        soaking |= {f"{Path(path).name}@{sub}" for sub in subs}
    soaks = [n for n in tests if n in soaking]
    duration = duration_s or LEVELS["long"].duration_s or 0.0
    plan = SoakPlan(start, duration, [n for n in soaks if n not in done])
    return [n for n in tests if n not in soaking] + soaks, plan, notes
