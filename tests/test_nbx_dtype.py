"""The frozen enum NBXDtype and its readers."""

import pytest

from nbxtensor.dtype import itemsize as I
from nbxtensor.dtype.nbx_dtype import NBXDtype, dtype_size, parse_dtype

# The codes are frozen: a release may append members, never renumber them.
FROZEN = {
    "float16": 0, "bfloat16": 1, "float32": 2, "float64": 3,
    "int8": 4, "int16": 5, "int32": 6, "int64": 7,
    "uint8": 8, "uint16": 9, "uint32": 10, "uint64": 11,
    "bool": 12, "complex64": 13, "complex128": 14,
    "float8_e4m3fn": 15, "float8_e5m2": 16,
    "int4-g128-asym": 17, "int4-g128-sym": 18, "int8-per-channel": 19, "int8-g64": 20,
}


def test_codes_are_frozen():
    for name, value in FROZEN.items():
        member = NBXDtype(value)
        assert member.table_name == name
        assert member.name == name.replace("-", "_")


def test_sizes_come_from_the_table():
    for member in NBXDtype:
        if I.kind(member.table_name) == "packed":
            with pytest.raises(ValueError, match="packed"):
                dtype_size(member)
        else:
            assert dtype_size(member) == I.itemsize(member.table_name)
    assert dtype_size("torch.float64") == 8


@pytest.mark.parametrize(
    "spelling, member",
    [
        ("torch.bfloat16", NBXDtype.bfloat16),
        ("torch.half", NBXDtype.float16),
        ("torch.long", NBXDtype.int64),
        ("np.complex64", NBXDtype.complex64),
        ("double", NBXDtype.float64),
        ("bf16", NBXDtype.bfloat16),
        ("int4-g128-asym", NBXDtype.int4_g128_asym),
        (NBXDtype.uint8, NBXDtype.uint8),
    ],
)
def test_parse_reads_names_and_aliases(spelling, member):
    assert parse_dtype(spelling) is member


@pytest.mark.parametrize("bad", ["float", "torch.float128", "", 3, None, 2.5])
def test_parse_refuses_what_the_table_does_not_carry(bad):
    with pytest.raises(ValueError, match="unknown dtype"):
        parse_dtype(bad)
