"""``t[key] = value``: the assign kernel writes through the view a basic key selects, or
where a bool mask is true; values broadcast and convert to the tensor's dtype."""

import numpy as np
import pytest

import nbxtensor as nbx


def pair(shape=(4, 5), dtype=np.float32):
    base = np.arange(np.prod(shape), dtype=dtype).reshape(shape)
    return nbx.asarray(base.copy()), base.copy()


@pytest.mark.parametrize(
    "key",
    [2, -1, (1, 3), slice(1, 3), slice(None, None, 2), slice(None, None, -1), (Ellipsis, 0), (slice(None), slice(4, 0, -2)),
     (None, 1), (slice(0, 0),), Ellipsis],
)
def test_basic_keys_write_what_numpy_writes(key):
    t, want = pair()
    value = np.float32(-7.5)
    t[key] = value
    want[key] = value
    np.testing.assert_array_equal(t.numpy(), want)


def test_an_array_value_broadcasts_and_converts_to_the_tensor_dtype():
    t, want = pair((3, 4), np.int32)
    t[1:, :] = np.array([10.9, -2.2, 3.0, 4.5])  # floats truncate into int32, as numpy's cast
    want[1:, :] = np.array([10.9, -2.2, 3.0, 4.5]).astype(np.int32)
    np.testing.assert_array_equal(t.numpy(), want)
    t[:, 0] = nbx.asarray(np.array([7, 8, 9], np.int64))
    want[:, 0] = [7, 8, 9]
    np.testing.assert_array_equal(t.numpy(), want)


def test_an_overlapping_value_is_read_before_it_is_written():
    t, want = pair((6,))
    t[1:] = t[:-1]
    want[1:] = want[:-1].copy()
    np.testing.assert_array_equal(t.numpy(), want)


def test_a_mask_writes_a_scalar_where_it_is_true():
    t, want = pair((3, 4))
    mask = want % 3 == 0
    t[nbx.asarray(mask)] = 100.0
    want[mask] = 100.0
    np.testing.assert_array_equal(t.numpy(), want)
    rows = np.array([True, False, True])
    t[nbx.asarray(rows)] = nbx.asarray(np.float32(-1))
    want[rows] = -1
    np.testing.assert_array_equal(t.numpy(), want)


def test_views_share_the_write():
    t, _ = pair((2, 3))
    row = t[1]
    t[1, 2] = 42.0
    assert row.tolist() == [3.0, 4.0, 42.0]


@pytest.mark.parametrize(
    "write, error, message",
    [
        (lambda t: t.__setitem__((slice(None), slice(None)), np.ones((3, 3))), ValueError, "broadcast"),
        (lambda t: t.broadcast_to((3, 4, 5)).__setitem__(Ellipsis, 1.0), ValueError, "repeats elements"),
        (lambda t: t.__setitem__(nbx.asarray(np.array([0, 1])), 1.0), IndexError, "integer array"),
        (lambda t: t.__setitem__(nbx.asarray(np.ones((4, 5), bool)), np.ones(20)), IndexError, "one element"),
        (lambda t: t.__setitem__(9, 1.0), IndexError, "out of range|index"),
    ],
)
def test_bad_writes_are_refused_by_name(write, error, message):
    t, want = pair()
    with pytest.raises(error, match=message):
        write(t)
    np.testing.assert_array_equal(t.numpy(), want), "a refused write changes nothing"


def test_a_read_only_tensor_is_not_written():
    frozen = np.arange(4.0)
    frozen.flags.writeable = False
    t = nbx.from_dlpack(frozen)
    with pytest.raises(ValueError, match="read-only"):
        t[0] = 5.0
    assert frozen[0] == 0.0
