"""sdpa and rope against float64 numpy implementations written from their definitions."""

import numpy as np
import pytest

from float_formats import FLOATS, UNIT, f64, stored, tensor
from nbxtensor import ops

RNG = np.random.default_rng(7)
TOL = {"float32": 1e-5, "float16": 4 * UNIT["float16"], "bfloat16": 4 * UNIT["bfloat16"]}


def sdpa_reference(q, k, v, mask=None, causal=False, scale=None):
    b, hq, sq, d = q.shape
    hk, sk = k.shape[1], k.shape[2]
    k = np.repeat(k, hq // hk, axis=1)
    v = np.repeat(v, hq // hk, axis=1)
    scores = q @ np.swapaxes(k, -1, -2) * (1 / np.sqrt(d) if scale is None else scale)
    if mask is not None:
        scores = scores + mask
    if causal:
        allowed = np.arange(sk)[None, :] <= np.arange(sq)[:, None] + (sk - sq)
        scores = np.where(allowed, scores, -np.inf)
    scores = scores - scores.max(axis=-1, keepdims=True)
    p = np.exp(scores)
    return (p / p.sum(axis=-1, keepdims=True)) @ v


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("mask_shape", [None, (5, 7), (2, 1, 5, 7)])
def test_sdpa_with_grouped_heads_mask_and_causal(dtype, causal, mask_shape):
    q, k, v = RNG.standard_normal((2, 4, 5, 8)), RNG.standard_normal((2, 2, 7, 8)), RNG.standard_normal((2, 2, 7, 3))
    mask = None if mask_shape is None else RNG.standard_normal(mask_shape)
    inputs = [tensor(a, dtype) for a in (q, k, v)]
    got = f64(ops.sdpa(*inputs, mask=None if mask is None else tensor(mask, dtype), causal=causal))
    ref = sdpa_reference(*(stored(a, dtype) for a in (q, k, v)), None if mask is None else stored(mask, dtype), causal)
    np.testing.assert_allclose(got, ref, rtol=TOL[dtype], atol=TOL[dtype])


def test_sdpa_scale_strided_inputs_and_decode_step():
    q = RNG.standard_normal((1, 2, 3, 4))
    k = RNG.standard_normal((1, 6, 2, 4))  # stored [b, sk, h, d], read as [b, h, sk, d]
    v = RNG.standard_normal((1, 2, 6, 5))
    tk = tensor(k, "float32").transpose(1, 2)
    got = f64(ops.sdpa(tensor(q, "float32"), tk, tensor(v, "float32"), causal=True, scale=0.3))
    ref = sdpa_reference(stored(q, "float32"), np.swapaxes(stored(k, "float32"), 1, 2), stored(v, "float32"), causal=True, scale=0.3)
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6)
    # One query against a cache of 6 keys sees them all under the causal rule.
    one = f64(ops.sdpa(tensor(q[:, :, :1], "float32"), tk, tensor(v, "float32"), causal=True))
    np.testing.assert_allclose(one, sdpa_reference(stored(q[:, :, :1], "float32"), np.swapaxes(stored(k, "float32"), 1, 2), stored(v, "float32")), rtol=1e-5, atol=1e-6)


def test_sdpa_rows_without_keys_are_zero_and_empty_sizes():
    q, k, v = RNG.standard_normal((1, 1, 3, 2)), RNG.standard_normal((1, 1, 2, 2)), RNG.standard_normal((1, 1, 2, 2))
    got = f64(ops.sdpa(tensor(q, "float32"), tensor(k, "float32"), tensor(v, "float32"), causal=True))
    np.testing.assert_array_equal(got[0, 0, 0], [0.0, 0.0])  # query 0 sees key j <= 0 + 2 - 3 < 0
    ref = sdpa_reference(*(stored(a, "float32") for a in (q[:, :, 1:], k, v)), causal=True)
    np.testing.assert_allclose(got[:, :, 1:], ref, rtol=1e-5, atol=1e-6)
    assert ops.sdpa(tensor(np.ones((1, 2, 0, 4)), "float32"), tensor(np.ones((1, 1, 3, 4)), "float32"), tensor(np.ones((1, 1, 3, 4)), "float32")).shape == (1, 2, 0, 4)


@pytest.mark.parametrize(
    "shapes,words",
    [
        (((1, 3, 2, 4), (1, 2, 2, 4), (1, 2, 2, 4), None), ["sdpa", "multiple of hk"]),
        (((1, 2, 2, 4), (1, 2, 2, 5), (1, 2, 2, 4), None), ["sdpa", "[1, 2, 2, 5]"]),
        (((1, 2, 2, 4), (1, 2, 3, 4), (1, 2, 3, 4), (2, 3, 3)), ["sdpa", "mask", "[2, 3, 3]"]),
    ],
)
def test_sdpa_refuses_bad_shapes(shapes, words):
    q, k, v, m = shapes
    args = [tensor(np.ones(s), "float32") for s in (q, k, v)]
    with pytest.raises(ValueError) as info:
        ops.sdpa(*args, mask=None if m is None else tensor(np.ones(m), "float32"))
    assert all(w in str(info.value) for w in words), str(info.value)


def rope_reference(x, cos, sin, interleaved):
    d = x.shape[-1]
    out = np.empty_like(x)
    if interleaved:
        x1, x2 = x[..., 0::2], x[..., 1::2]
        out[..., 0::2], out[..., 1::2] = x1 * cos - x2 * sin, x2 * cos + x1 * sin
    else:
        x1, x2 = x[..., : d // 2], x[..., d // 2 :]
        out[..., : d // 2], out[..., d // 2 :] = x1 * cos - x2 * sin, x2 * cos + x1 * sin
    return out


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("interleaved", [False, True])
def test_rope_both_pairings(dtype, interleaved):
    x = RNG.standard_normal((2, 3, 5, 8))
    angles = np.arange(5)[:, None] * (10000.0 ** (-np.arange(4) / 4))[None, :]
    cos, sin = np.cos(angles), np.sin(angles)
    got = f64(ops.rope(tensor(x, dtype), tensor(cos, dtype), tensor(sin, dtype), interleaved=interleaved))
    ref = rope_reference(stored(x, dtype), stored(cos, dtype), stored(sin, dtype), interleaved)
    np.testing.assert_allclose(got, ref, rtol=TOL[dtype], atol=2 * TOL[dtype])


def test_rope_on_a_transposed_input_and_bad_tables():
    x = RNG.standard_normal((2, 5, 3, 6))  # [b, seq, heads, d] read as [b, heads, seq, d]
    cos, sin = RNG.standard_normal((5, 3)), RNG.standard_normal((5, 3))
    tx = tensor(x, "float32").transpose(1, 2)
    got = f64(ops.rope(tx, tensor(cos, "float32"), tensor(sin, "float32")))
    ref = rope_reference(np.swapaxes(stored(x, "float32"), 1, 2), stored(cos, "float32"), stored(sin, "float32"), False)
    np.testing.assert_allclose(got, ref, rtol=1e-6, atol=1e-6)
    with pytest.raises(ValueError, match="rope: sin must be"):
        ops.rope(tx, tensor(cos, "float32"), tensor(sin[:4], "float32"))
