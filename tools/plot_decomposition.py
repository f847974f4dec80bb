#!/usr/bin/env python3
"""Draws docs/images/mpi_decomposition.png: a periodic 2D box cut into 3 x 2 sub-boxes, one rank's ghost layer
(owned particles of its neighbours within the ghost width, corners included, and images through the periodic
boundary), as cellint::mpi::DistributedGrid builds it.

    python3 tools/plot_decomposition.py [output.png]
"""
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.patches as patches  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

L = np.array([12.0, 8.0])  # box
P = np.array([3, 2])  # ranks per axis
g = 1.2  # ghost layer (cutoff + skin)
w = L / P
rng = np.random.default_rng(7)
x = rng.uniform(0, 1, (420, 2)) * L
me = np.array([0, 1])  # the rank drawn: coordinates (0, 1), a corner of the periodic box
lo, hi = me * w, (me + 1) * w

fig, ax = plt.subplots(figsize=(8, 5.6))
for cx in range(P[0]):
    for cy in range(P[1]):
        r = cx + P[0] * cy
        ax.add_patch(patches.Rectangle((cx * w[0], cy * w[1]), w[0], w[1], fill=False, lw=1.5, color="0.3"))
        ax.text(cx * w[0] + 0.15, cy * w[1] + 0.2, f"rank {r} ({cx},{cy})", fontsize=9, color="0.3")
# the drawn rank's grid: its sub-box widened by the layer (the images are drawn where the rank sees them)
ax.add_patch(patches.Rectangle(lo - g, *(w + 2 * g), fill=True, color="tab:orange", alpha=0.12, lw=0))
ax.add_patch(patches.Rectangle(lo - g, *(w + 2 * g), fill=False, ls="--", color="tab:orange", lw=1.2))
ax.add_patch(patches.Rectangle(lo, *w, fill=True, color="tab:blue", alpha=0.10, lw=0))
own = np.all((x >= lo) & (x < hi), axis=1)
ghosts = []
for sx in (-1, 0, 1):
    for sy in (-1, 0, 1):
        y = x + np.array([sx, sy]) * L
        inside = np.all((y >= lo - g) & (y < hi + g), axis=1) & ~np.all((y >= lo) & (y < hi), axis=1)
        ghosts.append(y[inside])
ghosts = np.concatenate(ghosts)
ax.scatter(*x[~own].T, s=6, color="0.6", label="other ranks' particles")
ax.scatter(*x[own].T, s=10, color="tab:blue", label="owned by rank 3")
ax.scatter(*ghosts.T, s=14, marker="x", color="tab:orange", label="rank 3's ghosts (images through the boundary too)")
ax.set_xlim(-g - 0.3, L[0] + 0.3)
ax.set_ylim(-0.3, L[1] + g + 0.9)
ax.set_aspect("equal")
ax.set_title("cellint::mpi: 3 x 2 ranks on a periodic box, the ghost layer of rank 3", fontsize=11)
ax.legend(loc="upper right", fontsize=8, framealpha=0.9)
ax.set_xlabel("x")
ax.set_ylabel("y")
fig.tight_layout()
out = sys.argv[1] if len(sys.argv) > 1 else "docs/images/mpi_decomposition.png"
fig.savefig(out, dpi=110)
print("wrote", out)
