"""nbxtensor.array_api: the standard's namespace, checked value by value against numpy
(the standard's own suite runs from scripts/array_api.sh; these are the project's tests)."""

import math

import numpy as np
import pytest

import nbxtensor as nbx
from nbxtensor import array_api as xp

RNG = np.random.default_rng(20261202)


def values(t):
    return np.asarray(t.numpy())


def test_a_tensor_names_its_namespace():
    t = nbx.asarray(np.ones(3, np.float32))
    assert t.__array_namespace__() is xp
    assert t.__array_namespace__(api_version="2024.12") is xp
    with pytest.raises(ValueError, match="2021.12 is not served"):
        t.__array_namespace__(api_version="2021.12")
    assert xp.__array_api_version__ == "2024.12"


def test_dtypes_compare_equal_to_a_tensor_dtype_and_carry_the_table_facts():
    t = xp.asarray([1.0, 2.0], dtype=xp.float32)
    assert t.dtype == xp.float32 and xp.float32 == t.dtype and t.dtype != xp.float64
    assert {xp.float32: "f"}[t.dtype] == "f"
    info = xp.finfo(xp.float32)
    assert (info.bits, info.eps, info.max, info.smallest_normal) == (32, 2.0**-23, float(np.finfo(np.float32).max),
                                                                      float(np.finfo(np.float32).smallest_normal))
    assert xp.finfo(t).dtype == xp.float32
    assert (xp.iinfo(xp.int8).min, xp.iinfo(xp.int8).max, xp.iinfo(xp.uint16).max) == (-128, 127, 65535)
    with pytest.raises(ValueError, match="not a floating dtype"):
        xp.finfo(xp.int32)
    assert xp.isdtype(xp.int16, "signed integer") and not xp.isdtype(xp.uint8, "signed integer")
    assert xp.isdtype(xp.float64, ("integral", xp.float64)) and xp.isdtype(xp.bool, "bool")
    assert xp.result_type(xp.int8, xp.int16) == xp.int16
    assert xp.result_type(xp.float32, 1.5) == xp.float32
    assert xp.can_cast(xp.int8, xp.int32) and not xp.can_cast(xp.int32, xp.int8)


def test_creation_functions_match_numpy():
    np.testing.assert_array_equal(values(xp.zeros((2, 3))), np.zeros((2, 3)))
    assert xp.zeros((2, 3)).dtype == xp.float64 and xp.ones(4, dtype=xp.int8).dtype == xp.int8
    np.testing.assert_array_equal(values(xp.full((2, 2), 7)), np.full((2, 2), 7))
    assert xp.full((2,), True).dtype == xp.bool
    np.testing.assert_array_equal(values(xp.arange(5)), np.arange(5))
    np.testing.assert_array_equal(values(xp.arange(2, 11, 3)), np.arange(2, 11, 3))
    np.testing.assert_allclose(values(xp.arange(0.5, 2.0, 0.25)), np.arange(0.5, 2.0, 0.25))
    np.testing.assert_array_equal(values(xp.arange(5, 0, -2)), np.arange(5, 0, -2))
    np.testing.assert_allclose(values(xp.linspace(0, 1, 7)), np.linspace(0, 1, 7))
    np.testing.assert_allclose(values(xp.linspace(-3, 5, 4, endpoint=False)), np.linspace(-3, 5, 4, endpoint=False))
    for k in (-1, 0, 2):
        np.testing.assert_array_equal(values(xp.eye(3, 5, k=k)), np.eye(3, 5, k=k))
    a = RNG.standard_normal((2, 4, 5))
    for k in (-2, 0, 1):
        np.testing.assert_array_equal(values(xp.tril(xp.asarray(a), k=k)), np.tril(a, k))
        np.testing.assert_array_equal(values(xp.triu(xp.asarray(a), k=k)), np.triu(a, k))
    x, y = np.arange(3.0), np.arange(4.0)
    for indexing in ("xy", "ij"):
        for got, want in zip(xp.meshgrid(xp.asarray(x), xp.asarray(y), indexing=indexing),
                             np.meshgrid(x, y, indexing=indexing)):
            np.testing.assert_array_equal(values(got), want)


def test_asarray_copies_when_asked_and_refuses_a_needed_copy():
    base = np.arange(4.0)
    shared = xp.asarray(base)
    copied = xp.asarray(base, copy=True)
    base[0] = 9.0
    assert shared.tolist()[0] == 9.0 and copied.tolist()[0] == 0.0
    with pytest.raises(ValueError, match="copy=False"):
        xp.asarray([1, 2], copy=False)


def test_elementwise_names_are_the_library_kernels():
    a, b = RNG.uniform(-3, 3, 20).astype(np.float32), RNG.uniform(0.5, 3, 20).astype(np.float32)
    ta, tb = xp.asarray(a), xp.asarray(b)
    np.testing.assert_allclose(values(xp.subtract(ta, tb)), a - b)
    np.testing.assert_allclose(values(xp.divide(ta, tb)), a / b, rtol=1e-6)
    np.testing.assert_array_equal(values(xp.greater_equal(ta, tb)), a >= b)
    np.testing.assert_array_equal(values(xp.negative(ta)), -a)
    np.testing.assert_array_equal(values(xp.clip(ta, -1.0, 1.5)), np.clip(a, -1.0, 1.5))
    np.testing.assert_array_equal(values(xp.clip(ta, min=tb)), np.maximum(a, b))
    ints = xp.asarray(np.array([-3, 4], np.int16))
    assert xp.floor(ints).dtype == xp.int16 and xp.round(ints).tolist() == [-3, 4]
    np.testing.assert_array_equal(values(xp.imag(ta)), np.zeros(20, np.float32))


def test_manipulation_matches_numpy():
    a = RNG.standard_normal((2, 3, 4))
    t = xp.asarray(a)
    np.testing.assert_array_equal(values(xp.flip(t, axis=1)), np.flip(a, 1))
    np.testing.assert_array_equal(values(xp.flip(t)), np.flip(a))
    np.testing.assert_array_equal(values(xp.roll(t, 2, axis=2)), np.roll(a, 2, 2))
    np.testing.assert_array_equal(values(xp.roll(t, -1)), np.roll(a, -1))
    np.testing.assert_array_equal(values(xp.roll(t, (1, 2), axis=(0, 1))), np.roll(a, (1, 2), (0, 1)))
    np.testing.assert_array_equal(values(xp.moveaxis(t, 0, -1)), np.moveaxis(a, 0, -1))
    np.testing.assert_array_equal(values(xp.stack([t, t], axis=1)), np.stack([a, a], 1))
    np.testing.assert_array_equal(values(xp.concat([t, t], axis=None)), np.concatenate([a, a], None))
    np.testing.assert_array_equal(values(xp.tile(t, (2, 1, 3))), np.tile(a, (2, 1, 3)))
    np.testing.assert_array_equal(values(xp.repeat(t, 2, axis=1)), np.repeat(a, 2, 1))
    np.testing.assert_array_equal(values(xp.repeat(t, xp.asarray([1, 0, 3]), axis=1)), np.repeat(a, [1, 0, 3], 1))
    np.testing.assert_array_equal(values(xp.expand_dims(t, axis=-1)), np.expand_dims(a, -1))
    np.testing.assert_array_equal(values(xp.squeeze(xp.expand_dims(t, axis=0), axis=0)), a)
    assert [values(u).tolist() for u in xp.unstack(t, axis=2)] == [a[:, :, i].tolist() for i in range(4)]
    assert xp.concat([xp.asarray(np.int8([1])), xp.asarray(np.int32([2]))]).dtype == xp.int32


def test_statistics_match_numpy():
    a = RNG.standard_normal((3, 5))
    t = xp.asarray(a)
    np.testing.assert_allclose(values(xp.var(t, axis=1, correction=1)), np.var(a, 1, ddof=1))
    np.testing.assert_allclose(values(xp.std(t, keepdims=True)), np.std(a, keepdims=True))
    np.testing.assert_allclose(values(xp.prod(t, axis=0)), np.prod(a, 0))
    np.testing.assert_allclose(values(xp.cumulative_sum(t, axis=1)), np.cumsum(a, 1))
    np.testing.assert_allclose(values(xp.cumulative_sum(t, axis=0, include_initial=True)),
                               np.concatenate([np.zeros((1, 5)), np.cumsum(a, 0)]))
    np.testing.assert_allclose(values(xp.cumulative_prod(xp.asarray(a[0]))), np.cumprod(a[0]))
    assert values(xp.argmin(t, axis=1)).tolist() == np.argmin(a, 1).tolist()
    assert xp.argmin(t).item() == int(np.argmin(a))
    assert values(xp.count_nonzero(xp.asarray(np.array([[0, 1], [2, 0]])), axis=0)).tolist() == [1, 1]
    b = a > 0
    assert values(xp.all(xp.asarray(b), axis=1)).tolist() == np.all(b, 1).tolist()
    assert values(xp.any(xp.asarray(b), axis=0)).tolist() == np.any(b, 0).tolist()
    np.testing.assert_allclose(values(xp.diff(t, axis=1, n=2)), np.diff(a, 2, 1))


def test_sorting_searching_and_sets_match_numpy():
    a = RNG.integers(0, 6, (4, 7)).astype(np.float32)
    a[1, 2] = np.nan
    t = xp.asarray(a)
    np.testing.assert_array_equal(values(xp.sort(t, axis=1)), np.sort(a, 1))
    # descending: the ascending order reversed, NaN first (the standard's reference)
    np.testing.assert_array_equal(values(xp.sort(t, axis=0, descending=True)), np.flip(np.sort(a, 0), 0))
    assert values(xp.argsort(t, axis=1)).tolist() == np.argsort(a, 1, kind="stable").tolist()
    ints = a[0].astype(np.int64)
    assert [values(i).tolist() for i in xp.nonzero(xp.asarray(ints))] == [i.tolist() for i in np.nonzero(ints)]
    sorted_ = np.sort(ints)
    probe = np.array([-1, 0, 2, 5, 9])
    for side in ("left", "right"):
        got = xp.searchsorted(xp.asarray(sorted_), xp.asarray(probe), side=side)
        assert values(got).tolist() == np.searchsorted(sorted_, probe, side).tolist()
    u = np.array([3, 1, 3, 2, 1, 3])
    got = xp.unique_all(xp.asarray(u))
    want = np.unique(u, return_index=True, return_inverse=True, return_counts=True)
    for g, w in zip(got, want):
        assert values(g).tolist() == w.reshape(-1).tolist()
    nans = xp.unique_values(xp.asarray(np.array([np.nan, 1.0, np.nan])))
    assert np.isnan(values(nans)).sum() == 2, "each NaN is a value of its own"


def test_indexing_functions_match_numpy():
    a = RNG.standard_normal((3, 5))
    t = xp.asarray(a)
    idx = np.array([4, 0, -1])
    np.testing.assert_array_equal(values(xp.take(t, xp.asarray(idx), axis=1)), np.take(a, idx, 1))
    picks = RNG.integers(0, 5, (3, 2))
    np.testing.assert_array_equal(values(xp.take_along_axis(t, xp.asarray(picks), axis=1)),
                                  np.take_along_axis(a, picks, 1))
    rows = RNG.integers(0, 3, (1, 5))
    np.testing.assert_array_equal(values(xp.take_along_axis(t, xp.asarray(rows), axis=0)),
                                  np.take_along_axis(a, rows, 0))


def test_linear_algebra_matches_numpy():
    a, b = RNG.standard_normal((2, 3, 4)), RNG.standard_normal((4, 5))
    ta, tb = xp.asarray(a), xp.asarray(b)
    np.testing.assert_allclose(values(xp.matmul(ta, tb)), a @ b)
    np.testing.assert_allclose(values(xp.tensordot(ta, tb, axes=1)), np.tensordot(a, b, 1))
    np.testing.assert_allclose(values(xp.tensordot(ta, xp.asarray(a), axes=([1, 2], [1, 2]))),
                               np.tensordot(a, a, ([1, 2], [1, 2])))
    np.testing.assert_allclose(values(xp.vecdot(ta, ta)), np.sum(a * a, -1))
    m = RNG.standard_normal((2, 4, 4))
    tm = xp.asarray(m)
    for offset in (-1, 0, 2):
        np.testing.assert_array_equal(values(xp.linalg.diagonal(tm, offset=offset)),
                                      np.diagonal(m, offset, -2, -1))
    np.testing.assert_allclose(values(xp.linalg.trace(tm)), np.trace(m, axis1=-2, axis2=-1))
    for ord_ in (1, 2, math.inf, -math.inf, 0, 3):
        np.testing.assert_allclose(values(xp.linalg.vector_norm(ta, axis=-1, ord=ord_)),
                                   np.linalg.norm(a, ord_, -1))
    for ord_ in ("fro", 1, -1, math.inf):
        np.testing.assert_allclose(values(xp.linalg.matrix_norm(tm, ord=ord_)), np.linalg.norm(m, ord_, (-2, -1)))
    np.testing.assert_allclose(values(xp.linalg.matrix_power(tm, 3)), np.linalg.matrix_power(m, 3))
    v, w = RNG.standard_normal((4, 3)), RNG.standard_normal((4, 3))
    np.testing.assert_allclose(values(xp.linalg.cross(xp.asarray(v), xp.asarray(w))), np.cross(v, w))
    np.testing.assert_allclose(values(xp.linalg.outer(xp.asarray(v[0]), xp.asarray(w[1]))), np.outer(v[0], w[1]))


def test_the_inspection_object_says_what_is_served():
    info = xp.__array_namespace_info__()
    assert info.default_device() == "cpu" and info.devices()[0] == "cpu"
    assert info.default_dtypes()["real floating"] == xp.float64
    assert set(info.dtypes(kind="unsigned integer")) == {"uint8", "uint16", "uint32", "uint64"}
    assert info.capabilities()["boolean indexing"] is True


def test_the_creation_functions_are_also_at_the_top_level():
    for name in ("arange", "empty", "eye", "full", "linspace", "ones", "zeros", "zeros_like", "full_like"):
        assert getattr(nbx, name) is getattr(xp, name)
    assert nbx.zeros((2, 2), dtype="float32").tolist() == [[0.0, 0.0], [0.0, 0.0]]


def test_set_functions_take_bools_and_scans_give_the_dtype_asked():
    b = xp.asarray(np.array([True, False, True]))
    assert xp.unique_values(b).tolist() == [False, True]
    assert xp.unique_counts(b).counts.tolist() == [1, 2]
    u8 = xp.asarray(np.array([200, 100, 50], np.uint8))
    out = xp.cumulative_sum(u8, dtype=xp.uint8, include_initial=True)
    assert out.dtype == xp.uint8 and out.tolist() == [0, 200, 44, 94]  # wraps in uint8
    assert xp.clip(xp.asarray(np.uint8(3)), max=xp.asarray(np.array([1, 5], np.uint8))).tolist() == [1, 3]
