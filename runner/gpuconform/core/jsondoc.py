"""JSON read with the means to blame one field by its line: every problem in
a baseline or results file becomes one line, "FILE:LINE: FIELD: what is wrong"."""

from __future__ import annotations

import json
import math
import re
from json.decoder import scanstring  # type: ignore[attr-defined]
from pathlib import Path
from typing import Any, Mapping, Sequence

__all__ = ["DocError", "Doc", "dumps", "get", "number", "type_name", "top_object"]


# An array of numbers as json.dumps(indent=1) writes it, a number a line. A
# JSON string holds no raw newline, so this matches arrays and never text.
_NUMBER_LIST = re.compile(r"\[\n[ ]*(-?[0-9][-+.eE0-9]*(?:,\n[ ]*-?[0-9][-+.eE0-9]*)*)\n[ ]*\]")


def dumps(obj: Any) -> str:
    """obj as indented JSON (indent=1), each array of numbers on one line: a
    run's samples take a line a series, not a line a sample (a third the
    bytes), and a reader still sees one field a line."""
    return _NUMBER_LIST.sub(lambda m: "[" + re.sub(r",\n[ ]*", ", ", m.group(1)) + "]",
                            json.dumps(obj, indent=1))


class DocError(Exception):
    """A file that cannot be used; str() is one line."""


_WS = re.compile(r"[ \t\n\r]*")


def _locate(text: str, path: Sequence[str | int]) -> int | None:
    """1-based line of the value at path in JSON text (best effort: None
    when the text does not have that path)."""
    dec = json.JSONDecoder()

    def ws(p: int) -> int:
        m = _WS.match(text, p)
        return m.end() if m else p

    try:
        pos = ws(0)
        for comp in path:
            ch = text[pos]
            if ch == "{" and isinstance(comp, str):
                pos = ws(pos + 1)
                while True:
                    if text[pos] != '"':
                        return None
                    key, pos = scanstring(text, pos + 1)
                    pos = ws(pos)
                    if text[pos] != ":":
                        return None
                    pos = ws(pos + 1)
                    if key == comp:
                        break
                    _, pos = dec.raw_decode(text, pos)
                    pos = ws(pos)
                    if text[pos] != ",":
                        return None
                    pos = ws(pos + 1)
            elif ch == "[" and isinstance(comp, int):
                pos = ws(pos + 1)
                for _ in range(comp):
                    _, pos = dec.raw_decode(text, pos)
                    pos = ws(pos)
                    if text[pos] != ",":
                        return None
                    pos = ws(pos + 1)
                if text[pos] == "]":
                    return None
            else:
                return None
        return text.count("\n", 0, pos) + 1
    except (IndexError, ValueError):
        return None


def _field_name(path: Sequence[str | int]) -> str:
    out = ""
    for comp in path:
        if isinstance(comp, int):
            out += f"[{comp}]"
        elif re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", comp):
            out += f".{comp}" if out else comp
        else:
            out += f"[{json.dumps(comp)}]"
    return out or "(top level)"


class Doc:
    """A parsed JSON file and the means to blame one of its fields."""

    def __init__(self, path: Path | str, text: str, what: str, parse: bool = True) -> None:
        self.path = str(path)
        self.text = text
        self.data: Any = None
        if not parse:
            return
        try:
            self.data = json.loads(text)
        except json.JSONDecodeError as e:
            raise DocError(f"{self.path}:{e.lineno}: malformed {what} JSON: {e.msg} "
                           f"(column {e.colno})") from None
        except (ValueError, RecursionError) as e:
            raise DocError(f"{self.path}: malformed {what} JSON: {e}") from None

    @classmethod
    def read(cls, path: Path, what: str) -> "Doc":
        try:
            text = path.read_text(encoding="utf-8", errors="surrogateescape")
        except OSError as e:
            raise DocError(f"{path}: cannot read {what}: {e.strerror or e}") from None
        return cls(path, text, what)

    def error(self, path: Sequence[str | int], why: str) -> DocError:
        line = _locate(self.text, path)
        where = f"{self.path}:{line}" if line is not None else self.path
        return DocError(f"{where}: {_field_name(path)}: {why}")


_JSON_TYPE_NAMES: dict[type, str] = {dict: "object", list: "array", str: "string",
                                     bool: "boolean", type(None): "null", int: "number",
                                     float: "number"}


def type_name(v: Any) -> str:
    return _JSON_TYPE_NAMES.get(type(v), type(v).__name__)


def get(doc: Doc, obj: Mapping[str, Any], path: list[str | int], key: str,
        want: type | tuple[type, ...], required: bool = True) -> Any:
    if key not in obj:
        if required:
            raise doc.error(path, f"missing field {key!r}")
        return None
    v = obj[key]
    if not isinstance(v, want) or (isinstance(v, bool) and bool not in _as_tuple(want)):
        names = "/".join(sorted({_JSON_TYPE_NAMES.get(t, t.__name__) for t in _as_tuple(want)}))
        raise doc.error(path + [key], f"is {type_name(v)}, not {names}")
    return v


def _as_tuple(t: type | tuple[type, ...]) -> tuple[type, ...]:
    return t if isinstance(t, tuple) else (t,)


def number(doc: Doc, v: Any, path: list[str | int], what: str = "sample") -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        shown = "" if v is None else f" {json.dumps(v)[:40]}"
        raise doc.error(path, f"{what} is {type_name(v)}{shown}, not a number")
    if not math.isfinite(v):
        raise doc.error(path, f"{what} is not finite ({v})")
    return float(v)


def top_object(doc: Doc, what: str, fmt: str) -> dict[str, Any]:
    """The file's top-level object, whose "format" must be fmt."""
    d = doc.data
    if not isinstance(d, dict):
        raise doc.error([], f"is {type_name(d)}, not a {what} object")
    got = d.get("format")
    if got != fmt:
        raise doc.error(["format"] if "format" in d else [],
                        f"unknown format {json.dumps(got)[:60]} (want \"{fmt}\")")
    return d
