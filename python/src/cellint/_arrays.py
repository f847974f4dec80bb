"""Array plumbing: which framework an array belongs to (NumPy, CuPy, PyTorch), and allocation and
conversion in that framework, on its device, without host copies for GPU arrays."""

from __future__ import annotations

from typing import Any, Tuple

import numpy as np


_FRAMEWORK_OF_TYPE: dict = {np.ndarray: "numpy"}


def framework(x: Any) -> str:
    """'torch', 'cupy' or 'numpy' (anything else is converted with numpy.asarray)."""
    t = type(x)
    fw = _FRAMEWORK_OF_TYPE.get(t)
    if fw is None:
        mod = t.__module__.split(".")[0]
        fw = mod if mod in ("torch", "cupy") else "numpy"
        _FRAMEWORK_OF_TYPE[t] = fw
    return fw


def device_of(x: Any) -> Tuple[str, int]:
    """('cpu', 0) or ('cuda', device index)."""
    fw = framework(x)
    if fw == "torch":
        if x.device.type == "cuda":
            return "cuda", x.device.index or 0
        if x.device.type != "cpu":
            raise ValueError(f"cellint: torch tensors on '{x.device.type}' are not supported (cpu or cuda)")
        return "cpu", 0
    if fw == "cupy":
        return "cuda", x.device.id
    return "cpu", 0


def real_dtype_name(x: Any) -> str:
    """'float32' for float32 input, else 'float64' (integers and other floats are converted)."""
    if isinstance(x, np.ndarray):
        return "float32" if x.dtype == np.float32 else "float64"
    return "float32" if str(x.dtype).endswith("float32") else "float64"


def _torch_dtype(name: str):
    import torch

    return {"float32": torch.float32, "float64": torch.float64, "int32": torch.int32, "int64": torch.int64}[name]


def as_array(x: Any, dtype: str, like: Any = None) -> Any:
    """x as a C-contiguous array of `dtype` in its own framework (in `like`'s framework when x is a plain sequence)."""
    fw = framework(x)
    if fw == "numpy" and isinstance(x, np.ndarray) and x.dtype == dtype and x.flags.c_contiguous:
        return x
    if fw == "numpy" and like is not None and framework(like) != "numpy":
        return as_array(from_numpy(np.asarray(x), like), dtype)
    if fw == "torch":
        return x.to(_torch_dtype(dtype)).contiguous()
    if fw == "cupy":
        import cupy

        return cupy.ascontiguousarray(x, dtype=dtype)
    return np.ascontiguousarray(np.asarray(x), dtype=dtype)


def from_numpy(a: np.ndarray, like: Any) -> Any:
    """A NumPy array moved to `like`'s framework and device."""
    fw = framework(like)
    if fw == "torch":
        import torch

        return torch.as_tensor(a, device=like.device)
    if fw == "cupy":
        import cupy

        with like.device:
            return cupy.asarray(a)
    return a


def empty(like: Any, shape: Tuple[int, ...], dtype: str) -> Any:
    """An uninitialised array in `like`'s framework and device."""
    fw = framework(like)
    if fw == "numpy":
        return np.empty(shape, dtype=dtype)
    if fw == "torch":
        import torch

        return torch.empty(shape, dtype=_torch_dtype(dtype), device=like.device)
    if fw == "cupy":
        import cupy

        with like.device:
            return cupy.empty(shape, dtype=dtype)
    return np.empty(shape, dtype=dtype)


def arg(x: Any) -> Any:
    """What the compiled core takes for an array the package made or checked: NumPy arrays as they are, GPU arrays as
    their address (cheaper than a DLPack import), None as None."""
    if x is None or isinstance(x, np.ndarray):
        return x
    fw = framework(x)
    if fw == "torch":
        return x.data_ptr()
    if fw == "cupy":
        return x.data.ptr
    return x


def to_float(x: Any) -> float:
    """A 0-d array or scalar as a Python float."""
    return float(x.item()) if hasattr(x, "item") else float(x)


def first_bad(x: Any) -> int:
    """The row of the first NaN or infinite value."""
    h = to_numpy_host(x)
    bad = ~np.isfinite(h)
    return int(np.argwhere(bad.reshape(len(h), -1).any(axis=1))[0][0])


def first_negative(x: Any) -> int:
    """The index of the first negative value."""
    return int(np.argwhere(to_numpy_host(x) < 0)[0][0])


def all_finite(x: Any) -> bool:
    fw = framework(x)
    if fw == "torch":
        import torch

        return bool(torch.isfinite(x).all())
    if fw == "cupy":
        import cupy

        return bool(cupy.isfinite(x).all())
    return bool(np.isfinite(x).all())


def bounds(x: Any) -> Tuple[np.ndarray, np.ndarray]:
    """Per-axis minimum and maximum of an (N, dim) array, reduced on its own device."""
    if framework(x) == "torch":
        import torch

        lo, hi = torch.amin(x, 0), torch.amax(x, 0)
    else:
        lo, hi = x.min(axis=0), x.max(axis=0)
    return to_numpy_host(lo).astype(np.float64), to_numpy_host(hi).astype(np.float64)


def to_numpy_host(x: Any) -> np.ndarray:
    """A host NumPy copy of any supported array (for small things: boxes, bounds)."""
    fw = framework(x)
    if fw == "torch":
        return x.detach().cpu().numpy()
    if fw == "cupy":
        return x.get()
    return np.asarray(x)
