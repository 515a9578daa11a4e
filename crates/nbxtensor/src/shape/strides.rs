//! Element counts, contiguous strides and the contiguity test. Strides count elements.

use super::check::{checked_layout, checked_numel};
use super::ShapeError;

/// The number of elements of `shape` (1 for the scalar shape `[]`).
///
/// ```
/// use nbxtensor::shape::numel;
/// assert_eq!(numel(&[2, 3, 4])?, 24);
/// assert_eq!(numel(&[])?, 1);
/// assert_eq!(numel(&[5, 0])?, 0);
/// assert!(numel(&[3, -2]).unwrap_err().to_string().contains("negative dim -2 at axis 1 of (3, -2)"));
/// assert!(numel(&[1 << 32, 1 << 32]).is_err());
/// # Ok::<(), nbxtensor::shape::ShapeError>(())
/// ```
pub fn numel(shape: &[i64]) -> Result<i64, ShapeError> {
    checked_numel(shape)
}

/// The strides of the row-major (C-contiguous) layout of `shape`, in elements.
///
/// A 0 dim counts as 1 in the strides of the dims before it, as ATen and numpy do. A tensor
/// with no elements addresses no byte, so where that product passes `i64` its strides are 0
/// from that axis on (the layout stays valid) instead of an overflow.
///
/// ```
/// use nbxtensor::shape::contiguous_strides;
/// assert_eq!(contiguous_strides(&[2, 3, 4])?, vec![12, 4, 1]);
/// assert_eq!(contiguous_strides(&[2, 0, 3])?, vec![3, 3, 1]);
/// assert_eq!(contiguous_strides(&[])?, Vec::<i64>::new());
/// assert_eq!(contiguous_strides(&[2, 0, 1 << 32, 1 << 32])?, vec![0, 0, 1 << 32, 1]);
/// assert!(contiguous_strides(&[2, 1 << 32, 1 << 32]).is_err());
/// # Ok::<(), nbxtensor::shape::ShapeError>(())
/// ```
pub fn contiguous_strides(shape: &[i64]) -> Result<Vec<i64>, ShapeError> {
    checked_numel(shape)?;
    let mut strides = vec![1i64; shape.len()];
    for axis in (0..shape.len().saturating_sub(1)).rev() {
        // a stride of a tensor with elements is at most its element count (checked above): only
        // a tensor of no element can pass i64 here
        strides[axis] = strides[axis + 1].checked_mul(shape[axis + 1].max(1)).unwrap_or(0);
    }
    Ok(strides)
}

/// Whether `(shape, strides)` addresses its elements as the row-major layout does.
///
/// A dim of extent 1 may carry any stride, and a tensor with no elements is contiguous
/// (ATen's `is_contiguous`).
///
/// ```
/// use nbxtensor::shape::is_contiguous;
/// assert!(is_contiguous(&[2, 3], &[3, 1])?);
/// assert!(!is_contiguous(&[2, 3], &[1, 2])?);
/// assert!(is_contiguous(&[1, 8, 1], &[99, 1, 7])?);
/// assert!(is_contiguous(&[4, 0], &[5, 9])?);
/// assert!(is_contiguous(&[2], &[1, 1]).is_err());
/// # Ok::<(), nbxtensor::shape::ShapeError>(())
/// ```
pub fn is_contiguous(shape: &[i64], strides: &[i64]) -> Result<bool, ShapeError> {
    if checked_layout(shape, strides)? == 0 {
        return Ok(true);
    }
    // `expected` is a product of dims of a shape whose element count fits an i64: no overflow.
    let mut expected = 1i64;
    for (&dim, &stride) in shape.iter().zip(strides).rev() {
        if dim != 1 {
            if stride != expected {
                return Ok(false);
            }
            expected *= dim;
        }
    }
    Ok(true)
}
