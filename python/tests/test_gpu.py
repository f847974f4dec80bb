"""The CUDA build: PyTorch and CuPy arrays on the GPU, results against the CPU path (skipped without a GPU build and a
GPU array library)."""

import numpy as np
import pytest

import cellint
from conftest import make_positions

if not cellint.cuda_available():
    pytest.skip("this build of cellint has no CUDA backend", allow_module_level=True)

GPU_STRATEGIES = ["auto", "par-part-noloop", "par-part-loop", "par-cell", "par-cell-sm", "all-in-sm", "x-pencil",
                  "x-pencil-reg", "x-pencil-tile"]


def frameworks():
    out = []
    try:
        import torch

        if torch.cuda.is_available():
            out.append("torch")
    except ImportError:
        pass
    try:
        import cupy

        if cupy.cuda.runtime.getDeviceCount() > 0:
            out.append("cupy")
    except Exception:
        pass
    return out


FRAMEWORKS = frameworks()
if not FRAMEWORKS:
    pytest.skip("neither PyTorch nor CuPy sees a CUDA GPU", allow_module_level=True)


def to_gpu(x, fw):
    if fw == "torch":
        import torch

        return torch.as_tensor(x, device="cuda")
    import cupy

    return cupy.asarray(x)


def to_host(a):
    if type(a).__module__.startswith("torch"):
        return a.cpu().numpy()
    return a.get() if hasattr(a, "get") else np.asarray(a)


def is_same_kind(a, fw):
    return type(a).__module__.split(".")[0] == fw


@pytest.mark.parametrize("fw", FRAMEWORKS)
@pytest.mark.parametrize("dim", [2, 3])
@pytest.mark.parametrize("periodic", [True, False])
@pytest.mark.parametrize("kind", ["uniform", "clustered"])
@pytest.mark.parametrize("half", [True, False])
def test_pairs_on_the_gpu_match_the_cpu(rng, fw, dim, periodic, kind, half):
    L = rng.uniform(9, 14, dim)
    x = make_positions(rng, 3000 if dim == 3 else 1500, L, kind, periodic)
    ci, cj, cS, cd = cellint.neighbor_pairs(x, L, 2.5, periodic=periodic, half=half)
    gi, gj, gS, gd = cellint.neighbor_pairs(to_gpu(x, fw), L, 2.5, periodic=periodic, half=half)
    assert all(is_same_kind(a, fw) for a in (gi, gj, gS, gd))
    gi, gj, gS, gd = map(to_host, (gi, gj, gS, gd))
    want = {(a, b, tuple(s)) for a, b, s in zip(ci.tolist(), cj.tolist(), cS.tolist())}
    got = {(a, b, tuple(s)) for a, b, s in zip(gi.tolist(), gj.tolist(), gS.tolist())}
    assert got == want
    assert np.all(np.diff(gi) >= 0)  # the GPU groups pairs by i
    o1, o2 = np.lexsort((cj, ci)), np.lexsort((gj, gi))
    np.testing.assert_allclose(gd[o2], cd[o1], rtol=1e-12)


@pytest.mark.parametrize("fw", FRAMEWORKS)
def test_shifts_refer_to_the_built_positions(rng, fw):
    L = np.array([10.0, 12.0, 11.0])
    x = make_positions(rng, 3000, L, "uniform", True)
    xg = to_gpu(x, fw)
    grid = cellint.CellGrid(L, 2.5, device="cuda")
    grid.build(xg)
    xg += 2.0  # an in-place change of the array given to build()
    i, j, S, d = map(to_host, grid.neighbor_pairs())
    np.testing.assert_allclose(np.linalg.norm(x[j] - x[i] + S * L, axis=1), d, rtol=1e-12)


@pytest.mark.parametrize("fw", FRAMEWORKS)
def test_pairs_float32_and_vectors(rng, fw):
    L = np.full(3, 12.0)
    x = make_positions(rng, 4000, L, "uniform", True).astype(np.float32)
    i, j, V, d = cellint.neighbor_pairs(to_gpu(x, fw), L, 2.0, vectors=True)
    i, j, V, d = map(to_host, (i, j, V, d))
    assert V.dtype == np.float32 and d.dtype == np.float32 and np.all(d < 2.0)
    np.testing.assert_allclose(np.linalg.norm(V, axis=1), d, rtol=1e-5)
    ci, cj, _, _ = cellint.neighbor_pairs(x, L, 2.0)
    assert len(set(zip(i.tolist(), j.tolist())) ^ set(zip(ci.tolist(), cj.tolist()))) <= 4


@pytest.mark.parametrize("strategy", GPU_STRATEGIES)
@pytest.mark.parametrize("dim", [2, 3])
def test_interactions_on_the_gpu_match_the_cpu(rng, strategy, dim):
    fw = FRAMEWORKS[0]
    L = np.full(dim, 12.0 if dim == 3 else 30.0)
    x = make_positions(rng, 4000, L, "uniform", True)
    m = rng.uniform(0.5, 2, len(x))
    radius = rng.uniform(0.3, 0.7, len(x))
    cpu = cellint.CellGrid(L, 2.5)
    cpu.build(x)
    gpu = cellint.CellGrid(L, 2.5, device="cuda")
    gpu.build(to_gpu(x, fw))
    for g, to in ((cpu, np.asarray), (gpu, lambda a: to_gpu(a, fw))):
        g.attach("mass", to(m))
        g.attach("radius", to(radius))
    for inter in (cellint.LennardJones(shifted=True, softening=0.5), cellint.NeighborCount(),
                  cellint.Density(h=1.2, kernel="wendland_c2"), cellint.SoftSphere(sigma=None, alpha=2)):
        want = cpu.interact(inter, strategy="cell-loop")
        try:
            got = gpu.interact(inter, strategy=strategy)
        except cellint.Unsupported as e:
            assert strategy not in ("auto", "par-part-noloop", "par-part-loop"), str(e)
            continue
        for field in ("force", "energy", "virial", "density", "count"):
            a, b = getattr(got, field), getattr(want, field)
            assert (a is None) == (b is None)
            if a is not None:
                assert is_same_kind(a, fw)
                np.testing.assert_allclose(to_host(a), b, rtol=1e-9, atol=1e-9 * np.abs(b).max())
        assert got.report.strategy != "auto"


def test_device_mismatch_is_a_clear_error():
    grid = cellint.CellGrid([10, 10, 10], 2.0, device="cuda")
    with pytest.raises(ValueError, match="on the CPU but the grid computes on cuda"):
        grid.build(np.zeros((10, 3)))
    grid.build(to_gpu(np.random.default_rng(0).uniform(0, 10, (10, 3)), FRAMEWORKS[0]))
    with pytest.raises(ValueError, match="mass is on the CPU"):
        grid.attach("mass", np.ones(10))
