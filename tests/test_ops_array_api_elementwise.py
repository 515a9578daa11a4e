"""The Array API's elementwise functions against numpy: every one on float32 and float64 (and
the integer and bool dtypes where the standard defines it), with its special values, through
the functions of nbxtensor.ops and through the Tensor operators."""

import math

import numpy as np
import pytest

import nbxtensor as nbx
from nbxtensor import ops

RNG = np.random.default_rng(11)
FLOATS = ["float32", "float64"]
INTS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
SPECIAL = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, 2.5, -2.5, 1e-40, 1e30])

# op: (numpy function, inputs' domain)
UNARY_FLOAT = {
    "sin": (np.sin, (-10, 10)),
    "cos": (np.cos, (-10, 10)),
    "tan": (np.tan, (-1.5, 1.5)),
    "asin": (np.arcsin, (-1, 1)),
    "acos": (np.arccos, (-1, 1)),
    "atan": (np.arctan, (-50, 50)),
    "sinh": (np.sinh, (-20, 20)),
    "cosh": (np.cosh, (-20, 20)),
    "tanh": (np.tanh, (-20, 20)),
    "asinh": (np.arcsinh, (-1e3, 1e3)),
    "acosh": (np.arccosh, (1, 1e3)),
    "atanh": (np.arctanh, (-0.999, 0.999)),
    "exp": (np.exp, (-80, 80)),
    "expm1": (np.expm1, (-5, 5)),
    "log": (np.log, (1e-6, 1e6)),
    "log1p": (np.log1p, (-0.999, 1e3)),
    "log2": (np.log2, (1e-6, 1e6)),
    "log10": (np.log10, (1e-6, 1e6)),
    "sqrt": (np.sqrt, (0, 1e6)),
    "reciprocal": (np.reciprocal, (0.1, 100)),
    "square": (np.square, (-1e3, 1e3)),
}
# op: numpy function; exact on every dtype the op takes
UNARY_EXACT = {
    "floor": np.floor,
    "ceil": np.ceil,
    "round": np.round,  # ties to even, as the standard says
    "trunc": np.trunc,
    "sign": np.sign,
    "abs": np.abs,
    "neg": np.negative,
    "isnan": np.isnan,
    "isinf": np.isinf,
    "isfinite": np.isfinite,
    "signbit": np.signbit,
}
BINARY_FLOAT = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "div": np.divide,
    "pow": np.power,
    "atan2": np.arctan2,
    "hypot": np.hypot,
    "logaddexp": np.logaddexp,
    "remainder": np.remainder,
    "floor_divide": np.floor_divide,
    "maximum": np.maximum,
    "minimum": np.minimum,
    "copysign": np.copysign,
    "nextafter": np.nextafter,
}
COMPARISONS = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal}
BITWISE = {"bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or, "bitwise_xor": np.bitwise_xor}
LOGICAL = {"logical_and": np.logical_and, "logical_or": np.logical_or, "logical_xor": np.logical_xor}
# ulps of the dtype allowed for one libm-style function (numpy's own libm differs by as much)
ULPS = 4


def values(t):
    return np.from_dlpack(t.contiguous())


def assert_close(got, want, dtype, ulps=ULPS):
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    assert got.shape == want.shape
    same_nan = np.isnan(got) == np.isnan(want)
    assert same_nan.all(), f"NaN at {np.flatnonzero(~same_nan)[:5]}: got {got[~same_nan][:5]}, want {want[~same_nan][:5]}"
    finite = np.isfinite(want)
    assert (got[~finite & ~np.isnan(want)] == want[~finite & ~np.isnan(want)]).all(), "infinities differ"
    spacing = np.abs(np.spacing(want[finite].astype(dtype))).astype(np.float64)
    error = np.abs(got[finite] - want[finite])
    worst = (error / spacing).max(initial=0.0)
    assert worst <= ulps, f"{worst:.1f} ulp"


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("op", sorted(UNARY_FLOAT))
def test_unary_float_functions_match_numpy(op, dtype):
    fn, (low, high) = UNARY_FLOAT[op]
    x = RNG.uniform(low, high, 500).astype(dtype)
    assert_close(values(getattr(ops, op)(nbx.asarray(x))), fn(x.astype(np.float64)), dtype)
    with np.errstate(all="ignore"):
        special = SPECIAL.astype(dtype)
        got, want = values(getattr(ops, op)(nbx.asarray(special))), fn(special)
    # at the special values the standard fixes NaN, the infinities and signed zeros
    defined = ~np.isfinite(want) | (want == 0)
    np.testing.assert_array_equal(got[defined], want[defined])
    np.testing.assert_array_equal(np.signbit(got[want == 0]), np.signbit(want[want == 0]))


def defined_on(op, dtype):
    """Whether the Array API defines the exact unary `op` on `dtype`."""
    if op == "signbit":
        return dtype in FLOATS
    return dtype != "bool"  # bool is not numeric


@pytest.mark.parametrize(
    ("op", "dtype"),
    [(op, d) for op in sorted(UNARY_EXACT) for d in FLOATS + INTS if defined_on(op, d)],
)
def test_exact_unary_functions_match_numpy(op, dtype):
    if dtype in FLOATS:
        x = np.concatenate([RNG.uniform(-100, 100, 300), SPECIAL]).astype(dtype)
    else:
        info = np.iinfo(dtype)
        drawn = RNG.integers(max(info.min, -1000), min(info.max, 1000), 200).astype(dtype)
        x = np.concatenate([drawn, np.array([info.min, info.max, 0], dtype=dtype)])
    with np.errstate(all="ignore"):
        want = UNARY_EXACT[op](x)
    got = values(getattr(ops, op)(nbx.asarray(x)))
    assert got.dtype == want.dtype, f"{op} on {dtype}: {got.dtype}, numpy {want.dtype}"
    np.testing.assert_array_equal(got, want)
    if dtype in FLOATS:
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


@pytest.mark.parametrize("op", sorted(set(UNARY_EXACT) - {"signbit"}))
def test_bool_is_not_numeric_and_is_refused_by_name(op):
    with pytest.raises(ValueError, match=f"{op} is not defined on bool"):
        getattr(ops, op)(nbx.asarray(np.array([True, False])))


def test_signbit_reads_integers_and_bool_as_float32_as_every_float_op_does():
    for x in (np.array([-3, 0, 5], np.int16), np.array([True, False])):
        np.testing.assert_array_equal(values(ops.signbit(nbx.asarray(x))), np.signbit(x.astype(np.float32)))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("op", sorted(BINARY_FLOAT))
def test_binary_float_functions_match_numpy_with_broadcasting(op, dtype):
    a = RNG.uniform(-20, 20, (4, 1, 30)).astype(dtype)
    b = RNG.uniform(-20, 20, (3, 1)).astype(dtype)
    if op == "pow":
        a = np.abs(a)
    want = BINARY_FLOAT[op](a.astype(np.float64), b.astype(np.float64))
    if op in ("nextafter", "copysign", "maximum", "minimum", "remainder", "floor_divide"):
        want = BINARY_FLOAT[op](a, b)  # exact in the dtype: numpy's own values
    got = values(getattr(ops, op)(nbx.asarray(a), nbx.asarray(b)))
    assert got.shape == want.shape and got.dtype == np.dtype(dtype)
    exact = op in ("maximum", "minimum", "copysign", "nextafter", "remainder", "floor_divide")
    assert_close(got, want, dtype, ulps=0 if exact else ULPS)
    # special values, every pair
    s = SPECIAL.astype(dtype)
    x, y = np.meshgrid(s, s)
    with np.errstate(all="ignore"):
        want = BINARY_FLOAT[op](x, y)
        if op == "floor_divide":
            # the standard, where numpy's divmod arithmetic gives NaN or -1: one operand
            # infinite (the other finite) gives x / y, an infinity or a zero signed as it
            one_infinite = np.isinf(x) != np.isinf(y)
            want = np.where(one_infinite & ~np.isnan(x) & ~np.isnan(y), x / y, want)
    got = values(getattr(ops, op)(nbx.asarray(x.copy()), nbx.asarray(y.copy())))
    defined = ~np.isfinite(want) | (want == 0) | exact
    np.testing.assert_array_equal(got[defined], want[defined])
    zero = defined & (want == 0)
    np.testing.assert_array_equal(np.signbit(got[zero]), np.signbit(want[zero]), err_msg=f"{op}: signs of zero")


@pytest.mark.parametrize("dtype", INTS)
def test_integer_arithmetic_follows_python_and_wraps(dtype):
    info = np.iinfo(dtype)
    a = RNG.integers(max(info.min, -500), min(info.max, 500), 200).astype(dtype)
    b = RNG.integers(1, min(info.max, 30), 200).astype(dtype)
    if info.min < 0:
        b = (b * np.where(RNG.random(200) < 0.5, -1, 1)).astype(dtype)
    ta, tb = nbx.asarray(a), nbx.asarray(b)
    for op, fn in [("remainder", np.remainder), ("floor_divide", np.floor_divide), ("add", np.add), ("mul", np.multiply)]:
        np.testing.assert_array_equal(values(getattr(ops, op)(ta, tb)), fn(a, b), err_msg=op)
    for op, fn in BITWISE.items():
        np.testing.assert_array_equal(values(getattr(ops, op)(ta, tb)), fn(a, b), err_msg=op)
    shifts = (np.abs(b.astype(np.int64)) % (8 * a.itemsize)).astype(dtype)
    ts = nbx.asarray(shifts)
    np.testing.assert_array_equal(values(ops.bitwise_left_shift(ta, ts)), np.left_shift(a, shifts))
    np.testing.assert_array_equal(values(ops.bitwise_right_shift(ta, ts)), np.right_shift(a, shifts))
    np.testing.assert_array_equal(values(ops.bitwise_invert(ta)), np.invert(a))
    np.testing.assert_array_equal(values(ops.pow(ta, nbx.asarray((shifts % 3).astype(dtype)))), np.power(a, shifts % 3))
    # an integer divided by zero: 0 for both, as the spec's integer kernels write it
    zero = nbx.asarray(np.zeros_like(a))
    np.testing.assert_array_equal(values(ops.floor_divide(ta, zero)), np.zeros_like(a))
    np.testing.assert_array_equal(values(ops.remainder(ta, zero)), np.zeros_like(a))


@pytest.mark.parametrize("dtype", ["float32", "int32", "uint8", "bool"])
def test_comparisons_and_logical_ops_match_numpy(dtype):
    a = (RNG.integers(0, 3, (5, 6)) if dtype != "float32" else RNG.integers(-2, 3, (5, 6))).astype(dtype)
    b = (RNG.integers(0, 3, (6,)) if dtype != "float32" else RNG.integers(-2, 3, (6,))).astype(dtype)
    ta, tb = nbx.asarray(a), nbx.asarray(b)
    for op, fn in {**COMPARISONS, **LOGICAL}.items():
        got = values(getattr(ops, op)(ta, tb))
        assert got.dtype == np.bool_, op
        np.testing.assert_array_equal(got, fn(a, b), err_msg=op)
    np.testing.assert_array_equal(values(ops.logical_not(ta)), np.logical_not(a))
    if dtype == "bool":
        for op, fn in BITWISE.items():
            np.testing.assert_array_equal(values(getattr(ops, op)(ta, tb)), fn(a, b), err_msg=op)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int16", "uint8"])
def test_clip_matches_numpy_with_either_bound(dtype):
    x = (RNG.uniform(-50, 50, 100) if dtype.startswith("float") else RNG.integers(0, 100, 100)).astype(dtype)
    t = nbx.asarray(x)
    np.testing.assert_array_equal(values(ops.clip(t, min=10, max=40)), np.clip(x, 10, 40))
    np.testing.assert_array_equal(values(ops.clip(t, min=10)), np.clip(x, 10, None))
    np.testing.assert_array_equal(values(ops.clip(t, max=40)), np.clip(x, None, 40))
    np.testing.assert_array_equal(values(ops.clip(t)), x)
    if dtype.startswith("float"):
        nan = values(ops.clip(nbx.asarray(np.array([np.nan, 1.0], dtype)), min=0, max=2))
        assert math.isnan(nan[0]) and nan[1] == 1.0


def test_the_operators_call_the_same_ops():
    a = RNG.uniform(-9, 9, (3, 4)).astype(np.float32)
    b = RNG.uniform(1, 9, (4,)).astype(np.float32)
    ta, tb = nbx.asarray(a), nbx.asarray(b)
    np.testing.assert_array_equal(values(ta // tb), np.floor_divide(a, b))
    np.testing.assert_array_equal(values(ta % tb), np.remainder(a, b))
    np.testing.assert_array_equal(values(abs(ta)), np.abs(a))
    np.testing.assert_array_equal(values(-ta), -a)
    np.testing.assert_array_equal(values(+ta), a)
    assert_close(values(ta**2), a.astype(np.float64) ** 2, "float32")
    i = np.array([5, -6, 7], np.int32)
    ti = nbx.asarray(i)
    np.testing.assert_array_equal(values(ti & 3), i & 3)
    np.testing.assert_array_equal(values(ti | 8), i | 8)
    np.testing.assert_array_equal(values(ti ^ 1), i ^ 1)
    np.testing.assert_array_equal(values(ti << 2), i << 2)
    np.testing.assert_array_equal(values(ti >> 1), i >> 1)
    np.testing.assert_array_equal(values(~ti), ~i)
    # a Python scalar is weak: int32 stays int32, float32 stays float32
    assert (ti % 4).dtype == "int32" and (ta * 2.5).dtype == "float32"
