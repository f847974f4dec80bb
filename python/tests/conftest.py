"""Shared helpers: random inputs with fresh seeds (printed on failure) and the O(N^2) references."""

import os

import numpy as np
import pytest


@pytest.fixture
def rng(request):
    seed = int.from_bytes(os.urandom(4), "little")
    request.node.user_properties.append(("seed", seed))
    print(f"seed = {seed}")
    return np.random.default_rng(seed)


def make_positions(rng, n, lengths, kind, periodic):
    """Uniform, or clustered (a few Gaussian blobs), inside the box; with periodic axes some particles are
    moved by whole box lengths (unwrapped coordinates, as a simulation writes them)."""
    lengths = np.asarray(lengths, dtype=np.float64)
    dim = len(lengths)
    if kind == "uniform":
        x = rng.uniform(0, 1, (n, dim)) * lengths
    else:
        centers = rng.uniform(0, 1, (4, dim)) * lengths
        x = centers[rng.integers(0, 4, n)] + rng.normal(0, 0.08, (n, dim)) * lengths
        x = np.where(periodic, x, np.clip(x, 0, lengths * (1 - 1e-9)))
    per = np.broadcast_to(np.asarray(periodic), (dim,))
    x = x + np.where(per, rng.integers(-2, 3, (n, dim)), 0) * lengths
    return x


def reference_pairs(x, lengths, periodic, cutoff, half):
    """All (i, j, D, d) with d < cutoff by brute force in double, D = x_j - x_i at the nearest image."""
    x = np.asarray(x, dtype=np.float64)
    lengths = np.asarray(lengths, dtype=np.float64)
    per = np.broadcast_to(np.asarray(periodic), lengths.shape)
    D = x[None, :, :] - x[:, None, :]
    D = D - np.where(per, np.round(D / lengths), 0) * lengths
    r = np.sqrt((D ** 2).sum(-1))
    np.fill_diagonal(r, np.inf)
    i, j = np.nonzero(r < cutoff)
    if half:
        keep = i < j
        i, j = i[keep], j[keep]
    return i, j, D[i, j], r[i, j]


def reference_lj(x, lengths, periodic, cutoff, eps=1.0, sigma=1.0, shifted=False):
    i, j, D, r = reference_pairs(x, lengths, periodic, cutoff, half=False)
    sr6 = (sigma / r) ** 6
    v = 4 * eps * (sr6 * sr6 - sr6)
    if shifted:
        s6 = (sigma / cutoff) ** 6
        v = v - 4 * eps * (s6 * s6 - s6)
    fr = 24 * eps * (2 * sr6 * sr6 - sr6) / r ** 2  # F_i = fr (x_i - x_j) = -fr D
    n, dim = x.shape
    force = np.zeros((n, dim))
    np.add.at(force, i, -fr[:, None] * D)
    energy = np.zeros(n)
    np.add.at(energy, i, 0.5 * v)
    virial = np.zeros(n)
    np.add.at(virial, i, 0.5 * fr * r ** 2)
    return force, energy, virial
