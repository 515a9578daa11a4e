"""The standard's ``linalg`` extension, as far as the library's kernels reach: products,
norms, diagonals, traces, outer and cross products. The factorizations and solvers
(cholesky, det, eigh, inv, qr, slogdet, solve, svd and what needs them) have no kernels yet
and are left out (docs/ARRAY_API.md)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from nbxtensor import ops
from nbxtensor.tensor import Tensor

from ._linalg import matmul, tensordot, vecdot
from ._manipulation import _axes, _axis, _common, broadcast_arrays, matrix_transpose, moveaxis, reshape
from ._statistical import max as _max
from ._statistical import min as _min
from ._statistical import sum as _sum


def vector_norm(
    x: Tensor, /, *, axis: int | Sequence[int] | None = None, keepdims: bool = False, ord: int | float = 2
) -> Tensor:
    """The ``ord``-norm of the vectors along ``axis`` (None: the flattened tensor): inf and
    -inf are the largest and smallest magnitude, 0 the count of non-zeros, else
    ``sum(|x|**ord) ** (1/ord)``."""
    axes = _axes(axis, x.ndim, "vector_norm")
    magnitude = ops.abs(x)
    if ord == math.inf:
        out = _max(magnitude, axis=tuple(axes), keepdims=keepdims)
    elif ord == -math.inf:
        out = _min(magnitude, axis=tuple(axes), keepdims=keepdims)
    elif ord == 0:
        out = _sum(ops.cast(ops.ne(x, 0), x.dtype), axis=tuple(axes), keepdims=keepdims)
    elif ord == 1:
        out = _sum(magnitude, axis=tuple(axes), keepdims=keepdims)
    elif ord == 2:
        out = ops.sqrt(_sum(ops.mul(magnitude, magnitude), axis=tuple(axes), keepdims=keepdims))
    else:
        out = ops.pow(_sum(ops.pow(magnitude, ord), axis=tuple(axes), keepdims=keepdims), 1.0 / ord)
    return out.astype(x.dtype, copy=False)


def matrix_norm(x: Tensor, /, *, keepdims: bool = False, ord: Any = "fro") -> Tensor:
    """The Frobenius norm (``"fro"``), or the largest (``1``, ``inf``) / smallest (``-1``,
    ``-inf``) column or row sum of magnitudes, of the matrices in the last two dims. The
    nuclear and spectral norms need singular values (not yet here)."""
    magnitude = ops.abs(x)
    if ord == "fro":
        out = ops.sqrt(_sum(ops.mul(magnitude, magnitude), axis=(-2, -1), keepdims=keepdims))
    elif ord in (1, -1, math.inf, -math.inf):
        along = -2 if ord in (1, -1) else -1
        sums = _sum(magnitude, axis=along, keepdims=True)
        pick = _max if ord in (1, math.inf) else _min
        out = pick(sums, axis=(-2, -1), keepdims=keepdims)
    else:
        raise ValueError(f"matrix_norm: ord={ord!r} needs singular values, which have no kernel yet")
    return out.astype(x.dtype, copy=False)


def diagonal(x: Tensor, /, *, offset: int = 0) -> Tensor:
    """The ``offset``-th diagonal of the matrices in the last two dims (gathered)."""
    rows, cols = x.shape[-2], x.shape[-1]
    start_row, start_col = (0, offset) if offset >= 0 else (-offset, 0)
    n = max(0, min(rows - start_row, cols - start_col))
    lead = x.shape[:-2]
    flat = reshape(x, (*lead, rows * cols))
    first = start_row * cols + start_col
    index = ops.iota(n, start=first, step=cols + 1, dtype="int64", device=x.device)
    return ops.index_select(flat, index, len(lead))


def trace(x: Tensor, /, *, offset: int = 0, dtype: Any = None) -> Tensor:
    """The sum of the ``offset``-th diagonal of each matrix."""
    return _sum(diagonal(x, offset=offset), axis=-1, dtype=dtype)


def outer(x1: Tensor, x2: Tensor, /) -> Tensor:
    """The outer product of two vectors."""
    x1, x2 = _common([x1, x2])
    return ops.mul(x1.reshape(-1, 1), x2.reshape(1, -1))


def cross(x1: Tensor, x2: Tensor, /, *, axis: int = -1) -> Tensor:
    """The cross product of 3-vectors along ``axis`` (the other dims broadcast)."""
    x1, x2 = broadcast_arrays(*_common([x1, x2]))
    at = _axis(axis, x1.ndim, "cross")
    if x1.shape[at] != 3:
        raise ValueError(f"cross: the vectors along axis {axis} have {x1.shape[at]} components, not 3")
    a, b = moveaxis(x1, at, -1), moveaxis(x2, at, -1)
    parts = [ops.sub(ops.mul(a[..., i], b[..., j]), ops.mul(a[..., j], b[..., i])) for i, j in ((1, 2), (2, 0), (0, 1))]
    return moveaxis(ops.concat([p.unsqueeze(-1) for p in parts], axis=a.ndim - 1), -1, at)


def matrix_power(x: Tensor, n: int, /) -> Tensor:
    """The square matrices multiplied by themselves ``n`` ≥ 0 times (0: identity);
    negative powers need an inverse, which has no kernel yet."""
    if n < 0:
        raise ValueError("matrix_power: a negative power needs the inverse, which has no kernel yet")
    from ._creation import eye

    size = x.shape[-1]
    result = eye(size, dtype=x.dtype, device=x.device).broadcast_to(x.shape).copy()
    base = x
    while n:
        if n & 1:
            result = ops.matmul(result, base)
        n >>= 1
        if n:
            base = ops.matmul(base, base)
    return result


__all__ = [
    "cross",
    "diagonal",
    "matmul",
    "matrix_norm",
    "matrix_power",
    "matrix_transpose",
    "outer",
    "tensordot",
    "trace",
    "vecdot",
    "vector_norm",
]
