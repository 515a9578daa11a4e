"""Indexing as numpy indexes: ints, slices of any step, ellipsis, None, one integer array
(negatives from the end) or one bool mask, in random keys compared with numpy; refusals
name what is wrong."""

import random

import numpy as np
import pytest

import nbxtensor as nbx


def random_key(rng, shape):
    """A random key of basic items and at most one array item, valid for numpy on `shape`."""
    items, dims = [], list(shape)
    use_array = rng.random() < 0.6
    ellipsis_used = False
    while dims:
        size = dims.pop(0)
        kind = rng.choice(["int", "slice", "slice", "none", "array", "mask", "ellipsis"])
        if kind == "int" and size:
            items.append(rng.randrange(-size, size))
        elif kind == "none":
            items.append(None)
            dims.insert(0, size)
        elif kind == "array" and use_array:
            use_array = False
            count = rng.randint(0, 4) if size else 0
            items.append(np.array([rng.randrange(-size, size) for _ in range(count)] if size else [], np.int64).reshape(
                rng.choice([(count,), (1, count)])
            ))
        elif kind == "mask" and use_array:
            use_array = False
            # a mask over this dim and maybe the next
            span = [size] + ([dims.pop(0)] if dims and rng.random() < 0.5 else [])
            items.append(np.array([rng.random() < 0.5 for _ in range(int(np.prod(span)))], bool).reshape(span))
        elif kind == "ellipsis" and not ellipsis_used:
            ellipsis_used = True
            items.append(Ellipsis)
            skip = rng.randint(0, len(dims))
            del dims[:skip]
        else:
            bound = lambda: rng.choice([None, -7, -2, -1, 0, 1, 3, 8])
            items.append(slice(bound(), bound(), rng.choice([None, 1, 2, 3, -1, -2])))
    return tuple(items)


def as_operand(item, rng):
    """The same item as a user may write it: a numpy array, a list, or a tensor."""
    if isinstance(item, np.ndarray):
        return rng.choice([item, nbx.asarray(item), item.tolist() if item.ndim == 1 and item.size else item])
    return item


@pytest.mark.parametrize("seed", range(400))
def test_random_keys_select_what_numpy_selects(seed):
    rng = random.Random(seed)
    shape = tuple(rng.randint(0, 5) for _ in range(rng.randint(1, 4)))
    a = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    key = random_key(rng, shape)
    want = a[key]
    got = nbx.asarray(a)[tuple(as_operand(i, rng) for i in key)]
    assert got.shape == want.shape, key
    assert np.array_equal(np.asarray(got.contiguous()), want), key


def test_integer_arrays_and_masks():
    a = np.arange(24, dtype=np.int32).reshape(2, 3, 4)
    t = nbx.asarray(a)
    idx = np.array([[2, -1], [0, 0]])
    assert np.array_equal(np.asarray(t[:, idx]), a[:, idx])
    assert np.array_equal(np.asarray(t[1, :, [3, 0, -4]]), a[1, :, [3, 0, -4]])
    assert np.array_equal(np.asarray(t[t > 10]), a[a > 10])
    assert np.array_equal(np.asarray(t[..., a[0, 0] % 2 == 0]), a[..., a[0, 0] % 2 == 0])
    assert np.array_equal(np.asarray(t[::-1][nbx.asarray(np.array([True, False]))]), a[::-1][[True, False]])
    assert t[np.int64(1), np.int8(2)].tolist() == a[1, 2].tolist()  # numpy integers index as ints
    assert t[nbx.asarray(np.int32(1))].shape == (3, 4)  # a 0-d integer tensor too
    assert np.array_equal(np.asarray(t[nbx.asarray(np.uint8([1, 0]))]), a[[1, 0]])


@pytest.mark.parametrize(
    "key",
    [
        ([0, 2], [1, -1]),
        (np.array([[0], [2]]), np.array([1, 3])),  # broadcast to (2, 2)
        (1, [0, 3], slice(None)),  # an int beside an array counts as one
        (slice(None), [0, 1], [2, 3]),  # adjacent after a slice: the gathered dims stay there
        ([0, 1], slice(None), [2, 3]),  # separated by a slice: the gathered dims go first
        ([1, 0], None, [3, 2], 0),
        (Ellipsis, [0, 1], [1, 2]),
        ([-1], [0], [1]),
    ],
)
def test_several_integer_arrays_index_as_numpy(key):
    a = np.arange(3 * 4 * 5, dtype=np.int32).reshape(3, 4, 5)
    t = nbx.asarray(a)
    want = a[key]
    got = np.asarray(t[key])
    assert got.shape == want.shape and np.array_equal(got, want), (key, got, want)


def test_index_refusals_name_the_problem():
    t = nbx.asarray(np.arange(12, dtype=np.float32).reshape(3, 4))
    cases = [
        (lambda: t[[3]], IndexError, "out of range"),
        (lambda: t[[-4]], IndexError, "out of range"),
        (lambda: t[np.ones(4, bool)], IndexError, "does not match"),
        (lambda: t[[0, 3], [0, 1]], IndexError, "outside a dim of extent 3"),
        (lambda: t[[0, 1], [0, 1, 2]], IndexError, "broadcast"),
        (lambda: t[[0, 1], np.ones(4, bool)], IndexError, "mask beside other arrays"),
        (lambda: t[np.array([0.5])], IndexError, "integers or bools"),
        (lambda: t[True], IndexError, "Python bool"),
        (lambda: t[0, 0, 0], IndexError, "too many indices"),
        (lambda: t[..., ...], IndexError, "single ellipsis"),
        (lambda: t[::0], ValueError, "step cannot be zero"),
        (lambda: t[{}], ValueError, "integer array or a bool mask, not dict"),
    ]
    for call, error, message in cases:
        with pytest.raises(error, match=message):
            call()
