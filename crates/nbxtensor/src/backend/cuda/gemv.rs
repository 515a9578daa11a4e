//! `linear` of a few rows on the GPU (`kernels/gemv.cu`): a decode step's products, where
//! reading the weight once is the whole cost and cuBLASLt's kernels leave a third of the
//! bandwidth unused on the smaller matrices (docs/BENCHMARKS.md, the GEMV rows: 1.02–1.30× of
//! cuBLASLt at one row on the H200, slower at four, so it takes one row only). Float16 and
//! bfloat16, at most [`MAX_ROWS`] rows of x, x and the weight contiguous and 16-byte aligned, k
//! a multiple of 8; any other call goes to cuBLASLt (`blas.rs`), which serves every case.

use super::dims::{aligned16, grid_extent};
use super::{device_ptr, function, recent, Args};
use crate::dtype::DType;
use crate::kernel::{Launch, Result};
use crate::ops::spec::matmul::Product;

pub use super::source::GEMV as SOURCE;

/// The most rows of x the GEMV serves: where it was measured faster than cuBLASLt.
pub const MAX_ROWS: i64 = 1;

/// Warps a block, one output column each (`GEMV_WARPS` of the source).
const WARPS: u32 = 4;

/// Runs `linear` through the GEMV when it serves the call, and says whether it did.
pub fn linear(spec: &Product, launch: &Launch<'_>) -> Result<bool> {
    if !spec.linear || !matches!(spec.dtype, DType::Float16 | DType::Bfloat16) {
        return Ok(false);
    }
    let (x, w, y) = (&launch.inputs[0], &launch.inputs[1], &launch.outputs[0]);
    let bias = launch.inputs.get(2);
    let (Some(&k), &[n, _]) = (x.shape().last(), w.shape()) else { return Ok(false) };
    if k == 0 || n == 0 {
        return Ok(false);
    }
    let rows = x.numel() / k;
    let layouts = x.is_contiguous() && w.is_contiguous() && y.is_contiguous() && bias.is_none_or(|b| b.is_contiguous());
    if !(1..=MAX_ROWS).contains(&rows) || k % 8 != 0 || !layouts || !aligned16(&[device_ptr(x), device_ptr(w)]) {
        return Ok(false);
    }
    let f = function(y.device(), &SOURCE, format_args!("gemv_{}_{rows}", spec.dtype.launch_key()))?;
    let mut args = Args::new();
    // the weight read before the inputs are awaited when the previous op cannot have written it
    let early = recent::untouched_by_previous_op(f.context().stream_handle(), w);
    args.ptr(device_ptr(x)).ptr(device_ptr(w)).ptr(bias.map_or(0, device_ptr)).ptr(device_ptr(y)).i64(n).i64(k);
    args.i32(i32::from(early));
    let blocks = grid_extent("linear", n, i64::from(WARPS), i32::MAX as u32)?;
    f.launch([blocks, 1, 1], [WARPS * 32, 1, 1], 0, &mut args)?;
    Ok(true)
}
