"""The metric names the C sources can record, read from the sources: every
gc_metric() and gc_metric_hist() call site of tests/ and lib/, with what its
name argument can be
(test_catalogue.py checks each against data/metrics.txt, where the GPU
binaries never run).

A name argument is one of three things the suite's code does:
  * a string literal:            gc_metric("init-cold", "ns", ...)
  * an array of literals:        gc_metric(names[q], ...), names = { "query-name", ... }
  * a buffer snprintf() formats: snprintf(name, sizeof(name), "%s-%s-2MiB", ...);
                                 gc_metric(name, ...)  -> the glob "*-*-2MiB"
Anything else is reported as unresolved, so that a new way of building a name
is noticed rather than silently left unchecked.

Each call site also says which binaries may record it: the GC_MAIN() name of
its file, else those of the files beside it (a harness shared by a
directory's binaries), else any (lib/).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

__all__ = ["CallSite", "call_sites", "strip_comments", "format_glob", "globs_intersect"]

# A string literal, a block comment or a line comment: comments blanked, literals kept.
_LEXEME = re.compile(r'"(?:\\.|[^"\\\n])*"|/\*.*?\*/|//[^\n]*', re.S)
_CALL = re.compile(r"(?<![\w.>])gc_metric(?:_hist)?\(")
_CONVERSION = re.compile(r"%%|%[-+ #0]*(?:\d+|\*)?(?:\.(?:\d+|\*))?(?:hh|h|ll|l|j|z|t|L)?"
                         r"[diouxXeEfgGcsp]")
_LITERAL = re.compile(r'"((?:\\.|[^"\\])*)"')
_MAIN = re.compile(r'\bGC_MAIN\(\s*\.name\s*=\s*"([^"]+)"')


@dataclass(frozen=True)
class CallSite:
    path: Path
    line: int
    arg: str  # the name argument as written
    unit: str | None  # the unit when it is a literal
    names: tuple[str, ...] = ()  # the exact names it records (literals)
    globs: tuple[str, ...] = ()  # globs of formatted names
    unresolved: str = ""  # why neither is known
    binaries: tuple[str, ...] = ()  # the binaries that may record it; () any

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"


def strip_comments(text: str) -> str:
    """text with its C comments blanked (newlines kept: line numbers hold)."""
    def blank(m: re.Match[str]) -> str:
        s = m.group(0)
        return s if s.startswith('"') else re.sub(r"[^\n]", " ", s)

    return _LEXEME.sub(blank, text)


def format_glob(fmt: str) -> str:
    """A printf format as a glob: each conversion a `*`, %% a %."""
    return _CONVERSION.sub(lambda m: "%" if m.group(0) == "%%" else "*", fmt)


def _arguments(code: str, pos: int, n: int) -> list[str]:
    """The first n arguments of the call whose '(' is just before pos, each
    stripped: commas inside parentheses, brackets or literals do not split."""
    args, depth, cur, i = [], 0, "", pos
    while i < len(code) and len(args) < n:
        c = code[i]
        if c == '"':
            lit = _LITERAL.match(code, i)
            end = lit.end() if lit else i + 1
            cur += code[i:end]
            i = end
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            if depth == 0:
                args.append(cur.strip())
                break
            depth -= 1
        if c == "," and depth == 0:
            args.append(cur.strip())
            cur = ""
        else:
            cur += c
        i += 1
    return args + [""] * (n - len(args))


def _function_start(code: str, pos: int) -> int:
    """Where the function around pos begins (its '{' at the start of a line,
    kernel style); 0 when none is found."""
    return code.rfind("\n{", 0, pos) + 1


def _resolve(code: str, pos: int, arg: str) -> tuple[tuple[str, ...], tuple[str, ...], str]:
    """(names, globs, why unresolved) of a name argument at pos."""
    lit = _LITERAL.fullmatch(arg)
    if lit:
        return (lit.group(1),), (), ""
    start = _function_start(code, pos)
    m = re.fullmatch(r"(\w+)\[[^\]]*\]", arg)
    if m:  # an array of literals, declared before the call (in the function or the file)
        decls = list(re.finditer(rf"\b{m.group(1)}\s*\[[^\]]*\]\s*=\s*\{{([^}}]*)\}}",
                                 code[:pos]))
        if decls:
            return tuple(_LITERAL.findall(decls[-1].group(1))), (), ""
        return (), (), f"no array of literals {m.group(1)}[] = {{ ... }} before the call"
    if re.fullmatch(r"\w+", arg):  # a buffer: the last snprintf into it, in the function
        fmts = list(re.finditer(rf"\bsnprintf\(\s*{arg}\s*,[^,]+,\s*\"((?:\\.|[^\"\\])*)\"",
                                code[start:pos]))
        if fmts:
            return (), (format_glob(fmts[-1].group(1)),), ""
        return (), (), f"no snprintf({arg}, ...) before the call in its function"
    return (), (), "neither a literal, an array of literals nor an snprintf'd buffer"


def _main_name(path: Path) -> str | None:
    m = _MAIN.search(strip_comments(path.read_text(errors="replace")))
    return m.group(1) if m else None


def _binaries(path: Path) -> tuple[str, ...]:
    """Who may record a call of path: its GC_MAIN's binary, else its
    directory's binaries when under tests/, else () (any)."""
    own = _main_name(path)
    if own is not None:
        return (own,)
    if path.parent.parent.name != "tests":
        return ()
    return tuple(sorted(n for p in path.parent.glob("*.c") if (n := _main_name(p))))


def call_sites(roots: list[Path]) -> Iterator[CallSite]:
    """Every gc_metric() or gc_metric_hist() call (not its declaration or
    definition) in the .c
    and .h files under roots, in path order."""
    for root in roots:
        for path in sorted(p for ext in ("*.c", "*.h") for p in root.rglob(ext)):
            code = strip_comments(path.read_text(errors="replace"))
            binaries = _binaries(path) if _CALL.search(code) else ()
            for m in _CALL.finditer(code):
                if re.search(r"\bvoid\s*$", code[:m.start()]):
                    continue  # the declaration or the definition
                arg, unit_arg = _arguments(code, m.end(), 2)
                unit = _LITERAL.fullmatch(unit_arg)
                names, globs, why = _resolve(code, m.start(), arg)
                yield CallSite(path, code.count("\n", 0, m.start()) + 1, arg,
                               unit.group(1) if unit else None, names, globs, why, binaries)


def _tokens(glob: str) -> list[str | frozenset[str] | None]:
    """A glob as tokens: '*' , a literal char, None for '?', a frozenset for a
    class ('[!...]' is treated as any character: over-approximated)."""
    out: list[str | frozenset[str] | None] = []
    i = 0
    while i < len(glob):
        c = glob[i]
        j = glob.find("]", i + 2) if c == "[" else -1
        if c == "[" and j > 0:
            body = glob[i + 1:j]
            if body.startswith("!"):
                out.append(None)
            else:
                chars = set()
                k = 0
                while k < len(body):
                    if k + 2 < len(body) and body[k + 1] == "-":
                        chars.update(chr(x) for x in range(ord(body[k]), ord(body[k + 2]) + 1))
                        k += 3
                    else:
                        chars.add(body[k])
                        k += 1
                out.append(frozenset(chars))
            i = j + 1
            continue
        out.append("*" if c == "*" else None if c == "?" else c)
        i += 1
    return out


def _compatible(a: str | frozenset[str] | None, b: str | frozenset[str] | None) -> bool:
    """Whether one character can match both tokens (neither is '*')."""
    if a is None or b is None:
        return True
    sa = a if isinstance(a, frozenset) else frozenset(a)
    sb = b if isinstance(b, frozenset) else frozenset(b)
    return bool(sa & sb)


def globs_intersect(a: str, b: str) -> bool:
    """Whether some string matches both fnmatch globs: a walk of the two
    patterns side by side, a '*' either skipped or eating the other's
    character."""
    ta, tb = _tokens(a), _tokens(b)
    seen: set[tuple[int, int]] = set()
    todo = [(0, 0)]
    while todo:
        i, j = todo.pop()
        if (i, j) in seen:
            continue
        seen.add((i, j))
        if i == len(ta) and j == len(tb):
            return True
        x = ta[i] if i < len(ta) else ""
        y = tb[j] if j < len(tb) else ""
        if x == "*":
            todo.append((i + 1, j))
            if j < len(tb) and y != "*":
                todo.append((i, j + 1))
        if y == "*":
            todo.append((i, j + 1))
            if i < len(ta) and x != "*":
                todo.append((i + 1, j))
        if i < len(ta) and j < len(tb) and x != "*" and y != "*" and _compatible(x, y):
            todo.append((i + 1, j + 1))
    return False
