"""What a numpy or torch user does first with a tensor, each compared with numpy: its values
printed and read back (repr, tolist, item, float/int/complex/bool/index), numpy scalars,
arrays and dtypes as operands and dtype arguments, the methods that mirror the namespace, the
Python operators, pickling, and random draws as tensors (issue 15, the stumbles)."""

import math
import operator
import pickle
import re

import ml_dtypes
import numpy as np
import pytest

import nbxtensor as nbx
from nbxtensor.dtype.nbx_dtype import NBXDtype
from nbxtensor.random import Generator


def values(t):
    return np.asarray(t)


# -- values: repr, tolist, item and the scalar conversions --------------------------------


def test_repr_and_str_show_the_values_as_numpy_and_summarize_large_tensors():
    t = nbx.asarray(np.array([[1.5, -2.0], [3.25, 4.0]], np.float32))
    assert repr(t) == str(t) == "Tensor([[ 1.5 , -2.  ],\n        [ 3.25,  4.  ]], dtype=float32)"
    big = nbx.asarray(np.arange(3000, dtype=np.int64).reshape(30, 100))
    text = repr(big)
    assert "..." in text and text.count("\n") == 6, text  # three rows, the cut, three rows
    assert text.startswith("Tensor([[   0,    1,    2, ...,   97,   98,   99],")
    assert repr(nbx.asarray(np.float32(2.5))) == "Tensor(2.5, dtype=float32)"
    # each float in the shortest decimal of its own dtype, as numpy prints it
    for a in [np.array([0.1, 1 / 3], np.float32), np.array([0.1, 2.5], np.float16)]:
        assert repr(nbx.asarray(a)) == "Tensor" + repr(a)[len("array") :]
    assert repr(nbx.asarray([0.1, 2.5], dtype="bfloat16")) == "Tensor([0.1, 2.5], dtype=bfloat16)"


def test_tolist_is_numpys():
    for a in [
        np.arange(6, dtype=np.int16).reshape(2, 3),
        np.array([[True, False]]),
        np.array([0.5, -1.25, np.inf], np.float64),
        np.array([1 + 2j, -3j], np.complex64),
        np.array(7, np.uint64),
        np.zeros((2, 0, 3), np.float32),
        np.array([2**64 - 1], np.uint64),
    ]:
        got = nbx.asarray(a).tolist()
        assert got == a.tolist() and type(got) is type(a.tolist())
    nested = nbx.asarray(np.arange(4, dtype=np.int32)).tolist()
    assert all(type(v) is int for v in nested)
    # a strided view and a half float: numpy's values of the same view
    a = np.arange(12, dtype=np.float16).reshape(3, 4)
    assert nbx.asarray(a).transpose(0, 1).tolist() == a.T.tolist()
    bf = nbx.asarray([1.0, 3.140625], dtype="bfloat16")
    assert bf.tolist() == [1.0, 3.140625]


def test_item_and_the_scalar_conversions_take_exactly_one_element():
    one = nbx.asarray(np.array([[2.75]], np.float32))
    assert one.item() == 2.75 and type(one.item()) is float
    assert float(one) == 2.75 and int(one) == 2 and complex(one) == 2.75 + 0j
    assert int(nbx.asarray(np.float32(-2.75))) == -2  # truncated toward zero, as int(-2.75)
    assert nbx.asarray(np.int64(2**62)).item() == 2**62
    assert complex(nbx.asarray(np.complex128(1 - 2j))) == 1 - 2j
    assert operator.index(nbx.asarray(np.int8(3))) == 3
    assert list(range(10))[nbx.asarray(np.int32(4))] == 4
    many = nbx.asarray(np.arange(3, dtype=np.float32))
    with pytest.raises(ValueError, match="only a tensor of one element"):
        many.item()
    for convert in (float, int, complex):
        with pytest.raises(TypeError, match="only a tensor of one element"):
            convert(many)
        with pytest.raises(TypeError):
            convert(np.arange(3.0))  # numpy refuses the same
    with pytest.raises(TypeError, match="0-d integer"):
        operator.index(nbx.asarray(np.array([3], np.int32)))
    with pytest.raises(TypeError, match="0-d integer"):
        operator.index(nbx.asarray(np.float32(3)))
    with pytest.raises(TypeError, match="complex"):
        float(nbx.asarray(np.complex64(1j)))
    with pytest.raises(ValueError, match="NaN"):
        int(nbx.asarray(np.float32(np.nan)))


def test_bool_of_many_elements_raises_instead_of_using_len():
    x = nbx.asarray(np.array([1.0, 2.0, 3.0], np.float32))
    with pytest.raises(ValueError, match="truth value of a tensor of 3 elements is ambiguous"):
        if x > 100:  # the stumble: taken for any non-empty tensor when bool used len()
            pass
    with pytest.raises(ValueError, match="ambiguous"):
        bool(nbx.asarray(np.zeros(0, np.float32)))
    # one element, any number of dims: its truth
    assert bool(nbx.asarray(np.float32(0.5))) and not bool(nbx.asarray(np.array([[0]], np.int32)))
    assert bool(nbx.asarray(np.array(True))) and not bool(x[0] > 100)
    assert bool(nbx.asarray(np.complex64(1j)))


def test_values_of_a_traced_tensor_are_refused_by_name():
    from nbxtensor.program import trace

    seen = []

    def model(t):
        with pytest.raises(ValueError, match="traced tensor has no values"):
            t.tolist()
        seen.append(True)
        return t + 1

    trace(model, nbx.asarray(np.ones(2, np.float32)))
    assert seen


# -- numpy scalars, arrays and dtypes -------------------------------------------------------


def test_numpy_scalars_and_arrays_are_operands_on_either_side():
    a = np.array([1.0, 2.0, 3.0], np.float32)
    x = nbx.asarray(a)
    for got, want in [
        (x * np.float32(2), a * np.float32(2)),
        (np.float32(2) * x, np.float32(2) * a),
        (x + np.ones(3, np.float32), a + np.ones(3, np.float32)),
        (np.ones(3, np.float32) - x, np.ones(3, np.float32) - a),
        (x * np.float64(2), a * np.float64(2)),  # a numpy scalar keeps its dtype (NEP 50)
        (x.reshape(1, 3) @ np.ones((3, 2), np.float32), a.reshape(1, 3) @ np.ones((3, 2), np.float32)),
    ]:
        assert isinstance(got, nbx.Tensor), type(got)
        assert got.dtype == str(want.dtype) and np.array_equal(values(got), want)
    assert isinstance(np.ones(3, np.float32) == x, nbx.Tensor)


@pytest.mark.parametrize(
    "dtype, name",
    [(np.float32, "float32"), (np.dtype("int8"), "int8"), ("float16", "float16"), ("half", "float16"),
     (NBXDtype.uint16, "uint16"), (ml_dtypes.bfloat16, "bfloat16"), (bool, "bool"), (np.complex64, "complex64")],
)
def test_numpy_and_nbx_dtypes_are_accepted_wherever_a_dtype_is(dtype, name):
    a = np.array([0, 1, 2])
    assert nbx.asarray(a, dtype=dtype).dtype == name
    t = nbx.asarray(np.array([0.0, 1.0, 2.0], np.float32))
    assert t.astype(dtype).dtype == name
    assert nbx.ops.cast(t, dtype).dtype == name
    assert t.view_dtype(np.uint32).dtype == "uint32"
    want = [False, True, True] if name == "bool" else [0, 1, 2]
    assert t.astype(dtype).tolist() == want


def test_unknown_dtypes_are_refused_by_name():
    t = nbx.asarray(np.ones(2, np.float32))
    for bad in ["float128", 3, None, object()]:
        with pytest.raises(ValueError, match="unknown dtype"):
            t.astype(bad)


def test_astype_copies_unless_told_not_to():
    t = nbx.asarray(np.arange(3, dtype=np.int32))
    assert t.astype("int32", copy=False) is not None
    same = t.astype(np.int32, copy=False)
    assert same.tobytes() == t.tobytes() and np.shares_memory(values(same), values(t))
    copied = t.astype(np.int32)
    assert not np.shares_memory(values(copied), values(t)) and copied.tolist() == [0, 1, 2]
    assert t.astype(np.float64).tolist() == [0.0, 1.0, 2.0]
    # asarray of a tensor with another dtype converts it (a cast), as numpy.asarray does
    assert nbx.asarray(t, dtype=np.float16).dtype == "float16"


# -- methods mirroring the namespace --------------------------------------------------------


def test_reduction_methods_take_numpys_keywords():
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4) - 7
    t = nbx.asarray(a)
    for name in ["sum", "mean", "max", "min"]:
        for axis in [None, 0, -1, (0, 2)]:
            for keepdims in [False, True]:
                got = getattr(t, name)(axis=axis, keepdims=keepdims)
                want = getattr(a, name)(axis=axis, keepdims=keepdims)
                assert got.shape == want.shape, (name, axis, keepdims)
                np.testing.assert_allclose(values(got), want, rtol=1e-6)
    assert t.argmax().item() == a.argmax() and t.argmax(axis=1).tolist() == a.argmax(axis=1).tolist()
    assert t.argmax(keepdims=True).shape == (1, 1, 1)
    assert t.argmax(axis=-1, keepdims=True).shape == (2, 3, 1)
    assert t.sum().item() == a.sum()


def test_layout_methods_and_properties():
    a = np.arange(24, dtype=np.int32).reshape(2, 3, 4)
    t = nbx.asarray(a)
    assert t.size == 24 and t.shape == (2, 3, 4) and isinstance(t.shape, tuple)
    assert np.array_equal(values(t.T), a.T) and t.T.shape == (4, 3, 2)
    assert np.array_equal(values(t.mT), np.swapaxes(a, -1, -2))
    assert nbx.asarray(np.arange(3)).T.shape == (3,)
    with pytest.raises(ValueError, match="mT: a tensor of 1 dims"):
        nbx.asarray(np.arange(3)).mT
    c = t.copy()
    assert np.array_equal(values(c), a) and not np.shares_memory(values(c), a)
    assert t.to_device("cpu").tolist() == a.tolist()
    assert t.reshape(4, 6).shape == (4, 6) and t.reshape((6, -1)).shape == (6, 4)


def test_every_python_operator():
    a = np.array([[-3, 5], [7, 2]], np.int32)
    b = np.array([[2, -2], [3, 5]], np.int32)
    x, y = nbx.asarray(a), nbx.asarray(b)
    binary = [
        operator.add, operator.sub, operator.mul, operator.floordiv, operator.mod, operator.and_, operator.or_,
        operator.xor, operator.lt, operator.le, operator.gt, operator.ge, operator.eq, operator.ne,
    ]
    for op in binary:
        assert np.array_equal(values(op(x, y)), op(a, b)), op
        assert np.array_equal(values(op(x, 2)), op(a, 2)), op
    fa, fb = a.astype(np.float32), b.astype(np.float32)
    assert np.array_equal(values(nbx.asarray(fa) @ nbx.asarray(fb)), fa @ fb)
    assert np.array_equal(values(x ** nbx.asarray(np.abs(b))), a ** np.abs(b))
    assert np.array_equal(values(x << 2), a << 2) and np.array_equal(values(x >> 1), a >> 1)
    assert np.array_equal(values(2 - x), 2 - a) and np.array_equal(values(7 // x), 7 // a)
    for op in (operator.neg, operator.pos, abs, operator.invert):
        assert np.array_equal(values(op(x)), op(a)), op
    q, r = divmod(x, y)
    assert np.array_equal(values(q), a // b) and np.array_equal(values(r), a % b)
    q, r = divmod(17, x)
    assert np.array_equal(values(q), 17 // a) and np.array_equal(values(r), 17 % a)
    f = nbx.asarray(np.array([1.0, 4.0], np.float32))
    assert np.array_equal(values(f / 2), [0.5, 2.0]) and np.array_equal(values(f ** 0.5), [1.0, 2.0])
    z = x
    z += 1  # an in-place operator rebinds to a new tensor (tensors are immutable)
    assert np.array_equal(values(z), a + 1) and np.array_equal(values(x), a)


# -- pickling -------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "int64", "bool", "complex64", "float8_e4m3fn"])
def test_pickle_round_trips_values_dtype_shape_and_device(dtype):
    base = nbx.asarray(np.arange(12).reshape(3, 4) % 3, dtype=dtype)
    view = base.transpose(0, 1)[1:]  # a strided view: pickled as its values, row-major
    back = pickle.loads(pickle.dumps(view))
    assert back.dtype == view.dtype and back.shape == view.shape == (3, 3) and back.device == "cpu"
    assert back.tobytes() == view.tobytes() and back.is_contiguous()
    assert not back.read_only


def test_from_bytes_checks_the_length():
    t = nbx.Tensor.from_bytes(np.arange(3, dtype=np.int16).tobytes(), np.int16, (3,))
    assert t.tolist() == [0, 1, 2]
    with pytest.raises(ValueError, match="takes 8 bytes, 6 were given"):
        nbx.Tensor.from_bytes(b"\0" * 6, "int16", (4,))


# -- random draws ---------------------------------------------------------------------------


def test_random_draws_are_tensors_with_the_same_bits_as_before():
    g = Generator(7)
    u = g.uniform((2, 3), dtype=np.float16)
    assert isinstance(u, nbx.Tensor) and u.dtype == "float16" and u.shape == (2, 3)
    assert float(u.min()) >= 0.0 and float(u.max()) < 1.0
    b = Generator(3).normal(64, dtype="bfloat16")
    f = Generator(3).normal(64, dtype="float32")
    assert b.dtype == "bfloat16"
    # the bfloat16 draw is the float32 draw of the same stream, rounded to nearest even
    assert b.tobytes() == f.astype("bfloat16").tobytes()
    assert len(set(f.tolist())) == 64
    ints = Generator(1).integers(0, 10, (5, 5))
    assert ints.dtype == "int64" and 0 <= int(ints.min()) and int(ints.max()) < 10
    perm = Generator(1).permutation(50)
    assert sorted(perm.tolist()) == list(range(50))
    assert Generator(1).uniform(4, device="cpu").device == "cpu"


def test_random_draws_on_a_device_have_the_host_bits():
    from nbxtensor.backend import runtime

    if runtime.unavailable_reason("cuda") is not None:
        with pytest.raises(ValueError, match=re.escape(runtime.unavailable_reason("cuda"))):
            Generator(5).uniform(8, device="cuda")
        return
    on_gpu = Generator(5).uniform(1000, device="cuda")
    assert on_gpu.device.startswith("cuda")
    assert on_gpu.to("cpu").tobytes() == Generator(5).uniform(1000).tobytes()


def test_math_of_a_scalar_tensor():
    assert math.isclose(math.sqrt(nbx.asarray(np.float64(2.0))), math.sqrt(2.0))
    assert round(float(nbx.asarray(np.float32(2.5)) * 2)) == 5
