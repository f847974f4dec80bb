#!/usr/bin/env python3
"""Plots cellint_lj_mpi's scaling records (benchmarks/mpi_device.sh) into docs/images/mpi_scaling.png: weak scaling per
GPU (ghosts by peer copies with and without the overlap of interior rows, and through the host) beside the one-GPU demo
without MPI, strong scaling of 16.4M atoms, and the time per step by phase.
   python3 tools/plot_mpi_scaling.py [RESULTS_DIR] [OUT_PNG]"""
import json
import os
import re
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

here = os.path.dirname(os.path.abspath(__file__))
res = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "..", "benchmarks", "results", "h100x4-2026-11-27", "mpi")
out = sys.argv[2] if len(sys.argv) > 2 else os.path.join(here, "..", "docs", "images", "mpi_scaling.png")


def load(name):
    """A results file; campaigns since 2026-11-29 write the weak and strong records apart (NAME_weak, NAME_strong)."""
    base = name[:-5]
    for folder in (res, os.path.join(res, "runs")):
        if os.path.exists(os.path.join(folder, name)):
            return json.load(open(os.path.join(folder, name)))
        parts = [os.path.join(folder, f"{base}_{k}.json") for k in ("weak", "strong")]
        if any(os.path.exists(f) for f in parts):
            return [r for f in parts if os.path.exists(f) for r in json.load(open(f))]
    return []


main = load("lj_mpi_scaling.json")
staged = load("staged_lj_mpi_scaling.json")
nooverlap = load("nooverlap_lj_mpi_scaling.json")
phases = load("breakdown_lj_mpi_scaling.json")
alone_run = load("lj_cuda_2M.json")  # (the one-GPU demo without MPI, where the campaign ran it)
alone = alone_run["atom_steps_per_s"] if isinstance(alone_run, dict) else 0
card = main[0].get("device", "GPU").replace("NVIDIA ", "")
date = re.search(r"\d{4}-\d\d-\d\d", os.path.abspath(res))
shape = "the one-GPU box replicated" if any(r.get("replicate", [1])[0] > 1 for r in main if r["scaling"] == "weak") \
    else "the box grown as a cube"

fig, ax = plt.subplots(1, 3, figsize=(15, 4.6))
# weak: atom-steps/s per GPU
series = [(main, "ghosts by peer copies, overlapped (--overlap auto)", "o-", 6),
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
if alone:
    ax[0].axhline(alone / 1e9, color="gray", ls=":", label="one GPU, cellint_lj (no MPI)")
ax[0].set_xticks([1, 2, 4])
ax[0].set_xlabel(f"{card} GPUs (one rank each)")
ax[0].set_ylabel("1e9 atom-steps/s per GPU")
ax[0].set_ylim(0, 1.12 * max([alone] + [r["atom_steps_per_s"] / r["gpus"] for r in main if r["scaling"] == "weak"]) / 1e9)
ax[0].set_title(f"Weak scaling: in.lj, 2.05M atoms per GPU, float,\n{shape}", fontsize=10)
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
ax[1].set_xlabel(f"{card} GPUs")
ax[1].set_ylabel("1e9 atom-steps/s")
ax[1].set_title("Strong scaling: 16.4M atoms, float")
ax[1].legend(fontsize=8)
# phases
w = sorted((r for r in phases if r["scaling"] == "weak"), key=lambda r: r["gpus"])
overlap = any(r.get("overlap") for r in w)
names = [("compute", "pairs after rebuilds" if overlap else "pair forces"),
         ("halo_exchange", "pairs beside and after the ghost positions" if overlap else "ghost positions"),
         ("migration", "rebuilds (migration, ghosts, grid, list)"), ("integration", "integration"),
         ("reductions", "rebuild votes, thermo")]
bottom = [0.0] * len(w)
for key, label in names:
    v = [1e3 * r["seconds_per_step"][key] for r in w]
    ax[2].bar([str(r["gpus"]) for r in w], v, bottom=bottom, label=label)
    bottom = [b + x for b, x in zip(bottom, v)]
ax[2].set_xlabel(f"{card} GPUs (weak scaling, --breakdown)")
ax[2].set_ylabel("ms per step (slowest rank)")
ax[2].set_title("Where a step goes")
ax[2].set_ylim(0, 1.75 * max(bottom))
ax[2].legend(fontsize=7, loc="upper left")
most = max(r["gpus"] for r in main)
fig.suptitle(f"cellint_lj_mpi on {most} x {main[0].get('device', 'GPU')} (one node)" + (f", {date.group(0)}" if date else ""),
             fontsize=10)
fig.tight_layout()
fig.savefig(out, dpi=110)
print("wrote", out)
