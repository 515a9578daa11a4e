//! Output dtypes of ops under a precision policy, and what a traced record says of its outputs.

use crate::dtype::{DType, DTypeError, Result};
use crate::facts::Kind;

/// The output dtype of an op that computes in float32 inside while the policy computes in
/// `compute` and the graph holds the op's output in `graph`.
///
/// The rule, in order:
/// 1. a compute dtype at least as wide as float32: nothing was widened, the graph's dtype;
/// 2. a graph dtype at least as wide as float32: the graph's dtype;
/// 3. a graph dtype with float32's exponent range (bfloat16: at least float32's exponent bits):
///    every float32 result is in its range, the graph's dtype;
/// 4. a narrower range (float16, float8): the graph's dtype only when the op declares its output
///    fits it (`safe`) or the graph narrowed it explicitly (`narrowed`); otherwise float32, since
///    nothing says the float32 result fits.
///
/// Both dtypes must be floats.
///
/// ```
/// use nbxtensor::DType::*;
/// use nbxtensor::dtype::outputs::amp_fp32_output_dtype;
/// assert_eq!(amp_fp32_output_dtype(Bfloat16, Bfloat16, false, false)?, Bfloat16);
/// assert_eq!(amp_fp32_output_dtype(Float16, Float16, false, false)?, Float32);
/// assert_eq!(amp_fp32_output_dtype(Float16, Float16, true, false)?, Float16);
/// # Ok::<(), nbxtensor::dtype::DTypeError>(())
/// ```
pub fn amp_fp32_output_dtype(compute: DType, graph: DType, safe: bool, narrowed: bool) -> Result<DType> {
    for (role, dtype) in [("compute", compute), ("graph", graph)] {
        if !dtype.is_float() {
            return Err(DTypeError::Invalid(format!(
                "the {role} dtype of an op computing in float32 is a float: '{dtype}' is {}",
                dtype.kind().as_str()
            )));
        }
    }
    let float32_width = DType::Float32.itemsize()?;
    let float32_exponent = DType::Float32.float_format()?.exponent_bits;
    let keeps_graph = compute.itemsize()? >= float32_width
        || graph.itemsize()? >= float32_width
        || graph.float_format()?.exponent_bits >= float32_exponent
        || safe
        || narrowed;
    Ok(if keeps_graph { graph } else { DType::Float32 })
}

/// Whether a traced op's outputs include a complex dtype (read from the traced outputs, never
/// from the op's name).
///
/// ```
/// use nbxtensor::DType::*;
/// use nbxtensor::dtype::outputs::traced_output_is_complex;
/// assert!(traced_output_is_complex(&[Float32, Complex64]));
/// assert!(!traced_output_is_complex(&[Float32]));
/// ```
pub fn traced_output_is_complex(output_dtypes: &[DType]) -> bool {
    output_dtypes.iter().any(|d| d.kind() == Kind::Complex)
}

#[cfg(test)]
mod tests {
    use super::*;
    use DType::*;

    #[test]
    fn the_rule_case_by_case() {
        let f = |c, g, safe, narrowed| amp_fp32_output_dtype(c, g, safe, narrowed).unwrap();
        assert_eq!(f(Bfloat16, Bfloat16, false, false), Bfloat16);
        assert_eq!(f(Float16, Bfloat16, false, false), Bfloat16);
        assert_eq!(f(Float16, Float16, false, false), Float32);
        assert_eq!(f(Bfloat16, Float16, false, false), Float32);
        assert_eq!(f(Float16, Float16, true, false), Float16);
        assert_eq!(f(Float16, Float16, false, true), Float16);
        assert_eq!(f(Float16, Float8E4m3fn, false, false), Float32);
        assert_eq!(f(Float16, Float32, false, false), Float32);
        assert_eq!(f(Bfloat16, Float64, false, false), Float64);
        assert_eq!(f(Float32, Float16, false, false), Float16);
        let err = amp_fp32_output_dtype(Float16, Int32, false, false).unwrap_err().to_string();
        assert!(err.contains("graph") && err.contains("'int32' is int"), "{err}");
    }

    #[test]
    fn complex_outputs_are_read_from_the_kinds() {
        assert!(traced_output_is_complex(&[Complex128]));
        assert!(!traced_output_is_complex(&[]));
        assert!(!traced_output_is_complex(&[Float64, Int64, Bool]));
    }
}
