#!/usr/bin/python3
"""Renders the first and last frames of a cellint_lj extended-XYZ trajectory.

    cellint_lj --cells 10 --steps 1000 --xyz lj.xyz --every 1000
    /usr/bin/python3 examples/lj/plot_snapshot.py lj.xyz docs/images/lj_snapshot.png

Four panels: a slab through the box at the first frame (the fcc lattice, coloured by kinetic
energy) and at the last (the melted liquid, coloured by potential energy), the radial distribution
function g(r) of both frames, and the speed distribution of the last frame against the
Maxwell-Boltzmann distribution at its measured temperature.
Needs numpy and matplotlib (Debian: apt-get install python3-numpy python3-matplotlib).
"""

import re
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402


def read_frames(path):
    """Returns a list of frames: dict(step, box, columns...) from an extended-XYZ file."""
    frames = []
    with open(path) as f:
        while True:
            line = f.readline()
            if not line.strip():
                break
            n = int(line)
            header = f.readline()
            cell = [float(v) for v in re.search(r'Lattice="([^"]+)"', header).group(1).split()]
            box = np.array([cell[0], cell[4], cell[8]])  # the diagonal: edges along x, y, z
            step = int(re.search(r"Step=(\d+)", header).group(1))
            props = re.search(r"Properties=(\S+)", header).group(1).split(":")
            names, widths = props[0::3], [int(w) for w in props[2::3]]
            rows = [f.readline().split() for _ in range(n)]
            data = np.array([r[1:] for r in rows], dtype=float)  # drop the species column
            frame, col = {"step": step, "box": box, "n": n}, 0
            for name, w in zip(names[1:], widths[1:]):
                frame[name] = data[:, col : col + w] if w > 1 else data[:, col]
                col += w
            frames.append(frame)
    return frames


def rdf(pos, box, rmax, bins=160, max_atoms=4000):
    """g(r) with the minimum-image convention (a subset of reference atoms for large frames)."""
    n = len(pos)
    ref = pos if n <= max_atoms else pos[np.random.default_rng(1).choice(n, max_atoms, replace=False)]
    edges = np.linspace(0.0, rmax, bins + 1)
    hist = np.zeros(bins)
    for chunk in np.array_split(ref, max(1, len(ref) // 256)):
        d = chunk[:, None, :] - pos[None, :, :]
        d -= box * np.round(d / box)
        r = np.sqrt((d * d).sum(-1)).ravel()
        hist += np.histogram(r[(r > 1e-9) & (r < rmax)], bins=edges)[0]
    shell = 4.0 / 3.0 * np.pi * (edges[1:] ** 3 - edges[:-1] ** 3)
    rho = n / np.prod(box)
    return 0.5 * (edges[1:] + edges[:-1]), hist / (len(ref) * rho * shell)


def slab(ax, frame, values, label, cmap, thickness=1.0):
    """Atoms with |z - L/2| < thickness/2, drawn as discs of diameter ~ sigma."""
    box, pos = frame["box"], frame["pos"]
    sel = np.abs(pos[:, 2] - 0.5 * box[2]) < 0.5 * thickness
    fig = ax.figure
    sc = ax.scatter(pos[sel, 0], pos[sel, 1], c=values[sel], cmap=cmap, edgecolors="k", linewidths=0.2)
    ax.set_xlim(0, box[0])
    ax.set_ylim(0, box[1])
    ax.set_aspect("equal")
    ax.set_xlabel(r"$x / \sigma$")
    ax.set_ylabel(r"$y / \sigma$")
    cb = fig.colorbar(sc, ax=ax, fraction=0.046, pad=0.03)
    cb.set_label(label)
    # discs of diameter 0.9 sigma at the axes' final scale (points^2)
    fig.canvas.draw()
    bbox = ax.get_window_extent()
    pts_per_sigma = bbox.width / fig.dpi * 72.0 / box[0]
    sc.set_sizes([(0.9 * pts_per_sigma) ** 2])
    return sel.sum()


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: plot_snapshot.py TRAJECTORY.xyz OUTPUT.png")
    frames = read_frames(sys.argv[1])
    first, last = frames[0], frames[-1]
    n, box = last["n"], last["box"]
    temp = (last["velo"] ** 2).sum() / (3 * n - 3)

    fig, axes = plt.subplots(2, 2, figsize=(10.5, 9.0))
    (a, b), (c, d) = axes
    fig.subplots_adjust(left=0.07, right=0.93, bottom=0.07, top=0.91, wspace=0.38, hspace=0.3)

    k = slab(a, first, first["ke"], "kinetic energy per atom", "plasma")
    a.set_title(f"step {first['step']}: fcc lattice, slab of {k} atoms")
    k = slab(b, last, last["pe"], "potential energy per atom", "viridis")
    b.set_title(f"step {last['step']}: liquid, slab of {k} atoms")

    rmax = min(0.5 * box.min(), 4.0)
    r0, g0 = rdf(first["pos"], box, rmax)
    r1, g1 = rdf(last["pos"], box, rmax)
    c.plot(r0, g0, color="0.6", lw=0.8, label=f"step {first['step']} (lattice)")
    c.plot(r1, g1, color="C0", lw=1.8, label=f"step {last['step']}")
    c.axvline(2.5, color="C3", ls="--", lw=1, label=r"cutoff $r_c = 2.5\sigma$")
    c.axhline(1.0, color="k", lw=0.5)
    c.set_xlim(0, rmax)
    c.set_ylim(0, 1.25 * g1.max())
    c.set_xlabel(r"$r / \sigma$")
    c.set_ylabel(r"$g(r)$")
    c.set_title("radial distribution function")
    c.legend(loc="upper right", framealpha=0.95)

    speed = np.sqrt((last["velo"] ** 2).sum(axis=1))
    edges = np.linspace(0, speed.max() * 1.05, 50)
    counts, _, _ = d.hist(speed, bins=edges, density=True, color="C0", alpha=0.55, label=f"step {last['step']}, {n} atoms")
    v = np.linspace(0, edges[-1], 300)
    mb = 4 * np.pi * v**2 * (2 * np.pi * temp) ** -1.5 * np.exp(-(v**2) / (2 * temp))
    d.plot(v, mb, color="C3", lw=1.8, label=rf"Maxwell-Boltzmann, $T^* = {temp:.3f}$")
    d.set_xlabel(r"speed $|v|$ (reduced units)")
    d.set_ylabel("probability density")
    d.set_title("speed distribution")
    d.set_ylim(0, 1.3 * max(counts.max(), mb.max()))
    d.legend(loc="upper right", frameon=False)

    fig.suptitle(
        rf"cellint_lj: {n:,} Lennard-Jones atoms, $\rho^* = {n / np.prod(box):.4f}$, "
        rf"melting from fcc at $T^* = 1.44$ (velocity Verlet NVE, $\Delta t = 0.005$)",
        fontsize=12,
    )
    fig.savefig(sys.argv[2], dpi=110)


if __name__ == "__main__":
    main()
