"""The metric catalogue (data/metrics.txt): every metric the suite can record,
its unit and its scope, one fnmatch pattern over the metric's key a line:

    cuda_bubbles@gaps@graph-*:gap*.graph.*   ns   device   # why (optional)

The key is BINARY@SUBTEST[@DYNAMIC]:NAME (metrickey.MetricKey, without its
node); the first line whose pattern matches it is its entry. A pattern names
its binary literally, then a test glob (testlist.check_test_glob's rules) and
a metric-name glob.
SCOPE is `device` (measured on the GPU's own clock: pooled over node shapes)
or `node` (timed on the host or paced by it: keyed by the node).

Every problem with the file is a CatalogueError whose message is one line,
`PATH:LINE: what`. A run checks each metric it records against the
catalogue (Catalogue.problem): unknown, or in another unit, is a failure.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from .metrickey import NAME_CHARS
from .testlist import GLOB_CHARS, check_test_glob, glob_class_problem, read_lines

__all__ = ["CatalogueError", "Entry", "Catalogue", "SCOPES", "DEFAULT_CATALOGUE",
           "load_catalogue", "parse_entry", "check_name_glob"]

REPO_ROOT = Path(__file__).resolve().parents[3]
DEFAULT_CATALOGUE = REPO_ROOT / "data" / "metrics.txt"
SCOPES = ("device", "node")
_NAME_OUTSIDE = NAME_CHARS | frozenset("*?")  # a metric-name glob outside its [...] classes
_CLASS_WORDS = {  # glob_class_problem's words for a metric name (an empty class: its ']' inside)
    "unopened": "']' without '[' in the metric name {text}",
    "outside": "character {ch} not allowed in the metric name {text} "
               "([A-Za-z0-9._-] and the glob characters * ? [ ])",
    "empty": "{ch} inside '[...]' in the metric name {text}",
    "inside": "{ch} inside '[...]' in the metric name {text}",
    "unclosed": "'[' without ']' in the metric name {text}",
}


class CatalogueError(Exception):
    """A catalogue that cannot be used; str() is one line."""


@dataclass(frozen=True)
class Entry:
    """One line of the catalogue."""

    pattern: str  # BINARY@SUBTEST[@DYNAMIC]:NAME glob
    unit: str
    scope: str  # one of SCOPES
    line: int
    why: str = ""  # the line's comment
    _regex: "re.Pattern[str]" = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_regex", re.compile(fnmatch.translate(self.pattern)))

    @property
    def binary(self) -> str:
        return self.pattern.split("@", 1)[0]

    @property
    def name_glob(self) -> str:
        """The pattern's NAME part (after ':')."""
        return self.pattern.rpartition(":")[2]

    def matches(self, key: str) -> bool:
        return self._regex.match(key) is not None


def check_name_glob(text: str) -> str | None:
    """What is wrong with text as a metric-name glob ([A-Za-z0-9._-], * ?
    and [...] classes of those, [!...] negated); None if nothing."""
    if not text:
        return "no metric name after ':'"
    return glob_class_problem(text, NAME_CHARS, _CLASS_WORDS, repr(text), negate=True,
                              outside=_NAME_OUTSIDE)


def _check_pattern(pattern: str) -> str | None:
    test, colon, name = pattern.rpartition(":")
    if not colon:
        return f"pattern {pattern!r} has no ':' (patterns are BINARY@SUBTEST[@DYNAMIC]:NAME)"
    problem = check_test_glob(test)
    if problem is not None:
        return f"pattern {pattern!r}: {problem}"
    binary = test.split("@", 1)[0]
    if any(c in GLOB_CHARS for c in binary):
        return (f"pattern {pattern!r}: the binary {binary!r} is a glob; name the binary "
                "(one line per binary)")
    return check_name_glob(name)


def parse_entry(text: str, line: int, why: str = "") -> Entry:
    """An entry from a line's text (its comment already cut); ValueError with
    what is wrong (no file, no line: the caller adds them)."""
    fields = text.split()
    if len(fields) < 3:
        missing = ("UNIT and SCOPE", "SCOPE")[len(fields) - 1]
        raise ValueError(f"missing {missing}: a line is PATTERN UNIT SCOPE")
    if len(fields) > 3:
        raise ValueError(f"{len(fields)} fields: a line is PATTERN UNIT SCOPE, then an optional "
                         f"'# why' ({fields[3]!r} is one too many)")
    pattern, unit, scope = fields
    problem = _check_pattern(pattern)
    if problem is not None:
        raise ValueError(problem)
    if scope not in SCOPES:
        raise ValueError(f"unknown scope {scope!r}: {' or '.join(SCOPES)}")
    return Entry(pattern, unit, scope, line, why)


@dataclass(frozen=True)
class Catalogue:
    path: Path
    entries: tuple[Entry, ...]

    @property
    def where(self) -> str:
        """The file as messages name it: relative to the repository when inside it."""
        try:
            return str(self.path.resolve().relative_to(REPO_ROOT))
        except ValueError:
            return str(self.path)

    def lookup(self, key: str) -> Entry | None:
        """The first entry whose pattern matches key, in file order."""
        binary = key.split("@", 1)[0]
        for e in self.entries:
            if e.binary == binary and e.matches(key):
                return e
        return None

    def problem(self, key: str, unit: str) -> str | None:
        """Why a metric recorded with this key and unit is not catalogued
        (one line, saying what to do); None when its entry agrees."""
        e = self.lookup(key)
        if e is None:
            return (f"metric {key} ({unit}) is not in {self.where}: add a line "
                    "PATTERN UNIT SCOPE")
        if e.unit != unit:
            return (f"metric {key} is recorded in {unit!r}, but {self.where}:{e.line} "
                    f"({e.pattern}) says {e.unit!r}: fix the binary or that line")
        return None

    def problems(self, metrics: Iterable[tuple[str, str]]) -> list[str]:
        """problem() of each (key, unit) that has one, in order."""
        return [p for p in (self.problem(k, u) for k, u in metrics) if p is not None]


def load_catalogue(path: Path | str = DEFAULT_CATALOGUE) -> Catalogue:
    """The catalogue of path, every line checked: CatalogueError (PATH:LINE:
    what) for an unreadable file, a line without its three fields, a bad
    pattern, an unknown scope or a pattern given twice."""
    path = Path(path)
    entries: list[Entry] = []
    seen: dict[str, int] = {}
    for lineno, text, why in read_lines(path, CatalogueError):
        try:
            e = parse_entry(text, lineno, why)
        except ValueError as err:
            raise CatalogueError(f"{path}:{lineno}: {err}") from None
        if e.pattern in seen:
            raise CatalogueError(f"{path}:{lineno}: duplicate pattern {e.pattern!r} (first "
                                 f"on line {seen[e.pattern]})")
        seen[e.pattern] = lineno
        entries.append(e)
    if not entries:
        raise CatalogueError(f"{path}: no entries (a line is PATTERN UNIT SCOPE)")
    return Catalogue(path, tuple(entries))
