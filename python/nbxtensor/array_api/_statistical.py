"""Statistical, searching, sorting, set and utility functions over the reduction, scan, sort
and selection kernels."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from nbxtensor import ops
from nbxtensor.tensor import Tensor

from . import _dtypes
from ._manipulation import _axes, _axis, reshape

Axis = int | Sequence[int] | None


def _reduced(op: Callable[[Tensor, list[int], bool], Tensor], x: Tensor, axis: Axis, keepdims: bool) -> Tensor:
    axes = _axes(axis, x.ndim, op.__name__)
    return op(x, axes, keepdims)


def sum(x: Tensor, /, *, axis: Axis = None, dtype: Any = None, keepdims: bool = False) -> Tensor:  # noqa: A001
    """The sum over ``axis`` (floats keep their dtype, signed integers sum to int64, unsigned
    to uint64, bool to int64); ``dtype`` converts the input first (floats) or the result."""
    if dtype is not None:
        name = _dtypes.name_of(dtype, "sum")
        if _dtypes.kind(name) == "float":
            x = x.astype(name, copy=False)
        return _reduced(ops.sum, x, axis, keepdims).astype(name, copy=False)
    return _reduced(ops.sum, x, axis, keepdims)


def prod(x: Tensor, /, *, axis: Axis = None, dtype: Any = None, keepdims: bool = False) -> Tensor:
    """The product over ``axis`` (the dtypes as ``sum``)."""
    if dtype is not None:
        name = _dtypes.name_of(dtype, "prod")
        if _dtypes.kind(name) == "float":
            x = x.astype(name, copy=False)
        return _reduced(ops.prod, x, axis, keepdims).astype(name, copy=False)
    return _reduced(ops.prod, x, axis, keepdims)


def max(x: Tensor, /, *, axis: Axis = None, keepdims: bool = False) -> Tensor:  # noqa: A001
    """The maximum over ``axis`` (NaN when one is NaN)."""
    return _reduced(ops.max, x, axis, keepdims)


def min(x: Tensor, /, *, axis: Axis = None, keepdims: bool = False) -> Tensor:  # noqa: A001
    """The minimum over ``axis`` (NaN when one is NaN)."""
    return _reduced(ops.min, x, axis, keepdims)


def mean(x: Tensor, /, *, axis: Axis = None, keepdims: bool = False) -> Tensor:
    """The mean over ``axis`` (accumulated in float64, in x's float dtype)."""
    return _reduced(ops.mean, x, axis, keepdims)


def var(x: Tensor, /, *, axis: Axis = None, correction: int | float = 0.0, keepdims: bool = False) -> Tensor:
    """The variance over ``axis``: the squared deviations from the mean summed and divided by
    ``N - correction``."""
    axes = _axes(axis, x.ndim, "var")
    n = math.prod(x.shape[a] for a in axes)
    centred = ops.sub(x, ops.mean(x, axes, True))
    total = ops.sum(ops.mul(centred, centred), axes, keepdims)
    return ops.div(total, n - correction).astype(x.dtype, copy=False)


def std(x: Tensor, /, *, axis: Axis = None, correction: int | float = 0.0, keepdims: bool = False) -> Tensor:
    """The standard deviation: the square root of ``var``."""
    return ops.sqrt(var(x, axis=axis, correction=correction, keepdims=keepdims))


def cumulative_sum(
    x: Tensor, /, *, axis: int | None = None, dtype: Any = None, include_initial: bool = False
) -> Tensor:
    """Running sums along ``axis`` (optional for a 1-d tensor), with a leading 0 when
    ``include_initial``; dtypes as ``sum``."""
    if axis is None:
        if x.ndim != 1:
            raise ValueError(f"cumulative_sum: axis is required for a tensor of {x.ndim} dims")
        axis = 0
    out = ops.cumulative_sum(x, _axis(axis, x.ndim, "cumulative_sum"), include_initial)
    return out if dtype is None else out.astype(_dtypes.name_of(dtype, "cumulative_sum"), copy=False)


def cumulative_prod(
    x: Tensor, /, *, axis: int | None = None, dtype: Any = None, include_initial: bool = False
) -> Tensor:
    """Running products along ``axis``, with a leading 1 when ``include_initial``."""
    if axis is None:
        if x.ndim != 1:
            raise ValueError(f"cumulative_prod: axis is required for a tensor of {x.ndim} dims")
        axis = 0
    out = ops.cumulative_prod(x, _axis(axis, x.ndim, "cumulative_prod"), include_initial)
    return out if dtype is None else out.astype(_dtypes.name_of(dtype, "cumulative_prod"), copy=False)


def _truth(x: Tensor) -> Tensor:
    """``x`` as the reductions read it: a complex element is true when either part is non-zero
    (the reduction kernels take the real dtypes and bool)."""
    return ops.ne(x, 0) if _dtypes.kind(x.dtype) == "complex" else x


def all(x: Tensor, /, *, axis: Axis = None, keepdims: bool = False) -> Tensor:  # noqa: A001
    """Whether every element along ``axis`` is true (non-zero)."""
    return _reduced(ops.all, _truth(x), axis, keepdims)


def any(x: Tensor, /, *, axis: Axis = None, keepdims: bool = False) -> Tensor:  # noqa: A001
    """Whether some element along ``axis`` is true (non-zero)."""
    return _reduced(ops.any, _truth(x), axis, keepdims)


def diff(
    x: Tensor, /, *, axis: int = -1, n: int = 1, prepend: Tensor | None = None, append: Tensor | None = None
) -> Tensor:
    """The ``n``-th differences along ``axis`` (after joining ``prepend`` and ``append``)."""
    from ._manipulation import concat

    at = _axis(axis, x.ndim, "diff")
    if prepend is not None or append is not None:
        x = concat([a for a in (prepend, x, append) if a is not None], axis=at)
    lead = (slice(None),) * at
    for _ in range(n):
        later, earlier = x[lead + (slice(1, None),)], x[lead + (slice(None, -1),)]
        x = ops.ne(later, earlier) if x.dtype == "bool" else ops.sub(later, earlier)
    return x


def _flat_axis(x: Tensor, axis: int | None) -> tuple[Tensor, int]:
    return (reshape(x, (-1,)), 0) if axis is None else (x, _axis(axis, x.ndim, "argmax"))


def argmax(x: Tensor, /, *, axis: int | None = None, keepdims: bool = False) -> Tensor:
    """The int64 index of the first maximum along ``axis`` (None: of the flattened tensor)."""
    return x.argmax(axis=axis, keepdims=keepdims)


def argmin(x: Tensor, /, *, axis: int | None = None, keepdims: bool = False) -> Tensor:
    """The int64 index of the first minimum along ``axis`` (None: of the flattened tensor)."""
    flat, at = _flat_axis(x, axis)
    out = ops.argmin(flat, at, keepdims and axis is not None)
    return out.reshape(*([1] * x.ndim)) if keepdims and axis is None else out


def count_nonzero(x: Tensor, /, *, axis: Axis = None, keepdims: bool = False) -> Tensor:
    """The number of non-zero elements along ``axis`` (int64; a complex element is non-zero
    when either part is)."""
    return ops.sum(ops.cast(ops.ne(x, 0), "int64"), _axes(axis, x.ndim, "count_nonzero"), keepdims)


def where(condition: Tensor, x1: Any, x2: Any, /) -> Tensor:
    """``x1`` where ``condition`` holds, else ``x2`` (broadcast; scalars allowed)."""
    return ops.where(condition, x1, x2)


def nonzero(x: Tensor, /) -> tuple[Tensor, ...]:
    """The indices of the non-zero elements, one int64 array per dim, in row-major order
    (their count decides the shape: read on the host, as a mask's)."""
    if x.ndim == 0:
        raise ValueError("nonzero: a 0-d tensor has no indices (the standard leaves it out)")
    n = math.prod(x.shape)
    flat = ops.iota(n, start=0, step=1, dtype="int64", device=x.device)
    picked = flat[reshape(ops.cast(_truth(x), "bool"), (-1,))]
    out = []
    stride = n
    for extent in x.shape:
        stride //= extent
        out.append(ops.remainder(ops.floor_divide(picked, stride), extent))
    return tuple(out)


def searchsorted(x1: Tensor, x2: Tensor, /, *, side: str = "left", sorter: Tensor | None = None) -> Tensor:
    """For each element of ``x2``, where it would go in the sorted 1-d ``x1`` (``side``:
    before equal elements, "left", or after, "right"); int64."""
    if side not in ("left", "right"):
        raise ValueError(f"searchsorted: side is 'left' or 'right', not {side!r}")
    if sorter is not None:
        x1 = ops.index_select(x1, sorter, 0)
    return ops.searchsorted(x1, x2, side)


def sort(x: Tensor, /, *, axis: int = -1, descending: bool = False, stable: bool = True) -> Tensor:
    """The elements sorted along ``axis`` (NaN last; always stable)."""
    return ops.sort(x, _axis(axis, x.ndim, "sort"), descending)


def argsort(x: Tensor, /, *, axis: int = -1, descending: bool = False, stable: bool = True) -> Tensor:
    """The int64 indices that sort ``x`` along ``axis`` (stable: equal elements keep their order)."""
    return ops.argsort(x, _axis(axis, x.ndim, "argsort"), descending)
