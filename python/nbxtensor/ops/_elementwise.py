"""Elementwise ops: unary math, binary arithmetic with broadcasting, comparisons, logical and
bitwise ops, selection and casts.

Each function calls the core's typed op: operands are promoted there (the Array API's rules;
a Python scalar is weak, a numpy scalar or array keeps its dtype), and a float-only op reads
integers and bool as float32. Generated from one list, so every op has one definition.
"""

from nbxtensor._core import ops as _core

from . import _reduce
from ._reduce import *  # noqa: F401,F403 - reductions, softmax and norms live beside

_UNARY = {
    "neg": "-x (integers wrap).",
    "abs": "|x| (integers wrap: the most negative value stays).",
    "relu": "max(x, 0); NaN stays NaN.",
    "exp": "e to the x (integers are read as float32).",
    "log": "The natural logarithm.",
    "sqrt": "The square root.",
    "rsqrt": "1 / sqrt(x).",
    "tanh": "The hyperbolic tangent.",
    "sigmoid": "1 / (1 + e^-x).",
    "silu": "x * sigmoid(x).",
    "gelu": "GELU, the erf form: x/2 * (1 + erf(x / sqrt(2))).",
    "gelu_tanh": "GELU, the tanh approximation: x/2 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3))).",
    "sin": "The sine.",
    "cos": "The cosine.",
    "tan": "The tangent.",
    "asin": "The inverse sine.",
    "acos": "The inverse cosine.",
    "atan": "The inverse tangent.",
    "sinh": "The hyperbolic sine.",
    "cosh": "The hyperbolic cosine.",
    "asinh": "The inverse hyperbolic sine.",
    "acosh": "The inverse hyperbolic cosine.",
    "atanh": "The inverse hyperbolic tangent.",
    "expm1": "e^x - 1, accurate near 0.",
    "log1p": "ln(1 + x), accurate near 0.",
    "log2": "The base-2 logarithm.",
    "log10": "The base-10 logarithm.",
    "reciprocal": "1 / x.",
    "square": "x * x (integers wrap).",
    "sign": "-1, 0 or 1; NaN stays NaN.",
    "floor": "Rounded toward -inf (integers unchanged).",
    "ceil": "Rounded toward +inf (integers unchanged).",
    "round": "Rounded to nearest, half to even (integers unchanged).",
    "trunc": "Rounded toward 0 (integers unchanged).",
    "isnan": "Whether each element is NaN (bool).",
    "isinf": "Whether each element is infinite (bool).",
    "isfinite": "Whether each element is finite (bool).",
    "signbit": "Whether each element's sign bit is set (bool).",
    "logical_not": "not x (any dtype read as bool).",
    "bitwise_invert": "~x, the bits flipped (integers and bool).",
}

_BINARY = {
    "add": "a + b, broadcast (integers wrap).",
    "sub": "a - b, broadcast (integers wrap).",
    "mul": "a * b, broadcast (integers wrap).",
    "div": "a / b, broadcast: true division; integer operands are divided as float32.",
    "pow": "a to the power b, broadcast.",
    "maximum": "The larger of a and b, broadcast; NaN when either is NaN.",
    "minimum": "The smaller of a and b, broadcast; NaN when either is NaN.",
    "remainder": "a mod b with the sign of b (Python's %).",
    "floor_divide": "floor(a / b) (Python's //).",
    "atan2": "The angle of the point (b, a).",
    "copysign": "|a| with the sign of b.",
    "hypot": "sqrt(a^2 + b^2) without overflow.",
    "logaddexp": "ln(e^a + e^b) without overflow.",
    "nextafter": "The next value of the dtype after a toward b.",
    "eq": "a == b, broadcast, as bool.",
    "ne": "a != b, broadcast, as bool (true where either is NaN).",
    "lt": "a < b, broadcast, as bool.",
    "le": "a <= b, broadcast, as bool.",
    "gt": "a > b, broadcast, as bool.",
    "ge": "a >= b, broadcast, as bool.",
    "logical_and": "a and b (read as bool).",
    "logical_or": "a or b (read as bool).",
    "logical_xor": "a xor b (read as bool).",
    "bitwise_and": "a & b.",
    "bitwise_or": "a | b.",
    "bitwise_xor": "a ^ b.",
    "bitwise_left_shift": "a << b.",
    "bitwise_right_shift": "a >> b (the sign kept).",
}


def _unary_op(name, doc):
    def op(x):
        return _core.unary(name, x)

    op.__name__ = op.__qualname__ = name
    op.__doc__ = doc
    return op


def _binary_op(name, doc):
    def op(a, b):
        return _core.binary(name, a, b)

    op.__name__ = op.__qualname__ = name
    op.__doc__ = doc
    return op


for _name, _doc in _UNARY.items():
    globals()[_name] = _unary_op(_name, _doc)
for _name, _doc in _BINARY.items():
    globals()[_name] = _binary_op(_name, _doc)
del _name, _doc


def cast(x, dtype):
    """x converted to ``dtype`` (a table name or alias): integers wrap, floats truncate toward
    zero into integers (saturating, NaN to 0), complex to real is refused."""
    return _core.call_one("cast", x, {"dtype": str(dtype)})


def clip(x, min=None, max=None):  # noqa: A002 - the Array API's names
    """x clamped to ``[min, max]`` (each bound optional, a number); NaN stays NaN."""
    attrs = {k: v for k, v in (("min", min), ("max", max)) if v is not None}
    return _core.call_one("clip", x, attrs)


def where(cond, a, b):
    """a where the bool ``cond`` is true, else b; the three broadcast, a and b promoted."""
    return _core.where(cond, a, b)


def masked_fill(x, mask, value):
    """x with ``value`` where the bool ``mask`` is true (broadcast); the value is fitted to
    x's dtype (clamped to its finite range; an integer dtype refuses fractions and NaN)."""
    return _core.call("masked_fill", [x, mask], {"value": value})[0]


__all__ = ["cast", "clip", "where", "masked_fill", *_UNARY, *_BINARY]
__all__ += _reduce.__all__
