"""nbxtensor.dtype.convert against ml_dtypes and numpy.

fp8 results (both directions) are compared bit for bit, NaN included: both libraries write a
quiet NaN of the input's sign. bfloat16 and float16 NaN outputs are compared by isnan only:
ml_dtypes keeps a NaN's sign when it narrows to bfloat16 and drops payloads when it narrows to
float16, where nbxtensor writes 0x7FC0 (torch's rule) and the half crate keeps the top payload
bits. Every other output is compared bit for bit.
"""

import ml_dtypes
import numpy as np
import pytest

from nbxtensor.dtype import convert

BF16 = ml_dtypes.bfloat16
E4M3 = ml_dtypes.float8_e4m3fn
E5M2 = ml_dtypes.float8_e5m2

# ml_dtypes warns when it casts NaN; the NaN outputs are what these tests compare
pytestmark = pytest.mark.filterwarnings("ignore:invalid value encountered in cast")

ALL_U16 = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
ALL_U8 = np.arange(1 << 8, dtype=np.uint16).astype(np.uint8)


def random_f32(n, seed):
    """Random bit patterns (every class: NaN payloads, subnormals, huge) plus the specials."""
    rng = np.random.default_rng(seed)
    patterns = rng.integers(0, 1 << 32, size=n, dtype=np.uint64).astype(np.uint32).view(np.float32)
    moderate = rng.standard_normal(n // 4).astype(np.float32) * np.float32(100.0)
    specials = np.array(
        [0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, np.finfo(np.float32).max, -np.finfo(np.float32).max,
         np.finfo(np.float32).tiny, np.finfo(np.float32).smallest_subnormal, 448.0, 464.0, 480.0, 57344.0,
         61440.0, 65504.0, 65520.0],
        dtype=np.float32,
    )
    return np.concatenate([patterns, moderate, specials])


def assert_same_bits_or_both_nan(got_bits, expected_bits, got_values, expected_values):
    nan = np.isnan(expected_values.astype(np.float32))
    assert np.array_equal(np.isnan(got_values.astype(np.float32)), nan)
    assert np.array_equal(got_bits[~nan], expected_bits[~nan])


def test_every_bf16_pattern_widens_as_ml_dtypes_does_and_round_trips():
    wide = convert.bf16_bits_to_f32(ALL_U16)
    expected = ALL_U16.view(BF16).astype(np.float32)
    assert wide.dtype == np.float32
    assert np.array_equal(wide.view(np.uint32), expected.view(np.uint32))
    back = convert.f32_to_bf16_bits(wide)
    nan = np.isnan(wide)
    assert np.array_equal(back[~nan], ALL_U16[~nan])
    assert np.all(back[nan] == 0x7FC0)


def test_random_f32_to_bf16_equals_ml_dtypes():
    x = random_f32(1_000_000, seed=1)
    got = convert.f32_to_bf16_bits(x)
    expected = x.astype(BF16).view(np.uint16)
    nan = np.isnan(x)
    assert nan.sum() > 1000  # the random patterns hold NaN payloads of both signs
    assert np.array_equal(got[~nan], expected[~nan])
    assert np.all(got[nan] == 0x7FC0)


def test_every_bf16_pattern_to_f16_equals_ml_dtypes():
    got = convert.bf16_bits_to_f16(ALL_U16)
    expected = ALL_U16.view(BF16).astype(np.float16)
    assert got.dtype == np.float16
    assert_same_bits_or_both_nan(got.view(np.uint16), expected.view(np.uint16), got, expected)


def test_every_f16_pattern_to_bf16_equals_ml_dtypes():
    halves = ALL_U16.view(np.float16)
    got = convert.f16_to_bf16_bits(halves)
    expected = halves.astype(BF16).view(np.uint16)
    nan = np.isnan(halves)
    assert np.array_equal(got[~nan], expected[~nan])
    assert np.all(got[nan] == 0x7FC0)


@pytest.mark.parametrize(
    "encode, decode, fp8",
    [
        (convert.f32_to_fp8_e4m3fn_bits, convert.fp8_e4m3fn_bits_to_f32, E4M3),
        (convert.f32_to_fp8_e5m2_bits, convert.fp8_e5m2_bits_to_f32, E5M2),
    ],
)
def test_fp8_against_ml_dtypes(encode, decode, fp8):
    decoded = decode(ALL_U8)
    expected = ALL_U8.view(fp8).astype(np.float32)
    assert decoded.dtype == np.float32
    assert np.array_equal(decoded.view(np.uint32), expected.view(np.uint32))

    x = random_f32(1_000_000, seed=2)
    small = np.random.default_rng(3).uniform(-1e5, 1e5, 200_000).astype(np.float32)
    tiny = small * np.float32(1e-7)
    x = np.concatenate([x, small, tiny])
    got = encode(x)
    assert got.dtype == np.uint8
    assert np.array_equal(got, x.astype(fp8).view(np.uint8))


def test_shapes_are_kept():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    assert convert.f32_to_bf16_bits(x).shape == (2, 3, 4)
    scalar = convert.f32_to_bf16_bits(np.float32(2.0))
    assert scalar.shape == () and scalar[()] == np.float32(2.0).astype(BF16).view(np.uint16)
    empty = convert.fp8_e5m2_bits_to_f32(np.zeros((0, 5), dtype=np.uint8))
    assert empty.shape == (0, 5) and empty.dtype == np.float32


def test_non_contiguous_and_list_inputs():
    x = random_f32(4000, seed=4)[:4000].reshape(40, 100)
    view = x[::3, 1::2]
    assert not view.flags.c_contiguous
    assert np.array_equal(convert.f32_to_bf16_bits(view), convert.f32_to_bf16_bits(view.copy()))
    fortran = np.asfortranarray(x)
    assert np.array_equal(convert.f32_to_bf16_bits(fortran), convert.f32_to_bf16_bits(x))
    listed = convert.bf16_bits_to_f32([0x3F80, 0xC020])
    assert listed.tolist() == [1.0, -2.5]


def test_out_spans_fill_one_array():
    bits = ALL_U16
    out = np.empty(bits.size, dtype=np.float32)
    half = bits.size // 2
    returned = convert.bf16_bits_to_f32(bits[:half], out=out[:half])
    convert.bf16_bits_to_f32(bits[half:], out=out[half:])
    assert np.shares_memory(returned, out)
    assert np.array_equal(out.view(np.uint32), bits.view(BF16).astype(np.float32).view(np.uint32))
    # out may have another shape with the same number of elements
    grid = np.empty((4, 64), dtype=np.uint8)
    convert.f32_to_fp8_e5m2_bits(np.linspace(-4, 4, 256, dtype=np.float32), out=grid)
    assert np.array_equal(grid.ravel(), np.linspace(-4, 4, 256, dtype=np.float32).astype(E5M2).view(np.uint8))


def read_only(array):
    array.flags.writeable = False
    return array


@pytest.mark.parametrize(
    "out, words",
    [
        (np.empty(4, dtype=np.float32), ["uint16", "float32"]),
        (np.empty(5, dtype=np.uint16), ["5 elements", "4"]),
        (read_only(np.empty(4, dtype=np.uint16)), ["writable"]),
        (np.empty(8, dtype=np.uint16)[::2], ["C-contiguous"]),
        ([0, 0, 0, 0], ["numpy array", "list"]),
    ],
)
def test_bad_out_is_refused_by_name(out, words):
    x = np.ones(4, dtype=np.float32)
    with pytest.raises(ValueError) as info:
        convert.f32_to_bf16_bits(x, out=out)
    for word in words:
        assert word in str(info.value)


def test_bad_inputs_are_refused_by_name():
    with pytest.raises(ValueError, match="float32.*float64"):
        convert.f32_to_bf16_bits(np.ones(3))
    with pytest.raises(ValueError, match="uint8.*int8"):
        convert.fp8_e4m3fn_bits_to_f32(np.ones(3, dtype=np.int8))
    with pytest.raises(ValueError, match="bit patterns"):
        convert.bf16_bits_to_f16([1.5])
    with pytest.raises(ValueError, match="out of bounds"):
        convert.bf16_bits_to_f32([1 << 16])
    with pytest.raises(ValueError, match="share no memory"):
        buffer = np.zeros(4, dtype=np.float32)
        convert.f32_to_bf16_bits(buffer, out=buffer.view(np.uint16)[:4])
