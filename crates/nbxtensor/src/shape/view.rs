//! The view rule: when a reshape can reuse a layout's memory, and with which strides.
//!
//! A port of ATen's `at::detail::computeStride` (aten/src/ATen/TensorUtils.cpp) and of the
//! `-1` inference of `at::infer_size`, with checked arithmetic.

use super::check::{checked_layout, checked_numel};
use super::error::tuple_text;
use super::{contiguous_strides, ShapeError};

/// `new_shape` with its one `-1` (if any) replaced by the extent that makes it hold `numel`
/// elements.
///
/// Refused: a dim below -1, two `-1`, a count that differs from `numel`, and a `-1` beside a
/// 0 dim when `numel` is 0 (any extent would do).
///
/// ```
/// use nbxtensor::shape::infer_shape;
/// assert_eq!(infer_shape(&[-1, 4], 24)?, vec![6, 4]);
/// assert_eq!(infer_shape(&[2, 3], 6)?, vec![2, 3]);
/// assert!(infer_shape(&[-1, 5], 24).is_err());
/// assert!(infer_shape(&[-1, -1], 24).is_err());
/// assert!(infer_shape(&[0, -1], 0).is_err());
/// # Ok::<(), nbxtensor::shape::ShapeError>(())
/// ```
pub fn infer_shape(new_shape: &[i64], numel: i64) -> Result<Vec<i64>, ShapeError> {
    let text = tuple_text(new_shape);
    let mismatch = || ShapeError::BadNewShape(format!("shape {text} is invalid for {numel} elements"));
    let mut unknown = None;
    for (axis, &dim) in new_shape.iter().enumerate() {
        if dim == -1 {
            if unknown.is_some() {
                return Err(ShapeError::BadNewShape(format!("shape {text} has more than one -1")));
            }
            unknown = Some(axis);
        } else if dim < 0 {
            return Err(ShapeError::NegativeDim { dim, axis, shape: text });
        }
    }
    let Some(axis) = unknown else {
        return match checked_numel(new_shape) {
            Ok(n) if n == numel => Ok(new_shape.to_vec()),
            _ => Err(mismatch()),
        };
    };
    let known: Vec<i64> = new_shape.iter().copied().filter(|&d| d != -1).collect();
    match checked_numel(&known) {
        Ok(0) if numel == 0 => {
            Err(ShapeError::BadNewShape(format!("cannot infer the -1 of {text} for 0 elements: any extent would do")))
        }
        Ok(n) if n > 0 && numel % n == 0 => {
            let mut shape = new_shape.to_vec();
            shape[axis] = numel / n;
            Ok(shape)
        }
        _ => Err(mismatch()),
    }
}

/// The strides under which `new_shape` views the elements of `(shape, strides)` in the same
/// row-major order without a copy, or `None` when no such strides exist ("copy first").
///
/// `new_shape` may hold one `-1`, inferred by [`infer_shape`]. Follows ATen's `computeStride`:
/// a scalar gives strides of 1; a tensor without elements keeps its strides when the shape is
/// unchanged and takes contiguous strides otherwise; a new dim of extent 1 takes the stride
/// ATen gives it.
///
/// ```
/// use nbxtensor::shape::view_strides;
/// // merging contiguous dims is a view
/// assert_eq!(view_strides(&[2, 3, 4], &[12, 4, 1], &[6, 4])?, Some(vec![4, 1]));
/// assert_eq!(view_strides(&[2, 3, 4], &[12, 4, 1], &[-1])?, Some(vec![1]));
/// // splitting a dim of a transposed layout is a view, flattening it is not
/// assert_eq!(view_strides(&[4, 3], &[1, 4], &[2, 2, 3])?, Some(vec![2, 1, 4]));
/// assert_eq!(view_strides(&[4, 3], &[1, 4], &[12])?, None);
/// assert!(view_strides(&[4, 3], &[1, 4], &[5, -1]).is_err());
/// # Ok::<(), nbxtensor::shape::ShapeError>(())
/// ```
pub fn view_strides(shape: &[i64], strides: &[i64], new_shape: &[i64]) -> Result<Option<Vec<i64>>, ShapeError> {
    let numel = checked_layout(shape, strides)?;
    let new_shape = infer_shape(new_shape, numel)?;
    if shape.is_empty() {
        return Ok(Some(vec![1; new_shape.len()]));
    }
    if numel == 0 {
        if shape == new_shape.as_slice() {
            return Ok(Some(strides.to_vec()));
        }
        return contiguous_strides(&new_shape).map(Some);
    }
    chunked_strides(shape, strides, &new_shape)
}

/// ATen's chunk walk for a layout with at least one dim and one element: the old dims are cut
/// into chunks that are contiguous among themselves (up to a base stride), and the new dims
/// must tile the chunks exactly.
fn chunked_strides(shape: &[i64], strides: &[i64], new_shape: &[i64]) -> Result<Option<Vec<i64>>, ShapeError> {
    let mut new_strides = vec![0i64; new_shape.len()];
    let mut unassigned = new_shape.len();
    let mut base = strides[shape.len() - 1];
    // Both counts are products of dims (all ≥ 1) of shapes holding `numel` elements: no overflow.
    let mut tensor_numel = 1i64;
    let mut view_numel = 1i64;
    for axis in (0..shape.len()).rev() {
        tensor_numel *= shape[axis];
        let chunk_ends =
            axis == 0 || (shape[axis - 1] != 1 && tensor_numel.checked_mul(base) != Some(strides[axis - 1]));
        if !chunk_ends {
            continue;
        }
        while unassigned > 0 && (view_numel < tensor_numel || new_shape[unassigned - 1] == 1) {
            let view_axis = unassigned - 1;
            new_strides[view_axis] = view_numel.checked_mul(base).ok_or_else(|| ShapeError::Overflow {
                what: format!("the stride of axis {view_axis} of the view {}", tuple_text(new_shape)),
            })?;
            view_numel *= new_shape[view_axis];
            unassigned -= 1;
        }
        if view_numel != tensor_numel {
            return Ok(None);
        }
        if axis > 0 {
            base = strides[axis - 1];
            tensor_numel = 1;
            view_numel = 1;
        }
    }
    Ok((unassigned == 0).then_some(new_strides))
}
