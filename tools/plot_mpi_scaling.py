#!/usr/bin/env python3
"""Plots cellint_lj_mpi's scaling records (benchmarks/mpi_device.sh) into docs/images/mpi_scaling.png: weak scaling per
GPU (ghosts by peer copies with and without the overlap of interior rows, and through the host) beside the one-GPU demo
without MPI, strong scaling of 16.4M atoms, and the time per step by phase.
   python3 tools/plot_mpi_scaling.py [RESULTS_DIR] [OUT_PNG]"""
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

here = os.path.dirname(os.path.abspath(__file__))
res = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "..", "benchmarks", "results", "h100x4-2026-11-27", "mpi")
out = sys.argv[2] if len(sys.argv) > 2 else os.path.join(here, "..", "docs", "images", "mpi_scaling.png")


def load(name):
    return json.load(open(os.path.join(res, name)))


main = load("lj_mpi_scaling.json")
staged = load("staged_lj_mpi_scaling.json")
nooverlap = load("nooverlap_lj_mpi_scaling.json") if os.path.exists(os.path.join(res, "nooverlap_lj_mpi_scaling.json")) else []
phases = load("breakdown_lj_mpi_scaling.json")
alone = load("lj_cuda_2M.json")["atom_steps_per_s"]

fig, ax = plt.subplots(1, 3, figsize=(15, 4.6))
# weak: atom-steps/s per GPU
series = [(main, "ghosts by peer copies, beside the interior rows", "o-", 6),
          (nooverlap, "ghosts by peer copies, then every row (--overlap off)", "^-.", -13),
          (staged, "ghosts through the host (CELLINT_MPI_IPC=0)", "s--", 6)]
for runs, label, style, dy in series:
    w = sorted((r for r in runs if r["scaling"] == "weak"), key=lambda r: r["gpus"])
    if not w:
        continue
    ax[0].plot([r["gpus"] for r in w], [r["atom_steps_per_s"] / r["gpus"] / 1e9 for r in w], style, label=label)
    for r in w:
        ax[0].annotate(f'{100 * r["efficiency"]:.0f} %', (r["gpus"], r["atom_steps_per_s"] / r["gpus"] / 1e9),
                       textcoords="offset points", xytext=(4, dy), fontsize=8, color=ax[0].lines[-1].get_color())
ax[0].axhline(alone / 1e9, color="gray", ls=":", label="one GPU, cellint_lj (no MPI)")
ax[0].set_xticks([1, 2, 4])
ax[0].set_xlabel("H100 GPUs (one rank each)")
ax[0].set_ylabel("1e9 atom-steps/s per GPU")
ax[0].set_ylim(0, 2.7)
ax[0].set_title("Weak scaling: in.lj, 2.05M atoms per GPU, float")
ax[0].legend(fontsize=8, loc="lower left")
# strong
s = sorted((r for r in main if r["scaling"] == "strong"), key=lambda r: r["gpus"])
g = [r["gpus"] for r in s]
ax[1].plot(g, [r["atom_steps_per_s"] / 1e9 for r in s], "o-", label="measured")
ax[1].plot(g, [s[0]["atom_steps_per_s"] * x / 1e9 for x in g], ":", color="gray", label="ideal")
for r in s:
    ax[1].annotate(f'{100 * r["efficiency"]:.0f} %', (r["gpus"], r["atom_steps_per_s"] / 1e9),
                   textcoords="offset points", xytext=(4, -12), fontsize=8)
ax[1].set_xticks([1, 2, 4])
ax[1].set_xlabel("H100 GPUs")
ax[1].set_ylabel("1e9 atom-steps/s")
ax[1].set_title("Strong scaling: 16.4M atoms, float")
ax[1].legend(fontsize=8)
# phases
w = sorted((r for r in phases if r["scaling"] == "weak"), key=lambda r: r["gpus"])
overlap = any(r.get("overlap") for r in w)
names = [("compute", "border rows' pairs" if overlap else "pair forces"),
         ("halo_exchange", "interior rows' pairs beside the ghost positions" if overlap else "ghost positions"),
         ("migration", "rebuilds (migration, ghosts, grid, list)"), ("integration", "integration"),
         ("reductions", "rebuild votes, thermo")]
bottom = [0.0] * len(w)
for key, label in names:
    v = [1e3 * r["seconds_per_step"][key] for r in w]
    ax[2].bar([str(r["gpus"]) for r in w], v, bottom=bottom, label=label)
    bottom = [b + x for b, x in zip(bottom, v)]
ax[2].set_xlabel("H100 GPUs (weak scaling, --breakdown)")
ax[2].set_ylabel("ms per step (slowest rank)")
ax[2].set_title("Where a step goes")
ax[2].set_ylim(0, 1.75 * max(bottom))
ax[2].legend(fontsize=7, loc="upper left")
fig.suptitle("cellint_lj_mpi on 4 x H100 80GB HBM3 (one node), 2026-11-27", fontsize=10)
fig.tight_layout()
fig.savefig(out, dpi=110)
print("wrote", out)
