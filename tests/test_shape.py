"""nbxtensor.shape against numpy: element counts, strides, the view rule, broadcasting, slices."""

import math
import random

import numpy as np
import pytest
from numpy.lib.stride_tricks import as_strided

from nbxtensor import shape as S

ITEM = 8  # bytes per element of the float64 arrays numpy is asked about


def random_shape(rng, max_rank=4, max_dim=4):
    return tuple(rng.randint(0, max_dim) for _ in range(rng.randint(0, max_rank)))


def strided_array(shape, strides):
    """A numpy view over a fresh buffer whose strides (in elements, ≥ 0) are `strides`."""
    span = 1 + sum((d - 1) * s for d, s in zip(shape, strides)) if math.prod(shape) else 1
    base = np.arange(span, dtype=np.float64)
    return base, as_strided(base, shape=shape, strides=tuple(s * ITEM for s in strides))


def random_layout(rng):
    """A small layout: contiguous, transposed, sliced, expanded (stride 0) or arbitrary."""
    shape = random_shape(rng)
    mode = rng.randrange(5)
    if mode == 0:
        strides = np.empty(shape, np.float64).strides
        strides = tuple(s // ITEM for s in strides) if math.prod(shape) else tuple(S.contiguous_strides(shape))
    elif mode == 1:
        order = list(range(len(shape)))
        rng.shuffle(order)
        permuted = np.empty([max(shape[o], 1) for o in order], np.float64).transpose(np.argsort(order))
        strides = tuple(s // ITEM for s in permuted.strides)
    elif mode == 2:
        bigger = np.empty([d + 2 for d in shape], np.float64)
        strides = tuple(s // ITEM * rng.randint(1, 2) for s in bigger.strides)
    elif mode == 3:
        strides = tuple(0 if rng.random() < 0.4 else s for s in S.contiguous_strides(shape))
    else:
        strides = tuple(rng.randint(0, 9) for _ in shape)
    return shape, strides


def random_reshape(rng, count):
    if count == 0:
        dims = [rng.randint(0, 3) for _ in range(rng.randint(1, 4))]
        dims[rng.randrange(len(dims))] = 0
        return tuple(dims)
    dims, left = [], count
    for _ in range(rng.randint(0, 3)):
        dim = rng.choice([d for d in range(1, left + 1) if left % d == 0])
        dims.append(dim)
        left //= dim
    if left != 1 or rng.random() < 0.5:
        dims.append(left)
    rng.shuffle(dims)
    return tuple(dims)


# --- counts and contiguous strides ------------------------------------------------------------


def test_numel_and_contiguous_strides_match_numpy_arrays():
    rng = random.Random(1)
    for _ in range(500):
        shape = random_shape(rng, max_rank=5, max_dim=6)
        assert S.numel(shape) == np.empty(shape, np.int8).size
        strides = S.contiguous_strides(shape)
        assert isinstance(strides, tuple)
        if 0 not in shape:
            assert strides == np.empty(shape, np.int8).strides  # itemsize 1: bytes are elements
        else:  # a 0 extent counts as 1 for the dims before it (ATen and numpy's fill rule)
            assert strides == np.empty([max(d, 1) for d in shape], np.int8).strides
    # a tensor of no element whose other dims' product passes 64 bits: its strides stop at 0
    # there (it addresses no byte), where a tensor with elements would overflow its count
    assert S.contiguous_strides((0, 1 << 40, 1 << 40)) == (0, 1 << 40, 1)


def test_scalar_shape():
    assert S.numel(()) == 1
    assert S.contiguous_strides([]) == ()
    assert S.is_contiguous((), ())


def test_sequences_of_any_kind_are_shapes():
    assert S.numel([3, 5]) == 15
    assert S.numel(np.array([3, 5])) == 15
    assert S.contiguous_strides([np.int64(7), 2]) == (2, 1)


def test_is_contiguous_matches_numpy_c_contiguity():
    rng = random.Random(2)
    seen = set()
    for _ in range(1000):
        shape, strides = random_layout(rng)
        _, array = strided_array(shape, strides)
        expected = array.flags["C_CONTIGUOUS"]
        assert S.is_contiguous(shape, strides) == expected, (shape, strides)
        seen.add(expected)
    assert seen == {True, False}


def test_extent_one_dims_carry_any_stride():
    assert S.is_contiguous((1, 6, 1, 2), (999, 2, -5, 1))
    assert not S.is_contiguous((2, 6), (6, 2))
    assert S.is_contiguous((3, 0, 2), (7, 7, 7))


# --- the view rule ---------------------------------------------------------------------------


def test_view_strides_agree_with_numpy_reshape_without_copy():
    rng = random.Random(3)
    views = copies = 0
    for _ in range(2000):
        shape, strides = random_layout(rng)
        new_shape = random_reshape(rng, math.prod(shape))
        base, array = strided_array(shape, strides)
        got = S.view_strides(shape, strides, new_shape)
        try:
            reshaped = np.reshape(array, new_shape, copy=False)
        except ValueError:
            assert got is None, (shape, strides, new_shape)
            copies += 1
            continue
        assert isinstance(got, list) and len(got) == len(new_shape), (shape, strides, new_shape, got)
        assert np.shares_memory(reshaped, base) or reshaped.size == 0
        if reshaped.size:
            numpy_strides = [s // ITEM for s in reshaped.strides]
            relevant = [i for i, d in enumerate(new_shape) if d != 1]
            assert [got[i] for i in relevant] == [numpy_strides[i] for i in relevant], (shape, strides, new_shape)
            # the same elements in the same order, read through the strides we returned
            again = as_strided(base, shape=new_shape, strides=[s * ITEM for s in got])
            np.testing.assert_array_equal(again, reshaped)
        views += 1
    assert views > 200 and copies > 200


def test_view_strides_infer_one_minus_one_as_numpy_does():
    rng = random.Random(4)
    for _ in range(500):
        shape, strides = random_layout(rng)
        count = math.prod(shape)
        new_shape = list(random_reshape(rng, count)) or [1]
        new_shape[rng.randrange(len(new_shape))] = -1
        try:
            inferred = np.empty(shape).reshape(new_shape).shape
        except ValueError:
            with pytest.raises(ValueError):
                S.view_strides(shape, strides, new_shape)
            continue
        assert S.view_strides(shape, strides, new_shape) == S.view_strides(shape, strides, inferred)


def test_view_strides_of_a_scalar_and_of_empty_tensors():
    assert S.view_strides((), (), (1, 1)) == [1, 1]
    assert S.view_strides((1, 1), (5, 3), ()) == []
    assert S.view_strides((0, 3), (9, 2), (0, 3)) == [9, 2]  # unchanged shape keeps its strides
    got = S.view_strides((0, 3), (9, 2), (3, 0, 2))
    assert got is not None and len(got) == 3


def test_view_strides_refuse_bad_new_shapes():
    with pytest.raises(ValueError, match=r"more than one -1"):
        S.view_strides((4, 6), (6, 1), (-1, 2, -1))
    with pytest.raises(ValueError, match=r"shape \(5, -1\) is invalid for 24 elements"):
        S.view_strides((4, 6), (6, 1), (5, -1))
    with pytest.raises(ValueError, match=r"shape \(5, 5\) is invalid for 24 elements"):
        S.view_strides((4, 6), (6, 1), (5, 5))
    with pytest.raises(ValueError, match=r"any extent would do"):
        S.view_strides((0, 6), (6, 1), (0, -1))
    with pytest.raises(ValueError, match=r"negative dim -3 at axis 0 of \(-3, 8\)"):
        S.view_strides((4, 6), (6, 1), (-3, 8))


# --- broadcasting ----------------------------------------------------------------------------


def test_broadcast_shapes_match_numpy():
    rng = random.Random(5)
    agreed = refused = 0
    for _ in range(2000):
        shapes = [random_shape(rng, max_rank=4, max_dim=3) for _ in range(rng.randint(0, 4))]
        try:
            expected = np.broadcast_shapes(*shapes)
        except ValueError:
            with pytest.raises(ValueError, match="cannot be broadcast"):
                S.broadcast_shapes(*shapes)
            refused += 1
            continue
        assert S.broadcast_shapes(*shapes) == expected
        agreed += 1
    assert agreed > 200 and refused > 200


def test_broadcast_mismatch_names_both_shapes_and_the_axis():
    with pytest.raises(ValueError) as info:
        S.broadcast_shapes((7, 2, 1), [6], (3, 1))
    message = str(info.value)
    assert "(7, 2, 1)" in message and "(3, 1)" in message and "axis -2" in message


def test_broadcast_strides_match_numpy_broadcast_to():
    rng = random.Random(6)
    for _ in range(1000):
        shape, strides = random_layout(rng)
        target = [rng.randint(0, 3) for _ in range(rng.randint(0, 2))]
        target += [rng.randint(0, 3) if d == 1 and rng.random() < 0.7 else d for d in shape]
        if rng.random() < 0.2:
            target = list(random_shape(rng))
        _, array = strided_array(shape, strides)
        try:
            expected = np.broadcast_to(array, target)
        except ValueError:
            with pytest.raises(ValueError, match="cannot be broadcast"):
                S.broadcast_strides(shape, strides, target)
            continue
        out_shape, out_strides = S.broadcast_strides(shape, strides, target)
        assert out_shape == expected.shape == tuple(target)
        numpy_strides = [s // ITEM for s in expected.strides]
        for extent, ours, theirs in zip(target, out_strides, numpy_strides):
            if extent != 1:  # the stride of an extent-1 dim never forms an address
                assert ours == theirs, (shape, strides, target)


# --- slice bounds ----------------------------------------------------------------------------


def test_slice_bounds_select_what_numpy_slicing_selects():
    rng = random.Random(7)
    values = [None, *range(-12, 13), 10**6, -(10**6)]
    for _ in range(5000):
        size = rng.randint(0, 10)
        start, stop = rng.choice(values), rng.choice(values)
        lo, hi = S.slice_bounds(start, stop, size)
        whole = np.arange(size)
        assert 0 <= lo <= hi <= size
        np.testing.assert_array_equal(whole[lo:hi], whole[start:stop])
        assert lo == slice(start, stop).indices(size)[0]


# --- bad input -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: S.numel((3, -2)), r"negative dim -2 at axis 1 of \(3, -2\)"),
        (lambda: S.contiguous_strides([4, 0, -1]), r"negative dim -1 at axis 2 of \(4, 0, -1\)"),
        (lambda: S.numel((1 << 40, 1 << 40)), r"element count of \(1099511627776, 1099511627776\) overflows"),
        (lambda: S.contiguous_strides((2, 1 << 40, 1 << 40)), r"element count of .* overflows"),
        (lambda: S.numel((1 << 70,)), r"does not fit in 64 bits"),
        (lambda: S.numel((2, "3")), r"axis 1 of shape \(2, '3'\).* is not an int"),
        (lambda: S.numel((2.0, 3)), r"axis 0 of shape .* is not an int"),
        (lambda: S.numel((True, 3)), r"True is not an int"),
        (lambda: S.numel("23"), r"shape must be a sequence of ints"),
        (lambda: S.numel(6), r"shape must be a sequence of ints"),
        (lambda: S.numel({2, 3}), r"shape must be a sequence of ints"),
        (lambda: S.numel({0: 2, 5: 3}), r"shape must be a sequence of ints"),
        (lambda: S.is_contiguous((2, 3), (3,)), r"strides \(3,\) have 1 entries but shape \(2, 3\) has 2"),
        (lambda: S.view_strides((2, 3), (3, 1, 1), (6,)), r"have 3 entries but shape \(2, 3\) has 2"),
        (lambda: S.broadcast_strides((3,), (1,), (4,)), r"shape \(3,\) cannot be broadcast to \(4,\)"),
        (lambda: S.broadcast_strides((2, 3), (3, 1), (3,)), r"fewer than 2"),
        (lambda: S.broadcast_shapes((1 << 40, 1), (1 << 40,)), r"overflows"),
        (lambda: S.slice_bounds(0, 2, -4), r"negative size -4"),
        (lambda: S.slice_bounds("a", 2, 4), r"start 'a' is not an int"),
    ],
)
def test_bad_input_is_a_value_error_naming_the_fault(call, message):
    with pytest.raises(ValueError, match=message):
        call()
