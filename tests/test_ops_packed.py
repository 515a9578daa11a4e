"""Constant float32 weights laid out once for their products: pack_linear's panels against their
definition (element (p, k, j) is weight[p * panel + j, k], zeros past the last row), linear_packed
against the float64 product and against linear on the same operands, on strided and batched x,
and what does not fit refused by name."""

import numpy as np
import pytest

import nbxtensor as nbx
from nbxtensor import ops

RNG = np.random.default_rng(16)


def weight(n, k):
    return RNG.standard_normal((n, k)).astype(np.float32)


def test_the_panels_are_the_weights_columns_in_order_padded_with_zeros():
    w = weight(50, 7)
    panels = np.array(ops.pack_linear(nbx.asarray(w)).numpy())
    count, depth, width = panels.shape
    assert (count, depth) == (-(-50 // width), 7) and count * width >= 50 > (count - 1) * width
    rows = panels.transpose(0, 2, 1).reshape(count * width, 7)
    np.testing.assert_array_equal(rows[:50], w)
    assert not rows[50:].any(), "the rows past N are zeros"


@pytest.mark.parametrize("m,n,k", [(1, 1, 1), (16, 384, 384), (13, 100, 37), (128, 96, 200), (5, 49, 0)])
def test_the_product_is_the_float64_products_within_float32_rounding(m, n, k):
    x = RNG.standard_normal((m, k)).astype(np.float32)
    w, bias = weight(n, k), RNG.standard_normal(n).astype(np.float32)
    panels = ops.pack_linear(nbx.asarray(w))
    got = np.array(ops.linear_packed(nbx.asarray(x), panels, nbx.asarray(bias), features=n).numpy())
    want = x.astype(np.float64) @ w.astype(np.float64).T + bias
    bound = 1e-6 * (k + 2) * (np.abs(x).astype(np.float64) @ np.abs(w).T.astype(np.float64) + np.abs(bias) + 1)
    assert got.shape == (m, n) and got.dtype == np.float32
    assert np.all(np.abs(got - want) <= bound)
    plain = np.array(ops.linear_packed(nbx.asarray(x), panels, features=n).numpy())
    np.testing.assert_allclose(plain, want - bias, rtol=0, atol=float(bound.max()) + 1e-6)


def test_strided_and_batched_inputs_give_linears_answer():
    w = weight(60, 32)
    panels = ops.pack_linear(nbx.asarray(w))
    x = nbx.asarray(RNG.standard_normal((2, 32, 9)).astype(np.float32)).transpose(1, 2)  # [2, 9, 32], strided
    got = np.array(ops.linear_packed(x, panels, features=60).numpy())
    want = np.array(ops.linear(x, nbx.asarray(w)).numpy())
    assert got.shape == (2, 9, 60)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_operands_that_do_not_fit_are_refused_by_name():
    panels = ops.pack_linear(nbx.asarray(weight(5, 8)))
    x = nbx.asarray(np.ones((2, 8), np.float32))
    with pytest.raises(ValueError, match=r"linear_packed: for x \[2, 8\] and features = 60, panels must be \[2, 8, 48\]"):
        ops.linear_packed(x, panels, features=60)
    with pytest.raises(ValueError, match=r"bias \[5\]"):
        ops.linear_packed(x, panels, nbx.asarray(np.ones(4, np.float32)), features=5)
    with pytest.raises(ValueError, match="linear_packed: features must be ≥ 0"):
        ops.linear_packed(x, panels, features=-1)
    with pytest.raises(ValueError, match="float64"):
        ops.pack_linear(nbx.asarray(np.ones((3, 4))))
    with pytest.raises(ValueError, match="pack_linear: wants a float32 weight"):
        ops.pack_linear(nbx.asarray(np.ones(4, np.float32)))
