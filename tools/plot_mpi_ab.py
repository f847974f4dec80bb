#!/usr/bin/env python3
"""Plots two versions of cellint_lj_mpi measured alternately on the same GPUs (weak scaling): the efficiency of each
run beside its version's mean, and where a step goes with --breakdown, version by version.
   python3 tools/plot_mpi_ab.py [RESULTS_DIR] [OUT_PNG]
RESULTS_DIR holds lj_mpi_scaling_weak.json (records with `version`, `gpus`, `efficiency`) and runs/{A,B}bd_np{N}.json
(default: benchmarks/results/h200x4-2026-11-29/border-rows)."""
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

here = os.path.dirname(os.path.abspath(__file__))
res = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "..", "benchmarks", "results", "h200x4-2026-11-29",
                                                         "border-rows")
out = sys.argv[2] if len(sys.argv) > 2 else os.path.join(here, "..", "docs", "images", "mpi_border_rows_h200.png")

runs = json.load(open(os.path.join(res, "lj_mpi_scaling_weak.json")))
versions = []
for r in runs:
    if r["version"] not in versions:
        versions.append(r["version"])
gpus = sorted({r["gpus"] for r in runs})
device = runs[0]["device"]

fig, ax = plt.subplots(1, 2, figsize=(12, 4.4))
for k, (v, style) in enumerate(zip(versions, ["s--", "o-"])):
    mine = [r for r in runs if r["version"] == v]
    mean = [sum(r["efficiency"] for r in mine if r["gpus"] == g) / sum(1 for r in mine if r["gpus"] == g) for g in gpus]
    line, = ax[0].plot(gpus, [100 * e for e in mean], style, label=f"{'AB'[k]}: {v}")
    ax[0].plot([r["gpus"] for r in mine], [100 * r["efficiency"] for r in mine], ".", color=line.get_color(), ms=5)
    for g, e in zip(gpus[1:], mean[1:]):  # (the first later version above the first, its label too)
        ax[0].annotate(f"{100 * e:.1f} %", (g, 100 * e), textcoords="offset points", xytext=(6, -14 + 20 * k),
                       fontsize=8, color=line.get_color())
ax[0].axhline(90, color="gray", ls=":", label="goal: 90 %")
ax[0].set_xticks(gpus)
ax[0].set_xlabel(f"{device} GPUs (one rank each)")
ax[0].set_ylabel("weak-scaling efficiency (%)")
ax[0].set_ylim(60, 102)
ax[0].set_title("in.lj, 2.05M atoms per GPU, float: each run (dots) and the mean")
ax[0].legend(fontsize=8, loc="lower left")

# (A timed its border rows with the rebuild steps' pairs, B with the ghost positions: the pairs are shown as one)
names = [(("halo_exchange", "compute"), "pairs, with the ghosts' positions"), (("migration",), "rebuilds"),
         (("integration",), "integration"), (("reductions",), "votes, thermo")]
colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
labels, bottoms, phases = [], [], []
for k in range(len(versions)):
    for g in gpus:
        labels.append(f"{'AB'[k]}, {g}")
        bottoms.append(0.0)
        phases.append(json.load(open(os.path.join(res, "runs", f"{'AB'[k]}bd_np{g}.json")))["seconds_per_step"])
x = range(len(labels))
for q, (keys, label) in enumerate(names):
    vals = [1e3 * sum(s[key] for key in keys) for s in phases]
    ax[1].bar(x, vals, bottom=bottoms, label=label, color=colors[q])
    bottoms = [b + v for b, v in zip(bottoms, vals)]
ax[1].set_xticks(list(x), labels)
ax[1].set_xlabel("version, GPUs (--breakdown)")
ax[1].set_ylabel("ms per step (slowest rank)")
ax[1].set_title("Where a step goes")
ax[1].set_ylim(0, 1.5 * max(bottoms))
ax[1].legend(fontsize=7, loc="upper left")
fig.suptitle(f"cellint_lj_mpi on 4 x {device} (one node), 2026-11-29: border rows after the interior kernel (A) "
             "or as the ghosts arrive (B)", fontsize=10)
fig.tight_layout()
fig.savefig(out, dpi=110)
print("wrote", out)
