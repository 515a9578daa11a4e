"""cumulative_sum and cumulative_prod (Array API 2024.12: include_initial) against numpy's
cumsum and cumprod, per dtype and axis: floats run in float64 and round each output once,
integers and bool widen to 64 bits (wrapping)."""

import numpy as np
import pytest
from kernel_data import FLOATS, SIGNED, UNSIGNED, random, rounded, rtol, tensor, values

import nbxtensor as nb
from nbxtensor import ops

NP = {"cumulative_sum": np.cumsum, "cumulative_prod": np.cumprod}
IDENTITY = {"cumulative_sum": 0, "cumulative_prod": 1}


def reference(name, x, axis, include_initial, dtype=None):
    want = NP[name](x, axis=axis, dtype=dtype)
    if include_initial:
        shape = list(np.shape(want))
        shape[axis] = 1
        want = np.concatenate([np.full(shape, IDENTITY[name], dtype=want.dtype), want], axis=axis)
    return want


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", sorted(NP))
@pytest.mark.parametrize(("shape", "axis"), [((50,), 0), ((4, 30), 1), ((4, 30), 0), ((3, 7, 5), -2), ((3, 7, 5), 2)])
@pytest.mark.parametrize("include_initial", [False, True])
def test_float_scans_round_the_float64_running_value(dtype, name, shape, axis, include_initial):
    low, high = (0.95, 1.05) if name == "cumulative_prod" else (-3.0, 3.0)
    x = rounded(random(shape, seed=61, low=low, high=high), dtype)
    got = getattr(ops, name)(tensor(x, dtype), axis=axis, include_initial=include_initial)
    want = reference(name, x, axis, include_initial)
    assert got.dtype == dtype and got.shape == want.shape
    # each output is the float64 running value rounded once (the half formats via float32)
    np.testing.assert_allclose(values(got), want, rtol=rtol(dtype, 1), atol=rtol(dtype, 1))


@pytest.mark.parametrize("dtype", SIGNED + UNSIGNED + ["bool"])
@pytest.mark.parametrize("name", sorted(NP))
@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("include_initial", [False, True])
def test_integer_scans_widen_and_wrap(dtype, name, axis, include_initial):
    rng = np.random.default_rng(67)
    if dtype == "bool":
        x = rng.random((3, 9, 4)) < 0.8
    else:
        info = np.iinfo(dtype)
        x = rng.integers(info.min, info.max, size=(3, 9, 4), dtype=dtype, endpoint=True)
    wide = np.uint64 if dtype in UNSIGNED else np.int64
    got = getattr(ops, name)(nb.asarray(x), axis=axis, include_initial=include_initial)
    want = reference(name, x, axis, include_initial, dtype=wide)
    assert got.dtype == np.dtype(wide).name and got.shape == want.shape
    np.testing.assert_array_equal(got.numpy(), want)


def test_scans_of_views_empty_axes_and_errors():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    t = nb.asarray(x).T  # a transposed view
    np.testing.assert_array_equal(ops.cumulative_sum(t, axis=1).numpy(), np.cumsum(x.T, axis=1))
    np.testing.assert_array_equal(ops.cumulative_sum(nb.asarray(x[0])).numpy(), np.cumsum(x[0]))
    empty = ops.cumulative_prod(nb.asarray(np.zeros((0, 2), dtype=np.int32)), axis=0, include_initial=True)
    assert empty.shape == (1, 2) and empty.dtype == "int64"
    np.testing.assert_array_equal(empty.numpy(), np.ones((1, 2), dtype=np.int64))
    with pytest.raises(ValueError, match="axis is required for a 2-d input"):
        ops.cumulative_sum(nb.asarray(x))
    with pytest.raises(ValueError, match="cumulative_sum: axis 2 is out of range for 2 dims"):
        ops.cumulative_sum(nb.asarray(x), axis=2)
    with pytest.raises(ValueError, match="0-d input"):
        ops.cumulative_prod(nb.asarray(np.float32(1.0)), axis=0)
