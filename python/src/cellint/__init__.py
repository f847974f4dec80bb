"""cellint: short-range particle interactions and neighbour pairs on a cell grid, on the CPU and on
NVIDIA GPUs, from NumPy arrays, CuPy arrays and PyTorch tensors.

The package wraps the header-only C++ library of the same name. Arrays on the GPU stay there: the
library reads and writes them in place through DLPack, without host copies.

    >>> import numpy as np, cellint
    >>> x = np.random.default_rng(1).uniform(0, 10, (1000, 3))
    >>> i, j, S, d = cellint.neighbor_pairs(x, box=[10, 10, 10], cutoff=2.5)

See docs/python.md in the repository for the conventions and the measurements.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Optional, Sequence, Tuple, Union

import numpy as np

from . import _arrays as _a
from . import _core
from ._core import Unsupported

__version__: str = _core.__version__

__all__ = [
    "CellGrid",
    "Density",
    "LennardJones",
    "NeighborCount",
    "Report",
    "Result",
    "SoftSphere",
    "Unsupported",
    "clear_cache",
    "cuda_available",
    "get_num_threads",
    "set_num_threads",
    "neighbor_pairs",
    "__version__",
]

_KERNELS = {"gaussian": 0, "cubic_spline": 1, "wendland_c2": 2}
_ATTRIBUTES = {"mass": 0, "radius": 1}


def set_num_threads(n: int) -> None:
    """The number of threads the CPU computations use (OpenMP; default: all cores)."""
    _core.set_num_threads(int(n))


def get_num_threads() -> int:
    """The number of threads the CPU computations use."""
    return int(_core.get_num_threads())


def cuda_available() -> bool:
    """Whether this build of the package computes on CUDA GPUs (it was built with nvcc)."""
    return bool(_core.cuda_built)


# ---- built-in interactions -------------------------------------------------------------------


@dataclass(frozen=True)
class LennardJones:
    """Lennard-Jones 12-6: V(r) = 4 epsilon [(sigma/r)^12 - (sigma/r)^6] (- V(cutoff) when `shifted`).

    Results: `force` (N, dim), `energy` (N; half of each pair's energy, so the sum is the total) and
    `virial` (N; half of each pair's r.F). `softening` > 0 replaces r^2 by r^2 + softening^2.
    """

    epsilon: float = 1.0
    sigma: float = 1.0
    shifted: bool = False
    softening: float = 0.0


@dataclass(frozen=True)
class NeighborCount:
    """The number of neighbours closer than the cutoff. Result: `count` (N, int32)."""


@dataclass(frozen=True)
class Density:
    """Kernel-weighted density rho_i = sum_j m_j W(|x_i - x_j|, h), the particle itself included
    (`self_contribution`).

    `kernel`: "gaussian" (exp(-r^2/h^2), truncated at the cutoff), "cubic_spline" (Monaghan's
    M4, support 2h) or "wendland_c2" (support 2h); each normalised in the grid's dimension.
    `mass`: the mass of every particle; None uses the grid's attached "mass" when there is one, else 1.
    Result: `density` (N).
    """

    h: float
    kernel: str = "cubic_spline"
    mass: Optional[float] = None
    self_contribution: bool = True


@dataclass(frozen=True)
class SoftSphere:
    """Soft-sphere repulsion V(r) = epsilon / alpha (1 - r / sigma)^alpha for r < sigma.

    `sigma`: the contact distance of every pair; None uses the grid's attached "radius"
    (sigma_ij = radius_i + radius_j). Results: `force` (N, dim) and `energy` (N, half of each pair's).
    """

    epsilon: float = 1.0
    sigma: Optional[float] = 1.0
    alpha: float = 2.0


Interaction = Union[LennardJones, NeighborCount, Density, SoftSphere]


@dataclass
class Report:
    """What one call did: the strategy that ran, its launch shape on GPUs, the time Auto spent
    choosing it in this call, and with `statistics=True` the pairs and the call's own time."""

    strategy: str
    blocks: int = 0
    threads: int = 0
    shared_bytes: int = 0
    tuning_ms: float = 0.0
    pairs_examined: Optional[int] = None
    pairs_within: Optional[int] = None
    each_pair_once: Optional[bool] = None
    ms: Optional[float] = None


@dataclass
class Result:
    """The results of CellGrid.interact(), in the order the particles were given to build()."""

    report: Report
    force: Any = None
    energy: Any = None
    virial: Any = None
    density: Any = None
    count: Any = None


# ---- the grid -------------------------------------------------------------------------------


def _parse_box(box: Any, dim: Optional[int]) -> Tuple[np.ndarray, np.ndarray]:
    """(lo, lengths) from side lengths (lower corner 0), a (lo, hi) pair, or a diagonal 3x3 cell."""
    b = np.asarray(_a.to_numpy_host(box) if hasattr(box, "__dlpack__") and not isinstance(box, np.ndarray) else box,
                   dtype=np.float64)
    if b.ndim == 1:
        lo, length = np.zeros_like(b), b
    elif b.ndim == 2 and b.shape[0] == 2 and b.shape[1] in (2, 3):
        lo, length = b[0], b[1] - b[0]
    elif b.shape == (3, 3):
        if np.count_nonzero(b - np.diag(np.diag(b))):
            raise ValueError("cellint: only orthogonal boxes are supported (the cell matrix has off-diagonal terms)")
        lo, length = np.zeros(3), np.diag(b).copy()
    else:
        raise ValueError(f"cellint: box must be the side lengths (dim,), a (lo, hi) pair (2, dim) or a diagonal 3x3 cell; "
                         f"got shape {b.shape}")
    if dim is not None and len(length) != dim:
        raise ValueError(f"cellint: the box has {len(length)} axes but the positions have {dim}")
    if len(length) not in (2, 3):
        raise ValueError(f"cellint: 2 or 3 dimensions are supported, the box has {len(length)}")
    if not np.all(np.isfinite(length)) or np.any(length <= 0):
        raise ValueError(f"cellint: box side lengths must be positive and finite, got {length.tolist()}"
                         + (" (a 2x2 box is read as a (lo, hi) pair of corners)" if b.shape == (2, 2) else ""))
    return lo, length


def _parse_periodic(periodic: Union[bool, Sequence[bool]], dim: int) -> Tuple[bool, bool, bool]:
    if isinstance(periodic, (bool, np.bool_)):
        p = [bool(periodic)] * dim
    else:
        p = [bool(v) for v in periodic]
        if len(p) != dim:
            raise ValueError(f"cellint: periodic has {len(p)} flags for {dim} axes")
    return (p + [False] * 3)[:3]  # type: ignore[return-value]


def _parse_device(device: str) -> Tuple[str, int]:
    if device == "cpu":
        return "cpu", 0
    if device == "cuda":
        return "cuda", 0
    if device.startswith("cuda:") and device[5:].isdigit():
        return "cuda", int(device[5:])
    raise ValueError(f"cellint: device must be 'cpu', 'cuda' or 'cuda:N', got '{device}'")


class CellGrid:
    """Particles binned into a grid of cells over an orthogonal box, on the CPU or one CUDA GPU.

    Args:
        box: the side lengths (lower corner at 0), or a (lo, hi) pair of corners.
        cutoff: the interaction range; cells are at least this wide. Periodic axes need room for
            three cells (side >= 3 cutoff).
        periodic: one flag for every axis, or one per axis.
        dtype: "float32" or "float64" (NumPy dtypes accepted): the precision of positions and results.
        device: "cpu", "cuda" or "cuda:N". Arrays given to build() must live there.
        stable: order each cell's particles by index, so that results are bit-identical run after run
            (with `reproducible=True` in interact()).
        min_cell_width: cells at least this wide (0: the cutoff).
    """

    def __init__(
        self,
        box: Any,
        cutoff: float,
        periodic: Union[bool, Sequence[bool]] = True,
        dtype: Any = "float64",
        device: str = "cpu",
        stable: bool = False,
        min_cell_width: float = 0.0,
    ) -> None:
        lo, length = _parse_box(box, None)
        self.dim: int = len(length)
        self.dtype: str = np.dtype(dtype).name
        if self.dtype not in ("float32", "float64"):
            raise ValueError(f"cellint: dtype must be float32 or float64, got {self.dtype}")
        self.device, self._device_id = _parse_device(device)
        if self.device == "cuda" and not cuda_available():
            raise ValueError("cellint: this build of the package computes on the CPU only; reinstall it with CUDA "
                             "(CMAKE_ARGS=-DCELLINT_PY_CUDA=ON pip install ./python, see docs/python.md)")
        self.cutoff: float = float(cutoff)
        self.periodic: Tuple[bool, ...] = _parse_periodic(periodic, self.dim)[: self.dim]
        self.lo = lo
        self.lengths = length
        pad = lambda v: [float(x) for x in v] + [0.0] * (3 - self.dim)  # noqa: E731
        self._g = _core.make_grid(self.device, self._device_id, self.dim, 4 if self.dtype == "float32" else 8,
                                  pad(lo), pad(length), list(_parse_periodic(periodic, self.dim)), self.cutoff,
                                  float(min_cell_width), bool(stable))
        self._positions: Any = None
        self._stable = bool(stable)
        self._attached: dict = {}
        self.last_report: Optional[Report] = None

    # -- particles --

    def build(self, positions: Any) -> "CellGrid":
        """Bins the particles: `positions` is an (N, dim) array of the grid's device (NumPy on the CPU;
        CuPy or PyTorch CUDA arrays on the GPU). Positions on periodic axes may lie outside the box
        (they are wrapped); on open axes a particle outside the box is a ValueError naming it."""
        self._check_device(positions, "positions")
        x = _a.as_array(positions, self.dtype)
        if x.ndim != 2 or x.shape[1] != self.dim:
            raise ValueError(f"cellint: positions must have shape (N, {self.dim}), got {tuple(x.shape)}")
        try:
            self._g.build(_a.arg(x), x.shape[0])
        except BaseException:
            self._positions = None  # not built: every call but build() says so
            raise
        self._positions = x  # (what results are allocated like; the build keeps what it needs of the positions)
        if any(v.shape[0] != x.shape[0] for v in self._attached.values()):
            self._attached = {}
        return self

    @property
    def size(self) -> int:
        """The number of particles of the last build()."""
        return self._g.size

    @property
    def max_per_cell(self) -> int:
        """The largest number of particles in one cell (M_C)."""
        return self._g.max_per_cell

    @property
    def cells(self) -> Tuple[int, ...]:
        """Cells along each axis."""
        return tuple(self._g.cells[: self.dim])

    def attach(self, name: str, values: Any) -> None:
        """Attaches one value per particle (build() order): "mass" (read by Density) or "radius"
        (read by SoftSphere). The values follow the particles through later builds of the same count."""
        if name not in _ATTRIBUTES:
            raise ValueError(f"cellint: attributes are {sorted(_ATTRIBUTES)}, not '{name}'")
        self._check_built("attach")
        self._check_device(values, name)
        v = _a.as_array(values, self.dtype, like=self._positions)
        if v.ndim != 1 or v.shape[0] != self.size:
            raise ValueError(f"cellint: {name} must have shape ({self.size},), got {tuple(v.shape)}")
        if not _a.all_finite(v):
            raise ValueError(f"cellint: {name} of particle {_a.first_bad(v)} is NaN or infinite")
        if name == "radius" and self.size and _a.to_float(v.min()) < 0:
            raise ValueError(f"cellint: radius of particle {_a.first_negative(v)} is negative")
        self._g.attach(_ATTRIBUTES[name], _a.arg(v))
        self._attached[name] = v

    @property
    def sorted_index(self) -> Any:
        """For every sorted slot (the grid's cell order), the particle's index in build() order."""
        self._check_built("sorted_index")
        idx = _a.empty(self._positions, (self.size,), "int64")
        self._g.sorted(_a.arg(idx), None)
        return idx

    def sorted_positions(self) -> Any:
        """The positions in the grid's cell order (wrapped into the box on periodic axes)."""
        self._check_built("sorted_positions")
        x = _a.empty(self._positions, (self.size, self.dim), self.dtype)
        self._g.sorted(None, _a.arg(x))
        return x

    def to_user_order(self, values: Any) -> Any:
        """Values in the grid's cell order (first axis of length N) back in build() order."""
        self._check_built("to_user_order")
        if values.shape[0] != self.size:
            raise ValueError(f"cellint: to_user_order needs {self.size} rows, got {values.shape[0]}")
        out = _a.empty(values, tuple(values.shape), str(values.dtype).replace("torch.", ""))
        out[self.sorted_index] = values
        return out

    # -- interactions --

    def interact(self, interaction: Interaction, strategy: str = "auto", statistics: bool = False,
                 reproducible: bool = False) -> Result:
        """Runs a built-in interaction over all pairs closer than the cutoff (periodic images included).

        Args:
            interaction: LennardJones(...), NeighborCount(), Density(...) or SoftSphere(...).
            strategy: "auto" (the fastest, timed once per shape and cached) or a strategy's name
                (for example "par-cell-sm", "x-pencil", "cell-loop-half"); one that cannot run here
                raises cellint.Unsupported with the reason.
            statistics: also count the pairs examined and within the cutoff, and time the call.
            reproducible: bit-identical results run after run (needs CellGrid(stable=True)).
        Returns: a Result in build() order, with its Report (also in `last_report`).
        """
        self._check_built("interact")
        if reproducible and not self._stable:
            raise ValueError("cellint: reproducible=True needs a grid made with CellGrid(..., stable=True) (an unstable "
                             "build orders each cell's particles as the binning's atomics happen to run)")
        like = self._positions
        n, dim, dt = self.size, self.dim, self.dtype
        p: dict = {"statistics": bool(statistics), "reproducible": bool(reproducible)}
        force = energy = virial = scalar = None
        if isinstance(interaction, LennardJones):
            what = "lennard_jones"
            if not (interaction.sigma > 0 and np.isfinite(interaction.epsilon) and interaction.softening >= 0):
                raise ValueError(f"cellint: LennardJones needs sigma > 0, a finite epsilon and softening >= 0, got "
                                 f"{interaction}")
            p.update(epsilon=interaction.epsilon, sigma=interaction.sigma, shifted=interaction.shifted,
                     softening=interaction.softening)
            force, energy, virial = _a.empty(like, (n, dim), dt), _a.empty(like, (n,), dt), _a.empty(like, (n,), dt)
        elif isinstance(interaction, NeighborCount):
            what = "neighbor_count"
            scalar = _a.empty(like, (n,), "int32")
        elif isinstance(interaction, Density):
            what = "density"
            if not isinstance(interaction.h, (int, float, np.floating, np.integer)):
                raise ValueError(f"cellint: Density h must be a number, got {interaction.h!r}")
            if interaction.kernel not in _KERNELS:
                raise ValueError(f"cellint: Density kernel must be one of {sorted(_KERNELS)}, not '{interaction.kernel}'")
            if not interaction.h > 0:
                raise ValueError(f"cellint: Density h must be positive, got {interaction.h}")
            if interaction.kernel != "gaussian" and 2 * interaction.h > self.cutoff * (1 + 1e-12):
                raise ValueError(f"cellint: the {interaction.kernel} kernel reaches 2h = {2 * interaction.h}, beyond "
                                 f"the grid's cutoff {self.cutoff}; make the cutoff at least 2h")
            per = interaction.mass is None and "mass" in self._attached
            p.update(kernel=_KERNELS[interaction.kernel], h=float(interaction.h), per_particle=per,
                     mass=1.0 if interaction.mass is None else float(interaction.mass),
                     self_term=bool(interaction.self_contribution))
            scalar = _a.empty(like, (n,), dt)
        elif isinstance(interaction, SoftSphere):
            what = "soft_sphere"
            if not interaction.alpha > 0:
                raise ValueError(f"cellint: SoftSphere alpha must be positive, got {interaction.alpha}")
            per = interaction.sigma is None
            if per:
                if "radius" not in self._attached:
                    raise ValueError("cellint: SoftSphere(sigma=None) reads the attached 'radius': attach it first")
                reach = 2 * _a.to_float(self._attached["radius"].max()) if n else 0.0
            else:
                reach = float(interaction.sigma)
                if not reach > 0:
                    raise ValueError(f"cellint: SoftSphere sigma must be positive, got {reach}")
            if reach > self.cutoff * (1 + 1e-12):
                raise ValueError(f"cellint: soft spheres reach {reach}, beyond the grid's cutoff {self.cutoff}; make "
                                 "the cutoff at least the largest contact distance")
            p.update(epsilon=interaction.epsilon, sigma=0.0 if per else float(interaction.sigma),
                     alpha=float(interaction.alpha), per_particle=per)
            force, energy = _a.empty(like, (n, dim), dt), _a.empty(like, (n,), dt)
        else:
            raise TypeError(f"cellint: unknown interaction {interaction!r}")
        rep = Report(**self._g.interact(what, strategy, p, _a.arg(force), _a.arg(energy), _a.arg(virial),
                                        _a.arg(scalar)))
        self.last_report = rep
        r = Result(report=rep, force=force, energy=energy, virial=virial)
        if what == "neighbor_count":
            r.count = scalar
        elif what == "density":
            r.density = scalar
        return r

    def neighbor_pairs(self, cutoff: Optional[float] = None, half: bool = True,
                       vectors: bool = False) -> Tuple[Any, Any, Any, Any]:
        """The pairs of particles closer than `cutoff` (default: the grid's), as (i, j, S, d).

        i, j (int64) are indices in build() order; with `half` each pair appears once with i < j,
        else both (i, j) and (j, i). S (int32, (pairs, dim)) is the periodic shift in box lengths,
        so that the pair vector is D = x[j] - x[i] + S * lengths (ASE's "ijS" convention); with
        `vectors=True` D itself is returned in place of S. d is |D|. Pairs are grouped by i in
        ascending order on the GPU and in the grid's cell order on the CPU. d < cutoff holds for every
        distance returned.
        """
        self._check_built("neighbor_pairs")
        c = self.cutoff if cutoff is None else float(cutoff)
        total = self._g.count_pairs(c, bool(half))
        like, dt = self._positions, self.dtype
        i = _a.empty(like, (total,), "int64")
        j = _a.empty(like, (total,), "int64")
        d = _a.empty(like, (total,), dt)
        vec = _a.empty(like, (total, self.dim), dt) if vectors else None
        shift = None if vectors else _a.empty(like, (total, self.dim), "int32")
        self._g.fill_pairs(total, _a.arg(i), _a.arg(j), _a.arg(d), _a.arg(vec), _a.arg(shift))
        return i, j, (vec if vectors else shift), d

    # -- checks --

    def _check_built(self, who: str) -> None:
        if self._positions is None:
            raise ValueError(f"cellint: CellGrid.{who} needs build() first")

    def _check_device(self, x: Any, name: str) -> None:
        dev, idx = _a.device_of(x)
        if dev != self.device or (dev == "cuda" and idx != self._device_id):
            where = "the CPU" if dev == "cpu" else f"cuda:{idx}"
            mine = "the CPU" if self.device == "cpu" else f"cuda:{self._device_id}"
            raise ValueError(f"cellint: {name} is on {where} but the grid computes on {mine}; create the grid with "
                             f"device='{dev if dev == 'cpu' else f'cuda:{idx}'}' or move the array")


def neighbor_pairs(
    positions: Any,
    box: Any,
    cutoff: float,
    periodic: Union[bool, Sequence[bool]] = True,
    half: bool = True,
    vectors: bool = False,
) -> Tuple[Any, Any, Any, Any]:
    """The radius graph: all pairs of particles closer than `cutoff`, as (i, j, S, d).

    Args:
        positions: (N, 2) or (N, 3) array: NumPy (computed on the CPU), or a CuPy array or PyTorch
            tensor on a CUDA GPU (computed there; the results are arrays of the same kind and device).
        box: side lengths (lower corner 0) or a (lo, hi) pair; None with `periodic=False` takes the
            particles' bounding box.
        cutoff: the pair distance limit (pairs with d < cutoff). Periodic axes need a side of at
            least 3 cutoffs.
        periodic: one flag, or one per axis.
        half: each pair once (i < j); False gives both directions, as ASE and most ML codes expect.
        vectors: return the pair vectors D = x[j] - x[i] + S * lengths in place of the shifts S.
    Returns:
        i, j (int64), S (int32, (pairs, dim)) or D, d (the positions' precision: float32 stays float32).
    """
    if not hasattr(positions, "shape"):
        positions = np.asarray(positions, dtype=np.float64)
    if positions.ndim != 2 or positions.shape[1] not in (2, 3):
        raise ValueError(f"cellint: positions must have shape (N, 2) or (N, 3), got {tuple(positions.shape)}")
    dim = positions.shape[1]
    dev, idx = _a.device_of(positions)
    dtype = _a.real_dtype_name(positions)
    x = _a.as_array(positions, dtype)
    if box is None:
        if any(_parse_periodic(periodic, dim)[:dim]):
            raise ValueError("cellint: a periodic box needs its size: give box")
        if not _a.all_finite(x):
            raise ValueError(f"cellint: particle {_a.first_bad(x)} has a NaN or infinite coordinate; fix the input")
        lo, hi = _a.bounds(x) if x.shape[0] else (np.zeros(dim), np.zeros(dim))
        span = np.maximum(hi - lo, cutoff) * (1 + 1e-6) + 1e-6 * cutoff
        box = np.stack([lo, lo + span])
    # the grid of the last call is used again for the same box, cutoff, periodicity, precision and device (its buffers
    # too): a simulation or an analysis calls this once per frame
    key = (_box_key(box), float(cutoff), tuple(_parse_periodic(periodic, dim)), dtype, dev, idx)
    last = getattr(_cache, "grid", None)
    if last is not None and last[0] == key:
        grid = last[1]
    else:
        grid = CellGrid(box, cutoff, periodic=periodic, dtype=dtype, device=dev if dev == "cpu" else f"cuda:{idx}")
        _cache.grid = (key, grid)
    grid.build(x)
    try:
        return grid.neighbor_pairs(half=half, vectors=vectors)
    finally:
        grid._positions = None  # the cached grid keeps no reference to the caller's array


# neighbor_pairs() keeps the grid of its last call, per thread (a grid serves one thread at a time)
_cache = threading.local()


def clear_cache() -> None:
    """Frees the grid (and its buffers) that neighbor_pairs() keeps from its last call in this thread."""
    _cache.grid = None


def _box_key(box: Any) -> Any:
    """A hashable form of a box argument."""
    if isinstance(box, (list, tuple)):
        return tuple(_box_key(b) for b in box)
    if isinstance(box, np.ndarray):
        return (box.shape, box.dtype.str, box.tobytes())
    if hasattr(box, "shape"):  # a GPU array: compared by value on the host
        return _box_key(_a.to_numpy_host(box))
    return float(box)
