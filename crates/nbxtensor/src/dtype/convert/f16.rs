//! float16 (IEEE binary16) to and from float32, through the `half` crate's slice conversions
//! (F16C instructions when the CPU has them, detected at run time).

use super::chunks::convert_chunks;
use crate::dtype::Result;
use half::f16;
use half::slice::HalfFloatSliceExt;

/// Writes each float32 of `src` into `dst` as float16: rounded to nearest, ties to even; past
/// the largest finite float16 → infinity; NaN stays NaN.
///
/// ```
/// use half::f16;
/// use nbxtensor::dtype::convert;
/// let mut dst = [f16::ZERO; 2];
/// convert::f32_to_f16(&[0.1, 1e6], &mut dst)?;
/// assert_eq!(dst, [f16::from_bits(0x2E66), f16::INFINITY]);
/// # Ok::<(), nbxtensor::dtype::DTypeError>(())
/// ```
pub fn f32_to_f16(src: &[f32], dst: &mut [f16]) -> Result<()> {
    convert_chunks("f32_to_f16", src, dst, |s, d| d.convert_from_f32_slice(s))
}

/// Writes the float32 value of each float16 of `src` into `dst` (exact).
///
/// ```
/// use half::f16;
/// use nbxtensor::dtype::convert;
/// let mut dst = [0f32; 1];
/// convert::f16_to_f32(&[f16::MAX], &mut dst)?;
/// assert_eq!(dst, [65504.0]);
/// # Ok::<(), nbxtensor::dtype::DTypeError>(())
/// ```
pub fn f16_to_f32(src: &[f16], dst: &mut [f32]) -> Result<()> {
    convert_chunks("f16_to_f32", src, dst, |s, d| s.convert_to_f32_slice(d))
}
