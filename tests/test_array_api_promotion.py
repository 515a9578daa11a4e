"""Type promotion against the Array API standard's tables, the library's decisions where the
standard is silent, order independence over three operands, and weak Python scalars."""

import itertools

import numpy as np
import pytest

from nbxtensor.dtype.promotion import binary_result, common_dtype, float_math_input, promoted, scalar_result

# The standard's short names, as its tables write them, plus the two half floats it leaves out.
ABBR = {
    "b": "bool", "i1": "int8", "i2": "int16", "i4": "int32", "i8": "int64",
    "u1": "uint8", "u2": "uint16", "u4": "uint32", "u8": "uint64",
    "f2": "float16", "bf": "bfloat16", "f4": "float32", "f8": "float64", "c8": "complex64", "c16": "complex128",
}
DTYPES = list(ABBR.values())

# The Array API standard, version 2023.12, page "Type Promotion Rules"
# (https://data-apis.org/array-api/2023.12/API_specification/type_promotion.html): its tables,
# copied cell by cell. Row and column headers are the first line of each table.
STANDARD_TABLES = [
    # signed integer type promotion table
    """    i1 i2 i4 i8
    i1 i1 i2 i4 i8
    i2 i2 i2 i4 i8
    i4 i4 i4 i4 i8
    i8 i8 i8 i8 i8""",
    # unsigned integer type promotion table
    """    u1 u2 u4 u8
    u1 u1 u2 u4 u8
    u2 u2 u2 u4 u8
    u4 u4 u4 u4 u8
    u8 u8 u8 u8 u8""",
    # mixed unsigned and signed integer type promotion table (the standard has no uint64 row)
    """    i1 i2 i4 i8
    u1 i2 i2 i4 i8
    u2 i4 i4 i4 i8
    u4 i8 i8 i8 i8""",
    # floating-point type promotion table
    """     f4  f8  c8  c16
    f4  f4  f8  c8  c16
    f8  f8  f8  c16 c16
    c8  c8  c16 c8  c16
    c16 c16 c16 c16 c16""",
    # bool with bool
    """   b
    b  b""",
]

# The library's decisions where the standard is silent (README "What the standard leaves open"):
# across kinds the higher kind at its own width (bool < integers < floats < complex, as PyTorch);
# float16 with bfloat16 in float32; a half float with a wider float or a complex: the wider; a
# signed integer with uint64: refused ("x").
DECIDED = """
b i1 i1   b i2 i2   b i4 i4   b i8 i8   b u1 u1   b u2 u2   b u4 u4   b u8 u8
b f2 f2   b bf bf   b f4 f4   b f8 f8   b c8 c8   b c16 c16
i1 f2 f2  i1 bf bf  i1 f4 f4  i1 f8 f8  i1 c8 c8  i1 c16 c16
i2 f2 f2  i2 bf bf  i2 f4 f4  i2 f8 f8  i2 c8 c8  i2 c16 c16
i4 f2 f2  i4 bf bf  i4 f4 f4  i4 f8 f8  i4 c8 c8  i4 c16 c16
i8 f2 f2  i8 bf bf  i8 f4 f4  i8 f8 f8  i8 c8 c8  i8 c16 c16
u1 f2 f2  u1 bf bf  u1 f4 f4  u1 f8 f8  u1 c8 c8  u1 c16 c16
u2 f2 f2  u2 bf bf  u2 f4 f4  u2 f8 f8  u2 c8 c8  u2 c16 c16
u4 f2 f2  u4 bf bf  u4 f4 f4  u4 f8 f8  u4 c8 c8  u4 c16 c16
u8 f2 f2  u8 bf bf  u8 f4 f4  u8 f8 f8  u8 c8 c8  u8 c16 c16
f2 f2 f2  f2 bf f4  f2 f4 f4  f2 f8 f8  f2 c8 c8  f2 c16 c16
bf bf bf  bf f4 f4  bf f8 f8  bf c8 c8  bf c16 c16
u8 i1 x   u8 i2 x   u8 i4 x   u8 i8 x
"""


def standard_pairs():
    pairs = {}
    for table in STANDARD_TABLES:
        header, *rows = [line.split() for line in table.splitlines()]
        for row in rows:
            for column, cell in zip(header, row[1:]):
                pairs[frozenset((ABBR[row[0]], ABBR[column]))] = ABBR[cell]
    return pairs


def decided_pairs():
    words = DECIDED.split()
    triples = [words[i : i + 3] for i in range(0, len(words), 3)]
    return {frozenset((ABBR[a], ABBR[b])): (None if r == "x" else ABBR[r]) for a, b, r in triples}


def test_the_two_tables_cover_every_pair_once():
    standard, decided = standard_pairs(), decided_pairs()
    assert not set(standard) & set(decided)
    every = {frozenset(p) for p in itertools.combinations_with_replacement(DTYPES, 2)}
    assert len(every) == 15 * 16 // 2 == 120
    assert set(standard) | set(decided) == every


@pytest.mark.parametrize("table", ["standard", "decided"])
def test_binary_result_in_both_orders(table):
    pairs = standard_pairs() if table == "standard" else decided_pairs()
    for pair, want in pairs.items():
        a, b = sorted(pair) if len(pair) == 2 else (next(iter(pair)),) * 2
        for x, y in [(a, b), (b, a)]:
            if want is None:
                with pytest.raises(ValueError) as refused:
                    binary_result(x, y)
                signed = x if x != "uint64" else y
                assert str(refused.value) == f"{signed} and uint64 have no common dtype: no signed integer holds uint64"
            else:
                assert binary_result(x, y) == want, (x, y)


def outcome(call):
    try:
        return call()
    except ValueError:
        return "refused"


def test_three_operands_promote_alike_in_every_order():
    for triple in itertools.product(DTYPES, repeat=3):
        orders = list(itertools.permutations(triple))
        common = {outcome(lambda: common_dtype(list(o))) for o in orders}
        assert len(common) == 1, (triple, common)
        (common,) = common
        folds = {outcome(lambda: binary_result(binary_result(o[0], o[1]), o[2])) for o in orders}
        # a fold may stop at a refused pair (int8 with uint64) that a later float would take;
        # every fold that gets through agrees, and at least one gets through when any order can
        assert folds - {"refused"} == ({common} - {"refused"}), (triple, folds, common)
        half_meeting = outcome(lambda: promoted(list(triple))) is None
        assert half_meeting == ({"float16", "bfloat16"} <= set(triple) and common == "float32"
                                and not {"float32", "float64", "complex64", "complex128"} & set(triple))


def test_promoted_leaves_the_half_meeting_to_the_policy():
    assert promoted(["bfloat16", "float16"]) is None
    assert promoted(["bfloat16", "float16", "int64"]) is None
    assert promoted(["bfloat16", "float16", "float64"]) == "float64"
    assert promoted(["float16", "complex64", "bfloat16"]) == "complex64"
    assert promoted(["uint8", "int8", "uint16"]) == "int32"
    with pytest.raises(ValueError, match="no dtypes"):
        promoted([])
    with pytest.raises(ValueError, match="unknown dtype 'float77'"):
        promoted(["float16", "float77"])


def test_float8_meets_the_floats_that_hold_it():
    assert binary_result("float8_e4m3fn", "float16") == "float16"
    assert binary_result("bfloat16", "float8_e5m2") == "bfloat16"
    assert binary_result("float8_e5m2", "int32") == "float8_e5m2"
    with pytest.raises(ValueError, match="float8_e4m3fn and float8_e5m2 have no common dtype"):
        binary_result("float8_e5m2", "float8_e4m3fn")
    # with a float that holds both, the pair is no longer ambiguous, in any order
    for order in itertools.permutations(["float8_e4m3fn", "float8_e5m2", "float16"]):
        assert common_dtype(list(order)) == "float16"


@pytest.mark.parametrize("packed", ["int4-g128-asym", "int4-g128-sym", "int8-per-channel", "int8-g64"])
def test_packed_dtypes_are_refused_by_name(packed):
    for call in (lambda: binary_result("float16", packed), lambda: float_math_input(packed),
                 lambda: scalar_result(packed, 1.0), lambda: promoted([packed])):
        with pytest.raises(ValueError, match=f"'{packed}' is packed"):
            call()


def test_float_math_input():
    assert [float_math_input(d) for d in ("bool", "uint8", "int16", "int64")] == ["float32"] * 4
    assert [float_math_input(d) for d in ("float16", "bfloat16", "float64", "complex64")] == [
        "float16", "bfloat16", "float64", "complex64"]


NUMPY_DTYPES = [d for d in DTYPES if d != "bfloat16"]


@pytest.mark.parametrize("scalar", [True, 7, 2.5, 1j])
def test_scalars_are_weak_as_numpy_2_says(scalar):
    """NumPy 2 implements NEP 50: its result_type with a Python scalar is the reference."""
    assert np.__version__ >= "2"
    for dtype in NUMPY_DTYPES:
        assert scalar_result(dtype, scalar) == np.result_type(np.dtype(dtype), scalar).name, (dtype, scalar)


def test_bfloat16_with_scalars():
    assert scalar_result("bfloat16", 3) == "bfloat16"
    assert scalar_result("bfloat16", 0.1) == "bfloat16"
    assert scalar_result("bfloat16", False) == "bfloat16"
    assert scalar_result("bfloat16", 2j) == "complex64"


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int64", "uint64"])
def test_ints_outside_the_range_are_refused_by_name(dtype):
    info = np.iinfo(dtype)
    assert scalar_result(dtype, int(info.min)) == dtype
    assert scalar_result(dtype, int(info.max)) == dtype
    for value in (int(info.min) - 1, int(info.max) + 1):
        with pytest.raises(ValueError) as refused:
            scalar_result(dtype, value)
        assert str(refused.value).startswith(f"{value} does not fit {dtype} ({info.min}..={info.max})")


def test_bool_is_read_before_int():
    assert scalar_result("bool", True) == "bool"        # a bool scalar: weak, the array's dtype
    assert scalar_result("bool", 1) == "int64"          # an int scalar with a bool array: NEP 50's default int
    assert scalar_result("uint8", True) == "uint8"
    with pytest.raises(ValueError, match="does not fit int64"):
        scalar_result("bool", 2**63)
    with pytest.raises(ValueError, match="outside 128 bits"):
        scalar_result("int64", 2**200)


def test_numpy_scalars_are_not_weak():
    with pytest.raises(ValueError, match="not a Python bool, int, float or complex"):
        scalar_result("float16", np.float64(0.5))
    with pytest.raises(ValueError, match="not a Python"):
        scalar_result("float16", "0.5")
