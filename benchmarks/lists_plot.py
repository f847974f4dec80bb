#!/usr/bin/env python3
"""Plots the neighbour-list campaign (benchmarks/lists_device.sh) into docs/images/lists_lj_<card>.png: in.lj rate
against atoms for cell lists, full and half Verlet lists and OpenMM; the rebuild intervals; where a step's time goes.

    python3 benchmarks/lists_plot.py benchmarks/results/h200-2026-11-29/lists-campaign docs/images/lists_lj_h200.png
"""
import glob
import json
import os
import re
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def series(folder, pattern):
    pts = []
    for f in glob.glob(os.path.join(folder, pattern)):
        d = json.load(open(f))
        pts.append((d["atoms"], d["atom_steps_per_s"]))
    return sorted(pts)


def main(folder, out):
    fig, ax = plt.subplots(1, 3, figsize=(15, 4.4), gridspec_kw={"width_ratios": [2.2, 1, 1]})
    a = ax[0]
    for pat, label, style in [("lj_none_float_c*.json", "cell lists, re-binned every step", "s-"),
                              ("lj_full_float_c*.json", "full Verlet list (rebuilt on the device)", "o-"),
                              ("lj_half_float_c*.json", "half Verlet list (atomics)", "v-"),
                              ("lj_full20_float_c*.json", "full list, in.lj's 'every 20 check no' (misses pairs)",
                               "D--")]:
        p = series(folder, pat)
        if p:
            a.plot([x for x, _ in p], [y for _, y in p], style, label=label)
    om = os.path.join(folder, "openmm_lj.json")
    if os.path.exists(om):
        p = sorted((r["atoms"], r["atom_steps_per_s"]) for r in json.load(open(om)))
        a.plot([x for x, _ in p], [y for _, y in p], "x:", color="gray", label="OpenMM 8.6.1, single")
    a.set_xscale("log")
    a.set_yscale("log")
    a.set_ylim(1e8, 5e9)  # (room below the curves for the legend)
    a.set_xlabel("atoms")
    a.set_ylabel("atom-steps / s")
    d = json.load(open(os.path.join(folder, "lj_full_float_c80.json")))
    a.set_title("in.lj, float, " + d["device"])
    a.grid(True, which="both", alpha=0.3)
    a.legend(fontsize=8, loc="lower right")

    hist = {int(k): v for k, v in d["list_detail"]["rebuild_intervals"].items()}
    ax[1].bar(list(hist), list(hist.values()), color="tab:orange")
    ax[1].set_xlabel("steps between rebuilds")
    ax[1].set_ylabel("rebuilds")
    pairs = d["list_detail"].get("pair_check", False)
    ax[1].set_title("rebuild intervals, 2,048,000 atoms\n(skin 0.3, %s)" %
                    ("rebuilt when a pair may come within r_c" if pairs else "rebuilt at skin/2"))

    parts = []
    for c, label in [(25, "62,500"), (80, "2,048,000")]:
        text = open(os.path.join(folder, f"lj_breakdown_c{c}.log")).read()
        m = re.search(r"pair ([\d.e+-]+) s.*neigh ([\d.e+-]+) s.*integrate ([\d.e+-]+) s", text)
        parts.append((label, [float(v) for v in m.groups()]))
    bottom = [0.0] * len(parts)
    for k, name in enumerate(["pair", "list (check + rebuilds)", "integrate"]):
        vals = [p[1][k] / sum(p[1]) * 100 for p in parts]
        ax[2].bar([p[0] for p in parts], vals, bottom=bottom, label=name)
        bottom = [b + v for b, v in zip(bottom, vals)]
    ax[2].set_ylabel("% of a step (timed per phase)")
    ax[2].set_title("where a step goes (full list)")
    ax[2].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    print("wrote", out)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
