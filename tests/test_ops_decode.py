"""decode_attention and kv_cache_write on the CPU against float64 numpy written from their
definitions: lengths 0, 1, ragged and the whole cache, grouped heads, one and several queries,
writes at the end of the cache, positions past it refused, a captured program replayed at
every step equal to eager."""

import numpy as np
import pytest

import nbxtensor as nbx
from float_formats import FLOATS, UNIT, f64, stored, tensor
from nbxtensor import ops, program

RNG = np.random.default_rng(17)
TOL = {"float32": 2e-5, "float16": 4 * UNIT["float16"], "bfloat16": 4 * UNIT["bfloat16"]}


def decode_reference(q, k, v, lengths, causal=True, scale=None):
    """Per batch row i: attention over the first lengths[i] rows, the queries the last sq rows."""
    b, hq, sq, d = q.shape
    hk = k.shape[1]
    scale = 1 / np.sqrt(d) if scale is None else scale
    out = np.zeros((b, hq, sq, v.shape[-1]))
    for i, n in enumerate(lengths):
        kk = np.repeat(k[i, :, :n], hq // hk, axis=0)
        vv = np.repeat(v[i, :, :n], hq // hk, axis=0)
        scores = q[i] @ np.swapaxes(kk, -1, -2) * scale
        if causal:
            allowed = np.arange(n)[None, :] <= np.arange(sq)[:, None] + (n - sq)
            scores = np.where(allowed, scores, -np.inf)
        for h in range(hq):
            for r in range(sq):
                row = scores[h, r]
                if n == 0 or np.all(np.isneginf(row)):
                    continue
                p = np.exp(row - row.max())
                out[i, h, r] = p @ vv[h] / p.sum()
    return out


def index(values, dtype="int32", shape=None):
    a = np.asarray(values, dtype=dtype)
    return nbx.asarray(a if shape is None else a.reshape(shape))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize(
    "b, hq, hk, sq, t, d, lengths",
    [
        (1, 4, 4, 1, 700, 64, [0]),
        (1, 4, 4, 1, 700, 64, [1]),
        (1, 32, 8, 1, 1030, 128, [1030]),
        (2, 8, 2, 1, 600, 32, [513, 77]),
        (2, 8, 2, 4, 300, 16, [4, 299]),
        (1, 2, 1, 8, 100, 8, [5]),
    ],
)
@pytest.mark.parametrize("causal", [True, False])
def test_decode_attention_against_float64(dtype, b, hq, hk, sq, t, d, lengths, causal):
    q, k, v = RNG.standard_normal((b, hq, sq, d)), RNG.standard_normal((b, hk, t, d)), RNG.standard_normal((b, hk, t, d))
    length = index(lengths, "int64" if b == 2 else "int32", None if b == 2 else ())
    got = f64(ops.decode_attention(tensor(q, dtype), tensor(k, dtype), tensor(v, dtype), length, causal=causal))
    ref = decode_reference(*(stored(a, dtype) for a in (q, k, v)), lengths, causal)
    np.testing.assert_allclose(got, ref, rtol=TOL[dtype], atol=TOL[dtype])


def test_decode_attention_refuses_lengths_outside_the_cache_and_prefills():
    q, k = tensor(np.ones((1, 2, 1, 4)), "float32"), tensor(np.ones((1, 1, 6, 4)), "float32")
    with pytest.raises(ValueError, match="length 7"):
        ops.decode_attention(q, k, k, index(7))
    with pytest.raises(ValueError, match="length -1"):
        ops.decode_attention(q, k, k, index(-1))
    with pytest.raises(ValueError, match="at most 8 query rows"):
        ops.decode_attention(tensor(np.ones((1, 2, 9, 4)), "float32"), k, k, index(3))
    with pytest.raises(ValueError, match="length must be int32 or int64"):
        ops.decode_attention(q, k, k, nbx.asarray(np.float32(3)))
    # the scale, and a query that is a transposed view ([b, sq, h, d] in memory)
    qs = RNG.standard_normal((1, 2, 2, 4))
    kk, vv = RNG.standard_normal((1, 1, 6, 4)), RNG.standard_normal((1, 1, 6, 4))
    tq = tensor(qs, "float32").transpose(1, 2)
    got = f64(ops.decode_attention(tq, tensor(kk, "float32"), tensor(vv, "float32"), index(5), scale=0.25))
    ref = decode_reference(np.swapaxes(qs, 1, 2), kk, vv, [5], True, 0.25)
    np.testing.assert_allclose(got, ref, rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("dtype", FLOATS)
def test_a_cache_write_lands_at_its_position_and_keeps_the_rest(dtype):
    cache_values = RNG.standard_normal((2, 3, 10, 4))
    cache = tensor(cache_values, dtype)
    before = f64(cache)
    new_values = RNG.standard_normal((2, 3, 2, 4))
    new = tensor(new_values, dtype)
    assert ops.kv_cache_write(cache, new, index([3, 8], "int64")) is None  # the last two rows of row 1
    want = before.copy()
    want[0, :, 3:5] = stored(new_values, dtype)[0]
    want[1, :, 8:10] = stored(new_values, dtype)[1]
    np.testing.assert_array_equal(f64(cache), want)
    with pytest.raises(ValueError, match="position 9 .* outside a cache of 10 rows"):
        ops.kv_cache_write(cache, new, index(9))
    with pytest.raises(ValueError, match="position -1"):
        ops.kv_cache_write(cache, new, index([0, -1]))
    np.testing.assert_array_equal(f64(cache), want)  # a refused write writes nothing
    with pytest.raises(ValueError, match="view of the cache"):
        ops.kv_cache_write(cache, cache[:, :, :2], index(0))


def test_one_captured_program_serves_every_decode_step():
    hq, hk, t, d = 4, 2, 40, 16
    start_k, start_v = RNG.standard_normal((1, hk, t, d)), RNG.standard_normal((1, hk, t, d))
    kc, vc = tensor(start_k, "float32"), tensor(start_v, "float32")  # the program's state
    ke, ve = tensor(start_k, "float32"), tensor(start_v, "float32")  # an eager twin

    def step(kc, vc):
        def model(q, k, v, position, length):
            ops.kv_cache_write(kc, k, position)
            ops.kv_cache_write(vc, v, position)
            return ops.decode_attention(q, kc, vc, length)

        return model

    def inputs(at):
        rows = lambda heads: tensor(RNG.standard_normal((1, heads, 1, d)), "float32")  # noqa: E731
        return rows(hq), rows(hk), rows(hk), index(at), index([at + 1], "int64")

    first = inputs(0)
    traced = program.trace(step(kc, vc), *first)
    # the declared costs price the step: two writes (the new row and the position read, the row
    # written), attention over a full cache (q, both caches, the length read; the output written)
    price = traced.price("nvidia/h200")
    row, q_bytes, cache_bytes = hk * d * 4, hq * d * 4, 2 * hk * t * d * 4
    assert price.bytes == 2 * (row + 4 + row) + (q_bytes + cache_bytes + 8 + q_bytes)
    assert price.flops == hq * (t * (2 * d + 3 + 2 * d) + d) and price.seconds > 0
    replay = traced.executable().capture(*first)
    step(ke, ve)(*first)
    for at in (1, 2, 17, 38, 39):
        x = inputs(at)
        got = replay.run(*x)[0]
        eager = step(ke, ve)(*x)
        np.testing.assert_array_equal(f64(got), f64(eager))
        ref = decode_reference(f64(x[0]), f64(kc), f64(vc), [at + 1])
        np.testing.assert_allclose(f64(got), ref, rtol=2e-5, atol=2e-6)
    np.testing.assert_array_equal(f64(kc), f64(ke))
    # a cache passed as a program input would not outlive the run: refused when traced
    with pytest.raises(ValueError, match="updates its input 0 in place"):
        program.trace(lambda c, n, p: ops.kv_cache_write(c, n, p) or n, kc, first[1], first[3])
