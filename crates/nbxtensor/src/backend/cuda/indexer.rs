//! Operands of one launch addressed over a common shape: the `Indexer` struct of
//! `kernels/indexer.cuh` (placed before each elementwise and gather source), passed by value.
//!
//! Dims are listed innermost first. Size-1 dims are dropped and neighbouring dims merged
//! wherever every operand's strides allow it, so that a broadcast of `[N, D]` with `[D]`
//! addresses two dims and any contiguous layout one: the kernels then divide once per element
//! at most.

use super::source::MAX_DIMS;
use crate::kernel::{KernelError, Result};
use crate::shape;
use crate::tensor::Tensor;

/// The most operands one indexer addresses (`NBX_OPERANDS`).
pub const OPERANDS: usize = 3;

/// The `Indexer` of `kernels/indexer.cuh`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Indexer {
    /// Dims used (at least 1).
    pub ndim: i32,
    /// Extents, innermost first.
    pub shape: [i64; MAX_DIMS],
    /// Each operand's strides in elements, innermost first (0 on a broadcast dim).
    pub strides: [[i64; MAX_DIMS]; OPERANDS],
    /// Each operand's offset in elements.
    pub offset: [i64; OPERANDS],
}

/// One operand over the common shape: its strides (row-major order, 0 where broadcast) and
/// its offset, in elements.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Operand {
    /// Strides over the common shape.
    pub strides: Vec<i64>,
    /// Offset of the first element.
    pub offset: i64,
}

impl Operand {
    /// `tensor` seen as `shape` by numpy's broadcasting (stride 0 on stretched or added dims).
    pub fn broadcast(op: &str, tensor: &Tensor, shape: &[i64]) -> Result<Operand> {
        let strides = shape::broadcast_strides(tensor.shape(), tensor.strides(), shape)
            .map_err(|e| KernelError::Invalid(format!("{op}: {e}")))?;
        Ok(Operand { strides, offset: tensor.offset() })
    }

    /// A contiguous buffer of `shape` starting `offset` elements in.
    pub fn contiguous(op: &str, shape: &[i64], offset: i64) -> Result<Operand> {
        let strides = shape::contiguous_strides(shape).map_err(|e| KernelError::Invalid(format!("{op}: {e}")))?;
        Ok(Operand { strides, offset })
    }
}

/// One dim while merging: its extent and each operand's stride.
#[derive(Clone, Copy)]
struct Dim {
    size: i64,
    strides: [i64; OPERANDS],
    axis: bool,
}

impl Indexer {
    /// The indexer of `operands` (at most [`OPERANDS`]) over `shape`, dims merged; refused
    /// (naming `op`) when more than [`MAX_DIMS`] dims remain.
    pub fn new(op: &str, shape: &[i64], operands: &[Operand]) -> Result<Indexer> {
        Ok(Indexer::build(op, shape, operands, None)?.0)
    }

    /// As [`Indexer::new`], keeping dim `axis` (row-major numbering) unmerged; also returns its
    /// position in the indexer's innermost-first dims.
    pub fn with_axis(op: &str, shape: &[i64], operands: &[Operand], axis: usize) -> Result<(Indexer, i32)> {
        let (indexer, position) = Indexer::build(op, shape, operands, Some(axis))?;
        let position = position.ok_or_else(|| KernelError::Invalid(format!("{op}: axis {axis} of {shape:?}")))?;
        Ok((indexer, position))
    }

    fn build(op: &str, shape: &[i64], operands: &[Operand], axis: Option<usize>) -> Result<(Indexer, Option<i32>)> {
        if operands.len() > OPERANDS || operands.iter().any(|o| o.strides.len() != shape.len()) {
            return Err(KernelError::Invalid(format!(
                "{op}: an indexer takes at most {OPERANDS} operands of {shape:?}"
            )));
        }
        let mut dims: Vec<Dim> = Vec::with_capacity(shape.len());
        for d in (0..shape.len()).rev() {
            let is_axis = axis == Some(d);
            if shape[d] == 1 && !is_axis {
                continue; // a size-1 dim addresses nothing
            }
            let mut strides = [0; OPERANDS];
            for (k, operand) in operands.iter().enumerate() {
                strides[k] = operand.strides[d];
            }
            let dim = Dim { size: shape[d], strides, axis: is_axis };
            match dims.last_mut() {
                // the outer dim continues the inner one for every operand: one dim
                Some(inner)
                    if !inner.axis
                        && !is_axis
                        && (0..OPERANDS).all(|k| dim.strides[k] == inner.strides[k] * inner.size) =>
                {
                    inner.size *= dim.size;
                }
                _ => dims.push(dim),
            }
        }
        if dims.is_empty() {
            dims.push(Dim { size: 1, strides: [0; OPERANDS], axis: false });
        }
        if dims.len() > MAX_DIMS {
            return Err(KernelError::Invalid(format!(
                "{op}: a CUDA kernel addresses at most {MAX_DIMS} dims; {shape:?} keeps {} after merging",
                dims.len()
            )));
        }
        let mut indexer = Indexer { ndim: dims.len() as i32, ..Indexer::default() };
        for (d, dim) in dims.iter().enumerate() {
            indexer.shape[d] = dim.size;
            for k in 0..OPERANDS {
                indexer.strides[k][d] = dim.strides[k];
            }
        }
        for (k, operand) in operands.iter().enumerate() {
            indexer.offset[k] = operand.offset;
        }
        Ok((indexer, dims.iter().position(|d| d.axis).map(|p| p as i32)))
    }

    /// The dims used, innermost first.
    pub fn dims(&self) -> std::ops::Range<usize> {
        0..self.ndim as usize
    }

    /// Whether operand `k` can be read in 16-byte words of `elements_per_word` elements along
    /// the innermost dim: stride 1 there, every other stride and the offset whole words, and
    /// its base address (`base`, bytes) 16-byte aligned.
    pub fn rows_of_words(&self, k: usize, elements_per_word: i64, base: u64) -> bool {
        self.strides[k][0] == 1
            && base % 16 == 0
            && self.offset[k] % elements_per_word == 0
            && self.dims().skip(1).all(|d| self.strides[k][d] % elements_per_word == 0)
    }

    /// The same addressing in units of `elements_per_word` elements (the innermost extent and
    /// every stride and offset divided by it; the caller checked they are whole words).
    pub fn in_words(&self, operands: usize, elements_per_word: i64) -> Indexer {
        let mut words = *self;
        words.shape[0] /= elements_per_word;
        for k in 0..operands {
            words.offset[k] /= elements_per_word;
            for d in self.dims() {
                words.strides[k][d] = if d == 0 { self.strides[k][0] } else { self.strides[k][d] / elements_per_word };
            }
        }
        words
    }
}

/// Whether row-major indices below `n` fit in 32 bits (the kernels' `narrow` flag).
pub fn narrow(n: i64) -> i32 {
    i32::from(n <= i64::from(u32::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn operand(strides: &[i64], offset: i64) -> Operand {
        Operand { strides: strides.to_vec(), offset }
    }

    #[test]
    fn contiguous_operands_merge_into_one_dim() {
        let c = operand(&[12, 4, 1], 0);
        let ix = Indexer::new("add", &[2, 3, 4], &[c.clone(), operand(&[12, 4, 1], 5)]).unwrap();
        assert_eq!((ix.ndim, ix.shape[0], ix.strides[0][0], ix.strides[1][0], ix.offset[1]), (1, 24, 1, 1, 5));
    }

    #[test]
    fn a_broadcast_row_keeps_two_dims_innermost_first() {
        // [N, D] + [D]: the row operand has stride 0 along N
        let ix = Indexer::new("add", &[5, 8], &[operand(&[8, 1], 0), operand(&[0, 1], 0)]).unwrap();
        assert_eq!(ix.ndim, 2);
        assert_eq!(&ix.shape[..2], &[8, 5]);
        assert_eq!(&ix.strides[0][..2], &[1, 8]);
        assert_eq!(&ix.strides[1][..2], &[1, 0]);
        // size-1 dims vanish, and a scalar operand (strides 0) continues any dim
        let ix = Indexer::new("add", &[3, 1, 4], &[operand(&[4, 4, 1], 0), operand(&[0, 0, 0], 2)]).unwrap();
        assert_eq!((ix.ndim, ix.shape[0], ix.offset[1]), (1, 12, 2));
    }

    #[test]
    fn transposes_stay_two_dims_and_scalars_one() {
        let ix = Indexer::new("copy", &[3, 4], &[operand(&[1, 3], 0), operand(&[4, 1], 0)]).unwrap();
        assert_eq!((ix.ndim, &ix.shape[..2], &ix.strides[0][..2]), (2, &[4, 3][..], &[3, 1][..]));
        let ix = Indexer::new("copy", &[], &[operand(&[], 7)]).unwrap();
        assert_eq!((ix.ndim, ix.shape[0], ix.offset[0]), (1, 1, 7));
    }

    #[test]
    fn the_axis_is_kept_apart_even_of_size_one() {
        let (ix, at) = Indexer::with_axis("index_select", &[2, 1, 6], &[operand(&[6, 6, 1], 0)], 1).unwrap();
        assert_eq!((ix.ndim, at), (3, 1));
        assert_eq!(&ix.shape[..3], &[6, 1, 2]);
    }

    #[test]
    fn words_divide_the_inner_dim_and_the_outer_strides() {
        let ix = Indexer::new("copy", &[3, 8], &[operand(&[16, 1], 8), operand(&[8, 1], 0)]).unwrap();
        assert!(ix.rows_of_words(0, 4, 64) && ix.rows_of_words(1, 4, 0));
        assert!(!ix.rows_of_words(0, 4, 8), "a misaligned base");
        assert!(!ix.rows_of_words(0, 16, 0), "a stride that is not whole words");
        let words = ix.in_words(2, 4);
        assert_eq!((words.shape[0], words.strides[0][1], words.offset[0], words.strides[0][0]), (2, 4, 2, 1));
    }

    #[test]
    fn too_many_dims_are_refused_by_name() {
        let shape = [2i64; 9];
        let strides: Vec<i64> = (0..9).map(|d| 1 << (2 * (8 - d))).collect();
        let err = Indexer::new("add", &shape, &[operand(&strides, 0)]).unwrap_err().to_string();
        assert!(err.starts_with("add: a CUDA kernel addresses at most 8 dims"), "{err}");
        assert_eq!(narrow(1 << 32), 0);
        assert_eq!(narrow(7), 1);
    }
}
