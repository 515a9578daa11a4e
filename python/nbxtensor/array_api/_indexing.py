"""``take`` and ``take_along_axis``: gathers by the ``index_select`` kernel (negative indices
count from the end, as in indexing)."""

from __future__ import annotations

import math

from nbxtensor import ops
from nbxtensor.tensor import Tensor

from ._manipulation import _axis, broadcast_shapes, moveaxis, reshape


def take(x: Tensor, indices: Tensor, /, *, axis: int | None = None) -> Tensor:
    """The elements of ``x`` at the 1-d integer ``indices`` along ``axis`` (optional for a
    1-d ``x``)."""
    if axis is None:
        if x.ndim != 1:
            raise ValueError(f"take: axis is required for a tensor of {x.ndim} dims")
        axis = 0
    at = _axis(axis, x.ndim, "take")
    return x[(*([slice(None)] * at), indices)]


def take_along_axis(x: Tensor, indices: Tensor, /, *, axis: int = -1) -> Tensor:
    """The elements of ``x`` at ``indices`` (of x's number of dims; the other dims broadcast)
    along ``axis``: one gather of the flattened tensor at computed flat positions."""
    at = _axis(axis, x.ndim, "take_along_axis")
    if indices.ndim != x.ndim:
        raise ValueError(f"take_along_axis: indices of {indices.ndim} dims for a tensor of {x.ndim}")
    n = x.shape[at]
    outer = broadcast_shapes(tuple(d for i, d in enumerate(x.shape) if i != at),
                             tuple(d for i, d in enumerate(indices.shape) if i != at))
    k = indices.shape[at]
    xs = list(outer)
    xs.insert(at, n)
    ks = list(outer)
    ks.insert(at, k)
    rows = moveaxis(x.broadcast_to(tuple(xs)), at, -1)
    picks = moveaxis(indices.broadcast_to(tuple(ks)), at, -1)
    count = math.prod(outer)
    wrapped = ops.where(ops.lt(picks, 0), ops.add(picks, n), picks).astype("int64", copy=False)
    base = ops.iota(count, start=0, step=n, dtype="int64", device=x.device).reshape(*outer, 1)
    flat = reshape(ops.add(wrapped, base), (-1,))
    out = ops.index_select(reshape(rows, (-1,)), flat, 0).reshape(*outer, k)
    return moveaxis(out, -1, at)
