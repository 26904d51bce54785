"""Numbers and text as the runner prints them: a value in a unit that suits
it, a relative change, a p-value, a message on one line."""

from __future__ import annotations

import math

__all__ = ["value", "pct", "pct_abs", "p_value", "one_line", "nice_ticks"]

_TIME_SCALE = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}


def value(v: float | None, unit: str) -> str:
    """"1.884e+07 ns" as "18.84 ms": time units scaled to put the value in
    [1, 1000); other units as they are, 4 significant digits."""
    if v is None:
        return "?"
    if not math.isfinite(v):
        return f"{v} {unit}".rstrip()
    if unit in _TIME_SCALE and v != 0:
        secs = abs(v) * _TIME_SCALE[unit]
        best = "ns"
        for name, scale in _TIME_SCALE.items():
            if secs >= scale:
                best = name
        return f"{v * _TIME_SCALE[unit] / _TIME_SCALE[best]:.4g} {best}"
    return f"{v:.4g} {unit}".rstrip()


def pct(v: float | None) -> str:
    """A signed relative change: 0.0462 "+4.62%"."""
    if v is None:
        return "?"
    if math.isinf(v):
        return "+inf%" if v > 0 else "-inf%"
    return f"{100 * v:+.2f}%"


def pct_abs(v: float | None) -> str:
    """A relative size, 3 significant digits: 0.025 "2.5%"."""
    if v is None:
        return "?"
    return "inf%" if math.isinf(v) else f"{100 * v:.3g}%"


def p_value(v: float | None) -> str:
    if v is None:
        return "?"
    return "<1e-300" if v < 1e-300 else f"{v:.2g}"  # the normal tail underflows to 0


def one_line(text: object, limit: int = 0) -> str:
    """text with every run of whitespace (newlines too) made one space; cut
    to limit characters, ending in "...", when limit is given."""
    t = " ".join(str(text).split())
    return t if not limit or len(t) <= limit else t[: limit - 3] + "..."


def nice_ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    """Round axis values (steps of 1, 2, 2.5 or 5 times a power of ten) in
    [lo, hi], about count of them; [lo] when the range is empty or narrower
    than a float can step through at that magnitude (samples equal but for
    their last bits: adding such a step to lo leaves lo)."""
    if not hi > lo or lo + (hi - lo) / count == lo or hi - (hi - lo) / count == hi:
        return [lo]
    raw = (hi - lo) / count
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    first, last = math.ceil(lo / step), math.floor(hi / step + 1e-9)
    return [0.0 if k == 0 else k * step for k in range(first, last + 1)]
