"""Moving float arrays in and out of nbxtensor in float32, float16 and bfloat16, and the unit
roundoff of each storage format (numpy finfo; bfloat16: 7 stored mantissa bits)."""

import numpy as np

import nbxtensor as nbx
from nbxtensor.dtype import convert

FLOATS = ["float32", "float16", "bfloat16"]

# Unit roundoff (half an ulp of 1) of each storage dtype.
UNIT = {"float32": np.finfo(np.float32).eps / 2, "float16": np.finfo(np.float16).eps / 2, "bfloat16": 2.0**-7 / 2}


def tensor(values, dtype):
    """A tensor of ``dtype`` holding ``values`` (rounded to the dtype)."""
    values = np.ascontiguousarray(values)
    if dtype == "bfloat16":
        return nbx.asarray(values.astype(np.float32), dtype="bfloat16")
    return nbx.asarray(values.astype(dtype))


def f64(t):
    """A float tensor's values as a float64 numpy array."""
    if t.dtype == "bfloat16":
        bits = np.array(t.numpy())  # a copy, keeping a 0-d shape
        return np.asarray(convert.bf16_bits_to_f32(bits), dtype=np.float64).reshape(bits.shape)
    return np.array(np.from_dlpack(t.contiguous()), dtype=np.float64)


def stored(values, dtype):
    """``values`` as they are once stored in ``dtype``, in float64."""
    return f64(tensor(values, dtype))
