//! The float32 matrix product under every matmul-like kernel: batches of `m × k` by
//! `k × n` products through the `gemm` crate, each operand read through its own strides (no
//! copy of transposed or narrowed inputs), batch dims broadcast with stride 0.

use crate::settings::threads;
use gemm::Parallelism;
use rayon::prelude::*;

/// Per-matrix work (m·n·k) below which a batch runs one matrix per task instead of splitting
/// each matrix over the pool.
const SMALL_PRODUCT: usize = 1 << 18;

/// A matrix operand: the address of element (0, 0) of batch 0, its row and column strides,
/// and one stride per batch dim of the product (0 where the operand is broadcast), all in
/// elements.
#[derive(Clone, Debug)]
pub struct Operand {
    /// Element (0, 0) of the first matrix.
    pub ptr: *const f32,
    /// Elements between rows.
    pub row_stride: isize,
    /// Elements between columns.
    pub col_stride: isize,
    /// Elements between consecutive matrices along each batch dim of the product.
    pub batch_strides: Vec<isize>,
}

// SAFETY: an operand is only read, by every task of one launch, while the launch holds its
// inputs alive.
unsafe impl Sync for Operand {}
unsafe impl Send for Operand {}

/// The sizes of a batched product: `batch` dims, then `m × k` times `k × n`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dims {
    /// The batch dims of the output.
    pub batch: Vec<usize>,
    /// Rows of the left operand and of the output.
    pub m: usize,
    /// Columns of the right operand and of the output.
    pub n: usize,
    /// The contracted extent.
    pub k: usize,
}

impl Dims {
    /// The number of matrices.
    pub fn count(&self) -> usize {
        self.batch.iter().product()
    }
}

/// The element offset of matrix `index` (row-major over `batch`) in an operand.
fn batch_offset(mut index: usize, batch: &[usize], strides: &[isize]) -> isize {
    let mut offset = 0;
    for (&size, &stride) in batch.iter().zip(strides).rev() {
        offset += (index % size) as isize * stride;
        index /= size;
    }
    offset
}

/// Folds the batch dims into the rows when the right operand is the same matrix for every
/// batch and the left operand's rows run on with one stride across batches (x·W of a
/// contiguous activation: one large product instead of many thin ones).
fn fold(dims: &Dims, a: &Operand, b: &Operand) -> Option<(Dims, Operand, Operand)> {
    if dims.batch.is_empty() || b.batch_strides.iter().zip(&dims.batch).any(|(&s, &size)| s != 0 && size > 1) {
        return None;
    }
    let mut expected = a.row_stride * dims.m as isize;
    for (&size, &stride) in dims.batch.iter().zip(&a.batch_strides).rev() {
        if size > 1 && stride != expected {
            return None;
        }
        expected *= size as isize;
    }
    let folded = Dims { batch: Vec::new(), m: dims.m * dims.count(), n: dims.n, k: dims.k };
    let a = Operand { batch_strides: Vec::new(), ..a.clone() };
    let b = Operand { batch_strides: Vec::new(), ..b.clone() };
    Some((folded, a, b))
}

/// One matrix of an operand: element (0, 0) and its row and column strides.
#[derive(Clone, Copy)]
struct Matrix {
    ptr: *const f32,
    row_stride: isize,
    col_stride: isize,
}

impl Operand {
    /// Matrix `index` (row-major over `batch`) of the operand.
    fn matrix(&self, index: usize, batch: &[usize]) -> Matrix {
        Matrix {
            ptr: self.ptr.wrapping_offset(batch_offset(index, batch, &self.batch_strides)),
            row_stride: self.row_stride,
            col_stride: self.col_stride,
        }
    }
}

/// One `m × k` by `k × n` product into the row-major `dst` (`m·n` values); with `accumulate`
/// the product is added to what `dst` holds (a bias), otherwise it replaces it.
///
/// # Safety
/// `a` and `b` must address `m × k` and `k × n` readable float32 matrices.
unsafe fn product(dims: &Dims, a: Matrix, b: Matrix, dst: &mut [f32], accumulate: bool, parallelism: Parallelism) {
    if dims.k == 0 {
        if !accumulate {
            dst.fill(0.0);
        }
        return;
    }
    // SAFETY: the caller guarantees the operands; dst is m × n row-major and exclusive.
    unsafe {
        gemm::gemm(
            dims.m,
            dims.n,
            dims.k,
            dst.as_mut_ptr(),
            1,
            dims.n as isize,
            accumulate,
            a.ptr,
            a.col_stride,
            a.row_stride,
            b.ptr,
            b.col_stride,
            b.row_stride,
            1.0,
            1.0,
            false,
            false,
            false,
            parallelism,
        );
    }
}

/// `dst[batch] (+)= a[batch] · b[batch]` for every matrix of the batch, `dst` row-major
/// `[batch.., m, n]`. Large matrices are split over the pool; a batch of small ones runs one
/// matrix per task. Each output element is one dot product in gemm's fixed order, so the
/// result does not depend on the thread count.
///
/// # Safety
/// Every matrix the operands address (over the batch, with their strides) must be readable.
pub unsafe fn batched(dims: &Dims, a: &Operand, b: &Operand, dst: &mut [f32], accumulate: bool) {
    // an empty output first: its other extents may multiply past 64 bits
    if dims.m == 0 || dims.n == 0 || dims.batch.contains(&0) {
        return;
    }
    if let Some((folded, a, b)) = fold(dims, a, b) {
        // SAFETY: the folded operands address the same elements.
        return unsafe { batched(&folded, &a, &b, dst, accumulate) };
    }
    let size = dims.m * dims.n;
    if size == 0 || dims.count() == 0 {
        return;
    }
    let one = |index: usize, out: &mut [f32], parallelism: Parallelism| {
        let (ma, mb) = (a.matrix(index, &dims.batch), b.matrix(index, &dims.batch));
        // SAFETY: the caller guarantees every matrix of the batch is readable.
        unsafe { product(dims, ma, mb, out, accumulate, parallelism) }
    };
    let work = size.saturating_mul(dims.k.max(1));
    threads::install(|| {
        if dims.count() > 1 && work <= SMALL_PRODUCT {
            dst.par_chunks_mut(size).enumerate().for_each(|(i, out)| one(i, out, Parallelism::None));
        } else {
            let parallelism = Parallelism::Rayon(threads::threads());
            dst.chunks_mut(size).enumerate().for_each(|(i, out)| one(i, out, parallelism));
        }
    });
}
