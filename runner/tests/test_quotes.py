"""test_quotes.py: quoted sources in C comments name the file and the version
read (CONTRIBUTING.md, "Quoting a source").

The form: a citation in the comment block of the quote, one of
  `[src REPO PATH @ VERSION]`  a file of a repository (REPO owner/name, PATH
      the file in it, VERSION a tag such as rocm-6.2.2 or v6.7, or a commit
      of 12 or more hex digits);
  `[pkg PACKAGE VERSION PATH]`  a file as a vendor's package installs it
      (libcufile-dev-13-0 1.15.1.6-1 /usr/local/cuda-13.0/.../cufile.h);
  `[doc URL]`  a page of versioned documentation: a segment of the URL's
      path names the version (docs-10.2.0, v6.7, rocm-6.2.2);
  `[mail <MESSAGE-ID>]`  a mailing-list message, which its id fixes;
and a documentation quote is
in double quotes and is whole sentences: it begins with a capital letter, a
digit, '@' or '::', or with the elision mark "[...]", and ends with '.', '!',
'?' or ':' or with "[...]". Code is in backticks, never in double quotes.

Checked: every comment block that carries a citation, in every C source of
tests/ and lib/ (a cited block is held to the form whole). Not yet checked:
the older blocks without a citation (QUOTE_DEBT counts their quotes per C
source of tests/ and lib/, and the count of each file may only go down; a
file not named there must have none).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CITE = re.compile(r"\[src ([^\s\]]+) ([^\s\]]+) @ ([^\s\]]+)\]")
PKG = re.compile(r"\[pkg ([a-z0-9][a-z0-9.+-]+) ([^\s\]]+) (/[^\s\]]+)\]")
DOC = re.compile(r"\[doc (https://[^\s\]]+)\]")
MAIL = re.compile(r"\[mail <[^\s<>@\]]+@[^\s<>@\]]+>\]")
CITE_START = re.compile(r"\[(src|pkg|doc|mail)\b")
DOC_VERSION = re.compile(r"/(docs-|v|rocm-)?\d+(\.\d+)+/")
VERSION = re.compile(r"(v?\d+(\.\d+)+(-[A-Za-z0-9.]+)?|rocm-\d+(\.\d+)+|[0-9a-f]{12,40})\Z")
QUOTE = re.compile(r'"([^"]*)"')
START = re.compile(r"(\[\.\.\.\]|[A-Z0-9@]|::)")
END = re.compile(r"([.!?:]|\[\.\.\.\])\Z")
COMMENT = re.compile(r"/\*.*?\*/", re.S)
# Cited blocks whose older quotes are not yet whole sentences: their citations
# are checked, their quotes not. Remove an entry once its block is brought to
# the form (the test then holds it).
UNFINISHED: set[str] = set()


def sources() -> list[Path]:
    return sorted(p for d in ("tests", "lib") for p in (ROOT / d).rglob("*.[ch]"))


def blocks(path: Path) -> list[tuple[int, str]]:
    """(line, text) of each /* */ comment, the leading ' * ' of its lines gone."""
    text = path.read_text(encoding="utf-8", errors="replace")
    out = []
    for m in COMMENT.finditer(text):
        body = re.sub(r"^\s*\*(?!/) ?", "", m.group(0)[2:-2], flags=re.M)
        out.append((text.count("\n", 0, m.start()) + 1, " ".join(body.split())))
    return out


def other_citation(where: str, block: str, at: int, kind: str) -> list[str]:
    """What breaks the form of the pkg, doc or mail citation at block[at:]."""
    m = {"pkg": PKG, "doc": DOC, "mail": MAIL}[kind].match(block, at)
    if m is None:
        want = {"pkg": "[pkg PACKAGE VERSION /PATH]", "doc": "[doc https://URL]",
                "mail": "[mail <MESSAGE-ID>]"}[kind]
        return [f"{where}: citation {block[at:at + 60]!r} is not {want}"]
    if kind == "pkg":
        if not VERSION.match(m.group(2)):
            return [f"{where}: package version {m.group(2)!r} is no version (1.15.1.6-1)"]
        if "." not in m.group(3).rsplit("/", 1)[-1]:
            return [f"{where}: {m.group(3)!r} is not a file"]
    if kind == "doc" and not DOC_VERSION.search(m.group(1)):
        return [f"{where}: {m.group(1)!r} names no version in its path (docs-10.2.0, v6.7): "
                "an unversioned page changes under the quote"]
    return []


def problems_of(where: str, block: str) -> list[str]:
    """What breaks the form in a cited block (its quotes unchecked when the
    block is in UNFINISHED)."""
    out = []
    for start in CITE_START.finditer(block):
        if start.group(1) != "src":
            out += other_citation(where, block, start.start(), start.group(1))
            continue
        m = CITE.match(block, start.start())
        if m is None:
            out.append(f"{where}: citation {block[start.start():start.start() + 60]!r} is not "
                       "[src OWNER/REPO PATH @ VERSION]")
            continue
        repo, path, version = m.groups()
        if repo.count("/") != 1:
            out.append(f"{where}: {repo!r} is not OWNER/REPO")
        if "." not in path.rsplit("/", 1)[-1]:
            out.append(f"{where}: {path!r} is not a file")
        if not VERSION.match(version):
            out.append(f"{where}: version {version!r} is no tag (v6.7, rocm-6.2.2, 26.2.1) "
                       "nor a commit of 12+ hex digits")
    bare = MAIL.sub("", DOC.sub("", PKG.sub("", CITE.sub("", block))))
    for q in [] if where in UNFINISHED else QUOTE.findall(bare):
        q = q.strip()
        if not START.match(q) or not END.search(q):
            out.append(f"{where}: quote \"{q[:70]}\" is not whole sentences (capital or "
                       "[...] first; '.', '!', '?', ':' or [...] last); code goes in backticks")
    return out


def test_cited_blocks_keep_the_form() -> None:
    problems = []
    seen: set[str] = set()
    cited = 0
    for path in sources():
        for line, block in blocks(path):
            if CITE_START.search(block):
                cited += 1
                seen.add(f"{path.relative_to(ROOT)}:{line}")
                problems += problems_of(f"{path.relative_to(ROOT)}:{line}", block)
    assert cited >= 5, "the cited blocks went missing"
    assert not problems, "\n".join(problems)
    assert not UNFINISHED - seen, f"UNFINISHED names no cited block: {UNFINISHED - seen}"


@pytest.mark.parametrize("block, want", [
    ('"The caller is responsible for ensuring that each agent can." [src ROCm/x a.h @ '
     "rocm-6.2.2]", None),
    ('"otherwise error code is returned" [src ROCm/x a.h @ rocm-6.2.2]', "not whole sentences"),
    ('"[...] otherwise error code is returned." [src ROCm/x a.h @ c7785a6da1c1]', None),
    ('"Returns 0." [src ROCm/x a.h @ main]', "version 'main' is no tag"),
    ('"Returns 0." [src ROCm/x a.h]', "is not [src OWNER/REPO PATH @ VERSION]"),
    ('"Returns 0." [src x a.h @ v6.7]', "'x' is not OWNER/REPO"),
    ('"amdgpu_bo_reserve(mem->bo, true)" [src torvalds/linux a.c @ v6.7]', "code goes in"),
    ('"Returns 0." [pkg libcufile-dev-13-0 1.15.1.6-1 /usr/include/cufile.h]', None),
    ('"Returns 0." [pkg libcufile-dev-13-0 latest /usr/include/cufile.h]', "is no version"),
    ('"Returns 0." [pkg libcufile-dev-13-0 1.15.1.6-1 /usr/include]', "is not a file"),
    ('"Returns 0." [pkg libcufile-dev-13-0 /usr/include/cufile.h]', "is not [pkg"),
    ('"Returns 0." [doc https://rocm.docs.amd.com/projects/amdsmi/en/docs-10.2.0/f.html]', None),
    ('"Returns 0." [doc https://rocm.docs.amd.com/projects/amdsmi/en/latest/f.html]',
     "names no version"),
    ('"Returns 0." [doc rocm.docs.amd.com/en/docs-10.2.0/f.html]', "is not [doc"),
    ('`remove dead code` [mail <20260611200746.320513-1-a@amd.com>]', None),
    ('"remove dead code" [mail <20260611200746.320513-1-a@amd.com>]', "not whole sentences"),
    ('`remove dead code` [mail 20260611200746.320513-1-a@amd.com]', "is not [mail"),
])
def test_the_form_can_fail(block: str, want: str | None) -> None:
    got = problems_of("f.c:1", " ".join(block.split()))
    assert (not got) if want is None else any(want in p for p in got), got


# Quotes in comment blocks without a citation, per C source of tests/ and lib/
# (every vendor's): the work left. test_quote_debt_only_goes_down holds each
# file to its count, and every other file to none.
QUOTE_DEBT: dict[str, int] = {}


def quote_debt() -> dict[str, int]:
    """Per C source of tests/ and lib/, the quotes of its comment blocks that
    carry no citation (files with none left out)."""
    debt = {}
    for path in sources():
        rel = str(path.relative_to(ROOT))
        n = sum(len(QUOTE.findall(b)) for _, b in blocks(path) if not CITE_START.search(b))
        if n:
            debt[rel] = n
    return debt


def debt_problems(debt: dict[str, int], allowed: dict[str, int]) -> list[str]:
    """Where debt breaks allowed: more uncited quotes than a file's count (a
    new quote must cite its source), or fewer (lower the count, so that it
    stays down)."""
    out = []
    for rel in sorted(set(debt) | set(allowed)):
        n, cap = debt.get(rel, 0), allowed.get(rel, 0)
        if n > cap:
            out.append(f"{rel}: {n} quotes without a citation, {cap} allowed: cite the new "
                       "ones (CONTRIBUTING.md, \"Quoting a source\")")
        elif n < cap:
            out.append(f"{rel}: {n} quotes without a citation: lower QUOTE_DEBT's {cap} to {n}")
    return out


def test_quote_debt_only_goes_down() -> None:
    debt = quote_debt()
    print(f"quotes without a citation: {sum(debt.values())} in {len(debt)} files")
    assert debt_problems(debt, QUOTE_DEBT) == []


def test_quote_debt_rule_can_fail() -> None:
    assert debt_problems({"tests/kfd/mem.c": 3}, {"tests/kfd/mem.c": 2}) == [
        'tests/kfd/mem.c: 3 quotes without a citation, 2 allowed: cite the new ones '
        '(CONTRIBUTING.md, "Quoting a source")']
    assert debt_problems({}, {"tests/kfd/mem.c": 2}) == [
        "tests/kfd/mem.c: 0 quotes without a citation: lower QUOTE_DEBT's 2 to 0"]
    assert debt_problems({"tests/hip/new.c": 1}, {}) == [
        'tests/hip/new.c: 1 quotes without a citation, 0 allowed: cite the new ones '
        '(CONTRIBUTING.md, "Quoting a source")']
