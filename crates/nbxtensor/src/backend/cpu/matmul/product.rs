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

/// Columns of a panel when a pooled product splits its columns among the threads (the tiling
/// table's `host_product_column_split_work`): a multiple of every microkernel's width.
const COLUMN_PANEL: usize = 48;

/// A destination pointer shared by the tasks of one product, each writing its own columns.
#[derive(Clone, Copy)]
struct Shared<T>(*mut T);
// SAFETY: the tasks write disjoint columns of the destination, which outlives them.
unsafe impl<T> Send for Shared<T> {}
unsafe impl<T> Sync for Shared<T> {}

/// `dst (+)= scale · a · b` through faer, `dst` row-major `m × n` with row stride `dst.1`.
///
/// # Safety
/// As [`float_product`], `dst` addressing `m` rows of `n` values `dst.1` apart.
unsafe fn faer_product<T: Real>(
    (m, n, k): (usize, usize, usize),
    a: Matrix<T>,
    b: Matrix<T>,
    dst: (*mut T, usize),
    accumulate: bool,
    scale: T,
    par: faer::Par,
) {
    // SAFETY: the caller guarantees the operands and the destination (exclusive).
    let (a, b, dst) = unsafe {
        (
            faer::MatRef::from_raw_parts(a.ptr, m, k, a.row_stride, a.col_stride),
            faer::MatRef::from_raw_parts(b.ptr, k, n, b.row_stride, b.col_stride),
            faer::MatMut::from_raw_parts_mut(dst.0, m, n, dst.1 as isize, 1),
        )
    };
    let accum = if accumulate { faer::Accum::Add } else { faer::Accum::Replace };
    faer::linalg::matmul::matmul(dst, accum, a, b, scale, par);
}

/// float32 and float64: the products [`float_product`] serves.
pub trait Real: Entry + faer::traits::RealField + From<f32> {
    /// Runs the product through [`super::rows_dot`] where it serves the element type, the
    /// layout and the size (float32, 4 to `rows_dot::MAX_ROWS` rows of `a` and `b`'s columns
    /// rows of a transposed weight, both contiguous in depth, AVX-512); says whether it did.
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
        let threads = match parallelism {
            Parallelism::None => 1,
            Parallelism::Rayon(threads) => threads,
        };
        let split_work = tiling::tiling_table().host_product_column_split_work;
        if threads > 1 && m.saturating_mul(n).saturating_mul(k) <= split_work && n >= COLUMN_PANEL * threads {
            // a product this small spends much of faer's parallel run at its barriers: each
            // thread takes whole columns instead, one sequential product each
            let panels = threads::split(n.div_ceil(COLUMN_PANEL), threads);
            let dst = Shared(dst);
            threads::install(|| {
                panels.into_par_iter().for_each(|panel| {
                    let (a, b, dst) = (a, b, dst);
                    let (first, last) = (panel.start * COLUMN_PANEL, (panel.end * COLUMN_PANEL).min(n));
                    let columns = Matrix { ptr: b.ptr.wrapping_offset(first as isize * b.col_stride), ..b };
                    // SAFETY: as the caller guarantees; the panels are disjoint columns of dst.
                    unsafe {
                        faer_product(
                            (m, last - first, k),
                            a,
                            columns,
                            (dst.0.add(first), n),
                            accumulate,
                            scale,
                            faer::Par::Seq,
                        )
                    }
                })
            });
            return;
        }
        let par = if threads > 1 { faer::Par::rayon(threads) } else { faer::Par::Seq };
        // SAFETY: as the caller guarantees.
        unsafe { faer_product((m, n, k), a, b, (dst, n), accumulate, scale, par) };
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A transposed weight (`b`'s columns strided, as `linear`'s) through faer: one thread, the
    /// pool's column panels (a ragged last one) and faer's own parallel run (too few columns
    /// for panels) all give the float64 reference within rounding and the same bits.
    #[test]
    fn column_panels_match_one_thread_bit_for_bit() {
        let value = |s: usize| ((s * 2654435761) % 1000) as f32 / 500.0 - 1.0;
        for (m, n, k) in [(40, 200, 70), (33, 5 * COLUMN_PANEL + 7, 129), (40, COLUMN_PANEL + 3, 64)] {
            let a: Vec<f32> = (0..m * k).map(value).collect();
            let w: Vec<f32> = (0..n * k).map(|s| value(s + 5)).collect(); // [n, k]: b = wᵀ
            let (ma, mb) = (
                Matrix { ptr: a.as_ptr(), row_stride: k as isize, col_stride: 1 },
                Matrix { ptr: w.as_ptr(), row_stride: 1, col_stride: k as isize },
            );
            for accumulate in [false, true] {
                let start: Vec<f32> = (0..m * n).map(|s| value(s + 9)).collect();
                let run = |parallelism| {
                    let mut y = start.clone();
                    // SAFETY: a is m × k, w n × k, y m × n, as the matrices address them.
                    unsafe { float_product((m, n, k), ma, mb, y.as_mut_ptr(), accumulate, 0.5f32, parallelism) };
                    y
                };
                let one = run(Parallelism::None);
                assert_eq!(one, run(Parallelism::Rayon(2)), "{m}x{n}x{k}: two threads, other bits");
                assert_eq!(one, run(Parallelism::Rayon(3)), "{m}x{n}x{k}: three threads, other bits");
                for i in 0..m {
                    for j in 0..n {
                        let dot: f64 = (0..k).map(|p| f64::from(a[i * k + p]) * f64::from(w[j * k + p])).sum();
                        let want = 0.5 * dot + if accumulate { f64::from(start[i * n + j]) } else { 0.0 };
                        let got = f64::from(one[i * n + j]);
                        assert!(
                            (got - want).abs() <= 1e-5 * (1.0 + k as f64),
                            "{m}x{n}x{k} ({i}, {j}): {got} vs {want}"
                        );
                    }
                }
            }
        }
    }
}
