"""The contract table, data/contracts.txt: which subtests check one contract on
each vendor, and why a twin is missing.

A line is one vendor's part of one row (a contract subtest):

    ROW       VENDOR  BINARY@SUBTEST...     the subtests that check it on VENDOR
    ROW       VENDOR  none "REASON"         why VENDOR has none

    mem/lifecycle   amd     kfd_mem@lifecycle-vram
    mem/lifecycle   nvidia  cuda_mem@lifecycle
    svm/prefetch    nvidia  none "no SVM ioctl on NVIDIA"

ROW is CONTRACT/NAME; VENDOR is amd, nvidia or host, and a binary's vendor is
its name's prefix (VENDOR_PREFIXES): an entry under another vendor is an error.
host_* binaries are vendor-neutral references, shown beside the GPU paths;
they are never required and take no reason. A row's lines stay together; a
vendor may have several lines in a row, but not both entries and a reason, nor
two reasons; a BINARY@SUBTEST is in one row only. `#` starts a comment (so a
reason cannot hold one). Every problem is a ContractsError, one line
"PATH:LINE: what".

    load_table(path)            the parsed table
    check(table, built)         what breaks the rule: a row without amd or nvidia
                                entries and no reason; with built (each built
                                binary's subtests), a built AMD or NVIDIA subtest
                                in no row, or an entry naming a subtest its built
                                binary lacks. Each problem one line that says
                                what to write.
    view(table, states, built)  the rows as shown: per vendor its entries with
                                their result in a run, or its reason
    render_text(...)            `gpuconform list --contracts`: vendors side by side
    expectation_counts(table)   per status, how many AMD entries have it

What the sources say of a subtest's expectation (its verdict before any run),
one line per BINARY@SUBTEST already in a row, never two:

    expect  BINARY@SUBTEST  STATUS  "SOURCE: WHY"

STATUS is promised (the source read keeps the promise the subtest holds),
predicted-broken (the source read shows the promise will not hold: WHY names
the code) or unknown (not read, or read and undecided). promised and
predicted-broken need WHY; an AMD entry without a line is unknown.
"""

from __future__ import annotations

import difflib
import re
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

from .testlist import GLOB_CHARS, check_test_glob, read_lines

__all__ = [
    "TABLE_PATH",
    "VENDORS",
    "TWIN_VENDORS",
    "VENDOR_PREFIXES",
    "ContractsError",
    "Entry",
    "Side",
    "Row",
    "Table",
    "display_path",
    "vendor_of",
    "load_table",
    "check",
    "Cell",
    "SideView",
    "RowView",
    "view",
    "render_text",
    "EXPECT_STATES",
    "Expectation",
    "expectation_counts",
]

TABLE_PATH = Path(__file__).resolve().parents[3] / "data" / "contracts.txt"
VENDORS = ("amd", "nvidia", "host")
TWIN_VENDORS = ("amd", "nvidia")  # every row needs entries or a reason for each
# A binary's vendor, by its name's prefix: the AMD and NVIDIA ones are the
# contract binaries whose every subtest the table must hold.
VENDOR_PREFIXES: Mapping[str, tuple[str, ...]] = {
    "amd": ("kfd_", "amdgpu_", "hsa_", "hip_", "hipfile_", "rsmi_", "amdsmi_"),
    "nvidia": ("cuda_", "cufile_", "nvml_"),
    "host": ("host_",),
}
NOT_RUN = "-"

_ROW_RE = re.compile(r"[a-z0-9][a-z0-9_-]*/[A-Za-z0-9][A-Za-z0-9_-]*\Z")
_REASON_RE = re.compile(r'none\s+"([^"]*)"\s*\Z')
_SUGGESTIONS = 3
EXPECT_STATES = ("promised", "predicted-broken", "unknown")
_EXPECT_RE = re.compile(r'expect\s+(\S+)\s+(\S+)(?:\s+"([^"]*)")?\s*\Z')


class ContractsError(Exception):
    """A contract table that cannot be used; str() is one line."""


@dataclass(frozen=True)
class Entry:
    test: str  # BINARY@SUBTEST
    line: int

    @property
    def binary(self) -> str:
        return self.test.split("@", 1)[0]

    @property
    def subtest(self) -> str:
        return self.test.split("@", 1)[1]


@dataclass
class Side:
    """One vendor's part of a row: its entries, or the reason it has none."""
    entries: list[Entry] = field(default_factory=list)
    reason: str | None = None
    line: int = 0  # of its first line


@dataclass
class Row:
    name: str  # CONTRACT/NAME
    line: int  # its first line
    sides: dict[str, Side] = field(default_factory=dict)

    @property
    def contract(self) -> str:
        return self.name.split("/", 1)[0]

    @property
    def subtest(self) -> str:
        return self.name.split("/", 1)[1]

    def has_entries(self, vendor: str) -> bool:
        side = self.sides.get(vendor)
        return side is not None and bool(side.entries)


@dataclass(frozen=True)
class Expectation:
    """What the sources say of one subtest's expectation."""
    status: str  # one of EXPECT_STATES
    why: str  # the source and the code, "" for an unknown without a note
    line: int


@dataclass
class Table:
    path: Path
    rows: list[Row]
    expectations: dict[str, Expectation] = field(default_factory=dict)

    def expectation(self, test: str) -> Expectation:
        """test's expectation; unknown when the table gives none."""
        return self.expectations.get(test, Expectation("unknown", "", 0))

    def entries(self) -> dict[str, tuple[Row, Entry]]:
        """Every BINARY@SUBTEST of the table, with its row."""
        return {e.test: (r, e) for r in self.rows for s in r.sides.values() for e in s.entries}


def display_path(path: Path) -> str:
    """path as shown in a report or a header: relative to the repository when inside it."""
    try:
        return str(Path(path).resolve().relative_to(TABLE_PATH.parents[1]))
    except ValueError:
        return str(path)


def vendor_of(binary: str) -> str | None:
    """The vendor whose prefix binary's name starts with; None for none."""
    for vendor, prefixes in VENDOR_PREFIXES.items():
        if binary.startswith(prefixes):
            return vendor
    return None


# ------------------------------------------------------------------ parsing


def _entry(text: str, vendor: str) -> str | None:
    """What is wrong with text as an entry of vendor; None if nothing."""
    if '"' in text:
        return (f"{text!r}: a quote outside a reason (a reason is the whole rest of the "
                'line: none "REASON")')
    if text == "none":
        return 'none among entries: a vendor has entries or none "REASON", not both'
    problem = check_test_glob(text)
    if problem is not None:
        return problem
    if any(c in GLOB_CHARS for c in text) or text.count("@") != 1:
        return f"{text!r} is not one BINARY@SUBTEST (no globs, no dynamic subtest)"
    binary = text.split("@", 1)[0]
    owner = vendor_of(binary)
    if owner is None:
        known = ", ".join(p for ps in VENDOR_PREFIXES.values() for p in ps)
        return f"{text}: {binary} is no vendor's binary (prefixes: {known})"
    if owner != vendor:
        return f"{text} is {owner}'s (by its prefix), listed under {vendor}"
    return None


def _add_line(row: Row, vendor: str, rest: str, where: str, line: int,
              seen: dict[str, tuple[str, int]]) -> None:
    side = row.sides.setdefault(vendor, Side(line=line))
    if rest.startswith("none") and (len(rest) == 4 or rest[4].isspace() or rest[4] == '"'):
        m = _REASON_RE.match(rest)
        if m is None:
            raise ContractsError(f'{where}: expected none "REASON" (one line in double quotes; '
                                 "a '#' inside starts a comment)")
        if not m.group(1).strip():
            raise ContractsError(f"{where}: empty reason: say why {vendor} has no twin")
        if vendor not in TWIN_VENDORS:
            raise ContractsError(f"{where}: {vendor} takes no reason: its entries are optional "
                                 "references")
        if side.reason is not None:
            raise ContractsError(f"{where}: {row.name}: {vendor}'s reason is already given at "
                                 f"line {side.line}")
        if side.entries:
            raise ContractsError(f"{where}: {row.name}: {vendor} has entries (line "
                                 f"{side.entries[0].line}) and a reason: a reason is for a "
                                 "vendor with none")
        side.reason = " ".join(m.group(1).split())
        return
    if side.reason is not None:
        raise ContractsError(f"{where}: {row.name}: {vendor} has a reason (line {side.line}) "
                             "and entries: a reason is for a vendor with none")
    for text in rest.split():
        problem = _entry(text, vendor)
        if problem is not None:
            raise ContractsError(f"{where}: {problem}")
        if text in seen:
            first_row, first_line = seen[text]
            raise ContractsError(f"{where}: {text} is already in row {first_row} (line "
                                 f"{first_line}): a subtest is in one row only")
        seen[text] = (row.name, line)
        side.entries.append(Entry(text, line))


def _add_expect(text: str, where: str, line: int,
                expectations: dict[str, Expectation]) -> str:
    """Parse an expect line into expectations; returns its BINARY@SUBTEST."""
    m = _EXPECT_RE.match(text)
    if m is None:
        raise ContractsError(f'{where}: expected expect BINARY@SUBTEST STATUS "SOURCE: WHY"')
    test, status, why = m.group(1), m.group(2), " ".join((m.group(3) or "").split())
    if status not in EXPECT_STATES:
        raise ContractsError(f"{where}: unknown status {status!r} (known: "
                             f"{', '.join(EXPECT_STATES)})")
    if status != "unknown" and not why:
        raise ContractsError(f'{where}: {status} needs "SOURCE: WHY" (the file, its version '
                             "and the code that keeps or breaks the promise)")
    if test in expectations:
        raise ContractsError(f"{where}: {test} has an expect line already (line "
                             f"{expectations[test].line})")
    expectations[test] = Expectation(status, why, line)
    return test


def load_table(path: Path = TABLE_PATH) -> Table:
    """The table of path (data/contracts.txt by default); ContractsError on
    the first malformed line."""
    path = Path(path)
    rows: list[Row] = []
    by_name: dict[str, Row] = {}
    seen: dict[str, tuple[str, int]] = {}
    expectations: dict[str, Expectation] = {}
    for lineno, text, _ in read_lines(path, ContractsError):
        where = f"{path}:{lineno}"
        if text.split(None, 1)[0] == "expect":
            test = _add_expect(text, where, lineno, expectations)
            if test not in seen:
                raise ContractsError(f"{where}: {test} is in no row above: an expect line "
                                     "follows its subtest's row")
            continue
        parts = text.split(None, 2)
        if len(parts) < 3:
            raise ContractsError(f'{where}: expected ROW VENDOR BINARY@SUBTEST... or ROW VENDOR '
                                 f'none "REASON", got {text!r}')
        name, vendor, rest = parts
        if not _ROW_RE.match(name):
            raise ContractsError(f"{where}: row {name!r} is not CONTRACT/NAME (letters, digits, "
                                 "_ and -)")
        if vendor not in VENDORS:
            raise ContractsError(f"{where}: unknown vendor {vendor!r} (known: "
                                 f"{', '.join(VENDORS)})")
        row = by_name.get(name)
        if row is None:
            row = by_name[name] = Row(name, lineno)
            rows.append(row)
        elif rows[-1] is not row:
            raise ContractsError(f"{where}: row {name} began at line {row.line} and other rows "
                                 "came between: keep a row's lines together")
        _add_line(row, vendor, rest, where, lineno, seen)
    return Table(path, rows, expectations)


def expectation_counts(table: Table, vendor: str = "amd") -> dict[str, int]:
    """Per status (EXPECT_STATES order), how many of vendor's entries have it."""
    counts = dict.fromkeys(EXPECT_STATES, 0)
    for test, (_row, entry) in table.entries().items():
        if vendor_of(entry.binary) == vendor:
            counts[table.expectation(test).status] += 1
    return counts


# ---------------------------------------------------------------- the rule


def _line(row: str, vendor: str, what: str) -> str:
    """A table line as a message quotes it."""
    return f"`{row}  {vendor}  {what}`"


def _reason_line(row: str, vendor: str) -> str:
    return _line(row, vendor, f'none "why {vendor} has no twin"')


def _missing_side(table: Table, row: Row, vendor: str) -> str:
    return (f"{table.path}:{row.line}: {row.name}: no {vendor} entry and no reason: add "
            f"{_line(row.name, vendor, 'BINARY@SUBTEST')} or {_reason_line(row.name, vendor)}")


def _candidate_rows(table: Table, binary: str, subtest: str) -> list[Row]:
    """Rows where binary@subtest may belong: those named after subtest or
    holding a subtest of that name, those of a contract the binary's name
    holds first."""
    found = [r for r in table.rows
             if r.subtest == subtest
             or any(e.subtest == subtest for s in r.sides.values() for e in s.entries)]
    found.sort(key=lambda r: r.contract not in binary)
    return found[:_SUGGESTIONS]


def _missing_row(table: Table, test: str, vendor: str) -> str:
    binary, subtest = test.split("@", 1)
    other = "nvidia" if vendor == "amd" else "amd"
    new_row = (f"a new row: {_line('CONTRACT/NAME', vendor, test)} with "
               f"{_line('CONTRACT/NAME', other, 'TWIN@SUBTEST')} or "
               f"{_reason_line('CONTRACT/NAME', other)}")
    rows = _candidate_rows(table, binary, subtest)
    if not rows:
        return f"{test}: in no row of {table.path}: add {new_row}"
    near = " or ".join(f"{_line(r.name, vendor, test)} (row at line {r.line})" for r in rows)
    return f"{test}: in no row of {table.path}: add it to its twin's row, e.g. {near}; or {new_row}"


def _stale_entry(table: Table, entry: Entry, subtests: Sequence[str]) -> str:
    close = difflib.get_close_matches(entry.subtest, subtests, n=3, cutoff=0.6)
    hint = f" (closest: {', '.join(close)})" if close else ""
    return (f"{table.path}:{entry.line}: {entry.test}: the built {entry.binary} has no subtest "
            f"{entry.subtest}{hint}: renamed or removed? fix or drop the entry")


def area_of(binary: str) -> str:
    """A binary's area, its name after the stack: cuda_mem, hip_mem and kfd_mem are mem."""
    return binary.split("_", 1)[-1]


def _split_twins(table: Table, built: Mapping[str, Sequence[str]]) -> list[str]:
    """Twins the table splits: a subtest name that binaries of one area and
    two vendors both have is one contract (one body over each stack's calls,
    CONTRIBUTING.md), so its entries belong in one row."""
    listed = table.entries()
    problems: list[str] = []
    names = sorted(b for b in built if vendor_of(b) in TWIN_VENDORS)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            if area_of(a) != area_of(b) or vendor_of(a) == vendor_of(b):
                continue
            for sub in sorted(set(built[a]) & set(built[b])):
                ra, rb = listed.get(f"{a}@{sub}"), listed.get(f"{b}@{sub}")
                if ra and rb and ra[0] is not rb[0]:
                    problems.append(
                        f"{table.path}:{rb[1].line}: {b}@{sub} is in row {rb[0].name}, its twin "
                        f"{a}@{sub} in row {ra[0].name} (line {ra[1].line}): one subtest name in "
                        f"two vendors' {area_of(a)} binaries is one contract: put both in one row")
    return problems


def check(table: Table, built: Mapping[str, Sequence[str]] | None = None) -> list[str]:
    """What breaks the rule, one line each (empty: nothing). built: each
    built binary's subtests; None checks the table alone."""
    problems: list[str] = []
    for row in table.rows:
        missing = [_missing_side(table, row, v) for v in TWIN_VENDORS if v not in row.sides]
        if not missing and not any(row.has_entries(v) for v in TWIN_VENDORS):
            missing.append(f"{table.path}:{row.line}: {row.name}: a reason for every vendor and "
                           "no entry: a row is a contract subtest some GPU binary checks")
        problems += missing
    if built is None:
        return problems
    listed = table.entries()
    for binary, subtests in built.items():
        vendor = vendor_of(binary)
        if vendor in TWIN_VENDORS:
            problems += [_missing_row(table, f"{binary}@{s}", vendor) for s in subtests
                         if f"{binary}@{s}" not in listed]
    for _row, entry in listed.values():
        have = built.get(entry.binary)
        if have and entry.subtest not in have:
            problems.append(_stale_entry(table, entry, have))
    return problems + _split_twins(table, built)


# --------------------------------------------------------------------- view


@dataclass(frozen=True)
class Cell:
    test: str
    state: str | None  # its result in the run; NOT_RUN when absent; None without a run
    mark: str  # "" or what the build says against it: "not built", "no such subtest"
    expect: str = ""  # its status (EXPECT_STATES) where the table gives one, else ""
    why: str = ""  # the expect line's "SOURCE: WHY"


@dataclass(frozen=True)
class SideView:
    vendor: str
    cells: list[Cell]
    reason: str | None
    missing: bool  # a twin vendor with neither entries nor a reason


@dataclass(frozen=True)
class RowView:
    name: str
    sides: list[SideView]  # one per vendor shown, in VENDORS order


def _mark(entry: Entry, built: Mapping[str, Sequence[str]] | None) -> str:
    if built is None:
        return ""
    if entry.binary not in built:
        return "not built"
    subtests = built[entry.binary]
    return "no such subtest" if subtests and entry.subtest not in subtests else ""


def _expect_of(table: Table, test: str) -> tuple[str, str]:
    e = table.expectations.get(test)
    return ("", "") if e is None else (e.status, e.why)


def view(table: Table, states: Mapping[str, str] | None = None,
         built: Mapping[str, Sequence[str]] | None = None) -> list[RowView]:
    """Every row, per vendor its cells or reason; states: a run's result per
    test (None: no run); host shown only where some row has host entries."""
    vendors = [v for v in VENDORS
               if v in TWIN_VENDORS or any(r.has_entries(v) for r in table.rows)]
    out = []
    for row in table.rows:
        sides = []
        for v in vendors:
            side = row.sides.get(v, Side())
            cells = [Cell(e.test, None if states is None else states.get(e.test, NOT_RUN),
                          _mark(e, built), *_expect_of(table, e.test)) for e in side.entries]
            sides.append(SideView(v, cells, side.reason, v in TWIN_VENDORS and v not in row.sides))
        out.append(RowView(row.name, sides))
    return out


def _cell_texts(side: SideView, width: int) -> list[str]:
    """A side's lines in a column: its entries (test, result, mark), else its
    reason wrapped to width."""
    if side.cells:
        w = max(len(c.test) for c in side.cells)
        parts = [[c.test.ljust(w), c.state or "", f"[{c.mark}]" if c.mark else "",
                  f"({c.expect})" if c.expect and c.expect != "promised" else ""]
                 for c in side.cells]
        return [" ".join(p for p in ps if p).rstrip() for ps in parts]
    if side.reason is not None:
        return textwrap.wrap(f"none: {side.reason}", width)
    return ["?? no entry, no reason"] if side.missing else []


def render_text(rows: Sequence[RowView], header: str = "", min_width: int = 30) -> str:
    """The rows as columns: ROW, then each vendor side by side; a row takes as
    many lines as its longest side; reasons wrap in their column."""
    if not rows:
        return header + "(no rows)\n"
    vendors = [s.vendor for s in rows[0].sides]
    name_w = max(len("ROW"), *(len(r.name) for r in rows))
    widths = []
    for i in range(len(vendors)):
        entry_lines = [t for r in rows if r.sides[i].cells for t in _cell_texts(r.sides[i], 0)]
        widths.append(max([min_width, *map(len, entry_lines)]))
    lines = ["  ".join([f"{'ROW':<{name_w}}", *(f"{v.upper():<{w}}"
                                                 for v, w in zip(vendors, widths))]).rstrip()]
    for r in rows:
        cols = [_cell_texts(s, w) for s, w in zip(r.sides, widths)]
        for k in range(max(1, *map(len, cols))):
            cells = [f"{(c[k] if k < len(c) else ''):<{w}}" for c, w in zip(cols, widths)]
            lines.append("  ".join([f"{r.name if k == 0 else '':<{name_w}}", *cells]).rstrip())
    return header + "\n".join(lines) + "\n"
