"""Reductions along axes, softmax and norms (typed wrappers over ``call``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from nbxtensor._core import ops as _core
from nbxtensor.dtype import promotion as _promotion

if TYPE_CHECKING:
    from nbxtensor._core.tensor import Tensor

    Axes = int | Sequence[int] | None


def _reduce(op: str, x: Tensor, axes: Axes, keepdim: bool) -> Tensor:
    attrs: dict[str, Any] = {"keepdim": bool(keepdim)}
    if axes is not None:
        attrs["axes"] = [axes] if isinstance(axes, int) else list(axes)
    return _core.call_one(op, x, attrs)


def sum(x: Tensor, axes: Axes = None, keepdim: bool = False) -> Tensor:  # noqa: A001 - the op's name
    """The sum over ``axes`` (an int or ints, negatives from the end; None: all). Floats sum
    in float64 and round once; signed integers sum to int64, unsigned to uint64 (wrapping)."""
    return _reduce("sum", x, axes, keepdim)


def mean(x: Tensor, axes: Axes = None, keepdim: bool = False) -> Tensor:
    """The mean over ``axes`` (float64 accumulation); integers are read as float32."""
    wanted = _promotion.float_math_input(x.dtype)
    if x.dtype != wanted:
        x = _core.call_one("cast", x, {"dtype": wanted})
    return _reduce("mean", x, axes, keepdim)


def max(x: Tensor, axes: Axes = None, keepdim: bool = False) -> Tensor:  # noqa: A001 - the op's name
    """The maximum over ``axes``; NaN when one is NaN; no elements is refused."""
    return _reduce("max", x, axes, keepdim)


def min(x: Tensor, axes: Axes = None, keepdim: bool = False) -> Tensor:  # noqa: A001 - the op's name
    """The minimum over ``axes``; NaN when one is NaN; no elements is refused."""
    return _reduce("min", x, axes, keepdim)


def argmax(x: Tensor, axis: int = -1, keepdim: bool = False) -> Tensor:
    """The int64 index of the first maximum along ``axis`` (a NaN counts as the maximum)."""
    return _core.call_one("argmax", x, {"axis": int(axis), "keepdim": bool(keepdim)})


def softmax(x: Tensor, axis: int = -1) -> Tensor:
    """exp(x - max) / sum(exp(x - max)) along ``axis`` (float dtypes)."""
    return _core.call_one("softmax", x, {"axis": int(axis)})


def log_softmax(x: Tensor, axis: int = -1) -> Tensor:
    """x - max - log(sum(exp(x - max))) along ``axis`` (float dtypes)."""
    return _core.call_one("log_softmax", x, {"axis": int(axis)})


def layer_norm(x: Tensor, weight: Tensor, bias: Tensor, eps: float = 1e-5) -> Tensor:
    """(x - mean) / sqrt(var + eps) * weight + bias over the last dim (biased variance);
    weight and bias have the last dim's extent and x's dtype."""
    return _core.call("layer_norm", [x, weight, bias], {"eps": float(eps)})[0]


def rms_norm(x: Tensor, weight: Tensor, eps: float = 1e-6) -> Tensor:
    """x / sqrt(mean(x^2) + eps) * weight over the last dim."""
    return _core.call("rms_norm", [x, weight], {"eps": float(eps)})[0]


__all__ = ["sum", "mean", "max", "min", "argmax", "softmax", "log_softmax", "layer_norm", "rms_norm"]
