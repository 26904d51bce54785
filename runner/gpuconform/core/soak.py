"""Soak lines a binary appends to $GPUCONFORM_METRICS_FILE (lib/soak.c): one
JSON object per finished soak, told from a metric line by its "soak" key:

    {"test":"cuda_mem","subtest":"stress-10k","dynamic":null,"soak":"alloc-map",
     "cycle":"...","level":"long","cycles":1234,"seconds":61.2,
     "stopped":"seconds","cycles_asked":null,"budget_s":null,
     "series":[{"name":"rss","unit":"KiB","x":[...],"y":[...],"from":250,"to":1234,
                "slope":0.002,"growth":2.1,"relative":0.001,"bound":"...","verdict":"ok"}]}

"stopped" says what ended it: "cycles" (the level's count, "cycles_asked",
done), "budget" (the soak's time budget at quick or standard, "budget_s", ran
out before the count), "seconds" (long's share of --duration) or "caller"
(the test left its loop first, as after a failure). Lines written before
these three keys existed lack them, and are valid.

check_soak() validates one and says in one line what is wrong; the runner
keeps valid ones in the test's record ("soaks"), for the report and the
qualification record. The verdict is the binary's: it failed the subtest
for a growing series already.
"""

from __future__ import annotations

import math
from typing import Any

from .metrickey import name_problem

__all__ = ["check_soak", "is_soak_line", "LEVEL_NAMES", "STOPPED", "VERDICTS"]

LEVEL_NAMES = ("quick", "standard", "long")  # lib/soak.c level_names
VERDICTS = ("ok", "grows", "few-samples")
STOPPED = ("cycles", "budget", "seconds", "caller")  # lib/soak.c stop_names
_FIT_KEYS = ("from", "to", "slope", "growth", "relative")


def is_soak_line(obj: Any) -> bool:
    return isinstance(obj, dict) and "soak" in obj


def _number(v: Any) -> bool:
    return not isinstance(v, bool) and isinstance(v, (int, float)) and math.isfinite(v)


def _check_series(i: int, s: Any) -> str:
    if not isinstance(s, dict):
        return f"series {i} is not an object"
    for key in ("name", "unit", "bound"):
        if not isinstance(s.get(key), str) or not s[key]:
            return f"series {i}: {key!r} missing or not a non-empty string"
    x, y = s.get("x"), s.get("y")
    if not isinstance(x, list) or not isinstance(y, list) or len(x) != len(y):
        return f"series {s['name']}: 'x' and 'y' are not lists of one length"
    if not all(_number(v) for v in x) or not all(v is None or _number(v) for v in y):
        return f"series {s['name']}: a point is not a number"
    for key in _FIT_KEYS:
        if key not in s or not (s[key] is None or _number(s[key])):
            return f"series {s['name']}: {key!r} missing or not a number or null"
    if s.get("verdict") not in VERDICTS:
        return f"series {s['name']}: verdict {s.get('verdict')!r} is not one of {', '.join(VERDICTS)}"
    return ""


def _check_stop(obj: dict[str, Any]) -> str:
    """How the soak ended, where the line says (an older line does not)."""
    if "stopped" in obj and obj["stopped"] not in STOPPED:
        return f"'stopped' {obj['stopped']!r} is not one of {', '.join(STOPPED)}"
    asked = obj.get("cycles_asked")
    if asked is not None and (isinstance(asked, bool) or not isinstance(asked, int) or asked < 0):
        return "'cycles_asked' is not a count or null"
    budget = obj.get("budget_s")
    if budget is not None and not (_number(budget) and budget > 0):
        return "'budget_s' is not a positive number of seconds or null"
    return ""


def check_soak(obj: dict[str, Any]) -> str:
    """'' when obj is a well-formed soak line, else what is wrong (one line)."""
    for key in ("test", "subtest", "soak", "cycle"):
        if not isinstance(obj.get(key), str) or not obj[key]:
            return f"soak: {key!r} missing or not a non-empty string"
    bad_name = name_problem(obj["soak"], "soak name")
    if bad_name is not None:
        return bad_name
    if obj.get("level") not in LEVEL_NAMES:
        return f"soak {obj['soak']}: level {obj.get('level')!r} is not one of {', '.join(LEVEL_NAMES)}"
    cycles = obj.get("cycles")
    if isinstance(cycles, bool) or not isinstance(cycles, int) or cycles < 0:
        return f"soak {obj['soak']}: 'cycles' is not a count"
    if not _number(obj.get("seconds")):
        return f"soak {obj['soak']}: 'seconds' is not a number"
    why = _check_stop(obj)
    if why:
        return f"soak {obj['soak']}: {why}"
    series = obj.get("series")
    if not isinstance(series, list):
        return f"soak {obj['soak']}: 'series' is not a list"
    for i, s in enumerate(series):
        why = _check_series(i, s)
        if why:
            return f"soak {obj['soak']}: {why}"
    return ""
