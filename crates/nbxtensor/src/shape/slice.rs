//! Bounds of a slice, clamped as Python and numpy clamp them: step 1 (`slice_bounds`) and any
//! step, negative included (`slice_steps`).

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

/// The `(first, count)` that `[start:stop:step]` selects from a dim of `size` elements: the
/// index of the first element taken and how many are taken, `step` apart (Python's
/// `slice.indices`; a negative step walks from the end, and `None` bounds default to the ends
/// the step starts and stops at). A step of zero is refused.
///
/// ```
/// use nbxtensor::shape::slice_steps;
/// assert_eq!(slice_steps(None, None, 2, 10)?, (0, 5));
/// assert_eq!(slice_steps(None, None, -1, 10)?, (9, 10));
/// assert_eq!(slice_steps(Some(8), Some(2), -3, 10)?, (8, 2));    // 8, 5
/// assert_eq!(slice_steps(Some(-1), Some(-100), -4, 10)?, (9, 3)); // 9, 5, 1
/// assert_eq!(slice_steps(Some(2), Some(1), 1, 10)?, (2, 0));
/// assert!(slice_steps(None, None, 0, 10).is_err());
/// # Ok::<(), nbxtensor::shape::ShapeError>(())
/// ```
pub fn slice_steps(start: Option<i64>, stop: Option<i64>, step: i64, size: i64) -> Result<(i64, i64), ShapeError> {
    if size < 0 {
        return Err(ShapeError::NegativeSize(size));
    }
    if step == 0 {
        return Err(ShapeError::ZeroStep);
    }
    // the range an index is clamped into: 0..=size forward, -1..=size-1 backward
    let (lower, upper) = if step > 0 { (0, size) } else { (-1, size - 1) };
    let clamp = |index: i64| {
        if index < 0 {
            (index + size).max(lower)
        } else {
            index.min(upper)
        }
    };
    let first = start.map_or(if step > 0 { lower } else { upper }, clamp);
    let end = stop.map_or(if step > 0 { upper } else { lower }, clamp);
    let span = if step > 0 { end - first } else { first - end };
    let count = if span > 0 { ((span as u64 - 1) / step.unsigned_abs() + 1) as i64 } else { 0 };
    Ok((first, count))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_slice_of_small_dims_selects_what_python_selects() {
        for size in 0..7i64 {
            let bounds = [None, Some(-9), Some(-3), Some(-1), Some(0), Some(1), Some(4), Some(9)];
            for start in bounds {
                for stop in bounds {
                    for step in [-5i64, -2, -1, 1, 2, 3, 7] {
                        // Python's own walk, written out: the indices range(start', stop', step)
                        let norm = |b: Option<i64>, default: i64| match b {
                            None => default,
                            Some(i) if i < 0 => (i + size).max(if step > 0 { 0 } else { -1 }),
                            Some(i) => i.min(if step > 0 { size } else { size - 1 }),
                        };
                        let (a, b) = if step > 0 {
                            (norm(start, 0), norm(stop, size))
                        } else {
                            (norm(start, size - 1), norm(stop, -1))
                        };
                        let mut want = Vec::new();
                        let mut i = a;
                        while (step > 0 && i < b) || (step < 0 && i > b) {
                            want.push(i);
                            i += step;
                        }
                        let (first, count) = slice_steps(start, stop, step, size).unwrap();
                        let got: Vec<i64> = (0..count).map(|k| first + k * step).collect();
                        assert_eq!(got, want, "[{start:?}:{stop:?}:{step}] of {size}");
                        assert!(got.iter().all(|&i| (0..size).contains(&i)));
                    }
                }
            }
        }
    }
}
