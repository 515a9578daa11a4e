"""int8-per-channel weights and the dynamically quantized product: the packer against its own
definition (codes within half a step of the weight, in -127..127), matmul_int8 against the float64
product of the dequantized weight, within the error x's 8-bit quantization allows."""

import numpy as np
import pytest

import nbxtensor as nbx
from float_formats import FLOATS, f64, stored, tensor
from nbxtensor import ops

RNG = np.random.default_rng(8)


def dequantize(codes, scales):
    return np.array(codes.numpy(), np.float64) * np.array(scales.numpy(), np.float64)[:, None]


def quantization_bound(x, w):
    """The largest error x's quantization can give: half a step of each row's range (0 included)
    times the row's weights in magnitude, plus float32 rounding."""
    lo, hi = np.minimum(x.min(axis=-1), 0), np.maximum(x.max(axis=-1), 0)
    step = (hi - lo) / 255
    return (0.5 * step)[..., None] * np.abs(w).sum(axis=-1) * (1 + 1e-4) + 1e-5 * (1 + np.abs(x) @ np.abs(w).T)


def test_the_outputs_are_the_tables_layout():
    codes, scales = ops.pack_int8(nbx.asarray(RNG.standard_normal((3, 70)).astype(np.float32)))
    assert (codes.dtype, codes.shape, scales.dtype, scales.shape) == ("int8", (3, 70), "float32", (3,))


@pytest.mark.parametrize("dtype", FLOATS)
def test_packing_rounds_each_weight_to_the_nearest_level(dtype):
    w = RNG.standard_normal((5, 200)) * np.linspace(0.1, 4, 5)[:, None]
    w64 = stored(w, dtype)
    codes, scales = ops.pack_int8(tensor(w, dtype))
    c = np.array(codes.numpy(), np.int64)
    s = np.array(scales.numpy(), np.float64)
    assert c.min() >= -127 and c.max() <= 127 and np.all(np.abs(c).max(axis=1) == 127)
    np.testing.assert_allclose(s, np.abs(w64).max(axis=1) / 127, rtol=1e-6)
    assert np.all(np.abs(dequantize(codes, scales) - w64) <= 0.5 * s[:, None] * (1 + 1e-5))


@pytest.mark.parametrize("lead", [(1,), (5,), (2, 9), ()])
@pytest.mark.parametrize("k", [1, 63, 384, 1000])
def test_matmul_int8_is_within_the_quantization_error_of_the_float64_product(lead, k):
    n = 7
    w = RNG.standard_normal((n, k))
    codes, scales = ops.pack_int8(tensor(w, "float32"))
    deq = dequantize(codes, scales)
    x = RNG.standard_normal((*lead, k)).astype(np.float32)
    bias = RNG.standard_normal(n).astype(np.float32)
    got = f64(ops.matmul_int8(nbx.asarray(x), codes, scales, nbx.asarray(bias)))
    want = x.astype(np.float64) @ deq.T + bias
    assert got.shape == (*lead, n)
    assert np.all(np.abs(got - want) <= quantization_bound(x.astype(np.float64), deq))
    plain = f64(ops.matmul_int8(nbx.asarray(x), codes, scales))
    np.testing.assert_allclose(plain + bias, got, rtol=1e-6, atol=1e-5)


def test_a_strided_activation_and_a_large_product_on_the_pool():
    w = RNG.standard_normal((300, 384))
    codes, scales = ops.pack_int8(tensor(w, "float32"))
    x = RNG.standard_normal((384, 200)).astype(np.float32)
    got = f64(ops.matmul_int8(nbx.asarray(x).T, codes, scales))
    want = x.T.astype(np.float64) @ dequantize(codes, scales).T
    assert np.all(np.abs(got - want) <= quantization_bound(x.T.astype(np.float64), dequantize(codes, scales)))


def test_a_row_of_zeros_gives_the_bias_and_a_nan_row_gives_nan():
    codes, scales = ops.pack_int8(tensor(RNG.standard_normal((4, 16)), "float32"))
    x = np.zeros((2, 16), np.float32)
    x[1, 3] = np.nan
    got = np.array(ops.matmul_int8(nbx.asarray(x), codes, scales, nbx.asarray(np.arange(4, dtype=np.float32))).numpy())
    np.testing.assert_array_equal(got[0], np.arange(4, dtype=np.float32))
    assert np.all(np.isnan(got[1]))


def test_bad_int8_inputs_are_named():
    codes, scales = ops.pack_int8(tensor(RNG.standard_normal((4, 32)), "float32"))
    with pytest.raises(ValueError, match=r"matmul_int8: for x \[1, 16\] codes must be \[N, 16\]"):
        ops.matmul_int8(nbx.asarray(np.ones((1, 16), np.float32)), codes, scales)
    with pytest.raises(ValueError, match=r"matmul_int8 is not defined on float16 \(it takes float32\)"):
        ops.matmul_int8(tensor(np.ones((1, 32)), "float16"), codes, scales)
    with pytest.raises(ValueError, match="matmul_int8: wants x float32, codes int8"):
        ops.matmul_int8(nbx.asarray(np.ones((1, 32), np.float32)), codes.view_dtype("uint8"), scales)
    with pytest.raises(ValueError, match="pack_int8: row 1 of the weight"):
        ops.pack_int8(nbx.asarray(np.array([[1.0, 2.0], [np.inf, 0.0]], np.float32)))
    with pytest.raises(ValueError, match="pack_int8: weight must be 2-d"):
        ops.pack_int8(nbx.asarray(np.ones(8, np.float32)))
