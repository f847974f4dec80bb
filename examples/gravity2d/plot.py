#!/usr/bin/env python3
"""Draws gravity2d snapshots (CSV files of x,y written by --snapshot) side by side.

usage: plot.py OUT.png SNAPSHOT.csv [SNAPSHOT.csv ...]   (each panel titled by its file name, or by TITLE=FILE)
"""
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def read(path):
    xs, ys = [], []
    with open(path) as f:
        for row in csv.DictReader(f):
            xs.append(float(row["x"]))
            ys.append(float(row["y"]))
    return xs, ys


def main(argv):
    if len(argv) < 3:
        sys.exit(__doc__)
    out, files = argv[1], argv[2:]
    fig, axes = plt.subplots(1, len(files), figsize=(4.2 * len(files), 4.4), squeeze=False)
    for ax, spec in zip(axes[0], files):
        title, _, path = spec.rpartition("=")
        xs, ys = read(path)
        ax.scatter(xs, ys, s=0.3, c="black", alpha=0.5, linewidths=0)
        ax.set_aspect("equal")
        ax.set_xlim(-0.1, 1.1)
        ax.set_ylim(-0.1, 1.1)
        ax.set_title(title or path, fontsize=10)
        ax.set_xticks([])
        ax.set_yticks([])
    fig.tight_layout()
    fig.savefig(out, dpi=110)


if __name__ == "__main__":
    main(sys.argv)
