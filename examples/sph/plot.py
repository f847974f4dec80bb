#!/usr/bin/python3
"""Plots of the cellint_sph dam break: the surge front against experiment, and particle snapshots.

    cellint_sph --resolution 80 --t-end 9 --front front.csv --frames frames --every 800
    /usr/bin/python3 examples/sph/plot.py front docs/images/sph_front.png front.csv[:label] ...
    /usr/bin/python3 examples/sph/plot.py snapshots docs/images/sph_snapshot frames 2 4 6 9

`front` draws Z/a against T = t sqrt(2g/a) for each front CSV written by --front, beside the
experimental points of Martin & Moyce (1952) and Koshizuka & Oka (1996). `snapshots` renders the
frame nearest to each requested T (legacy-VTK or CSV frames from --frames) as
<prefix>_T<T>.png, fluid particles coloured by speed (or pressure with --color pressure),
boundary particles in grey (fluid particles that left the domain are not drawn).
Needs numpy and matplotlib (Debian: python3-numpy python3-matplotlib).
"""

import argparse
import glob
import os
import re

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

# Martin, J. C. & Moyce, W. J. (1952), "An experimental study of the collapse of liquid columns on
# a rigid horizontal plane", Phil. Trans. R. Soc. Lond. A 244, 312-324. Column n^2 = 2 (height 2a),
# a = 2.25 in: front Z/a against T = t sqrt(2g/a), timed as the surge passed marks 0.5 in apart
# (Z/a in steps of 2/9). Values as tabulated in the paper and widely reproduced; an independent
# digitisation of the paper's Fig. 3 agrees with them within about 0.05 in T. The same table is
# typed into sph.hpp (martin_moyce()) for the --check of cellint_sph.
MARTIN_MOYCE = np.array([
    (0.41, 1.11), (0.84, 1.22), (1.19, 1.44), (1.43, 1.67), (1.63, 1.89), (1.83, 2.11),
    (1.98, 2.33), (2.20, 2.56), (2.32, 2.78), (2.51, 3.00), (2.65, 3.22), (2.83, 3.44),
    (2.98, 3.67), (3.11, 3.89), (3.33, 4.11)])

# Koshizuka, S. & Oka, Y. (1996), "Moving-particle semi-implicit method for fragmentation of
# incompressible fluid", Nucl. Sci. Eng. 123, 421-434: their experiment (a = 0.146 m, the
# geometry simulated here). Digitised from the paper's figure: approximate.
KOSHIZUKA_OKA = np.array([
    (0.381, 1.111), (0.769, 1.252), (1.153, 1.505), (1.537, 1.892), (1.935, 2.241),
    (2.323, 2.615), (2.719, 3.003), (3.096, 3.624)])


def read_csv(path):
    """Returns (comment lines, dict of float columns) of a CSV whose header follows '#' lines."""
    comments, rows, names = [], [], None
    with open(path) as f:
        for line in f:
            if line.startswith("#"):
                comments.append(line[1:].strip())
            elif names is None:
                names = line.strip().split(",")
            elif line.strip():
                rows.append([float(v) for v in line.split(",")])
    data = np.array(rows, dtype=float).reshape(-1, len(names))
    return comments, {n: data[:, k] for k, n in enumerate(names)}


def read_front(path):
    """Returns (T, Z/a) arrays and the comment line of a --front CSV."""
    comments, d = read_csv(path)
    return d["T"], d["Z_over_a"], comments[0] if comments else ""


def plot_front(out, fronts, tank_length):
    fig, ax = plt.subplots(figsize=(6.4, 4.6), dpi=130)
    styles = ["-", "--", "-.", ":"]
    for k, spec in enumerate(fronts):
        path, _, label = spec.partition(":")
        T, Z, comment = read_front(path)
        if not label:
            m = re.search(r"dx = ([0-9.e-]+) m", comment)
            a = re.search(r"a = ([0-9.e-]+) m", comment)
            label = "cellint SPH" + (f", a/dx = {float(a.group(1)) / float(m.group(1)):.0f}" if m and a else "")
        keep = Z < tank_length  # the front is defined while it runs along the floor
        ax.plot(T[keep], Z[keep], styles[k % len(styles)], lw=1.8, label=label)
    ax.plot(MARTIN_MOYCE[:, 0], MARTIN_MOYCE[:, 1], "ko", ms=5, mfc="none",
            label="Martin & Moyce (1952), $n^2 = 2$")
    ax.plot(KOSHIZUKA_OKA[:, 0], KOSHIZUKA_OKA[:, 1], "s", color="tab:red", ms=4, mfc="none",
            label="Koshizuka & Oka (1996), digitised")
    ax.axhline(tank_length, color="0.6", lw=0.8)
    ax.text(0.1, tank_length - 0.12, "far wall", color="0.4", fontsize=8, va="top")
    ax.set_xlim(0, 3.6)
    ax.set_ylim(1, tank_length + 0.3)
    ax.set_xlabel(r"$T = t\,\sqrt{2g/a}$")
    ax.set_ylabel(r"surge front $Z/a$")
    ax.set_title("Dam break: surge front along the floor")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    fig.savefig(out)
    print("wrote", out)


def read_frame(path):
    """Returns dict(t, T, a, dx, x, y, speed, p, rho, wall) of a --frames file (VTK or CSV)."""
    with open(path) as f:
        text = f.read()
    head = re.search(r"t=([0-9.e+-]+) T=([0-9.e+-]+) step=(\d+) a=([0-9.e+-]+) dx=([0-9.e+-]+)", text)
    fr = {"t": float(head.group(1)), "T": float(head.group(2)), "step": int(head.group(3)),
          "a": float(head.group(4)), "dx": float(head.group(5))}
    if path.endswith(".csv"):
        _, d = read_csv(path)
        xyz = np.stack([d["x"], d["y"], d["z"]], axis=1)
        vel = np.stack([d["vx"], d["vy"], d["vz"]], axis=1)
        rho, p, wall = d["rho"], d["p"], d["wall"].astype(int)
    else:
        lines = text.splitlines()

        def block(keyword, rows, cols):
            i = next(k for k, l in enumerate(lines) if l.startswith(keyword))
            skip = 2 if keyword.startswith("SCALARS") else 1  # LOOKUP_TABLE line
            return np.array(" ".join(lines[i + skip:i + skip + rows]).split(), dtype=float).reshape(rows, cols)

        n = int(next(l for l in lines if l.startswith("POINTS")).split()[1])
        xyz = block("POINTS", n, 3)
        vel = block("VECTORS velocity", n, 3)
        rho = block("SCALARS density", n, 1)[:, 0]
        p = block("SCALARS pressure", n, 1)[:, 0]
        wall = block("SCALARS wall", n, 1)[:, 0].astype(int)
    fr.update(x=xyz[:, 0], y=xyz[:, 1], z=xyz[:, 2], speed=np.sqrt((vel ** 2).sum(1)), p=p, rho=rho, wall=wall)
    return fr


def plot_snapshots(prefix, frames_dir, times, color):
    paths = sorted(glob.glob(os.path.join(frames_dir, "sph_*.vtk")) + glob.glob(os.path.join(frames_dir, "sph_*.csv")))
    if not paths:
        raise SystemExit(f"no sph_*.vtk or sph_*.csv frames in {frames_dir}")
    heads = []
    for path in paths:
        with open(path) as f:
            m = re.search(r"T=([0-9.e+-]+)", f.read(400))
        heads.append((float(m.group(1)), path))
    g = 9.81
    for T in times:
        Tf, path = min(heads, key=lambda h: abs(h[0] - T))
        fr = read_frame(path)
        a, dx = fr["a"], fr["dx"]
        fluid = fr["wall"] == 0
        if np.any(fr["z"] != 0):  # 3-D: a slab around the middle plane
            zmid = 0.5 * (fr["z"][fluid].min() + fr["z"][fluid].max())
            sel = np.abs(fr["z"] - zmid) < 0.75 * dx
        else:
            sel = np.ones_like(fluid)
        x, y = fr["x"] / a, fr["y"] / a
        fig, ax = plt.subplots(figsize=(6.4, 4.4), dpi=130)
        w = (fr["wall"] == 1) & sel
        f = fluid & sel
        xmax = x[w].max()
        ymax = min(y[w].max(), max(2.2, y[f].max() + 0.1))  # the wall top, or just above the water
        ax.set_xlim(x[w].min(), xmax)
        ax.set_ylim(y[w].min(), ymax)
        ax.set_aspect("equal")
        fig.canvas.draw()
        bbox = ax.get_window_extent()
        size_pt = (dx / a) * bbox.width / (xmax - x[w].min()) * 72.0 / fig.dpi  # one dx in points
        s = (0.95 * size_pt) ** 2
        ax.scatter(x[w], y[w], s=s, c="0.65", marker="s", lw=0)
        if color == "pressure":
            val, label, cmap = fr["p"][f] / (1000.0 * g * 2 * a), r"$p / (\rho_0 g H)$", "coolwarm"
            vmin, vmax = -0.2, 1.2
        else:
            val, label, cmap = fr["speed"][f] / np.sqrt(2 * g * a), r"$|v| / \sqrt{2ga}$", "viridis"
            vmin, vmax = 0.0, 1.6
        sc = ax.scatter(x[f], y[f], s=s, c=val, cmap=cmap, vmin=vmin, vmax=vmax, lw=0)
        cb = fig.colorbar(sc, ax=ax, shrink=0.8, pad=0.02)
        cb.set_label(label)
        ax.set_xlabel("$x / a$")
        ax.set_ylabel("$y / a$")
        inert = int((fr["wall"] == 2).sum())
        gone = f", {inert} left the domain" if inert else ""
        ax.set_title(f"T = t$\\sqrt{{2g/a}}$ = {fr['T']:.2f}  (t = {fr['t']:.3f} s, {int(f.sum())} fluid particles{gone})",
                     fontsize=9)
        fig.tight_layout()
        out = f"{prefix}_T{T:g}".replace(".", "p") if "." not in prefix else prefix + f"_T{T:g}".replace(".", "p")
        out += ".png"
        fig.savefig(out)
        plt.close(fig)
        print(f"wrote {out} (frame {os.path.basename(path)}, T = {Tf:.3f})")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("front", help="front position against experiment")
    p.add_argument("out")
    p.add_argument("fronts", nargs="+", help="front CSV files, optionally PATH:label")
    p.add_argument("--tank-length", type=float, default=4.0, help="tank length in units of a (default 4)")
    p = sub.add_parser("snapshots", help="particle snapshots")
    p.add_argument("prefix", help="output prefix, e.g. docs/images/sph_snapshot")
    p.add_argument("frames", help="directory of sph_*.vtk or sph_*.csv frames")
    p.add_argument("times", nargs="+", type=float, help="non-dimensional times T")
    p.add_argument("--color", choices=["speed", "pressure"], default="speed")
    args = ap.parse_args()
    if args.cmd == "front":
        plot_front(args.out, args.fronts, args.tank_length)
    else:
        plot_snapshots(args.prefix, args.frames, args.times, args.color)


if __name__ == "__main__":
    main()
