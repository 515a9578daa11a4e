//! The dims of a shape as a kernel walks it: several operands addressed over one shape, each
//! by its own strides, with the dims that address nothing dropped and neighbours merged wherever
//! every operand's strides let two dims be walked as one. A broadcast of `[N, D]` with `[D]`
//! walks two dims; any contiguous layout, one.

/// A walk over a shape: extents innermost first, each operand's strides in the same order,
/// and where a kept dim landed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Walk {
    /// Extents, innermost first (at least one dim: a scalar walks `[1]`).
    pub shape: Vec<i64>,
    /// Each operand's strides, innermost first (0 on a broadcast dim).
    pub strides: Vec<Vec<i64>>,
    /// The position, innermost first, of the dim asked to be kept apart.
    pub kept: Option<usize>,
}

/// The walk of `operands` (each one stride per dim of `shape`, row-major order) over `shape`:
/// size-1 dims dropped, an outer dim merged into the inner one where every operand's stride
/// continues it; dim `keep` (row-major numbering) is never dropped nor merged.
///
/// ```
/// use nbxtensor::shape::walk;
/// // a [4, 3] contiguous tensor and a [3] row broadcast over it
/// let w = walk(&[4, 3], &[&[3, 1], &[0, 1]], None);
/// assert_eq!(w.shape, vec![3, 4]);
/// assert_eq!(w.strides, vec![vec![1, 3], vec![1, 0]]);
/// // contiguous operands walk one dim
/// assert_eq!(walk(&[2, 3, 4], &[&[12, 4, 1], &[12, 4, 1]], None).shape, vec![24]);
/// // a kept dim stays apart
/// let w = walk(&[2, 3, 4], &[&[12, 4, 1]], Some(1));
/// assert_eq!((w.shape, w.kept), (vec![4, 3, 2], Some(1)));
/// ```
pub fn walk(shape: &[i64], operands: &[&[i64]], keep: Option<usize>) -> Walk {
    let mut dims: Vec<(i64, Vec<i64>, bool)> = Vec::with_capacity(shape.len());
    for d in (0..shape.len()).rev() {
        let kept = keep == Some(d);
        if shape[d] == 1 && !kept {
            continue; // a size-1 dim addresses nothing
        }
        let strides: Vec<i64> = operands.iter().map(|s| s[d]).collect();
        match dims.last_mut() {
            // the outer dim continues the inner one for every operand: one dim
            Some((size, inner, false))
                if !kept && strides.iter().zip(inner.iter()).all(|(&outer, &inner)| outer == inner * *size) =>
            {
                *size *= shape[d];
            }
            _ => dims.push((shape[d], strides, kept)),
        }
    }
    if dims.is_empty() {
        dims.push((1, vec![0; operands.len()], false));
    }
    let kept = dims.iter().position(|(_, _, kept)| *kept);
    let shape = dims.iter().map(|(size, _, _)| *size).collect();
    let strides = (0..operands.len()).map(|k| dims.iter().map(|(_, s, _)| s[k]).collect()).collect();
    Walk { shape, strides, kept }
}
