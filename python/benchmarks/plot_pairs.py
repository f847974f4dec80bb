"""Plots the JSON of bench_pairs.py (a CPU run and a GPU run) as time per call against the number of atoms.

    python3 python/benchmarks/plot_pairs.py cpu.json gpu.json out.png
"""

import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def series(rows, **match):
    out = {}
    for r in rows:
        if "ms" in r and all(r.get(k) == v for k, v in match.items()):
            out.setdefault(r["code"], []).append((r["atoms"], r["ms"]))
    return {k: sorted(v) for k, v in out.items()}


def main():
    cpu, gpu, png = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3]
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.9), dpi=120)
    styles = {"cellint": ("C3", "o", 2.2), "vesin": ("C0", "s", 1.4), "matscipy": ("C2", "^", 1.4),
              "torch cell list": ("C1", "D", 1.4), "torch dense": ("0.4", "v", 1.4)}

    def draw(ax, data, dashed=False):
        for code, pts in data.items():
            base = next(k for k in styles if code.startswith(k))
            color, marker, lw = styles[base]
            ls = "--" if dashed or "1 thread)" in code and base == "cellint" else "-"
            ax.plot([p[0] for p in pts], [p[1] for p in pts], ls, color=color, marker=marker, lw=lw, ms=4,
                    label=code + (" (full)" if dashed else ""))

    draw(axes[0], series(cpu["rows"], list="half"))
    draw(axes[0], {k: v for k, v in series(cpu["rows"], list="full").items() if k.startswith(("matscipy",))}, True)
    axes[0].set_title(f"CPU, {cpu['threads']} cores: half list (each pair once)", fontsize=9)
    dev = next(r["device"] for r in gpu["rows"])
    draw(axes[1], series(gpu["rows"], list="half", dtype="float32"))
    axes[1].set_title(f"{dev}: half list, float32", fontsize=9)
    for ax in axes:
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("atoms (LJ density 0.8442, cutoff 2.5 sigma, periodic)")
        ax.set_ylabel("ms per call (i, j, S, d)")
        ax.grid(True, which="major", alpha=0.3)
        ax.legend(fontsize=7, frameon=False)
    fig.suptitle("Neighbour pairs from Python: cellint.neighbor_pairs against peers (lower is better)", fontsize=10)
    fig.tight_layout()
    fig.savefig(png)
    print("wrote", png)


if __name__ == "__main__":
    main()
