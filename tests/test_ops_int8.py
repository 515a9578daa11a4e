"""int8-g64 weights and the dynamically quantized product: the packer against its own definition
(codes within half a step of the weight, in -127..127, per group of 64 along a row, tiled), matmul_int8
against the float64 product of the dequantized weight, within the error x's 8-bit quantization allows,
its outliers (past the threshold) exact."""

import math

import numpy as np
import pytest

import nbxtensor as nbx
from float_formats import FLOATS, f64, stored, tensor
from nbxtensor import ops

RNG = np.random.default_rng(8)


def dequantize(codes, scales, k):
    """The float64 weight ``[N, K]`` that codes (tiles of 16 rows x 4 codes) and scales stand for."""
    c = np.array(codes.numpy(), np.float64)
    panels, tiles = c.shape[:2]
    rows = c.transpose(0, 2, 1, 3).reshape(panels * 16, tiles * 4)
    s = np.array(scales.numpy(), np.float64)
    n = s.shape[1]
    return rows[:n, :k] * np.repeat(s.T, 64, axis=1)[:, :k]


def quantization_bound(x, w, threshold=6.0):
    """The largest error x's quantization can give: half a step of each row's range (0 included,
    the outliers past the threshold left out: they are not quantized) times the row's weights in
    magnitude, plus float32 rounding."""
    inside = np.where(np.abs(x) > threshold, 0, x)
    lo, hi = np.minimum(inside.min(axis=-1), 0), np.maximum(inside.max(axis=-1), 0)
    step = (hi - lo) / 255
    return (0.5 * step)[..., None] * np.abs(w).sum(axis=-1) * (1 + 1e-4) + 1e-5 * (1 + np.abs(x) @ np.abs(w).T)


def test_the_outputs_are_the_tables_layout():
    codes, scales = ops.pack_int8(nbx.asarray(RNG.standard_normal((3, 72)).astype(np.float32)))
    # one panel of 16 rows, 18 tiles of 4 codes along K; a scale per group of 64 (2) and row
    assert (codes.dtype, codes.shape, scales.dtype, scales.shape) == ("int8", (1, 18, 16, 4), "float32", (2, 3))
    assert not np.array(codes.numpy())[:, :, 3:].any(), "the panel's rows past N hold zero codes"
    with pytest.raises(ValueError, match="pack_int8: K = 70 is not a multiple of 4"):
        ops.pack_int8(nbx.asarray(np.ones((3, 70), np.float32)))


@pytest.mark.parametrize("dtype", FLOATS)
def test_packing_rounds_each_weight_to_the_nearest_level_of_its_group(dtype):
    n, k = 21, 200
    w = RNG.standard_normal((n, k)) * np.linspace(0.1, 4, k)[None, :]
    w64 = stored(w, dtype)
    codes, scales = ops.pack_int8(tensor(w, dtype))
    c = np.array(codes.numpy(), np.int64)
    s = np.array(scales.numpy(), np.float64)
    assert c.min() >= -127 and c.max() <= 127
    groups = [w64[:, g * 64:(g + 1) * 64] for g in range(4)]
    np.testing.assert_allclose(s, np.stack([np.abs(g).max(axis=1) for g in groups]) / 127, rtol=1e-6)
    step = np.repeat(s.T, 64, axis=1)[:, :k]
    assert np.all(np.abs(dequantize(codes, scales, k) - w64) <= 0.5 * step * (1 + 1e-5))


@pytest.mark.parametrize("lead", [(1,), (5,), (2, 9), ()])
@pytest.mark.parametrize("k", [4, 60, 384, 1000])
def test_matmul_int8_is_within_the_quantization_error_of_the_float64_product(lead, k):
    n = 7
    w = RNG.standard_normal((n, k))
    codes, scales = ops.pack_int8(tensor(w, "float32"))
    deq = dequantize(codes, scales, k)
    # a few elements past the threshold of 6
    x = (RNG.standard_normal((*lead, k)) * np.where(RNG.random((*lead, k)) < 0.01, 9, 1)).astype(np.float32)
    bias = RNG.standard_normal(n).astype(np.float32)
    got = f64(ops.matmul_int8(nbx.asarray(x), codes, scales, nbx.asarray(bias)))
    want = x.astype(np.float64) @ deq.T + bias
    assert got.shape == (*lead, n)
    assert np.all(np.abs(got - want) <= quantization_bound(x.astype(np.float64), deq))
    plain = f64(ops.matmul_int8(nbx.asarray(x), codes, scales))
    np.testing.assert_allclose(plain + bias, got, rtol=1e-6, atol=1e-5)


def test_outliers_stay_float32_and_the_threshold_chooses_them():
    k, n = 256, 40
    w = RNG.standard_normal((n, k))
    codes, scales = ops.pack_int8(tensor(w, "float32"))
    deq = dequantize(codes, scales, k)
    x = (RNG.standard_normal((6, k)) * 0.5).astype(np.float32)
    x[:, 17] = [40, -35, 25, 50, -60, 30]  # one outlier feature, as transformers' activations have
    want = x.astype(np.float64) @ deq.T
    error = {t: np.abs(f64(ops.matmul_int8(nbx.asarray(x), codes, scales, threshold=t)) - want).max()
             for t in (6.0, 100.0, math.inf)}
    assert error[6.0] <= quantization_bound(x.astype(np.float64), deq).min()
    # the outlier inside the range (threshold 100 or none) widens every step of its row
    assert error[100.0] == error[math.inf] and error[math.inf] > 5 * error[6.0]
    # threshold 0: every element but zeros in float32
    exact = f64(ops.matmul_int8(nbx.asarray(x), codes, scales, threshold=0.0))
    np.testing.assert_allclose(exact, want, rtol=1e-5, atol=1e-4)


def test_a_strided_activation_and_a_large_product_on_the_pool():
    w = RNG.standard_normal((300, 384))
    codes, scales = ops.pack_int8(tensor(w, "float32"))
    x = RNG.standard_normal((384, 200)).astype(np.float32)
    got = f64(ops.matmul_int8(nbx.asarray(x).T, codes, scales))
    deq = dequantize(codes, scales, 384)
    want = x.T.astype(np.float64) @ deq.T
    assert np.all(np.abs(got - want) <= quantization_bound(x.T.astype(np.float64), deq))


def test_a_row_of_zeros_gives_the_bias_and_a_nan_row_gives_nan():
    codes, scales = ops.pack_int8(tensor(RNG.standard_normal((4, 16)), "float32"))
    x = np.zeros((2, 16), np.float32)
    x[1, 3] = np.nan
    got = np.array(ops.matmul_int8(nbx.asarray(x), codes, scales, nbx.asarray(np.arange(4, dtype=np.float32))).numpy())
    np.testing.assert_array_equal(got[0], np.arange(4, dtype=np.float32))
    assert np.all(np.isnan(got[1]))


def test_bad_int8_inputs_are_named():
    codes, scales = ops.pack_int8(tensor(RNG.standard_normal((4, 32)), "float32"))
    with pytest.raises(ValueError, match=r"matmul_int8: for x \[1, 16\] and N = 4, scales must be \[1, 4\]"):
        ops.matmul_int8(nbx.asarray(np.ones((1, 16), np.float32)), codes, scales)
    with pytest.raises(ValueError, match=r"matmul_int8: threshold must be ≥ 0"):
        ops.matmul_int8(nbx.asarray(np.ones((1, 32), np.float32)), codes, scales, threshold=-1.0)
    with pytest.raises(ValueError, match=r"matmul_int8 is not defined on float16 \(it takes float32\)"):
        ops.matmul_int8(tensor(np.ones((1, 32)), "float16"), codes, scales)
    with pytest.raises(ValueError, match="matmul_int8: wants x float32, codes int8"):
        ops.matmul_int8(nbx.asarray(np.ones((1, 32), np.float32)), codes.view_dtype("uint8"), scales)
    with pytest.raises(ValueError, match="pack_int8: row 1 of the weight"):
        ops.pack_int8(nbx.asarray(np.array([[1.0, 2.0, 0, 0], [np.inf, 0.0, 0, 0]], np.float32)))
    with pytest.raises(ValueError, match="pack_int8: weight must be 2-d"):
        ops.pack_int8(nbx.asarray(np.ones(8, np.float32)))
