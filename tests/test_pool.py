"""The CPU pool and parallel_for: same bytes as one call, whatever the size or thread count;
exceptions reach the caller unchanged; nested calls do not deadlock."""

import threading
import time

import numpy as np
import pytest

from nbxtensor.backend.cpu import blas, pool


@pytest.fixture(autouse=True)
def measured_pool():
    pool.forget_thresholds()
    yield
    pool.set_threads(None)
    pool.forget_thresholds()


def splitting_pays(n):
    """Work whose pieces sleep (the GIL released) for as long as they are long: split wins."""
    return lambda a, b: time.sleep((b - a) * 1e-6)


def splitting_never_pays(n):
    """Work where every split piece pays a large fixed cost: inline always wins."""
    def work(a, b):
        if b - a < n:
            time.sleep(0.002)
    return work


def pieces_of(n, kind):
    """The (start, stop, thread) of each piece parallel_for hands out for n elements."""
    seen, lock = [], threading.Lock()

    def work(a, b):
        time.sleep(0.001)  # keep a piece long enough for the others to start elsewhere
        with lock:
            seen.append((a, b, threading.get_ident()))

    pool.parallel_for(n, work, kind)
    return sorted(seen)


def test_the_pool_is_sized_by_measurement_and_settable():
    assert pool.threads() == pool.measured_threads() >= 1
    pool.set_threads(3)
    assert pool.threads() == 3
    pool.set_threads(None)
    assert pool.threads() == pool.measured_threads()
    for bad in (0, -4):
        with pytest.raises(ValueError, match="at least one thread"):
            pool.set_threads(bad)


def test_large_work_is_split_into_one_contiguous_piece_per_thread():
    pool.set_threads(4)
    pool.parallel_for(1 << 15, splitting_pays(1 << 15), "sleepy", splitting_pays)
    split_from, measured = pool.threshold("sleepy")
    assert split_from is not None and measured == 1 << 15
    pieces = pieces_of(1 << 15, "sleepy")
    assert [(a, b) for a, b, _ in pieces] == [(0, 8192), (8192, 16384), (16384, 24576), (24576, 32768)]
    assert len({thread for _, _, thread in pieces}) == 4, "pieces run on four threads at once"
    assert [(a, b) for a, b, _ in pieces_of(split_from - 1, "sleepy")] == [(0, split_from - 1)]


def test_work_where_splitting_never_pays_stays_inline():
    pool.set_threads(4)
    pool.parallel_for(4096, splitting_never_pays(4096), "costly", splitting_never_pays)
    assert pool.threshold("costly") == (None, 4096)
    assert [(a, b) for a, b, _ in pieces_of(4096, "costly")] == [(0, 4096)]


@pytest.mark.parametrize("threads", [1, 2, 3, 8])
@pytest.mark.parametrize("n", [0, 1, 700, 50_000])
def test_the_bytes_equal_one_numpy_call(threads, n):
    pool.set_threads(threads)
    pool.parallel_for(1 << 15, splitting_pays(1 << 15), "tanh-test", splitting_pays)  # threshold known: over 50 000 splits
    x = np.random.default_rng(n).standard_normal(n).astype(np.float32)
    out = np.full_like(x, np.nan)
    pool.parallel_for(n, lambda a, b: np.tanh(x[a:b], out=out[a:b]), "tanh-test")
    assert out.tobytes() == np.tanh(x).tobytes()


def test_an_exception_in_a_piece_reaches_the_caller_unchanged():
    pool.set_threads(4)
    pool.parallel_for(1 << 15, splitting_pays(1 << 15), "raising", splitting_pays)
    problem = KeyError("piece three failed")

    def work(a, b):
        if a == 3 * (1 << 13):
            raise problem

    with pytest.raises(KeyError) as caught:
        pool.parallel_for(1 << 15, work, "raising")
    assert caught.value is problem


def test_an_exception_in_the_probe_reaches_the_caller():
    pool.set_threads(2)

    def probe(n):
        raise RuntimeError("probe cannot run")

    with pytest.raises(RuntimeError, match="probe cannot run"):
        pool.parallel_for(1 << 14, lambda a, b: None, "bad-probe", probe)


def test_parallel_for_inside_a_piece_runs_inline_and_finishes():
    pool.set_threads(4)
    pool.parallel_for(1 << 15, splitting_pays(1 << 15), "outer", splitting_pays)
    inner_pieces = []

    def outer(a, b):
        pool.parallel_for(b - a, lambda c, d: inner_pieces.append((c, d)), "outer")

    pool.parallel_for(1 << 15, outer, "outer")
    assert sorted(inner_pieces) == [(0, 8192)] * 4


def test_an_unmeasured_kind_needs_a_probe():
    pool.set_threads(2)
    with pytest.raises(ValueError, match="kind 'no-probe' has no threshold"):
        pool.parallel_for(1 << 16, lambda a, b: None, "no-probe")


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="n must be ≥ 0"):
        pool.parallel_for(-1, lambda a, b: None, "x")
    with pytest.raises(ValueError, match="callable"):
        pool.parallel_for(10, "not a function", "x")


def test_the_blas_follows_the_pool():
    if blas.library() is None:
        pytest.fail("numpy's OpenBLAS was not found among the loaded libraries")
    pool.set_threads(1)
    assert blas.threads() == 1
    pool.set_threads(None)
    assert blas.threads() == pool.threads()
    seen = []
    pool.set_threads(2)
    pool.parallel_for(1 << 15, splitting_pays(1 << 15), "blas", splitting_pays)
    pool.parallel_for(1 << 15, lambda a, b: seen.append(blas.threads()), "blas")
    assert seen == [1, 1], "one BLAS thread per piece inside parallel_for"
    assert blas.threads() == 2
