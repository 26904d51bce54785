"""Test lists: which BINARY@SUBTEST tests a run selects.

A test list is a text file, one entry a line:

    # smoke: the host contracts, seconds in all
    host_interrupt@*            # every subtest of host_interrupt
    host_io@buffered-*
    host_io@scratch-cleanup     # a literal name

An entry is a test name BINARY@SUBTEST or an fnmatch glob of one (`*`, `?`,
`[a-z]`; `*` also crosses `@`). `#` starts a comment, on its own line or after
an entry; blank lines are ignored. Characters outside [A-Za-z0-9_-@*?[]] and
spaces inside an entry are errors.

Selection (select_tests) keeps the order of the available tests and then
applies --include / --exclude regexes (re.search in the name). The two kinds
of entry fail differently, on purpose:

  * a LITERAL entry that names no available test is an error (a typo, or a
    subtest that was renamed or removed: the list must be fixed), reported with
    the closest names;
  * a GLOB that matches nothing is fine: `kfd_*@*` selects nothing on a build
    without the AMD stack, and the same list serves every machine.

A binary whose subtests could not be listed appears as a bare BINARY (no `@`);
it is selected when an entry's BINARY part matches it, so a broken binary is
reported instead of silently dropping out of the list.

The named lists live in data/testlists/NAME.txt (smoke, nightly,
qualification); resolve_testlist() turns a name or a path into a file. Every
problem is a TestlistError whose message is one line, `PATH:LINE: what`.
"""

from __future__ import annotations

import difflib
import fnmatch
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Mapping, Sequence

__all__ = [
    "TestlistError",
    "TestPattern",
    "GLOB_CHARS",
    "check_test_glob",
    "glob_class_problem",
    "read_lines",
    "read_entries",
    "known_testlists",
    "resolve_testlist",
    "load_testlist",
    "select_tests",
]

GLOB_CHARS = frozenset("*?[")
_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
_ENTRY_CHARS = _NAME_CHARS | frozenset("@*?[]")
_SHOWN = 80  # longest entry quoted whole in a message
_CLASS_WORDS = {  # glob_class_problem's words for an entry
    "unopened": "{text}: ']' without '['",
    "empty": "{text}: empty '[]'",
    "inside": "{text}: {ch} inside '[...]' (only letters, digits, _ and - ranges)",
    "unclosed": "{text}: '[' without ']'",
}


class TestlistError(Exception):
    """A test list or a selection that cannot be used; str() is one line."""

    __test__ = False  # not a pytest test class, whatever its name


def _show(text: str) -> str:
    """text quoted for a one-line message: repr() escapes, long text cut."""
    if len(text) > _SHOWN:
        text = text[:_SHOWN] + "..."
    return repr(text)


def check_test_glob(text: str) -> str | None:
    """What is wrong with text as a BINARY@SUBTEST name or glob; None if nothing."""
    if not text:
        return "empty entry"
    for ch in text:
        if ch.isspace():
            return f"spaces inside the entry {_show(text)} (one test a line)"
        if ch not in _ENTRY_CHARS:
            return (
                f"character {ch!r} not allowed in {_show(text)} "
                "(letters, digits, _ - @ and the glob characters * ? [ ])"
            )
    if "@" not in text:
        return f"{_show(text)} has no '@' (entries are BINARY@SUBTEST or a glob of it)"
    if any(not part for part in text.split("@")):
        return f"{_show(text)}: empty part around '@' (entries are BINARY@SUBTEST)"
    return glob_class_problem(text, _NAME_CHARS, _CLASS_WORDS, _show(text))


def glob_class_problem(text: str, members: frozenset[str], words: Mapping[str, str],
                       shown: str, negate: bool = False,
                       outside: frozenset[str] | None = None) -> str | None:
    """The first problem, left to right, of the [...] classes of glob text,
    said by words[kind] with {text} as `shown` and {ch} as the character's
    repr(). The kinds: "unopened" a ']' without '['; "outside" a character
    outside a class not in `outside` (None: any is); "empty" a class with no
    member ("[]", or "[!]" where negate; ch is its ']'); "inside" a character
    in a class not in `members` (nor a leading '!' where negate); "unclosed" a
    '[' without ']'. None when there is none."""
    inside: str | None = None
    kind, bad = "", ""
    for ch in text:
        if inside is None:
            if ch == "[":
                inside = ""
            elif ch == "]":
                kind, bad = "unopened", ch
            elif outside is not None and ch not in outside:
                kind, bad = "outside", ch
        elif ch == "]":
            if inside in ("", "!"):
                kind, bad = "empty", ch
            inside = None
        elif ch in members or (negate and ch == "!" and inside == ""):
            inside += ch
        else:
            kind, bad = "inside", ch
        if kind:
            return words[kind].format(text=shown, ch=repr(bad))
    return words["unclosed"].format(text=shown, ch="'['") if inside is not None else None


@dataclass(frozen=True)
class TestPattern:
    """One entry of a test list: a literal name or a glob, and where it came from."""

    __test__ = False

    text: str
    path: Path
    line: int
    is_glob: bool
    _regex: "re.Pattern[str] | None" = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        rx = re.compile(fnmatch.translate(self.text)) if self.is_glob else None
        object.__setattr__(self, "_regex", rx)

    @classmethod
    def make(cls, text: str, path: Path, line: int) -> "TestPattern":
        """An entry of path:line; is_glob from the text (`*`, `?` or `[`)."""
        return cls(text, Path(path), line, any(c in GLOB_CHARS for c in text))

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"

    @property
    def binary(self) -> str:
        """The BINARY part (before the first '@'), itself perhaps a glob."""
        return self.text.split("@", 1)[0]

    def matches(self, name: str) -> bool:
        """Whether the test `name` is selected by this entry.

        A bare BINARY (a binary that could not be listed) matches when the
        entry's BINARY part does."""
        if "@" not in name:
            b = self.binary
            return fnmatch.fnmatchcase(name, b) if self.is_glob else name == b
        if self._regex is not None:
            return self._regex.match(name) is not None
        return name == self.text


def read_lines(path: Path, error: type[Exception]) -> Iterator[tuple[int, str, str]]:
    """(line number, text before '#' without outer blanks, comment after '#')
    of each line of path that has text. Lines are split on '\\n' only.
    Problems reading the file are `error`s with a one-line message naming the
    file (and line)."""
    try:
        raw = Path(path).read_bytes()
    except IsADirectoryError:
        raise error(f"{path}: is a directory, not a file") from None
    except OSError as e:
        raise error(f"{path}: cannot read: {e.strerror or e}") from None
    for lineno, bline in enumerate(raw.split(b"\n"), 1):
        try:
            line = bline.decode("utf-8")
        except UnicodeDecodeError:
            raise error(f"{path}:{lineno}: not UTF-8 text") from None
        if "\0" in line:
            raise error(f"{path}:{lineno}: NUL byte")
        text, _, comment = line.partition("#")
        text = text.strip()
        if text:
            yield lineno, text, comment.strip()


def read_entries(path: Path, error: type[Exception]) -> Iterator[tuple[int, str]]:
    """(line number, text) of read_lines(): the comments left out."""
    for lineno, text, _ in read_lines(path, error):
        yield lineno, text


def known_testlists(data_dir: Path) -> list[str]:
    """The names of data_dir/testlists/*.txt, sorted."""
    d = Path(data_dir) / "testlists"
    try:
        return sorted(p.stem for p in d.glob("*.txt") if p.is_file())
    except OSError:
        return []


def resolve_testlist(name_or_path: str, data_dir: Path) -> Path:
    """The file of a test list: a bare name (no '/') of data_dir/testlists/NAME.txt
    first, else a path. Neither -> TestlistError naming the known lists."""
    if not name_or_path:
        raise TestlistError("empty test list name")
    if "/" not in name_or_path and "\0" not in name_or_path:
        named = Path(data_dir) / "testlists" / f"{name_or_path}.txt"
        if named.is_file():
            return named
    path = Path(name_or_path)
    try:
        if path.is_file():
            return path
        is_dir = path.is_dir()
    except (OSError, ValueError):
        is_dir = False
    known = known_testlists(data_dir)
    names = ", ".join(known) if known else f"none in {Path(data_dir) / 'testlists'}"
    if is_dir:
        raise TestlistError(f"{name_or_path}: is a directory, not a test list (known lists: {names})")
    raise TestlistError(
        f"unknown test list {_show(name_or_path)}: no such file, and not a known list ({names})"
    )


def load_testlist(path: Path) -> list[TestPattern]:
    """The entries of a test list file; a malformed entry or an empty list is
    a TestlistError `PATH:LINE: what`."""
    path = Path(path)
    patterns: list[TestPattern] = []
    for lineno, text in read_entries(path, TestlistError):
        problem = check_test_glob(text)
        if problem is not None:
            raise TestlistError(f"{path}:{lineno}: {problem}")
        patterns.append(TestPattern.make(text, path, lineno))
    if not patterns:
        raise TestlistError(f"{path}: no entries (an empty list selects nothing; `*@*` selects all)")
    return patterns


def _compile(regexes: Sequence[str], what: str) -> list["re.Pattern[str]"]:
    out = []
    for rx in regexes:
        try:
            out.append(re.compile(rx))
        except re.error as e:
            raise TestlistError(f"{what} {_show(rx)}: bad regular expression: {e}") from None
    return out


def _unknown(p: TestPattern, available: Sequence[str]) -> str:
    close = difflib.get_close_matches(p.text, list(available), n=3, cutoff=0.6)
    if close:
        return f"{p.where}: no such test {_show(p.text)}; closest: {', '.join(close)}"
    return f"{p.where}: no such test {_show(p.text)} (nothing close; `gpuconform list` lists them)"


def select_tests(
    available: Sequence[str],
    patterns: Sequence[TestPattern] | None,
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
) -> list[str]:
    """The tests of `available` (in its order) that the list selects, then
    kept if some include regex is found in the name (when any is given) and
    no exclude regex is. patterns None selects all.

    A literal entry naming no available test is a TestlistError (the first
    such entry, with the number of others); a glob matching nothing is not.
    A bad regex is a TestlistError naming it."""
    inc = _compile(include, "--include")
    exc = _compile(exclude, "--exclude")
    if patterns is None:
        chosen = list(available)
    else:
        names = set(available)
        bare = {n for n in available if "@" not in n}
        missing = [
            p
            for p in patterns
            if not p.is_glob and p.text not in names and p.binary not in bare
        ]
        if missing:
            msg = _unknown(missing[0], available)
            if len(missing) > 1:
                msg += f" (and {len(missing) - 1} more unknown: " + ", ".join(
                    m.text for m in missing[1:4]) + (", ..." if len(missing) > 4 else "") + ")"
            raise TestlistError(msg)
        literals = {p.text for p in patterns if not p.is_glob}
        globs = [p for p in patterns if p.is_glob]
        bare_literal = {p.binary for p in patterns if not p.is_glob}
        chosen = [
            n
            for n in available
            if (n in literals if "@" in n else n in bare_literal)
            or any(g.matches(n) for g in globs)
        ]
    if inc:
        chosen = [n for n in chosen if any(r.search(n) for r in inc)]
    if exc:
        chosen = [n for n in chosen if not any(r.search(n) for r in exc)]
    return chosen
