"""Creation functions: every array is made by a kernel (a fill is a 0-d value broadcast and
copied, a range is the ``iota`` kernel); host objects (lists, numpy arrays, scalars) are
read by ``nbxtensor.tensor.asarray``."""

from __future__ import annotations

import builtins
import math
from collections.abc import Sequence
from typing import Any

from nbxtensor import ops
from nbxtensor import tensor as _tensor
from nbxtensor.tensor import Tensor

from . import _dtypes

DEFAULT_FLOAT = "float64"
DEFAULT_COMPLEX = "complex128"
DEFAULT_INT = "int64"


def _shape(shape: int | Sequence[int]) -> tuple[int, ...]:
    return (int(shape),) if isinstance(shape, int) else tuple(int(d) for d in shape)


def _scalar_dtype(value: Any) -> str:
    """The default dtype of a Python scalar: bool, int64, float64, complex128."""
    if isinstance(value, builtins.bool):
        return "bool"
    if isinstance(value, int):
        return DEFAULT_INT
    if isinstance(value, float):
        return DEFAULT_FLOAT
    if isinstance(value, complex):
        return DEFAULT_COMPLEX
    raise TypeError(f"a fill value is a bool, int, float or complex, not {type(value).__name__}")


def _moved(t: Tensor, device: str | None) -> Tensor:
    return t if device is None or device == t.device else t.to(device)


def asarray(
    obj: Any, /, *, dtype: Any = None, device: str | None = None, copy: builtins.bool | None = None
) -> Tensor:
    """A tensor of ``obj`` (a tensor, a DLPack producer, a numpy array, a nested sequence or
    a scalar). ``copy=True`` always copies; ``copy=False`` never does, refusing (ValueError)
    when a copy is needed; ``None`` copies only when it must."""
    name = None if dtype is None else _dtypes.name_of(dtype, "asarray")
    if copy is False:
        shares = hasattr(obj, "__dlpack__") and (name is None or getattr(obj, "dtype", None) == name)
        if not shares:
            raise ValueError("asarray: copy=False, but the object must be copied to become a tensor of that dtype")
        out = _tensor.from_dlpack(obj, copy=False)
        if device is not None and device != out.device:
            raise ValueError(f"asarray: copy=False, but the object is on {out.device}, not {device}")
        return out
    if isinstance(obj, (builtins.bool, int, float, complex)) and name is None:
        name = _scalar_dtype(obj)
    out = _moved(_tensor.asarray(obj, dtype=name), device)
    # memory through DLPack may be shared: a copy asked for is made
    if copy and hasattr(obj, "__dlpack__"):
        out = out.copy()
    return out


def full(
    shape: int | Sequence[int], fill_value: Any, *, dtype: Any = None, device: str | None = None
) -> Tensor:
    """A tensor of ``shape`` holding ``fill_value`` (dtype: ``dtype``, else the value's
    default), filled by the copy kernel from a 0-d value."""
    name = _scalar_dtype(fill_value) if dtype is None else _dtypes.name_of(dtype, "full")
    if isinstance(fill_value, Tensor):
        value = fill_value.astype(name, copy=False)
    else:
        value = _tensor.asarray(fill_value, dtype=name)
    value = _moved(value, device)
    return value.broadcast_to(_shape(shape)).copy()


def zeros(shape: int | Sequence[int], *, dtype: Any = None, device: str | None = None) -> Tensor:
    """Zeros of ``shape`` (float64 unless ``dtype``)."""
    return full(shape, 0, dtype=DEFAULT_FLOAT if dtype is None else dtype, device=device)


def ones(shape: int | Sequence[int], *, dtype: Any = None, device: str | None = None) -> Tensor:
    """Ones of ``shape`` (float64 unless ``dtype``)."""
    return full(shape, 1, dtype=DEFAULT_FLOAT if dtype is None else dtype, device=device)


def empty(shape: int | Sequence[int], *, dtype: Any = None, device: str | None = None) -> Tensor:
    """A tensor of ``shape`` to be written (zeros: the library never hands out stale memory)."""
    return zeros(shape, dtype=dtype, device=device)


def full_like(x: Tensor, /, fill_value: Any, *, dtype: Any = None, device: str | None = None) -> Tensor:
    """``full`` of ``x``'s shape, dtype and device unless given."""
    return full(x.shape, fill_value, dtype=x.dtype if dtype is None else dtype, device=x.device if device is None else device)


def zeros_like(x: Tensor, /, *, dtype: Any = None, device: str | None = None) -> Tensor:
    """Zeros of ``x``'s shape, dtype and device unless given."""
    return full_like(x, 0, dtype=dtype, device=device)


def ones_like(x: Tensor, /, *, dtype: Any = None, device: str | None = None) -> Tensor:
    """Ones of ``x``'s shape, dtype and device unless given."""
    return full_like(x, 1, dtype=dtype, device=device)


def empty_like(x: Tensor, /, *, dtype: Any = None, device: str | None = None) -> Tensor:
    """A tensor of ``x``'s shape to be written (zeros)."""
    return zeros_like(x, dtype=dtype, device=device)


def arange(
    start: int | float,
    /,
    stop: int | float | None = None,
    step: int | float = 1,
    *,
    dtype: Any = None,
    device: str | None = None,
) -> Tensor:
    """``start, start + step, …`` up to ``stop`` (excluded), by the ``iota`` kernel; one
    argument is the stop. The dtype is ``dtype``, else int64 for ints, float64 otherwise."""
    if stop is None:
        start, stop = 0, start
    if step == 0:
        raise ValueError("arange: step must not be 0")
    ints = all(isinstance(v, int) for v in (start, stop, step))
    name = (DEFAULT_INT if ints else DEFAULT_FLOAT) if dtype is None else _dtypes.name_of(dtype, "arange")
    n = builtins.max(0, math.ceil((stop - start) / step))
    return ops.iota(n, start=start, step=step, dtype=name, device=device)


def linspace(
    start: int | float,
    stop: int | float,
    /,
    num: int,
    *,
    dtype: Any = None,
    device: str | None = None,
    endpoint: builtins.bool = True,
) -> Tensor:
    """``num`` evenly spaced values from ``start`` to ``stop`` (included unless
    ``endpoint=False``), computed in float64 by the ``iota`` kernel and rounded once."""
    name = DEFAULT_FLOAT if dtype is None else _dtypes.name_of(dtype, "linspace")
    if num < 0:
        raise ValueError(f"linspace: num must be ≥ 0, got {num}")
    div = (num - 1) if endpoint else num
    step = (stop - start) / div if div > 0 else 0.0
    out = ops.iota(num, start=float(start), step=float(step), dtype="float64", device=device)
    if endpoint and num > 1:
        out[num - 1] = float(stop)
    return out if name == "float64" else out.astype(name)


def _grid(n_rows: int, n_cols: int, device: str | None) -> tuple[Tensor, Tensor]:
    """The row and column numbers of an ``n_rows × n_cols`` grid (int64, broadcastable)."""
    rows = ops.iota(n_rows, start=0, step=1, dtype="int64", device=device).reshape(n_rows, 1)
    cols = ops.iota(n_cols, start=0, step=1, dtype="int64", device=device).reshape(1, n_cols)
    return rows, cols


def eye(
    n_rows: int, n_cols: int | None = None, /, *, k: int = 0, dtype: Any = None, device: str | None = None
) -> Tensor:
    """Ones on the ``k``-th diagonal, zeros elsewhere (float64 unless ``dtype``)."""
    name = DEFAULT_FLOAT if dtype is None else _dtypes.name_of(dtype, "eye")
    rows, cols = _grid(n_rows, n_rows if n_cols is None else n_cols, device)
    return ops.cast(ops.eq(ops.add(rows, k), cols), name)


def _triangle(x: Tensor, keep: Tensor) -> Tensor:
    zero = False if x.dtype == "bool" else 0
    return ops.where(keep, x, zero).astype(x.dtype, copy=False)


def tril(x: Tensor, /, *, k: int = 0) -> Tensor:
    """``x`` with the elements above the ``k``-th diagonal of its last two dims zeroed."""
    rows, cols = _grid(x.shape[-2], x.shape[-1], x.device)
    return _triangle(x, ops.ge(ops.add(rows, k), cols))


def triu(x: Tensor, /, *, k: int = 0) -> Tensor:
    """``x`` with the elements below the ``k``-th diagonal of its last two dims zeroed."""
    rows, cols = _grid(x.shape[-2], x.shape[-1], x.device)
    return _triangle(x, ops.le(ops.add(rows, k), cols))


def meshgrid(*arrays: Tensor, indexing: str = "xy") -> list[Tensor]:
    """Coordinate grids of 1-d arrays (``"xy"``: the first two dims swapped, as numpy)."""
    if indexing not in ("xy", "ij"):
        raise ValueError(f"meshgrid: indexing is 'xy' or 'ij', not {indexing!r}")
    sizes = [a.shape[0] if a.ndim == 1 else math.prod(a.shape) for a in arrays]
    if indexing == "xy" and len(arrays) > 1:
        sizes[0], sizes[1] = sizes[1], sizes[0]
    out = []
    for i, a in enumerate(arrays):
        at = i
        if indexing == "xy" and len(arrays) > 1 and i < 2:
            at = 1 - i
        shape = [1] * len(arrays)
        shape[at] = sizes[at]
        out.append(a.reshape(-1).reshape(*shape).broadcast_to(tuple(sizes)).copy())
    return out


def from_dlpack(x: Any, /, *, device: str | None = None, copy: builtins.bool | None = None) -> Tensor:
    """A tensor sharing the memory of a DLPack producer (copied when ``copy`` or another
    ``device`` asks)."""
    return _tensor.from_dlpack(x, device=device, copy=copy)
