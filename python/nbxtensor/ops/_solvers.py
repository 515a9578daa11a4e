"""Factorizations and solvers of stacks of matrices (the last two dims a matrix, the leading
dims a batch), float32 or float64: kernels of the core (``ops::spec::linalg``), float32
computed in float64 and rounded once. A singular matrix given to ``solve`` or ``inv``, a
matrix that is not positive definite given to ``cholesky``, and an ``svd`` or ``eigh`` that
does not converge are refused as ``ValueError`` naming the op and the matrix's batch index."""

from __future__ import annotations

from typing import TYPE_CHECKING

from nbxtensor._core import ops as _core

if TYPE_CHECKING:
    from nbxtensor._core.tensor import Tensor


def cholesky(x: Tensor, upper: bool = False) -> Tensor:
    """The Cholesky factor of symmetric positive definite matrices: lower L with A = L·Lᵀ, or
    (``upper``) U with A = Uᵀ·U; the other triangle zeros."""
    return _core.call_one("cholesky", x, {"upper": bool(upper)})


def qr(x: Tensor, complete: bool = False) -> tuple[Tensor, Tensor]:
    """``(Q, R)`` with A = Q·R, Q of orthonormal columns ``(..., M, K)`` and R upper triangular
    ``(..., K, N)`` (K = min(M, N)); ``complete``: Q ``(..., M, M)``, R ``(..., M, N)``."""
    q, r = _core.call("qr", [x], {"complete": bool(complete)})
    return q, r


def svd(x: Tensor, full_matrices: bool = True) -> tuple[Tensor, Tensor, Tensor]:
    """``(U, S, Vh)`` with A = U·diag(S)·Vh, S ``(..., K)`` largest first; ``full_matrices``: U
    ``(..., M, M)`` and Vh ``(..., N, N)``, else ``(..., M, K)`` and ``(..., K, N)``."""
    u, s, vh = _core.call("svd", [x], {"full_matrices": bool(full_matrices)})
    return u, s, vh


def svdvals(x: Tensor) -> Tensor:
    """The singular values ``(..., K)``, largest first."""
    return _core.call_one("svdvals", x, {})


def eigh(x: Tensor) -> tuple[Tensor, Tensor]:
    """``(eigenvalues, eigenvectors)`` of symmetric matrices (their lower triangles read): the
    eigenvalues ``(..., M)`` ascending, the eigenvectors the columns of ``(..., M, M)``."""
    w, v = _core.call("eigh", [x], {})
    return w, v


def eigvalsh(x: Tensor) -> Tensor:
    """The eigenvalues ``(..., M)`` of symmetric matrices, ascending (their lower triangles read)."""
    return _core.call_one("eigvalsh", x, {})


def solve(a: Tensor, b: Tensor) -> Tensor:
    """X with A·X = B: ``a`` ``(..., M, M)``, ``b`` ``(..., M, R)`` (the batches broadcast) or
    ``(M,)`` (one vector for every A); the two promoted to one dtype."""
    return _core.solve(a, b)


def inv(x: Tensor) -> Tensor:
    """The inverses of square matrices."""
    return _core.call_one("inv", x, {})


def det(x: Tensor) -> Tensor:
    """The determinants ``(...)`` of square matrices (0 for a singular one)."""
    return _core.call_one("det", x, {})


def slogdet(x: Tensor) -> tuple[Tensor, Tensor]:
    """``(sign, logabsdet)`` of the determinants: ``(0, -inf)`` for a singular matrix."""
    sign, log = _core.call("slogdet", [x], {})
    return sign, log


__all__ = ["cholesky", "qr", "svd", "svdvals", "eigh", "eigvalsh", "solve", "inv", "det", "slogdet"]
