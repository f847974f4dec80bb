"""Neighbour pairs side by side: cellint against vesin and matscipy on the CPU, and against PyTorch-only baselines
(a dense minimum-image search in chunks, and a cell list written with torch operations) and vesin's GPU path on a
CUDA GPU; plus the Python layer's own time per call. Lennard-Jones density 0.8442 (an fcc lattice with thermal
jitter), cutoff 2.5 sigma, periodic.

    python3 python/benchmarks/bench_pairs.py [--cpu] [--gpu] [--sizes 1e4,1e5,1e6] [--json out.json]
"""

import argparse
import json
import platform
import statistics
import sys
import time

import numpy as np

import cellint

RHO, CUTOFF = 0.8442, 2.5


def fcc(n_target, rng):
    """About n_target atoms on an fcc lattice of density RHO, each moved by up to 0.1 sigma."""
    m = max(2, int(round((n_target / 4) ** (1 / 3))))
    a = (4 / RHO) ** (1 / 3)
    base = np.array([[0, 0, 0], [0.5, 0.5, 0], [0.5, 0, 0.5], [0, 0.5, 0.5]])
    g = np.stack(np.meshgrid(*[np.arange(m)] * 3, indexing="ij"), -1).reshape(-1, 1, 3)
    x = ((g + base[None]) * a).reshape(-1, 3)
    x += rng.uniform(-0.1, 0.1, x.shape)
    return x[rng.permutation(len(x))], np.full(3, m * a)


def timed(fn, repeat, sync=lambda: None):
    """Median wall time in ms (after one warm-up call), and the last result."""
    r = fn()
    sync()
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        r = fn()
        sync()
        ts.append(1e3 * (time.perf_counter() - t0))
    return statistics.median(ts), r


def cpu_rows(sizes, rng):
    rows = []
    try:
        import vesin
    except ImportError:
        vesin = None
    try:
        import ase
        from matscipy.neighbours import neighbour_list
    except ImportError:
        neighbour_list = None
    threads = cellint.get_num_threads()
    for n in sizes:
        x, L = fcc(n, rng)
        rep = 5 if len(x) <= 2e5 else 3
        for half in (True, False):
            kind = "half" if half else "full"
            for t in sorted({1, threads}):
                cellint.set_num_threads(t)
                ms, r = timed(lambda: cellint.neighbor_pairs(x, L, CUTOFF, half=half), rep)
                rows.append(dict(device="cpu", code=f"cellint ({t} thread{'s' if t > 1 else ''})", list=kind,
                                 atoms=len(x), pairs=len(r[0]), ms=ms))
            cellint.set_num_threads(threads)
            if vesin is not None:
                nl = vesin.NeighborList(cutoff=CUTOFF, full_list=not half)
                ms, r = timed(lambda: nl.compute(points=x, box=np.diag(L), periodic=True, quantities="ijSd"), rep)
                rows.append(dict(device="cpu", code="vesin (1 thread)", list=kind, atoms=len(x), pairs=len(r[0]), ms=ms))
            if neighbour_list is not None and not half:
                atoms = ase.Atoms(positions=x, cell=L, pbc=True)
                ms, r = timed(lambda: neighbour_list("ijSd", atoms, CUTOFF), 1 if len(x) > 2e5 else rep)
                rows.append(dict(device="cpu", code="matscipy (1 thread)", list=kind, atoms=len(x), pairs=len(r[0]),
                                 ms=ms))
        print(f"cpu {len(x)} atoms done", file=sys.stderr, flush=True)
    return rows


def torch_dense(x, L, cutoff, chunk):
    """Every pair by a minimum-image distance matrix, `chunk` rows at a time (PyTorch operations only)."""
    import torch

    out_i, out_j = [], []
    for a in range(0, len(x), chunk):
        d = x[a:a + chunk, None, :] - x[None, :, :]
        d -= L * torch.round(d / L)
        r2 = (d * d).sum(-1)
        i, j = torch.nonzero((r2 < cutoff * cutoff), as_tuple=True)
        keep = (i + a) < j
        out_i.append(i[keep] + a)
        out_j.append(j[keep])
    return torch.cat(out_i), torch.cat(out_j)


def torch_cells(x, L, cutoff):
    """A cell list written with PyTorch operations: particles sorted by cell into a padded (cells, M) table, then the
    13 forward neighbour cells and the cell itself compared as dense (cells, M, M) blocks."""
    import torch

    dev = x.device
    nc = torch.floor(L / cutoff).to(torch.int64)
    w = L / nc
    c3 = torch.floor((x % L) / w).to(torch.int64) % nc
    cid = (c3[:, 2] * nc[1] + c3[:, 1]) * nc[0] + c3[:, 0]
    order = torch.argsort(cid)
    cid_s = cid[order]
    ncell = int(nc.prod())
    counts = torch.bincount(cid_s, minlength=ncell)
    start = torch.cumsum(counts, 0) - counts
    m = int(counts.max())
    slot = torch.arange(len(x), device=dev) - start[cid_s]
    table = torch.full((ncell, m), -1, dtype=torch.int64, device=dev)
    table[cid_s, slot] = order
    xs = torch.cat([x % L, torch.full((1, 3), float("nan"), device=dev, dtype=x.dtype)])  # row -1: padding
    cells = torch.arange(ncell, device=dev)
    cz, cy, cx = cells // (nc[0] * nc[1]), (cells // nc[0]) % nc[1], cells % nc[0]
    # the cell itself and the 13 cells after it in (z, y, x) order: each pair of cells once
    offsets = [(dx, dy, dz) for dz in (-1, 0, 1) for dy in (-1, 0, 1) for dx in (-1, 0, 1) if (dz, dy, dx) >= (0, 0, 0)]
    out_i, out_j = [], []
    for dx, dy, dz in offsets:
        nb = (((cz + dz) % nc[2]) * nc[1] + (cy + dy) % nc[1]) * nc[0] + (cx + dx) % nc[0]
        a, b = table, table[nb]
        d = xs[a][:, :, None, :] - xs[b][:, None, :, :]
        d -= L * torch.round(d / L)
        r2 = (d * d).sum(-1)
        ok = r2 < cutoff * cutoff
        if (dx, dy, dz) == (0, 0, 0):
            ok &= torch.triu(torch.ones(m, m, dtype=torch.bool, device=dev), 1)
        c, p, q = torch.nonzero(ok, as_tuple=True)
        out_i.append(a[c, p])
        out_j.append(b[c, q])
    return torch.cat(out_i), torch.cat(out_j)


def gpu_rows(sizes, rng):
    import torch

    rows = []
    sync = torch.cuda.synchronize
    name = torch.cuda.get_device_name()
    try:
        import cupy
        import vesin
    except ImportError:
        vesin = None
    for n in sizes:
        x64, L64 = fcc(n, rng)
        for dtype in (torch.float32, torch.float64):
            x = torch.as_tensor(x64, device="cuda", dtype=dtype)
            L = torch.as_tensor(L64, device="cuda", dtype=dtype)
            dname = str(dtype).replace("torch.", "")
            ms, r = timed(lambda: cellint.neighbor_pairs(x, L64, CUTOFF), 20, sync)
            rows.append(dict(device=name, code="cellint", dtype=dname, list="half", atoms=len(x), pairs=len(r[0]),
                             ms=ms))
            ms, r = timed(lambda: cellint.neighbor_pairs(x, L64, CUTOFF, half=False), 20, sync)
            rows.append(dict(device=name, code="cellint", dtype=dname, list="full", atoms=len(x), pairs=len(r[0]),
                             ms=ms))
            if len(x) <= 2e5:
                ms, r = timed(lambda: torch_cells(x, L, CUTOFF), 5, sync)
                rows.append(dict(device=name, code="torch cell list", dtype=dname, list="half", atoms=len(x),
                                 pairs=len(r[0]), ms=ms))
                ms, r = timed(lambda: torch_dense(x, L, CUTOFF, 2048 if len(x) > 2e4 else 8192), 3, sync)
                rows.append(dict(device=name, code="torch dense (chunked)", dtype=dname, list="half", atoms=len(x),
                                 pairs=len(r[0]), ms=ms))
            if vesin is not None:
                try:
                    xc = cupy.asarray(x64.astype(np.float64 if dtype == torch.float64 else np.float32))
                    bc = cupy.asarray(np.diag(L64).astype(xc.dtype))
                    nl = vesin.NeighborList(cutoff=CUTOFF, full_list=False)
                    ms, r = timed(lambda: nl.compute(points=xc, box=bc, periodic=True, quantities="ijSd"), 20,
                                  cupy.cuda.runtime.deviceSynchronize)
                    rows.append(dict(device=name, code="vesin (cupy)", dtype=dname, list="half", atoms=len(x),
                                     pairs=len(r[0]), ms=ms))
                except Exception as e:  # its GPU path may not run here: say why
                    rows.append(dict(device=name, code="vesin (cupy)", dtype=dname, list="half", atoms=len(x),
                                     error=f"{type(e).__name__}: {e}"[:200]))
        print(f"gpu {len(x64)} atoms done", file=sys.stderr, flush=True)
    return rows


def gpu_stages(sizes, rng):
    """Where cellint's GPU call spends its time: build, the counting pass, the allocations and the writing pass."""
    import torch

    rows = []
    for n in sizes:
        x64, L = fcc(n, rng)
        x = torch.as_tensor(x64, device="cuda", dtype=torch.float32)
        grid = cellint.CellGrid(L, CUTOFF, dtype="float32", device="cuda")
        t = {"build": [], "count": [], "allocate": [], "write": []}
        for k in range(12):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            grid.build(x)
            torch.cuda.synchronize()
            t1 = time.perf_counter()
            total = grid._g.count_pairs(CUTOFF, True)
            t2 = time.perf_counter()
            out = [torch.empty(total, dtype=torch.int64, device="cuda") for _ in range(2)]
            d = torch.empty(total, device="cuda")
            s = torch.empty((total, 3), dtype=torch.int32, device="cuda")
            t3 = time.perf_counter()
            grid._g.fill_pairs(total, out[0].data_ptr(), out[1].data_ptr(), d.data_ptr(), None, s.data_ptr())
            torch.cuda.synchronize()
            t4 = time.perf_counter()
            if k >= 2:
                for key, a, b in (("build", t0, t1), ("count", t1, t2), ("allocate", t2, t3), ("write", t3, t4)):
                    t[key].append(1e3 * (b - a))
        rows.append(dict(atoms=len(x), **{k: statistics.median(v) for k, v in t.items()}))
        print("stages", rows[-1], file=sys.stderr, flush=True)
    return rows


def overhead_rows(device):
    """The Python layer's time per call on a tiny system: the call's wall time minus the time spent in the library."""
    rows = []
    rng = np.random.default_rng(3)
    x = rng.uniform(0, 10, (64, 3))
    if device == "cuda":
        import torch

        x = torch.as_tensor(x, device="cuda")
    grid = cellint.CellGrid([10, 10, 10], 2.5, device=device)
    grid.build(x)
    calls = {
        "neighbor_pairs(x, box, cutoff)": lambda: cellint.neighbor_pairs(x, [10, 10, 10], 2.5),
        "grid.neighbor_pairs()": lambda: grid.neighbor_pairs(),
        "grid.interact(LennardJones())": lambda: grid.interact(cellint.LennardJones()),
        "grid.build(x)": lambda: grid.build(x),
    }
    for what, fn in calls.items():
        for _ in range(20):
            fn()
        k = 2000
        c0, t0 = cellint._core.cpp_seconds(), time.perf_counter()
        for _ in range(k):
            fn()
        wall = (time.perf_counter() - t0) / k
        inside = (cellint._core.cpp_seconds() - c0) / k
        rows.append(dict(device=device, call=what, us_per_call=1e6 * wall, us_in_library=1e6 * inside,
                         us_python=1e6 * (wall - inside)))
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cpu", action="store_true")
    ap.add_argument("--gpu", action="store_true")
    ap.add_argument("--sizes", default="1e4,1e5,1e6")
    ap.add_argument("--stages", action="store_true", help="with --gpu: time cellint's stages")
    ap.add_argument("--json")
    a = ap.parse_args()
    sizes = [int(float(s)) for s in a.sizes.split(",")]
    rng = np.random.default_rng(2026)
    out = dict(cellint=cellint.__version__, python=platform.python_version(), cpu=platform.processor() or
               platform.machine(), threads=cellint.get_num_threads(), rows=[], overhead=[])
    if a.cpu:
        out["rows"] += cpu_rows(sizes, rng)
        out["overhead"] += overhead_rows("cpu")
    if a.gpu:
        out["rows"] += gpu_rows(sizes, rng)
        out["overhead"] += overhead_rows("cuda")
        if a.stages:
            out["stages"] = gpu_stages(sizes, rng)
    for r in out["rows"]:
        extra = f"  {r['error']}" if "error" in r else f"{r['ms']:10.2f} ms  {r['pairs']:>10} pairs"
        print(f"{r['device'][:22]:22} {r['code']:24} {r.get('dtype', 'float64'):8} {r['list']:4} {r['atoms']:>8} "
              f"atoms {extra}")
    for r in out["overhead"]:
        print(f"{r['device']:5} {r['call']:32} {r['us_per_call']:8.1f} us/call, {r['us_python']:6.1f} us in Python")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
