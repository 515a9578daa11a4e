//! Bounds of a step-1 slice, clamped as Python and numpy clamp them.

use super::ShapeError;

/// The `(start, stop)` that `[start:stop]` selects from a dim of `size` elements.
///
/// `None` stands for the dim's ends; a negative index counts from the end; both bounds are
/// clamped into `0..=size`, and `stop` is never below `start`, so `stop - start` is the
/// number of elements selected.
///
/// ```
/// use nbxtensor::shape::slice_bounds;
/// assert_eq!(slice_bounds(Some(2), Some(100), 10)?, (2, 10));
/// assert_eq!(slice_bounds(Some(-3), None, 10)?, (7, 10));
/// assert_eq!(slice_bounds(None, Some(-20), 10)?, (0, 0));
/// assert_eq!(slice_bounds(Some(6), Some(4), 10)?, (6, 6));
/// assert!(slice_bounds(None, None, -1).is_err());
/// # Ok::<(), nbxtensor::shape::ShapeError>(())
/// ```
pub fn slice_bounds(start: Option<i64>, stop: Option<i64>, size: i64) -> Result<(i64, i64), ShapeError> {
    if size < 0 {
        return Err(ShapeError::NegativeSize(size));
    }
    // `index + size` cannot overflow: index < 0 ≤ size.
    let clamp = |index: i64| {
        if index < 0 {
            (index + size).max(0)
        } else {
            index.min(size)
        }
    };
    let start = start.map_or(0, clamp);
    let stop = stop.map_or(size, clamp).max(start);
    Ok((start, stop))
}
