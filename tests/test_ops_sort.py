"""sort and argsort against numpy (stable sorts; NaN last ascending, first descending as the
Array API's reference flips numpy's), per dtype, axis and shape."""

import numpy as np
import pytest
from kernel_data import FLOATS, SIGNED, UNSIGNED, tensor, values

import nbxtensor as nb
from nbxtensor import ops


def numpy_argsort(x, axis, descending):
    if not descending:
        return np.argsort(x, axis=axis, kind="stable")
    # the Array API's reference: numpy's stable sort of the flipped input, flipped back
    flipped = np.flip(np.argsort(np.flip(x, axis=axis), axis=axis, kind="stable"), axis=axis)
    return x.shape[axis] - 1 - flipped


def data(dtype, shape, seed):
    rng = np.random.default_rng(seed)
    low = 0 if dtype in UNSIGNED else -20
    x = rng.integers(low, 20, size=shape).astype(np.float64)  # few values: ties everywhere
    if dtype in FLOATS:
        x.flat[::13] = np.nan
        x.flat[3::11] = -0.0
    return x


@pytest.mark.parametrize("dtype", FLOATS + SIGNED + UNSIGNED)
@pytest.mark.parametrize(("shape", "axis"), [((1,), 0), ((40,), 0), ((5, 33), -1), ((5, 33), 0), ((3, 17, 4), 1)])
@pytest.mark.parametrize("descending", [False, True])
def test_argsort_and_sort_match_numpy(dtype, shape, axis, descending):
    x = data(dtype, shape, seed=71)
    t = tensor(x, dtype) if dtype in FLOATS else nb.asarray(x.astype(dtype))
    want = numpy_argsort(x, axis, descending)
    got = ops.argsort(t, axis=axis, descending=descending)
    assert got.dtype == "int64" and got.shape == shape
    np.testing.assert_array_equal(got.numpy(), want)
    s = ops.sort(t, axis=axis, descending=descending)
    assert s.dtype == dtype and s.shape == shape
    np.testing.assert_array_equal(values(s), np.take_along_axis(values(t), want, axis=axis))


def test_sorts_of_views_and_errors():
    x = data("float32", (6, 9), seed=73).astype(np.float32)
    t = nb.asarray(x).T
    np.testing.assert_array_equal(ops.argsort(t, axis=0).numpy(), np.argsort(x.T, axis=0, kind="stable"))
    np.testing.assert_array_equal(ops.sort(t, axis=1, stable=False).numpy(), np.sort(x.T, axis=1))
    assert ops.sort(nb.asarray(np.zeros((3, 0), dtype=np.int8))).shape == (3, 0)
    with pytest.raises(ValueError, match="sort: a 0-d input has no axis"):
        ops.sort(nb.asarray(np.float32(1.0)))
    with pytest.raises(ValueError, match="argsort: axis 2 is out of range for 2 dims"):
        ops.argsort(nb.asarray(x), axis=2)


@pytest.mark.parametrize("dtype", FLOATS + SIGNED + UNSIGNED)
@pytest.mark.parametrize("side", ["left", "right"])
@pytest.mark.parametrize("n", [0, 1, 9, 300])
def test_searchsorted_matches_numpy(dtype, side, n):
    rng = np.random.default_rng(79)
    low = 0 if dtype in UNSIGNED else -30
    x1 = np.sort(rng.integers(low, 30, size=n)).astype(np.float64)
    x2 = rng.integers(low, 35, size=(4, 7)).astype(np.float64)
    if dtype in FLOATS and n > 1:
        x1[-1] = np.nan  # NaN sorts last, numpy searches it as the largest
        x2[0, 0] = np.nan
    t1 = tensor(x1, dtype) if dtype in FLOATS else nb.asarray(x1.astype(dtype))
    t2 = tensor(x2, dtype) if dtype in FLOATS else nb.asarray(x2.astype(dtype))
    got = ops.searchsorted(t1, t2, side=side)
    assert got.dtype == "int64" and got.shape == (4, 7)
    np.testing.assert_array_equal(got.numpy(), np.searchsorted(x1, x2, side=side))


def test_searchsorted_with_a_sorter_and_errors():
    x1 = np.array([5, 1, 3, 9], dtype=np.int32)
    sorter = np.argsort(x1)
    x2 = np.array([0, 3, 4, 10], dtype=np.int32)
    got = ops.searchsorted(nb.asarray(x1), nb.asarray(x2), sorter=nb.asarray(sorter))
    np.testing.assert_array_equal(got.numpy(), np.searchsorted(x1, x2, sorter=sorter))
    with pytest.raises(ValueError, match="side must be"):
        ops.searchsorted(nb.asarray(x1), nb.asarray(x2), side="middle")
    with pytest.raises(ValueError, match="searchsorted: the sorted input must be 1-d"):
        ops.searchsorted(nb.asarray(x1.reshape(2, 2)), nb.asarray(x2))
