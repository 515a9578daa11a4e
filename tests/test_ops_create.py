"""iota (start + step * i) against numpy: floats computed in float64 and rounded once to the
dtype, integers wrapping in 64 bits, the default dtypes, and the errors by name."""

import ml_dtypes
import numpy as np
import pytest
from kernel_data import FLOATS, SIGNED, UNSIGNED

from nbxtensor import ops


def holder(dtype):
    return ml_dtypes.bfloat16 if dtype == "bfloat16" else np.dtype(dtype)


def rounded_once(x, dtype):
    """float64 `x` rounded once to `dtype`: through a float32 rounded to odd (toward zero, the
    lowest bit set when inexact), which a 16-bit format's nearest-even rounding then rounds as
    it would round `x` itself (ml_dtypes' bfloat16 from float64 rounds twice, through float32)."""
    if dtype in ("float32", "float64"):
        return x.astype(dtype)
    nearest = x.astype(np.float32)
    inexact = (nearest.astype(np.float64) != x) & ~np.isnan(x)
    bits = nearest.view(np.uint32)
    bits = np.where(inexact & (np.abs(nearest.astype(np.float64)) > np.abs(x)), bits - 1, bits)
    bits = np.where(inexact, bits | 1, bits).astype(np.uint32)
    return bits.view(np.float32).astype(holder(dtype))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("n", [0, 1, 17, 5000])
@pytest.mark.parametrize(("start", "step"), [(0, 1), (-3.25, 0.1), (1e4, -7.3e-3), (2.5, 0.0)])
def test_float_iota_rounds_the_float64_value_once(dtype, n, start, step):
    got = ops.iota(n, start, step, dtype=dtype)
    assert got.dtype == dtype and got.shape == (n,) and got.device == "cpu"
    want = rounded_once(start + np.arange(n, dtype=np.float64) * step, dtype)
    np.testing.assert_array_equal(np.asarray(got.numpy()).view(want.dtype), want)
    if dtype == "float16":  # numpy's float64 -> float16 rounds once: the same values
        np.testing.assert_array_equal(want, (start + np.arange(n, dtype=np.float64) * step).astype(np.float16))


@pytest.mark.parametrize("dtype", SIGNED + UNSIGNED)
@pytest.mark.parametrize(("start", "step"), [(0, 1), (120, 3), (5, -2), (-7, 11)])
def test_integer_iota_wraps_as_64_bit_arithmetic(dtype, start, step):
    n = 300
    got = ops.iota(n, start, step, dtype=dtype)
    assert got.dtype == dtype
    wide = (np.int64(start) + np.arange(n, dtype=np.int64) * np.int64(step)).astype(np.int64)
    np.testing.assert_array_equal(got.numpy(), wide.astype(dtype))


def test_iota_default_dtypes_and_errors_by_name():
    assert ops.iota(4).dtype == "int64"
    np.testing.assert_array_equal(ops.iota(4).numpy(), np.arange(4))
    half = ops.iota(3, 0, 0.5)
    assert half.dtype == "float32"
    np.testing.assert_array_equal(half.numpy(), np.array([0.0, 0.5, 1.0], dtype=np.float32))
    with pytest.raises(ValueError, match="iota: an iota of int32 takes an integer start"):
        ops.iota(3, 0.5, 1, dtype="int32")
    with pytest.raises(ValueError, match="negative"):
        ops.iota(-1)
    with pytest.raises(ValueError, match="bool"):
        ops.iota(2, True)
    with pytest.raises(ValueError, match="iota is not defined on bool"):
        ops.iota(2, dtype="bool")
