#!/usr/bin/env python3
"""Draws the final state of a cellint_collisions run: each disc at its position (to scale), coloured by its number of
disc collisions, with the speed histogram beside it.

usage: cellint_collisions ... > run.txt; plot.py run.txt L r OUT.png
(run.txt holds the program's output; the final-state lines `S i x y vx vy p_c w_c` are the ones with 8 fields)
"""
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.collections import PatchCollection  # noqa: E402
from matplotlib.patches import Circle  # noqa: E402


def main(argv):
    if len(argv) != 5:
        sys.exit(__doc__)
    path, L, r, out = argv[1], float(argv[2]), float(argv[3]), argv[4]
    xs, ys, speeds, hits = [], [], [], []
    for line in open(path):
        f = line.split()
        if len(f) != 8:
            continue
        _, _, x, y, vx, vy, pc, _ = f
        xs.append(float(x))
        ys.append(float(y))
        speeds.append((float(vx) ** 2 + float(vy) ** 2) ** 0.5)
        hits.append(int(pc))
    if not xs:
        sys.exit(f"{path}: no final-state lines (S i x y vx vy p_c w_c)")
    fig, (ax, hx) = plt.subplots(1, 2, figsize=(10, 4.6), gridspec_kw={"width_ratios": [1.1, 1]})
    discs = PatchCollection([Circle((x, y), r) for x, y in zip(xs, ys)], cmap="viridis", linewidths=0)
    discs.set_array(hits)
    ax.add_collection(discs)
    ax.set_xlim(0, L)
    ax.set_ylim(0, L)
    ax.set_aspect("equal")
    ax.set_title(f"{len(xs)} discs after the run, coloured by disc collisions", fontsize=10)
    fig.colorbar(discs, ax=ax, fraction=0.046)
    hx.hist(speeds, bins=40, color="tab:blue")
    hx.set_xlabel("speed |v| at the end")
    hx.set_ylabel("discs")
    hx.set_title("elastic collisions share out the speeds", fontsize=10)
    fig.tight_layout()
    fig.savefig(out, dpi=110)


if __name__ == "__main__":
    main(sys.argv)
