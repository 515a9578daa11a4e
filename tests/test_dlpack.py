"""DLPack both ways with numpy: every dtype numpy has, views with offsets and transposes,
0-d and empty arrays; zero-copy proven by writes; capsules consumed once; lifetimes."""

import gc
import sys

import ml_dtypes
import numpy as np
import pytest

import nbxtensor as nbx

NUMPY_DTYPES = [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64,
                np.float16, np.float32, np.float64, np.complex64, np.complex128]


def sample(dtype, shape, seed=0):
    rng = np.random.default_rng(seed)
    values = rng.standard_normal(shape) * 50
    if np.issubdtype(dtype, np.complexfloating):
        values = values + 1j * rng.standard_normal(shape)
    return values.astype(dtype)


@pytest.mark.parametrize("dtype", NUMPY_DTYPES)
def test_every_numpy_dtype_round_trips(dtype):
    a = sample(dtype, (3, 5))
    t = nbx.from_dlpack(a)
    assert t.dtype == np.dtype(dtype).name and t.shape == (3, 5) and t.strides == (5, 1)
    assert t.tobytes() == a.tobytes()
    back = np.from_dlpack(t)
    assert back.dtype == a.dtype and np.array_equal(back, a)
    assert np.shares_memory(back, a), "both directions are zero-copy"


@pytest.mark.parametrize(
    "make",
    [
        lambda a: a[1:, 2:4],           # an offset
        lambda a: a.T,                  # a transpose
        lambda a: a.T[1:3],             # both
        lambda a: a[2],                 # a row: an offset and fewer dims
        lambda a: a[::-1],              # negative strides
        lambda a: np.broadcast_to(a[:1], (4, 6)),  # stride 0 (read-only in numpy)
    ],
)
def test_views_keep_their_layout_and_memory(make):
    base = sample(np.float32, (4, 6))
    view = make(base)
    t = nbx.from_dlpack(view)
    assert t.shape == view.shape
    assert t.strides == tuple(s // view.itemsize for s in view.strides)
    assert t.tobytes() == view.tobytes()
    assert np.array_equal(np.from_dlpack(t), view)


def test_0d_and_empty_arrays():
    for a in (np.array(3.25, dtype=np.float64), np.zeros((0,), np.int32), np.zeros((2, 0, 3), np.float16)):
        t = nbx.from_dlpack(a)
        assert t.shape == a.shape and t.numel() == a.size
        back = np.from_dlpack(t)
        assert back.shape == a.shape and back.dtype == a.dtype and np.array_equal(back, a)


def test_writes_on_one_side_are_read_on_the_other():
    a = np.zeros((2, 3), np.int64)
    t = nbx.from_dlpack(a)
    a[1, 2] = 42
    assert np.frombuffer(t.tobytes(), np.int64)[5] == 42
    b = np.from_dlpack(t.transpose(0, 1))
    b[0, 1] = -7                       # element (1, 0) of a
    assert a[1, 0] == -7
    # a tensor made by nbxtensor, seen by numpy and written through it
    own = nbx.asarray(np.arange(4, dtype=np.float32))
    seen = own.numpy()
    seen[3] = 0.5
    assert np.frombuffer(own.tobytes(), np.float32)[3] == 0.5


def test_the_tensor_keeps_the_producers_memory_alive():
    a = sample(np.float64, (1000,))
    expected = a.copy()
    t = nbx.from_dlpack(a)
    del a
    gc.collect()
    assert np.array_equal(np.frombuffer(t.tobytes(), np.float64), expected)
    # and numpy keeps an nbxtensor tensor alive after the tensor object is gone
    arr = np.from_dlpack(nbx.asarray(expected))
    gc.collect()
    assert np.array_equal(arr, expected)


def test_a_consumed_capsule_is_refused():
    t = nbx.asarray(np.arange(3, dtype=np.int32))
    for max_version in (None, (1, 0)):
        capsule = t.__dlpack__(max_version=max_version)
        nbx.from_dlpack(capsule)
        with pytest.raises(ValueError, match="not an unconsumed DLPack tensor"):
            nbx.from_dlpack(capsule)


def test_capsule_names_and_versions():
    t = nbx.asarray(np.arange(3, dtype=np.int32))
    assert "dltensor_versioned" in repr(t.__dlpack__(max_version=(1, 0)))
    assert '"dltensor"' in repr(t.__dlpack__())
    assert '"dltensor"' in repr(t.__dlpack__(max_version=(0, 8)))
    assert t.__dlpack_device__() == (1, 0)


def test_an_unconsumed_capsule_frees_its_tensor():
    t = nbx.asarray(np.arange(10, dtype=np.float32))
    before = sys.getrefcount(t)
    for _ in range(100):
        capsule = t.__dlpack__(max_version=(1, 0))
        del capsule
    # the export keeps a clone of the core tensor, not the Python object; nothing leaks into it
    assert sys.getrefcount(t) == before


def test_read_only_is_honoured_both_ways():
    a = np.arange(4, dtype=np.float32)
    a.flags.writeable = False
    t = nbx.from_dlpack(a)
    assert t.read_only
    back = np.from_dlpack(t)
    assert not back.flags.writeable
    with pytest.raises(BufferError, match="read-only"):
        t.__dlpack__()  # a legacy capsule cannot say read-only


class LegacyProducer:
    """A producer that predates versioned capsules (as jax's arrays): its ``__dlpack__`` takes
    no ``max_version`` and gives a legacy capsule, which says nothing of read-only."""

    def __init__(self, array):
        self.array = array

    def __dlpack__(self, stream=None):
        return self.array.__dlpack__()

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()


def test_legacy_capsules_are_imported_read_only_as_numpy_does():
    a = np.arange(4, dtype=np.float32)
    t = nbx.from_dlpack(LegacyProducer(a))
    assert t.read_only, "a legacy capsule cannot say writes are allowed"
    assert not np.from_dlpack(LegacyProducer(a)).flags.writeable, "numpy imports it read-only too"
    assert np.shares_memory(np.from_dlpack(t), a) and t.tolist() == [0.0, 1.0, 2.0, 3.0]
    assert not np.from_dlpack(t).flags.writeable, "and a consumer of the tensor learns it"
    assert nbx.from_dlpack(a.__dlpack__()).read_only  # a bare legacy capsule
    assert not nbx.from_dlpack(a.__dlpack__(max_version=(1, 0))).read_only  # a versioned one says
    assert not nbx.from_dlpack(LegacyProducer(a), copy=True).read_only, "a copy is ours to write"


def test_read_only_tensors_go_to_legacy_consumers_as_numpy_sends_them():
    a = np.arange(4, dtype=np.float32)
    a.flags.writeable = False
    t = nbx.from_dlpack(a)
    # numpy refuses a legacy export of a read-only array, and gives a writable copy on request
    with pytest.raises(BufferError, match="readonly"):
        a.__dlpack__()
    with pytest.raises(BufferError, match="copy=True"):
        t.__dlpack__()
    capsule = t.__dlpack__(copy=True)
    assert '"dltensor"' in repr(capsule), "a legacy capsule, of a copy"
    copied = nbx.from_dlpack(capsule)
    assert copied.tolist() == [0.0, 1.0, 2.0, 3.0] and not np.shares_memory(np.from_dlpack(copied), a)
    assert copied.read_only, "imported back from a legacy capsule: read-only, as numpy would"


def test_from_dlpack_takes_the_standards_device_and_copy():
    a = np.arange(6, dtype=np.int32)
    same = nbx.from_dlpack(a, device="cpu")
    assert same.device == "cpu" and np.shares_memory(np.from_dlpack(same), a), "no copy on the same device"
    assert np.shares_memory(np.from_dlpack(nbx.from_dlpack(a, device="cpu", copy=False)), a)
    fresh = nbx.from_dlpack(a, device="cpu", copy=True)
    assert not np.shares_memory(np.from_dlpack(fresh), a) and fresh.tolist() == a.tolist()
    with pytest.raises(ValueError, match="unknown device 'tpu'"):
        nbx.from_dlpack(a, device="tpu")
    from nbxtensor.backend import runtime

    if runtime.gpu_backend() == "cuda":
        on_gpu = nbx.from_dlpack(a, device="cuda")
        assert on_gpu.device.startswith("cuda") and on_gpu.to("cpu").tolist() == a.tolist()
        with pytest.raises(BufferError, match="copy=False forbids the copy"):
            nbx.from_dlpack(a, device="cuda", copy=False)


def test_copy_and_device_arguments():
    a = np.arange(6, dtype=np.int16).reshape(2, 3)
    t = nbx.from_dlpack(a)
    copied = np.from_dlpack(t, copy=True)
    copied[0, 0] = 9
    assert a[0, 0] == 0, "copy=True gives new memory"
    with pytest.raises(BufferError, match="cannot export to device"):
        t.__dlpack__(max_version=(1, 0), dl_device=(2, 0))
    with pytest.raises(ValueError, match="stream"):
        t.__dlpack__(max_version=(1, 0), stream=1)
    fresh = nbx.from_dlpack(a, copy=True)
    a[0, 1] = 100
    assert np.frombuffer(fresh.tobytes(), np.int16)[1] == 1


def test_dtypes_numpy_lacks_come_back_as_bits():
    values = np.array([1.0, -2.5, 448.0], dtype=np.float32)
    bf16 = nbx.asarray(values, dtype="bfloat16")
    assert bf16.dtype == "bfloat16"
    assert np.array_equal(bf16.numpy(), values.astype(ml_dtypes.bfloat16).view(np.uint16))
    e4 = nbx.asarray(values, dtype="float8_e4m3fn")
    assert np.array_equal(e4.numpy(), values.astype(ml_dtypes.float8_e4m3fn).view(np.uint8))


def test_asarray():
    assert nbx.asarray([[1, 2], [3, 4]]).shape == (2, 2)
    assert nbx.asarray(2.5).shape == ()
    assert nbx.asarray([1, 2], dtype="float16").dtype == "float16"
    assert nbx.asarray([1, 2], dtype="torch.int8").dtype == "int8"
    t = nbx.asarray(np.ones(3, np.float32))
    assert nbx.asarray(t) is not None and nbx.asarray(t, dtype="float32") is t
    assert nbx.asarray(t, dtype="float64").tolist() == [1.0, 1.0, 1.0]  # converted by the cast op
    with pytest.raises(ValueError, match="unknown dtype"):
        nbx.asarray([1], dtype="float128")
    with pytest.raises(ValueError, match="no host representation"):
        nbx.asarray([1], dtype="int4-g128-asym")
