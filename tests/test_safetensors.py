"""nbxtensor.io.safetensors against the `safetensors` package (an independent writer and
reader): exact loads of every dtype, exact saves, every malformed header refused by name,
the lazy index, and zero-copy proven by watching the file's map."""

import json
import os
import pathlib
import struct
import sys

import ml_dtypes
import numpy as np
import pytest
import safetensors
import safetensors.numpy

import nbxtensor
from nbxtensor.io import safetensors as st

NUMPY_DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                "float16", "float32", "float64", "complex64"]
ML_DTYPES = {"bfloat16": ml_dtypes.bfloat16, "float8_e4m3fn": ml_dtypes.float8_e4m3fn,
             "float8_e5m2": ml_dtypes.float8_e5m2}
# the format's codes, from safetensors' own documentation of its dtypes
SAFETENSORS_CODES = {"bfloat16": "BF16", "float8_e4m3fn": "F8_E4M3", "float8_e5m2": "F8_E5M2"}
SHAPES = [(), (0,), (2, 0, 3), (3, 4), (5,)]


def _values(dtype, shape, seed):
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape))
    if dtype == "bool":
        return rng.integers(0, 2, n).astype(bool).reshape(shape)
    if dtype.startswith(("int", "uint")):
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True).reshape(shape)
    if dtype == "complex64":
        return (rng.normal(size=n) + 1j * rng.normal(size=n)).astype(np.complex64).reshape(shape)
    return (rng.normal(size=n) * 100).astype(ML_DTYPES.get(dtype, dtype)).reshape(shape)


def _all_arrays(dtypes):
    return {f"{d}_{i}": _values(d, s, 7 * i + len(d)) for d in dtypes for i, s in enumerate(SHAPES)}


def _assert_same(tensor, array):
    assert tensor.dtype == array.dtype.name
    assert tensor.shape == array.shape
    assert tensor.tobytes() == array.tobytes()


def _file(header, data=b"", *, length=None):
    text = header if isinstance(header, bytes) else json.dumps(header).encode()
    return struct.pack("<Q", len(text) if length is None else length) + text + data


def _serialize_file(arrays, path):
    """The package's Rust serializer writing numpy/ml_dtypes arrays (by TensorSpec since 0.8,
    by dicts of bytes before)."""
    if hasattr(safetensors, "TensorSpec"):
        specs = {n: safetensors.TensorSpec(dtype=a.dtype.name, shape=a.shape, data_ptr=a.ctypes.data,
                                           data_len=a.nbytes) for n, a in arrays.items()}
    else:
        specs = {n: {"dtype": a.dtype.name, "shape": a.shape, "data": a.tobytes()} for n, a in arrays.items()}
    safetensors.serialize_file(specs, str(path))


def test_files_of_the_numpy_writer_load_exactly(tmp_path):
    arrays = _all_arrays(NUMPY_DTYPES)
    path = tmp_path / "np.safetensors"
    safetensors.numpy.save_file(arrays, str(path), metadata={"origin": "numpy"})
    loaded = st.load(path)
    assert sorted(loaded) == sorted(arrays)
    for name, array in arrays.items():
        _assert_same(loaded[name], array)
    assert st.open(path).metadata() == {"origin": "numpy"}


def test_files_of_the_rust_writer_load_bfloat16_and_float8_exactly(tmp_path):
    # safetensors.numpy has no bfloat16 or float8: the package's Rust serializer writes the
    # bytes ml_dtypes made
    arrays = _all_arrays(ML_DTYPES)
    path = tmp_path / "ml.safetensors"
    _serialize_file(arrays, path)
    loaded = st.load(str(path))
    for name, array in arrays.items():
        _assert_same(loaded[name], array)


def test_saved_files_load_exactly_in_the_safetensors_package(tmp_path):
    arrays = _all_arrays(NUMPY_DTYPES)
    source = tmp_path / "source.safetensors"
    safetensors.numpy.save_file(arrays, str(source))
    tensors = st.load(source)
    tensors["transposed"] = tensors["int32_3"].transpose(0, 1)  # saved in row-major order
    out = tmp_path / "out.safetensors"
    st.save(out, tensors, metadata={"k": "v"})
    back = safetensors.numpy.load_file(str(out))
    assert sorted(back) == sorted(tensors)
    for name, array in arrays.items():
        assert back[name].dtype == array.dtype and back[name].shape == array.shape
        assert back[name].tobytes() == array.tobytes()
    np.testing.assert_array_equal(back["transposed"], arrays["int32_3"].T)
    with safetensors.safe_open(str(out), "np") as f:
        assert f.metadata() == {"k": "v"}


def test_saved_bfloat16_and_float8_read_exactly_by_the_package(tmp_path):
    arrays = _all_arrays(ML_DTYPES)
    source = tmp_path / "ml.safetensors"
    _serialize_file(arrays, source)
    out = tmp_path / "out.safetensors"
    st.save(out, st.load(source))
    back = dict(safetensors.deserialize(out.read_bytes()))
    for name, array in arrays.items():
        assert back[name]["dtype"] == SAFETENSORS_CODES[array.dtype.name]
        assert tuple(back[name]["shape"]) == array.shape
        assert bytes(back[name]["data"]) == array.tobytes()


F32 = {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}
MALFORMED = {
    "empty file": (b"", "0 bytes, fewer than the 8 of the header length"),
    "length cut short": (b"\x05\x00\x00", "3 bytes, fewer than the 8"),
    "length past the file": (_file({"w": F32}, bytes(8), length=500), "header length 500 runs past the file"),
    "length 2**64-1": (_file({}, length=2**64 - 1), "header length 18446744073709551615 runs past"),
    "not UTF-8": (_file(b'{"\xff":1}'), "not UTF-8"),
    "not JSON": (_file(b'{"w": '), "not JSON"),
    "not an object": (_file(b"[1, 2, 3]"), "not a JSON object but an array"),
    "repeated key": (
        _file(b'{"w": {"data_offsets": [0, 8]}, "w": ' + json.dumps(F32).encode() + b"}", bytes(8)),
        "the key 'w' appears more than once",
    ),
    "entry not an object": (_file({"w": 4}), "tensor 'w': the entry is a number, not an object"),
    "metadata not strings": (_file({"__metadata__": {"k": [1]}}), "'__metadata__' key 'k' holds an array"),
    "offsets reversed": (_file({"w": {**F32, "data_offsets": [8, 0]}}, bytes(8)), "tensor 'w': data_offsets \\[8, 0\\] are reversed"),
    "offsets overlapping": (
        _file({"a": F32, "b": {**F32, "data_offsets": [4, 12]}}, bytes(12)),
        "tensor 'b' \\(bytes 4..12\\) overlaps tensor 'a'",
    ),
    "offsets leave a gap": (
        _file({"a": F32, "b": {**F32, "data_offsets": [12, 20]}}, bytes(20)),
        "bytes 8..12 of the data section belong to no tensor",
    ),
    "offsets past the data": (_file({"w": F32}, bytes(6)), "tensor 'w' ends at byte 8, past the data section of 6 bytes"),
    "data not covered": (_file({"w": F32}, bytes(12)), "has 12 bytes but the tensors cover only 8"),
    "shape disagrees with bytes": (
        _file({"w": {**F32, "shape": [3]}}, bytes(8)),
        "tensor 'w': shape \\[3\\] of float32 takes 12 bytes, but data_offsets \\[0, 8\\] span 8",
    ),
    "unknown dtype": (_file({"w": {**F32, "dtype": "F7"}}, bytes(8)), "tensor 'w': unknown safetensors code 'F7'"),
    "dtype the table lacks": (_file({"w": {**F32, "dtype": "F8_E8M0"}}, bytes(8)), "unknown safetensors code 'F8_E8M0'"),
    "negative dim": (_file({"w": {**F32, "shape": [-2]}}, bytes(8)), "tensor 'w': dim -2 is negative"),
    "dim past 64 bits": (_file({"w": {**F32, "shape": [2**64]}}, bytes(8)), "not an integer that fits 64 bits"),
    "overflowing shape": (_file({"w": {**F32, "shape": [2**62]}}, bytes(8)), "overflows 64 bits of bytes"),
    "overflowing element count": (_file({"w": {**F32, "shape": [2**32, 2**32]}}, bytes(8)), "tensor 'w': "),
}


@pytest.mark.parametrize("case", MALFORMED)
def test_malformed_files_are_refused_by_name(tmp_path, case):
    data, message = MALFORMED[case]
    path = tmp_path / "bad.safetensors"
    path.write_bytes(data)
    with pytest.raises(ValueError, match=message):
        st.load(path)
    with pytest.raises(ValueError, match=message):
        st.open(path)


def test_missing_files_and_directories_are_os_errors(tmp_path):
    for call in (st.load, st.open):
        with pytest.raises(FileNotFoundError, match="cannot open .*nope.safetensors"):
            call(tmp_path / "nope.safetensors")
        with pytest.raises(OSError, match=str(tmp_path)):
            call(tmp_path)
    with pytest.raises(OSError, match="cannot write"):
        st.save(tmp_path / "no_dir" / "x.safetensors", {})


def test_save_refuses_what_the_format_cannot_hold(tmp_path):
    path = tmp_path / "a.safetensors"
    safetensors.numpy.save_file({"a": np.arange(3, dtype=np.uint8)}, str(path))
    a = st.load(path)["a"]
    with pytest.raises(ValueError, match="'__metadata__' is reserved"):
        st.save(tmp_path / "b.safetensors", {"__metadata__": a})
    with pytest.raises(TypeError, match="'x' is not an nbxtensor.Tensor"):
        st.save(tmp_path / "b.safetensors", {"x": np.arange(3)})
    assert not (tmp_path / "b.safetensors").exists()


def test_open_lists_the_header_like_the_json_says(tmp_path):
    arrays = {"w": _values("float32", (3, 4), 1), "e": _values("int64", (0, 2), 2), "s": _values("uint8", (), 3)}
    path = tmp_path / "m.safetensors"
    safetensors.numpy.save_file(arrays, str(path), metadata={"a": "b"})
    raw = path.read_bytes()
    (length,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + length])
    f = st.open(path)
    assert isinstance(f, st.SafetensorsFile)
    assert len(f) == 3 and "w" in f and "x" not in f
    # file order: by data offset (names break ties between empty tensors)
    by_offset = sorted((v["data_offsets"], k) for k, v in header.items() if k != "__metadata__")
    assert f.keys() == [k for _, k in by_offset] == list(f)
    for name, array in arrays.items():
        assert f.dtype(name) == array.dtype.name and f.shape(name) == array.shape
        assert f.data_offsets(name) == tuple(header[name]["data_offsets"])
        _assert_same(f.load(name), array)
    assert f.metadata() == {"a": "b"}
    with pytest.raises(KeyError, match="no tensor named 'x'"):
        f.load("x")
    with pytest.raises(KeyError, match="no tensor named 'x'"):
        f.dtype("x")


def _mapped(path):
    with open("/proc/self/maps") as maps:
        return any(line.rstrip().endswith(str(path)) for line in maps)


def _bytes_read():
    with open("/proc/self/io") as io:
        return int(next(line for line in io if line.startswith("rchar:")).split()[1])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self")
def test_open_reads_the_header_only(tmp_path):
    # proof: open() neither maps the file (/proc/self/maps) nor reads its 8 MiB data section
    # with read calls (/proc/self/io rchar counts every byte read by this process: other reads
    # can only raise it); load(name) then maps the file
    path = tmp_path / "big.safetensors"
    safetensors.numpy.save_file({"w": np.ones(2**21, dtype=np.float32)}, str(path))
    before = _bytes_read()
    f = st.open(path)
    assert _bytes_read() - before < 2**16
    assert not _mapped(path)
    w = f.load("w")
    assert _mapped(path) and f.zero_copy("w") and w.read_only
    del f, w
    assert not _mapped(path)


def test_aligned_tensors_are_views_of_the_file_and_misaligned_ones_copies(tmp_path):
    # a 1-byte uint8 tensor puts the float32 tensor at an odd offset: it must be copied
    header = json.dumps({"b": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]},
                         "f": {"dtype": "F32", "shape": [2], "data_offsets": [1, 9]}})
    header += " " * (-len(header) % 8)  # the data section starts at a multiple of 8
    data = b"\x05" + np.array([1.5, -2.0], dtype=np.float32).tobytes()
    path = tmp_path / "odd.safetensors"
    path.write_bytes(_file(header.encode(), data))
    f = st.open(path)
    assert (f.zero_copy("b"), f.zero_copy("f")) == (True, False)
    loaded = st.load(path)
    b, g = loaded["b"], loaded["f"]
    assert (b.read_only, g.read_only) == (True, False)
    assert np.frombuffer(g.tobytes(), np.float32).tolist() == [1.5, -2.0]
    # proof: rewrite the data in place (same size); the view shares the file's pages and sees
    # the new byte, the copy keeps the old values
    start = 8 + len(header)
    with open(path, "r+b") as file:
        file.seek(start)
        file.write(b"\x09" + np.array([7.0, 8.0], dtype=np.float32).tobytes())
    assert b.tobytes() == b"\x09"
    assert np.frombuffer(g.tobytes(), np.float32).tolist() == [1.5, -2.0]
    assert np.frombuffer(st.load(path)["f"].tobytes(), np.float32).tolist() == [7.0, 8.0]


def test_files_the_package_writes_are_all_zero_copy(tmp_path):
    path = tmp_path / "np.safetensors"
    safetensors.numpy.save_file(_all_arrays(NUMPY_DTYPES), str(path))
    f = st.open(os.fspath(path))
    assert all(f.zero_copy(name) for name in f)
    assert all(t.read_only for t in st.load(path).values())


def test_saving_over_a_loaded_file_keeps_its_tensors(tmp_path):
    path = pathlib.Path(tmp_path) / "w.safetensors"
    safetensors.numpy.save_file({"w": np.arange(4, dtype=np.int32)}, str(path))
    w = st.load(path)["w"]
    st.save(path, {"v": st.load(path)["w"].reshape(2, 2)})
    assert np.frombuffer(w.tobytes(), np.int32).tolist() == [0, 1, 2, 3]
    assert safetensors.numpy.load_file(str(path))["v"].tolist() == [[0, 1], [2, 3]]
    assert isinstance(w, nbxtensor.Tensor)
