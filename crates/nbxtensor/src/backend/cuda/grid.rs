//! Launch shapes shared by the kernel families.

use super::memory::CudaContext;

/// Threads per block of the elementwise kernels.
pub const THREADS: u32 = 256;

/// Blocks of a grid-stride elementwise kernel over `n` elements: enough to fill every
/// multiprocessor several times over, never more than the work needs (0 for no work).
pub fn elementwise_grid(context: &CudaContext, n: i64) -> [u32; 3] {
    let needed = (n.max(0) as u64).div_ceil(u64::from(THREADS));
    let fill = u64::from(context.info().multiprocessors) * 8;
    [needed.min(fill.max(1)) as u32, 1, 1]
}
