"""cast between every pair of dtypes tensors hold, against numpy's and ml_dtypes' astype
(compared bit for bit), and the library's own decisions where those leave the result
undefined (float to integer out of range and NaN) or where it refuses (complex to real)."""

import ml_dtypes
import numpy as np
import pytest

import nbxtensor as nb
from nbxtensor import ops

# every dtype with a per-element width; numpy (or ml_dtypes) holds each one
HOLDERS = {
    "bool": np.bool_,
    "int8": np.int8,
    "int16": np.int16,
    "int32": np.int32,
    "int64": np.int64,
    "uint8": np.uint8,
    "uint16": np.uint16,
    "uint32": np.uint32,
    "uint64": np.uint64,
    "float16": np.float16,
    "bfloat16": ml_dtypes.bfloat16,
    "float32": np.float32,
    "float64": np.float64,
    "complex64": np.complex64,
    "complex128": np.complex128,
    "float8_e4m3fn": ml_dtypes.float8_e4m3fn,
    "float8_e5m2": ml_dtypes.float8_e5m2,
}
BITS = {"bfloat16": np.uint16, "float8_e4m3fn": np.uint8, "float8_e5m2": np.uint8}
COMPLEX = {"complex64", "complex128"}


def source_values(dtype):
    """Values every destination holds exactly or truncates the same way in numpy: 0..100
    (with fractions for floats), negatives for signed sources."""
    rng = np.random.default_rng(31)
    whole = rng.integers(0, 100, size=24).astype(np.float64)
    if dtype in ("float16", "bfloat16", "float32", "float64", "float8_e4m3fn", "float8_e5m2") or dtype in COMPLEX:
        whole = whole + rng.integers(0, 4, size=24) * 0.25
    if dtype.startswith("int") or dtype in ("float16", "bfloat16", "float32", "float64") or dtype in COMPLEX:
        whole[::3] *= -1
    if dtype == "bool":
        whole = (whole > 50).astype(np.float64)
    return np.asarray(whole).astype(HOLDERS[dtype]).reshape(4, 6)


def as_tensor(array, dtype):
    if dtype in BITS:
        return nb.asarray(array.astype(np.float32), dtype=dtype)
    return nb.asarray(array)


def as_bits(t_or_array, dtype):
    """Comparable bits: the tensor's (or numpy array's) elements as raw patterns."""
    array = t_or_array.numpy() if hasattr(t_or_array, "numpy") else t_or_array
    if dtype in BITS:
        return np.asarray(array).view(BITS[dtype]) if array.dtype != BITS[dtype] else np.asarray(array)
    return np.asarray(array)


@pytest.mark.filterwarnings("ignore::numpy.exceptions.ComplexWarning")
@pytest.mark.parametrize("to", sorted(HOLDERS))
@pytest.mark.parametrize("source", sorted(HOLDERS))
def test_cast_matches_numpy_and_ml_dtypes(source, to):
    x = source_values(source)
    if to.startswith("uint") and source in ("float16", "bfloat16", "float32", "float64"):
        x = np.abs(x)  # numpy leaves negative floats to unsigned undefined; see the saturation test
    t = as_tensor(x, source)
    if source in COMPLEX and to not in COMPLEX:
        with pytest.raises(ValueError, match=rf"cast: {source} to {to} is refused"):
            ops.cast(t, to)
        return
    got = ops.cast(t, to)
    assert got.dtype == to and got.shape == (4, 6)
    want = x.astype(HOLDERS[to])
    np.testing.assert_array_equal(as_bits(got, to), as_bits(want, to))


def test_cast_of_non_contiguous_inputs_and_empty_ones():
    x = np.arange(12, dtype=np.int32).reshape(3, 4)
    t = nb.asarray(x).permute([1, 0]).narrow(0, 1, 2)
    np.testing.assert_array_equal(ops.cast(t, "float64").numpy(), x.T[1:3].astype(np.float64))
    assert ops.cast(nb.asarray(np.zeros((0, 2), dtype=np.float32)), "int8").shape == (0, 2)


def test_float_to_integer_saturates_and_nan_is_zero():
    x = np.array([np.nan, 1e20, -1e20, -3.7, 3.7, np.inf], dtype=np.float32)
    got = ops.cast(nb.asarray(x), "int16").numpy()
    info = np.iinfo(np.int16)
    np.testing.assert_array_equal(got, [0, info.max, info.min, -3, 3, info.max])
    np.testing.assert_array_equal(ops.cast(nb.asarray(x), "uint8").numpy(), [0, 255, 0, 0, 3, 255])


def test_random_float64_narrowing_matches_ml_dtypes():
    x = np.random.default_rng(41).standard_normal(4096) * 100
    for to in ("bfloat16", "float16", "float8_e4m3fn", "float8_e5m2"):
        got = ops.cast(nb.asarray(x), to)
        np.testing.assert_array_equal(as_bits(got, to), as_bits(x.astype(HOLDERS[to]), to), err_msg=to)


def test_cast_refuses_packed_and_unknown_targets():
    t = nb.asarray(np.ones(3, dtype=np.float32))
    with pytest.raises(ValueError, match="packed"):
        ops.cast(t, "int4-g128-asym")
    with pytest.raises(ValueError, match="unknown dtype"):
        ops.cast(t, "float7")
