//! Type promotion: the Array API standard's rules (2023.12), the decisions where the standard is
//! silent, and weak Python scalars (NEP 50).
//!
//! | case | result |
//! | --- | --- |
//! | two dtypes of one kind | the standard: the wider; int with uint → the narrowest int holding both |
//! | two kinds (bool < int, uint < float < complex) | the higher kind at its own width, as PyTorch |
//! | float16 with bfloat16 | float32, the narrowest float holding both (a [`Joined::Tied`] meeting) |
//! | a float with a complex | the narrowest complex whose float part holds the float |
//! | float8 with a float that holds it (float16, bfloat16, float32 …) | that float |
//! | float8_e4m3fn with float8_e5m2 | refused: float16 and bfloat16 both hold both |
//! | a signed integer with uint64 | refused: no signed integer holds uint64 |
//! | a packed representation | refused |
//!
//! "Holds" is read from the table (exponent and mantissa bits, finite maximum, infinity), so a
//! float added to the table promotes without a new rule. Results over several dtypes are a join
//! over the set ([`join`]), so they never depend on the operands' order.

mod join;
mod ranges;
mod scalar;

use crate::dtype::{DType, DTypeError, Result};
use crate::facts::Kind;
use join::{Join, Joined};

pub use ranges::{complex_holding, complex_part, holds, integer_range};
pub use scalar::{scalar_result, PyScalar};

fn join_all(dtypes: &[DType]) -> Result<Joined> {
    let mut join = Join::default();
    for &dtype in dtypes {
        join.add(dtype)?;
    }
    join.resolve()
}

/// The dtype of a binary op on arrays of dtypes `a` and `b`.
///
/// ```
/// use nbxtensor::DType;
/// use nbxtensor::dtype::promotion::binary_result;
/// assert_eq!(binary_result(DType::Int8, DType::Uint8)?, DType::Int16);
/// assert_eq!(binary_result(DType::Complex64, DType::Float64)?, DType::Complex128);
/// assert_eq!(binary_result(DType::Int64, DType::Float16)?, DType::Float16);
/// assert_eq!(binary_result(DType::Bfloat16, DType::Float16)?, DType::Float32);
/// let err = binary_result(DType::Int8, DType::Uint64).unwrap_err().to_string();
/// assert_eq!(err, "int8 and uint64 have no common dtype: no signed integer holds uint64");
/// # Ok::<(), nbxtensor::dtype::DTypeError>(())
/// ```
pub fn binary_result(a: DType, b: DType) -> Result<DType> {
    common_dtype(&[a, b])
}

/// The dtype all of `dtypes` promote to, the same in every order: the [`binary_result`] of them
/// all (float16 with bfloat16 meet in float32). An empty list is refused.
///
/// ```
/// use nbxtensor::DType;
/// use nbxtensor::dtype::promotion::common_dtype;
/// assert_eq!(common_dtype(&[DType::Float16, DType::Bfloat16, DType::Int8])?, DType::Float32);
/// // no pair order matters: int8 with uint64 alone is refused, but a float takes them both
/// assert_eq!(common_dtype(&[DType::Uint64, DType::Int8, DType::Float32])?, DType::Float32);
/// # Ok::<(), nbxtensor::dtype::DTypeError>(())
/// ```
pub fn common_dtype(dtypes: &[DType]) -> Result<DType> {
    match join_all(dtypes)? {
        Joined::Exact(d) | Joined::Tied { holder: d } => Ok(d),
    }
}

/// The dtype `dtypes` promote to, or `None` when the float16/bfloat16 meeting decides it (the
/// list holds both half formats and no wider float or complex): then the caller's precision
/// policy decides. An empty list is refused.
///
/// ```
/// use nbxtensor::DType;
/// use nbxtensor::dtype::promotion::promoted;
/// assert_eq!(promoted(&[DType::Float16, DType::Float32])?, Some(DType::Float32));
/// assert_eq!(promoted(&[DType::Float16, DType::Bfloat16])?, None);
/// assert!(promoted(&[]).is_err());
/// # Ok::<(), nbxtensor::dtype::DTypeError>(())
/// ```
pub fn promoted(dtypes: &[DType]) -> Result<Option<DType>> {
    match join_all(dtypes)? {
        Joined::Exact(d) => Ok(Some(d)),
        Joined::Tied { .. } => Ok(None),
    }
}

/// The dtype a float-only math op (rsqrt, exp …) reads its input as: bool and integers as
/// float32, floats and complex unchanged. Packed representations are refused.
///
/// ```
/// use nbxtensor::DType;
/// use nbxtensor::dtype::promotion::float_math_input;
/// assert_eq!(float_math_input(DType::Int64)?, DType::Float32);
/// assert_eq!(float_math_input(DType::Bfloat16)?, DType::Bfloat16);
/// # Ok::<(), nbxtensor::dtype::DTypeError>(())
/// ```
pub fn float_math_input(dtype: DType) -> Result<DType> {
    match dtype.kind() {
        Kind::Bool | Kind::Int | Kind::Uint => Ok(DType::Float32),
        Kind::Float | Kind::Complex => Ok(dtype),
        Kind::Packed => {
            Err(DTypeError::Refused(format!("'{dtype}' is packed: a float math op reads a float; dequantize it first")))
        }
    }
}

#[cfg(test)]
mod tests;
