"""Reductions along axes, softmax and norms.

Reductions call the core's typed op (mean reads integers as float32); softmax and the norms
name their op and pass only the attributes given, so every default is the op spec's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from nbxtensor._core import ops as _core

if TYPE_CHECKING:
    from nbxtensor._core.tensor import Tensor

    Axes = int | Sequence[int] | None


def _axes(axes: Axes) -> list[int] | None:
    return None if axes is None else ([axes] if isinstance(axes, int) else list(axes))


def sum(x: Tensor, axes: Axes = None, keepdim: bool = False) -> Tensor:  # noqa: A001 - the op's name
    """The sum over ``axes`` (an int or ints, negatives from the end; None: all). Floats sum
    in float64 and round once; signed integers sum to int64, unsigned to uint64 (wrapping)."""
    return _core.reduce("sum", x, _axes(axes), bool(keepdim))


def mean(x: Tensor, axes: Axes = None, keepdim: bool = False) -> Tensor:
    """The mean over ``axes`` (float64 accumulation); integers are read as float32."""
    return _core.reduce("mean", x, _axes(axes), bool(keepdim))


def max(x: Tensor, axes: Axes = None, keepdim: bool = False) -> Tensor:  # noqa: A001 - the op's name
    """The maximum over ``axes``; NaN when one is NaN; no elements is refused."""
    return _core.reduce("max", x, _axes(axes), bool(keepdim))


def min(x: Tensor, axes: Axes = None, keepdim: bool = False) -> Tensor:  # noqa: A001 - the op's name
    """The minimum over ``axes``; NaN when one is NaN; no elements is refused."""
    return _core.reduce("min", x, _axes(axes), bool(keepdim))


def argmax(x: Tensor, axis: int = -1, keepdim: bool = False) -> Tensor:
    """The int64 index of the first maximum along ``axis`` (a NaN counts as the maximum)."""
    return _core.reduce("argmax", x, [int(axis)], bool(keepdim))


def _given(**attrs: Any) -> dict[str, Any]:
    return {k: v for k, v in attrs.items() if v is not None}


def softmax(x: Tensor, axis: int | None = None) -> Tensor:
    """exp(x - max) / sum(exp(x - max)) along ``axis`` (None: the op's default, the last)."""
    return _core.call_one("softmax", x, _given(axis=axis))


def log_softmax(x: Tensor, axis: int | None = None) -> Tensor:
    """x - max - log(sum(exp(x - max))) along ``axis`` (None: the op's default, the last)."""
    return _core.call_one("log_softmax", x, _given(axis=axis))


def layer_norm(x: Tensor, weight: Tensor, bias: Tensor, eps: float | None = None) -> Tensor:
    """(x - mean) / sqrt(var + eps) * weight + bias over the last dim (biased variance);
    weight and bias have the last dim's extent and x's dtype (eps None: the op's default)."""
    return _core.call("layer_norm", [x, weight, bias], _given(eps=None if eps is None else float(eps)))[0]


def rms_norm(x: Tensor, weight: Tensor, eps: float | None = None) -> Tensor:
    """x / sqrt(mean(x^2) + eps) * weight over the last dim (eps None: the op's default)."""
    return _core.call("rms_norm", [x, weight], _given(eps=None if eps is None else float(eps)))[0]


__all__ = ["sum", "mean", "max", "min", "argmax", "softmax", "log_softmax", "layer_norm", "rms_norm"]
