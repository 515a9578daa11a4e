"""Reductions (sum, mean, max, min, argmax), softmax, log_softmax, layer_norm, rms_norm and
their residual forms (add_rms_norm, add_layer_norm) against float64 numpy references on random
inputs."""

import numpy as np
import pytest
from kernel_data import FLOATS, SIGNED, UNSIGNED, random, rounded, rtol, tensor, values

import nbxtensor as nb
from nbxtensor import ops

AXES = [None, 0, -1, (0, 2), (1,), (1, 2), (0, 1, 2), ()]
REDUCE = {"sum": np.sum, "mean": np.mean, "max": np.max, "min": np.min}


def close(got, want, dtype, ulps=8):
    np.testing.assert_allclose(got, want, rtol=rtol(dtype, ulps), atol=rtol(dtype, ulps))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", sorted(REDUCE))
@pytest.mark.parametrize("axes", AXES)
@pytest.mark.parametrize("keepdim", [False, True])
def test_float_reductions(name, dtype, axes, keepdim):
    x = rounded(random((3, 70, 5), seed=23), dtype)
    got = getattr(ops, name)(tensor(x, dtype), axes=axes, keepdim=keepdim)
    want = REDUCE[name](x, axis=axes, keepdims=keepdim)
    assert got.dtype == dtype and got.shape == np.shape(want)
    # a sum rounds once from float64; its magnitude is up to that of the inputs' sum
    close(values(got), want, dtype)


@pytest.mark.parametrize("dtype", SIGNED + UNSIGNED)
@pytest.mark.parametrize("axes", [None, 1, (0, 2)])
def test_integer_reductions(dtype, axes):
    info = np.iinfo(dtype)
    x = np.random.default_rng(29).integers(info.min, info.max, size=(4, 6, 3), dtype=dtype, endpoint=True)
    wide = np.int64 if dtype in SIGNED else np.uint64
    got = ops.sum(nb.asarray(x), axes=axes)
    assert got.dtype == np.dtype(wide).name
    np.testing.assert_array_equal(got.numpy(), np.sum(x, axis=axes, dtype=wide))
    np.testing.assert_array_equal(ops.max(nb.asarray(x), axes=axes).numpy(), np.max(x, axis=axes))
    np.testing.assert_array_equal(ops.min(nb.asarray(x), axes=axes).numpy(), np.min(x, axis=axes))


def test_mean_of_integers_is_float32():
    x = np.arange(12, dtype=np.int16).reshape(3, 4)
    got = ops.mean(nb.asarray(x), axes=0)
    assert got.dtype == "float32"
    np.testing.assert_allclose(got.numpy(), x.mean(axis=0))


@pytest.mark.parametrize("dtype", FLOATS + ["int32", "uint8"])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_argmax_first_maximum(dtype, axis):
    rng = np.random.default_rng(37)
    x = rng.integers(0, 5, size=(6, 7, 4))  # repeated values: the first maximum wins
    t = tensor(x, dtype) if dtype in FLOATS else nb.asarray(x.astype(dtype))
    got = ops.argmax(t, axis=axis)
    assert got.dtype == "int64"
    np.testing.assert_array_equal(got.numpy(), np.argmax(x, axis=axis))
    kept = ops.argmax(t, axis=axis, keepdim=True)
    np.testing.assert_array_equal(kept.numpy(), np.argmax(x, axis=axis, keepdims=True))


def test_nan_propagates_through_max_min_and_argmax():
    x = np.array([[1.0, np.nan, 3.0], [4.0, 5.0, 6.0]])
    t = tensor(x, "float32")
    np.testing.assert_array_equal(np.isnan(values(ops.max(t, axes=1))), [True, False])
    np.testing.assert_array_equal(np.isnan(values(ops.min(t, axes=1))), [True, False])
    np.testing.assert_array_equal(ops.argmax(t, axis=1).numpy(), np.argmax(x, axis=1))


def test_reductions_of_non_contiguous_and_empty_inputs():
    x = random((5, 8, 3), seed=43)
    t = tensor(x, "float64").permute([2, 0, 1]).narrow(2, 1, 6)
    close(values(ops.sum(t, axes=(0, 2))), x[:, 1:7, :].sum(axis=(1, 2)), "float64")
    empty = tensor(np.zeros((0, 4)), "float32")
    np.testing.assert_array_equal(values(ops.sum(empty, axes=0)), np.zeros(4))
    assert np.isnan(values(ops.mean(empty, axes=0))).all()
    assert ops.max(empty, axes=1).shape == (0,)
    with pytest.raises(ValueError, match=r"max: the reduced axes"):
        ops.max(empty, axes=0)
    scalar = tensor(np.array(2.5), "float32")
    assert ops.sum(scalar).shape == () and values(ops.sum(scalar)) == 2.5


def test_bad_axes_are_refused_by_name():
    t = tensor(np.ones((2, 3)), "float32")
    with pytest.raises(ValueError, match=r"sum: axis 2 is out of range for 2 dims"):
        ops.sum(t, axes=2)
    with pytest.raises(ValueError, match=r"mean: axis -1 is given twice"):
        ops.mean(t, axes=(1, -1))
    with pytest.raises(ValueError, match=r"softmax: axis 5 is out of range"):
        ops.softmax(t, axis=5)
    with pytest.raises(ValueError, match=r"sum: unknown attribute 'axis'"):
        nb.ops.call("sum", [t], axis=0)


def np_softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_softmax_and_log_softmax(dtype, axis):
    x = rounded(random((4, 9, 6), seed=47, low=-8, high=8), dtype)
    t = tensor(x, dtype)
    close(values(ops.softmax(t, axis=axis)), np_softmax(x, axis), dtype)
    want_log = x - x.max(axis=axis, keepdims=True)
    want_log -= np.log(np.exp(want_log).sum(axis=axis, keepdims=True))
    close(values(ops.log_softmax(t, axis=axis)), want_log, dtype)


def test_softmax_is_stable_and_reads_transposed_inputs():
    x = np.array([[1e4, 1e4 + 1.0, 1e4 - 1.0]])
    got = values(ops.softmax(tensor(x, "float32")))
    assert np.isfinite(got).all()
    close(got, np_softmax(x - 1e4, -1), "float32")
    y = random((5, 7), seed=53)
    close(values(ops.softmax(tensor(y, "float32").permute([1, 0]))), np_softmax(rounded(y, "float32").T, -1), "float32")
    assert ops.softmax(tensor(np.zeros((0, 3)), "float32")).shape == (0, 3)


@pytest.mark.parametrize("dtype", FLOATS)
def test_layer_norm(dtype):
    x = rounded(random((3, 4, 64), seed=59), dtype)
    w = rounded(random((64,), seed=61), dtype)
    b = rounded(random((64,), seed=67), dtype)
    got = ops.layer_norm(tensor(x, dtype), tensor(w, dtype), tensor(b, dtype), eps=1e-5)
    mean = x.mean(axis=-1, keepdims=True)
    var = x.var(axis=-1, keepdims=True)
    close(values(got), (x - mean) / np.sqrt(var + 1e-5) * w + b, dtype, ulps=16)


@pytest.mark.parametrize("dtype", FLOATS)
def test_rms_norm(dtype):
    x = rounded(random((5, 48), seed=71), dtype)
    w = rounded(random((48,), seed=73), dtype)
    got = ops.rms_norm(tensor(x, dtype).permute([1, 0]).permute([1, 0]), tensor(w, dtype), eps=1e-6)
    want = x / np.sqrt((x**2).mean(axis=-1, keepdims=True) + 1e-6) * w
    close(values(got), want, dtype, ulps=16)


@pytest.mark.parametrize("dtype", FLOATS)
def test_add_rms_norm_is_add_then_rms_norm_bit_for_bit(dtype):
    x = tensor(rounded(random((6, 40), seed=81), dtype), dtype)
    r = tensor(rounded(random((6, 40), seed=83), dtype), dtype)
    w = tensor(rounded(random((40,), seed=85), dtype), dtype)
    total, normed = ops.add_rms_norm(x, r, w, eps=1e-5)
    want_total = ops.add(x, r)
    assert np.array_equal(values(total), values(want_total))
    assert np.array_equal(values(normed), values(ops.rms_norm(want_total, w, eps=1e-5)))
    s = values(want_total).astype(np.float64)
    want = s / np.sqrt((s**2).mean(axis=-1, keepdims=True) + 1e-5) * values(w).astype(np.float64)
    close(values(normed), want, dtype, ulps=16)


def test_add_rms_norm_refuses_a_residual_of_another_shape():
    x = tensor(np.ones((2, 4)), "float32")
    with pytest.raises(ValueError, match=r"add_rms_norm: residual has shape \[2, 3\]"):
        ops.add_rms_norm(x, tensor(np.ones((2, 3)), "float32"), tensor(np.ones(4), "float32"))
    with pytest.raises(ValueError, match=r"add_rms_norm: eps must be finite"):
        ops.add_rms_norm(x, x, tensor(np.ones(4), "float32"), eps=float("nan"))


@pytest.mark.parametrize("dtype", FLOATS)
def test_add_layer_norm_is_add_then_layer_norm_bit_for_bit(dtype):
    x = tensor(rounded(random((5, 3, 37), seed=87), dtype), dtype)
    r = tensor(rounded(random((5, 3, 37), seed=89), dtype), dtype)
    w = tensor(rounded(random((37,), seed=91), dtype), dtype)
    b = tensor(rounded(random((37,), seed=93), dtype), dtype)
    total, normed = ops.add_layer_norm(x, r, w, b, eps=1e-5)
    want_total = ops.add(x, r)
    assert np.array_equal(values(total), values(want_total))
    assert np.array_equal(values(normed), values(ops.layer_norm(want_total, w, b, eps=1e-5)))
    s = values(want_total).astype(np.float64)
    mean, var = s.mean(axis=-1, keepdims=True), s.var(axis=-1, keepdims=True)
    want = (s - mean) / np.sqrt(var + 1e-5) * values(w).astype(np.float64) + values(b).astype(np.float64)
    close(values(normed), want, dtype, ulps=16)


def test_add_layer_norm_refuses_by_name():
    x, w = tensor(np.ones((2, 4)), "float32"), tensor(np.ones(4), "float32")
    with pytest.raises(ValueError, match=r"add_layer_norm: residual has shape \[2, 3\]"):
        ops.add_layer_norm(x, tensor(np.ones((2, 3)), "float32"), w, w)
    with pytest.raises(ValueError, match=r"add_layer_norm: bias has shape \[3\]"):
        ops.add_layer_norm(x, x, w, tensor(np.ones(3), "float32"))
    with pytest.raises(ValueError, match=r"add_layer_norm: eps must be finite"):
        ops.add_layer_norm(x, x, w, w, eps=float("inf"))


def test_norm_refusals_name_the_operand():
    x = tensor(np.ones((2, 4)), "float32")
    with pytest.raises(ValueError, match=r"layer_norm: bias has shape \[3\]"):
        ops.layer_norm(x, tensor(np.ones(4), "float32"), tensor(np.ones(3), "float32"))
    with pytest.raises(ValueError, match=r"rms_norm: weight is float16"):
        ops.rms_norm(x, tensor(np.ones(4), "float16"))
    with pytest.raises(ValueError, match=r"rms_norm: eps must be finite"):
        ops.rms_norm(x, tensor(np.ones(4), "float32"), eps=-1.0)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("axes", AXES)
@pytest.mark.parametrize("keepdim", [False, True])
def test_float_prod_rounds_the_float64_product_once(dtype, axes, keepdim):
    x = rounded(random((3, 40, 5), seed=41, low=0.9, high=1.1), dtype)
    got = ops.prod(tensor(x, dtype), axes=axes, keepdim=keepdim)
    want = np.prod(x, axis=axes, keepdims=keepdim)
    assert got.dtype == dtype and got.shape == np.shape(want)
    close(values(got), want, dtype, ulps=2)


@pytest.mark.parametrize("dtype", SIGNED + UNSIGNED + ["bool"])
@pytest.mark.parametrize("axes", [None, 1, (0, 2)])
def test_integer_and_bool_prod_wrap_in_64_bits(dtype, axes):
    rng = np.random.default_rng(43)
    if dtype == "bool":
        x = rng.random((4, 6, 3)) < 0.9
    else:
        info = np.iinfo(dtype)
        x = rng.integers(info.min, info.max, size=(4, 6, 3), dtype=dtype, endpoint=True)
    got = ops.prod(nb.asarray(x), axes=axes)
    want = np.prod(x, axis=axes)  # numpy: int64 for signed and bool, uint64 for unsigned, wrapping
    assert got.dtype == want.dtype.name
    np.testing.assert_array_equal(got.numpy(), want)


TRUTH_DTYPES = FLOATS + SIGNED + UNSIGNED + ["bool"]


@pytest.mark.parametrize("dtype", TRUTH_DTYPES)
@pytest.mark.parametrize("name", ["all", "any"])
@pytest.mark.parametrize("axes", AXES)
@pytest.mark.parametrize("keepdim", [False, True])
def test_all_and_any_read_truth(dtype, name, axes, keepdim):
    rng = np.random.default_rng(47)
    x = rng.integers(0, 3, size=(3, 8, 5)) * (rng.random((3, 8, 5)) < 0.7)  # zeros about 45%
    if dtype in FLOATS:
        x = x.astype(np.float64)
        x[0, 0, 0] = np.nan  # NaN is true
        t = tensor(x, dtype)
    else:
        x = x.astype(dtype)
        t = nb.asarray(x)
    got = getattr(ops, name)(t, axes=axes, keepdim=keepdim)
    want = getattr(np, name)(x, axis=axes, keepdims=keepdim)
    assert got.dtype == "bool" and got.shape == np.shape(want)
    np.testing.assert_array_equal(got.numpy(), want)


def test_all_and_any_of_no_elements():
    x = nb.asarray(np.zeros((0, 3), dtype=np.float32))
    np.testing.assert_array_equal(ops.all(x, axes=0).numpy(), np.ones(3, dtype=bool))
    np.testing.assert_array_equal(ops.any(x, axes=0).numpy(), np.zeros(3, dtype=bool))


@pytest.mark.parametrize("dtype", FLOATS + SIGNED + UNSIGNED)
@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("keepdim", [False, True])
def test_argmin_first_minimum(dtype, axis, keepdim):
    rng = np.random.default_rng(53)
    x = rng.integers(0, 5, size=(6, 7, 4))  # repeated values: the first minimum wins
    t = tensor(x, dtype) if dtype in FLOATS else nb.asarray(x.astype(dtype))
    got = ops.argmin(t, axis=axis, keepdim=keepdim)
    assert got.dtype == "int64"
    np.testing.assert_array_equal(got.numpy(), np.argmin(x, axis=axis, keepdims=keepdim))


def test_argmin_points_at_the_first_nan_and_refuses_no_elements():
    x = np.array([[3.0, np.nan, 1.0, np.nan], [2.0, 0.5, 0.5, 4.0]], dtype=np.float32)
    np.testing.assert_array_equal(ops.argmin(nb.asarray(x), axis=1).numpy(), np.argmin(x, axis=1))
    with pytest.raises(ValueError, match="argmin: the reduced axes"):
        ops.argmin(nb.asarray(np.zeros((2, 0), dtype=np.float32)), axis=1)
