"""The reproducers of issue 18, each run as a hostile user would: in a child process with a
timeout, so a crash, a panic or a hang fails the test instead of the test run. Each child
asserts the answer it gets (a correct value, or a named exception) and prints "ok"."""

import subprocess
import sys
import textwrap

import pytest

PRELUDE = """
import ctypes, gc, os, sys, tempfile
import numpy as np
import nbxtensor
from nbxtensor import memory, ops, program
from nbxtensor.random import Generator

def raises(kind, text, f, *args):
    try:
        f(*args)
    except kind as e:
        assert text in str(e), f"{kind.__name__} without {text!r}: {e}"
        return e
    raise AssertionError(f"no {kind.__name__} ({text!r})")
"""


def run_child(body, timeout=120):
    code = PRELUDE + textwrap.dedent(body) + "\nprint('ok')\n"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout)
    assert result.returncode == 0 and result.stdout.strip().endswith("ok"), (
        f"exit {result.returncode}\n{result.stdout[-2000:]}\n{result.stderr[-4000:]}"
    )
    return result


CASES = {
    # 1. sizes past the address space: named ValueErrors, never a zero-byte block
    "expand then contiguous past the address space": """
        e = raises(ValueError, "more than an address space holds",
                   lambda: nbxtensor.asarray(np.array(1.0, np.float16)).expand(2**63 - 1).contiguous())
        assert "18446744073709551614 bytes" in str(e)
    """,
    "copy op past the address space": """
        raises(ValueError, "more than an address space holds",
               ops.call, "copy", [nbxtensor.asarray(np.float32(1)).expand(2**62 - 1)])
    """,
    "a refused huge allocation leaves the count alone": """
        held = nbxtensor.asarray(np.ones(1 << 19, np.float32)).contiguous()   # 2 MiB held
        before = memory.host_in_use()
        for n in (2**63 - 2**21, 2**63 - 1, 2**62):
            raises(MemoryError, "", ops.call, "copy", [nbxtensor.asarray(np.uint8(1)).expand(n)])
            assert memory.host_in_use() == before, (n, memory.host_in_use(), before)
        y = ops.call("copy", [nbxtensor.asarray(np.arange(4, dtype=np.int32)).expand(3, 4)])[0]
        assert np.array_equal(y.numpy(), np.tile(np.arange(4, dtype=np.int32), (3, 1)))
    """,
    # 2. no panic crosses into Python
    "tobytes of a huge complex view": """
        e = raises(ValueError, "more than an address space holds",
                   nbxtensor.asarray(np.array(1, np.complex128)).expand(2**60).tobytes)
        assert "18446744073709551616 bytes" in str(e)
        assert nbxtensor.asarray(np.array(1j, np.complex128)).expand(3).tobytes() == np.full(3, 1j).tobytes()
    """,
    "a panic is an InternalError that says it is a bug": """
        e = raises(nbxtensor.InternalError, "a bug in nbxtensor", nbxtensor._core.errors._panic_for_test, "boom 42")
        assert "'boom 42'" in str(e) and "errors.rs" in str(e), e
        assert isinstance(e, RuntimeError)
        assert ops.exp(nbxtensor.asarray(np.zeros(2, np.float32))).numpy().tolist() == [1.0, 1.0]
    """,
    # 5. the memory limit holds
    "tobytes under a limit": """
        memory.set_limit(1 << 20)
        raises(MemoryError, "memory limit of 1048576 bytes", nbxtensor.asarray(np.float32(1)).expand(1 << 28).tobytes)
        assert nbxtensor.asarray(np.float32(2)).expand(4).tobytes() == np.full(4, 2, np.float32).tobytes()
    """,
    "a gather under a limit": """
        memory.set_limit(64 << 20)
        memory.reset_host_high_water()
        raises(MemoryError, "memory limit of 67108864 bytes", ops.sum, nbxtensor.asarray(np.float32(1)).expand(1 << 28))
        assert memory.host_high_water() <= 64 << 20
        assert float(ops.sum(nbxtensor.asarray(np.float32(1)).expand(1 << 20)).numpy()) == float(1 << 20)
        assert memory.host_high_water() <= 64 << 20
    """,
    "draws count what is already held": """
        memory.set_limit(64 << 20)
        held = nbxtensor.asarray(np.ones(12 << 20, np.float32)).contiguous()   # 48 MiB
        held = ops.exp(held)
        raises(MemoryError, "memory limit", Generator(1).uniform, 8 << 20)      # 32 MiB more
        del held
        gc.collect()
        draw = Generator(1).uniform(8 << 20)
        assert draw.shape == (8 << 20,) and 0 <= draw.min() and draw.max() < 1
        assert memory.host_in_use() >= 32 << 20, "a draw stays counted while its array lives"
        del draw
        gc.collect()
        assert memory.host_in_use() < 32 << 20
    """,
    "a plan over the device's memory is a MemoryError": """
        x = nbxtensor.asarray(np.float32(0)).expand(1 << 20, 1 << 19)      # 2 TiB as an input
        p = program.trace(lambda t: ops.exp(t), x)
        raises(MemoryError, "the program's arena", p.plan)
        memory.set_limit(1 << 30)
        raises(MemoryError, "memory limit of 1073741824 bytes", p.plan)
    """,
    # 7. DLPack import bounds
    "DLPack import refuses wild dims and spans by name": """
        class DLTensor(ctypes.Structure):
            _fields_ = [("data", ctypes.c_void_p), ("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32),
                        ("ndim", ctypes.c_int32), ("code", ctypes.c_uint8), ("bits", ctypes.c_uint8),
                        ("lanes", ctypes.c_uint16), ("shape", ctypes.c_void_p), ("strides", ctypes.c_void_p),
                        ("byte_offset", ctypes.c_uint64)]
        class Managed(ctypes.Structure):
            _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32), ("ctx", ctypes.c_void_p),
                        ("deleter", ctypes.c_void_p), ("flags", ctypes.c_uint64), ("dl", DLTensor)]
        new = ctypes.pythonapi.PyCapsule_New
        new.restype, new.argtypes = ctypes.py_object, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
        buffer = np.arange(8, dtype=np.float32)
        kept = []
        def capsule(ndim, shape, strides=None, byte_offset=0):
            shape_array = (ctypes.c_int64 * max(len(shape), 1))(*shape)
            strides_array = None if strides is None else (ctypes.c_int64 * len(strides))(*strides)
            m = Managed(1, 1, None, None, 0, DLTensor(buffer.ctypes.data, 1, 0, ndim, 2, 32, 1,
                        ctypes.addressof(shape_array),
                        None if strides_array is None else ctypes.addressof(strides_array), byte_offset))
            kept.extend([shape_array, strides_array, m])
            return new(ctypes.addressof(m), b"dltensor_versioned", None)
        raises(BufferError, "ndim 2147483647 is more than 64 dims", nbxtensor.from_dlpack, capsule(2**31 - 1, [1]))
        e = raises(BufferError, "ndim 100000 is more than 64 dims", nbxtensor.from_dlpack, capsule(100000, [1]))
        assert len(str(e)) < 300, "the message prints no memory past the shape"
        for strides, offset in (((-2**60,), 0), ((2**60,), 0), ((1,), 2**63), ((1,), 2**64 - 1)):
            raises(BufferError, "outside the address space", nbxtensor.from_dlpack, capsule(1, [2], strides, offset))
        t = nbxtensor.from_dlpack(capsule(1, [4], (-1,), 12))   # elements 3, 2, 1, 0
        assert t.numpy().tolist() == [3.0, 2.0, 1.0, 0.0]
        t = nbxtensor.from_dlpack(capsule(64, [1] * 63 + [8]))
        assert t.shape == (1,) * 63 + (8,) and t.numel() == 8
    """,
    # 9. smaller ones
    "numpy of a broadcast view is read-only": """
        t = nbxtensor.asarray(np.arange(3, dtype=np.float32)).expand(4, 3)
        a = t.numpy()
        assert not a.flags.writeable and a.shape == (4, 3)
        assert np.array_equal(a, np.broadcast_to(np.arange(3, dtype=np.float32), (4, 3)))
        try:
            a[0, 0] = 5
            raise AssertionError("written")
        except ValueError:
            pass
        assert nbxtensor.asarray(np.zeros(3, np.float32)).numpy().flags.writeable
        assert nbxtensor.asarray(np.zeros(1, np.float32)).expand(1, 1).numpy().flags.writeable
    """,
    "repeated metadata keys in safetensors are refused": """
        from nbxtensor.io import safetensors
        header = b'{"__metadata__":{"a":"1","a":"2"},"x":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}'
        path = os.path.join(tempfile.mkdtemp(), "m.safetensors")
        with open(path, "wb") as f:
            f.write(len(header).to_bytes(8, "little") + header + b"\\x07")
        raises(ValueError, "the metadata key 'a' appears more than once", safetensors.load, path)
        raises(ValueError, "the metadata key 'a' appears more than once", safetensors.open, path)
    """,
    "a safetensors file truncated after open": """
        from nbxtensor.io import safetensors
        path = os.path.join(tempfile.mkdtemp(), "w.safetensors")
        safetensors.save(path, {"a": nbxtensor.asarray(np.arange(1024, dtype=np.float32)),
                                "b": nbxtensor.asarray(np.arange(1024, dtype=np.float32))})
        index = safetensors.open(path)
        assert index.load("a").numpy()[5] == 5.0          # mapped now
        size = os.path.getsize(path)
        with open(path, "r+b") as f:
            f.truncate(size - 4096)
        raises(ValueError, "changed since it was opened", index.load, "b")
        raises(ValueError, "", safetensors.open, path)       # the header no longer fits the file
    """,
}


@pytest.mark.parametrize("name", list(CASES))
def test_issue_reproducer(name):
    run_child(CASES[name])
