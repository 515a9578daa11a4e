"""The factorizations and solvers (nbxtensor.ops and nbxtensor.array_api.linalg) against
numpy.linalg on random batches, float32 and float64, by value and by reconstruction."""

import math

import numpy as np
import pytest

import nbxtensor as nbx
from nbxtensor import array_api as xp
from nbxtensor import ops

RNG = np.random.default_rng(20261202)
TOLERANCE = {np.float32: 2e-5, np.float64: 1e-11}
DTYPES = [np.float32, np.float64]


def values(t):
    return np.asarray(t.numpy())


def random(shape, dtype):
    return RNG.standard_normal(shape).astype(dtype)


def spd(shape, dtype):
    m = RNG.standard_normal(shape)
    return (m @ np.swapaxes(m, -1, -2) + shape[-1] * np.eye(shape[-1])).astype(dtype)


def close(got, expected, dtype, scale=1.0):
    np.testing.assert_allclose(got, expected, rtol=TOLERANCE[dtype] * 10, atol=TOLERANCE[dtype] * scale)


@pytest.mark.parametrize("dtype", DTYPES)
def test_solve_inv_det_slogdet_match_numpy_on_batches(dtype):
    a = random((2, 3, 4, 4), dtype)
    b = random((3, 4, 2), dtype)
    x = xp.linalg.solve(nbx.asarray(a), nbx.asarray(b))
    assert (x.dtype, x.shape) == (np.dtype(dtype).name, (2, 3, 4, 2))
    close(values(x), np.linalg.solve(a.astype(np.float64), b.astype(np.float64)), dtype, 10)
    v = random((4,), dtype)
    close(values(xp.linalg.solve(nbx.asarray(a), nbx.asarray(v))),
          np.linalg.solve(a.astype(np.float64), v.astype(np.float64)[:, None])[..., 0], dtype, 10)
    inv = values(xp.linalg.inv(nbx.asarray(a)))
    close(a.astype(np.float64) @ inv, np.broadcast_to(np.eye(4), a.shape), dtype, 10)
    close(values(xp.linalg.det(nbx.asarray(a))), np.linalg.det(a.astype(np.float64)), dtype, 10)
    sign, log = xp.linalg.slogdet(nbx.asarray(a))
    expected = np.linalg.slogdet(a.astype(np.float64))
    np.testing.assert_array_equal(values(sign), expected.sign)
    close(values(log), expected.logabsdet, dtype, 10)
    assert type(xp.linalg.slogdet(nbx.asarray(a))).__name__ == "SlogdetResult"


def test_singular_and_not_positive_definite_matrices_are_refused_by_name():
    singular = np.array([[[1.0, 2.0], [2.0, 4.0]], [[1.0, 0.0], [0.0, 1.0]]])
    with pytest.raises(ValueError, match="inv: the matrix at batch index 0 is singular"):
        xp.linalg.inv(nbx.asarray(singular))
    with pytest.raises(ValueError, match="solve: the matrix at batch index 0 is singular"):
        xp.linalg.solve(nbx.asarray(singular), nbx.asarray(np.ones(2)))
    sign, log = xp.linalg.slogdet(nbx.asarray(singular))
    assert values(sign).tolist() == [0.0, 1.0] and values(log).tolist() == [-math.inf, 0.0]
    assert values(xp.linalg.det(nbx.asarray(singular))).tolist() == [0.0, 1.0]
    with pytest.raises(ValueError, match="cholesky: the matrix at batch index 0 is not positive definite"):
        xp.linalg.cholesky(nbx.asarray(np.array([[1.0, 2.0], [2.0, 1.0]])))
    with pytest.raises(ValueError, match="det: takes square matrices"):
        xp.linalg.det(nbx.asarray(np.ones((2, 3))))
    with pytest.raises(ValueError, match="at least 2 dims"):
        xp.linalg.svdvals(nbx.asarray(np.ones(3)))
    with pytest.raises(ValueError, match="inv is not defined on int64"):
        xp.linalg.inv(nbx.asarray(np.eye(2, dtype=np.int64)))


@pytest.mark.parametrize("dtype", DTYPES)
def test_cholesky_matches_numpy_lower_and_upper(dtype):
    a = spd((3, 5, 5), dtype)
    lower = values(xp.linalg.cholesky(nbx.asarray(a)))
    close(lower, np.linalg.cholesky(a.astype(np.float64)), dtype, 10)
    assert np.array_equal(lower, np.tril(lower))
    upper = values(xp.linalg.cholesky(nbx.asarray(a), upper=True))
    np.testing.assert_array_equal(upper, np.swapaxes(lower, -1, -2))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(2, 6, 4), (2, 4, 6), (5, 5)])
def test_qr_and_svd_reconstruct_tall_and_wide_batches(dtype, shape):
    a = random(shape, dtype)
    m, n = shape[-2:]
    k = min(m, n)
    for mode in ("reduced", "complete"):
        q, r = xp.linalg.qr(nbx.asarray(a), mode=mode)
        cols = k if mode == "reduced" else m
        assert (q.shape, r.shape) == ((*shape[:-2], m, cols), (*shape[:-2], cols, n))
        q, r = values(q), values(r)
        close(q @ r, a, dtype, 10)
        close(np.swapaxes(q, -1, -2) @ q, np.broadcast_to(np.eye(cols), q.shape[:-2] + (cols, cols)), dtype, 10)
        assert np.array_equal(r, np.triu(r))
    for full in (True, False):
        u, s, vh = xp.linalg.svd(nbx.asarray(a), full_matrices=full)
        u, s, vh = values(u), values(s), values(vh)
        expected = np.linalg.svd(a.astype(np.float64), full_matrices=full)
        assert (u.shape, s.shape, vh.shape) == (expected.U.shape, expected.S.shape, expected.Vh.shape)
        close(s, expected.S, dtype, 10)
        close((u[..., :, :k] * s[..., None, :]) @ vh[..., :k, :], a, dtype, 10)
    close(values(xp.linalg.svdvals(nbx.asarray(a))), np.linalg.svd(a.astype(np.float64), compute_uv=False), dtype, 10)


@pytest.mark.parametrize("dtype", DTYPES)
def test_eigh_and_eigvalsh_match_numpy(dtype):
    m = random((3, 5, 5), dtype)
    a = m + np.swapaxes(m, -1, -2)
    w, v = xp.linalg.eigh(nbx.asarray(a))
    expected = np.linalg.eigvalsh(a.astype(np.float64))
    close(values(w), expected, dtype, 10)
    w, v = values(w), values(v)
    close((v * w[..., None, :]) @ np.swapaxes(v, -1, -2), a, dtype, 10)
    close(values(xp.linalg.eigvalsh(nbx.asarray(a))), expected, dtype, 10)
    assert xp.linalg.eigh(nbx.asarray(a))._fields == ("eigenvalues", "eigenvectors")


@pytest.mark.parametrize("dtype", DTYPES)
def test_rank_pinv_norms_and_powers_match_numpy(dtype):
    a = random((2, 5, 3), dtype)
    a[1, :, 2] = a[1, :, 0] + a[1, :, 1]  # rank 2
    assert values(xp.linalg.matrix_rank(nbx.asarray(a))).tolist() == [3, 2]
    assert values(xp.linalg.matrix_rank(nbx.asarray(a), rtol=0.99)).tolist() == [1, 1]
    # the standard's cutoff, max(M, N)·eps of the dtype: float32's rounding leaves the rank-2
    # matrix a third singular value near 1e-7 of the largest, dropped there as by numpy
    cutoff = max(a.shape[-2:]) * np.finfo(dtype).eps
    close(values(xp.linalg.pinv(nbx.asarray(a))), np.linalg.pinv(a.astype(np.float64), rtol=cutoff), dtype, 100)
    for ord in ("nuc", 2, -2, "fro", 1, -1, math.inf, -math.inf):
        got = xp.linalg.matrix_norm(nbx.asarray(a), ord=ord, keepdims=True)
        assert got.shape == (2, 1, 1)
        close(values(got), np.linalg.norm(a.astype(np.float64), ord=ord, axis=(-2, -1), keepdims=True), dtype, 10)
    sq = random((2, 3, 3), dtype)
    for n in (-3, -1, 0, 2, 5):
        close(values(xp.linalg.matrix_power(nbx.asarray(sq), n)), np.linalg.matrix_power(sq.astype(np.float64), n),
              dtype, 1e3)


def test_empty_matrices_and_the_ops_functions():
    assert values(xp.linalg.det(nbx.asarray(np.zeros((0, 0))))).tolist() == 1.0
    assert xp.linalg.inv(nbx.asarray(np.zeros((3, 0, 0)))).shape == (3, 0, 0)
    assert xp.linalg.matrix_rank(nbx.asarray(np.zeros((2, 0, 3)))).shape == (2,)
    assert xp.linalg.pinv(nbx.asarray(np.zeros((4, 0)))).shape == (0, 4)
    q, r = ops.qr(nbx.asarray(np.eye(3)), complete=True)
    np.testing.assert_allclose(np.abs(values(q)), np.eye(3))
    assert ops.svdvals(nbx.asarray(np.zeros((0, 2, 2)))).shape == (0, 2)
