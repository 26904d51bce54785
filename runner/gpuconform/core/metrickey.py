"""A metric's name rule and its key: the one definition of each.

A metric is known by its key, BINARY@SUBTEST[@DYNAMIC]:NAME, followed, for a
metric of the node's scope (data/metrics.txt, scope.py), by the node it was
measured on:

    host_io@throughput:direct-read-16MiB
    nvml_session@cost:first-handle-cold [1 of 1 GPUs, 1 at once, Intel(R) Xeon(R) Processor]

A baseline keeps a metric under its key, the catalogue's patterns match the key
without its node, results.json's comparisons name it. Its text is made here
(str(MetricKey)) and read back here (MetricKey.parse): no other module builds
or splits one.

NAME is [A-Za-z0-9._-]+, the rule lib/metrics.c (metric_name_ok) applies before
a binary writes a metric; a soak's name (soak.py) and the catalogue's name
globs (catalogue.py) use the same characters.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

__all__ = ["NAME_RULE", "NAME_CHARS", "name_problem", "case_name", "record_of", "MetricKey"]

NAME_RULE = "[A-Za-z0-9._-]+"
_NAME_RE = re.compile(NAME_RULE + r"\Z")
NAME_CHARS = frozenset(c for c in map(chr, range(128)) if _NAME_RE.match(c))
# " [NODE]" at the end of a key: the node's label has no brackets (scope.node_label)
_NODE_SUFFIX = re.compile(r"(.+) \[([^\[\]]+)\]\Z")


def name_problem(name: str, what: str = "metric name") -> str | None:
    """Why name breaks the name rule, one line ("metric name 'a b' is not
    [A-Za-z0-9._-]+"); None when it keeps it."""
    return None if _NAME_RE.match(name) else f"{what} {name!r} is not {NAME_RULE}"


def case_name(binary: str, subtest: str, dynamic: str | None) -> str:
    """"BIN@SUB[@DYN]": the (dynamic) subtest a metric was recorded in."""
    return f"{binary}@{subtest}" + (f"@{dynamic}" if dynamic else "")


def record_of(test: str) -> str:
    """"BIN@SUB@DYN" -> "BIN@SUB": the results.json record a metric belongs to."""
    return "@".join(test.split("@", 2)[:2])


@dataclass(frozen=True)
class MetricKey:
    """A metric's identity: its (dynamic) subtest, its name and, for a metric
    of the node's scope, its node. str() is the key's text."""

    test: str  # BIN@SUB[@DYN]
    name: str
    node: str | None = None  # the node's label (scope.node_label); None: the device's scope

    def __str__(self) -> str:
        return f"{self.test}:{self.name}" + (f" [{self.node}]" if self.node else "")

    @classmethod
    def parse(cls, text: str) -> "MetricKey | None":
        """The key of "BIN@SUB[@DYN]:NAME[ [NODE]]"; None when text is not one
        (no ':', a NAME that breaks the rule, no '@' in the test part or one
        at its start)."""
        m = _NODE_SUFFIX.match(text)
        test, sep, name = (m.group(1) if m else text).rpartition(":")
        if not sep or not _NAME_RE.match(name) or "@" not in test or test.startswith("@"):
            return None
        return cls(test, name, m.group(2) if m else None)

    @classmethod
    def of_baseline(cls, text: str) -> "MetricKey":
        """The key of a baseline's metric: load_baseline and baseline update keep
        only keys parse() reads, so another is a ValueError."""
        k = cls.parse(text)
        if k is None:
            raise ValueError(f"baseline metric key {text!r} is not "
                             "BINARY@SUBTEST[@DYNAMIC]:NAME")
        return k

    @property
    def binary(self) -> str:
        return self.test.split("@", 1)[0]

    @property
    def dynamic(self) -> str | None:
        """DYN of BIN@SUB@DYN; None for a subtest's own metric."""
        parts = self.test.split("@", 2)
        return parts[2] if len(parts) == 3 else None

    @property
    def record(self) -> str:
        """The results.json record the metric belongs to (BIN@SUB)."""
        return record_of(self.test)

    def with_node(self, node: str | None) -> "MetricKey":
        return replace(self, node=node)
