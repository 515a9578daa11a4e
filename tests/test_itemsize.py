"""The dtype table's readers, checked against numpy and ml_dtypes, which know these formats
independently of nbxtensor."""

import ml_dtypes
import numpy as np
import pytest

from nbxtensor.dtype import itemsize as I

NUMPY_EQUIVALENT = {
    "bool": np.bool_,
    "int8": np.int8, "int16": np.int16, "int32": np.int32, "int64": np.int64,
    "uint8": np.uint8, "uint16": np.uint16, "uint32": np.uint32, "uint64": np.uint64,
    "float16": np.float16, "float32": np.float32, "float64": np.float64,
    "complex64": np.complex64, "complex128": np.complex128,
    "bfloat16": ml_dtypes.bfloat16,
    "float8_e4m3fn": ml_dtypes.float8_e4m3fn,
    "float8_e5m2": ml_dtypes.float8_e5m2,
}
NUMPY_KIND = {"b": "bool", "i": "int", "u": "uint", "f": "float", "c": "complex", "V": "float"}
PACKED = ["int4-g128-asym", "int4-g128-sym", "int8-per-channel", "int8-g64"]


def test_the_table_holds_every_dtype_of_the_foundation():
    assert sorted(I.names()) == sorted(list(NUMPY_EQUIVALENT) + PACKED)


@pytest.mark.parametrize("name", sorted(NUMPY_EQUIVALENT))
def test_width_and_kind_agree_with_numpy(name):
    reference = np.dtype(NUMPY_EQUIVALENT[name])
    assert I.itemsize(name) == reference.itemsize
    # ml_dtypes' types report kind "V"; they are all floats
    assert I.kind(name) == NUMPY_KIND[reference.kind]
    assert I.representation_bytes(name, 37) == 37 * reference.itemsize


@pytest.mark.parametrize("name", PACKED)
def test_packed_dtypes_have_no_width_but_a_representation(name):
    assert I.kind(name) == "packed"
    with pytest.raises(ValueError, match=f"'{name}' is packed"):
        I.itemsize(name)


def test_packed_representation_sizes():
    # 1000 codes of 4 bits = 500 bytes; 8 groups (the last one partial)
    assert I.representation_bytes("int4-g128-asym", 1000) == 500 + 8 * (2 + 2)
    assert I.representation_bytes("int4-g128-sym", 1000) == 500 + 8 * 2
    # a 3 x 5 int8 matrix with one float32 scale per row
    assert I.representation_bytes("int8-per-channel", 15, channels=3) == 15 + 3 * 4
    # 130 int8 codes in groups of 64: three float32 scales (the last group of 2)
    assert I.representation_bytes("int8-g64", 130) == 130 + 3 * 4
    with pytest.raises(ValueError, match="say how many channels"):
        I.representation_bytes("int8-per-channel", 15)
    with pytest.raises(ValueError, match="numel must be ≥ 0"):
        I.representation_bytes("float32", -1)


def test_codes_of_other_formats_round_trip():
    for name in I.names():
        assert I.from_autotune_key(I.autotune_key(name)) == name
        entry = I.entry(name)
        assert entry["name"] == name and entry["source"]
        if entry["safetensors"] is not None:
            assert I.to_safetensors(name) == entry["safetensors"]
            assert I.from_safetensors(entry["safetensors"]) == name
    assert I.from_safetensors("F8_E4M3") == "float8_e4m3fn"
    assert I.from_autotune_key("bf16") == "bfloat16"
    assert I.dlpack_type("bfloat16") == (4, 16, 1)
    assert I.dlpack_type("bool") == (6, 8, 1)
    assert I.entry("bfloat16")["float"] == {"exponent_bits": 8, "mantissa_bits": 7, "max": 3.3895313892515355e38, "inf": True}
    assert I.entry("float8_e4m3fn")["float"]["inf"] is False and I.entry("int8")["float"] is None


def test_storage_dtypes():
    assert I.storage_dtype("float64") == "float64"
    assert I.storage_dtype("float64", stores_fp64=False) == "float32"
    assert I.storage_dtype("complex128", stores_fp64=False) == "complex64"
    assert I.storage_dtype("float16", stores_fp64=False) == "float16"
    assert I.storage_dtype("int4-g128-asym") == "uint8"


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: I.itemsize("float128"), "unknown dtype 'float128'"),
        (lambda: I.itemsize("half"), "an alias of 'float16'"),
        (lambda: I.kind(""), "unknown dtype ''"),
        (lambda: I.from_safetensors("F128"), "unknown safetensors code 'F128'"),
        (lambda: I.from_autotune_key("fp128"), "unknown launch key code 'fp128'"),
        (lambda: I.to_safetensors("complex128"), "'complex128' has no safetensors code"),
        (lambda: I.dlpack_type("int4-g128-sym"), "'int4-g128-sym' has no DLPack code"),
    ],
)
def test_refusals_name_what_is_wrong(call, message):
    with pytest.raises(ValueError, match=message):
        call()
