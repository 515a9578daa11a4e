"""Tensors made from attributes alone: ``iota``, what ``arange``, ``linspace``, ``eye``,
``tril`` and ``triu`` are built from."""

from __future__ import annotations

from typing import TYPE_CHECKING

from nbxtensor._core import ops as _core

if TYPE_CHECKING:
    from nbxtensor._core.tensor import Tensor
    from nbxtensor._typing import DTypeLike


def iota(
    n: int, start: int | float = 0, step: int | float = 1, *, dtype: DTypeLike | None = None, device: str | None = None
) -> Tensor:
    """The 1-d tensor ``start + step * i`` for ``i`` in ``range(n)``, made on ``device`` (None: the host).
    Floats are computed in float64 and rounded once (numpy's arange); integers wrap in 64 bits and take
    integer ``start`` and ``step`` only. ``dtype`` None: int64 when both are ints, else float32."""
    if dtype is None:
        dtype = "int64" if isinstance(start, int) and isinstance(step, int) else "float32"
    return _core.iota(int(n), start, step, dtype, device)


__all__ = ["iota"]
