"""embedding, index_select and concat: exact against numpy's take and concatenate."""

import numpy as np
import pytest

import nbxtensor as nbx
from nbxtensor import ops

RNG = np.random.default_rng(11)


def back(t):
    return np.array(t.numpy())


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("table_dtype", [np.float32, np.float16, np.int8, np.uint64])
def test_embedding_is_numpy_take(index_dtype, table_dtype):
    table = (RNG.standard_normal((9, 5)) * 50).astype(table_dtype)
    idx = RNG.integers(0, 9, size=(2, 3)).astype(index_dtype)
    got = back(ops.embedding(nbx.asarray(idx), nbx.asarray(table)))
    np.testing.assert_array_equal(got, table[idx])


def test_embedding_of_bfloat16_and_strided_tables():
    table = RNG.standard_normal((6, 4)).astype(np.float32)
    tb = nbx.asarray(table, dtype="bfloat16")
    idx = nbx.asarray(np.array([5, 0, 5], np.int64))
    np.testing.assert_array_equal(back(ops.embedding(idx, tb)), back(tb)[[5, 0, 5]])
    wide = RNG.standard_normal((4, 10)).astype(np.float32)
    tw = nbx.asarray(wide).transpose(0, 1).narrow(0, 2, 6)  # [6, 4], strided
    np.testing.assert_array_equal(back(ops.embedding(idx, tw)), wide.T[2:8][[5, 0, 5]])


def test_out_of_range_indices_are_refused_before_writing():
    table = nbx.asarray(np.ones((4, 2), np.float32))
    with pytest.raises(ValueError, match=r"embedding: index 4 \(at position 1\) is out of range \[0, 4\)"):
        ops.embedding(nbx.asarray(np.array([0, 4], np.int32)), table)
    with pytest.raises(ValueError, match="index -1"):
        ops.index_select(table, nbx.asarray(np.array([-1], np.int64)), 0)
    with pytest.raises(ValueError, match="embedding is not defined on float32 \\(it takes int32, int64\\)"):
        ops.embedding(nbx.asarray(np.array([0.0], np.float32)), table)


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_index_select_is_numpy_take(axis):
    x = RNG.standard_normal((4, 5, 6)).astype(np.float32)
    tx = nbx.asarray(x).permute(1, 0, 2)  # [5, 4, 6], non-contiguous
    xp = x.transpose(1, 0, 2)
    size = xp.shape[axis]
    idx = RNG.integers(0, size, size=7).astype(np.int64)
    got = back(ops.index_select(tx, nbx.asarray(idx), axis))
    np.testing.assert_array_equal(got, np.take(xp, idx, axis=axis))
    empty = back(ops.index_select(tx, nbx.asarray(np.array([], np.int32)), axis))
    assert empty.shape == np.take(xp, [], axis=axis).shape


@pytest.mark.parametrize("axis", [0, 1, 2, -2])
def test_concat_is_numpy_concatenate(axis):
    shapes = []
    for extent in (2, 0, 3, 1):
        s = [3, 4, 2]
        s[axis] = extent
        shapes.append(s)
    arrays = [RNG.integers(-100, 100, size=s).astype(np.int16) for s in shapes]
    tensors = [nbx.asarray(a) for a in arrays]
    tensors[2] = nbx.asarray(np.ascontiguousarray(np.swapaxes(arrays[2], 0, 2))).permute(2, 1, 0)
    got = back(ops.concat(tensors, axis=axis))
    np.testing.assert_array_equal(got, np.concatenate(arrays, axis=axis))


def test_concat_refuses_mismatches():
    a, b = nbx.asarray(np.ones((2, 3), np.float32)), nbx.asarray(np.ones((2, 4), np.float32))
    with pytest.raises(ValueError, match=r"concat: input 1 \[2, 4\] does not match input 0 \[2, 3\] outside axis 0"):
        ops.concat([a, b], axis=0)
    with pytest.raises(ValueError, match="concat: input 1 is float16"):
        ops.concat([a, nbx.asarray(np.ones((2, 3), np.float16))], axis=0)
    with pytest.raises(ValueError, match="axis 2 is out of range"):
        ops.concat([a, a], axis=2)
