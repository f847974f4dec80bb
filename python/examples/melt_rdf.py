"""Melt a Lennard-Jones crystal in Python and plot its radial distribution function.

The forces come from CellGrid.interact(LennardJones()) and the pair distances from
CellGrid.neighbor_pairs(): a velocity-Verlet loop of LAMMPS's in.lj (density 0.8442, T = 3.0 at
the start, cutoff 2.5, dt = 0.005) in a few lines of NumPy, on the CPU, or on a GPU with
--device cuda (PyTorch tensors). Writes a PNG with g(r) of the crystal and of the melt.

    python3 python/examples/melt_rdf.py [--cells 10] [--steps 400] [--device cpu|cuda] [--png rdf.png]
"""

import argparse
import time

import numpy as np

import cellint


def fcc(cells, rho=0.8442):
    a = (4 / rho) ** (1 / 3)
    base = np.array([[0, 0, 0], [0.5, 0.5, 0], [0.5, 0, 0.5], [0, 0.5, 0.5]])
    g = np.stack(np.meshgrid(*[np.arange(cells)] * 3, indexing="ij"), -1).reshape(-1, 1, 3)
    return ((g + base[None]) * a).reshape(-1, 3), np.full(3, cells * a)


def rdf(grid, n, volume, rmax, bins=100):
    """g(r) from the grid's pairs closer than rmax."""
    _, _, _, d = grid.neighbor_pairs(cutoff=rmax)
    d = d.cpu().numpy() if hasattr(d, "cpu") else np.asarray(d)
    h, edges = np.histogram(d, bins=bins, range=(0, rmax))
    shell = 4 / 3 * np.pi * (edges[1:] ** 3 - edges[:-1] ** 3)
    return 0.5 * (edges[1:] + edges[:-1]), h / (shell * n * (n - 1) / 2 / volume)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cells", type=int, default=10, help="fcc unit cells per side (4 atoms each)")
    ap.add_argument("--steps", type=int, default=400)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--png", default="rdf.png")
    a = ap.parse_args()

    x, L = fcc(a.cells)
    n, dt = len(x), 0.005
    rng = np.random.default_rng(87287)
    v = rng.normal(0, np.sqrt(3.0), x.shape)
    v -= v.mean(0)
    if a.device != "cpu":
        import torch

        x, v = torch.as_tensor(x, device=a.device), torch.as_tensor(v, device=a.device)
    lj = cellint.LennardJones(epsilon=1, sigma=1, shifted=False)
    grid = cellint.CellGrid(L, 3.5, device=a.device)  # 3.5: the g(r) range; the forces stop at 2.5 (see below)
    forces = cellint.CellGrid(L, 2.5, device=a.device)

    grid.build(x)
    r0, g0 = rdf(grid, n, L.prod(), 3.5)
    forces.build(x)
    f = forces.interact(lj).force
    t0 = time.perf_counter()
    for step in range(1, a.steps + 1):
        v += 0.5 * dt * f
        x += dt * v
        forces.build(x)  # positions leave the box freely: periodic axes wrap them
        res = forces.interact(lj)
        f = res.force
        v += 0.5 * dt * f
        if step % 100 == 0 or step == a.steps:
            ke = 0.5 * float((v * v).sum()) / n
            pe = float(res.energy.sum()) / n
            print(f"step {step:5d}  T = {2 * ke / 3:.4f}  E/N = {ke + pe:.5f}  ({res.report.strategy})", flush=True)
    print(f"{a.steps} steps of {n} atoms in {time.perf_counter() - t0:.2f} s on {a.device}")
    grid.build(x)
    r1, g1 = rdf(grid, n, L.prod(), 3.5)

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 3.6), dpi=120)
    ax.plot(r0, g0, lw=1, color="0.6", label="fcc crystal (step 0)")
    ax.plot(r1, g1, lw=1.6, color="C3", label=f"liquid (step {a.steps})")
    ax.set_xlabel("r / sigma")
    ax.set_ylabel("g(r)")
    ax.set_title(f"Lennard-Jones, {n} atoms, density 0.8442: g(r) from cellint.neighbor_pairs")
    ax.title.set_fontsize(9)
    ax.set_ylim(0, 4)
    ax.legend(frameon=False)
    fig.tight_layout()
    fig.savefig(a.png)
    print(f"wrote {a.png}")


if __name__ == "__main__":
    main()
