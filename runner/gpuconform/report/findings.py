"""`gpuconform findings RESULTS`: for each failure of a run (expected or not),
a bundle a vendor can take, under RESULTS/findings/<binary>.<subtest>/:

    repro.c, README.md   the finding's standalone reproducer and its story
                         (data/findings/<binary>.<subtest>/), where one exists
    output.txt           the subtest's reason, judgement, rule, stdout, stderr
    environment.json     the run's fingerprint, platform, GPUs, suite, kernel
    commands.txt         how to build and run the reproducer; how to run the
                         subtest alone, through the runner and without it

A failure without a reproducer gets the same bundle without the first two and
a NO-REPRODUCER.txt saying so. RESULTS/findings/index.md lists them all.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from ..core.runmetrics import load_results
from ..core.states import failed

__all__ = ["FINDINGS_DIR", "Bundle", "build_line", "finding_dir", "write_findings"]

REPO_ROOT = Path(__file__).resolve().parents[3]
FINDINGS_DIR = REPO_ROOT / "data" / "findings"
_BUILD = re.compile(r"^[ \t/*]*(?:Build:\s*)?(cc [^\n]*?)\s*$", re.M)


@dataclass(frozen=True)
class Bundle:
    test: str
    path: Path
    reproducer: bool
    expected: bool


def finding_dir(test: str, root: Path = FINDINGS_DIR) -> Path:
    """data/findings/<binary>.<subtest> of BINARY@SUBTEST."""
    binary, _, subtest = test.partition("@")
    return root / f"{binary}.{subtest}"


def build_line(repro: Path) -> str | None:
    """The `cc ...` line a reproducer's first comment gives, or None."""
    text = repro.read_text(encoding="utf-8", errors="replace")
    first = re.match(r"\s*/\*.*?\*/", text, re.S)
    m = _BUILD.search(first.group(0)) if first else None
    return m.group(1) if m else None


def _output(test: str, rec: Mapping[str, Any]) -> str:
    parts = [f"{test}: {rec.get('result')}"]
    for key in ("reason", "judgement", "rule"):
        if rec.get(key):
            parts.append(f"{key}: {rec[key]}")
    for key in ("out", "err"):
        parts.append(f"--- {'stdout' if key == 'out' else 'stderr'} ---\n{rec.get(key) or ''}")
    return "\n".join(parts) + "\n"


def _environment(data: Mapping[str, Any]) -> dict[str, Any]:
    run = data.get("run") if isinstance(data.get("run"), Mapping) else {}
    return {"fingerprint": data.get("fingerprint"),
            **{k: run.get(k) for k in ("platform", "devices", "kernel", "suite", "hostname",
                                       "start")}}


def _regex(test: str) -> str:
    """test as a regular expression that matches it alone (--include RE).
    Not re.escape: it also escapes '-', which every subtest name has, and
    the line is one a vendor reads and copies."""
    return re.sub(r"([.^$*+?{}\[\]\\|()])", r"\\\1", test)


def _commands(test: str, rec: Mapping[str, Any], repro: Path | None) -> str:
    lines = []
    if repro is not None:
        build = build_line(repro) or "(the reproducer names no build line)"
        lines += ["# the reproducer: build, then run (exit 1: the finding holds; 0: the driver",
                  "# keeps the promise; 2: it could not check)", build, "./repro", ""]
    argv = rec.get("command")
    raw = " ".join(shlex.quote(str(a)) for a in argv) if isinstance(argv, list) else str(argv)
    lines += ["# the subtest alone, through the runner (from the suite's checkout)",
              f"./gpuconform run --include {shlex.quote('^' + _regex(test) + '$')}", "",
              "# the subtest alone, without the runner (its binary, as the run called it)", raw]
    return "\n".join(lines) + "\n"


def _bundle(out: Path, test: str, rec: Mapping[str, Any], data: Mapping[str, Any],
            findings: Path) -> Bundle:
    src = finding_dir(test, findings)
    d = out / src.name
    d.mkdir(parents=True, exist_ok=True)
    repro = src / "repro.c" if (src / "repro.c").is_file() else None
    if repro is not None:
        shutil.copy(repro, d / "repro.c")
        if (src / "README.md").is_file():
            shutil.copy(src / "README.md", d / "README.md")
    else:
        (d / "NO-REPRODUCER.txt").write_text(
            f"No reproducer for {test} in data/findings: rerun the subtest alone "
            "(commands.txt) and read its output (output.txt).\n", encoding="utf-8")
    (d / "output.txt").write_text(_output(test, rec), encoding="utf-8")
    (d / "environment.json").write_text(json.dumps(_environment(data), indent=1) + "\n",
                                        encoding="utf-8")
    (d / "commands.txt").write_text(_commands(test, rec, repro), encoding="utf-8")
    return Bundle(test, d, repro is not None, rec.get("expected") is True)


def write_findings(results: Path, findings: Path = FINDINGS_DIR) -> list[Bundle]:
    """A bundle per failure of the run in results (RESULTS/findings/), and
    its index.md; DocError (one line) when results.json cannot be used."""
    data = load_results(results / "results.json")
    out = results / "findings"
    bundles = [_bundle(out, t, rec, data, findings)
               for t, rec in sorted(data["tests"].items()) if failed(str(rec.get("result")))]
    if bundles:
        rows = [f"| {b.test} | {'expected' if b.expected else 'unexpected'} | "
                f"{'yes' if b.reproducer else 'no: rerun it alone (commands.txt)'} | "
                f"{b.path.name}/ |" for b in bundles]
        (out / "index.md").write_text(
            f"# Findings of {results.name}\n\n| failure | judged | reproducer | bundle |\n"
            "| --- | --- | --- | --- |\n" + "\n".join(rows) + "\n", encoding="utf-8")
    return bundles
