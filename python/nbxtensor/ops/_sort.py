"""Sorting along one axis: ``sort`` and ``argsort`` (the Array API's), always stable; and the
binary search of values in a sorted 1-d tensor, ``searchsorted``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from nbxtensor._core import ops as _core

if TYPE_CHECKING:
    from nbxtensor._core.tensor import Tensor


def sort(x: Tensor, axis: int = -1, descending: bool = False, stable: bool = True) -> Tensor:
    """The values sorted along ``axis``. Every sort is stable (``stable=False`` asks for less than is
    given); NaN counts as the largest: last ascending, first descending; -0.0 equals 0.0. A GPU sorts
    lines of at most 4096 elements along ``axis`` and refuses a longer one by name."""
    del stable  # always stable
    return _core.call_one("sort", x, {"axis": int(axis), "descending": bool(descending)})


def argsort(x: Tensor, axis: int = -1, descending: bool = False, stable: bool = True) -> Tensor:
    """The int64 positions that sort the values along ``axis``, as ``sort`` orders them."""
    del stable  # always stable
    return _core.call_one("argsort", x, {"axis": int(axis), "descending": bool(descending)})


def searchsorted(x1: Tensor, x2: Tensor, side: str = "left", sorter: Tensor | None = None) -> Tensor:
    """For each element of ``x2`` (any shape, ``x1``'s dtype), the int64 count of elements of the
    ascending 1-d ``x1`` before it: below it (``side="left"``) or not above it (``"right"``), NaN
    counting as the largest. ``sorter``: int32 or int64 positions that sort ``x1`` (``x1[sorter]`` is searched)."""
    if side not in ("left", "right"):
        raise ValueError(f"searchsorted: side must be 'left' or 'right', got {side!r}")
    if sorter is not None:
        x1 = _core.call("index_select", [x1, sorter], {"axis": 0})[0]
    return _core.call("searchsorted", [x1, x2], {"right": side == "right"})[0]


__all__ = ["sort", "argsort", "searchsorted"]
