#!/usr/bin/env python3
"""Every plot in docs/plots/ is drawn from the data file beside it, and docs/benchmarks.md
shows it (no database, no matplotlib): bench/plot.py stamps each SVG with its data file's
name and sha256 (<!-- neardup-data: NAME sha256:HEX -->); this recomputes the hash, so data
rewritten by a bench without redrawing its plot (or a plot edited by hand) fails.
"""
import hashlib
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
PLOTS = ROOT / "docs" / "plots"


def main():
    bad = 0
    page = (ROOT / "docs" / "benchmarks.md").read_text()
    for svg in sorted(PLOTS.glob("*.svg")) if PLOTS.is_dir() else []:
        m = re.search(r"<!-- neardup-data: (\S+) sha256:([0-9a-f]{64}) -->", svg.read_text())
        where = svg.relative_to(ROOT)
        if not m:
            print(f"{where}: no neardup-data stamp (draw it with bench/plot.py)")
            bad = 1
            continue
        data = PLOTS / m.group(1)
        if not data.is_file():
            print(f"{where}: its data file {m.group(1)} is not beside it")
            bad = 1
        elif hashlib.sha256(data.read_bytes()).hexdigest() != m.group(2):
            print(f"{where}: drawn from other data than {m.group(1)} holds: redraw it")
            bad = 1
        if f"plots/{svg.name}" not in page:
            print(f"{where}: docs/benchmarks.md does not show it")
            bad = 1
    return bad


if __name__ == "__main__":
    sys.exit(main())
