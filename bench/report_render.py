#!/usr/bin/env python3
"""How fast a real browser shows report.html: for each RESULTS directory, its
report.html written again from results.json by this tree's report.py, then
opened in headless chromium ROUNDS times; prints the page's size and the
milliseconds from the navigation's start until every plot is laid out (the
page's own script writes them to <body data-ms> after measuring every plot's
bounding box), median and worst. A benchmark: run by hand, never by CI.

    /usr/bin/python3 bench/report_render.py RESULTS... [--rounds 5]
"""

from __future__ import annotations

import argparse
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "runner"))
from gpuconform.report.report import write_html  # noqa: E402


def render_ms(page: Path, chromium: str, profile: Path) -> int:
    out = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu",
                          "--no-first-run", "--disable-background-networking",
                          "--disable-component-update", "--disable-sync",
                          "--disable-dev-shm-usage", f"--user-data-dir={profile}",
                          "--dump-dom", page.absolute().as_uri()],
                         capture_output=True, text=True, timeout=300, check=True).stdout
    m = re.search(r'<body[^>]*data-ms="(\d+)"', out)
    if not m:
        raise SystemExit(f"{page}: no data-ms in the rendered page (script did not run?)")
    return int(m.group(1))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results", nargs="+", type=Path)
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        raise SystemExit("chromium is not installed (apt-get install chromium)")
    for r in a.results:
        with tempfile.TemporaryDirectory() as tmp:
            d = Path(tmp) / r.name
            d.mkdir()
            shutil.copy(r / "results.json", d / "results.json")
            page = write_html(d)
            ms = [render_ms(page, chromium, Path(tmp) / "profile") for _ in range(a.rounds)]
            print(f"{r}: report.html {page.stat().st_size / 1e6:.2f} MB, laid out in "
                  f"{statistics.median(ms)} ms median, {max(ms)} ms worst of {a.rounds}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
