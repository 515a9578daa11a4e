"""Shared by the kernel tests: tensors of any float dtype from float64 data, their values back
as float64, the inputs as the dtype rounds them (the reference's inputs) and per-dtype
tolerances derived from each format's epsilon."""

import ml_dtypes
import numpy as np

import nbxtensor as nb
from nbxtensor.dtype import convert

FLOATS = ["float32", "float16", "bfloat16", "float64"]
SIGNED = ["int8", "int16", "int32", "int64"]
UNSIGNED = ["uint8", "uint16", "uint32", "uint64"]
_EPS = {
    "float32": float(np.finfo(np.float32).eps),
    "float16": float(np.finfo(np.float16).eps),
    "bfloat16": float(ml_dtypes.finfo(ml_dtypes.bfloat16).eps),
    "float64": float(np.finfo(np.float64).eps),
}


def rtol(dtype, ulps=8):
    """A relative tolerance of `ulps` units of the format's epsilon (float32 compute for the
    half formats rounds once more on the way out). float64 is held to 1e-12: its erf and
    transcendental routines promise that much, not the last ulp."""
    return max(ulps * _EPS[dtype], 1e-12) if dtype == "float64" else ulps * _EPS[dtype]


def rounded(values, dtype):
    """float64 `values` as `dtype` holds them, back in float64 (numpy / ml_dtypes rounding)."""
    holder = ml_dtypes.bfloat16 if dtype == "bfloat16" else np.dtype(dtype)
    return np.asarray(values, dtype=np.float64).astype(holder).astype(np.float64)


def tensor(values, dtype):
    """A contiguous tensor of `dtype` holding `values` (rounded to the dtype)."""
    values = np.asarray(values)
    if dtype == "bfloat16":
        return nb.asarray(values.astype(np.float32), dtype="bfloat16")
    return nb.asarray(np.asarray(values.astype(dtype), order="C"))


def values(t):
    """The tensor's values as a float64 numpy array (bfloat16 through its bits)."""
    if t.dtype == "bfloat16":
        return convert.bf16_bits_to_f32(np.ascontiguousarray(t.numpy())).astype(np.float64)
    return np.asarray(t.numpy()).astype(np.float64)


def random(shape, seed, low=-3.0, high=3.0):
    """Random float64 values, none of them zero (uniform in [low, high], zeros nudged)."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(low, high, size=shape)
    x[x == 0] = 0.5
    return x
