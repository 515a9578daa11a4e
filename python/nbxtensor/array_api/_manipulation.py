"""Manipulation functions: views where a layout serves (reshape, permute, flip by a negative
stride, broadcast), the ``concat`` and ``copy`` kernels where data moves."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any
import numpy as np

from nbxtensor import ops
from nbxtensor import tensor as _tensor
from nbxtensor.tensor import Tensor

from . import _dtypes


def _axis(axis: int, ndim: int, what: str) -> int:
    """``axis`` counted from 0 (negatives from the end); out of range is an IndexError."""
    if not -ndim <= axis < ndim:
        raise IndexError(f"{what}: axis {axis} is out of range for {ndim} dims")
    return axis % ndim


def _axes(axis: int | Sequence[int] | None, ndim: int, what: str) -> list[int]:
    if axis is None:
        return list(range(ndim))
    axes = [axis] if isinstance(axis, int) else list(axis)
    out = [_axis(a, ndim, what) for a in axes]
    if len(set(out)) != len(out):
        raise ValueError(f"{what}: repeated axes {axis}")
    return out


def reshape(x: Tensor, /, shape: Sequence[int], *, copy: bool | None = None) -> Tensor:
    """``x`` in another shape (one -1 inferred): a view when the layout allows, else a copy;
    ``copy=False`` refuses the copy, ``copy=True`` always copies."""
    shape = tuple(int(d) for d in shape)
    if copy:
        return x.copy().reshape(*shape)
    try:
        return x.reshape(*shape)
    except ValueError:
        if copy is False:
            raise ValueError(f"reshape: a {x.shape} view with strides {x.strides} cannot be seen as {shape} without a copy") from None
        return x.copy().reshape(*shape)


def permute_dims(x: Tensor, /, axes: Sequence[int]) -> Tensor:
    """The dims of ``x`` in the order ``axes`` (a view)."""
    return x.permute(*axes)


def matrix_transpose(x: Tensor, /) -> Tensor:
    """The last two dims swapped (a view)."""
    return x.mT


def expand_dims(x: Tensor, /, axis: int = 0) -> Tensor:
    """A dim of extent 1 inserted at ``axis`` (in ``[-ndim - 1, ndim]``), a view."""
    return x.unsqueeze(_axis(axis, x.ndim + 1, "expand_dims"))


def squeeze(x: Tensor, /, axis: int | Sequence[int]) -> Tensor:
    """The dims ``axis`` (each of extent 1, else a ValueError) removed, a view."""
    axes = _axes(axis, x.ndim, "squeeze")
    for a in axes:
        if x.shape[a] != 1:
            raise ValueError(f"squeeze: dim {a} has extent {x.shape[a]}, not 1")
    for a in sorted(axes, reverse=True):
        x = x.squeeze(a)
    return x


def flip(x: Tensor, /, *, axis: int | Sequence[int] | None = None) -> Tensor:
    """The order of the elements along ``axis`` (all dims when None) reversed: a view with
    negative strides."""
    axes = set(_axes(axis, x.ndim, "flip"))
    return x[tuple(slice(None, None, -1) if d in axes else slice(None) for d in range(x.ndim))]


def moveaxis(x: Tensor, source: int | Sequence[int], destination: int | Sequence[int], /) -> Tensor:
    """The dims ``source`` moved to ``destination``, the others in order (a view)."""
    src = _axes(source, x.ndim, "moveaxis")
    dst = _axes(destination, x.ndim, "moveaxis")
    if len(src) != len(dst):
        raise ValueError("moveaxis: source and destination must have as many axes")
    order = [d for d in range(x.ndim) if d not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return x.permute(*order)


def broadcast_to(x: Tensor, /, shape: Sequence[int]) -> Tensor:
    """``x`` broadcast to ``shape`` (stride 0, no copy)."""
    return x.broadcast_to(tuple(shape))


def broadcast_shapes(*shapes: Sequence[int]) -> tuple[int, ...]:
    """The shape ``shapes`` broadcast to (numpy's rule); a mismatch is a ValueError."""
    ndim = max((len(s) for s in shapes), default=0)
    out = [1] * ndim
    for s in shapes:
        for i, d in enumerate(s, ndim - len(s)):
            if d != 1 and out[i] not in (1, d):
                raise ValueError(f"shapes {tuple(shapes)} do not broadcast")
            out[i] = d if d != 1 else out[i]
    return tuple(out)


def broadcast_arrays(*arrays: Tensor) -> list[Tensor]:
    """The arrays broadcast against each other (views)."""
    shape = broadcast_shapes(*(a.shape for a in arrays))
    return [a.broadcast_to(shape) for a in arrays]


def _common(arrays: Sequence[Tensor]) -> list[Tensor]:
    """The arrays in their promoted dtype (the cast kernel where one differs)."""
    dtype = _dtypes.result_type(*arrays).name
    return [a if a.dtype == dtype else a.astype(dtype) for a in arrays]


def concat(arrays: Sequence[Tensor], /, *, axis: int | None = 0) -> Tensor:
    """The arrays joined along ``axis`` (None: flattened first), promoted to one dtype."""
    arrays = _common(list(arrays))
    if axis is None:
        return ops.concat([reshape(a, (-1,)) for a in arrays], axis=0)
    return ops.concat(arrays, axis=_axis(axis, arrays[0].ndim, "concat"))


def stack(arrays: Sequence[Tensor], /, *, axis: int = 0) -> Tensor:
    """The arrays (of one shape) joined along a new dim ``axis``."""
    arrays = _common(list(arrays))
    at = _axis(axis, arrays[0].ndim + 1, "stack")
    return ops.concat([a.unsqueeze(at) for a in arrays], axis=at)


def unstack(x: Tensor, /, *, axis: int = 0) -> tuple[Tensor, ...]:
    """The slices of ``x`` along ``axis`` (views)."""
    at = _axis(axis, x.ndim, "unstack")
    lead = (slice(None),) * at
    return tuple(x[lead + (i,)] for i in range(x.shape[at]))


def roll(x: Tensor, /, shift: int | Sequence[int], *, axis: int | Sequence[int] | None = None) -> Tensor:
    """The elements shifted by ``shift`` along ``axis`` (None: over the flattened tensor,
    then reshaped), those pushed past the end coming back at the start."""
    if axis is None:
        return roll(reshape(x, (-1,)), shift, axis=0).reshape(*x.shape)
    shifts = [shift] if isinstance(shift, int) else list(shift)
    axes = [axis] if isinstance(axis, int) else list(axis)
    if len(shifts) == 1 and len(axes) > 1:
        shifts = shifts * len(axes)
    if len(shifts) != len(axes):
        raise ValueError("roll: shift and axis must have as many entries")
    out = x
    for s, a in zip(shifts, axes):
        a = _axis(a, x.ndim, "roll")
        n = x.shape[a]
        if n == 0:
            continue
        s %= n
        if s == 0:
            continue
        lead = (slice(None),) * a
        out = ops.concat([out[lead + (slice(n - s, None),)], out[lead + (slice(0, n - s),)]], axis=a)
    return out if out is not x else x.copy()


def tile(x: Tensor, repetitions: Sequence[int], /) -> Tensor:
    """``x`` repeated ``repetitions[d]`` times along each dim (dims padded with 1s in front)."""
    reps = tuple(int(r) for r in repetitions)
    ndim = max(len(reps), x.ndim)
    reps = (1,) * (ndim - len(reps)) + reps
    shape = (1,) * (ndim - x.ndim) + tuple(x.shape)
    interleaved = [d for s in shape for d in (1, s)]
    wide = [d for r, s in zip(reps, shape) for d in (r, s)]
    out = x.reshape(*interleaved).broadcast_to(tuple(wide)).copy()
    return out.reshape(*(r * s for r, s in zip(reps, shape)))


def repeat(x: Tensor, repeats: int | Tensor, /, *, axis: int | None = None) -> Tensor:
    """Each element repeated ``repeats`` times along ``axis`` (None: the flattened tensor);
    ``repeats`` an int or a 1-d integer array (its values decide the shape, so they are read
    on the host), gathered by ``index_select``."""
    if axis is None:
        x, axis = reshape(x, (-1,)), 0
    at = _axis(axis, x.ndim, "repeat")
    n = x.shape[at]
    if isinstance(repeats, int):
        counts = [repeats] * n
    else:
        listed: list[Any] = repeats.tolist() if repeats.ndim else [repeats.item()] * n
        counts = [int(c) for c in listed]
        if len(counts) == 1 and n != 1:
            counts = counts * n
    if len(counts) != n or any(c < 0 for c in counts):
        raise ValueError(f"repeat: {len(counts)} counts (each ≥ 0) for an axis of {n}")
    # the gather's indices, made on the host from the counts read there
    index = _tensor.asarray(np.repeat(np.arange(n, dtype=np.int64), counts))
    if math.prod(index.shape) == 0:
        shape = list(x.shape)
        shape[at] = 0
        return x[tuple(slice(0, 0) if d == at else slice(None) for d in range(x.ndim))].reshape(*shape)
    return ops.index_select(x, index.to(x.device), at)


