"""Which node a metric's figures belong to.

data/metrics.txt gives each metric a scope (catalogue.py). A `device` metric
is measured on the GPU's own clock: the same on a node of 1, 2, 4 or 8 of
that GPU, so a baseline pools it from every node shape of one GPU model (the
fingerprint's key has the model, not the count). A `node` metric depends on
the node (the host CPU, how many GPUs there are, how many copies of the test
ran at once): its key in a baseline carries the node it was measured on,

    nvml_session@cost:first-handle-cold [4 of 4 GPUs, 1 at once, Intel(R) Xeon(R) Processor]

so that it is compared only with runs of the same node shape. The label is
made from results.json: the fingerprint (the node's GPUs, its CPU), the run's
placement (run.node: the GPUs it used, --jobs) and the test's record (its
placement, its copies).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Mapping

from ..core.catalogue import DEFAULT_CATALOGUE, Catalogue, load_catalogue
from ..core.fingerprint import Fingerprint

__all__ = ["NodeLabel", "node_label", "labeler", "catalogue_of"]

# (metric key without its node, the test's record) -> the node label, or None
# for a metric of the device's scope.
NodeLabel = Callable[[str, Mapping[str, Any]], "str | None"]


def node_label(used: int, node_gpus: int, at_once: int, cpu: str) -> str:
    """"4 of 4 GPUs, 4 at once, CPU"; "no GPU, 1 at once, CPU" on a host without one."""
    gpus = f"{used} of {node_gpus} GPUs" if node_gpus else "no GPU"
    return f"{gpus}, {at_once} at once, {cpu}"


def catalogue_of(data: Mapping[str, Any]) -> Catalogue:
    """The catalogue the run was made with (its options), else data/metrics.txt;
    CatalogueError (one line) when it cannot be read."""
    opts = ((data.get("run") or {}).get("options") or {})
    path = opts.get("catalogue") if isinstance(opts.get("catalogue"), str) else None
    if path is None or not Path(path).is_file():
        path = str(DEFAULT_CATALOGUE)
    return load_catalogue(path)


def labeler(data: Mapping[str, Any], catalogue: Catalogue) -> NodeLabel:
    """The node labels of the metrics of one results.json."""
    fp_json = data.get("fingerprint") or (data.get("run") or {}).get("fingerprint") or {}
    fp = Fingerprint.from_json(fp_json if isinstance(fp_json, Mapping) else {})
    node = (data.get("run") or {}).get("node") or {}
    total = int(node.get("node_gpus") or fp.gpu_count())
    used = len(node.get("gpus") or []) or total
    jobs = int(node.get("jobs") or 1)

    def label(key: str, rec: Mapping[str, Any]) -> str | None:
        entry = catalogue.lookup(key)
        if entry is None or entry.scope != "node":
            return None
        copies = len(rec.get("placements") or [])
        at_once = min(jobs, copies) if rec.get("placement") == "gpu" and copies > 1 else 1
        return node_label(used, total, at_once, fp.cpu_model)

    return label
