"""Set functions, over the sort kernels: the flattened tensor is sorted (stably), the start of
each run of equal values marked, and the runs counted by a scan. A NaN differs from every
value, itself included, so each NaN is a value of its own (the standard's rule)."""

from __future__ import annotations

from typing import NamedTuple

from nbxtensor import ops
from nbxtensor.tensor import Tensor

from ._manipulation import concat, reshape


class UniqueAllResult(NamedTuple):
    """``unique_all``'s four arrays."""

    values: Tensor
    indices: Tensor
    inverse_indices: Tensor
    counts: Tensor


class UniqueCountsResult(NamedTuple):
    """``unique_counts``'s two arrays."""

    values: Tensor
    counts: Tensor


class UniqueInverseResult(NamedTuple):
    """``unique_inverse``'s two arrays."""

    values: Tensor
    inverse_indices: Tensor


def _runs(x: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """The flattened ``x``'s stable sort order, its sorted values, and where runs start."""
    flat = reshape(x, (-1,))
    # bools sort as their bytes (False before True)
    order = ops.argsort(ops.cast(flat, "uint8") if flat.dtype == "bool" else flat, 0, False)
    ordered = ops.index_select(flat, order, 0)
    n = flat.shape[0]
    if n == 0:
        return order, ordered, ops.cast(ordered, "bool")
    first = ops.logical_or(ops.cast(ordered[:1], "bool"), True)
    later = ops.ne(ordered[1:], ordered[:-1])
    return order, ordered, concat([first, later], axis=0)


def _counts(starts: Tensor, n: int) -> tuple[Tensor, Tensor]:
    """The positions where runs start (int64) and each run's length."""
    positions = ops.iota(n, start=0, step=1, dtype="int64", device=starts.device)[starts]
    ends = concat([positions[1:], ops.iota(1, start=n, step=1, dtype="int64", device=starts.device)], axis=0)
    return positions, ops.sub(ends, positions)


def unique_values(x: Tensor, /) -> Tensor:
    """The distinct values of ``x``, sorted (each NaN kept)."""
    _, ordered, starts = _runs(x)
    return ordered[starts]


def unique_counts(x: Tensor, /) -> UniqueCountsResult:
    """The distinct values and how often each occurs."""
    _, ordered, starts = _runs(x)
    _, counts = _counts(starts, ordered.shape[0])
    return UniqueCountsResult(ordered[starts], counts)


def _inverse(x: Tensor, order: Tensor, starts: Tensor) -> Tensor:
    """For each element of ``x``, the index of its value among the distinct ones (x's shape)."""
    group = ops.sub(ops.cumulative_sum(ops.cast(starts, "int64"), 0, False), 1)
    rank = ops.argsort(order, 0, False)
    return ops.index_select(group, rank, 0).reshape(*x.shape)


def unique_inverse(x: Tensor, /) -> UniqueInverseResult:
    """The distinct values and, for each element, the index of its value among them."""
    order, ordered, starts = _runs(x)
    return UniqueInverseResult(ordered[starts], _inverse(x, order, starts))


def unique_all(x: Tensor, /) -> UniqueAllResult:
    """The distinct values, the index of each one's first occurrence, the inverse indices and
    the counts."""
    order, ordered, starts = _runs(x)
    positions, counts = _counts(starts, ordered.shape[0])
    first = ops.index_select(order, positions, 0)
    return UniqueAllResult(ordered[starts], first, _inverse(x, order, starts), counts)
