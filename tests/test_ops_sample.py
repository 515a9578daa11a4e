"""sample on the CPU against what it must draw: the tokens of many positions follow
softmax(logits / temperature) kept to the top-k and top-p sets (numpy computes the sets and the
probabilities), top_k=1 and a tiny top_p are the argmax, a seed and position give one token, a
captured draw replays with the position it is fed, and what the spec refuses is named."""

import numpy as np
import pytest

import nbxtensor as nbx
from nbxtensor import ops, program

RNG = np.random.default_rng(23)


def at(position, dtype="int64"):
    return nbx.asarray(np.array([position], dtype=dtype))


def kept_probabilities(logits, temperature=1.0, top_k=0, top_p=1.0):
    """The distribution a draw follows, in float64: the top-k set (ties at its edge kept), then the
    heaviest tokens whose strictly heavier mass is below top_p."""
    z = logits.astype(np.float64) / temperature
    keep = np.ones(z.shape, bool)
    if 0 < top_k < z.size:
        keep = z >= np.sort(z)[::-1][top_k - 1]
    p = np.where(keep, np.exp(z - z.max()), 0.0)
    p /= p.sum()
    if top_p < 1:
        heavier = np.array([p[p > x].sum() for x in p])
        keep &= heavier < top_p
        p = np.where(keep, p, 0.0)
        p /= p.sum()
    return p


@pytest.mark.parametrize(
    "temperature,top_k,top_p",
    [(1.0, 0, 1.0), (0.6, 0, 1.0), (1.5, 5, 1.0), (1.0, 0, 0.7), (0.8, 6, 0.9)],
)
def test_draws_follow_the_filtered_softmax(temperature, top_k, top_p):
    logits = RNG.normal(0, 1.5, 12).astype(np.float32)
    want = kept_probabilities(logits, temperature, top_k, top_p)
    x = nbx.asarray(logits)
    n = 3000
    tokens = [
        ops.sample(x, at(i), seed=11, temperature=temperature, top_k=top_k, top_p=top_p).item() for i in range(n)
    ]
    counts = np.bincount(tokens, minlength=12)
    assert counts[want == 0].sum() == 0, (counts, want)
    # each count within 5 standard deviations of its binomial mean
    sigma = np.sqrt(n * want * (1 - want))
    assert np.all(np.abs(counts - n * want) <= 5 * sigma + 1), (counts, n * want)


def test_top_k_one_and_a_tiny_top_p_are_the_argmax_on_every_float_dtype():
    logits = RNG.normal(0, 3, (4, 1, 3000)).astype(np.float32)
    for dtype in ["float32", "float16", "bfloat16"]:
        x = nbx.asarray(logits).astype(dtype)
        greedy = ops.argmax(x, -1).numpy()
        for top_k, top_p in [(1, 1.0), (0, 1e-9)]:
            got = ops.sample(x, at(5), seed=3, top_k=top_k, top_p=top_p)
            assert got.shape == (4, 1) and str(got.dtype) == "int64"
            np.testing.assert_array_equal(got.numpy(), greedy)


def test_a_seed_and_position_give_one_token_and_rows_draw_apart():
    logits = np.zeros((64, 50), np.float32)
    x = nbx.asarray(logits)
    first = ops.sample(x, at(9), seed=1).numpy()
    np.testing.assert_array_equal(ops.sample(x, at(9, "int32"), seed=1).numpy(), first)
    np.testing.assert_array_equal(ops.sample(x, nbx.asarray(np.array(9, np.int64)), seed=1).numpy(), first)
    # 64 rows over 50 equal logits: the rows use their own streams
    assert len(set(first.tolist())) > 20
    assert not np.array_equal(ops.sample(x, at(10), seed=1).numpy(), first)
    assert not np.array_equal(ops.sample(x, at(9), seed=2).numpy(), first)


def test_a_captured_draw_replays_with_the_position_it_is_fed():
    x = nbx.asarray(RNG.normal(0, 2, (2, 500)).astype(np.float32))

    def model(position):
        return ops.sample(x, position, seed=7, temperature=0.9, top_k=40, top_p=0.95)

    traced = program.trace(model, at(0))
    replay = traced.executable().capture(at(0))
    draws = []
    for position in [1, 2, 300, 10**9]:
        replayed = replay.run(at(position))[0].numpy()
        np.testing.assert_array_equal(replayed, model(at(position)).numpy())
        draws.append(replayed.tolist())
    assert len({str(d) for d in draws}) > 1  # the fed position reaches the replayed draw


def test_what_the_spec_refuses_is_named():
    x = nbx.asarray(np.zeros((2, 8), np.float32))
    cases = [
        (dict(temperature=0.0), "argmax"),
        (dict(temperature=float("inf")), "temperature"),
        (dict(top_p=0.0), "top_p"),
        (dict(top_p=1.5), "top_p"),
        (dict(top_k=-1), "top_k"),
    ]
    for kwargs, word in cases:
        with pytest.raises(ValueError, match=word):
            ops.sample(x, at(0), seed=1, **kwargs)
    with pytest.raises(ValueError, match="seed"):
        ops.sample(x, at(0), seed=-1)
    with pytest.raises(ValueError, match="position"):
        ops.sample(x, at(-3), seed=1)
    with pytest.raises(ValueError, match="position"):
        ops.sample(x, nbx.asarray(np.array([1.0], np.float32)), seed=1)
    with pytest.raises(ValueError, match="no finite logit"):
        ops.sample(nbx.asarray(np.full((1, 8), -np.inf, np.float32)), at(0), seed=1)
    with pytest.raises(ValueError, match="sample is not defined on int32"):
        ops.sample(nbx.asarray(np.zeros(8, np.int32)), at(0), seed=1)
