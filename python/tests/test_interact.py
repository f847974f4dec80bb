"""CellGrid.interact: the built-in interactions against O(N^2) references, every CPU strategy, the Report, the
order helpers and bad input."""

import numpy as np
import pytest

import cellint
from conftest import make_positions, reference_lj, reference_pairs

CPU_STRATEGIES = ["auto", "cell-loop", "cell-loop-half", "brute-force"]


def lattice_like(rng, n, L, dim):
    """Positions no closer than ~0.8 (a jittered grid): Lennard-Jones forces stay moderate."""
    m = int(np.ceil(n ** (1 / dim)))
    g = np.stack(np.meshgrid(*[np.arange(m)] * dim, indexing="ij"), -1).reshape(-1, dim)[:n]
    return (g + 0.5 + rng.uniform(-0.1, 0.1, g.shape)) * (L / m)


@pytest.mark.parametrize("dim", [2, 3])
@pytest.mark.parametrize("periodic", [True, False])
@pytest.mark.parametrize("strategy", CPU_STRATEGIES)
def test_lennard_jones(rng, dim, periodic, strategy):
    L = np.full(dim, 9.0 if dim == 3 else 14.0)
    x = lattice_like(rng, 600 if dim == 3 else 300, L[0], dim)
    grid = cellint.CellGrid(L, 2.5, periodic=periodic)
    grid.build(x)
    r = grid.interact(cellint.LennardJones(shifted=True), strategy=strategy)
    f, e, w = reference_lj(x, L, periodic, 2.5, shifted=True)
    np.testing.assert_allclose(r.force, f, atol=1e-9 * np.abs(f).max())
    np.testing.assert_allclose(r.energy, e, atol=1e-10)
    np.testing.assert_allclose(r.virial, w, atol=1e-9 * np.abs(w).max())
    assert r.report.strategy != "auto" and r.report is grid.last_report
    if strategy != "auto":
        assert r.report.strategy == strategy


@pytest.mark.parametrize("dim", [2, 3])
@pytest.mark.parametrize("kind", ["uniform", "clustered"])
def test_neighbor_count_float32(rng, dim, kind):
    L = rng.uniform(8, 12, dim)
    x = make_positions(rng, 800, L, kind, True).astype(np.float32)
    grid = cellint.CellGrid(L, 2.0, dtype=np.float32)
    grid.build(x)
    c = grid.interact(cellint.NeighborCount()).count
    i, _, _, d = reference_pairs(x, L.astype(np.float32), True, 2.0, half=False)
    want = np.bincount(i, minlength=len(x))
    near = np.bincount(i[np.abs(d - 2.0) < 1e-4], minlength=len(x))
    assert c.dtype == np.int32 and np.all(np.abs(c - want) <= near)


@pytest.mark.parametrize("kernel", ["gaussian", "cubic_spline", "wendland_c2"])
@pytest.mark.parametrize("dim", [2, 3])
@pytest.mark.parametrize("masses", [False, True])
def test_density(rng, kernel, dim, masses):
    L = np.full(dim, 10.0)
    x = make_positions(rng, 700, L, "clustered", True)
    h = 1.0
    grid = cellint.CellGrid(L, 2.0 if kernel != "gaussian" else 3.0)
    grid.build(x)
    m = rng.uniform(0.5, 2.0, len(x)) if masses else np.ones(len(x))
    if masses:
        grid.attach("mass", m)
    rho = grid.interact(cellint.Density(h=h, kernel=kernel), strategy="cell-loop-half").density
    i, j, _, r = reference_pairs(x, L, True, grid.cutoff, half=False)
    q = r / h
    if kernel == "gaussian":
        w = np.exp(-q * q) / (np.pi ** (dim / 2) * h ** dim)
        w0 = 1 / (np.pi ** (dim / 2) * h ** dim)
    elif kernel == "cubic_spline":
        c = (10 / (7 * np.pi) if dim == 2 else 1 / np.pi) / h ** dim
        w = c * np.where(q < 1, 1 - 1.5 * q ** 2 + 0.75 * q ** 3, 0.25 * np.clip(2 - q, 0, None) ** 3)
        w0 = c
    else:
        c = (7 / (4 * np.pi) if dim == 2 else 21 / (16 * np.pi)) / h ** dim
        w = c * np.clip(1 - q / 2, 0, None) ** 4 * (2 * q + 1)
        w0 = c
    want = m * w0
    np.add.at(want, i, m[j] * w)
    np.testing.assert_allclose(rho, want, rtol=1e-10)


def test_kernel_normalisation():
    """A fine lattice of unit-mass particles at unit spacing has density 1 for every kernel."""
    for dim in (2, 3):
        n = 24
        g = np.stack(np.meshgrid(*[np.arange(n)] * dim, indexing="ij"), -1).reshape(-1, dim) + 0.5
        grid = cellint.CellGrid([n] * dim, 4.0)
        grid.build(g.astype(float))
        for kernel in ("gaussian", "cubic_spline", "wendland_c2"):
            rho = grid.interact(cellint.Density(h=1.6 if kernel == "gaussian" else 2.0, kernel=kernel)).density
            np.testing.assert_allclose(rho, 1.0, rtol=0.02)


@pytest.mark.parametrize("per_particle", [False, True])
@pytest.mark.parametrize("strategy", CPU_STRATEGIES)
def test_soft_sphere(rng, per_particle, strategy):
    L = np.full(3, 10.0)
    x = make_positions(rng, 900, L, "uniform", True)
    radius = rng.uniform(0.4, 0.9, len(x))
    grid = cellint.CellGrid(L, 2.0)
    grid.build(x)
    if per_particle:
        grid.attach("radius", radius)
    r = grid.interact(cellint.SoftSphere(epsilon=2.0, sigma=None if per_particle else 1.5, alpha=2.5),
                      strategy=strategy)
    i, j, D, d = reference_pairs(x, L, True, 2.0, half=False)
    s = radius[i] + radius[j] if per_particle else np.full(len(i), 1.5)
    inside = d < s
    i, D, d, s = i[inside], D[inside], d[inside], s[inside]
    v = 2.0 / 2.5 * (1 - d / s) ** 2.5
    fr = 2.0 / s * (1 - d / s) ** 1.5 / d
    force = np.zeros_like(x)
    np.add.at(force, i, -fr[:, None] * D)
    energy = np.zeros(len(x))
    np.add.at(energy, i, 0.5 * v)
    np.testing.assert_allclose(r.force, force, atol=1e-10)
    np.testing.assert_allclose(r.energy, energy, atol=1e-12)


def test_report_statistics_and_reproducible(rng):
    L = np.full(3, 10.0)
    x = make_positions(rng, 2000, L, "uniform", True)
    grid = cellint.CellGrid(L, 2.0, stable=True)
    grid.build(x)
    r = grid.interact(cellint.NeighborCount(), strategy="cell-loop", statistics=True)
    assert r.report.pairs_within == int(r.count.sum()) and r.report.pairs_examined >= r.report.pairs_within
    assert r.report.ms > 0
    a = grid.interact(cellint.LennardJones(), reproducible=True).energy
    b = grid.interact(cellint.LennardJones(), reproducible=True).energy
    np.testing.assert_array_equal(a, b)
    unstable = cellint.CellGrid(L, 2.0)
    unstable.build(x)
    with pytest.raises(ValueError, match="stable"):
        unstable.interact(cellint.LennardJones(), reproducible=True)


def test_order_helpers(rng):
    L = np.full(2, 10.0)
    x = make_positions(rng, 300, L, "uniform", True)
    grid = cellint.CellGrid(L, 1.0)
    grid.build(x)
    idx = grid.sorted_index
    assert sorted(idx.tolist()) == list(range(300))
    xs = grid.sorted_positions()
    np.testing.assert_allclose(xs, (x % L)[idx], atol=1e-12)
    np.testing.assert_allclose(grid.to_user_order(xs), x % L, atol=1e-12)
    assert grid.size == 300 and grid.cells == (10, 10) and grid.max_per_cell >= 1


def test_errors():
    L = [10.0, 10.0, 10.0]
    grid = cellint.CellGrid(L, 2.0)
    with pytest.raises(ValueError, match="build"):
        grid.interact(cellint.NeighborCount())
    grid.build(np.random.default_rng(0).uniform(0, 10, (100, 3)))
    with pytest.raises(cellint.Unsupported, match="x-pencil"):
        grid.interact(cellint.NeighborCount(), strategy="x-pencil")
    with pytest.raises(ValueError, match="no strategy named"):
        grid.interact(cellint.NeighborCount(), strategy="fastest")
    with pytest.raises(ValueError, match="shape"):
        grid.attach("mass", np.ones(99))
    with pytest.raises(ValueError, match="attributes are"):
        grid.attach("charge", np.ones(100))
    with pytest.raises(ValueError, match="NaN"):
        grid.attach("mass", np.full(100, np.nan))
    with pytest.raises(ValueError, match="radius"):
        grid.interact(cellint.SoftSphere(sigma=None))
    with pytest.raises(ValueError, match="beyond the grid's cutoff"):
        grid.interact(cellint.SoftSphere(sigma=3.0))
    with pytest.raises(ValueError, match="2h"):
        grid.interact(cellint.Density(h=1.5))
    with pytest.raises(ValueError, match="kernel"):
        grid.interact(cellint.Density(h=0.5, kernel="quartic"))
    with pytest.raises(ValueError, match=r"shape \(N, 3\)"):
        grid.build(np.zeros((10, 2)))
    with pytest.raises(ValueError, match="device"):
        cellint.CellGrid(L, 2.0, device="tpu")
    with pytest.raises(TypeError):
        grid.interact("lj")
    if not cellint.cuda_available():
        with pytest.raises(ValueError, match="CPU only"):
            cellint.CellGrid(L, 2.0, device="cuda")


def test_a_failed_build_keeps_the_attributes_of_the_same_count():
    rng = np.random.default_rng(4)
    x = rng.uniform(0, 10, (100, 3))
    grid = cellint.CellGrid([10, 10, 10], 2.5)
    grid.build(x)
    m = rng.uniform(1, 2, 100)
    grid.attach("mass", m)
    want = grid.interact(cellint.Density(h=1.0)).density
    bad = x.copy()
    bad[5, 1] = np.nan
    with pytest.raises(ValueError, match="particle 5"):
        grid.build(bad)
    with pytest.raises(ValueError, match="build"):
        grid.interact(cellint.NeighborCount())
    grid.build(x)
    np.testing.assert_allclose(grid.interact(cellint.Density(h=1.0)).density, want, rtol=1e-12)


def test_parameters_are_checked():
    grid = cellint.CellGrid([10, 10, 10], 2.5)
    grid.build(np.random.default_rng(0).uniform(0, 10, (50, 3)))
    with pytest.raises(ValueError, match="sigma > 0"):
        grid.interact(cellint.LennardJones(sigma=0))
    with pytest.raises(ValueError, match="alpha"):
        grid.interact(cellint.SoftSphere(alpha=0))
    with pytest.raises(ValueError, match="particle 3 is negative"):
        r = np.full(50, 0.5)
        r[3] = -1
        grid.attach("radius", r)
    with pytest.raises(ValueError, match=r"stable=True"):
        grid.interact(cellint.NeighborCount(), reproducible=True)
