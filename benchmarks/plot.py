#!/usr/bin/python3
"""Turns the benchmark JSON files into docs/benchmarks.md and the PNG plots in docs/images/.

    /usr/bin/python3 benchmarks/plot.py [--results benchmarks/results] [--md docs/benchmarks.md]
                                        [--images docs/images]

Reads every *.json under --results (subfolders included): interaction results (from interaction_bench*, schema
cellint-interaction-bench/1) and ceilings (schema cellint-ceilings/1). Missing strategies,
functors, modes or whole files only drop the rows and plots that need them.
Needs matplotlib and numpy (Debian: apt-get install -y python3-matplotlib python3-numpy).
"""

import argparse
import glob
import json
import math
import os
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402

REGENERATE = "/usr/bin/python3 benchmarks/plot.py"

# The paper's Table 1 (section 7.2): execution time in seconds of Par-Part-NoLoop (PPNL) and
# X-pencil, float, LJ kernel with softening, 200 asynchronous calls averaged. Keyed by
# (d, particles per cell); the first value is the paper's "interactions per particle".
PAPER_TABLE1 = {
    # (d, ppc): (interactions per particle, {device: (PPNL, X-pencil)})
    (2, 1): (7, {"T600": (7.9e-06, 8.3e-06), "A100": (1.0e-05, 1.1e-05), "MI210": (8.6e-06, 6.9e-06)}),
    (4, 1): (13.7, {"T600": (1.4e-05, 9.1e-06), "A100": (2.0e-05, 1.2e-05), "MI210": (2.9e-05, 1.9e-05)}),
    (8, 1): (21.4, {"T600": (2.0e-05, 1.2e-05), "A100": (2.8e-05, 1.9e-05), "MI210": (4.3e-05, 4.1e-05)}),
    (16, 1): (23.8, {"T600": (3.2e-05, 3.4e-05), "A100": (3.7e-05, 2.0e-05), "MI210": (1.4e-04, 9.8e-05)}),
    (32, 1): (25.3, {"T600": (1.1e-04, 2.3e-04), "A100": (4.2e-05, 3.8e-05), "MI210": (6.3e-04, 2.3e-04)}),
    (2, 10): (79, {"T600": (3.0e-05, 2.6e-05), "A100": (3.4e-05, 1.8e-05), "MI210": (3.2e-05, 4.2e-05)}),
    (4, 10): (157.6, {"T600": (5.1e-05, 3.5e-05), "A100": (7.2e-05, 4.6e-05), "MI210": (1.4e-04, 7.8e-05)}),
    (8, 10): (208.1, {"T600": (7.3e-05, 5.7e-05), "A100": (9.1e-05, 5.6e-05), "MI210": (4.6e-04, 4.6e-04)}),
    (16, 10): (236.6, {"T600": (3.7e-04, 4.3e-04), "A100": (1.0e-04, 8.1e-05), "MI210": (2.2e-03, 1.8e-04)}),
    (32, 10): (253.2, {"T600": (3.0e-03, 3.8e-03), "A100": (4.2e-04, 4.0e-04), "MI210": (9.2e-04, 1.2e-03)}),
    (2, 100): (799, {"T600": (2.6e-04, 8.4e-05), "A100": (1.6e-04, 1.2e-04), "MI210": (4.2e-04, 2.7e-04)}),
    (4, 100): (1556.6, {"T600": (4.4e-04, 3.5e-04), "A100": (5.2e-04, 3.7e-04), "MI210": (3.9e-03, 2.1e-03)}),
    (8, 100): (2079.5, {"T600": (2.6e-03, 3.0e-03), "A100": (6.1e-04, 6.1e-04), "MI210": (7.8e-03, 5.3e-03)}),
    (16, 100): (2373.2, {"T600": (2.2e-02, 2.7e-02), "A100": (3.2e-03, 3.2e-03), "MI210": (1.2e-02, 8.0e-03)}),
    (32, 100): (2534, {"T600": (1.9e-01, 2.2e-01), "A100": (2.5e-02, 2.5e-02), "MI210": (5.1e-02, 5.3e-02)}),
}
PAPER_CITE = ("the paper's Table 1 (section 7.2: Par-Part-NoLoop and X-pencil, float, softened LJ, "
              "200 asynchronous calls averaged)")

STRATEGY_ORDER = ["par-part-noloop", "par-part-loop", "par-cell", "par-cell-sm", "all-in-sm", "x-pencil",
                  "x-pencil-reg", "x-pencil-tile", "cell-loop", "cell-loop-half", "brute-force", "auto"]
STYLE = {
    "par-part-noloop": ("black", "o"), "par-part-loop": ("tab:gray", "v"), "par-cell": ("tab:brown", "s"),
    "par-cell-sm": ("tab:orange", "D"), "all-in-sm": ("tab:purple", "^"), "x-pencil": ("tab:blue", "P"),
    "x-pencil-reg": ("tab:green", "X"), "x-pencil-tile": ("tab:olive", "p"), "cell-loop": ("tab:red", "o"), "cell-loop-half": ("tab:pink", "s"),
    "auto": ("tab:cyan", "*"),
}
FUNCTOR_TEXT = {
    "paper": "paper LJ (energy, no cutoff test, 21 flop/pair)",
    "lj": "LJ force+energy+virial with cutoff test",
    "paper-fast": "paper LJ with FastMath (approximate reciprocal)",
    "lj-fast": "LJ force with cutoff test, FastMath",
    "cheap": "low-flop (5 flop/pair)",
    "lj150": "high-flop (LJ + 150 flop = 171 flop/pair)",
}


def strategy_key(s):
    return STRATEGY_ORDER.index(s) if s in STRATEGY_ORDER else len(STRATEGY_ORDER)


def fmt_s(v):
    """Seconds as the paper prints them (1.0e-05)."""
    return "-" if v is None or not math.isfinite(v) else f"{v:.1e}"


def fmt(v, spec=".3g", dash="-"):
    return dash if v is None or (isinstance(v, float) and not math.isfinite(v)) else format(v, spec)


# ---- loading -----------------------------------------------------------------------------------------

def load(results_dir):
    runs, ceilings = [], []
    paths = glob.glob(os.path.join(results_dir, "*.json")) + glob.glob(os.path.join(results_dir, "**", "*.json"),
                                                                       recursive=True)
    for path in sorted(set(paths)):
        if os.sep + "experiments" + os.sep in path:  # one-off experiments, described in the docs
            continue
        try:
            with open(path) as f:
                doc = json.load(f)
        except (OSError, ValueError) as e:
            print(f"plot.py: skipping {path}: {e}", file=sys.stderr)
            continue
        if not isinstance(doc, dict):
            continue
        doc["_file"] = os.path.relpath(path, results_dir)
        if doc.get("benchmark") == "ceilings":
            ceilings.append(doc)
        elif doc.get("benchmark") == "interaction":
            runs.append(doc)
    return runs, ceilings


def records(runs):
    """Every result record with its run's context; later dates replace earlier identical cases."""
    by_key = {}
    for run in sorted(runs, key=lambda r: r.get("date", "")):
        for r in run.get("results", []):
            r = dict(r)
            r["_card"] = run.get("card", "?")
            r["_run"] = run
            key = (r["_card"], r.get("backend"), r.get("mode"), r.get("label"), r.get("functor"), r.get("precision"),
                   r.get("dim"), r.get("cells_per_side"), r.get("ppc"), r.get("n"), r.get("strategy"))
            by_key[key] = r
    return list(by_key.values())


def ok(r):
    return r.get("supported") and r.get("ms") is not None and not r.get("error") and not r.get("out_of_memory")


def select(recs, **kw):
    out = []
    for r in recs:
        if all((r.get(k) in v) if isinstance(v, (list, tuple, set)) else r.get(k) == v for k, v in kw.items()):
            out.append(r)
    return out


def main_card(recs):
    """The GPU the documents are about: the card with the most records, preferring CUDA / HIP."""
    count = defaultdict(int)
    for r in recs:
        count[(r.get("backend") in ("cuda", "hip"), r["_card"])] += 1
    if not count:
        return None
    return max(count.items(), key=lambda kv: (kv[0][0], kv[1]))[0][1]


# ---- plots -------------------------------------------------------------------------------------------

def by_strategy(rs):
    g = defaultdict(list)
    for r in rs:
        g[r["strategy"]].append(r)
    return {s: sorted(v, key=lambda r: r.get("interactions_per_particle") or 0)
            for s, v in sorted(g.items(), key=lambda kv: strategy_key(kv[0]))}


def save(fig, images, name, made):
    path = os.path.join(images, name)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    made[name] = path
    return name


def plot_vs_interactions(rs, images, name, value, ylabel, title, made, logy=False, hline=None, percent=False):
    groups = by_strategy([r for r in rs if ok(r) and r.get(value) is not None])
    if not groups:
        return None
    fig, ax = plt.subplots(figsize=(8, 4.8))
    for s, v in groups.items():
        c, m = STYLE.get(s, (None, "o"))
        xs = [r["interactions_per_particle"] for r in v]
        ys = [r[value] * (100 if percent else 1) for r in v]
        ax.plot(xs, ys, marker=m, color=c, label=s, linewidth=1.2, markersize=5)
    ax.set_xscale("log")
    if logy == 2:
        ax.set_yscale("log", base=2)
        ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:.3g}x"))
    elif logy:
        ax.set_yscale("log")
    if hline is not None:
        ax.axhline(hline, color="black", linewidth=0.8, linestyle="--")
    ax.set_xlabel("interactions per particle (candidate pairs / N)")
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, ncol=2)
    return save(fig, images, name, made)


def plot_cost_variants(rs, images, made, card):
    functors = [f for f in ("cheap", "paper", "lj150") if select(rs, functor=f)]
    if len(functors) < 2:
        return None
    fig, axes = plt.subplots(1, len(functors), figsize=(5 * len(functors), 4.4), sharey=False)
    if len(functors) == 1:
        axes = [axes]
    for ax, f in zip(axes, functors):
        for s, v in by_strategy([r for r in select(rs, functor=f) if ok(r)]).items():
            c, m = STYLE.get(s, (None, "o"))
            ax.plot([r["interactions_per_particle"] for r in v], [r["speedup_vs_baseline"] for r in v], marker=m,
                    color=c, label=s, linewidth=1.2, markersize=5)
        ax.set_xscale("log")
        ax.set_yscale("log", base=2)
        ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:.3g}x"))
        ax.axhline(1.0, color="black", linewidth=0.8, linestyle="--")
        ax.set_title(FUNCTOR_TEXT.get(f, f), fontsize=9)
        ax.set_xlabel("interactions per particle")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel("speedup vs par-part-noloop")
    axes[-1].legend(fontsize=7, ncol=1)
    fig.suptitle(f"Cost variants (paper Fig. 8) on {card}", fontsize=10)
    return save(fig, images, "cost_variants.png", made)


def plot_scaling(rs, images, made, card):
    rs = [r for r in rs if ok(r)]
    if not rs:
        return None, None
    fig, ax = plt.subplots(figsize=(8, 4.8))
    groups = defaultdict(list)
    for r in rs:
        groups[r["strategy"]].append(r)
    for s in sorted(groups, key=strategy_key):
        v = sorted(groups[s], key=lambda r: r["n"])
        c, m = STYLE.get(s, (None, "o"))
        ax.plot([r["n"] for r in v], [r["ms"] for r in v], marker=m, color=c, label=s, linewidth=1.2, markersize=5)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("particles N (10 per cell on average)")
    ax.set_ylabel("interaction time per call [ms]")
    ax.set_title(f"Scaling in N on {card}", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, ncol=2)
    a = save(fig, images, "scaling_time.png", made)

    fig, ax = plt.subplots(figsize=(8, 4.4))
    seen = {}
    for r in rs:
        if r.get("binning_ms") is not None:
            seen[r["n"]] = (r["binning_ms"], r.get("binning_ms_min"), r.get("binning_stable_ms"))
    if not seen:
        plt.close(fig)
        return a, None
    ns = sorted(seen)
    ax.plot(ns, [seen[n][0] for n in ns], marker="o", color="tab:red", label="atomic scatter (median)")
    stable = [n for n in ns if seen[n][2] is not None]
    if stable:
        ax.plot(stable, [seen[n][2] for n in stable], marker="s", color="tab:blue",
                label="stable: radix sort by cell (median)")
    ax.plot(ns, [n * 1e-6 for n in ns], color="gray", linestyle=":", label="1 ns per particle")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("particles N")
    ax.set_ylabel("binning time [ms]")
    ax.set_title(f"Binning (cell index, count, scan, scatter) on {card}", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    b = save(fig, images, "binning_time.png", made)
    return a, b


# ---- markdown ----------------------------------------------------------------------------------------

def md_table(head, rows):
    out = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def table1(rs):
    """Rows shaped like the paper's Table 1, with our times beside the A100's."""
    idx = {(r.get("cells_per_side"), r.get("ppc"), r.get("strategy")): r for r in rs}
    rows = []
    keys = sorted({(r.get("cells_per_side"), r.get("ppc")) for r in rs}, key=lambda k: (k[1], k[0]))
    for d, ppc in keys:
        ppnl = idx.get((d, ppc, "par-part-noloop"))
        if ppnl is None:
            continue
        paper = PAPER_TABLE1.get((d, int(ppc) if ppc == int(ppc) else ppc))
        a100 = paper[1]["A100"] if paper else (None, None)

        def t(s):
            r = idx.get((d, ppc, s))
            return r["ms"] * 1e-3 if r is not None and ok(r) else None
        ours = [(s, t(s)) for s in STRATEGY_ORDER if s != "auto" and t(s) is not None]
        best = min(ours, key=lambda x: x[1]) if ours else (None, None)
        au = idx.get((d, ppc, "auto"))
        ipp = ppnl.get("interactions_per_particle")
        label = f"{fmt(ipp, '.1f')} ({d}/{fmt(ppc, 'g')})"
        xp = t("x-pencil")
        rows.append([label, fmt(paper[0], "g") if paper else "-", fmt_s(a100[0]), fmt_s(a100[1]), fmt_s(t("par-part-noloop")),
                     fmt_s(xp), fmt_s(t("x-pencil-reg")),
                     fmt(t("par-part-noloop") / xp, ".2f") if xp else "-",
                     f"{best[0]} {fmt_s(best[1])}" if best[0] else "-",
                     (f"{au.get('auto_choice')} {fmt_s(au['ms'] * 1e-3)}" if au is not None and ok(au) else "-")])
    return rows


def unsupported_table(rs):
    seen = {}
    for r in rs:
        if not r.get("supported", True) or r.get("error"):
            key = (r.get("strategy"), r.get("reason") or r.get("error"))
            seen.setdefault(key, []).append(f"{r.get('cells_per_side')}/{fmt(r.get('ppc'), 'g')}")
    return [[s, why.replace("|", "/"), ", ".join(sorted(set(where)))] for (s, why), where in sorted(seen.items())]


def full_table(rs):
    rows = []
    for r in sorted(rs, key=lambda r: (r.get("ppc") or 0, r.get("cells_per_side") or 0, strategy_key(r.get("strategy")))):
        if not ok(r):
            continue
        name = r["strategy"] + (f" → {r.get('auto_choice')}" if r.get("strategy") == "auto" else "")
        rows.append([f"{r.get('cells_per_side')}/{fmt(r.get('ppc'), 'g')}", r.get("n"), fmt(r.get("interactions_per_particle"), ".1f"),
                     name, fmt(r["ms"], ".4g"), fmt(r.get("ms_median"), ".4g"), r.get("reps"),
                     fmt((r.get("pairs_per_s") or float("nan")) * 1e-9, ".3g"), fmt(r.get("gflops"), ".0f"),
                     fmt((r.get("fraction_peak_fp32") or float("nan")) * 100, ".1f"), fmt(r.get("bandwidth_gbs"), ".0f"),
                     fmt(r.get("speedup_vs_baseline"), ".2f"), r.get("check", "-")])
    return rows


def goals_section(on_card, ctx):
    """The campaign's goals (issue: Auto >= 2x Par-Part-NoLoop in geometric mean on the paper's
    15 configurations, never more than 5% slower; >= 50% of the measured FP32 peak on 16^3 and 32^3
    x 100 with the paper's workload), computed from the data, reached or not."""
    L = ["\n## Goals: reached or not\n"]
    rows = []
    for fn in ("paper", "paper-fast", "lj", "lj-fast"):
        rs = [r for r in on_card if r.get("mode") == "grid" and r.get("functor") == fn and ok(r)
              and r.get("precision") == "float" and r.get("dim") == 3 and r.get("label") != "cost"]
        base = {r["n"]: r["ms"] for r in rs if r.get("strategy") == "par-part-noloop"}
        per = defaultdict(list)
        for r in rs:
            if r["n"] in base:
                per[r["strategy"]].append(base[r["n"]] / r["ms"])
        for st, sp in sorted(per.items(), key=lambda kv: strategy_key(kv[0])):
            gm = math.exp(sum(math.log(x) for x in sp) / len(sp))
            rows.append([fn, st, len(sp), f"{gm:.2f}x", f"{min(sp):.2f}x", f"{max(sp):.2f}x"])
    if not rows:
        return []
    L.append("Speedup over Par-Part-NoLoop on the paper's configurations (float, 3D), geometric mean and range:\n")
    L.append(md_table(["functor", "strategy", "configs", "geomean", "min", "max"], rows))
    peak = ctx.get("peak_fp32_tflops")
    prow = []
    for fn in ("paper", "paper-fast"):
        for d in (16, 32):
            rs = [r for r in on_card if r.get("mode") == "grid" and r.get("functor") == fn and ok(r)
                  and r.get("label") != "cost" and r.get("cells_per_side") == d and r.get("ppc") == 100 and r.get("strategy") != "auto"]
            if rs and peak:
                b = min(rs, key=lambda r: r["ms"])
                prow.append([fn, f"{d}^3 x 100", b["strategy"], fmt(b["ms"], ".4g"),
                             f"{100 * (b.get('fraction_peak_fp32') or 0):.1f}%",
                             fmt(b["ms"] * (b.get("fraction_peak_fp32") or 0) / 0.5, ".3g")])
    if prow:
        L.append("\nFraction of the measured FP32 peak at 21 flop per candidate pair (paper workload, with IEEE "
                 "division and with FastMath), best strategy, and the time that 50% of the peak would take:\n")
        L.append(md_table(["functor", "config", "best", "ms", "of peak", "ms at 50%"], prow))
    verdict = []
    for r in rows:
        if r[1] != "auto":
            continue
        gm = float(r[3].rstrip("x"))
        worst = float(r[4].rstrip("x"))
        verdict.append(f"{r[0]}: auto {gm:.2f}x in geometric mean: {'reached' if gm >= 2.0 else 'not reached'} "
                       f"(target 2.0x); slowest case {worst:.2f}x: {'reached' if worst >= 0.95 else 'not reached'} "
                       "(target >= 0.95x)")
    for pr in prow:
        f = float(pr[4].rstrip("%"))
        verdict.append(f"{pr[0]}, {pr[1]}: {f:.1f}% of peak: {'reached' if f >= 50 else 'not reached'} (target 50%)")
    L.append("\nTargets: `auto` at least 2.0x Par-Part-NoLoop in geometric mean and never more than 5% slower; at "
             "least 50% of the FP32 peak on 16^3 and 32^3 x 100 with the paper's workload. On this data:\n")
    L.extend(f"- {v}" for v in verdict)
    L.append("""
The `paper` functor divides as the paper's build does (plain `-O3`, IEEE division: about eight
instructions per pair for the division alone); `paper-fast` is the same energy with
`FastMath` (one hardware reciprocal, about 1 ulp; `core/math.hpp`). Both are float LJ; the
FastMath rows are the library's answer to the peak-fraction goal, the exact rows the faithful
comparison with the paper.

Variants beyond the paper, measured on this card:

- **X-pencil-tile** (`x-pencil-tile`, its own row above): all 3^(D-1) rows of a pencil staged once,
  warp-wide tiles of targets in lock-step. Fastest for the LJ force functor on small grids (d = 2-8,
  10-100 per cell), where Auto picks it; 2x slower than X-pencil on 32^3 x 100, because the
  staged rows hold over 60 KB of shared memory for about 100 targets and few warps fit a
  multiprocessor. X-pencil's own warps already sweep one cell's window in lock-step at 100 per cell.
- **X-pencil-sieve** (removed): a cutoff pre-pass over 32 staged sources setting one bit per source
  inside the cutoff, then the functor on the set bits. 0.82x of X-pencil in geometric mean with the
  LJ force functor (0.77x with FastMath), slower on all 15 configurations: warps of one cell already
  skip most sources that no lane needs. Data: `h100-2026-11-26/experiments/x_pencil_sieve.json`.
- **FastMath** (a functor policy, not a strategy): 32^3 x 100 X-pencil 8.04 ms -> 4.83 ms with the
  paper's energy, 10.2 ms -> 7.5 ms with the LJ force.
- **Fewer instructions per pair in the LJ functors** (commit 0f4875c; `potentials/lennard_jones.hpp`):
  the paper's energy adds the softening first, so r^2 + softening^2 is three FMAs (one
  instruction less per pair, out of about thirteen); the LJ force computes u^2, u^3, u^4 once
  and V and fr with one FMA and one multiplication each (four fewer after the reciprocal).
  Expected: up to 7% on the compute-bound paper-fast cases. Measured on the largest cases
  against the previous campaign (463b9f8), Auto: paper-fast -5% (16^3) and -6% (32^3), paper
  -3%, LJ -6%, LJ-fast -12%; Par-Part-NoLoop moved by -10% to +2.5% (LJ-fast -10%, paper
  +2.5%). This lifted paper-fast 16^3 x 100 (X-pencil) from 48.3% to 51.1% of the peak.

Not tried: sub-cells, half-shell with shared-memory accumulation on the GPU, register tiles of
several targets per thread in X-pencil.
""")
    return L


def write_markdown(path, images_rel, recs, runs, ceilings, made, card):
    L = []
    L.append("<!-- Generated file: do not edit. Regenerate with `" + REGENERATE + "` from the JSON files in "
             "benchmarks/results/ (produced by `bash benchmarks/run_device.sh` on the GPU machine). -->")
    L.append("# Benchmarks\n")
    L.append(f"*Generated by `{REGENERATE}` from `benchmarks/results/*.json`; edit the script, not this page.*\n")
    if not recs:
        L.append("No benchmark results found in benchmarks/results/.")
        with open(path, "w") as f:
            f.write("\n".join(L) + "\n")
        return
    on_card = [r for r in recs if r["_card"] == card]
    ctx = max((r["_run"] for r in on_card), key=lambda run: run.get("date", ""))
    ceil = [c for c in ceilings if c.get("card") == card]
    ceil = max(ceil, key=lambda c: c.get("date", "")) if ceil else None

    L.append("## Setup\n")
    L.append(md_table(["", ""], [
        ["card", card], ["driver", ctx.get("driver", "?")], ["CUDA", ctx.get("cuda") or "-"],
        ["compiler", ctx.get("compiler", "?")], ["commit", ctx.get("commit", "?")], ["date", ctx.get("date", "?")],
        ["measured FP32 FMA peak", f"{fmt(ctx.get('peak_fp32_tflops'), '.1f')} TFLOP/s"],
        ["measured bandwidth (D2D copy, read + write)", f"{fmt(ctx.get('bandwidth_tbs'), '.2f')} TB/s"],
    ]))
    if ceil:
        L.append(f"\nCeilings (`{ceil['_file']}`): FMA {fmt(ceil.get('fp32_fma_tflops'), '.1f')} TFLOP/s "
                 f"(theoretical {fmt(ceil.get('theoretical_fp32_tflops'), '.1f')} at {ceil.get('sm_clock_mhz')} MHz), "
                 f"cudaMemcpy D2D {fmt(ceil.get('memcpy_d2d_tbs'), '.2f')} TB/s, copy kernel "
                 f"{fmt(ceil.get('copy_kernel_tbs'), '.2f')} TB/s (theoretical {fmt(ceil.get('theoretical_bandwidth_tbs'), '.2f')}).")
    L.extend(goals_section(on_card, ctx))
    L.append("\nMethod (paper section 7.1): d³ cells of width = cutoff = 1 in an open cube, d ∈ {2, 4, 8, 16, 32}, "
             "1 / 10 / 100 particles per cell on average, uniform positions, float. Each strategy is warmed up, then "
             "200 back-to-back asynchronous calls are timed between one pair of CUDA events and the total is divided "
             "by the number of calls (the paper's number, column *ms*); the same calls are split into 5 event-timed "
             "batches whose median is *ms_med*. Very long cases time fewer calls (column *reps*). Inputs are not "
             "rotated between calls, so cases that fit in L2 run from L2, as in the paper. *Interactions per "
             "particle* is the number of candidate pairs (sources in the 3³ neighbour cells, self excluded) over N. "
             "GFLOP/s counts the functor's flop per candidate pair (21 for the paper's LJ kernel); bandwidth is "
             "the floor (positions read once, outputs written once) over the time, so it is an effective figure. "
             "Binning is timed apart. Every strategy's output is compared with Par-Part-NoLoop's (column *check*). The host time to enqueue each call is recorded too (`host_us`): a case whose enqueueing took at least 90% of its GPU time measured the host, not the kernel (the GPU machine's host thread sometimes stalls for a few milliseconds at about 25 µs per launch), and is timed again, at most twice, keeping the fastest try (`tries`); the tiniest cases (2^3 and 4^3 cells x 1) stay host-bound at about 4-6 µs per launch, as they would in a simulation. `run_device.sh` samples the SM clock once a second (`clocks.csv`); the campaign shown ran at 1980 MHz without throttling (one H100 that throttled to about 1300 MHz at 86 °C was rejected).\n")

    paper = [r for r in on_card if r.get("mode") == "grid" and r.get("functor") == "paper" and r.get("precision") == "float"
             and r.get("dim") == 3 and r.get("label") != "cost"]
    if not paper:
        paper = [r for r in on_card if r.get("mode") == "grid" and r.get("functor") == "paper" and r.get("dim") == 3]
    if paper:
        L.append("## Table 1: the paper's A100 beside this card\n")
        L.append(f"Seconds per call. A100 columns copied from {PAPER_CITE}; the others measured here on {card} "
                 "(paper LJ functor, float, 3D). *PPNL/X-pencil* is our X-pencil speedup over our Par-Part-NoLoop; "
                 "*best* is the fastest explicit strategy; *auto* is the autotuner's choice and its timed run.\n")
        L.append(md_table(["interactions per particle (d/ppc)", "paper", "A100 PPNL", "A100 X-pencil",
                           "PPNL", "X-pencil", "X-pencil-reg", "PPNL/X-pencil", "best", "auto"], table1(paper)))
        L.append("")

    for name, title in (("speedup_paper.png", "Speedup against Par-Part-NoLoop (paper LJ; cf. the paper's Figure 6)"),
                        ("speedup_paper_fast.png", "Speedup against Par-Part-NoLoop (paper LJ with FastMath)"),
                        ("speedup_lj.png", "Speedup against Par-Part-NoLoop (LJ force with cutoff test)"),
                        ("pairs_per_s.png", "Candidate pairs per second (paper LJ)"),
                        ("fraction_peak.png", "Fraction of the measured FP32 peak (paper LJ, 21 flop per pair)"),
                        ("bandwidth.png", "Effective bandwidth over the floor (paper LJ)"),
                        ("cost_variants.png", "Cost variants: low-flop / paper LJ / high-flop (cf. the paper's Figure 8)"),
                        ("scaling_time.png", "Interaction time against N at 10 particles per cell"),
                        ("binning_time.png", "Binning time against N")):
        if name in made:
            L.append(f"## {title}\n\n![{title}]({images_rel}/{name})\n")

    autos = [r for r in on_card if r.get("strategy") == "auto" and ok(r)]
    if autos:
        L.append("## Auto\n")
        L.append("The autotuner's choice per case (tuned once per functor / grid shape / occupancy bucket, then cached), "
                 "the time it spent tuning, its timed run, and the fastest explicit strategy of the same case.\n")
        rows = []
        idx = defaultdict(list)
        for r in on_card:
            if ok(r) and r.get("strategy") != "auto":
                idx[(r.get("mode"), r.get("label"), r.get("functor"), r.get("precision"), r.get("dim"), r.get("n"))].append(r)
        for a in sorted(autos, key=lambda r: (r.get("functor") or "", r.get("mode") or "", r.get("ppc") or 0, r.get("n") or 0)):
            peers = idx.get((a.get("mode"), a.get("label"), a.get("functor"), a.get("precision"), a.get("dim"), a.get("n")), [])
            best = min(peers, key=lambda r: r["ms"]) if peers else None
            rows.append([a.get("functor"), f"{a.get('cells_per_side')}/{fmt(a.get('ppc'), 'g')}", a.get("n"),
                         a.get("auto_choice", "?"), fmt(a.get("tuning_ms"), ".3g"), fmt(a["ms"], ".4g"),
                         f"{best['strategy']} {fmt(best['ms'], '.4g')}" if best else "-",
                         fmt(best["ms"] / a["ms"], ".2f") if best else "-"])
        L.append(md_table(["functor", "d/ppc", "N", "choice", "tuning ms", "auto ms", "best explicit (ms)",
                           "best/auto"], rows))
        L.append("")

    checks = [r for r in on_card if r.get("check") == "FAIL"]
    if checks:
        L.append("## Check failures\n")
        L.append(md_table(["functor", "d/ppc", "strategy", "rel. error", "non-finite"],
                          [[r.get("functor"), f"{r.get('cells_per_side')}/{fmt(r.get('ppc'), 'g')}", r.get("strategy"),
                            fmt(r.get("rel_err"), ".3g"), r.get("non_finite")] for r in checks]))
        L.append("")

    uns = unsupported_table([r for r in on_card if r.get("mode") == "grid"])
    if uns:
        L.append("## Unsupported cases and errors\n")
        L.append(md_table(["strategy", "reason", "where (d/ppc)"], uns))
        L.append("")

    for f in ("paper", "paper-fast", "lj", "lj-fast", "cheap", "lj150"):
        rs = [r for r in on_card if r.get("mode") == "grid" and r.get("functor") == f
              and (f != "paper" or r.get("label") != "cost")]  # the cost run's paper rows repeat the campaign's
        if not rs:
            continue
        L.append(f"## All results: {FUNCTOR_TEXT.get(f, f)}\n")
        L.append("<details><summary>table</summary>\n")
        L.append(md_table(["d/ppc", "N", "inter./particle", "strategy", "ms", "ms_med", "reps", "Gpair/s", "GFLOP/s",
                           "% FP32 peak", "GB/s (floor)", "speedup", "check"], full_table(rs)))
        L.append("\n</details>\n")

    sc = [r for r in on_card if r.get("mode") == "scaling"]
    if sc:
        L.append("## Scaling results\n")
        rows = []
        for r in sorted(sc, key=lambda r: (r.get("n") or 0, strategy_key(r.get("strategy")))):
            if r.get("out_of_memory"):
                rows.append([r.get("n"), r.get("cells_per_side"), "out of memory", "-", "-", "-", "-"])
            elif ok(r):
                rows.append([r.get("n"), r.get("cells_per_side"), r["strategy"], fmt(r["ms"], ".4g"),
                             fmt((r.get("pairs_per_s") or float("nan")) * 1e-9, ".3g"), fmt(r.get("binning_ms"), ".3g"),
                             fmt(r.get("binning_stable_ms"), ".3g")])
        L.append(md_table(["N", "d", "strategy", "ms", "Gpair/s", "binning ms (atomic)", "binning ms (stable)"], rows))
        L.append("")

    others = sorted({r["_card"] for r in recs} - {card})
    if others:
        L.append("Results for other devices in benchmarks/results/ (not shown): " + ", ".join(others) + ".\n")
    files = {r["_run"]["_file"] for r in on_card} | ({ceil["_file"]} if ceil else set())
    L.append("Source files: " + ", ".join(sorted(files)) + ".")
    with open(path, "w") as f:
        f.write("\n".join(L) + "\n")


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--results", default=os.path.join(root, "benchmarks", "results"))
    ap.add_argument("--md", default=os.path.join(root, "docs", "benchmarks.md"))
    ap.add_argument("--images", default=os.path.join(root, "docs", "images"))
    a = ap.parse_args()
    os.makedirs(a.images, exist_ok=True)
    os.makedirs(os.path.dirname(os.path.abspath(a.md)), exist_ok=True)
    runs, ceilings = load(a.results)
    recs = records(runs)
    card = main_card(recs)
    made = {}
    if card:
        on = [r for r in recs if r["_card"] == card]
        grid = [r for r in on if r.get("mode") == "grid" and r.get("dim") == 3 and r.get("precision") == "float"]
        paper = [r for r in grid if r.get("functor") == "paper" and r.get("label") != "cost"] or \
            [r for r in grid if r.get("functor") == "paper"]
        lj = [r for r in grid if r.get("functor") == "lj"]
        paper_fast = [r for r in grid if r.get("functor") == "paper-fast"]
        plot_vs_interactions(paper, a.images, "speedup_paper.png", "speedup_vs_baseline", "speedup vs par-part-noloop",
                             f"Speedup vs Par-Part-NoLoop, paper LJ, float, on {card}", made, logy=2, hline=1.0)
        plot_vs_interactions(paper_fast, a.images, "speedup_paper_fast.png", "speedup_vs_baseline",
                             "speedup vs par-part-noloop",
                             f"Speedup vs Par-Part-NoLoop, paper LJ with FastMath, float, on {card}", made, logy=2,
                             hline=1.0)
        plot_vs_interactions(lj, a.images, "speedup_lj.png", "speedup_vs_baseline", "speedup vs par-part-noloop",
                             f"Speedup vs Par-Part-NoLoop, LJ with cutoff test, float, on {card}", made, logy=2,
                             hline=1.0)
        plot_vs_interactions(paper, a.images, "pairs_per_s.png", "pairs_per_s", "candidate pairs per second",
                             f"Pairs per second, paper LJ, on {card}", made, logy=True)
        plot_vs_interactions(paper, a.images, "fraction_peak.png", "fraction_peak_fp32", "% of measured FP32 peak",
                             f"Fraction of FP32 peak (21 flop per pair), on {card}", made, logy=True, percent=True)
        plot_vs_interactions(paper, a.images, "bandwidth.png", "bandwidth_gbs", "GB/s (floor bytes / time)",
                             f"Effective bandwidth, paper LJ, on {card}", made, logy=True)
        cost = [r for r in grid if r.get("label") == "cost"] or grid
        plot_cost_variants(cost, a.images, made, card)
        plot_scaling([r for r in on if r.get("mode") == "scaling"], a.images, made, card)
    images_rel = os.path.relpath(os.path.abspath(a.images), os.path.dirname(os.path.abspath(a.md)))
    write_markdown(a.md, images_rel, recs, runs, ceilings, made, card)
    print(f"wrote {a.md} and {len(made)} image(s) in {a.images}")


if __name__ == "__main__":
    main()
