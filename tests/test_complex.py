"""complex64 and complex128 on the host: the namespace's dtypes and their facts, the
elementwise ops, reductions and products against numpy value by value, the C99 special values
the Array API lists, the layout ops on 8- and 16-byte elements, and the refusals (complex to
real, the ordering ops)."""

import cmath
import math

import numpy as np
import pytest

import nbxtensor as nbx
from nbxtensor import array_api as xp
from nbxtensor import ops

RNG = np.random.default_rng(20261203)
COMPLEX = [np.complex64, np.complex128]
# relative to |w|: the part type's epsilon times a few (one library function of each part)
TOL = {np.complex64: 4e-6, np.complex128: 1e-14}
INF, NAN = math.inf, math.nan


def values(t):
    return np.asarray(t.numpy())


def randoms(dtype, shape, scale=2.0):
    return (scale * (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape))).astype(dtype)


def assert_close(got, want, dtype, factor=1.0):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    # an equal value (an infinite one too, where the difference would be NaN) is exact, and NaN
    # meets NaN (1/0 and 0 to a complex power are NaN in some part; the parts are tested apart)
    with np.errstate(invalid="ignore"):
        same = (got == want) | (np.isnan(got) & np.isnan(want))
        err = np.where(same, 0.0, np.abs(got.astype(np.complex128) - want.astype(np.complex128)))
    bound = factor * TOL[dtype] * np.maximum(np.abs(want.astype(np.complex128)), 1.0)
    bad = ~same & ~(err <= bound)
    assert not np.any(bad), (got[bad], want[bad])


def test_the_namespace_has_the_complex_dtypes_and_their_facts():
    assert xp.complex64 == "complex64" and xp.complex128 in xp.__array_namespace_info__().dtypes().values()
    kinds = xp.__array_namespace_info__().dtypes(kind="complex floating")
    assert list(kinds) == ["complex64", "complex128"]
    assert xp.__array_namespace_info__().default_dtypes()["complex floating"] == xp.complex128
    for complex_dtype, part in ((xp.complex64, xp.float32), (xp.complex128, xp.float64)):
        info, real = xp.finfo(complex_dtype), xp.finfo(part)
        assert (info.bits, info.eps, info.max, info.min, info.smallest_normal) == (
            real.bits, real.eps, real.max, real.min, real.smallest_normal)
        assert info.dtype == part
        assert xp.isdtype(complex_dtype, "complex floating") and xp.isdtype(complex_dtype, "numeric")
        assert not xp.isdtype(complex_dtype, "real floating")
    assert xp.finfo(xp.complex64).eps == float(np.finfo(np.complex64).eps)
    assert xp.result_type(xp.complex64, xp.float64) == xp.complex128
    assert xp.result_type(xp.float32, 1j) == xp.complex64
    assert xp.result_type(xp.int8, 1j) == xp.complex128
    assert xp.can_cast(xp.float32, xp.complex64) and xp.can_cast(xp.complex64, xp.complex128)
    assert not xp.can_cast(xp.complex64, xp.float32) and not xp.can_cast(xp.complex128, xp.complex64)


@pytest.mark.parametrize("dtype", COMPLEX)
def test_creation_casts_and_values(dtype):
    name = np.dtype(dtype).name
    z = xp.asarray([1 + 2j, -3j], dtype=name)
    assert z.dtype == name and z.tolist() == [1 + 2j, -3j]
    assert complex(z[1]) == -3j and "1.+2.j" in repr(z)
    assert xp.asarray(2j).dtype == xp.complex128
    np.testing.assert_array_equal(values(xp.full((2,), 1 - 1j, dtype=name)), np.full(2, 1 - 1j, dtype))
    np.testing.assert_array_equal(values(xp.ones(3, dtype=name)), np.ones(3, dtype))
    np.testing.assert_array_equal(values(xp.eye(3, k=1, dtype=name)), np.eye(3, k=1, dtype=dtype))
    for real in ("bool", "int8", "uint64", "float32", "float64"):
        r = np.arange(4).astype(real)
        np.testing.assert_array_equal(values(xp.astype(xp.asarray(r), name)), r.astype(dtype))
    with pytest.raises(ValueError, match=f"cast: {name} to float32 is refused: it would drop the imaginary part"):
        xp.astype(z, xp.float32)
    # both ways through DLPack (kDLComplex)
    a = randoms(dtype, (3, 4))
    back = np.from_dlpack(nbx.asarray(a))
    assert back.dtype == dtype
    np.testing.assert_array_equal(back, a)


UNARY = ["abs", "acos", "acosh", "asin", "asinh", "atan", "atanh", "conj", "cos", "cosh", "exp", "expm1",
         "log", "log1p", "log2", "log10", "negative", "positive", "real", "imag", "reciprocal", "sign", "sin",
         "sinh", "sqrt", "square", "tan", "tanh", "round"]
NUMPY = {"conj": np.conj, "negative": np.negative, "positive": np.positive, "real": np.real, "imag": np.imag,
         "sign": lambda z: np.where(z == 0, 0, z / np.abs(z)).astype(z.dtype)}


@pytest.mark.parametrize("dtype", COMPLEX)
@pytest.mark.parametrize("name", UNARY)
def test_unary_ops_match_numpy(name, dtype):
    z = randoms(dtype, (5, 7))
    z[0, :3] = [0, 1e-9 + 1e-9j, -1e-7j]  # near 0, where expm1 and log1p keep digits
    got = values(getattr(xp, name)(xp.asarray(z)))
    want = NUMPY.get(name, getattr(np, name, None))(z)
    assert_close(got, want, dtype, factor=4)


@pytest.mark.parametrize("dtype", COMPLEX)
def test_isnan_isinf_isfinite_read_either_part(dtype):
    z = np.array([complex(NAN, 0), complex(0, INF), complex(-INF, NAN), 1 + 1j], dtype)
    t = xp.asarray(z)
    np.testing.assert_array_equal(values(xp.isnan(t)), np.isnan(z))
    np.testing.assert_array_equal(values(xp.isinf(t)), np.isinf(z))
    np.testing.assert_array_equal(values(xp.isfinite(t)), np.isfinite(z))


@pytest.mark.parametrize("dtype", COMPLEX)
@pytest.mark.parametrize("name", ["add", "subtract", "multiply", "divide", "pow", "equal", "not_equal"])
def test_binary_ops_broadcast_against_numpy(name, dtype):
    a, b = randoms(dtype, (4, 1, 3)), randoms(dtype, (5, 3))
    b[0, 0], a[0, 0, 1] = a[0, 0, 0], 0  # an equal pair, a zero base
    got = values(getattr(xp, name)(xp.asarray(a), xp.asarray(b)))
    want = getattr(np, "power" if name == "pow" else name)(a, b)
    if want.dtype == bool:
        np.testing.assert_array_equal(got, want)
    else:
        assert_close(got, want, dtype, factor=64 if name == "pow" else 4)


def test_python_complex_scalars_are_weak_and_promote_reals():
    f = xp.asarray([1.0, 2.0], dtype=xp.float32)
    out = f * 1j
    assert out.dtype == xp.complex64
    np.testing.assert_array_equal(values(out), np.array([1j, 2j], np.complex64))
    c = xp.asarray([1 + 1j], dtype=xp.complex64)
    assert (c + 2).dtype == xp.complex64 and (c / 2.0).dtype == xp.complex64
    np.testing.assert_array_equal(values(2 - c), np.array([1 - 1j], np.complex64))
    assert (xp.asarray([1, 2]) + 0.5j).dtype == xp.complex128
    np.testing.assert_array_equal(values(xp.asarray([1, 2]) ** 2j), np.array([1, 2]) ** 2j)


def test_division_and_powers_are_numpys():
    a = np.array([1 + 2j, 1e300 + 1e300j, 1 - 1j, 0j, 2j], np.complex128)
    b = np.array([3 - 4j, 1e300 + 1e300j, 0j, 0j, -1 + 0j], np.complex128)
    with np.errstate(all="ignore"):
        want = a / b
    got = values(xp.divide(xp.asarray(a), xp.asarray(b)))
    np.testing.assert_array_equal(got[:3], want[:3])
    assert np.isnan(got[3]) and got[4] == -2j
    p = values(xp.pow(xp.asarray(np.array([1 + 1j, 0j, 0j, 2j])), xp.asarray(np.array([2 + 0j, 2 + 0j, 0j, -1 + 0j]))))
    np.testing.assert_array_equal(p, np.array([2j, 0, 1, -0.5j]))


def strict_equal(got, want):
    """The same value, NaN equal to NaN, the sign of a zero part compared."""
    def same(g, w):
        if math.isnan(w):
            return math.isnan(g)
        return g == w and (w != 0 or math.copysign(1, g) == math.copysign(1, w))
    return same(got.real, want.real) and same(got.imag, want.imag)


PI = math.pi
# The Array API's special cases for complex operands (C99 Annex G), as the standard writes them:
# (function, input, result); a result part written None is unspecified in sign.
SPECIAL = [
    ("exp", complex(0.0, 0.0), complex(1, 0)),
    ("exp", complex(-0.0, 0.0), complex(1, 0)),
    ("exp", complex(INF, 0.0), complex(INF, 0)),
    ("exp", complex(NAN, 0.0), complex(NAN, 0)),
    ("exp", complex(1.0, INF), complex(NAN, NAN)),
    ("log", complex(-0.0, 0.0), complex(-INF, PI)),
    ("log", complex(0.0, 0.0), complex(-INF, 0)),
    ("log", complex(-INF, 1.0), complex(INF, PI)),
    ("log", complex(INF, INF), complex(INF, PI / 4)),
    ("sqrt", complex(0.0, 0.0), complex(0, 0)),
    ("sqrt", complex(1.0, INF), complex(INF, INF)),
    ("sqrt", complex(-INF, 1.0), complex(0, INF)),
    ("sqrt", complex(INF, NAN), complex(INF, NAN)),
    ("acos", complex(0.0, 0.0), complex(PI / 2, -0.0)),
    ("acos", complex(-INF, INF), complex(3 * PI / 4, -INF)),
    ("acosh", complex(0.0, 0.0), complex(0, PI / 2)),
    ("acosh", complex(INF, INF), complex(INF, PI / 4)),
    ("asinh", complex(0.0, 0.0), complex(0, 0)),
    ("asinh", complex(INF, 1.0), complex(INF, 0)),
    ("atanh", complex(1.0, 0.0), complex(INF, 0)),
    ("atanh", complex(INF, 1.0), complex(0, PI / 2)),
    ("cosh", complex(0.0, 0.0), complex(1, 0)),
    ("cosh", complex(INF, 0.0), complex(INF, 0)),
    ("sinh", complex(0.0, 0.0), complex(0, 0)),
    ("sinh", complex(INF, 0.0), complex(INF, 0)),
    ("tanh", complex(0.0, 0.0), complex(0, 0)),
    ("tanh", complex(INF, 1.0), complex(1, 0)),
    ("tanh", complex(NAN, 0.0), complex(NAN, 0)),
    ("expm1", complex(0.0, 0.0), complex(0, 0)),
    ("expm1", complex(INF, 0.0), complex(INF, 0)),
    ("expm1", complex(NAN, 0.0), complex(NAN, 0)),
    ("expm1", complex(1.0, INF), complex(NAN, NAN)),
    ("log1p", complex(-1.0, 0.0), complex(-INF, 0)),
    ("log1p", complex(1.0, INF), complex(INF, PI / 2)),
    ("log1p", complex(-INF, 1.0), complex(INF, PI)),
    ("log1p", complex(-INF, INF), complex(INF, 3 * PI / 4)),
    ("log1p", complex(NAN, INF), complex(INF, NAN)),
    ("sign", complex(-0.0, 0.0), complex(0, 0)),
    ("sign", complex(NAN, 1.0), complex(NAN, NAN)),
]


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize("name,z,want", SPECIAL)
def test_the_standards_special_cases(name, z, want, dtype):
    got = complex(getattr(xp, name)(xp.asarray(z, dtype=dtype)))
    if dtype == "complex64":
        # the standard's constants (π/2 …) as complex64 holds them
        want = complex(np.complex64(want))
    if dtype == "complex64" and math.isfinite(want.real) and math.isfinite(want.imag):
        assert cmath.isclose(got, want, rel_tol=1e-6) and strict_equal(complex(0 * got.real, 0 * got.imag),
                                                                       complex(0 * want.real, 0 * want.imag)), got
    else:
        assert strict_equal(got, want), (got, want)


@pytest.mark.parametrize("dtype", COMPLEX)
def test_reductions_products_and_vecdot(dtype):
    z = randoms(dtype, (3, 4))
    t = xp.asarray(z)
    for name in ("sum", "prod", "mean"):
        for axis in (None, 0, 1):
            got = values(getattr(xp, name)(t, axis=axis))
            assert_close(got, getattr(np, name)(z, axis=axis).astype(dtype), dtype, factor=8)
    w = randoms(dtype, (4, 2))
    assert_close(values(xp.matmul(t, xp.asarray(w))), z @ w, dtype, factor=8)
    v = randoms(dtype, (3, 4))
    # the standard's vecdot conjugates x1: sum(conj(x1) * x2)
    assert_close(values(xp.vecdot(t, xp.asarray(v))), np.sum(np.conj(z) * v, axis=-1), dtype, factor=8)
    assert_close(values(xp.linalg.vecdot(t, xp.asarray(v), axis=0)), np.sum(np.conj(z) * v, axis=0), dtype, 8)


@pytest.mark.parametrize("dtype", COMPLEX)
def test_layout_ops_move_eight_and_sixteen_byte_elements(dtype):
    z = randoms(dtype, (4, 3))
    t = xp.asarray(z)
    np.testing.assert_array_equal(values(xp.concat([t, t], axis=1)), np.concatenate([z, z], axis=1))
    np.testing.assert_array_equal(values(xp.stack([t, t])), np.stack([z, z]))
    idx = xp.asarray([3, 0, 0])
    np.testing.assert_array_equal(values(xp.take(t, idx, axis=0)), z[[3, 0, 0]])
    mask = z.real > 0
    np.testing.assert_array_equal(values(xp.where(xp.asarray(mask), t, xp.asarray(z[::-1].copy()))),
                                  np.where(mask, z, z[::-1]))
    np.testing.assert_array_equal(values(xp.permute_dims(t, (1, 0))), z.T)
    u = xp.asarray(z.copy())
    u[1:3, ::2] = xp.asarray(np.full((2, 2), 5 - 5j, dtype))
    want = z.copy()
    want[1:3, ::2] = 5 - 5j
    np.testing.assert_array_equal(values(u), want)


def test_ordering_ops_refuse_complex_by_name():
    z = xp.asarray([1j, 2j])
    with pytest.raises(ValueError, match="lt is not defined on complex128"):
        ops.lt(z, z)
    with pytest.raises(ValueError, match="maximum is not defined on complex128"):
        ops.maximum(z, z)
    with pytest.raises(ValueError, match="floor is not defined on complex128"):
        ops.floor(z)


def test_truth_of_complex_elements_reads_both_parts():
    z = xp.asarray([[0j, 1j], [2 + 0j, 0j]], dtype=xp.complex64)
    np.testing.assert_array_equal(values(xp.all(z, axis=1)), [False, False])
    np.testing.assert_array_equal(values(xp.any(z, axis=0)), [True, True])
    assert [values(i).tolist() for i in xp.nonzero(z)] == [[0, 1], [1, 0]]
    assert int(xp.count_nonzero(z)) == 2
