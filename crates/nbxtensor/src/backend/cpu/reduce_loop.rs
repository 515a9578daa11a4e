//! The loops of reductions: each output element folds its reduced elements in one fixed order
//! (row-major over the reduced axes), so results never depend on the thread count. Outputs
//! are split over the pool; three layouts of the (contiguous) input are served:
//! - the reduced axes are the trailing ones: each output folds one contiguous row;
//! - the reduced axes form one middle block `(A, R, B)`: outputs are folded in groups of
//!   consecutive `b`, reading rows of `x[a, r, :]` (vectorizable, cache-friendly);
//! - any other set of axes: an odometer over the reduced axes.

use super::buffers::par_pieces;
use crate::kernel::{KernelError, Result};
use crate::shape;

/// A fold of elements of `In` into one `Out`.
pub trait Fold: Sync {
    /// The element read.
    type In: Copy + Send + Sync;
    /// The running state.
    type Acc: Copy;
    /// The element written.
    type Out: Copy + Send;
    /// The state before any element.
    fn init(&self) -> Self::Acc;
    /// The state after element `x`, the `index`-th of the reduced elements (row-major).
    fn fold(&self, acc: Self::Acc, x: Self::In, index: usize) -> Self::Acc;
    /// The output from the state after `count` elements.
    fn finish(&self, acc: Self::Acc, count: usize) -> Self::Out;
}

/// Folds the contiguous `x` of `shape` over the `reduced` axes into `out` (the kept axes in
/// row-major order).
pub fn reduce<F: Fold>(fold: &F, x: &[F::In], shape: &[i64], reduced: &[bool], out: &mut [F::Out]) -> Result<()> {
    // An empty input first (its other extents may multiply past 64 bits): no output, or
    // every output folds no element (a reduced extent is 0).
    if out.is_empty() {
        return Ok(());
    }
    if x.is_empty() {
        out.fill(fold.finish(fold.init(), 0));
        return Ok(());
    }
    let strides = shape::contiguous_strides(shape).map_err(|e| KernelError::Invalid(e.to_string()))?;
    let count: usize = shape.iter().zip(reduced).filter(|(_, &r)| r).map(|(&e, _)| e as usize).product();
    // the dims of extent 1 change nothing; what remains decides the layout
    let dims: Vec<(usize, bool)> =
        shape.iter().zip(reduced).filter(|(&e, _)| e != 1).map(|(&e, &r)| (e as usize, r)).collect();
    let first = dims.iter().position(|d| d.1);
    let last = dims.iter().rposition(|d| d.1);
    let block = match (first, last) {
        (Some(f), Some(l)) if dims[f..=l].iter().all(|d| d.1) => Some((f, l)),
        (None, None) => None,
        _ => {
            general(fold, x, shape, &strides, reduced, count, out);
            return Ok(());
        }
    };
    let inner: usize = match block {
        Some((_, l)) => dims[l + 1..].iter().map(|d| d.0).product(),
        None => 1,
    };
    if inner == 1 {
        par_pieces(out, |start, piece| {
            for (k, o) in piece.iter_mut().enumerate() {
                let row = &x[(start + k) * count..(start + k + 1) * count];
                let acc = row.iter().enumerate().fold(fold.init(), |acc, (i, &v)| fold.fold(acc, v, i));
                *o = fold.finish(acc, count);
            }
        });
    } else {
        columns(fold, x, count, inner, out);
    }
    Ok(())
}

/// Outputs in groups of this many consecutive columns share each read row.
const GROUP: usize = 64;

/// The `(A, R, B)` layout: `out[a, b]` folds `x[a, r, b]` over `r`.
fn columns<F: Fold>(fold: &F, x: &[F::In], count: usize, inner: usize, out: &mut [F::Out]) {
    par_pieces(out, |start, piece| {
        let mut done = 0;
        while done < piece.len() {
            let position = start + done;
            let (a, b) = (position / inner, position % inner);
            let width = (inner - b).min(GROUP).min(piece.len() - done);
            let mut acc = [fold.init(); GROUP];
            let base = a * count * inner + b;
            for r in 0..count {
                let row = &x[base + r * inner..base + r * inner + width];
                for (slot, &v) in acc[..width].iter_mut().zip(row) {
                    *slot = fold.fold(*slot, v, r);
                }
            }
            for (o, &slot) in piece[done..done + width].iter_mut().zip(&acc[..width]) {
                *o = fold.finish(slot, count);
            }
            done += width;
        }
    });
}

/// Any set of reduced axes: an odometer over them for each output.
fn general<F: Fold>(
    fold: &F,
    x: &[F::In],
    shape: &[i64],
    strides: &[i64],
    reduced: &[bool],
    count: usize,
    out: &mut [F::Out],
) {
    let pick = |want: bool| -> Vec<(usize, usize)> {
        shape
            .iter()
            .zip(strides)
            .zip(reduced)
            .filter(|(_, &r)| r == want)
            .map(|((&e, &s), _)| (e as usize, s as usize))
            .collect()
    };
    let (kept, folded) = (pick(false), pick(true));
    par_pieces(out, |start, piece| {
        let mut index = vec![0usize; folded.len()];
        for (k, o) in piece.iter_mut().enumerate() {
            let mut rest = start + k;
            let mut base = 0;
            for &(extent, stride) in kept.iter().rev() {
                base += (rest % extent) * stride;
                rest /= extent;
            }
            index.iter_mut().for_each(|i| *i = 0);
            let mut acc = fold.init();
            for i in 0..count {
                let offset: usize = index.iter().zip(&folded).map(|(&j, &(_, s))| j * s).sum();
                acc = fold.fold(acc, x[base + offset], i);
                for axis in (0..folded.len()).rev() {
                    index[axis] += 1;
                    if index[axis] < folded[axis].0 {
                        break;
                    }
                    index[axis] = 0;
                }
            }
            *o = fold.finish(acc, count);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::spec::reduce::normalize_axes;

    /// Records the reduced elements of each output, in order.
    struct Trace;
    impl Fold for Trace {
        type In = u32;
        type Acc = u64;
        type Out = u64;
        fn init(&self) -> u64 {
            0
        }
        fn fold(&self, acc: u64, x: u32, _: usize) -> u64 {
            acc * 100 + u64::from(x)
        }
        fn finish(&self, acc: u64, _: usize) -> u64 {
            acc
        }
    }

    #[test]
    fn every_layout_folds_in_row_major_order() {
        let x: Vec<u32> = (0..24).collect();
        let shape = [2, 3, 4];
        // rows (last axis), a middle block (axis 1), and a split set (axes 0 and 2)
        for (reduced, expected) in [
            (vec![false, false, true], vec![10203, 4050607, 8091011, 12131415, 16171819, 20212223]),
            (vec![false, true, false], vec![408, 10509, 20610, 30711, 121620, 131721, 141822, 151923]),
            (vec![true, false, true], vec![1020312131415, 405060716171819, 809101120212223]),
        ] {
            let mut out = vec![0u64; expected.len()];
            reduce(&Trace, &x, &shape, &reduced, &mut out).unwrap();
            assert_eq!(out, expected, "{reduced:?}");
        }
        assert_eq!(normalize_axes("sum", Some(&[-1, 0]), 3).unwrap(), vec![true, false, true]);
        assert!(normalize_axes("sum", Some(&[1, -2]), 3).unwrap_err().to_string().contains("twice"));
        assert!(normalize_axes("sum", Some(&[3]), 3).is_err());
    }
}
