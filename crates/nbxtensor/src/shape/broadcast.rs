//! Broadcasting (numpy's rules): shapes aligned at their last dims, an extent of 1 stretched.

use super::check::{checked_layout, checked_numel};
use super::error::tuple_text;
use super::ShapeError;

/// The shape that `shapes` broadcast to under numpy's rules (`[]` for no shapes).
///
/// Aligned from the last dim, the extents of each axis must all be equal or 1; a 0 beside a 1
/// gives 0. A mismatch names the two shapes and the axis, counted from the end.
///
/// ```
/// use nbxtensor::shape::broadcast_shapes;
/// assert_eq!(broadcast_shapes(&[vec![8, 1, 6], vec![7, 1]])?, vec![8, 7, 6]);
/// assert_eq!(broadcast_shapes(&[&[2, 1][..], &[0][..]])?, vec![2, 0]);
/// let err = broadcast_shapes(&[vec![2, 3], vec![4]]).unwrap_err().to_string();
/// assert_eq!(err, "shapes (2, 3) and (4,) cannot be broadcast: extents 3 and 4 at axis -1");
/// # Ok::<(), nbxtensor::shape::ShapeError>(())
/// ```
pub fn broadcast_shapes<S: AsRef<[i64]>>(shapes: &[S]) -> Result<Vec<i64>, ShapeError> {
    for shape in shapes {
        checked_numel(shape.as_ref())?;
    }
    let rank = shapes.iter().map(|s| s.as_ref().len()).max().unwrap_or(0);
    let mut result = vec![1i64; rank];
    for from_end in 1..=rank {
        // The first shape with an extent other than 1 on this axis sets it.
        let mut owner: Option<&[i64]> = None;
        for shape in shapes.iter().map(AsRef::as_ref) {
            let Some(&extent) = shape.len().checked_sub(from_end).map(|axis| &shape[axis]) else {
                continue;
            };
            if extent == 1 {
                continue;
            }
            match owner {
                None => {
                    owner = Some(shape);
                    result[rank - from_end] = extent;
                }
                Some(first) if extent != result[rank - from_end] => {
                    return Err(ShapeError::NotBroadcastable(format!(
                        "shapes {} and {} cannot be broadcast: extents {} and {extent} at axis -{from_end}",
                        tuple_text(first),
                        tuple_text(shape),
                        result[rank - from_end],
                    )));
                }
                Some(_) => {}
            }
        }
    }
    checked_numel(&result)?;
    Ok(result)
}

/// The strides that present `(shape, strides)` as `target` without a copy: stride 0 on every
/// stretched dim and on every leading dim `target` adds (numpy's `broadcast_to`, ATen's
/// `expand`).
///
/// Refused when `target` has fewer dims than `shape`, or when a dim of `shape` is neither 1
/// nor the target's extent.
///
/// ```
/// use nbxtensor::shape::broadcast_strides;
/// assert_eq!(broadcast_strides(&[3, 1], &[1, 1], &[2, 3, 4])?, vec![0, 1, 0]);
/// assert_eq!(broadcast_strides(&[4], &[2], &[5, 4])?, vec![0, 2]);
/// assert!(broadcast_strides(&[3], &[1], &[4]).is_err());
/// # Ok::<(), nbxtensor::shape::ShapeError>(())
/// ```
pub fn broadcast_strides(shape: &[i64], strides: &[i64], target: &[i64]) -> Result<Vec<i64>, ShapeError> {
    checked_layout(shape, strides)?;
    checked_numel(target)?;
    let refuse = |why: String| {
        ShapeError::NotBroadcastable(format!(
            "shape {} cannot be broadcast to {}: {why}",
            tuple_text(shape),
            tuple_text(target)
        ))
    };
    let Some(added) = target.len().checked_sub(shape.len()) else {
        return Err(refuse(format!("the target has {} dims, fewer than {}", target.len(), shape.len())));
    };
    let mut result = vec![0i64; target.len()];
    for (axis, (&extent, &stride)) in shape.iter().zip(strides).enumerate() {
        let wanted = target[added + axis];
        result[added + axis] = if extent == wanted {
            stride
        } else if extent == 1 {
            0
        } else {
            return Err(refuse(format!("extent {extent} at axis {axis} is neither 1 nor {wanted}")));
        };
    }
    Ok(result)
}
