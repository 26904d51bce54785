"""The qualification record: what a qualification run showed, sealed with a
content hash and optionally signed with GnuPG.

    build_record(results_dir) -> dict      the record of RESULTS/results.json
    write_record(results_dir, record, sign) -> [paths]
                                           RESULTS/qualification.json, .html
                                           (and .json.asc, signed by key sign)
    verify_record(path) -> str             one "ok" line, or RecordError

The record (format "gpuconform-qualification", version 1) holds: the suite
and its version; the run (id, results directory, start, end); the level
(quick / standard / long, the --duration asked for, how long the run took);
the machine (fingerprint, its key, hostname, kernel, devices) and the
versions that qualify (driver, runtime, kernel release); per contract area
(the CONTRACT of the test's row in data/contracts.txt; "host" for a host_*
binary in no row, else "other") the counts of pass / fail / skip /
expected-failure / other-unexpected and each test with its state, verdict,
reason and expectation rule; every soak with its series (slopes, growth,
bound, verdict and the points, to plot) and how it ended (a time budget
may cut the level's count short: "stopped", "cycles_asked", "budget_s";
null from a run before soaks said); the totals; the run's outcome; who
was to sign it ("signing": null or {"key", "signature"}). Verdicts:

    pass              passed (or never judged and passed)
    fail              an unexpected failure state (fail, crash, timeout, abort,
                      error, incomplete, dmesg-*): the contract broken
    skip              skipped, with its reason
    expected-failure  failed or flaked as an expectation rule says: the rule's
                      text is kept (PATH:LINE: KIND GLOB [platform=P])
    other-unexpected  unexpected without failing: a pass where a rule expects
                      a failure (fixed), a flake no rule expects, notrun

Sealing (the one written form, the content hash, the GnuPG signature) and
verify_record are seal.py's; they are re-exported here.

Every problem is a RecordError whose message is one line naming the file.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from .. import __version__
from ..core.atomic import atomic_write
from ..core.contracts import TABLE_PATH, ContractsError, load_table
from ..core.fmt import one_line
from ..core.jsondoc import Doc, DocError, type_name
from ..core.page import Badge, environment
from ..core.runmetrics import load_results, results_fingerprint
from .seal import (RECORD_FORMAT, RECORD_VERSION, SIGNATURE_SUFFIX, SUITE_NAME, RecordError,
                   canonical, content_hash, record_text, seal, sign_text, verify_record)
from ..core.soakplot import SoakView, soak_test_name, soak_view
from ..core.states import State

__all__ = [
    "RecordError",
    "RECORD_FORMAT",
    "RECORD_VERSION",
    "RECORD_NAME",
    "HTML_NAME",
    "SIGNATURE_SUFFIX",
    "VERDICTS",
    "build_record",
    "write_record",
    "verify_record",
    "canonical",
    "content_hash",
    "record_text",
    "render_record_html",
    "record_verdict",
]

RECORD_NAME = "qualification.json"
HTML_NAME = "qualification.html"
TEMPLATES = Path(__file__).resolve().parent / "templates"
VERDICTS = ("pass", "fail", "skip", "expected-failure", "other-unexpected")
HOST_AREA, OTHER_AREA = "host", "other"
REASON_CHARS = 500  # a reason or judgement kept in the record: on one line, cut


# ----------------------------------------------------------------- building


def _finite(v: Any) -> float | int | None:
    """v if a finite number, else None."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    return v if math.isfinite(v) else None


def _dict(v: Any) -> Mapping[str, Any]:
    """v if an object, else an empty one."""
    return v if isinstance(v, Mapping) else {}


def _iso(t: Any) -> str | None:
    v = _finite(t)
    return None if v is None else time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(v))


def record_verdict(rec: Mapping[str, Any]) -> str:
    """A test record's verdict (one of VERDICTS), from its state and the
    expectations' judgement ("expected", "final")."""
    result = str(rec.get("result", ""))
    expected = rec.get("expected")
    try:
        failure = State(result).is_failure
    except ValueError:
        failure = True  # a state this runner does not know: never a pass
    if rec.get("final") == "flake":
        return "expected-failure" if expected is True else "other-unexpected"
    if result == State.SKIP.value:
        return "skip"
    if failure:
        return "expected-failure" if expected is True else "fail"
    if result == State.PASS.value and expected is not False:
        return "pass"
    return "other-unexpected"  # a fixed pass, notrun


def _test_entry(name: str, rec: Mapping[str, Any]) -> dict[str, Any]:
    verdict = record_verdict(rec)
    state = "flake" if rec.get("final") == "flake" else str(rec.get("result", "?"))
    reason, judgement = rec.get("reason") or "", rec.get("judgement") or ""
    if verdict == "pass":
        reason = ""
    elif state in ("flake", "pass", "notrun"):  # no failure of its own to tell: the judgement
        reason = judgement or reason
    else:
        reason = reason or judgement
    rule = rec.get("rule")
    return {"name": name, "state": state, "verdict": verdict,
            "reason": one_line(reason, REASON_CHARS), "rule": str(rule) if rule else None}


def _area_of(name: str, areas: Mapping[str, str]) -> str:
    if name in areas:
        return areas[name]
    return HOST_AREA if name.split("@", 1)[0].startswith("host_") else OTHER_AREA


def _areas(tests: Mapping[str, Any], table_path: Path) -> dict[str, Any]:
    try:
        table = load_table(table_path)
    except ContractsError as e:
        raise RecordError(f"cannot read the contract table: {e}") from None
    areas = {test: row.contract for test, (row, _entry) in table.entries().items()}
    out: dict[str, Any] = {}
    for name in sorted(tests):
        area = out.setdefault(_area_of(name, areas), {"counts": {v: 0 for v in VERDICTS},
                                                      "tests": []})
        entry = _test_entry(name, tests[name])
        area["counts"][entry["verdict"]] += 1
        area["tests"].append(entry)
    return out


def _soak_number(doc: Doc, obj: Mapping[str, Any], path: list[str | int], key: str
                 ) -> float | int | None:
    v = obj.get(key)
    if v is None:
        return None
    n = _finite(v)
    if n is None:
        raise doc.error(path + [key], f"is {type_name(v)} {json.dumps(v)[:40]}, not a finite "
                        "number or null")
    return n


def _soak_text(doc: Doc, obj: Mapping[str, Any], path: list[str | int], key: str
               ) -> str | None:
    v = obj.get(key)
    if v is not None and not isinstance(v, str):
        raise doc.error(path + [key], f"is {type_name(v)}, not a string")
    return v


def _points(doc: Doc, obj: Mapping[str, Any], path: list[str | int], key: str,
            nulls: bool = False) -> list[Any]:
    """obj[key]: finite numbers (or null, where nulls: a sample that could not
    be taken, as soak.py allows in y)."""
    v = obj.get(key)
    if not isinstance(v, list):
        raise doc.error(path + [key] if key in obj else path,
                        f"is {type_name(v)}, not an array" if key in obj
                        else f"missing field {key!r}")
    for i, p in enumerate(v):
        if _finite(p) is None and not (nulls and p is None):
            raise doc.error(path + [key, i], f"is {type_name(p)}, not a finite number"
                            + (" or null" if nulls else ""))
    return list(v)


def _series(doc: Doc, s: Any, path: list[str | int]) -> dict[str, Any]:
    if not isinstance(s, dict):
        raise doc.error(path, f"is {type_name(s)}, not a series object")
    x, y = _points(doc, s, path, "x"), _points(doc, s, path, "y", nulls=True)
    if len(x) != len(y):
        raise doc.error(path + ["y"], f"has {len(y)} values, x has {len(x)}")
    out: dict[str, Any] = {k: _soak_text(doc, s, path, k)
                           for k in ("name", "unit", "bound", "verdict")}
    out.update({k: _soak_number(doc, s, path, k)
                for k in ("from", "to", "slope", "growth", "relative")})
    out["x"], out["y"] = x, y
    return out


def _soaks(doc: Doc, tests: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every soak of the run's tests, by test, in their order, checked: a
    malformed soak is a one-line error naming its field and line."""
    out = []
    for name in sorted(tests):
        raw = tests[name].get("soaks")
        if raw is None:
            continue
        path: list[str | int] = ["tests", name, "soaks"]
        if not isinstance(raw, list):
            raise doc.error(path, f"is {type_name(raw)}, not an array")
        for i, soak in enumerate(raw):
            where = path + [i]
            if not isinstance(soak, dict):
                raise doc.error(where, f"is {type_name(soak)}, not a soak object")
            series = soak.get("series")
            if not isinstance(series, list):
                raise doc.error(where + ["series"] if "series" in soak else where,
                                f"is {type_name(series)}, not an array" if "series" in soak
                                else "missing field 'series'")
            entry: dict[str, Any] = {"test": soak_test_name(name, soak)}
            entry.update({k: _soak_text(doc, soak, where, k) for k in ("soak", "cycle", "level")})
            entry.update({k: _soak_number(doc, soak, where, k) for k in ("cycles", "seconds")})
            # how it ended (null in a run from before soaks said): a budget that cut it short
            entry["stopped"] = _soak_text(doc, soak, where, "stopped")
            entry.update({k: _soak_number(doc, soak, where, k)
                          for k in ("cycles_asked", "budget_s")})
            entry["series"] = [_series(doc, s, where + ["series", j])
                               for j, s in enumerate(series)]
            out.append(entry)
    return out


def _level(run: Mapping[str, Any]) -> dict[str, Any]:
    level = _dict(run.get("level"))
    start, end = _finite(run.get("start")), _finite(run.get("end"))
    name = level.get("name")
    return {"name": name if isinstance(name, str) else None,
            "duration_s": _finite(level.get("duration_s")),
            "ran_s": round(end - start, 3) if start is not None and end is not None else None}


def _record(results_dir: Path, path: Path, data: Mapping[str, Any], doc: Doc,
            contracts_table: Path) -> dict[str, Any]:
    """The record of data (path's), not yet sealed."""
    fp = results_fingerprint(data)
    if fp is None:
        raise RecordError(f"{path}: no machine fingerprint: a qualification record is one "
                          "machine's run (a merge of several machines has none)")
    run = _dict(data.get("run"))
    tests: Mapping[str, Any] = data["tests"]
    devices = run.get("devices")
    outcome = data.get("outcome")
    return {
        "format": RECORD_FORMAT,
        "version": RECORD_VERSION,
        "suite": {"name": SUITE_NAME, "version": __version__},
        "run": {"id": run.get("run_id"), "results": results_dir.resolve().name,
                "start": _iso(run.get("start")), "end": _iso(run.get("end"))},
        "level": _level(run),
        "machine": {"fingerprint": fp.to_json(), "key": fp.key(),
                    "hostname": run.get("hostname"), "kernel": run.get("kernel"),
                    "devices": [str(d) for d in devices] if isinstance(devices, list) else []},
        "versions": {"driver": fp.driver, "runtime": fp.runtime,
                     "kernel_release": fp.kernel_release},
        "areas": _areas(tests, contracts_table),
        "soaks": _soaks(doc, tests),
        "totals": {str(k): v for k, v in (data.get("totals") or {}).items()
                   if isinstance(v, int)},
        "outcome": ({k: outcome.get(k) for k in ("status", "line", "unexpected", "regressions")}
                    if isinstance(outcome, dict) else None),
        "signing": None,
    }


def build_record(results_dir: Path, contracts_table: Path = TABLE_PATH) -> dict[str, Any]:
    """The qualification record of results_dir/results.json, sealed (its
    "content_hash" set). contracts_table: where the areas come from.
    RecordError (one line naming the file, and the line of a bad field) when
    results.json is unusable or holds no fingerprint (a merge of several
    machines is no one machine's record)."""
    results_dir = Path(results_dir)
    path = results_dir / "results.json"
    try:
        data = load_results(path)
        # the text again, unparsed: only to name the line of a malformed soak
        doc = Doc(path, path.read_text(encoding="utf-8", errors="surrogateescape"), "results",
                  parse=False)
        record = _record(results_dir, path, data, doc, contracts_table)
    except DocError as e:
        raise RecordError(str(e)) from None
    except OSError as e:
        raise RecordError(f"{path}: cannot read results: {e.strerror or e}") from None
    try:
        return seal(record)
    except RecordError as e:
        raise RecordError(f"{path}: {e}") from None


# ------------------------------------------------------------------ writing


def write_record(results_dir: Path, record: Mapping[str, Any], sign: str | None = None
                 ) -> list[Path]:
    """RESULTS/qualification.json and RESULTS/qualification.html, each written
    whole or not at all; with sign (a gpg key id, fingerprint or user id),
    RESULTS/qualification.json.asc too, and the record says who was to sign
    it. The record is sealed again (its "signing" set): the caller's dict is
    not changed. The signature is made before anything is written, so a gpg
    failure leaves the directory as it was; writing unsigned removes an old
    signature. Returns the paths written."""
    results_dir = Path(results_dir)
    out = results_dir / RECORD_NAME
    asc = results_dir / (RECORD_NAME + SIGNATURE_SUFFIX)
    html_path = results_dir / HTML_NAME
    body = dict(record)
    body["signing"] = {"key": sign, "signature": asc.name} if sign else None
    try:
        sealed = seal(body)
        text = record_text(sealed)
    except (RecordError, TypeError, ValueError) as e:
        raise RecordError(f"{out}: cannot write the record: {e}") from None
    page = render_record_html(sealed)
    signature = sign_text(text, sign, out) if sign else None
    written = [out, html_path]
    target = out
    try:
        atomic_write(out, text)
        target = asc
        if signature is not None:
            atomic_write(asc, signature)
            written.append(asc)
        else:
            asc.unlink(missing_ok=True)
        target = html_path
        atomic_write(html_path, page)
    except OSError as e:
        raise RecordError(f"{target}: cannot write: {e.strerror or e}") from None
    return written


# --------------------------------------------------------------------- page
#
# qualification.html shows the record, not results.json: what is on the page
# is what the hash covers. templates/qualification.html.j2 draws the views
# below; the soak plots are soakplot's, as in report.html.

VERDICT_COLOURS = {"pass": "#2e7d32", "fail": "#c62828", "skip": "#757575",
                   "expected-failure": "#ef6c00", "other-unexpected": "#6a1b9a"}
SKIP_NAMES_SHOWN = 6  # a skip reason's tests shown inline; more go in a <details>


@dataclass(frozen=True)
class _AreaRow:
    area: str
    counts: list[tuple[int, str]]  # per VERDICTS: the count, its colour ("" when 0)
    total: int


@dataclass(frozen=True)
class _TestRow:
    name: str
    area: str
    state: str
    reason: str
    rule: str


@dataclass(frozen=True)
class _SkipGroup:
    reason: str
    tests: list[str]
    shown: list[str]  # the first SKIP_NAMES_SHOWN
    more: list[str]  # the rest, folded


@dataclass(frozen=True)
class _RecordPage:
    title: str
    outcome: Badge
    outcome_line: str
    machine: list[tuple[str, str]]
    versions: list[tuple[str, str]]
    level: list[tuple[str, str]]
    verdicts: list[str]  # VERDICTS, the areas table's columns
    areas: list[_AreaRow]
    totals: list[int]  # per VERDICTS over every area, then all
    failures: list[_TestRow]
    unexpected: list[_TestRow]
    expected: list[_TestRow]
    skips: list[_SkipGroup]
    n_skips: int
    soaks: list[SoakView]
    soak_grows: int
    hash_algorithm: str
    hash_value: str
    signing: str
    record_name: str


def _s(v: Any) -> str:
    return "not recorded" if v is None or v == "" else str(v)


def seconds_text(v: Any) -> str:
    """A duration for people: "12.3 s", "8 min 49 s", "2 h 03 min"."""
    s = _finite(v)
    if s is None:
        return "not recorded"
    if s < 60:
        return f"{s:.1f} s"
    m, sec = divmod(int(round(s)), 60)
    if m < 60:
        return f"{m} min {sec:02d} s"
    h, m = divmod(m, 60)
    return f"{h} h {m:02d} min"


def _rows(areas: Mapping[str, Any], verdict: str) -> list[_TestRow]:
    return [_TestRow(str(t.get("name")), area, str(t.get("state")), str(t.get("reason") or ""),
                     str(t.get("rule") or ""))
            for area, a in sorted(areas.items()) for t in _dict(a).get("tests") or []
            if isinstance(t, Mapping) and t.get("verdict") == verdict]


def _skip_groups(rows: list[_TestRow]) -> list[_SkipGroup]:
    """The skips by reason, the reason of most tests first."""
    by: dict[str, list[str]] = {}
    for r in rows:
        by.setdefault(r.reason or "(no reason)", []).append(r.name)
    return [_SkipGroup(reason, names, names[:SKIP_NAMES_SHOWN], names[SKIP_NAMES_SHOWN:])
            for reason, names in sorted(by.items(), key=lambda kv: (-len(kv[1]), kv[0]))]


def _record_page(record: Mapping[str, Any]) -> _RecordPage:
    machine, level = _dict(record.get("machine")), _dict(record.get("level"))
    fp, run = _dict(machine.get("fingerprint")), _dict(record.get("run"))
    outcome = _dict(record.get("outcome"))
    areas = _dict(record.get("areas"))
    area_rows, totals = [], [0] * (len(VERDICTS) + 1)
    for name, a in sorted(areas.items()):
        counts = _dict(_dict(a).get("counts"))
        row = [int(counts.get(v) or 0) for v in VERDICTS]
        for i, n in enumerate(row + [sum(row)]):
            totals[i] += n
        area_rows.append(_AreaRow(name, [(n, VERDICT_COLOURS[v] if n and v != "pass" else "")
                                         for n, v in zip(row, VERDICTS)], sum(row)))
    status = outcome.get("status")
    badge = (Badge("nothing unexpected", "#2e7d32") if status == 0
             else Badge("not recorded", "#757575") if status is None
             else Badge("unexpected results", "#c62828"))
    soaks = [soak_view(str(k.get("test")), k) for k in record.get("soaks") or []
             if isinstance(k, Mapping)]
    h = _dict(record.get("content_hash"))
    signing = _dict(record.get("signing"))
    skips = _rows(areas, "skip")
    return _RecordPage(
        f"gpuconform qualification: {_s(machine.get('key'))}", badge,
        _s(outcome.get("line")),
        [("GPUs", _s(fp.get("gpu_model"))), ("devices", ", ".join(map(str, machine.get("devices")
                                                                      or [])) or "none"),
         ("hostname", _s(machine.get("hostname"))), ("kernel", _s(machine.get("kernel"))),
         ("arch", _s(fp.get("arch"))), ("CPU", _s(fp.get("cpu_model"))),
         ("fingerprint key", _s(machine.get("key")))],
        [(k, _s(v)) for k, v in sorted(_dict(record.get("versions")).items())],
        [("level", _s(level.get("name"))),
         ("duration asked", seconds_text(level.get("duration_s"))
          if level.get("duration_s") is not None else "the level's default"),
         ("ran for", seconds_text(level.get("ran_s"))),
         ("run", f"{_s(run.get('id'))} ({_s(run.get('results'))})"),
         ("start", _s(run.get("start"))), ("end", _s(run.get("end"))),
         ("suite", f"{_s(_dict(record.get('suite')).get('name'))} "
                   f"{_s(_dict(record.get('suite')).get('version'))}")],
        list(VERDICTS), area_rows, totals,
        _rows(areas, "fail"), _rows(areas, "other-unexpected"), _rows(areas, "expected-failure"),
        _skip_groups(skips), len(skips),
        soaks, sum(1 for k in soaks for s in k.series if s.grows),
        _s(h.get("algorithm")), _s(h.get("value")),
        (f"signed with key {signing.get('key')}: {signing.get('signature')} beside "
         f"{RECORD_NAME} (gpuconform verify checks it)") if signing else "unsigned",
        RECORD_NAME)


def render_record_html(record: Mapping[str, Any]) -> str:
    """qualification.html of a record: one self-contained page, no script,
    nothing fetched; every value escaped as in report.html."""
    return environment(TEMPLATES).get_template("qualification.html.j2").render(
        page=_record_page(record))
