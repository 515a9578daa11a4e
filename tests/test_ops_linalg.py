"""matmul and linear against float64 numpy, with a rigorous error bound per dtype: the sum of k
products carries at most k·u32·Σ|a||b| of float32 rounding, the result one rounding of its dtype."""

import numpy as np
import pytest

import nbxtensor as nbx
from float_formats import FLOATS, UNIT, f64, stored, tensor
from nbxtensor import ops

RNG = np.random.default_rng(20240611)


def close(got, a64, b64, ref, k, dtype, extra=0.0):
    bound = (k + 2) * UNIT["float32"] * (np.abs(a64) @ np.abs(b64)) + UNIT[dtype] * np.abs(ref) + extra
    assert got.shape == ref.shape
    assert np.all(np.abs(got - ref) <= bound + 1e-30), np.max(np.abs(got - ref) - bound)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize(
    "sa,sb",
    [((7, 5), (5, 3)), ((2, 3, 4, 6), (6, 5)), ((4, 1, 3, 6), (5, 6, 2)), ((6,), (6, 4)), ((3, 6), (6,)), ((5,), (5,))],
)
def test_matmul_matches_numpy_with_broadcast_batches_and_vectors(dtype, sa, sb):
    a, b = RNG.standard_normal(sa), RNG.standard_normal(sb)
    a64, b64 = stored(a, dtype), stored(b, dtype)
    got = f64(ops.matmul(tensor(a, dtype), tensor(b, dtype)))
    ref = np.matmul(a64, b64)
    k = sa[-1]
    close(got, a64, b64, np.asarray(ref), k, dtype)
    assert got.shape == np.matmul(a, b).shape


@pytest.mark.parametrize("dtype", FLOATS)
def test_transpose_attributes_and_strided_operands(dtype):
    # a is stored [3, 9, 8] and narrowed to [3, 6, 8]; read transposed it is [3, 8, 6].
    a_full, b_full = RNG.standard_normal((3, 9, 8)), RNG.standard_normal((5, 10))
    ta = tensor(a_full, dtype).narrow(1, 2, 6)
    tb = tensor(b_full, dtype).narrow(1, 1, 6)  # [5, 6], read transposed as [6, 5]
    got = f64(ops.matmul(ta, tb, transpose_a=True, transpose_b=True))
    a64 = np.swapaxes(stored(a_full, dtype)[:, 2:8, :], -1, -2)
    b64 = stored(b_full, dtype)[:, 1:7].T
    close(got, a64, b64, a64 @ b64, 6, dtype)
    # A transposed view passed without the attribute gives the same product.
    again = f64(ops.matmul(ta.transpose(1, 2), tb.transpose(0, 1)))
    np.testing.assert_array_equal(again, got)


def test_broadcast_stride_zero_operand():
    a = RNG.standard_normal((1, 4, 3))
    b = RNG.standard_normal((2, 3, 5))
    ta = nbx.asarray(a.astype(np.float32)).expand((2, 4, 3))
    got = f64(ops.matmul(ta, tensor(b, "float32")))
    a64, b64 = stored(np.broadcast_to(a, (2, 4, 3)), "float32"), stored(b, "float32")
    close(got, a64, b64, a64 @ b64, 3, "float32")


@pytest.mark.parametrize("dtype", FLOATS)
def test_size_zero_dims(dtype):
    zeros_k = ops.matmul(tensor(np.ones((3, 0)), dtype), tensor(np.ones((0, 4)), dtype))
    np.testing.assert_array_equal(f64(zeros_k), np.zeros((3, 4)))
    assert ops.matmul(tensor(np.ones((0, 2)), dtype), tensor(np.ones((2, 4)), dtype)).shape == (0, 4)
    assert ops.matmul(tensor(np.ones((2, 0, 2, 3)), dtype), tensor(np.ones((3, 1)), dtype)).shape == (2, 0, 2, 1)


def test_large_product_on_the_pool_matches_numpy():
    a, b = RNG.standard_normal((300, 257)), RNG.standard_normal((257, 190))
    got = f64(ops.matmul(tensor(a, "float32"), tensor(b, "float32")))
    a64, b64 = stored(a, "float32"), stored(b, "float32")
    close(got, a64, b64, a64 @ b64, 257, "float32")


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("with_bias", [False, True])
def test_linear_matches_numpy(dtype, with_bias):
    x, w, bias = RNG.standard_normal((2, 3, 8)), RNG.standard_normal((5, 8)), RNG.standard_normal(5)
    x64, w64, b64 = stored(x, dtype), stored(w, dtype), stored(bias, dtype)
    args = (tensor(x, dtype), tensor(w, dtype)) + ((tensor(bias, dtype),) if with_bias else ())
    got = f64(ops.linear(*args))
    ref = x64 @ w64.T + (b64 if with_bias else 0.0)
    extra = (8 + 3) * UNIT["float32"] * np.abs(b64) if with_bias else 0.0
    close(got, x64, w64.T, ref, 8, dtype, extra)


def test_linear_on_a_transposed_activation_and_a_vector():
    x = RNG.standard_normal((4, 3, 6))
    w = RNG.standard_normal((2, 6))
    tx = tensor(x, "float32").transpose(0, 1)  # [3, 4, 6], not foldable into rows
    x64, w64 = np.swapaxes(stored(x, "float32"), 0, 1), stored(w, "float32")
    close(f64(ops.linear(tx, tensor(w, "float32"))), x64, w64.T, x64 @ w64.T, 6, "float32")
    v = RNG.standard_normal(6)
    assert ops.linear(tensor(v, "float32"), tensor(w, "float32")).shape == (2,)


def test_linear_with_empty_inputs_is_the_bias():
    got = ops.linear(tensor(np.ones((3, 0)), "float32"), tensor(np.ones((2, 0)), "float32"), tensor(np.array([1.5, -2.0]), "float32"))
    np.testing.assert_array_equal(f64(got), [[1.5, -2.0]] * 3)


@pytest.mark.parametrize(
    "call,words",
    [
        (lambda: ops.matmul(tensor(np.ones((2, 3)), "float32"), tensor(np.ones((2, 3)), "float32")), ["matmul", "[2, 3]"]),
        (lambda: ops.matmul(tensor(np.ones((2, 3)), "float32"), tensor(np.ones((3, 2)), "float16")), ["matmul", "float16"]),
        (lambda: ops.matmul(tensor(np.ones((2, 2, 3)), "float32"), tensor(np.ones((3, 3, 2)), "float32")), ["matmul", "broadcast"]),
        (lambda: ops.matmul(tensor(np.ones(3), "float32"), tensor(np.ones((3, 2)), "float32"), transpose_a=True), ["transpose_a"]),
        (lambda: ops.linear(tensor(np.ones((2, 3)), "float32"), tensor(np.ones(3), "float32")), ["linear", "weight"]),
        (lambda: ops.linear(tensor(np.ones((2, 3)), "float32"), tensor(np.ones((4, 3)), "float32"), tensor(np.ones(3), "float32")), ["linear", "bias"]),
        (lambda: ops.call("matmul", [tensor(np.ones((2, 2)), "float32")] * 2, transpose_c=True), ["matmul", "transpose_c"]),
        (lambda: ops.matmul(nbx.asarray(np.ones((2, 2), np.bool_)), nbx.asarray(np.ones((2, 2), np.bool_))), ["matmul", "bool"]),
    ],
)
def test_bad_inputs_are_value_errors_naming_the_op(call, words):
    with pytest.raises(ValueError) as info:
        call()
    for word in words:
        assert word in str(info.value), str(info.value)


@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"])
@pytest.mark.parametrize(("sa", "sb"), [((3, 7), (7, 5)), ((2, 4, 6), (6, 3)), ((6,), (6, 4)), ((2, 1, 3, 5), (4, 5, 2)), ((5,), (5,))])
def test_integer_matmul_wraps_as_numpy(dtype, sa, sb):
    info = np.iinfo(dtype)
    rng = np.random.default_rng(83)
    a = rng.integers(info.min, info.max, size=sa, dtype=dtype, endpoint=True)
    b = rng.integers(info.min, info.max, size=sb, dtype=dtype, endpoint=True)
    got = ops.matmul(nbx.asarray(a), nbx.asarray(b))
    want = np.matmul(a, b)  # numpy wraps in the dtype
    assert got.dtype == dtype and got.shape == want.shape
    np.testing.assert_array_equal(got.numpy(), want)


@pytest.mark.parametrize(("sa", "sb"), [((30, 70), (70, 50)), ((3, 8, 6), (3, 6, 9)), ((6,), (6, 4)), ((2, 1, 3, 5), (4, 5, 2))])
def test_float64_matmul_keeps_float64_precision(sa, sb):
    a, b = RNG.standard_normal(sa), RNG.standard_normal(sb)
    got = ops.matmul(nbx.asarray(a), nbx.asarray(b))
    assert got.dtype == "float64"
    np.testing.assert_allclose(got.numpy(), np.matmul(a, b), rtol=1e-12, atol=1e-12)
    if a.ndim > 1:
        # operands stored transposed, read through the transpose attributes
        at, bt = (nbx.asarray(np.ascontiguousarray(m.swapaxes(-1, -2))) for m in (a, b))
        got = ops.matmul(at, bt, transpose_a=True, transpose_b=True)
        np.testing.assert_allclose(got.numpy(), np.matmul(a, b), rtol=1e-12, atol=1e-12)


def test_results_do_not_depend_on_the_thread_count():
    from nbxtensor.backend.cpu import pool

    a, b = tensor(RNG.standard_normal((4, 300, 257)), "float32"), tensor(RNG.standard_normal((257, 190)), "float32")
    q = tensor(RNG.standard_normal((2, 4, 33, 16)), "float32")
    runs = []
    try:
        for threads in (1, 2):
            pool.set_threads(threads)
            runs.append((f64(ops.matmul(a, b)), f64(ops.sdpa(q, q, q, causal=True))))
    finally:
        pool.set_threads(None)
    for one, two in zip(*runs):
        np.testing.assert_array_equal(one, two)
