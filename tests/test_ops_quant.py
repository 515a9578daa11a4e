"""Packed int4 weights: the packer against its own definition (codes within half a step of the
weight, the layout decoded in numpy), matmul_int4 against the dequantized weight in float64."""

import numpy as np
import pytest

import nbxtensor as nbx
from float_formats import FLOATS, UNIT, f64, stored, tensor
from nbxtensor import ops

RNG = np.random.default_rng(3)
GROUP, BITS = 128, 4  # the int4-g128-asym layout of the dtype table, decoded independently here


def dequantize(packed, scales, minima):
    p = np.array(packed.numpy())
    codes = np.stack([p & 0xF, p >> 4], axis=-1).reshape(p.shape[0], -1).astype(np.float64)
    s = np.repeat(np.array(scales.numpy(), np.float64), GROUP, axis=1)
    m = np.repeat(np.array(minima.numpy(), np.float64), GROUP, axis=1)
    return codes * s + m


def test_layout_of_the_table_is_the_one_decoded_here():
    w = RNG.standard_normal((2, 2 * GROUP)).astype(np.float32)
    packed, scales, minima = ops.pack_int4(nbx.asarray(w))
    assert (packed.dtype, packed.shape) == ("uint8", (2, GROUP * 2 * BITS // 8))
    assert (scales.dtype, scales.shape, minima.shape) == ("float16", (2, 2), (2, 2))


@pytest.mark.parametrize("dtype", FLOATS)
def test_packing_rounds_each_weight_to_the_nearest_level(dtype):
    w = RNG.standard_normal((5, 3 * GROUP)) * np.linspace(0.1, 4, 5)[:, None]
    w64 = stored(w, dtype)
    packed, scales, minima = ops.pack_int4(tensor(w, dtype))
    deq = dequantize(packed, scales, minima)
    step = np.repeat(np.array(scales.numpy(), np.float64), GROUP, axis=1)
    assert np.all(np.abs(deq - w64) <= 0.5 * step * (1 + 1e-3) + 1e-7)
    lo = w64.reshape(5, 3, GROUP).min(axis=-1)
    np.testing.assert_array_equal(np.array(minima.numpy()), lo.astype(np.float16))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("lead", [(1,), (3,), (2, 9), ()])
def test_matmul_int4_matches_the_dequantized_product(dtype, lead):
    n, k = 6, 2 * GROUP
    packed, scales, minima = ops.pack_int4(tensor(RNG.standard_normal((n, k)), "float32"))
    deq = dequantize(packed, scales, minima)
    x = RNG.standard_normal(lead + (k,))
    got = f64(ops.matmul_int4(tensor(x, dtype), packed, scales, minima))
    x64 = stored(x, dtype)
    ref = x64 @ deq.T
    bound = (k + 4) * UNIT["float32"] * (np.abs(x64) @ np.abs(deq).T) * 4 + UNIT[dtype] * np.abs(ref)
    assert got.shape == lead + (n,)
    assert np.all(np.abs(got - ref) <= bound)


def test_matmul_int4_on_a_strided_activation():
    packed, scales, minima = ops.pack_int4(tensor(RNG.standard_normal((4, GROUP)), "float32"))
    x = RNG.standard_normal((GROUP, 3))
    tx = tensor(x, "float32").transpose(0, 1)
    got = f64(ops.matmul_int4(tx, packed, scales, minima))
    np.testing.assert_allclose(got, stored(x, "float32").T @ dequantize(packed, scales, minima).T, rtol=1e-4, atol=1e-4)


def test_bad_int4_inputs_are_named():
    packed, scales, minima = ops.pack_int4(tensor(RNG.standard_normal((4, GROUP)), "float32"))
    with pytest.raises(ValueError, match="matmul_int4: K = 64"):
        ops.matmul_int4(tensor(np.ones((1, 64)), "float32"), packed, scales, minima)
    with pytest.raises(ValueError, match="matmul_int4: wants x float32, packed uint8"):
        ops.matmul_int4(tensor(np.ones((1, GROUP)), "float32"), packed, minima, minima.view_dtype("uint16"))
    with pytest.raises(ValueError, match="pack_int4: group 0 of row 0"):
        ops.pack_int4(tensor(np.full((1, GROUP), np.inf), "float32"))
    with pytest.raises(ValueError, match="pack_int4: K = 100"):
        ops.pack_int4(tensor(np.ones((1, 100)), "float32"))
