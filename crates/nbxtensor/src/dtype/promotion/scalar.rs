//! Python scalars in promotion: weak, they take the array's dtype (the Array API standard and
//! NumPy's NEP 50), never wrapping an integer that does not fit.

use super::ranges::{complex_holding, integer_range, packed_refused};
use crate::dtype::{DType, DTypeError, Result};
use crate::facts::Kind;

/// A Python scalar operand, by its exact Python type.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum PyScalar {
    /// A Python `bool`.
    Bool(bool),
    /// A Python `int` (the binding refuses one outside 128 bits).
    Int(i128),
    /// A Python `float`.
    Float(f64),
    /// A Python `complex`.
    Complex {
        /// The real part.
        re: f64,
        /// The imaginary part.
        im: f64,
    },
}

impl std::fmt::Display for PyScalar {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            PyScalar::Bool(b) => f.write_str(if b { "True" } else { "False" }),
            PyScalar::Int(v) => write!(f, "{v}"),
            PyScalar::Float(x) => write!(f, "{x:?}"),
            PyScalar::Complex { re, im } => write!(f, "({re:?}{im:+?}j)"),
        }
    }
}

/// The dtype of a binary op between an array of `array` dtype and a Python scalar.
///
/// A bool takes the array's dtype; an int takes an integer array's dtype when its value fits
/// (refused by name otherwise, never wrapped), int64 with a bool array, the array's dtype with
/// a float or complex one; a float takes a float or complex array's dtype, float64 with a bool
/// or integer array; a complex takes a complex array's dtype, the narrowest complex holding a
/// float array's dtype (complex64 for the half floats and float32), complex128 with a bool or
/// integer array.
///
/// ```
/// use nbxtensor::DType;
/// use nbxtensor::dtype::promotion::{scalar_result, PyScalar};
/// assert_eq!(scalar_result(DType::Float16, PyScalar::Float(0.5))?, DType::Float16);
/// assert_eq!(scalar_result(DType::Int32, PyScalar::Float(1.5))?, DType::Float64);
/// let err = scalar_result(DType::Uint8, PyScalar::Int(300)).unwrap_err().to_string();
/// assert!(err.starts_with("300 does not fit uint8"), "{err}");
/// # Ok::<(), nbxtensor::dtype::DTypeError>(())
/// ```
pub fn scalar_result(array: DType, scalar: PyScalar) -> Result<DType> {
    let kind = array.kind();
    if kind == Kind::Packed {
        return Err(packed_refused(array));
    }
    let integer = matches!(kind, Kind::Int | Kind::Uint);
    match scalar {
        PyScalar::Bool(_) => Ok(array),
        PyScalar::Int(value) if integer => fitting(value, array),
        // NEP 50: a Python int with a bool array gives the default integer
        PyScalar::Int(value) if kind == Kind::Bool => fitting(value, DType::Int64),
        PyScalar::Int(_) => Ok(array),
        PyScalar::Float(_) if integer || kind == Kind::Bool => Ok(DType::Float64),
        PyScalar::Float(_) => Ok(array),
        PyScalar::Complex { .. } if integer || kind == Kind::Bool => Ok(DType::Complex128),
        PyScalar::Complex { .. } if kind == Kind::Float => complex_holding(array),
        PyScalar::Complex { .. } => Ok(array),
    }
}

/// `dtype` when the integer `value` is in its range; refused by name otherwise.
fn fitting(value: i128, dtype: DType) -> Result<DType> {
    match integer_range(dtype) {
        Some((lo, hi)) if (lo..=hi).contains(&value) => Ok(dtype),
        Some((lo, hi)) => Err(DTypeError::Refused(format!(
            "{value} does not fit {dtype} ({lo}..={hi}): a Python int takes the array's dtype and is never wrapped"
        ))),
        None => Err(DTypeError::Refused(format!("'{dtype}' is not an integer dtype"))),
    }
}
