"""The standard's ``linalg`` extension: products, norms, diagonals, traces, outer and cross
products over the library's kernels, and the factorizations and solvers (cholesky, det, eigh,
eigvalsh, inv, qr, slogdet, solve, svd, svdvals) as the core's kernels of ``ops::spec::linalg``
(float32 and float64; float32 computed in float64 and rounded once), with the standard's
named-tuple results; ``matrix_rank``, ``pinv``, the spectral and nuclear norms and negative
matrix powers are built from them."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, NamedTuple

from nbxtensor import ops
from nbxtensor.tensor import Tensor

from ._creation import zeros
from ._dtypes import finfo
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
    # |x| is of the part's dtype for complex x, and so is the norm
    magnitude = ops.abs(x)
    if ord == math.inf:
        out = _max(magnitude, axis=tuple(axes), keepdims=keepdims)
    elif ord == -math.inf:
        out = _min(magnitude, axis=tuple(axes), keepdims=keepdims)
    elif ord == 0:
        out = _sum(ops.cast(ops.ne(x, 0), magnitude.dtype), axis=tuple(axes), keepdims=keepdims)
    elif ord == 1:
        out = _sum(magnitude, axis=tuple(axes), keepdims=keepdims)
    elif ord == 2:
        out = ops.sqrt(_sum(ops.mul(magnitude, magnitude), axis=tuple(axes), keepdims=keepdims))
    else:
        out = ops.pow(_sum(ops.pow(magnitude, ord), axis=tuple(axes), keepdims=keepdims), 1.0 / ord)
    return out.astype(magnitude.dtype, copy=False)


def matrix_norm(x: Tensor, /, *, keepdims: bool = False, ord: Any = "fro") -> Tensor:
    """The Frobenius norm (``"fro"``), the largest (``1``, ``inf``) / smallest (``-1``,
    ``-inf``) column or row sum of magnitudes, the largest (``2``) / smallest (``-2``)
    singular value or their sum (``"nuc"``) of the matrices in the last two dims (0 for an
    empty matrix)."""
    magnitude = ops.abs(x)
    if ord == "fro":
        out = ops.sqrt(_sum(ops.mul(magnitude, magnitude), axis=(-2, -1), keepdims=keepdims))
    elif ord in (1, -1, math.inf, -math.inf):
        along = -2 if ord in (1, -1) else -1
        sums = _sum(magnitude, axis=along, keepdims=True)
        pick = _max if ord in (1, math.inf) else _min
        out = pick(sums, axis=(-2, -1), keepdims=keepdims)
    elif ord in (2, -2, "nuc"):
        kept = (*x.shape[:-2], 1, 1) if keepdims else x.shape[:-2]
        if min(x.shape[-2:]) == 0:
            return zeros(kept, dtype=magnitude.dtype, device=x.device)
        values = svdvals(x)
        if ord == "nuc":
            out = reshape(_sum(values, axis=-1), kept)
        else:
            out = reshape((_max if ord == 2 else _min)(values, axis=-1), kept)
    else:
        raise ValueError(f"matrix_norm: ord must be 'fro', 'nuc', 1, -1, 2, -2, inf or -inf, got {ord!r}")
    return out.astype(magnitude.dtype, copy=False)


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
    """The square matrices multiplied by themselves ``n`` times by repeated squaring (0: the
    identity; a negative ``n``: the powers of the inverse)."""
    from ._creation import eye

    if n < 0:
        x, n = inv(x), -n
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


class EighResult(NamedTuple):
    """``eigh``'s result: the eigenvalues ``(..., M)`` ascending, the eigenvectors ``(..., M, M)``."""

    eigenvalues: Tensor
    eigenvectors: Tensor


class QRResult(NamedTuple):
    """``qr``'s result: Q and the upper triangular R."""

    Q: Tensor
    R: Tensor


class SlogdetResult(NamedTuple):
    """``slogdet``'s result: the sign and the natural log of the absolute value of the determinant."""

    sign: Tensor
    logabsdet: Tensor


class SVDResult(NamedTuple):
    """``svd``'s result: U, the singular values S (largest first) and Vh."""

    U: Tensor
    S: Tensor
    Vh: Tensor


def cholesky(x: Tensor, /, *, upper: bool = False) -> Tensor:
    """The Cholesky factor of symmetric positive definite matrices: lower L with x = L·Lᵀ, or
    (``upper``) U with x = Uᵀ·U; a matrix that is not positive definite is refused by name."""
    return ops.cholesky(x, upper)


def det(x: Tensor, /) -> Tensor:
    """The determinants of square matrices."""
    return ops.det(x)


def eigh(x: Tensor, /) -> EighResult:
    """The eigenvalues (ascending) and eigenvectors (columns) of symmetric matrices, read from
    their lower triangles."""
    return EighResult(*ops.eigh(x))


def eigvalsh(x: Tensor, /) -> Tensor:
    """The eigenvalues of symmetric matrices, ascending."""
    return ops.eigvalsh(x)


def inv(x: Tensor, /) -> Tensor:
    """The inverses of square matrices; a singular one is refused by name."""
    return ops.inv(x)


def qr(x: Tensor, /, *, mode: str = "reduced") -> QRResult:
    """The QR factorization: ``"reduced"`` Q ``(..., M, K)``, R ``(..., K, N)``; ``"complete"``
    Q ``(..., M, M)``, R ``(..., M, N)``."""
    if mode not in ("reduced", "complete"):
        raise ValueError(f"qr: mode must be 'reduced' or 'complete', got {mode!r}")
    return QRResult(*ops.qr(x, mode == "complete"))


def slogdet(x: Tensor, /) -> SlogdetResult:
    """The sign and log abs determinant of square matrices: (0, -inf) for a singular one."""
    return SlogdetResult(*ops.slogdet(x))


def solve(x1: Tensor, x2: Tensor, /) -> Tensor:
    """X with x1·X = x2: ``x1`` ``(..., M, M)``, ``x2`` ``(..., M, K)`` (the batches broadcast)
    or ``(M,)`` (one vector); operands promoted; a singular ``x1`` is refused by name."""
    x1, x2 = _common([x1, x2])
    return ops.solve(x1, x2)


def svd(x: Tensor, /, *, full_matrices: bool = True) -> SVDResult:
    """x = U·diag(S)·Vh with S largest first; ``full_matrices``: U ``(..., M, M)``, Vh
    ``(..., N, N)``, else ``(..., M, K)`` and ``(..., K, N)``."""
    return SVDResult(*ops.svd(x, full_matrices))


def svdvals(x: Tensor, /) -> Tensor:
    """The singular values ``(..., K)``, largest first."""
    return ops.svdvals(x)


def _cutoff(x: Tensor, values: Tensor, rtol: float | Tensor | None) -> Tensor:
    """The singular values' cutoff: ``rtol`` (None: max(M, N) · eps; an array, one per matrix)
    times each matrix's largest singular value, with a trailing dim of one."""
    if rtol is None:
        rtol = max(x.shape[-2:]) * finfo(x.dtype).eps
    largest = _max(values, axis=-1, keepdims=True)
    if isinstance(rtol, Tensor):
        return ops.mul(rtol.astype(x.dtype, copy=False).unsqueeze(-1), largest)
    return ops.mul(largest, float(rtol))


def matrix_rank(x: Tensor, /, *, rtol: float | Tensor | None = None) -> Tensor:
    """The int64 count of singular values above ``rtol`` times the largest (None: max(M, N) ·
    eps), per matrix."""
    if min(x.shape[-2:]) == 0:
        return zeros(x.shape[:-2], dtype="int64", device=x.device)
    values = svdvals(x)
    return _sum(ops.gt(values, _cutoff(x, values, rtol)), axis=-1).astype("int64", copy=False)


def pinv(x: Tensor, /, *, rtol: float | Tensor | None = None) -> Tensor:
    """The Moore-Penrose pseudo-inverse ``(..., N, M)`` by the SVD: the singular values above
    ``rtol`` times the largest (None: max(M, N) · eps) inverted, the others taken as zero."""
    if min(x.shape[-2:]) == 0:
        return zeros((*x.shape[:-2], x.shape[-1], x.shape[-2]), dtype=x.dtype, device=x.device)
    u, s, vh = svd(x, full_matrices=False)
    kept = ops.gt(s, _cutoff(x, s, rtol))
    inverse = ops.where(kept, ops.div(1.0, ops.where(kept, s, 1.0)), 0.0).astype(x.dtype, copy=False)
    return ops.matmul(ops.mul(matrix_transpose(vh), inverse.unsqueeze(-2)), matrix_transpose(u))


__all__ = [
    "EighResult",
    "QRResult",
    "SVDResult",
    "SlogdetResult",
    "cholesky",
    "cross",
    "det",
    "diagonal",
    "eigh",
    "eigvalsh",
    "inv",
    "matmul",
    "matrix_norm",
    "matrix_power",
    "matrix_rank",
    "matrix_transpose",
    "outer",
    "pinv",
    "qr",
    "slogdet",
    "solve",
    "svd",
    "svdvals",
    "tensordot",
    "trace",
    "vecdot",
    "vector_norm",
]
