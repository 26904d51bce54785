"""What the pages share (report.html, the qualification record's page): the
Jinja2 environment over a page's templates and the shared ones (the soak
plots' macros, templates/soakplot.svg.j2), the cleaning and escaping every
interpolated value goes through, and a badge (text on a colour).

Only the pages import this module: the run and its results need no Jinja2.
"""

from __future__ import annotations

import functools
import html
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from .results import expected_failure

try:
    import jinja2
    from markupsafe import Markup
except ModuleNotFoundError as e:  # the runner's results do not need it, the page does
    raise ModuleNotFoundError(f"{e} (install python3-jinja2)", name=e.name) from None

__all__ = ["Badge", "EXPECTED_COLOUR", "STATE_COLOURS", "TEMPLATES", "environment",
           "record_badge", "state_badge"]

TEMPLATES = Path(__file__).resolve().parent / "templates"

_CONTROL_RE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


@dataclass(frozen=True)
class Badge:
    text: str
    colour: str


STATE_COLOURS = {
    "pass": "#2e7d32", "skip": "#757575", "notrun": "#9e9e9e", "fail": "#c62828",
    "crash": "#8e0000", "timeout": "#ef6c00", "abort": "#6a1b9a", "incomplete": "#f9a825",
    "error": "#ad1457", "dmesg-warn": "#f9a825", "dmesg-fail": "#c62828",
}
EXPECTED_COLOUR = "#8d6e63"  # an expected failure: neither red (unexpected) nor green


def state_badge(state: str) -> Badge:
    return Badge(state, STATE_COLOURS.get(state, "#000"))


def record_badge(rec: Mapping[str, Any]) -> Badge:
    """A results.json record's state; an expected failure reads "fail,
    expected" in brown, never a plain red "fail"."""
    state = str(rec.get("result", "?"))
    if expected_failure(rec):
        return Badge(f"{state}, expected", EXPECTED_COLOUR)
    return state_badge(state)


def _clean(text: Any) -> str:
    """Any value as text safe to escape: no lone surrogates, control
    characters shown as \\xNN."""
    s = str(text).encode("utf-8", "replace").decode("utf-8")
    return _CONTROL_RE.sub(lambda m: f"\\x{ord(m.group()):02x}", s)


def _finalize(value: Any) -> Markup:
    """What a template's {{ value }} writes: markup (a macro's output) as it
    is, anything else cleaned and escaped as html.escape does (&quot;, not
    markupsafe's &#34;); autoescape then leaves the result alone."""
    if isinstance(value, Markup):
        return value
    return Markup(html.escape(_clean(value), quote=True))


def _px(v: float) -> str:
    """A computed position as an SVG attribute: tenths of a pixel."""
    return f"{v:.1f}"


@functools.lru_cache(maxsize=None)
def environment(templates: Path) -> jinja2.Environment:
    """A page's templates (the directory templates), then the shared ones
    beside this module, wherever the runner runs from."""
    dirs = [str(templates)] + ([str(TEMPLATES)] if templates != TEMPLATES else [])
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(dirs), autoescape=True,
                             finalize=_finalize, undefined=jinja2.StrictUndefined,
                             trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
    env.filters["px"] = _px
    return env
