"""Elementwise ops: unary math, binary arithmetic with broadcasting, comparisons, selection
and casts (typed wrappers over ``call``).

Binary ops promote here, before the kernel (which takes one dtype): two tensors of different
dtypes meet at ``nbxtensor.dtype.promotion.binary_result`` and each is cast there; a Python
scalar is weak (``promotion.scalar_result``) and becomes a 0-d tensor of the result dtype.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nbxtensor._core import ops as _core
from nbxtensor.dtype import promotion as _promotion

from ._reduce import *  # noqa: F401,F403 - reductions, softmax and norms live beside
from ._reduce import __all__ as _reduce_names

if TYPE_CHECKING:
    from nbxtensor._typing import Scalar
    from nbxtensor._core.tensor import Tensor

    Operand = Tensor | Scalar

_INTEGRAL = {"bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"}


# an op of one input and one output, called without lists (its attributes a dict or None)
_call_one = _core.call_one


def cast(x: Tensor, dtype: str) -> Tensor:
    """x converted to ``dtype`` (a table name or alias): integers wrap, floats truncate toward
    zero into integers (saturating, NaN to 0), complex to real is refused."""
    return _call_one("cast", x, {"dtype": str(dtype)})


def _to(x: Tensor, dtype: str) -> Tensor:
    return x if x.dtype == dtype else cast(x, dtype)


def _float_input(x: Tensor) -> Tensor:
    """x, cast to the float dtype a float math op reads (integers and bool as float32)."""
    return _to(x, _promotion.float_math_input(x.dtype))


def _operands(op: str, *operands: Operand) -> list[Tensor]:
    """The operands at one dtype: tensors promoted together, Python scalars weak."""
    from nbxtensor.tensor import Tensor, asarray

    tensors = [t for t in operands if isinstance(t, Tensor)]
    if not tensors:
        raise ValueError(f"{op}: at least one operand must be a tensor")
    dtype = tensors[0].dtype
    for t in tensors[1:]:
        dtype = _promotion.binary_result(dtype, t.dtype)
    for s in operands:
        if not isinstance(s, Tensor):
            dtype = _promotion.scalar_result(dtype, s)
    return [_to(t, dtype) if isinstance(t, Tensor) else asarray(t, dtype=dtype) for t in operands]


def _binary(op: str, a: Operand, b: Operand) -> Tensor:
    return _core.call(op, _operands(op, a, b), {})[0]


def neg(x: Tensor) -> Tensor:
    """-x (integers wrap)."""
    return _call_one("neg", x, None)


def abs(x: Tensor) -> Tensor:  # noqa: A001 - the op's name
    """|x| (integers wrap: the most negative value stays)."""
    return _call_one("abs", x, None)


def relu(x: Tensor) -> Tensor:
    """max(x, 0); NaN stays NaN."""
    return _call_one("relu", x, None)


def exp(x: Tensor) -> Tensor:
    """e to the x (integers are read as float32)."""
    return _call_one("exp", _float_input(x), None)


def log(x: Tensor) -> Tensor:
    """The natural logarithm."""
    return _call_one("log", _float_input(x), None)


def sqrt(x: Tensor) -> Tensor:
    """The square root."""
    return _call_one("sqrt", _float_input(x), None)


def rsqrt(x: Tensor) -> Tensor:
    """1 / sqrt(x)."""
    return _call_one("rsqrt", _float_input(x), None)


def tanh(x: Tensor) -> Tensor:
    """The hyperbolic tangent."""
    return _call_one("tanh", _float_input(x), None)


def sigmoid(x: Tensor) -> Tensor:
    """1 / (1 + e^-x)."""
    return _call_one("sigmoid", _float_input(x), None)


def silu(x: Tensor) -> Tensor:
    """x * sigmoid(x)."""
    return _call_one("silu", _float_input(x), None)


def gelu(x: Tensor) -> Tensor:
    """GELU, the erf form: x/2 * (1 + erf(x / sqrt(2)))."""
    return _call_one("gelu", _float_input(x), None)


def gelu_tanh(x: Tensor) -> Tensor:
    """GELU, the tanh approximation: x/2 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))."""
    return _call_one("gelu_tanh", _float_input(x), None)


def add(a: Operand, b: Operand) -> Tensor:
    """a + b, broadcast (integers wrap)."""
    return _binary("add", a, b)


def sub(a: Operand, b: Operand) -> Tensor:
    """a - b, broadcast (integers wrap)."""
    return _binary("sub", a, b)


def mul(a: Operand, b: Operand) -> Tensor:
    """a * b, broadcast (integers wrap)."""
    return _binary("mul", a, b)


def div(a: Operand, b: Operand) -> Tensor:
    """a / b, broadcast: true division; integer operands are divided as float32."""
    a, b = _operands("div", a, b)
    if a.dtype in _INTEGRAL:
        a, b = _float_input(a), _float_input(b)
    return _core.call("div", [a, b], {})[0]


def pow(a: Operand, b: Operand) -> Tensor:  # noqa: A001 - the op's name
    """a to the power b, broadcast (float dtypes)."""
    return _binary("pow", a, b)


def maximum(a: Operand, b: Operand) -> Tensor:
    """The larger of a and b, broadcast; NaN when either is NaN."""
    return _binary("maximum", a, b)


def minimum(a: Operand, b: Operand) -> Tensor:
    """The smaller of a and b, broadcast; NaN when either is NaN."""
    return _binary("minimum", a, b)


def eq(a: Operand, b: Operand) -> Tensor:
    """a == b, broadcast, as bool."""
    return _binary("eq", a, b)


def ne(a: Operand, b: Operand) -> Tensor:
    """a != b, broadcast, as bool (true where either is NaN)."""
    return _binary("ne", a, b)


def lt(a: Operand, b: Operand) -> Tensor:
    """a < b, broadcast, as bool."""
    return _binary("lt", a, b)


def le(a: Operand, b: Operand) -> Tensor:
    """a <= b, broadcast, as bool."""
    return _binary("le", a, b)


def gt(a: Operand, b: Operand) -> Tensor:
    """a > b, broadcast, as bool."""
    return _binary("gt", a, b)


def ge(a: Operand, b: Operand) -> Tensor:
    """a >= b, broadcast, as bool."""
    return _binary("ge", a, b)


def where(cond: Tensor, a: Operand, b: Operand) -> Tensor:
    """a where the bool ``cond`` is true, else b; the three broadcast, a and b promoted."""
    a, b = _operands("where", a, b)
    return _core.call("where", [cond, a, b], {})[0]


def masked_fill(x: Tensor, mask: Tensor, value: bool | int | float) -> Tensor:
    """x with ``value`` where the bool ``mask`` is true (broadcast); the value is fitted to
    x's dtype (clamped to its finite range; an integer dtype refuses fractions and NaN)."""
    return _core.call("masked_fill", [x, mask], {"value": value})[0]


__all__ = [
    "cast",
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
    "add",
    "sub",
    "mul",
    "div",
    "pow",
    "maximum",
    "minimum",
    "eq",
    "ne",
    "lt",
    "le",
    "gt",
    "ge",
    "where",
    "masked_fill",
]
__all__ += _reduce_names
