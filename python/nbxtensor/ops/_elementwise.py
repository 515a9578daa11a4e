"""Elementwise ops: unary math, binary arithmetic with broadcasting, comparisons, selection
and casts (typed wrappers over ``call``).

Binary ops promote here, before the kernel (which takes one dtype): two tensors of different
dtypes meet at ``nbxtensor.dtype.promotion.binary_result`` and each is cast there; a Python
scalar is weak (``promotion.scalar_result``) and becomes a 0-d tensor of the result dtype.
"""

from nbxtensor._core import ops as _core
from nbxtensor.dtype import promotion as _promotion

from . import _reduce
from ._reduce import *  # noqa: F401,F403 - reductions, softmax and norms live beside

_INTEGRAL = {"bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"}


# an op of one input and one output, called without lists (its attributes a dict or None)
_call_one = _core.call_one


def _is_tensor(x):
    from nbxtensor.tensor import Tensor

    return isinstance(x, Tensor)


def cast(x, dtype):
    """x converted to ``dtype`` (a table name or alias): integers wrap, floats truncate toward
    zero into integers (saturating, NaN to 0), complex to real is refused."""
    return _call_one("cast", x, {"dtype": str(dtype)})


def _to(x, dtype):
    return x if x.dtype == dtype else cast(x, dtype)


def _float_input(x):
    """x, cast to the float dtype a float math op reads (integers and bool as float32)."""
    return _to(x, _promotion.float_math_input(x.dtype))


def _operands(op, *operands):
    """The operands at one dtype: tensors promoted together, Python scalars weak."""
    from nbxtensor.tensor import asarray

    tensors = [t for t in operands if _is_tensor(t)]
    if not tensors:
        raise ValueError(f"{op}: at least one operand must be a tensor")
    dtype = tensors[0].dtype
    for t in tensors[1:]:
        dtype = _promotion.binary_result(dtype, t.dtype)
    for s in operands:
        if not _is_tensor(s):
            dtype = _promotion.scalar_result(dtype, s)
    return [_to(t, dtype) if _is_tensor(t) else asarray(t, dtype=dtype) for t in operands]


def _binary(op, a, b):
    return _core.call(op, _operands(op, a, b), {})[0]


def neg(x):
    """-x (integers wrap)."""
    return _call_one("neg", x, None)


def abs(x):  # noqa: A001 - the op's name
    """|x| (integers wrap: the most negative value stays)."""
    return _call_one("abs", x, None)


def relu(x):
    """max(x, 0); NaN stays NaN."""
    return _call_one("relu", x, None)


def exp(x):
    """e to the x (integers are read as float32)."""
    return _call_one("exp", _float_input(x), None)


def log(x):
    """The natural logarithm."""
    return _call_one("log", _float_input(x), None)


def sqrt(x):
    """The square root."""
    return _call_one("sqrt", _float_input(x), None)


def rsqrt(x):
    """1 / sqrt(x)."""
    return _call_one("rsqrt", _float_input(x), None)


def tanh(x):
    """The hyperbolic tangent."""
    return _call_one("tanh", _float_input(x), None)


def sigmoid(x):
    """1 / (1 + e^-x)."""
    return _call_one("sigmoid", _float_input(x), None)


def silu(x):
    """x * sigmoid(x)."""
    return _call_one("silu", _float_input(x), None)


def gelu(x):
    """GELU, the erf form: x/2 * (1 + erf(x / sqrt(2)))."""
    return _call_one("gelu", _float_input(x), None)


def gelu_tanh(x):
    """GELU, the tanh approximation: x/2 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))."""
    return _call_one("gelu_tanh", _float_input(x), None)


def add(a, b):
    """a + b, broadcast (integers wrap)."""
    return _binary("add", a, b)


def sub(a, b):
    """a - b, broadcast (integers wrap)."""
    return _binary("sub", a, b)


def mul(a, b):
    """a * b, broadcast (integers wrap)."""
    return _binary("mul", a, b)


def div(a, b):
    """a / b, broadcast: true division; integer operands are divided as float32."""
    a, b = _operands("div", a, b)
    if a.dtype in _INTEGRAL:
        a, b = _float_input(a), _float_input(b)
    return _core.call("div", [a, b], {})[0]


def pow(a, b):  # noqa: A001 - the op's name
    """a to the power b, broadcast (float dtypes)."""
    return _binary("pow", a, b)


def maximum(a, b):
    """The larger of a and b, broadcast; NaN when either is NaN."""
    return _binary("maximum", a, b)


def minimum(a, b):
    """The smaller of a and b, broadcast; NaN when either is NaN."""
    return _binary("minimum", a, b)


def eq(a, b):
    """a == b, broadcast, as bool."""
    return _binary("eq", a, b)


def ne(a, b):
    """a != b, broadcast, as bool (true where either is NaN)."""
    return _binary("ne", a, b)


def lt(a, b):
    """a < b, broadcast, as bool."""
    return _binary("lt", a, b)


def le(a, b):
    """a <= b, broadcast, as bool."""
    return _binary("le", a, b)


def gt(a, b):
    """a > b, broadcast, as bool."""
    return _binary("gt", a, b)


def ge(a, b):
    """a >= b, broadcast, as bool."""
    return _binary("ge", a, b)


def where(cond, a, b):
    """a where the bool ``cond`` is true, else b; the three broadcast, a and b promoted."""
    a, b = _operands("where", a, b)
    return _core.call("where", [cond, a, b], {})[0]


def masked_fill(x, mask, value):
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
__all__ += _reduce.__all__
