"""Random streams: Philox4x32-10 known answers, the documented mapping reproduced
independently in numpy, identical draws across thread counts and chunkings, moments."""

import numpy as np
import pytest

from nbxtensor.backend.cpu import pool
from nbxtensor.ops import tiling_policy
from nbxtensor.random import Generator, philox4x32_10

# Random123's kat_vectors, "philox4x32 10": counter, key, expected
KNOWN_ANSWERS = [
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((0xFFFFFFFF,) * 4, (0xFFFFFFFF,) * 2, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0), (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)),
]


@pytest.mark.parametrize("counter, key, expected", KNOWN_ANSWERS)
def test_philox_known_answers(counter, key, expected):
    assert tuple(philox4x32_10(counter, key)) == expected


def numpy_philox_words(seed, stream, count):
    """Words 0..count of a stream, by the module's documented layout, computed with numpy."""
    blocks = np.arange((count + 3) // 4, dtype=np.uint64)
    mask = np.uint64(0xFFFFFFFF)
    x = [blocks & mask, blocks >> np.uint64(32), np.full_like(blocks, stream & 0xFFFFFFFF), np.full_like(blocks, stream >> 32)]
    k = [np.uint64(seed & 0xFFFFFFFF), np.uint64(seed >> 32)]
    for round_ in range(10):
        if round_:
            k = [(k[0] + np.uint64(0x9E3779B9)) & mask, (k[1] + np.uint64(0xBB67AE85)) & mask]
        p0, p1 = np.uint64(0xD2511F53) * x[0], np.uint64(0xCD9E8D57) * x[2]
        x = [(p1 >> np.uint64(32)) ^ x[1] ^ k[0], p1 & mask, (p0 >> np.uint64(32)) ^ x[3] ^ k[1], p0 & mask]
    return np.stack(x, axis=1).reshape(-1)[:count].astype(np.uint32)


def test_draws_follow_the_documented_mapping():
    seed, stream = 0x1234_5678_9ABC_DEF0, 3
    words = numpy_philox_words(seed, stream, 4000)
    g = Generator(seed, stream)
    u = g.uniform(1000)
    assert u.dtype == "float32"
    assert np.array_equal(u, (words[:1000] >> 8).astype(np.float32) * np.float32(2.0**-24))
    # the next draw starts at word 1000 (a block boundary); integers read two words each
    ints = g.integers(10, 20, 500)
    x = (words[1000:2000:2].astype(object) << 32) | words[1001:2000:2].astype(object)
    assert ints.tolist() == [10 + (int(v) * 10 >> 64) for v in x]
    assert g.offset == 2000


def draw_everything(seed):
    g = Generator(seed)
    return [
        g.uniform((300, 70)), g.uniform(20_001, dtype="float64"), g.uniform(9_999, -1.0, 1.0, dtype="float16"),
        g.uniform(5_000, dtype="bfloat16"), g.normal((101, 99)), g.normal(3_333, 2.0, 0.5, dtype="float64"),
        g.integers(-5, 5, 40_000), g.permutation(30_000),
    ]


def test_identical_draws_for_any_thread_count_and_chunking():
    try:
        pool.set_threads(1)
        reference = draw_everything(77)
        for threads in (2, 8):
            pool.set_threads(threads)
            assert all(np.array_equal(a, b) for a, b in zip(reference, draw_everything(77)))
        for chunk in (1, 5, 4096):
            tiling_policy.set_tiling({**tiling_policy.tiling_table(), "host_chunk_elements": chunk})
            assert all(np.array_equal(a, b) for a, b in zip(reference, draw_everything(77)))
    finally:
        tiling_policy.set_tiling(None)
        pool.set_threads(None)


def test_moments_over_a_million_draws():
    g = Generator(2026)
    n = 1_000_000
    u = np.asarray(g.uniform(n, dtype="float64"))
    # standard errors: mean 1/sqrt(12n) ≈ 2.9e-4, variance ≈ 8.9e-5; bounds at 5 errors
    assert abs(u.mean() - 0.5) < 5 * 2.9e-4 and abs(u.var() - 1 / 12) < 5 * 8.9e-5
    z = np.asarray(g.normal(n, mean=-1.0, std=2.0, dtype="float64"))
    assert abs(z.mean() + 1.0) < 5 * 2.0 / np.sqrt(n) and abs(z.var() - 4.0) < 5 * 4.0 * np.sqrt(2 / n)
    k = np.asarray(g.integers(0, 6, n))
    counts = np.bincount(k, minlength=6)
    assert counts.sum() == n and np.all(np.abs(counts - n / 6) < 5 * np.sqrt(n * (1 / 6) * (5 / 6)))


def test_streams_and_seeds_are_independent_and_reproducible():
    a, b, c = Generator(5), Generator(5), Generator(5, stream=1)
    assert np.array_equal(a.uniform(64), b.uniform(64))
    assert not np.array_equal(Generator(5).uniform(64), c.uniform(64))
    assert np.array_equal(Generator(5).spawn(1).uniform(64), Generator(5, stream=1).uniform(64))
    assert not np.array_equal(Generator(5).uniform(64), Generator(6).uniform(64))
    g = Generator(5)
    first = g.uniform(10)
    g.offset = 0
    assert np.array_equal(g.uniform(10), first)


def test_output_dtypes_and_shapes():
    g = Generator(1)
    assert g.uniform((2, 3, 4), dtype="float16").dtype == "float16"
    draw = g.uniform(1000, dtype="bfloat16")
    assert draw.dtype == "bfloat16"
    values = (draw.numpy().astype(np.uint32) << 16).view(np.float32)  # numpy holds its bit patterns
    assert values.min() >= 0.0 and values.max() < 1.0
    assert g.normal((5, 0)).shape == (5, 0)
    p = g.permutation(1000)
    assert p.dtype == "int64" and sorted(p.tolist()) == list(range(1000))


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda g: g.uniform(3, 1.0, 1.0), "low < high"),
        (lambda g: g.uniform((2, -1)), "negative"),
        (lambda g: g.uniform(3, dtype="int32"), "'int32' is not drawn"),
        (lambda g: g.normal(3, std=-1.0), "std"),
        (lambda g: g.integers(5, 5, 3), "empty"),
        (lambda g: g.permutation(-2), "n must be ≥ 0"),
        (lambda g: g.uniform(3, dtype="float128"), "unknown dtype"),
    ],
)
def test_bad_draws_are_refused_by_name(call, message):
    with pytest.raises(ValueError, match=message):
        call(Generator(0))


def test_a_draw_over_the_memory_limit_is_refused_and_the_process_goes_on():
    from nbxtensor import memory

    g = Generator(0)
    try:
        memory.set_limit(1 << 20)
        with pytest.raises(MemoryError, match=r"4194304 bytes asked, over the memory limit set of 1048576 bytes"):
            g.uniform(1 << 20)
        assert g.offset == 0, "a refused draw consumes nothing"
        assert g.uniform(1000).shape == (1000,)
    finally:
        memory.set_limit(None)
    with pytest.raises(MemoryError, match="over the host's memory"):
        g.permutation(2**62)
