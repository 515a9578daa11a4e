"""Linear algebra: ``matmul`` is the matmul kernel; ``tensordot`` and ``vecdot`` are
permutes, reshapes and matmul or a product and a sum; the ``linalg`` extension's norms,
diagonals and the like compose the same kernels."""

from __future__ import annotations

import math
from collections.abc import Sequence


from nbxtensor import ops
from nbxtensor.tensor import Tensor

from . import _dtypes
from ._manipulation import _axis, _common, broadcast_arrays, reshape


def matmul(x1: Tensor, x2: Tensor, /) -> Tensor:
    """numpy's matmul (batch dims broadcast, 1-d operands as vectors), operands promoted."""
    x1, x2 = _common([x1, x2])
    return ops.matmul(x1, x2)


def tensordot(x1: Tensor, x2: Tensor, /, *, axes: int | tuple[Sequence[int], Sequence[int]] = 2) -> Tensor:
    """The sum of products over ``axes`` (the last ``axes`` dims of x1 with the first of x2,
    or the two lists of dims), by one matmul."""
    x1, x2 = _common([x1, x2])
    if isinstance(axes, int):
        if axes < 0:
            raise ValueError(f"tensordot: axes must be ≥ 0, got {axes}")
        a1, a2 = list(range(x1.ndim - axes, x1.ndim)), list(range(axes))
    else:
        a1 = [_axis(a, x1.ndim, "tensordot") for a in axes[0]]
        a2 = [_axis(a, x2.ndim, "tensordot") for a in axes[1]]
    if len(a1) != len(a2) or any(x1.shape[i] != x2.shape[j] for i, j in zip(a1, a2)):
        raise ValueError(f"tensordot: dims {a1} of {x1.shape} do not match dims {a2} of {x2.shape}")
    free1 = [d for d in range(x1.ndim) if d not in a1]
    free2 = [d for d in range(x2.ndim) if d not in a2]
    k = math.prod(x1.shape[i] for i in a1)
    left = reshape(x1.permute(*(free1 + a1)), (math.prod(x1.shape[d] for d in free1), k))
    right = reshape(x2.permute(*(a2 + free2)), (k, math.prod(x2.shape[d] for d in free2)))
    out_shape = [x1.shape[d] for d in free1] + [x2.shape[d] for d in free2]
    if k == 0 or left.shape[0] == 0 or right.shape[1] == 0:
        from ._creation import zeros

        return zeros(out_shape, dtype=x1.dtype, device=x1.device)
    return ops.matmul(left, right).reshape(*out_shape)


def vecdot(x1: Tensor, x2: Tensor, /, *, axis: int = -1) -> Tensor:
    """The dot product of vectors along ``axis`` (the other dims broadcast): ``sum(conj(x1) *
    x2)``, x1 conjugated where it is complex, as the standard defines it."""
    x1, x2 = _common([x1, x2])
    ndim = max(x1.ndim, x2.ndim)
    if not -ndim <= axis < ndim:
        raise ValueError(f"vecdot: axis {axis} is out of range for {ndim} dims")
    axis = axis - ndim if axis >= 0 else axis
    # the contracted dim is not broadcast: both operands must have it, of one length
    n1 = x1.shape[axis] if -x1.ndim <= axis else 1
    n2 = x2.shape[axis] if -x2.ndim <= axis else 1
    if n1 != n2 or -x1.ndim > axis or -x2.ndim > axis:
        raise ValueError(f"vecdot: dim {axis} of {x1.shape} and of {x2.shape} must be of one length")
    dtype = x1.dtype
    x1, x2 = broadcast_arrays(x1, x2)
    if _dtypes.kind(dtype) == "complex":
        x1 = ops.conj(x1)
    out = ops.sum(ops.mul(x1, x2), [ndim + axis], False)
    # the sum widens integers and bool; the product's dtype is the operands'
    return out if out.dtype == dtype else ops.cast(out, dtype)


