#!/usr/bin/env python3
"""Draws one benchmark plot from the data file its bench wrote, as SVG for docs/plots/.

The data file is CSV: a header `x,SERIES...` then one row per x (an empty cell: no point).
The SVG says on it which machine and command produced the data, and embeds the data file's
name and sha256 in its metadata (<!-- neardup-data: NAME sha256:HEX -->), which
scripts/check_plots.py recomputes: a plot whose data changed without being redrawn fails.
Needs matplotlib (the bench virtualenv: `pip install matplotlib`).
Usage: bench/plot.py DATA.csv OUT.svg --title T --xlabel X --ylabel Y --command CMD
                     [--logx] [--logy] [--mark X:LABEL]... [--label-with SERIES:COLUMN:FORMAT]...
A --label-with column is not drawn: each point of SERIES is labelled with its row's value
of COLUMN through FORMAT (a Python format string, e.g. "recall {:.0f} %").
"""
import argparse
import csv
import hashlib
import os
import pathlib
import platform
import re

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after use(): no display here)


def machine():
    # The CPU model and core count: what a reader needs to compare a figure with their own.
    model = platform.processor() or platform.machine()
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{model}, {os.cpu_count()} cores"


def main():
    p = argparse.ArgumentParser()
    p.add_argument("data")
    p.add_argument("out")
    for name in ("--title", "--xlabel", "--ylabel", "--command"):
        p.add_argument(name, required=True)
    p.add_argument("--logx", action="store_true")
    p.add_argument("--logy", action="store_true")
    p.add_argument("--mark", action="append", default=[], help="X:LABEL, a vertical marker")
    p.add_argument("--label-with", action="append", default=[], help="SERIES:COLUMN:FORMAT")
    a = p.parse_args()

    data = pathlib.Path(a.data)
    raw = data.read_bytes()
    rows = list(csv.reader(raw.decode().splitlines()))
    header, body = rows[0], rows[1:]
    labels = {}  # series -> (column, format)
    for spec in a.label_with:
        series, column, form = spec.split(":", 2)
        labels[series] = (header.index(column), form)
    hidden = {column for column, _ in labels.values()}
    fig, ax = plt.subplots(figsize=(8, 5))
    for col, name in enumerate(header[1:], start=1):
        if col in hidden:
            continue
        with_value = sorted((r for r in body if len(r) > col and r[col] != ""), key=lambda r: float(r[0]))
        pts = [(float(r[0]), float(r[col])) for r in with_value]
        if pts:
            ax.plot(*zip(*pts), marker="o", label=name)
        if name in labels:
            column, form = labels[name]
            for r, pt in zip(with_value, pts):
                ax.annotate(form.format(float(r[column])), pt, textcoords="offset points",
                            xytext=(4, 4), fontsize=8)
    for mark in a.mark:
        x, _, label = mark.partition(":")
        ax.axvline(float(x), color="grey", linestyle="--")
        ax.annotate(label, (float(x), 1), xycoords=("data", "axes fraction"), rotation=90,
                    va="top", ha="right", fontsize=8)
    ax.set(title=a.title, xlabel=a.xlabel, ylabel=a.ylabel)
    if a.logx:
        ax.set_xscale("log")
    if a.logy:
        ax.set_yscale("log")
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.text(0.01, 0.01, f"{machine()}\n$ {a.command}", fontsize=7, family="monospace",
             va="bottom")
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    plt.rcParams["svg.hashsalt"] = "neardup"  # stable ids: redrawing the same data is no diff
    fig.savefig(a.out, format="svg", metadata={"Date": None})
    svg = pathlib.Path(a.out).read_text()
    stamp = f"<!-- neardup-data: {data.name} sha256:{hashlib.sha256(raw).hexdigest()} -->"
    svg = re.sub(r"(<svg\b)", stamp + "\n\\1", svg, count=1)
    pathlib.Path(a.out).write_text(svg)


if __name__ == "__main__":
    main()
