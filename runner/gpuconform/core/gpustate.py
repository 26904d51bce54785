"""The GPUs' clocks, power limits and modes as nvidia-smi reports them, at the
run's start and end (results.json run.gpu_state).

Two nodes of one GPU model, driver and CUDA can still run at different
clocks or power limits (a host's settings, not the fingerprint's): when a
timing differs between them, these say whether the GPUs did. A field this
nvidia-smi does not know is left out, with the reason; no nvidia-smi, no
state (the reason says so).
"""

from __future__ import annotations

import shutil
import subprocess
from typing import Callable, Sequence

__all__ = ["FIELDS", "parse_csv", "query", "gpu_state"]

# `nvidia-smi --help-query-gpu` names (driver 580).
FIELDS = (
    "index", "uuid", "persistence_mode", "compute_mode",
    "clocks.sm", "clocks.mem", "clocks.max.sm", "clocks.max.mem",
    "clocks.applications.graphics", "clocks.applications.memory",
    "power.limit", "power.max_limit", "pcie.link.gen.current", "pcie.link.width.current",
    "clocks_event_reasons.active",
)
TIMEOUT_S = 20.0

# Runs nvidia-smi with these arguments: (exit status, stdout, stderr).
Runner = Callable[[Sequence[str]], "tuple[int, str, str]"]


def _run(args: Sequence[str]) -> tuple[int, str, str]:
    try:
        p = subprocess.run(list(args), capture_output=True, text=True, timeout=TIMEOUT_S,
                           check=False)
    except (OSError, subprocess.TimeoutExpired) as e:  # -1: not asked again field by field
        return -1, "", f"{type(e).__name__}: {e}"
    return p.returncode, p.stdout, p.stderr


def parse_csv(fields: Sequence[str], text: str) -> list[dict[str, str]]:
    """One dict a GPU from `--format=csv,noheader,nounits` lines."""
    rows = []
    for line in text.splitlines():
        if not line.strip():
            continue
        values = [v.strip() for v in line.split(",")]
        if len(values) == len(fields):
            rows.append(dict(zip(fields, values)))
    return rows


def _ask(run: Runner, smi: str, fields: Sequence[str]) -> tuple[int, str, str]:
    return run([smi, "--query-gpu=" + ",".join(fields), "--format=csv,noheader,nounits"])


def query(run: Runner, smi: str = "nvidia-smi",
          fields: Sequence[str] = FIELDS) -> tuple[list[dict[str, str]], list[str]]:
    """(one dict a GPU, notes). All fields at once; if nvidia-smi refuses
    them, each alone, keeping those it knows (a note names the others)."""
    rc, out, err = _ask(run, smi, fields)
    if rc == 0:
        return parse_csv(fields, out), []
    if rc < 0:  # it hung or could not start: a field at a time would do so again
        return [], [f"nvidia-smi --query-gpu: {err.strip()[:160]}"]
    kept, notes = [], []
    for f in fields:
        frc, _, ferr = _ask(run, smi, [f])
        if frc == 0:
            kept.append(f)
        else:
            notes.append(f"{f}: {(ferr.strip().splitlines() or ['exit %d' % frc])[0][:120]}")
    if "index" not in kept:
        return [], [f"nvidia-smi --query-gpu: exit {rc}: {err.strip()[:160]}"]
    rc, out, err = _ask(run, smi, kept)
    if rc != 0:
        return [], notes + [f"nvidia-smi --query-gpu: exit {rc}: {err.strip()[:160]}"]
    return parse_csv(kept, out), notes


def gpu_state(run: Runner = _run) -> dict[str, object]:
    """{"gpus": [...], "notes": [...]}; without nvidia-smi, a note saying so."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return {"gpus": [], "notes": ["not recorded: no nvidia-smi on PATH"]}
    gpus, notes = query(run, smi)
    return {"gpus": gpus, "notes": notes}
