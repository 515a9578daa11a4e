//! 8-bit floats (float8_e4m3fn, float8_e5m2), held as their 8-bit patterns.
//!
//! One routine serves both formats: the layout (exponent and mantissa bits, largest finite
//! value, whether an infinity exists) is read from the dtype table. The semantics are those of
//! `ml_dtypes`' `astype`: round to nearest, ties to even; a magnitude that rounds past the
//! largest finite value becomes infinity where the format has one and NaN where it has none
//! (float8_e4m3fn); infinities likewise; a NaN stays a quiet NaN of the same sign.

use super::chunks::convert_chunks;
use crate::dtype::{DType, DTypeError, Result};

/// Bits of a float32's stored mantissa.
const F32_MANTISSA_BITS: u32 = f32::MANTISSA_DIGITS - 1;
/// A float32's exponent bias.
const F32_BIAS: i32 = f32::MAX_EXP - 1;
/// Bits of a float64's stored mantissa.
const F64_MANTISSA_BITS: u32 = f64::MANTISSA_DIGITS - 1;
/// A float64's exponent bias.
const F64_BIAS: i32 = f64::MAX_EXP - 1;

/// The layout of an 8-bit float, derived from its entry of the dtype table.
///
/// ```
/// use nbxtensor::DType;
/// use nbxtensor::dtype::convert::Fp8Format;
/// let e4m3 = Fp8Format::of(DType::Float8E4m3fn)?;
/// assert_eq!(e4m3.encode(1.0), 0x38);
/// assert_eq!(e4m3.decode(0x38), 1.0);
/// assert!(Fp8Format::of(DType::Float16).is_err());
/// # Ok::<(), nbxtensor::dtype::DTypeError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fp8Format {
    dtype: DType,
    mantissa_bits: u32,
    bias: i32,
    /// The magnitude pattern (sign bit clear) of the largest finite value.
    max_code: u32,
    has_inf: bool,
}

impl Fp8Format {
    /// The layout of `dtype`; refused unless the table gives it a float layout of one byte.
    pub fn of(dtype: DType) -> Result<Fp8Format> {
        let float = dtype.float_format()?;
        let invalid = |why: &str| DTypeError::Invalid(format!("'{}' is not an 8-bit float: {why}", dtype.name()));
        if dtype.itemsize()? != 1 || 1 + float.exponent_bits + float.mantissa_bits != dtype.bits() {
            return Err(invalid("its layout does not fill one byte"));
        }
        let mantissa_bits = float.mantissa_bits;
        let bias = (1i32 << (float.exponent_bits - 1)) - 1;
        // the pattern of the largest finite value, read off its float64 bits
        let max_bits = float.max.to_bits();
        let exponent = ((max_bits >> F64_MANTISSA_BITS) & 0x7FF) as i32 - F64_BIAS;
        let fraction = max_bits & ((1u64 << F64_MANTISSA_BITS) - 1);
        let dropped = F64_MANTISSA_BITS - mantissa_bits;
        let field = exponent + bias;
        if fraction & ((1u64 << dropped) - 1) != 0 || field < 1 || field >= 1 << float.exponent_bits {
            return Err(invalid("its largest finite value is not a value of its layout"));
        }
        let max_code = ((field as u32) << mantissa_bits) | (fraction >> dropped) as u32;
        if max_code >= 0x7F {
            return Err(invalid("its largest finite value leaves no pattern for NaN"));
        }
        Ok(Fp8Format { dtype, mantissa_bits, bias, max_code, has_inf: float.inf })
    }

    /// The dtype this layout belongs to.
    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// The magnitude pattern just past the largest finite value: infinity where the format
    /// has one, else NaN. A magnitude that rounds past the largest finite value becomes it.
    fn overflow_code(&self) -> u32 {
        self.max_code + 1
    }

    /// The quiet NaN magnitude pattern: the infinity pattern with the top mantissa bit set, or,
    /// without an infinity, the pattern past the largest finite value.
    fn nan_code(&self) -> u32 {
        if self.has_inf {
            self.overflow_code() | (1 << (self.mantissa_bits - 1))
        } else {
            self.overflow_code()
        }
    }

    /// The exponent of the smallest normal value, `1 - bias`.
    fn min_exponent(&self) -> i32 {
        1 - self.bias
    }

    /// The pattern of `x`, rounded to nearest, ties to even (see the module's rules for
    /// overflow, infinities and NaN).
    ///
    /// ```
    /// use nbxtensor::DType;
    /// use nbxtensor::dtype::convert::Fp8Format;
    /// let e5m2 = Fp8Format::of(DType::Float8E5m2)?;
    /// assert_eq!(e5m2.encode(-1.5), 0xBE);
    /// assert_eq!(e5m2.encode(1e9), 0x7C); // past the largest finite value: +inf
    /// assert_eq!(Fp8Format::of(DType::Float8E4m3fn)?.encode(1e9), 0x7F); // no inf: NaN
    /// # Ok::<(), nbxtensor::dtype::DTypeError>(())
    /// ```
    #[inline]
    pub fn encode(&self, x: f32) -> u8 {
        let bits = x.to_bits();
        let sign = (bits >> 24) & 0x80;
        let magnitude = bits & 0x7FFF_FFFF;
        let min_normal = ((self.min_exponent() + F32_BIAS) as u32) << F32_MANTISSA_BITS;
        let code = if magnitude > f32::INFINITY.to_bits() {
            self.nan_code()
        } else if magnitude >= min_normal {
            // round the float32 pattern to the kept mantissa bits (a carry moves the exponent)
            let shift = F32_MANTISSA_BITS - self.mantissa_bits;
            let rounded = (magnitude + (1 << (shift - 1)) - 1 + ((magnitude >> shift) & 1)) >> shift;
            let rebiased = rounded - (((F32_BIAS - self.bias) as u32) << self.mantissa_bits);
            if rebiased > self.max_code {
                self.overflow_code()
            } else {
                rebiased
            }
        } else {
            // below the smallest normal: a whole number of the smallest subnormal
            let per_subnormal = power_of_two(self.mantissa_bits as i32 - self.min_exponent());
            (f32::from_bits(magnitude) * per_subnormal).round_ties_even() as u32
        };
        (code | sign) as u8
    }

    /// The float32 value of a pattern (exact; NaN patterns give a NaN of the same sign).
    ///
    /// ```
    /// use nbxtensor::DType;
    /// use nbxtensor::dtype::convert::Fp8Format;
    /// let e4m3 = Fp8Format::of(DType::Float8E4m3fn)?;
    /// assert_eq!(e4m3.decode(0x7E), 448.0);
    /// assert_eq!(e4m3.decode(0x01), 2f32.powi(-9)); // the smallest subnormal
    /// assert!(e4m3.decode(0xFF).is_nan());
    /// # Ok::<(), nbxtensor::dtype::DTypeError>(())
    /// ```
    pub fn decode(&self, bits: u8) -> f32 {
        let code = u32::from(bits & 0x7F);
        let magnitude = if code > self.max_code {
            if self.has_inf && code == self.overflow_code() {
                f32::INFINITY
            } else {
                f32::NAN
            }
        } else {
            let field = (code >> self.mantissa_bits) as i32;
            let fraction = code & ((1 << self.mantissa_bits) - 1);
            let (significand, exponent) = match field {
                0 => (fraction, self.min_exponent()),
                _ => (fraction | (1 << self.mantissa_bits), field - self.bias),
            };
            significand as f32 * power_of_two(exponent - self.mantissa_bits as i32)
        };
        if bits & 0x80 != 0 {
            -magnitude
        } else {
            magnitude
        }
    }

    /// The float32 value of every pattern, indexed by pattern.
    fn decode_table(&self) -> [f32; 256] {
        std::array::from_fn(|bits| self.decode(bits as u8))
    }
}

/// `2^exponent` as a float32, for exponents of normal float32 values.
fn power_of_two(exponent: i32) -> f32 {
    f32::from_bits(((exponent + F32_BIAS) as u32) << F32_MANTISSA_BITS)
}

/// Writes the `format` pattern of each float32 of `src` into `dst` ([`Fp8Format::encode`]).
pub fn f32_to_fp8_bits(format: &Fp8Format, src: &[f32], dst: &mut [u8]) -> Result<()> {
    let name = format!("f32_to_{}_bits", format.dtype.name());
    convert_chunks(&name, src, dst, |s, d| {
        for (o, x) in d.iter_mut().zip(s) {
            *o = format.encode(*x);
        }
    })
}

/// Writes the float32 value of each `format` pattern of `src` into `dst` (exact).
pub fn fp8_bits_to_f32(format: &Fp8Format, src: &[u8], dst: &mut [f32]) -> Result<()> {
    let table = format.decode_table();
    let name = format!("{}_bits_to_f32", format.dtype.name());
    convert_chunks(&name, src, dst, |s, d| {
        for (o, b) in d.iter_mut().zip(s) {
            *o = table[usize::from(*b)];
        }
    })
}

/// Writes the float8_e4m3fn pattern of each float32 of `src` into `dst`: round to nearest
/// even; past the largest finite value, infinities and NaN all give NaN (the format has no
/// infinity).
///
/// ```
/// use nbxtensor::dtype::convert;
/// let mut dst = [0u8; 4];
/// convert::f32_to_fp8_e4m3fn_bits(&[1.0, -0.5, 464.0, 480.0], &mut dst)?;
/// assert_eq!(dst, [0x38, 0xB0, 0x7E, 0x7F]); // 464 ties down to 448; 480 is past it: NaN
/// # Ok::<(), nbxtensor::dtype::DTypeError>(())
/// ```
pub fn f32_to_fp8_e4m3fn_bits(src: &[f32], dst: &mut [u8]) -> Result<()> {
    f32_to_fp8_bits(&Fp8Format::of(DType::Float8E4m3fn)?, src, dst)
}

/// Writes the float32 value of each float8_e4m3fn pattern of `src` into `dst` (exact).
///
/// ```
/// use nbxtensor::dtype::convert;
/// let mut dst = [0f32; 2];
/// convert::fp8_e4m3fn_bits_to_f32(&[0x38, 0xFE], &mut dst)?;
/// assert_eq!(dst, [1.0, -448.0]);
/// # Ok::<(), nbxtensor::dtype::DTypeError>(())
/// ```
pub fn fp8_e4m3fn_bits_to_f32(src: &[u8], dst: &mut [f32]) -> Result<()> {
    fp8_bits_to_f32(&Fp8Format::of(DType::Float8E4m3fn)?, src, dst)
}

/// Writes the float8_e5m2 pattern of each float32 of `src` into `dst`: round to nearest even;
/// past the largest finite value → infinity; NaN stays a quiet NaN.
///
/// ```
/// use nbxtensor::dtype::convert;
/// let mut dst = [0u8; 3];
/// convert::f32_to_fp8_e5m2_bits(&[1.0, 61440.0, f32::NEG_INFINITY], &mut dst)?;
/// assert_eq!(dst, [0x3C, 0x7C, 0xFC]); // 61440 ties up past 57344: +inf
/// # Ok::<(), nbxtensor::dtype::DTypeError>(())
/// ```
pub fn f32_to_fp8_e5m2_bits(src: &[f32], dst: &mut [u8]) -> Result<()> {
    f32_to_fp8_bits(&Fp8Format::of(DType::Float8E5m2)?, src, dst)
}

/// Writes the float32 value of each float8_e5m2 pattern of `src` into `dst` (exact).
///
/// ```
/// use nbxtensor::dtype::convert;
/// let mut dst = [0f32; 2];
/// convert::fp8_e5m2_bits_to_f32(&[0x7B, 0x01], &mut dst)?;
/// assert_eq!(dst, [57344.0, 2f32.powi(-16)]);
/// # Ok::<(), nbxtensor::dtype::DTypeError>(())
/// ```
pub fn fp8_e5m2_bits_to_f32(src: &[u8], dst: &mut [f32]) -> Result<()> {
    fp8_bits_to_f32(&Fp8Format::of(DType::Float8E5m2)?, src, dst)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_read_from_the_table_give_the_paper_layouts() {
        // arXiv:2209.05433, table 1: E4M3 max S.1111.110, E5M2 max S.11110.11, inf S.11111.00
        let e4m3 = Fp8Format::of(DType::Float8E4m3fn).unwrap();
        assert_eq!((e4m3.bias, e4m3.max_code, e4m3.nan_code(), e4m3.overflow_code()), (7, 0x7E, 0x7F, 0x7F));
        let e5m2 = Fp8Format::of(DType::Float8E5m2).unwrap();
        assert_eq!((e5m2.bias, e5m2.max_code, e5m2.overflow_code()), (15, 0x7B, 0x7C));
        assert_eq!(e5m2.nan_code() & 0x7C, 0x7C);
        assert_ne!(e5m2.nan_code(), 0x7C);
    }

    #[test]
    fn other_dtypes_are_refused_by_name() {
        let err = Fp8Format::of(DType::Bfloat16).unwrap_err().to_string();
        assert!(err.contains("'bfloat16' is not an 8-bit float"), "{err}");
        assert!(Fp8Format::of(DType::Int8).is_err());
    }

    #[test]
    fn subnormal_edges_round_to_even() {
        let e4m3 = Fp8Format::of(DType::Float8E4m3fn).unwrap();
        let tiny = 2f32.powi(-9); // the smallest subnormal
        assert_eq!(e4m3.encode(tiny * 0.5), 0x00); // a tie to the even 0
        assert_eq!(e4m3.encode(tiny * 1.5), 0x02); // a tie to the even 2
        assert_eq!(e4m3.encode(-tiny * 0.5), 0x80); // the sign of zero is kept
                                                    // just under the smallest normal 2^-6 rounds up to it
        assert_eq!(e4m3.encode(2f32.powi(-6) - tiny / 4.0), 0x08);
    }
}
