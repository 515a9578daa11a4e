//! Elementwise loops over broadcast operands (numpy's rules): the output is walked in
//! row-major runs along its last dim, each operand addressed by its broadcast strides (0 on a
//! stretched dim). Contiguous operands of the output's shape take a plain zipped loop.

use super::buffers::{par_pieces, read};
use crate::kernel::{KernelError, Result};
use crate::shape;
use crate::tensor::{Element, Tensor};

/// The element strides of a contiguous tensor of `shape` seen as `target`.
fn strides_to(shape: &[i64], target: &[i64]) -> Result<Vec<i64>> {
    let contiguous = shape::contiguous_strides(shape).map_err(|e| KernelError::Invalid(e.to_string()))?;
    shape::broadcast_strides(shape, &contiguous, target).map_err(|e| KernelError::Invalid(e.to_string()))
}

/// Calls `body(position, run, offsets)` for the runs along the last dim of `shape` that cover
/// the row-major positions `start .. start + len`; `offsets` are each operand's element
/// offsets at the run's first position.
fn runs<const N: usize>(
    shape: &[i64],
    strides: &[Vec<i64>; N],
    start: usize,
    len: usize,
    mut body: impl FnMut(usize, usize, [usize; N]),
) {
    if len == 0 {
        return;
    }
    let Some(&inner) = shape.last() else {
        body(0, 1, [0; N]);
        return;
    };
    let inner = inner as usize;
    let mut index = vec![0usize; shape.len()];
    let mut rest = start;
    for axis in (0..shape.len()).rev() {
        index[axis] = rest % shape[axis] as usize;
        rest /= shape[axis] as usize;
    }
    let mut done = 0;
    while done < len {
        let run = (inner - index[shape.len() - 1]).min(len - done);
        let offsets =
            std::array::from_fn(|k| index.iter().zip(&strides[k]).map(|(&i, &s)| i as i64 * s).sum::<i64>() as usize);
        body(done, run, offsets);
        done += run;
        // carry the last dim's advance into the outer dims
        let mut axis = shape.len() - 1;
        index[axis] += run;
        while index[axis] == shape[axis] as usize && axis > 0 {
            index[axis] = 0;
            axis -= 1;
            index[axis] += 1;
        }
    }
}

/// `out[i] = f(a[i], b[i])` over the broadcast of `a` and `b` (whose shape `out` has), on the
/// pool. Non-contiguous operands are gathered first.
pub fn zip2<A: Element, B: Element, O: Element>(
    a: &Tensor,
    b: &Tensor,
    out_shape: &[i64],
    out: &mut [O],
    f: impl Fn(A, B) -> O + Sync,
) -> Result<()> {
    let (x, y) = (read::<A>(a)?, read::<B>(b)?);
    if a.shape() == out_shape && b.shape() == out_shape {
        par_pieces(out, |start, piece| {
            for ((o, &p), &q) in piece.iter_mut().zip(&x[start..]).zip(&y[start..]) {
                *o = f(p, q);
            }
        });
        return Ok(());
    }
    let strides = [strides_to(a.shape(), out_shape)?, strides_to(b.shape(), out_shape)?];
    let inner = |k: usize| strides[k].last().copied().unwrap_or(0);
    let (sa, sb) = (inner(0), inner(1));
    par_pieces(out, |start, piece| {
        let len = piece.len();
        runs(out_shape, &strides, start, len, |at, run, [oa, ob]| {
            let o = &mut piece[at..at + run];
            match (sa, sb) {
                (1, 1) => {
                    o.iter_mut().zip(&x[oa..oa + run]).zip(&y[ob..ob + run]).for_each(|((o, &p), &q)| *o = f(p, q))
                }
                (1, 0) => o.iter_mut().zip(&x[oa..oa + run]).for_each(|(o, &p)| *o = f(p, y[ob])),
                (0, 1) => o.iter_mut().zip(&y[ob..ob + run]).for_each(|(o, &q)| *o = f(x[oa], q)),
                _ => o.iter_mut().enumerate().for_each(|(i, o)| {
                    *o = f(x[oa + i * sa as usize], y[ob + i * sb as usize]);
                }),
            }
        });
    });
    Ok(())
}

/// `out[i] = f(a[i], b[i], c[i])` over the broadcast of three operands, on the pool.
pub fn zip3<A: Element, B: Element, C: Element, O: Element>(
    inputs: [&Tensor; 3],
    out_shape: &[i64],
    out: &mut [O],
    f: impl Fn(A, B, C) -> O + Sync,
) -> Result<()> {
    let (x, y, z) = (read::<A>(inputs[0])?, read::<B>(inputs[1])?, read::<C>(inputs[2])?);
    let strides = [
        strides_to(inputs[0].shape(), out_shape)?,
        strides_to(inputs[1].shape(), out_shape)?,
        strides_to(inputs[2].shape(), out_shape)?,
    ];
    let inner: [usize; 3] = std::array::from_fn(|k| strides[k].last().copied().unwrap_or(0) as usize);
    par_pieces(out, |start, piece| {
        runs(out_shape, &strides, start, piece.len(), |at, run, [ox, oy, oz]| {
            for (i, o) in piece[at..at + run].iter_mut().enumerate() {
                *o = f(x[ox + i * inner[0]], y[oy + i * inner[1]], z[oz + i * inner[2]]);
            }
        });
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_cover_a_piece_with_broadcast_offsets() {
        // a (2, 3) output from a (2, 1) and a (3,) operand, positions 2..6
        let strides = [strides_to(&[2, 1], &[2, 3]).unwrap(), strides_to(&[3], &[2, 3]).unwrap()];
        let mut seen = Vec::new();
        runs(&[2, 3], &strides, 2, 4, |at, run, offsets| seen.push((at, run, offsets)));
        assert_eq!(seen, vec![(0, 1, [0, 2]), (1, 3, [1, 0])]);
        runs(&[0, 3], &strides, 0, 0, |_, _, _| panic!("no run in an empty output"));
    }

    #[test]
    fn zip2_broadcasts_rows_and_columns() {
        let a = Tensor::from_vec(vec![1i32, 2], &[2, 1]).unwrap();
        let b = Tensor::from_vec(vec![10i32, 20, 30], &[3]).unwrap();
        let mut out = vec![0i32; 6];
        zip2(&a, &b, &[2, 3], &mut out, |p: i32, q: i32| p + q).unwrap();
        assert_eq!(out, vec![11, 21, 31, 12, 22, 32]);
    }
}
