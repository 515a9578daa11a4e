//! The matrix product under every matmul-like kernel: batches of `m × k` by `k × n`
//! products, float32 and float64 through the `gemm` crate or `faer`'s kernels (see
//! [`float_product`]), the complex dtypes through `gemm`, the integers by a row loop in
//! wrapping arithmetic; each operand read through its own strides (no copy of transposed or
//! narrowed inputs), batch dims broadcast with stride 0.

use crate::settings::{threads, tiling};
use crate::tensor::Complex;
use gemm::Parallelism;
use rayon::prelude::*;

/// Per-matrix work (m·n·k) below which a batch runs one matrix per task instead of splitting
/// each matrix over the pool.
const SMALL_PRODUCT: usize = 1 << 18;

/// A matrix operand: the address of element (0, 0) of batch 0, its row and column strides,
/// and one stride per batch dim of the product (0 where the operand is broadcast), all in
/// elements.
#[derive(Clone, Debug)]
pub struct Operand<T = f32> {
    /// Element (0, 0) of the first matrix.
    pub ptr: *const T,
    /// Elements between rows.
    pub row_stride: isize,
    /// Elements between columns.
    pub col_stride: isize,
    /// Elements between consecutive matrices along each batch dim of the product.
    pub batch_strides: Vec<isize>,
}

// SAFETY: an operand is only read, by every task of one launch, while the launch holds its
// inputs alive.
unsafe impl<T> Sync for Operand<T> {}
unsafe impl<T> Send for Operand<T> {}

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
fn fold<T: Copy>(dims: &Dims, a: &Operand<T>, b: &Operand<T>) -> Option<(Dims, Operand<T>, Operand<T>)> {
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
pub struct Matrix<T> {
    /// Element (0, 0).
    pub ptr: *const T,
    /// Elements between rows.
    pub row_stride: isize,
    /// Elements between columns.
    pub col_stride: isize,
}

impl<T> Clone for Matrix<T> {
    fn clone(&self) -> Matrix<T> {
        *self
    }
}

impl<T> Copy for Matrix<T> {}

// SAFETY: as the operand's: only read, while the launch holds its inputs alive.
unsafe impl<T> Sync for Matrix<T> {}
unsafe impl<T> Send for Matrix<T> {}

impl<T> Matrix<T> {
    /// The matrix from row `row` on.
    pub fn rows_from(self, row: usize) -> Matrix<T> {
        Matrix { ptr: self.ptr.wrapping_offset(row as isize * self.row_stride), ..self }
    }

    /// The transposed view.
    pub fn transposed(self) -> Matrix<T> {
        Matrix { ptr: self.ptr, row_stride: self.col_stride, col_stride: self.row_stride }
    }

    /// Element `(i, j)`.
    ///
    /// # Safety
    /// `(i, j)` must lie inside the matrix.
    unsafe fn at(self, i: usize, j: usize) -> T
    where
        T: Copy,
    {
        // SAFETY: the caller keeps (i, j) inside the matrix.
        unsafe { *self.ptr.offset(i as isize * self.row_stride + j as isize * self.col_stride) }
    }
}

impl<T> Operand<T> {
    /// Matrix `index` (row-major over `batch`) of the operand.
    fn matrix(&self, index: usize, batch: &[usize]) -> Matrix<T> {
        Matrix {
            ptr: self.ptr.wrapping_offset(batch_offset(index, batch, &self.batch_strides)),
            row_stride: self.row_stride,
            col_stride: self.col_stride,
        }
    }
}

/// An element a product runs on: float32, float64, complex64 and complex128 through `gemm`
/// (complex products unconjugated), the integers through
/// a row loop that wraps as the dtype's arithmetic does.
pub trait Entry: Copy + Send + Sync + 'static {
    /// One `m × k` by `k × n` product into the row-major `dst` (`m·n` values); with
    /// `accumulate` the product is added to what `dst` holds (a bias), otherwise it replaces it.
    ///
    /// # Safety
    /// `a` and `b` must address `m × k` and `k × n` readable matrices.
    unsafe fn product(
        dims: &Dims,
        a: Matrix<Self>,
        b: Matrix<Self>,
        dst: &mut [Self],
        accumulate: bool,
        parallelism: Parallelism,
    );
}

/// float32 and float64: the products [`float_product`] serves.
pub trait Real: Entry + faer::traits::RealField + From<f32> {
    /// Runs the product through [`super::rows_dot`] where it serves the element type, the
    /// layout and the size (float32, 4 to 32 rows of `a` and `b`'s columns rows of a transposed
    /// weight, both contiguous in depth, AVX-512); says whether it did.
    ///
    /// # Safety
    /// As [`float_product`].
    #[allow(clippy::too_many_arguments)]
    unsafe fn few_rows(
        _dims: (usize, usize, usize),
        _a: Matrix<Self>,
        _b: Matrix<Self>,
        _dst: *mut Self,
        _accumulate: bool,
        _scale: Self,
        _parallelism: Parallelism,
    ) -> bool {
        false
    }
}

impl Real for f32 {
    unsafe fn few_rows(
        (m, n, k): (usize, usize, usize),
        a: Matrix<f32>,
        b: Matrix<f32>,
        dst: *mut f32,
        accumulate: bool,
        scale: f32,
        parallelism: Parallelism,
    ) -> bool {
        let fits = (4..=super::rows_dot::MAX_ROWS).contains(&m)
            && k > 0
            && a.col_stride == 1
            && b.row_stride == 1
            && a.row_stride >= 0
            && b.col_stride >= 0
            && super::rows_dot::available();
        if fits {
            let parallel = !matches!(parallelism, Parallelism::None);
            // SAFETY: as the caller guarantees; the checks above are the kernel's layout, and
            // available() its CPU.
            unsafe {
                super::rows_dot::product(
                    (m, n, k),
                    (a.ptr, a.row_stride as usize),
                    (b.ptr, b.col_stride as usize),
                    dst,
                    accumulate,
                    scale,
                    parallel,
                )
            };
        }
        fits
    }
}

impl Real for f64 {}

/// `dst = scale · a · b`, or `dst += scale · a · b` with `accumulate`, for `a` `m × k` and `b`
/// `k × n` into the row-major `dst` (row stride `n`). A few rows by a transposed float32 weight
/// go to [`super::rows_dot`] (no packing: [`Real::few_rows`]). Where `b`'s columns are strided (a
/// transposed factor: `linear`'s weight `[out, in]`, attention's keys) faer's kernels multiply:
/// `gemm`'s AVX-512 packing of such a factor ran 1.1–2.7× slower than faer's at the shapes an
/// encoder runs (docs/BENCHMARKS.md); elsewhere `gemm`. Either way each output element is one
/// dot product in a fixed order whatever the thread count (faer's result was checked bit for
/// bit against its one-thread result), so a layout always gives the same bits.
///
/// # Safety
/// `a` and `b` must address readable `m × k` and `k × n` matrices, `dst` `m·n` writable values.
#[allow(clippy::too_many_arguments)]
pub unsafe fn float_product<T: Real>(
    (m, n, k): (usize, usize, usize),
    a: Matrix<T>,
    b: Matrix<T>,
    dst: *mut T,
    accumulate: bool,
    scale: T,
    parallelism: Parallelism,
) {
    // SAFETY: as the caller guarantees.
    if unsafe { T::few_rows((m, n, k), a, b, dst, accumulate, scale, parallelism) } {
        return;
    }
    if n > 1 && k > 0 && b.col_stride != 1 {
        let par = match parallelism {
            Parallelism::None => faer::Par::Seq,
            Parallelism::Rayon(threads) => faer::Par::rayon(threads),
        };
        // SAFETY: the caller guarantees the operands and the destination (exclusive, m·n).
        let (a, b, dst) = unsafe {
            (
                faer::MatRef::from_raw_parts(a.ptr, m, k, a.row_stride, a.col_stride),
                faer::MatRef::from_raw_parts(b.ptr, k, n, b.row_stride, b.col_stride),
                faer::MatMut::from_raw_parts_mut(dst, m, n, n as isize, 1),
            )
        };
        let accum = if accumulate { faer::Accum::Add } else { faer::Accum::Replace };
        faer::linalg::matmul::matmul(dst, accum, a, b, scale, par);
        return;
    }
    // SAFETY: as the caller guarantees.
    unsafe { gemm_product((m, n, k), a, b, dst, accumulate, scale, parallelism, T::from(0.0), T::from(1.0)) }
}

macro_rules! real_entry {
    ($($t:ty),*) => {$(
        impl Entry for $t {
            unsafe fn product(dims: &Dims, a: Matrix<$t>, b: Matrix<$t>, dst: &mut [$t], accumulate: bool, parallelism: Parallelism) {
                // SAFETY: as the caller guarantees; dst holds m·n values.
                unsafe { float_product((dims.m, dims.n, dims.k), a, b, dst.as_mut_ptr(), accumulate, 1.0, parallelism) }
            }
        }
    )*};
}

real_entry!(f32, f64);

macro_rules! gemm_entry {
    ($($t:ty => $zero:expr, $one:expr);* $(;)?) => {$(
        impl Entry for $t {
            unsafe fn product(dims: &Dims, a: Matrix<$t>, b: Matrix<$t>, dst: &mut [$t], accumulate: bool, parallelism: Parallelism) {
                // SAFETY: as the caller guarantees.
                unsafe { gemm_product((dims.m, dims.n, dims.k), a, b, dst.as_mut_ptr(), accumulate, $one, parallelism, $zero, $one) }
            }
        }
    )*};
}

gemm_entry!(
    Complex<f32> => Complex::new(0.0, 0.0), Complex::new(1.0, 0.0);
    Complex<f64> => Complex::new(0.0, 0.0), Complex::new(1.0, 0.0);
);

macro_rules! int_entry {
    ($($t:ty),*) => {$(
        impl Entry for $t {
            unsafe fn product(dims: &Dims, a: Matrix<$t>, b: Matrix<$t>, dst: &mut [$t], accumulate: bool, parallelism: Parallelism) {
                let row = |(i, out): (usize, &mut [$t])| {
                    if !accumulate {
                        out.fill(0);
                    }
                    for p in 0..dims.k {
                        // SAFETY: i < m and p < k lie inside a; p < k and j < n inside b.
                        let x = unsafe { a.at(i, p) };
                        for (j, o) in out.iter_mut().enumerate() {
                            // SAFETY: as above.
                            let y = unsafe { b.at(p, j) };
                            *o = o.wrapping_add(x.wrapping_mul(y));
                        }
                    }
                };
                match parallelism {
                    Parallelism::None => dst.chunks_mut(dims.n).enumerate().for_each(row),
                    _ => dst.par_chunks_mut(dims.n).enumerate().for_each(row),
                }
            }
        }
    )*};
}

int_entry!(i8, i16, i32, i64, u8, u16, u32, u64);

/// `gemm`'s product of one matrix, `dst (+)= scale · a · b` (`zero` and `one` of the element
/// type).
///
/// # Safety
/// As [`float_product`].
#[allow(clippy::too_many_arguments)]
unsafe fn gemm_product<T: Entry>(
    (m, n, k): (usize, usize, usize),
    a: Matrix<T>,
    b: Matrix<T>,
    dst: *mut T,
    accumulate: bool,
    scale: T,
    parallelism: Parallelism,
    zero: T,
    one: T,
) {
    if k == 0 {
        if !accumulate {
            // SAFETY: dst holds m·n values.
            unsafe { std::slice::from_raw_parts_mut(dst, m * n) }.fill(zero);
        }
        return;
    }
    // SAFETY: the caller guarantees the operands; dst is m × n row-major and exclusive.
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            dst,
            1,
            n as isize,
            accumulate,
            a.ptr,
            a.col_stride,
            a.row_stride,
            b.ptr,
            b.col_stride,
            b.row_stride,
            one,
            scale,
            false,
            false,
            false,
            parallelism,
        );
    }
}

/// `dst[batch] (+)= a[batch] · b[batch]` for every matrix of the batch, `dst` row-major
/// `[batch.., m, n]`. A product of at most the tiling table's `host_product_inline_work`
/// multiply-adds runs on the calling thread; above it, large matrices are split over the
/// pool and a batch of small ones runs one matrix per task. Each output element is one dot product in gemm's fixed order, so the
/// result does not depend on the thread count.
///
/// # Safety
/// Every matrix the operands address (over the batch, with their strides) must be readable.
pub unsafe fn batched<T: Entry>(dims: &Dims, a: &Operand<T>, b: &Operand<T>, dst: &mut [T], accumulate: bool) {
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
    let one = |index: usize, out: &mut [T], parallelism: Parallelism| {
        let (ma, mb) = (a.matrix(index, &dims.batch), b.matrix(index, &dims.batch));
        // SAFETY: the caller guarantees every matrix of the batch is readable.
        unsafe { T::product(dims, ma, mb, out, accumulate, parallelism) }
    };
    let work = size.saturating_mul(dims.k.max(1));
    if work.saturating_mul(dims.count()) <= tiling::tiling_table().host_product_inline_work {
        // small enough that handing it to the pool costs more than it saves
        for (i, out) in dst.chunks_mut(size).enumerate() {
            one(i, out, Parallelism::None);
        }
        return;
    }
    threads::install(|| {
        if dims.count() > 1 && work <= SMALL_PRODUCT {
            dst.par_chunks_mut(size).enumerate().for_each(|(i, out)| one(i, out, Parallelism::None));
        } else {
            let parallelism = Parallelism::Rayon(threads::threads());
            dst.chunks_mut(size).enumerate().for_each(|(i, out)| one(i, out, parallelism));
        }
    });
}
