//! Views as the row-wise kernels (reductions, softmax, norms, rope, attention) address them:
//! dims merged where they address memory as one (fewer dims, less index arithmetic on the
//! device), and the alignment checks of their 16-byte paths.

use super::Layout;
use crate::kernel::{KernelError, Result};

/// `(shape, strides)` with extent-1 dims dropped and neighbours merged where the outer
/// stride is the inner stride times the inner extent: the same addresses in row-major order,
/// in fewer dims.
///
/// ```
/// use nbxtensor::backend::cuda::merged;
/// // a contiguous [2, 3, 4] is one dim of 24; a transposed [3, 2] stays two dims
/// assert_eq!(merged(&[2, 3, 4], &[12, 4, 1]), (vec![24], vec![1]));
/// assert_eq!(merged(&[3, 1, 2], &[1, 7, 3]), (vec![3, 2], vec![1, 3]));
/// ```
pub fn merged(shape: &[i64], strides: &[i64]) -> (Vec<i64>, Vec<i64>) {
    let mut dims: Vec<(i64, i64)> = Vec::with_capacity(shape.len());
    for (&extent, &stride) in shape.iter().zip(strides) {
        if extent == 1 {
            continue;
        }
        match dims.last_mut() {
            Some((outer, outer_stride)) if *outer_stride == stride * extent => {
                *outer *= extent;
                *outer_stride = stride;
            }
            _ => dims.push((extent, stride)),
        }
    }
    dims.into_iter().unzip()
}

/// The kernel layout of `(shape, strides)` from `offset`, its dims merged; refused past
/// [`super::MAX_DIMS`] merged dims.
pub fn merged_layout(shape: &[i64], strides: &[i64], offset: i64) -> Result<Layout> {
    let (shape, strides) = merged(shape, strides);
    Layout::new(&shape, &strides, offset)
}

/// The device address of a launch's workspace, refused (naming `op`) when it holds fewer than
/// `bytes` (the kernel's declaration was not honoured).
pub fn workspace_of(op: &str, workspace: &crate::kernel::Workspace<'_>, bytes: u64) -> Result<u64> {
    if (workspace.len() as u64) < bytes {
        return Err(KernelError::Invalid(format!(
            "{op}: the launch's workspace holds {} bytes, the kernel declared {bytes}",
            workspace.len()
        )));
    }
    Ok(workspace.device_ptr())
}

/// Whether every value (device addresses, row lengths in bytes) is a multiple of 16: the
/// condition of the 16-byte vector paths.
pub fn aligned16(values: &[u64]) -> bool {
    values.iter().all(|a| a % 16 == 0)
}

/// The blocks that cover `items` at `per_block` each, refused (naming `op`) past `limit` (what
/// a launch takes in that grid dim).
pub fn grid_extent(op: &str, items: i64, per_block: i64, limit: u32) -> Result<u32> {
    let blocks = (items.max(0) + per_block - 1) / per_block.max(1);
    u32::try_from(blocks).ok().filter(|&b| b <= limit).ok_or_else(|| {
        KernelError::Invalid(format!("{op}: {blocks} blocks exceed the launch limit of {limit} in one grid dim"))
    })
}

/// Most threads one row of a one-pass row kernel takes (the kernels' launch bound).
pub const ROW_GROUP_MAX: u32 = 512;

/// Chunks per thread the one-pass row kernels are compiled for (their `_<CH>` suffix).
pub const ROW_CHUNKS: [u32; 4] = [1, 2, 4, 8];

/// Most elements one thread of a one-pass row kernel holds (registers: 32 floats keep the
/// kernels near 64 registers, so that a multiprocessor runs 1024 threads of them).
pub const ROW_ELEMENTS: u32 = 32;

/// How a one-pass row kernel holds a row in registers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RowPlan {
    /// Threads per row (a power of two from 32 to [`ROW_GROUP_MAX`]).
    pub group: u32,
    /// Chunks per thread (one of [`ROW_CHUNKS`]).
    pub chunks: u32,
    /// Whether a chunk is 16 bytes (else one element).
    pub vector: bool,
    /// Threads per block (a multiple of `group`).
    pub block: u32,
}

/// The split of a row of `n` elements of `itemsize` bytes (16-byte chunks when `vector`):
/// the fewest threads per row that hold it, at most [`ROW_ELEMENTS`] elements and 8 chunks a
/// thread; None when the row is too long for registers.
///
/// ```
/// use nbxtensor::backend::cuda::row_plan;
/// // 4096 float32 values: 1024 chunks of 16 bytes, 128 threads of 8 chunks
/// let plan = row_plan(4096, 4, true).unwrap();
/// assert_eq!((plan.group, plan.chunks, plan.block), (128, 8, 128));
/// // 4096 bfloat16 values: 512 chunks of 8 values, 128 threads of 4 chunks
/// let plan = row_plan(4096, 2, true).unwrap();
/// assert_eq!((plan.group, plan.chunks), (128, 4));
/// assert!(row_plan(1 << 20, 4, true).is_none());
/// ```
pub fn row_plan(n: i64, itemsize: usize, vector: bool) -> Option<RowPlan> {
    let per_chunk = if vector { (16 / itemsize.max(1)) as u32 } else { 1 };
    let most = ROW_CHUNKS.iter().copied().filter(|&c| c * per_chunk <= ROW_ELEMENTS).max()?;
    let chunks = (n.max(0) + i64::from(per_chunk) - 1) / i64::from(per_chunk);
    let mut group = 32u32;
    while i64::from(group * most) < chunks && group < ROW_GROUP_MAX {
        group *= 2;
    }
    let per_thread = ROW_CHUNKS.iter().copied().find(|&c| c <= most && i64::from(group * c) >= chunks)?;
    Some(RowPlan { group, chunks: per_thread, vector, block: group.max(128) })
}

impl RowPlan {
    /// The plan for `rows` rows on a device of `multiprocessors`: as planned where the rows'
    /// blocks fill the device; else (a decode step's one row) each row over up to
    /// [`ROW_GROUP_MAX`] threads holding as few chunks each as cover it, so that a row's
    /// loads and sums are spread over more threads.
    ///
    /// ```
    /// use nbxtensor::backend::cuda::row_plan;
    /// // one row of 4096 bfloat16 values: 512 threads of one 16-byte chunk
    /// let plan = row_plan(4096, 2, true).unwrap().for_rows(1, 132);
    /// assert_eq!((plan.group, plan.chunks, plan.block), (512, 1, 512));
    /// // 4096 rows fill the device: as planned
    /// assert_eq!(row_plan(4096, 2, true).unwrap().for_rows(4096, 132).group, 128);
    /// ```
    pub fn for_rows(self, rows: i64, multiprocessors: u32) -> RowPlan {
        let blocks = (rows.max(0) + i64::from(self.block / self.group) - 1) / i64::from(self.block / self.group);
        if blocks >= i64::from(multiprocessors) {
            return self;
        }
        let mut plan = self;
        // the group doubled, the chunks a thread halved: the row's chunks stay covered
        while plan.chunks > 1 && plan.group < ROW_GROUP_MAX {
            plan.group *= 2;
            plan.chunks /= 2;
        }
        RowPlan { block: plan.group.max(128), ..plan }
    }
}
