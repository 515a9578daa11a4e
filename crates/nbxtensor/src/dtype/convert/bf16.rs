//! bfloat16 (1 sign, 8 exponent, 7 mantissa bits: the top half of a float32), held as its
//! 16-bit patterns.

use super::chunks::convert_chunks;
use crate::dtype::Result;
use half::f16;
use half::slice::HalfFloatSliceExt;

/// The one NaN pattern every NaN becomes: positive, quiet, no payload (as torch's
/// `c10::BFloat16` writes it).
pub const QUIET_NAN: u16 = 0x7FC0;

/// float32 elements widened per step of the bfloat16 ↔ float16 conversions (a stack buffer).
const STAGE: usize = 512;

/// The bfloat16 pattern of `x`: rounded to nearest, ties to even; every NaN becomes
/// [`QUIET_NAN`]; a value past the largest finite bfloat16 rounds to infinity.
///
/// ```
/// use nbxtensor::dtype::convert::bf16;
/// assert_eq!(bf16::from_f32(1.0), 0x3F80);
/// assert_eq!(bf16::from_f32(f32::from_bits(0x3F80_8000)), 0x3F80); // a tie goes to the even pattern
/// assert_eq!(bf16::from_f32(f32::from_bits(0x3F81_8000)), 0x3F82);
/// assert_eq!(bf16::from_f32(-f32::NAN), 0x7FC0);
/// assert_eq!(bf16::from_f32(f32::MAX), 0x7F80); // +inf
/// ```
#[inline(always)]
pub fn from_f32(x: f32) -> u16 {
    let bits = x.to_bits();
    // Adding 0x7FFF plus the lowest kept bit carries into the kept half exactly when the
    // dropped half is above one half, or equal to it with an odd kept half.
    let rounded = (bits.wrapping_add(0x7FFF + ((bits >> 16) & 1)) >> 16) as u16;
    let is_nan = (bits & 0x7FFF_FFFF) > 0x7F80_0000;
    if is_nan {
        QUIET_NAN
    } else {
        rounded
    }
}

/// The float32 value of a bfloat16 pattern (exact: the pattern becomes the top half).
///
/// ```
/// use nbxtensor::dtype::convert::bf16;
/// assert_eq!(bf16::to_f32(0xC020), -2.5);
/// ```
#[inline(always)]
pub fn to_f32(bits: u16) -> f32 {
    f32::from_bits(u32::from(bits) << 16)
}

/// Writes the bfloat16 pattern of each element of `src` into `dst` (see [`from_f32`]).
///
/// ```
/// use nbxtensor::dtype::convert;
/// let mut dst = [0u16; 3];
/// convert::f32_to_bf16_bits(&[1.0, -0.0, f32::INFINITY], &mut dst)?;
/// assert_eq!(dst, [0x3F80, 0x8000, 0x7F80]);
/// # Ok::<(), nbxtensor::dtype::DTypeError>(())
/// ```
pub fn f32_to_bf16_bits(src: &[f32], dst: &mut [u16]) -> Result<()> {
    convert_chunks("f32_to_bf16_bits", src, dst, |s, d| {
        for (o, x) in d.iter_mut().zip(s) {
            *o = from_f32(*x);
        }
    })
}

/// Writes the float32 value of each bfloat16 pattern of `src` into `dst` (exact).
///
/// ```
/// use nbxtensor::dtype::convert;
/// let mut dst = [0f32; 2];
/// convert::bf16_bits_to_f32(&[0x3F80, 0xFF80], &mut dst)?;
/// assert_eq!(dst, [1.0, f32::NEG_INFINITY]);
/// # Ok::<(), nbxtensor::dtype::DTypeError>(())
/// ```
pub fn bf16_bits_to_f32(src: &[u16], dst: &mut [f32]) -> Result<()> {
    convert_chunks("bf16_bits_to_f32", src, dst, |s, d| {
        for (o, b) in d.iter_mut().zip(s) {
            *o = to_f32(*b);
        }
    })
}

/// Writes each bfloat16 pattern of `src` into `dst` as float16, through float32: exact
/// widening, then float16 rounding (to nearest, ties to even; past 65504 → infinity; NaN
/// stays NaN).
///
/// ```
/// use half::f16;
/// use nbxtensor::dtype::convert;
/// let mut dst = [f16::ZERO; 2];
/// convert::bf16_bits_to_f16(&[0x3FC0, 0x4780], &mut dst)?; // 1.5 and 65536
/// assert_eq!(dst, [f16::from_f32(1.5), f16::INFINITY]);
/// # Ok::<(), nbxtensor::dtype::DTypeError>(())
/// ```
pub fn bf16_bits_to_f16(src: &[u16], dst: &mut [f16]) -> Result<()> {
    convert_chunks("bf16_bits_to_f16", src, dst, |s, d| {
        let mut wide = [0f32; STAGE];
        for (s, d) in s.chunks(STAGE).zip(d.chunks_mut(STAGE)) {
            let wide = &mut wide[..s.len()];
            for (w, b) in wide.iter_mut().zip(s) {
                *w = to_f32(*b);
            }
            d.convert_from_f32_slice(wide);
        }
    })
}

/// Writes the bfloat16 pattern of each float16 of `src` into `dst`, through float32 (exact
/// widening, then [`from_f32`]).
///
/// ```
/// use half::f16;
/// use nbxtensor::dtype::convert;
/// let mut dst = [0u16; 2];
/// convert::f16_to_bf16_bits(&[f16::from_f32(-2.5), f16::MAX], &mut dst)?;
/// assert_eq!(dst, [0xC020, 0x4780]); // 65504 rounds to 65536 in bfloat16
/// # Ok::<(), nbxtensor::dtype::DTypeError>(())
/// ```
pub fn f16_to_bf16_bits(src: &[f16], dst: &mut [u16]) -> Result<()> {
    convert_chunks("f16_to_bf16_bits", src, dst, |s, d| {
        let mut wide = [0f32; STAGE];
        for (s, d) in s.chunks(STAGE).zip(d.chunks_mut(STAGE)) {
            let wide = &mut wide[..s.len()];
            s.convert_to_f32_slice(wide);
            for (o, w) in d.iter_mut().zip(wide.iter()) {
                *o = from_f32(*w);
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subnormals_and_the_overflow_edge_round_to_even() {
        // the smallest float32 subnormal is below half the smallest bfloat16 subnormal
        assert_eq!(from_f32(f32::from_bits(1)), 0);
        // exactly half of the smallest bfloat16 subnormal: a tie, to the even pattern 0
        assert_eq!(from_f32(f32::from_bits(0x8000)), 0);
        assert_eq!(from_f32(f32::from_bits(0x8001)), 1);
        assert_eq!(from_f32(f32::from_bits(0x1_8000)), 2);
        // the largest finite bfloat16, and the tie above it that rounds to infinity
        assert_eq!(from_f32(f32::from_bits(0x7F7F_7FFF)), 0x7F7F);
        assert_eq!(from_f32(f32::from_bits(0x7F7F_8000)), 0x7F80);
        assert_eq!(from_f32(f32::from_bits(0xFF7F_8000)), 0xFF80);
    }

    #[test]
    fn every_nan_payload_and_sign_becomes_the_quiet_nan() {
        for bits in [0x7F80_0001u32, 0x7FC0_0000, 0x7FFF_FFFF, 0xFF80_0001, 0xFFFF_FFFF, 0xFFC1_2345] {
            assert_eq!(from_f32(f32::from_bits(bits)), QUIET_NAN, "{bits:#x}");
        }
    }

    #[test]
    fn half_conversions_agree_with_the_half_crate_through_f32() {
        let patterns: Vec<u16> = (0..=u16::MAX).collect();
        let mut halves = vec![f16::ZERO; patterns.len()];
        bf16_bits_to_f16(&patterns, &mut halves).unwrap();
        for (b, h) in patterns.iter().zip(&halves) {
            let expected = f16::from_f32(to_f32(*b));
            assert!(h.to_bits() == expected.to_bits() || (h.is_nan() && expected.is_nan()), "{b:#x}");
        }
        let all_halves: Vec<f16> = patterns.iter().map(|b| f16::from_bits(*b)).collect();
        let mut bf = vec![0u16; patterns.len()];
        f16_to_bf16_bits(&all_halves, &mut bf).unwrap();
        for (h, b) in all_halves.iter().zip(&bf) {
            assert_eq!(*b, from_f32(h.to_f32()), "{:#x}", h.to_bits());
        }
    }
}
