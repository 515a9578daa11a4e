"""Reductions along axes, softmax and norms.

Reductions call the core's typed op (mean reads integers as float32, sum and prod read bool as
int64); softmax and the norms
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


def prod(x: Tensor, axes: Axes = None, keepdim: bool = False) -> Tensor:
    """The product over ``axes``: floats multiply in float64 and round once; signed integers
    and bool give int64, unsigned integers uint64 (wrapping); 1 over no elements."""
    return _core.reduce("prod", x, _axes(axes), bool(keepdim))


def all(x: Tensor, axes: Axes = None, keepdim: bool = False) -> Tensor:  # noqa: A001 - the op's name
    """Whether every element over ``axes`` is nonzero (NaN is), as bool; true over no elements."""
    return _core.reduce("all", x, _axes(axes), bool(keepdim))


def any(x: Tensor, axes: Axes = None, keepdim: bool = False) -> Tensor:  # noqa: A001 - the op's name
    """Whether any element over ``axes`` is nonzero (NaN is), as bool; false over no elements."""
    return _core.reduce("any", x, _axes(axes), bool(keepdim))


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


def argmin(x: Tensor, axis: int = -1, keepdim: bool = False) -> Tensor:
    """The int64 index of the first minimum along ``axis`` (a NaN counts as the minimum)."""
    return _core.reduce("argmin", x, [int(axis)], bool(keepdim))


def _scan_axis(name: str, x: Tensor, axis: int | None) -> int:
    if axis is not None:
        return int(axis)
    if x.ndim != 1:
        raise ValueError(f"{name}: axis is required for a {x.ndim}-d input (None only for a 1-d one)")
    return 0


def cumulative_sum(x: Tensor, axis: int | None = None, include_initial: bool = False) -> Tensor:
    """The running sum along ``axis`` (None: a 1-d input's only axis), the sum's dtype (floats keep
    theirs, rounded once from float64; signed integers and bool give int64, unsigned uint64,
    wrapping); ``include_initial`` starts with 0, one longer along ``axis`` (the Array API's)."""
    return _core.scan("cumulative_sum", x, _scan_axis("cumulative_sum", x, axis), bool(include_initial))


def cumulative_prod(x: Tensor, axis: int | None = None, include_initial: bool = False) -> Tensor:
    """The running product along ``axis``, as ``cumulative_sum`` (``include_initial`` starts with 1)."""
    return _core.scan("cumulative_prod", x, _scan_axis("cumulative_prod", x, axis), bool(include_initial))


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


def add_rms_norm(x: Tensor, residual: Tensor, weight: Tensor, eps: float | None = None) -> tuple[Tensor, Tensor]:
    """``(x + residual, rms_norm(x + residual, weight, eps))`` in one pass: the sum rounded to the
    dtype as ``add`` rounds it, and its norm over the last dim, bit for bit those of ``add`` then
    ``rms_norm`` (a decoder layer's residual add and the next norm)."""
    total, normed = _core.call("add_rms_norm", [x, residual, weight], _given(eps=None if eps is None else float(eps)))
    return total, normed


def add_layer_norm(
    x: Tensor, residual: Tensor, weight: Tensor, bias: Tensor, eps: float | None = None
) -> tuple[Tensor, Tensor]:
    """``(x + residual, layer_norm(x + residual, weight, bias, eps))`` in one pass: the sum rounded
    to the dtype as ``add`` rounds it, and its norm over the last dim, bit for bit those of ``add``
    then ``layer_norm`` (an encoder layer's residual add and its norm; eps None: 1e-5)."""
    inputs = [x, residual, weight, bias]
    total, normed = _core.call("add_layer_norm", inputs, _given(eps=None if eps is None else float(eps)))
    return total, normed


__all__ = ["sum", "prod", "all", "any", "mean", "max", "min", "argmax", "argmin", "cumulative_sum", "cumulative_prod", "softmax", "log_softmax", "layer_norm", "rms_norm", "add_rms_norm", "add_layer_norm"]
