"""neighbor_pairs against the O(N^2) reference, ASE and matscipy; conventions and bad input."""

import importlib.metadata
import pathlib
import re

import numpy as np
import pytest

import cellint
from conftest import make_positions, reference_pairs

ROOT = pathlib.Path(__file__).resolve().parents[2]


def as_set(i, j):
    return set(zip(np.asarray(i).tolist(), np.asarray(j).tolist()))


def test_version_matches_the_library():
    header = (ROOT / "include/cellint/version.hpp").read_text()
    assert cellint.__version__ == re.search(r'CELLINT_VERSION_STRING "([^"]+)"', header).group(1)
    assert cellint.__version__ == importlib.metadata.version("cellint")


@pytest.mark.parametrize("dim", [2, 3])
@pytest.mark.parametrize("periodic", [True, False, "mixed"])
@pytest.mark.parametrize("kind", ["uniform", "clustered"])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_pairs_match_brute_force(rng, dim, periodic, kind, dtype):
    lengths = rng.uniform(7.5, 11, dim)
    per = (True, False, True)[:dim] if periodic == "mixed" else periodic
    n = 700 if dim == 3 else 500
    cutoff = 2.5
    x = make_positions(rng, n, lengths, kind, per).astype(dtype)
    ri, rj, rD, rd = reference_pairs(x, lengths.astype(dtype), per, cutoff, half=True)
    i, j, S, d = cellint.neighbor_pairs(x, lengths.astype(dtype), cutoff, periodic=per)
    assert i.dtype == np.int64 and j.dtype == np.int64 and S.dtype == np.int32 and d.dtype == dtype
    got, want = as_set(i, j), as_set(ri, rj)
    if dtype == "float64":
        assert got == want
    else:  # float32: pairs within rounding of the cutoff may differ
        near = np.abs(reference_pairs(x, lengths, per, cutoff + 1e-3, half=True)[3] - cutoff) < 1e-3
        assert len(got ^ want) <= near.sum()
    assert np.all(i < j) and np.all(d < cutoff)
    # the shift convention: D = x[j] - x[i] + S * lengths, |D| = d
    L = lengths.astype(dtype).astype(np.float64)
    D = x[j].astype(np.float64) - x[i].astype(np.float64) + S * L
    tol = 1e-9 if dtype == "float64" else 2e-3
    np.testing.assert_allclose(np.linalg.norm(D, axis=1), d, atol=tol * 10)
    assert np.all(S[:, ~np.broadcast_to(np.asarray(per), (dim,))] == 0)
    # the full list holds both directions; vectors=True gives D itself
    fi, fj, V, fd = cellint.neighbor_pairs(x, lengths.astype(dtype), cutoff, periodic=per, half=False, vectors=True)
    assert as_set(fi, fj) == got | {(b, a) for a, b in got}
    np.testing.assert_allclose(np.linalg.norm(V.astype(np.float64), axis=1), fd, atol=tol * 10)
    plain = (x[fj] - x[fi]).astype(np.float64)
    whole = np.round((np.asarray(V, np.float64) - plain) / L)  # V differs from x_j - x_i by whole box lengths
    np.testing.assert_allclose(np.asarray(V, np.float64), plain + whole * L, atol=tol * 100)


def test_smaller_cutoff_on_a_grid_and_reuse(rng):
    L = np.array([12.0, 12.0, 12.0])
    x = make_positions(rng, 900, L, "uniform", True)
    grid = cellint.CellGrid(L, 3.0)
    grid.build(x)
    for c in (3.0, 1.7):
        i, j, _, _ = grid.neighbor_pairs(cutoff=c)
        ri, rj, _, _ = reference_pairs(x, L, True, c, half=True)
        assert as_set(i, j) == as_set(ri, rj)
    with pytest.raises(ValueError, match="at most the grid's cutoff"):
        grid.neighbor_pairs(cutoff=3.5)
    x2 = make_positions(rng, 400, L, "clustered", True)  # another count on the same grid
    grid.build(x2)
    i, j, _, _ = grid.neighbor_pairs()
    assert as_set(i, j) == as_set(*reference_pairs(x2, L, True, 3.0, half=True)[:2])


def test_shifts_refer_to_the_built_positions(rng):
    """The caller may move its array after build(): the pairs are those of the build, shifts included."""
    L = np.array([10.0, 10.0, 10.0])
    x = make_positions(rng, 800, L, "uniform", True)
    x0 = x.copy()
    grid = cellint.CellGrid(L, 2.5)
    grid.build(x)
    x += 3 * L  # an in-place change of the array given to build()
    i, j, S, d = grid.neighbor_pairs()
    np.testing.assert_allclose(np.linalg.norm(x0[j] - x0[i] + S * L, axis=1), d, atol=1e-9)


def test_open_box_from_the_bounding_box(rng):
    x = rng.normal(0, 3, (600, 3))
    i, j, S, d = cellint.neighbor_pairs(x, None, 1.5, periodic=False)
    lo, hi = x.min(0), x.max(0) + 1
    ri, rj, _, _ = reference_pairs(x, hi - lo, False, 1.5, half=True)
    assert as_set(i, j) == as_set(ri, rj) and not S.any()


def test_empty_and_isolated():
    i, j, S, d = cellint.neighbor_pairs(np.zeros((0, 3)), [10, 10, 10], 2.0)
    assert len(i) == 0 and S.shape == (0, 3)
    i, j, S, d = cellint.neighbor_pairs(np.array([[1.0, 1.0], [5.0, 5.0]]), [10, 10], 2.0)
    assert len(i) == 0


def test_matches_ase(rng):
    ase = pytest.importorskip("ase")
    from ase.neighborlist import neighbor_list

    L = np.array([9.0, 10.0, 11.0])
    x = make_positions(rng, 500, L, "uniform", False) % L
    atoms = ase.Atoms("Ar" * len(x), positions=x, cell=L, pbc=True)
    ai, aj, aS = neighbor_list("ijS", atoms, 2.5)
    i, j, S, d = cellint.neighbor_pairs(x, L, 2.5, half=False)
    want = {(a, b, tuple(s)) for a, b, s in zip(ai.tolist(), aj.tolist(), aS.tolist())}
    got = {(a, b, tuple(s)) for a, b, s in zip(i.tolist(), j.tolist(), S.tolist())}
    assert got == want


def test_matches_matscipy(rng):
    pytest.importorskip("ase")
    neighbours = pytest.importorskip("matscipy.neighbours")
    import ase

    L = np.array([10.0, 10.0, 10.0])
    x = make_positions(rng, 600, L, "clustered", True) % L
    atoms = ase.Atoms("Ar" * len(x), positions=x, cell=L, pbc=True)
    mi, mj, md = neighbours.neighbour_list("ijd", atoms, 2.5)
    i, j, S, d = cellint.neighbor_pairs(x, L, 2.5, half=False)
    assert as_set(i, j) == as_set(mi, mj)
    order = np.lexsort((j, i))
    morder = np.lexsort((mj, mi))
    np.testing.assert_allclose(d[order], md[morder], rtol=1e-12)


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: cellint.neighbor_pairs(np.zeros((5, 4)), [10] * 4, 1.0), "shape"),
        (lambda: cellint.neighbor_pairs(np.zeros((5, 3)), [10, 10], 1.0), r"shape \(N, 2\)"),
        (lambda: cellint.neighbor_pairs(np.zeros((5, 3)), [10, 10, -1], 1.0), "positive"),
        (lambda: cellint.neighbor_pairs(np.zeros((5, 3)), [10, 10, 5], 2.0), "at least 3 cells"),
        (lambda: cellint.neighbor_pairs(np.zeros((5, 3)), [10, 10, 10], -1.0), "cutoff"),
        (lambda: cellint.neighbor_pairs(np.zeros((5, 3)), [[0, 0, 0, 1]], 1.0), "box must be"),
        (lambda: cellint.neighbor_pairs(np.zeros((5, 3)), np.eye(3) + 0.1, 1.0), "orthogonal"),
        (lambda: cellint.neighbor_pairs(np.zeros((5, 3)), None, 1.0), "periodic box needs"),
    ],
)
def test_bad_input_is_a_value_error(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_bad_positions_name_the_particle():
    x = np.random.default_rng(0).uniform(0, 10, (50, 3))
    x[17, 2] = np.nan
    with pytest.raises(ValueError, match="particle 17"):
        cellint.neighbor_pairs(x, [10, 10, 10], 2.0)
    x[17, 2] = 12.0
    with pytest.raises(ValueError, match="particle 17.*outside"):
        cellint.neighbor_pairs(x, [10, 10, 10], 2.0, periodic=False)
    x[17, 2] = np.inf
    with pytest.raises(ValueError, match="particle 17"):
        cellint.neighbor_pairs(x, [10, 10, 10], 2.0, periodic=[True, True, False])


def test_integer_and_list_input_are_converted():
    i, j, S, d = cellint.neighbor_pairs([[0, 0, 0], [1, 0, 0], [5, 5, 5]], [10, 10, 10], 1.5)
    assert i.tolist() == [0] and j.tolist() == [1] and d.dtype == np.float64 and d[0] == 1.0


def test_distances_stay_below_the_cutoff_at_the_rounding_edge():
    """A pair whose squared distance is just below cutoff^2 can have a distance that rounds to the cutoff: the search
    leaves such pairs out, so that d < cutoff holds for what it returns."""
    x = np.array([[0, 0, 0], [0.2383, 2.0073, 1.4710]], dtype=np.float32)
    for half in (True, False):
        i, j, S, d = cellint.neighbor_pairs(x, [[-1, -1, -1], [4, 4, 4]], 2.5, periodic=False, half=half)
        assert np.all(d < np.float32(2.5))


def test_threads_each_get_their_own_cached_grid():
    import threading

    rng = np.random.default_rng(11)
    L = [12.0, 12.0, 12.0]
    xs = [rng.uniform(0, 12, (n, 3)) for n in (300, 3000)]
    want = [len(cellint.neighbor_pairs(x, L, 2.5)[0]) for x in xs]
    errors = []

    def work(k):
        try:
            for _ in range(30):
                got = len(cellint.neighbor_pairs(xs[k], L, 2.5)[0])
                assert got == want[k], (got, want[k])
        except Exception as e:  # reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in (0, 1, 0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    cellint.clear_cache()


def test_periodic_flags_of_any_boolean_kind():
    x = np.random.default_rng(2).uniform(0, 10, (200, 3))
    a = cellint.neighbor_pairs(x, [10, 10, 10], 2.0, periodic=np.True_)
    b = cellint.neighbor_pairs(x, [10, 10, 10], 2.0, periodic=[1, 1, 1])
    assert as_set(a[0], a[1]) == as_set(b[0], b[1])
