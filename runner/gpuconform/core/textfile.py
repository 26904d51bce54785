"""The runner's own text files read as UTF-8, a bad byte reported by its line."""

from __future__ import annotations

from pathlib import Path

__all__ = ["decode_utf8"]


def decode_utf8(raw: bytes, path: Path | str, error: type[Exception]) -> str:
    """raw (the bytes of path) as text; a byte that is not UTF-8 is an
    `error` "PATH:LINE: not UTF-8 text", LINE the line it stands in."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        lineno = raw[: e.start].count(b"\n") + 1
        raise error(f"{path}:{lineno}: not UTF-8 text") from None
