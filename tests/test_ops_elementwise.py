"""Elementwise ops (unary, binary, comparisons, where, masked_fill) against float64 numpy
references on random inputs, each dtype within a tolerance derived from its epsilon."""

import math

import numpy as np
import pytest
from kernel_data import FLOATS, SIGNED, UNSIGNED, random, rounded, rtol, tensor, values

import nbxtensor as nb
from nbxtensor import ops

_erfc = np.vectorize(math.erfc)

UNARY = {
    "neg": (np.negative, None),
    "abs": (np.abs, None),
    "exp": (np.exp, None),
    "log": (np.log, "positive"),
    "sqrt": (np.sqrt, "positive"),
    "rsqrt": (lambda x: 1.0 / np.sqrt(x), "positive"),
    "tanh": (np.tanh, None),
    "sigmoid": (lambda x: 1.0 / (1.0 + np.exp(-x)), None),
    "silu": (lambda x: x / (1.0 + np.exp(-x)), None),
    "gelu": (lambda x: 0.5 * x * _erfc(-x / math.sqrt(2.0)), None),
    "gelu_tanh": (
        lambda x: 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3))),
        None,
    ),
    "relu": (lambda x: np.maximum(x, 0.0), None),
}


def close(got, want, dtype, ulps=8):
    np.testing.assert_allclose(got, want, rtol=rtol(dtype, ulps), atol=rtol(dtype, ulps) * 1e-2)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_floats(name, dtype):
    reference, domain = UNARY[name]
    x = random((7, 33), seed=len(name))
    if domain == "positive":
        x = np.abs(x) + 0.1
    x = rounded(x, dtype)
    got = getattr(ops, name)(tensor(x, dtype))
    assert got.dtype == dtype and got.shape == (7, 33)
    close(values(got), reference(x), dtype)


@pytest.mark.parametrize("dtype", SIGNED)
def test_unary_signed_integers_wrap_like_numpy(dtype):
    info = np.iinfo(dtype)
    x = np.random.default_rng(1).integers(info.min, info.max, size=50, dtype=dtype)
    x[0] = info.min
    t = nb.asarray(x)
    np.testing.assert_array_equal(ops.neg(t).numpy(), -x)
    np.testing.assert_array_equal(ops.abs(t).numpy(), np.abs(x))
    np.testing.assert_array_equal(ops.relu(t).numpy(), np.maximum(x, 0))


def test_float_math_on_integers_reads_float32():
    x = np.array([1, 4, 9], dtype=np.int32)
    got = ops.sqrt(nb.asarray(x))
    assert got.dtype == "float32"
    np.testing.assert_array_equal(got.numpy(), np.sqrt(x.astype(np.float32)))


def test_unary_non_contiguous_and_edges():
    x = random((6, 8), seed=3)
    t = tensor(x, "float32")
    transposed = t.permute([1, 0])
    close(values(ops.exp(transposed)), np.exp(x.astype(np.float32).astype(np.float64)).T, "float32")
    narrowed = t.narrow(1, 2, 3)
    close(values(ops.tanh(narrowed)), np.tanh(rounded(x, "float32")[:, 2:5]), "float32")
    assert ops.exp(tensor(np.zeros((0, 3)), "float32")).shape == (0, 3)
    one = ops.sigmoid(tensor(np.array(0.25), "float16"))
    assert one.shape == () and abs(values(one) - 1 / (1 + math.exp(-0.25))) < 1e-3


def test_unary_refuses_unknown_dtypes_by_name():
    with pytest.raises(ValueError, match=r"relu is not defined on bool"):
        ops.relu(nb.asarray(np.array([True, False])))
    # relu takes every integer dtype
    np.testing.assert_array_equal(ops.relu(nb.asarray(np.array([1, 2], dtype=np.uint8))).numpy(), [1, 2])


BINARY = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "div": np.divide,
    "pow": np.power,
    "maximum": np.maximum,
    "minimum": np.minimum,
    "silu_mul": lambda a, b: a / (1.0 + np.exp(-a)) * b,
}


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", sorted(BINARY))
@pytest.mark.parametrize("shapes", [((4, 5), (4, 5)), ((3, 1, 5), (4, 1)), ((5,), ()), ((1,), (2, 3, 1))])
def test_binary_floats_broadcast(name, dtype, shapes):
    a = rounded(random(shapes[0], seed=11), dtype)
    b = rounded(random(shapes[1], seed=12), dtype)
    if name == "pow":
        a = rounded(np.abs(a) + 0.25, dtype)
    got = getattr(ops, name)(tensor(a, dtype), tensor(b, dtype))
    want = BINARY[name](a, b)
    assert got.dtype == dtype and got.shape == want.shape
    close(values(got), want, dtype, ulps=16 if name == "pow" else 8)


@pytest.mark.parametrize("dtype", SIGNED + UNSIGNED)
@pytest.mark.parametrize("name", ["add", "sub", "mul", "maximum", "minimum"])
def test_binary_integers_wrap_like_numpy(name, dtype):
    info = np.iinfo(dtype)
    rng = np.random.default_rng(5)
    a = rng.integers(info.min, info.max, size=(3, 4), dtype=dtype, endpoint=True)
    b = rng.integers(info.min, info.max, size=(4,), dtype=dtype, endpoint=True)
    with np.errstate(over="ignore"):
        want = BINARY[name](a, b)
    got = getattr(ops, name)(nb.asarray(a), nb.asarray(b))
    assert got.dtype == dtype
    np.testing.assert_array_equal(got.numpy(), want)


def test_binary_non_contiguous_operands():
    a = random((5, 6), seed=21)
    b = random((6, 5), seed=22)
    ta, tb = tensor(a, "float32"), tensor(b, "float32")
    got = ops.mul(ta.narrow(1, 1, 4), tb.permute([1, 0]).narrow(1, 0, 4))
    close(values(got), rounded(a, "float32")[:, 1:5] * rounded(b, "float32").T[:, :4], "float32")
    expanded = ta.narrow(0, 0, 1).expand([5, 6])
    close(values(ops.sub(expanded, ta)), rounded(a, "float32")[:1] - rounded(a, "float32"), "float32")


def test_binary_size_zero_and_nan():
    empty = ops.add(tensor(np.zeros((0, 4)), "float32"), tensor(np.ones(4), "float32"))
    assert empty.shape == (0, 4)
    got = values(ops.maximum(tensor([np.nan, 1.0], "float32"), tensor([0.0, np.nan], "float32")))
    assert np.isnan(got).all()


def test_promotion_of_tensors_and_weak_scalars():
    i = nb.asarray(np.array([1, 2, 3], dtype=np.int32))
    f = nb.asarray(np.array([0.5, 0.25, 2.0], dtype=np.float16))
    mixed = ops.add(i, f)
    assert mixed.dtype == nb.dtype.promotion.binary_result("int32", "float16")
    np.testing.assert_array_equal(values(mixed), np.array([1.5, 2.25, 5.0]))
    half = ops.mul(f, 3.0)  # a Python float keeps float16
    assert half.dtype == "float16"
    np.testing.assert_array_equal(values(half), np.array([1.5, 0.75, 6.0]))
    assert ops.add(i, 2).dtype == "int32"
    assert ops.add(i, 0.5).dtype == nb.dtype.promotion.scalar_result("int32", 0.5)
    quotient = ops.div(i, nb.asarray(np.array([2, 4, 8], dtype=np.int32)))
    assert quotient.dtype == "float32"
    np.testing.assert_array_equal(quotient.numpy(), np.array([0.5, 0.5, 0.375], dtype=np.float32))
    with pytest.raises(ValueError, match="300"):
        ops.add(nb.asarray(np.array([1], dtype=np.uint8)), 300)


def test_binary_refusals_name_op_and_operands():
    a = tensor(np.ones((2, 3)), "float32")
    with pytest.raises(ValueError, match=r"add: shapes \(2, 3\) and \(4,\)"):
        ops.add(a, tensor(np.ones(4), "float32"))
    with pytest.raises(ValueError, match=r"mul: operands are float32 and int32"):
        nb.ops.call("mul", [a, nb.asarray(np.ones((2, 3), dtype=np.int32))])
    with pytest.raises(ValueError, match=r"bitwise_and is not defined on float32"):
        ops.bitwise_and(a, a)
    # integer pow is defined (wrapping), as numpy's
    got = ops.pow(nb.asarray(np.array([2, -3], dtype=np.int32)), nb.asarray(np.array([10, 3], dtype=np.int32)))
    np.testing.assert_array_equal(got.numpy(), [1024, -27])


def test_the_one_output_call_refuses_ops_of_several_outputs():
    from nbxtensor import _core

    x = tensor(np.arange(6.0).reshape(2, 3), "float32")
    np.testing.assert_array_equal(_core.ops.call_one("neg", x, {}).numpy(), -np.arange(6.0).reshape(2, 3))
    np.testing.assert_array_equal(_core.ops.call_one("sum", x, {"axes": [1]}).numpy(), [3.0, 12.0])
    weight = tensor(np.arange(256.0).reshape(2, 128), "float32")
    with pytest.raises(ValueError, match="pack_int4: gives 3 outputs, call_one takes ops of one"):
        _core.ops.call_one("pack_int4", weight, {})


COMPARE = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal}


@pytest.mark.parametrize("dtype", FLOATS + SIGNED + UNSIGNED + ["bool"])
@pytest.mark.parametrize("name", sorted(COMPARE))
def test_comparisons(name, dtype):
    rng = np.random.default_rng(7)
    if dtype in FLOATS:
        a = rounded(rng.integers(-3, 3, size=(4, 5)) * 0.5, dtype)
        b = rounded(rng.integers(-3, 3, size=(5,)) * 0.5, dtype)
        a[0, 0] = np.nan
        ta, tb = tensor(a, dtype), tensor(b, dtype)
    else:
        a = rng.integers(0, 3, size=(4, 5)).astype(dtype)
        b = rng.integers(0, 3, size=(5,)).astype(dtype)
        ta, tb = nb.asarray(a), nb.asarray(b)
    got = getattr(ops, name)(ta, tb)
    assert got.dtype == "bool"
    np.testing.assert_array_equal(got.numpy(), COMPARE[name](a, b))


def test_comparison_with_a_scalar_and_transposed_operand():
    a = random((3, 4), seed=9)
    got = ops.gt(tensor(a, "float32").permute([1, 0]), 0.0)
    np.testing.assert_array_equal(got.numpy(), rounded(a, "float32").T > 0)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "int64", "uint8", "bool", "complex64"])
def test_where_broadcasts_and_selects(dtype):
    rng = np.random.default_rng(13)
    cond = rng.integers(0, 2, size=(3, 1)).astype(bool)
    a = rng.integers(1, 9, size=(3, 4))
    b = rng.integers(1, 9, size=(4,))
    if dtype == "bfloat16":
        ta, tb = tensor(a, dtype), tensor(b, dtype)
    else:
        ta, tb = nb.asarray(a.astype(dtype)), nb.asarray(b.astype(dtype))
    got = ops.where(nb.asarray(cond), ta, tb)
    assert got.dtype == dtype and got.shape == (3, 4)
    want = np.where(cond, a, b).astype(np.float64 if dtype == "bfloat16" else dtype)
    np.testing.assert_array_equal(values(got) if dtype == "bfloat16" else got.numpy(), want)


def test_where_promotes_and_refuses_a_non_bool_condition():
    cond = nb.asarray(np.array([True, False]))
    got = ops.where(cond, nb.asarray(np.array([1, 2], dtype=np.int32)), 0.5)
    assert got.dtype == nb.dtype.promotion.scalar_result("int32", 0.5)
    np.testing.assert_array_equal(got.numpy(), [1.0, 0.5])
    with pytest.raises(ValueError, match=r"where: the condition is int32, not bool"):
        ops.where(nb.asarray(np.array([1, 0], dtype=np.int32)), tensor([1.0, 2.0], "float32"), tensor([3.0, 4.0], "float32"))


@pytest.mark.parametrize("dtype", FLOATS)
def test_masked_fill_floats_clamps_to_the_format(dtype):
    x = rounded(random((2, 5), seed=17), dtype)
    mask = np.random.default_rng(18).integers(0, 2, size=(5,)).astype(bool)
    got = ops.masked_fill(tensor(x, dtype), nb.asarray(mask), -3.39e38)
    finite_max = {"float16": 65504.0, "bfloat16": float(ml_max_bf16()), "float32": -3.39e38, "float64": -3.39e38}
    fill = -finite_max[dtype] if dtype in ("float16", "bfloat16") else finite_max[dtype]
    want = np.where(mask, rounded(np.float64(fill), dtype), x)
    np.testing.assert_array_equal(values(got), want)


def ml_max_bf16():
    import ml_dtypes

    return ml_dtypes.finfo(ml_dtypes.bfloat16).max


@pytest.mark.parametrize("dtype", ["int8", "int64", "uint16"])
def test_masked_fill_integers_clamp_and_refuse_fractions(dtype):
    x = np.arange(6, dtype=dtype).reshape(2, 3) + 1
    mask = np.array([[True], [False]])
    got = ops.masked_fill(nb.asarray(x), nb.asarray(mask), -1000)
    info = np.iinfo(dtype)
    np.testing.assert_array_equal(got.numpy(), np.where(mask, max(-1000, info.min), x))
    with pytest.raises(ValueError, match=rf"masked_fill.*{dtype}"):
        ops.masked_fill(nb.asarray(x), nb.asarray(mask), 0.5)


def test_masked_fill_refuses_a_non_bool_mask():
    with pytest.raises(ValueError, match=r"masked_fill: the mask is float32"):
        ops.masked_fill(tensor([1.0], "float32"), tensor([1.0], "float32"), 0.0)
