//! Fill values made to fit a dtype: a mask sentinel written for one dtype (−3.39e38, near
//! bfloat16's minimum) must not overflow another (float16), nor wrap an integer.

use crate::dtype::promotion::{complex_part, integer_range, PyScalar};
use crate::dtype::{DType, DTypeError, Result};
use crate::facts::Kind;

/// A fill value in the type its dtype holds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum FillValue {
    /// For a float or complex dtype (a complex is filled with a real value).
    Float(f64),
    /// For an integer dtype.
    Int(i128),
    /// For bool.
    Bool(bool),
}

/// `value` made to fit `dtype` for the fill op `op` (named in errors).
///
/// Floats: a finite value beyond the finite maximum clamps to ±max; ±inf stays where the format
/// has an infinity and clamps to ±max where it has none (float8_e4m3fn); NaN stays NaN. A complex
/// dtype takes a real value fitted to its float part. Integers: an integral value, clamped to
/// the dtype's range (±inf clamps to an end); NaN and fractions are refused. Bool: 0 or 1 only.
/// A complex value and packed dtypes are refused.
///
/// ```
/// use nbxtensor::DType;
/// use nbxtensor::dtype::policy::{fill_value, FillValue};
/// use nbxtensor::dtype::promotion::PyScalar;
/// assert_eq!(fill_value("masked_fill", PyScalar::Float(-3.39e38), DType::Float16)?, FillValue::Float(-65504.0));
/// assert_eq!(fill_value("masked_fill", PyScalar::Float(f64::NEG_INFINITY), DType::Float8E4m3fn)?, FillValue::Float(-448.0));
/// assert_eq!(fill_value("masked_fill", PyScalar::Int(-1000), DType::Int8)?, FillValue::Int(-128));
/// # Ok::<(), nbxtensor::dtype::DTypeError>(())
/// ```
pub fn fill_value(op: &str, value: PyScalar, dtype: DType) -> Result<FillValue> {
    let refuse = |why: String| DTypeError::Invalid(format!("{op}: fill value {value} for {dtype}: {why}"));
    let real = match value {
        PyScalar::Bool(b) => f64::from(u8::from(b)),
        PyScalar::Int(v) => v as f64,
        PyScalar::Float(x) => x,
        PyScalar::Complex { .. } => return Err(refuse("a fill value is real".to_string())),
    };
    match dtype.kind() {
        Kind::Bool => match real {
            0.0 => Ok(FillValue::Bool(false)),
            1.0 => Ok(FillValue::Bool(true)),
            _ => Err(refuse("bool takes 0 or 1 only".to_string())),
        },
        Kind::Int | Kind::Uint => {
            let (lo, hi) = integer_range(dtype).ok_or_else(|| refuse("no integer range".to_string()))?;
            let integral = match value {
                PyScalar::Int(v) => v,
                _ if real.is_nan() => return Err(refuse("NaN is not an integer".to_string())),
                _ if real.is_finite() && real.fract() != 0.0 => {
                    return Err(refuse("an integer dtype takes an integral value".to_string()))
                }
                // saturating: ±inf and values beyond i128 land past the range and clamp below
                _ => real as i128,
            };
            Ok(FillValue::Int(integral.clamp(lo, hi)))
        }
        Kind::Float => clamp_to_float(real, dtype),
        Kind::Complex => clamp_to_float(real, complex_part(dtype)?),
        Kind::Packed => Err(refuse("a packed representation is filled in its dequantized dtype".to_string())),
    }
}

fn clamp_to_float(value: f64, float: DType) -> Result<FillValue> {
    let format = float.float_format()?;
    let fitted = if value.is_nan() || (value.is_infinite() && format.inf) {
        value
    } else {
        value.clamp(-format.max, format.max)
    };
    Ok(FillValue::Float(fitted))
}
