"""CI's reading of a GPU-less suite run: host contracts pass, nothing else ran.

Usage: check_suite.py RESULTS_JSON. Exit 1 with one line per problem.
"""
import json
import sys
from typing import Any


def problems(tests: dict[str, Any]) -> list[str]:
    out: list[str] = []
    host = [name for name in tests if name.startswith("host_")]
    if not host:
        out.append("no host_* test ran")
    for name, res in sorted(tests.items()):
        state = res.get("result")
        if name.startswith("host_"):
            if state != "pass":
                out.append(f"{name}: {state}, expected pass")
        elif state != "skip":
            out.append(f"{name}: {state}, expected skip on a machine without GPU")
        elif not res.get("reason"):
            out.append(f"{name}: skipped without a reason")
    return out


def main() -> int:
    with open(sys.argv[1], encoding="utf-8") as f:
        tests = json.load(f)["tests"]
    bad = problems(tests)
    for line in bad:
        print(f"check_suite: {line}")
    print(f"check_suite: {len(tests)} tests, {len(bad)} problem(s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
