"""catalogue.py: the metric catalogue's format, its one-line errors and its
lookup; then what CI can check of data/metrics.txt without a GPU: every metric
of the committed baselines catalogued in its unit, the selftest binaries'
metrics (run for real) catalogued, and every name a gc_metric() call in
tests/ and lib/ can record matched by some line."""

from __future__ import annotations

import fnmatch
import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from gc_testutil import REPO_ROOT, Selftests
from metric_sources import call_sites, format_glob, globs_intersect, strip_comments
from gpuconform.core.metrickey import MetricKey
from gpuconform.core.catalogue import (
    DEFAULT_CATALOGUE,
    Catalogue,
    CatalogueError,
    load_catalogue,
)
from gpuconform.core.metrics import METRICS_ENV, parse_metrics

GOOD = """\
# a header comment

cuda_bubbles@gaps@graph-*:gap*.graph.*      ns     device  # the GPU's clock
cuda_bubbles@gaps@stream-*:gap*.stream.*    ns     node
cuda_mem@latency:*-2MiB                     us     node
cuda_mem@latency:map-2MiB                   us     device  # shadowed: the line above wins
kfd_mem@latency@gpu[0-9]*:*_*-vram-2MiB     us     node
"""


def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "metrics.txt"
    p.write_text(text)
    return p


def error_of(tmp_path: Path, text: str) -> str:
    p = write(tmp_path, text)
    with pytest.raises(CatalogueError) as ei:
        load_catalogue(p)
    msg = str(ei.value)
    assert "\n" not in msg and msg.startswith(f"{p}:")
    return msg


# ------------------------------------------------------------------ the format


def test_entries_in_file_order_with_their_lines(tmp_path: Path) -> None:
    c = load_catalogue(write(tmp_path, GOOD))
    assert [(e.pattern, e.unit, e.scope, e.line) for e in c.entries][:2] == [
        ("cuda_bubbles@gaps@graph-*:gap*.graph.*", "ns", "device", 3),
        ("cuda_bubbles@gaps@stream-*:gap*.stream.*", "ns", "node", 4),
    ]
    assert c.entries[0].why == "the GPU's clock" and c.entries[1].why == ""
    assert len(c.entries) == 5


def test_lookup_first_match_wins(tmp_path: Path) -> None:
    c = load_catalogue(write(tmp_path, GOOD))
    e = c.lookup("cuda_bubbles@gaps@graph-chain16:gap-p99.graph.chain16")
    assert e is not None and (e.scope, e.line) == ("device", 3)
    e = c.lookup("cuda_bubbles@gaps@stream-chain16:gap.stream.chain16")
    assert e is not None and e.scope == "node"
    e = c.lookup("cuda_mem@latency:map-2MiB")
    assert e is not None and (e.line, e.scope) == (5, "node")
    e = c.lookup("kfd_mem@latency@gpu12:ALLOC_MEMORY_OF_GPU-vram-2MiB")
    assert e is not None and e.line == 7


@pytest.mark.parametrize("key", [
    "cuda_bubbles@gaps@graph-chain16:bubbles.graph.chain16",  # another name
    "cuda_bubbles@launch-gap:gap.graph.launch",  # another subtest
    "hip_mem@latency:map-2MiB",  # another binary, same subtest and name
    "cuda_mem@latency:map-1GiB",
    "kfd_mem@latency@gpux:ALLOC_MEMORY_OF_GPU-vram-2MiB",  # the class wants a digit
    "kfd_mem@latency@gpu1:alloc-vram-2MiB",  # case matters
])
def test_lookup_misses(tmp_path: Path, key: str) -> None:
    assert load_catalogue(write(tmp_path, GOOD)).lookup(key) is None


def test_problem_names_the_metric_and_what_to_do(tmp_path: Path) -> None:
    c = load_catalogue(write(tmp_path, GOOD))
    assert c.problem("cuda_mem@latency:map-2MiB", "us") is None
    assert c.problem("cuda_foo@bar:lat", "us") == (
        f"metric cuda_foo@bar:lat (us) is not in {c.path}: add a line PATTERN UNIT SCOPE")
    assert c.problem("cuda_mem@latency:map-2MiB", "ms") == (
        f"metric cuda_mem@latency:map-2MiB is recorded in 'ms', but {c.path}:5 "
        "(cuda_mem@latency:*-2MiB) says 'us': fix the binary or that line")
    assert c.problems([("cuda_mem@latency:map-2MiB", "us"), ("x@y:z", "ns")]) == [
        c.problem("x@y:z", "ns")]


def test_the_repository_catalogue_is_named_relative() -> None:
    c = load_catalogue()
    assert c.path == DEFAULT_CATALOGUE and c.where == "data/metrics.txt"
    assert "is not in data/metrics.txt: add a line" in (c.problem("nope@x:y", "ns") or "")


@pytest.mark.parametrize("line, want", [
    ("cuda_mem@latency:*-2MiB", "missing UNIT and SCOPE"),
    ("cuda_mem@latency:*-2MiB us", "missing SCOPE"),
    ("cuda_mem@latency:*-2MiB us node why-without-hash", "4 fields"),
    ("cuda_mem@latency:*-2MiB us host", "unknown scope 'host': device or node"),
    ("cuda_mem@latency:*-2MiB us Device", "unknown scope 'Device'"),
    ("cuda_mem@latency us node", "has no ':'"),
    ("cuda_mem:lat us node", "has no '@'"),
    ("cuda_mem@latency: us node", "no metric name after ':'"),
    ("cuda_mem@lat[ency:x us node", "'[' without ']'"),
    ("cuda_mem@latency:x[2 us node", "'[' without ']' in the metric name"),
    ("cuda_mem@latency:x]2 us node", "']' without '['"),
    ("cuda_mem@latency:a/b us node", "character '/' not allowed in the metric name"),
    ("cuda_mem@lat,ency:x us node", "character ',' not allowed"),
    ("*:* us node", "has no '@'"),
    ("*@*:* us node", "the binary '*' is a glob"),
    ("cuda_*@latency:x us node", "the binary 'cuda_*' is a glob"),
])
def test_bad_lines_are_one_line_errors_naming_file_and_line(tmp_path: Path, line: str,
                                                            want: str) -> None:
    msg = error_of(tmp_path, f"# header\nhost_io@throughput:direct-*-*MiB MB/s node\n{line}\n")
    assert msg.startswith(f"{tmp_path / 'metrics.txt'}:3: ") and want in msg, msg


def test_duplicate_pattern_names_both_lines(tmp_path: Path) -> None:
    msg = error_of(tmp_path, "a@b:c ns node\n\na@b:c us device  # again\n")
    assert msg == f"{tmp_path / 'metrics.txt'}:3: duplicate pattern 'a@b:c' (first on line 1)"


def test_unreadable_empty_and_binary_files(tmp_path: Path) -> None:
    missing = tmp_path / "none.txt"
    with pytest.raises(CatalogueError, match=rf"^{re.escape(str(missing))}: cannot read"):
        load_catalogue(missing)
    with pytest.raises(CatalogueError, match="is a directory"):
        load_catalogue(tmp_path)
    assert "no entries" in error_of(tmp_path, "# only a comment\n\n")
    p = tmp_path / "bin.txt"
    p.write_bytes(b"a@b:c ns node\n\xff\xfe\n")
    with pytest.raises(CatalogueError, match=rf"^{re.escape(str(p))}:2: not UTF-8"):
        load_catalogue(p)


# ------------------------------------------------------- the source scanner


def test_format_glob_and_glob_intersection() -> None:
    assert format_glob("%s.ratio.%s-over-%s.%lluMiB.t%d") == "*.ratio.*-over-*.*MiB.t*"
    assert format_glob("%-10s %zu%% %.3f") == "* *% *"
    for a, b, meet in [("*-*-2MiB", "*_*-vram-2MiB", True),
                       ("gap-p50-*-over-graph", "overhead.*-trace-over-graph.*", False),
                       ("residual.*.*.*", "residual.session*", True),
                       ("a[bc]", "a[cd]", True), ("a[bc]", "a[de]", False),
                       ("a?c", "abc", True), ("abc", "abd", False), ("x", "x*", True),
                       ("", "*", True), ("", "?", False)]:
        assert globs_intersect(a, b) is meet and globs_intersect(b, a) is meet, (a, b)


def test_strip_comments_keeps_literals_and_lines() -> None:
    code = 'a(); /* gc_metric("x",\n */ b("/* not a comment */"); // gc_metric("y"\nc();\n'
    out = strip_comments(code)
    assert out.count("\n") == code.count("\n") and 'gc_metric' not in out
    assert '"/* not a comment */"' in out


def test_call_sites_resolve_literals_arrays_and_formats(tmp_path: Path) -> None:
    (tmp_path / "t.c").write_text("""\
void gc_metric(const char *name, const char *unit, int b, const double *v, size_t n);
static void f(void)
{
	static const char *const names[2] = { "query-a", "query-b" };
	char name[64];

	gc_metric("lit", "ns", 0, v, 1); /* gc_metric("commented", "ns", ...) */
	gc_metric(names[i], "us", 0, v, 1);
	snprintf(name, sizeof(name), "%s-%zuMiB", what, size);
	gc_metric(name, "MB/s", 0, v, 1);
	gc_metric(other, unit, 0, v, 1);
	gc_metric(make(x), "ns", 0, v, 1);
}
""")
    got = [(s.line, s.names, s.globs, s.unit, bool(s.unresolved)) for s in call_sites([tmp_path])]
    assert got == [(7, ("lit",), (), "ns", False),
                   (8, ("query-a", "query-b"), (), "us", False),
                   (10, (), ("*-*MiB",), "MB/s", False),
                   (11, (), (), None, True),
                   (12, (), (), "ns", True)]


# ------------------------------------------- data/metrics.txt, checked in CI


def test_the_committed_catalogue_loads() -> None:
    c = load_catalogue()
    assert len(c.entries) >= 100 and {e.scope for e in c.entries} == {"device", "node"}


def test_every_baseline_metric_is_catalogued_in_its_unit() -> None:
    c = load_catalogue()
    files = sorted((REPO_ROOT / "data" / "baselines").glob("*.json"))
    assert files, "no committed baseline in data/baselines"
    problems, n = [], 0
    for f in files:
        for key, m in json.loads(f.read_text())["metrics"].items():
            n += 1
            k = MetricKey.parse(key)  # without the node a node-scoped metric is keyed by
            why = c.problem(str(k.with_node(None)) if k else key, m["unit"])
            if why is not None:
                problems.append(f"{f.name}: {why}")
    assert n > 0
    assert not problems, f"{len(problems)} of {n} baseline metrics: " + "; ".join(problems[:5])


def _scope_mismatches(path: Path, c: Catalogue) -> list[str]:
    """The keys of a baseline file that carry a node where the catalogue says `device`, or
    none where it says `node` (a file made before its metric's scope changed)."""
    out = []
    for key in json.loads(path.read_text())["metrics"]:
        k = MetricKey.of_baseline(key)
        entry = c.lookup(str(k.with_node(None)))
        if entry is not None and (k.node is not None) != (entry.scope == "node"):
            out.append(f"{path.name}: {key}: the catalogue says {entry.scope}")
    return out


def test_every_baseline_metric_is_keyed_as_its_scope_says() -> None:
    c = load_catalogue()
    problems = [p for f in sorted((REPO_ROOT / "data" / "baselines").glob("*.json"))
                for p in _scope_mismatches(f, c)]
    assert not problems, f"{len(problems)} keys: " + "; ".join(problems[:3])


def test_a_baseline_keyed_before_a_scope_changed_is_found(tmp_path: Path) -> None:
    f = tmp_path / "b.json"
    f.write_text(json.dumps({"metrics": {
        "cuda_bubbles@gaps@graph-mixed:graph-time.graph.mixed": {},
        "cuda_bubbles@gaps@graph-chain16:graph-time.graph.chain16 [1 of 1 GPUs, 1 at once, X]": {},
        "cuda_bubbles@gaps@graph-chain16:graph-time.graph.chain16": {}}}))
    assert _scope_mismatches(f, load_catalogue()) == [
        "b.json: cuda_bubbles@gaps@graph-mixed:graph-time.graph.mixed: the catalogue says node",
        "b.json: cuda_bubbles@gaps@graph-chain16:graph-time.graph.chain16 [1 of 1 GPUs, 1 at "
        "once, X]: the catalogue says device"]


def _selftests_recording_metrics() -> list[str]:
    """The selftest binaries whose source calls gc_metric(), by GC_MAIN's name."""
    out = []
    for src in sorted((REPO_ROOT / "tests" / "selftest").glob("*.c")):
        code = strip_comments(src.read_text())
        m = re.search(r'GC_MAIN\(\s*\.name\s*=\s*"([^"]+)"', code)
        if "gc_metric(" in code and m:
            out.append(m.group(1))
    return out


@pytest.mark.parametrize("binary", _selftests_recording_metrics())
def test_selftest_metrics_are_catalogued(selftests: Selftests, tmp_path: Path,
                                         binary: str) -> None:
    """The binary run for real, every subtest (some fail on purpose: their
    metrics are refused before they are written): what it wrote is catalogued."""
    mfile = tmp_path / "metrics.jsonl"
    subprocess.run([str(selftests.binary(binary))], env={**os.environ, METRICS_ENV: str(mfile)},
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=300)
    metrics, errors = parse_metrics(mfile.read_bytes(), source=str(mfile), test=binary, soaks=[])
    assert not errors and metrics, errors or f"{binary} recorded no metric"
    c = load_catalogue()
    assert c.problems((str(m.key), m.unit) for m in metrics) == []


# Names a gc_metric() call holds that are never recorded: the framework
# refuses them before writing (the selftests that prove it).
NEVER_RECORDED = {
    ("tests/selftest/metrics.c", "no spaces allowed"): "bad-name: not [A-Za-z0-9._-]+",
    ("tests/selftest/metrics.c", "nan"): "not-finite: its sample is NaN",
}


def _name_globs(c: Catalogue, unit: str | None, binaries: tuple[str, ...]) -> list[str]:
    """The NAME globs of the lines of one of binaries (any for ()) in unit (any for None)."""
    return [e.name_glob for e in c.entries
            if (unit is None or e.unit == unit) and (not binaries or e.binary in binaries)]


def _who(binaries: tuple[str, ...]) -> str:
    return " or ".join(binaries) if binaries else "any binary"


def test_every_gc_metric_name_in_the_sources_is_catalogued() -> None:
    """Each name a gc_metric() call of tests/ or lib/ can record -- a literal,
    an array of literals, or an snprintf format (as a glob) -- is matched by
    the NAME part of some catalogue line of the call's unit (when the unit is
    a literal) and of a binary that may record it (metric_sources: its file's,
    its directory's, any for lib/): what stands in for running the GPU
    binaries."""
    c = load_catalogue()
    sites = list(call_sites([REPO_ROOT / "tests", REPO_ROOT / "lib"]))
    assert len(sites) >= 40
    problems = []
    for s in sites:
        where = f"{s.path.relative_to(REPO_ROOT)}:{s.line}"
        if s.unresolved:
            problems.append(f"{where}: gc_metric({s.arg}, ...): cannot tell the names it "
                            f"records ({s.unresolved}): extend runner/tests/metric_sources.py")
            continue
        globs = _name_globs(c, s.unit, s.binaries)
        for name in s.names:
            if (str(s.path.relative_to(REPO_ROOT)), name) in NEVER_RECORDED:
                continue
            if not any(fnmatch.fnmatchcase(name, g) for g in globs):
                problems.append(f"{where}: metric name {name!r} ({s.unit}) matches no line of "
                                f"{_who(s.binaries)} in data/metrics.txt: add a line "
                                "PATTERN UNIT SCOPE")
        for fmt in s.globs:
            if not any(globs_intersect(fmt, g) for g in globs):
                problems.append(f"{where}: metric names {fmt!r} ({s.unit}) match no line of "
                                f"{_who(s.binaries)} in data/metrics.txt: add a line "
                                "PATTERN UNIT SCOPE")
    assert not problems, f"{len(problems)} problems: " + "; ".join(problems[:5])


def test_every_never_recorded_name_is_still_in_its_source() -> None:
    """NEVER_RECORDED stays true: each name is still a gc_metric() literal there."""
    for (path, name) in NEVER_RECORDED:
        names = {n for s in call_sites([REPO_ROOT / Path(path).parent])
                 if s.path == REPO_ROOT / path for n in s.names}
        assert name in names, f"{path}: no gc_metric({name!r}, ...) any more"
