"""Host conversions between float formats over numpy arrays: bfloat16, float16 and fp8.

numpy has no bfloat16 or fp8 dtype, so those arrays are their bit patterns: uint16 for
bfloat16, uint8 for float8_e4m3fn and float8_e5m2. Narrowing rounds to nearest, ties to even.
Every function keeps the input's shape, accepts ``out=`` (a writable C-contiguous array of the
output dtype with as many elements as the input, which is returned), and releases the GIL.
A numpy input must already have the input dtype; lists and scalars are read by
``numpy.asarray(x, dtype=...)``.
"""

from nbxtensor._core import convert as _core

f32_to_bf16_bits = _core.f32_to_bf16_bits
bf16_bits_to_f32 = _core.bf16_bits_to_f32
bf16_bits_to_f16 = _core.bf16_bits_to_f16
f16_to_bf16_bits = _core.f16_to_bf16_bits
f32_to_fp8_e4m3fn_bits = _core.f32_to_fp8_e4m3fn_bits
fp8_e4m3fn_bits_to_f32 = _core.fp8_e4m3fn_bits_to_f32
f32_to_fp8_e5m2_bits = _core.f32_to_fp8_e5m2_bits
fp8_e5m2_bits_to_f32 = _core.fp8_e5m2_bits_to_f32

__all__ = [
    "f32_to_bf16_bits",
    "bf16_bits_to_f32",
    "bf16_bits_to_f16",
    "f16_to_bf16_bits",
    "f32_to_fp8_e4m3fn_bits",
    "fp8_e4m3fn_bits_to_f32",
    "f32_to_fp8_e5m2_bits",
    "fp8_e5m2_bits_to_f32",
]
