"""The standard's elementwise functions, each the library's kernel under the standard's name
(``ops.sub`` is ``subtract``); operands may be Python scalars on either side, as 2024.12
allows. Rounding an integer keeps it (the standard's rule: the value and dtype unchanged)."""

from __future__ import annotations

from typing import Any

from nbxtensor import ops
from nbxtensor.tensor import Tensor

from . import _dtypes
from ._creation import zeros_like

# the standard's name → the library's op, where the two differ or match
SAME = (
    "abs acos acosh add asin asinh atan atan2 atanh bitwise_and bitwise_left_shift bitwise_invert "
    "bitwise_or bitwise_right_shift bitwise_xor copysign cos cosh exp expm1 floor_divide hypot isfinite "
    "isinf isnan log log1p log2 log10 logaddexp logical_and logical_not logical_or logical_xor maximum "
    "minimum nextafter pow reciprocal remainder sign signbit sin sinh square sqrt tan tanh"
).split()
RENAMED = {
    "divide": "div",
    "equal": "eq",
    "greater": "gt",
    "greater_equal": "ge",
    "less": "lt",
    "less_equal": "le",
    "multiply": "mul",
    "negative": "neg",
    "not_equal": "ne",
    "subtract": "sub",
}
FUNCTIONS = {name: getattr(ops, name) for name in SAME} | {name: getattr(ops, op) for name, op in RENAMED.items()}


def _integral(x: Tensor) -> bool:
    return _dtypes.kind(x.dtype) in ("int", "uint", "bool")


def _rounding(op: Any, doc: str) -> Any:
    def rounded(x: Tensor, /) -> Tensor:
        return x.copy() if _integral(x) else op(x)

    rounded.__doc__ = doc
    return rounded


ceil = _rounding(ops.ceil, "The smallest integer ≥ x (an integer tensor is returned as a copy).")
floor = _rounding(ops.floor, "The largest integer ≤ x (an integer tensor is returned as a copy).")
round = _rounding(ops.round, "x rounded to the nearest integer, ties to even (an integer tensor: a copy).")  # noqa: A001
trunc = _rounding(ops.trunc, "x rounded toward zero (an integer tensor is returned as a copy).")


def positive(x: Tensor, /) -> Tensor:
    """+x: a copy."""
    return x.copy()


def _complex(x: Tensor) -> bool:
    return _dtypes.kind(x.dtype) == "complex"


def real(x: Tensor, /) -> Tensor:
    """The real part, of the part's real dtype (the ``real`` kernel); a real tensor itself, as a copy."""
    return ops.real(x) if _complex(x) else x.copy()


def imag(x: Tensor, /) -> Tensor:
    """The imaginary part, of the part's real dtype (the ``imag`` kernel); zeros for a real tensor."""
    return ops.imag(x) if _complex(x) else zeros_like(x)


def conj(x: Tensor, /) -> Tensor:
    """The complex conjugate (the ``conj`` kernel); a real tensor itself, as a copy."""
    return ops.conj(x) if _complex(x) else x.copy()


def clip(x: Tensor, /, min: Any = None, max: Any = None) -> Tensor:  # noqa: A002 - the standard's names
    """x clamped to ``[min, max]`` (each a number or an array broadcast against x, optional);
    the result keeps x's dtype."""
    out = x
    if min is not None:
        out = ops.maximum(out, min)
    if max is not None:
        out = ops.minimum(out, max)
    if out is x:
        return x.copy()
    return out.astype(x.dtype, copy=False)
