//! Facts promotion reasons with, derived from the table: integer ranges, which float holds
//! which, and the float part of a complex.

use crate::dtype::{DType, DTypeError, Result};
use crate::facts::Kind;

/// The inclusive range of an integer dtype, from its width and kind; `None` for other kinds.
///
/// ```
/// use nbxtensor::DType;
/// use nbxtensor::dtype::promotion::integer_range;
/// assert_eq!(integer_range(DType::Int8), Some((-128, 127)));
/// assert_eq!(integer_range(DType::Uint64), Some((0, u64::MAX as i128)));
/// assert_eq!(integer_range(DType::Float32), None);
/// ```
pub fn integer_range(dtype: DType) -> Option<(i128, i128)> {
    let bits = dtype.bits();
    match dtype.kind() {
        Kind::Int => Some((-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)),
        Kind::Uint => Some((0, (1i128 << bits) - 1)),
        _ => None,
    }
}

/// Whether every value of the float `held` is a value of the float `holder`: at least as many
/// exponent and mantissa bits, a finite maximum at least as large, and an infinity where `held`
/// has one. `false` when either is not a float.
///
/// ```
/// use nbxtensor::DType;
/// use nbxtensor::dtype::promotion::holds;
/// assert!(holds(DType::Float32, DType::Bfloat16));
/// assert!(holds(DType::Float16, DType::Float8E4m3fn));
/// assert!(!holds(DType::Float16, DType::Bfloat16) && !holds(DType::Bfloat16, DType::Float16));
/// ```
pub fn holds(holder: DType, held: DType) -> bool {
    match (holder.float_format(), held.float_format()) {
        (Ok(a), Ok(b)) => {
            a.exponent_bits >= b.exponent_bits
                && a.mantissa_bits >= b.mantissa_bits
                && a.max >= b.max
                && (a.inf || !b.inf)
        }
        _ => false,
    }
}

/// The float each half of a complex is: the one float of the table half its width.
///
/// ```
/// use nbxtensor::DType;
/// use nbxtensor::dtype::promotion::complex_part;
/// assert_eq!(complex_part(DType::Complex64)?, DType::Float32);
/// assert_eq!(complex_part(DType::Complex128)?, DType::Float64);
/// # Ok::<(), nbxtensor::dtype::DTypeError>(())
/// ```
pub fn complex_part(complex: DType) -> Result<DType> {
    let refused =
        || DTypeError::Refused(format!("'{complex}' is not a complex of the table with one float of half its width"));
    if complex.kind() != Kind::Complex {
        return Err(refused());
    }
    let half = complex.itemsize()? / 2;
    let mut parts = DType::ALL.iter().copied().filter(|d| d.is_float() && d.itemsize().ok() == Some(half));
    match (parts.next(), parts.next()) {
        (Some(part), None) => Ok(part),
        _ => Err(refused()),
    }
}

/// The narrowest complex of the table whose float part holds `float`.
///
/// ```
/// use nbxtensor::DType;
/// use nbxtensor::dtype::promotion::complex_holding;
/// assert_eq!(complex_holding(DType::Bfloat16)?, DType::Complex64);
/// assert_eq!(complex_holding(DType::Float64)?, DType::Complex128);
/// # Ok::<(), nbxtensor::dtype::DTypeError>(())
/// ```
pub fn complex_holding(float: DType) -> Result<DType> {
    DType::ALL
        .iter()
        .copied()
        .filter(|d| d.kind() == Kind::Complex && complex_part(*d).is_ok_and(|part| holds(part, float)))
        .min_by_key(|d| d.itemsize().unwrap_or(usize::MAX))
        .ok_or_else(|| DTypeError::Refused(format!("no complex of the table holds '{float}'")))
}

/// The refusal of a packed representation in promotion.
pub(super) fn packed_refused(dtype: DType) -> DTypeError {
    DTypeError::Refused(format!(
        "'{dtype}' is packed: it takes no part in type promotion; dequantize it to a float first"
    ))
}
