#!/usr/bin/env python3
"""Draws a probes run: the particle cloud projected on the x-y plane with the probe line, and the density profile
along the line (cellint and the direct sum).

usage: plot.py OUT.png PROFILE.csv [CLOUD.csv]
  PROFILE.csv: cellint_probes --out (s, x, y[, z], h, rho, rho_direct); CLOUD.csv: cellint_probes --cloud (x, y[, z])
"""
import csv
import math
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def read(path):
    with open(path) as f:
        rows = list(csv.DictReader(f))
    return {k: [float(r[k]) for r in rows] for k in rows[0]} if rows else {}


def main(argv):
    if len(argv) not in (3, 4):
        sys.exit(__doc__)
    out, profile = argv[1], read(argv[2])
    cloud = read(argv[3]) if len(argv) == 4 else None
    panels = 2 if cloud else 1
    widths = [1, 1.6] if cloud else [1]
    fig, axes = plt.subplots(1, panels, figsize=(4.4 * sum(widths), 4.4), squeeze=False,
                             gridspec_kw={"width_ratios": widths})
    axes = axes[0]
    if cloud:
        ax = axes[0]
        ax.scatter(cloud["x"], cloud["y"], s=0.4, c="black", alpha=0.35, linewidths=0)
        ax.plot(profile["x"], profile["y"], c="tab:red", lw=1.5, label="probes")
        ax.set_aspect("equal")
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.set_xlabel("x")
        ax.set_ylabel("y")
        ax.set_title("%s particles%s, probe line" % (
            format(len(cloud["x"]), ","), " (x-y projection)" if "z" in cloud else ""), fontsize=10)
        ax.legend(loc="upper right", fontsize=8)
    ax = axes[-1]
    direct = [(s, r) for s, r in zip(profile["s"], profile["rho_direct"]) if not math.isnan(r)]
    ax.plot(profile["s"], profile["rho"], c="tab:red", lw=1.2, label="cellint (one two-set interact call)")
    if direct:
        step = max(1, len(direct) // 60)
        ax.plot([s for s, _ in direct[::step]], [r for _, r in direct[::step]], "o", ms=3.5, mfc="none",
                c="black", label="direct sum in double")
    ax.set_xlim(0, 1)
    ax.set_xlabel("s (along the line, = x)")
    ax.set_ylabel("rho = sum m_j W(|x - x_j|, h)")
    ax.set_title("density along the line (%d probes)" % len(profile["s"]), fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=110)


if __name__ == "__main__":
    main(sys.argv)
