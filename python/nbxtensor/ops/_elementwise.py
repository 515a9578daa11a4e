"""Elementwise ops: unary math, binary arithmetic with broadcasting, comparisons, logical and
bitwise ops, selection and casts.

Each function calls the core's typed op: operands are promoted there (the Array API's rules;
a Python scalar is weak, a numpy scalar or array keeps its dtype), and a float-only op reads
integers and bool as float32.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nbxtensor._core import ops as _core

from ._reduce import *  # noqa: F401,F403 - reductions, softmax and norms live beside
from ._reduce import __all__ as _reduce_names

if TYPE_CHECKING:
    from nbxtensor._core.tensor import Tensor
    from nbxtensor._typing import Array, DTypeLike, Scalar

    Operand = Tensor | Scalar | Array

def neg(x: Tensor) -> Tensor:
    """-x (integers wrap)."""
    return _core.unary("neg", x)

def abs(x: Tensor) -> Tensor:  # noqa: A001 - the op's name
    """|x| (integers wrap: the most negative value stays)."""
    return _core.unary("abs", x)

def relu(x: Tensor) -> Tensor:
    """max(x, 0); NaN stays NaN."""
    return _core.unary("relu", x)

def exp(x: Tensor) -> Tensor:
    """e to the x (integers are read as float32)."""
    return _core.unary("exp", x)

def log(x: Tensor) -> Tensor:
    """The natural logarithm."""
    return _core.unary("log", x)

def sqrt(x: Tensor) -> Tensor:
    """The square root."""
    return _core.unary("sqrt", x)

def rsqrt(x: Tensor) -> Tensor:
    """1 / sqrt(x)."""
    return _core.unary("rsqrt", x)

def tanh(x: Tensor) -> Tensor:
    """The hyperbolic tangent."""
    return _core.unary("tanh", x)

def sigmoid(x: Tensor) -> Tensor:
    """1 / (1 + e^-x)."""
    return _core.unary("sigmoid", x)

def silu(x: Tensor) -> Tensor:
    """x * sigmoid(x)."""
    return _core.unary("silu", x)

def gelu(x: Tensor) -> Tensor:
    """GELU, the erf form: x/2 * (1 + erf(x / sqrt(2)))."""
    return _core.unary("gelu", x)

def gelu_tanh(x: Tensor) -> Tensor:
    """GELU, the tanh approximation: x/2 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))."""
    return _core.unary("gelu_tanh", x)

def sin(x: Tensor) -> Tensor:
    """The sine."""
    return _core.unary("sin", x)

def cos(x: Tensor) -> Tensor:
    """The cosine."""
    return _core.unary("cos", x)

def tan(x: Tensor) -> Tensor:
    """The tangent."""
    return _core.unary("tan", x)

def asin(x: Tensor) -> Tensor:
    """The inverse sine."""
    return _core.unary("asin", x)

def acos(x: Tensor) -> Tensor:
    """The inverse cosine."""
    return _core.unary("acos", x)

def atan(x: Tensor) -> Tensor:
    """The inverse tangent."""
    return _core.unary("atan", x)

def sinh(x: Tensor) -> Tensor:
    """The hyperbolic sine."""
    return _core.unary("sinh", x)

def cosh(x: Tensor) -> Tensor:
    """The hyperbolic cosine."""
    return _core.unary("cosh", x)

def asinh(x: Tensor) -> Tensor:
    """The inverse hyperbolic sine."""
    return _core.unary("asinh", x)

def acosh(x: Tensor) -> Tensor:
    """The inverse hyperbolic cosine."""
    return _core.unary("acosh", x)

def atanh(x: Tensor) -> Tensor:
    """The inverse hyperbolic tangent."""
    return _core.unary("atanh", x)

def expm1(x: Tensor) -> Tensor:
    """e^x - 1, accurate near 0."""
    return _core.unary("expm1", x)

def log1p(x: Tensor) -> Tensor:
    """ln(1 + x), accurate near 0."""
    return _core.unary("log1p", x)

def log2(x: Tensor) -> Tensor:
    """The base-2 logarithm."""
    return _core.unary("log2", x)

def log10(x: Tensor) -> Tensor:
    """The base-10 logarithm."""
    return _core.unary("log10", x)

def reciprocal(x: Tensor) -> Tensor:
    """1 / x."""
    return _core.unary("reciprocal", x)

def square(x: Tensor) -> Tensor:
    """x * x (integers wrap)."""
    return _core.unary("square", x)

def sign(x: Tensor) -> Tensor:
    """-1, 0 or 1; NaN stays NaN."""
    return _core.unary("sign", x)

def floor(x: Tensor) -> Tensor:
    """Rounded toward -inf (integers unchanged)."""
    return _core.unary("floor", x)

def ceil(x: Tensor) -> Tensor:
    """Rounded toward +inf (integers unchanged)."""
    return _core.unary("ceil", x)

def round(x: Tensor) -> Tensor:  # noqa: A001 - the op's name
    """Rounded to nearest, half to even (integers unchanged)."""
    return _core.unary("round", x)

def trunc(x: Tensor) -> Tensor:
    """Rounded toward 0 (integers unchanged)."""
    return _core.unary("trunc", x)

def isnan(x: Tensor) -> Tensor:
    """Whether each element is NaN (bool)."""
    return _core.unary("isnan", x)

def isinf(x: Tensor) -> Tensor:
    """Whether each element is infinite (bool)."""
    return _core.unary("isinf", x)

def isfinite(x: Tensor) -> Tensor:
    """Whether each element is finite (bool)."""
    return _core.unary("isfinite", x)

def signbit(x: Tensor) -> Tensor:
    """Whether each element's sign bit is set (bool)."""
    return _core.unary("signbit", x)

def logical_not(x: Tensor) -> Tensor:
    """not x (any dtype read as bool)."""
    return _core.unary("logical_not", x)

def bitwise_invert(x: Tensor) -> Tensor:
    """~x, the bits flipped (integers and bool)."""
    return _core.unary("bitwise_invert", x)

def real(x: Tensor) -> Tensor:
    """The real part: of the part's dtype for a complex tensor (float32 for complex64); x for a real one."""
    return _core.unary("real", x)

def imag(x: Tensor) -> Tensor:
    """The imaginary part: of the part's dtype for a complex tensor; zeros for a real one."""
    return _core.unary("imag", x)

def conj(x: Tensor) -> Tensor:
    """The complex conjugate (x for a real tensor)."""
    return _core.unary("conj", x)

def add(a: Operand, b: Operand) -> Tensor:
    """a + b, broadcast (integers wrap)."""
    return _core.binary("add", a, b)

def sub(a: Operand, b: Operand) -> Tensor:
    """a - b, broadcast (integers wrap)."""
    return _core.binary("sub", a, b)

def mul(a: Operand, b: Operand) -> Tensor:
    """a * b, broadcast (integers wrap)."""
    return _core.binary("mul", a, b)

def div(a: Operand, b: Operand) -> Tensor:
    """a / b, broadcast: true division; integer operands are divided as float32."""
    return _core.binary("div", a, b)

def pow(a: Operand, b: Operand) -> Tensor:  # noqa: A001 - the op's name
    """a to the power b, broadcast."""
    return _core.binary("pow", a, b)

def maximum(a: Operand, b: Operand) -> Tensor:
    """The larger of a and b, broadcast; NaN when either is NaN."""
    return _core.binary("maximum", a, b)

def minimum(a: Operand, b: Operand) -> Tensor:
    """The smaller of a and b, broadcast; NaN when either is NaN."""
    return _core.binary("minimum", a, b)

def remainder(a: Operand, b: Operand) -> Tensor:
    """a mod b with the sign of b (Python's %)."""
    return _core.binary("remainder", a, b)

def floor_divide(a: Operand, b: Operand) -> Tensor:
    """floor(a / b) (Python's //)."""
    return _core.binary("floor_divide", a, b)

def atan2(a: Operand, b: Operand) -> Tensor:
    """The angle of the point (b, a)."""
    return _core.binary("atan2", a, b)

def copysign(a: Operand, b: Operand) -> Tensor:
    """|a| with the sign of b."""
    return _core.binary("copysign", a, b)

def hypot(a: Operand, b: Operand) -> Tensor:
    """sqrt(a^2 + b^2) without overflow."""
    return _core.binary("hypot", a, b)

def logaddexp(a: Operand, b: Operand) -> Tensor:
    """ln(e^a + e^b) without overflow."""
    return _core.binary("logaddexp", a, b)

def silu_mul(a: Operand, b: Operand) -> Tensor:
    """silu(a) * b computed in one pass and rounded once (the gated MLP of Llama-family models)."""
    return _core.binary("silu_mul", a, b)

def nextafter(a: Operand, b: Operand) -> Tensor:
    """The next value of the dtype after a toward b."""
    return _core.binary("nextafter", a, b)

def eq(a: Operand, b: Operand) -> Tensor:
    """a == b, broadcast, as bool."""
    return _core.binary("eq", a, b)

def ne(a: Operand, b: Operand) -> Tensor:
    """a != b, broadcast, as bool (true where either is NaN)."""
    return _core.binary("ne", a, b)

def lt(a: Operand, b: Operand) -> Tensor:
    """a < b, broadcast, as bool."""
    return _core.binary("lt", a, b)

def le(a: Operand, b: Operand) -> Tensor:
    """a <= b, broadcast, as bool."""
    return _core.binary("le", a, b)

def gt(a: Operand, b: Operand) -> Tensor:
    """a > b, broadcast, as bool."""
    return _core.binary("gt", a, b)

def ge(a: Operand, b: Operand) -> Tensor:
    """a >= b, broadcast, as bool."""
    return _core.binary("ge", a, b)

def logical_and(a: Operand, b: Operand) -> Tensor:
    """a and b (read as bool)."""
    return _core.binary("logical_and", a, b)

def logical_or(a: Operand, b: Operand) -> Tensor:
    """a or b (read as bool)."""
    return _core.binary("logical_or", a, b)

def logical_xor(a: Operand, b: Operand) -> Tensor:
    """a xor b (read as bool)."""
    return _core.binary("logical_xor", a, b)

def bitwise_and(a: Operand, b: Operand) -> Tensor:
    """a & b."""
    return _core.binary("bitwise_and", a, b)

def bitwise_or(a: Operand, b: Operand) -> Tensor:
    """a | b."""
    return _core.binary("bitwise_or", a, b)

def bitwise_xor(a: Operand, b: Operand) -> Tensor:
    """a ^ b."""
    return _core.binary("bitwise_xor", a, b)

def bitwise_left_shift(a: Operand, b: Operand) -> Tensor:
    """a << b."""
    return _core.binary("bitwise_left_shift", a, b)

def bitwise_right_shift(a: Operand, b: Operand) -> Tensor:
    """a >> b (the sign kept)."""
    return _core.binary("bitwise_right_shift", a, b)

def cast(x: Tensor, dtype: DTypeLike) -> Tensor:
    """x converted to ``dtype`` (a table name or alias, an NBXDtype or a numpy dtype): integers
    wrap, floats truncate toward zero into integers (saturating, NaN to 0), complex to real is
    refused."""
    return _core.call_one("cast", x, {"dtype": dtype})


def clip(x: Tensor, min: float | None = None, max: float | None = None) -> Tensor:  # noqa: A002 - the Array API's names
    """x clamped to ``[min, max]`` (each bound optional, a number); NaN stays NaN."""
    attrs = {k: v for k, v in (("min", min), ("max", max)) if v is not None}
    return _core.call_one("clip", x, attrs)


def where(cond: Tensor, a: Operand, b: Operand) -> Tensor:
    """a where the bool ``cond`` is true, else b; the three broadcast, a and b promoted."""
    return _core.where(cond, a, b)


def masked_fill(x: Tensor, mask: Tensor, value: Scalar) -> Tensor:
    """x with ``value`` where the bool ``mask`` is true (broadcast); the value is fitted to
    x's dtype (clamped to its finite range; an integer dtype refuses fractions and NaN)."""
    return _core.call("masked_fill", [x, mask], {"value": value})[0]


__all__ = [
    "cast",
    "clip",
    "where",
    "masked_fill",
    "neg",
    "abs",
    "relu",
    "exp",
    "log",
    "sqrt",
    "rsqrt",
    "tanh",
    "sigmoid",
    "silu",
    "gelu",
    "gelu_tanh",
    "sin",
    "cos",
    "tan",
    "asin",
    "acos",
    "atan",
    "sinh",
    "cosh",
    "asinh",
    "acosh",
    "atanh",
    "expm1",
    "log1p",
    "log2",
    "log10",
    "reciprocal",
    "square",
    "sign",
    "floor",
    "ceil",
    "round",
    "trunc",
    "isnan",
    "isinf",
    "isfinite",
    "signbit",
    "logical_not",
    "bitwise_invert",
    "real",
    "imag",
    "conj",
    "add",
    "sub",
    "mul",
    "div",
    "pow",
    "maximum",
    "minimum",
    "remainder",
    "floor_divide",
    "atan2",
    "copysign",
    "hypot",
    "logaddexp",
    "nextafter",
    "silu_mul",
    "eq",
    "ne",
    "lt",
    "le",
    "gt",
    "ge",
    "logical_and",
    "logical_or",
    "logical_xor",
    "bitwise_and",
    "bitwise_or",
    "bitwise_xor",
    "bitwise_left_shift",
    "bitwise_right_shift",
]
__all__ += _reduce_names
