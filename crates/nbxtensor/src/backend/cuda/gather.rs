//! Gathers on the GPU, byte-exact on every dtype with a per-element width, as the CPU kernels
//! (`kernels/gather.cu`, `kernels/copy.cu`):
//!
//! - `embedding(indices, table)`: the rows of `table [V, D]` at `indices` (int32 or int64, any
//!   shape and layout) → `[*indices.shape, D]`;
//! - `index_select(x, indices, axis)`: the entries of `x` at the 1-d `indices` along `axis`;
//! - `concat(inputs.., axis)`: inputs of one dtype joined along `axis` (one copy per input).
//!
//! Indices live on the device, so they are checked there: a bad one is never read through
//! (its entries are written as zeros) and raises a flag word in the launch's 8-byte workspace,
//! which holds the first bad position. The host reads the flag back after the launch (this
//! waits for the launch) and refuses the call as the CPU does, naming the op, the index, its
//! position and the range. While a CUDA graph is being captured nothing can be read back: the
//! capture's eager run checked the same launch, and a replay on other indices writes zeros for
//! a bad one (the flag is raised in the workspace, unread). Inputs of any layout are read through their strides, in 16-byte
//! words where their rows allow.

use super::addressing::{storage_ptr, width};
use super::copy::copy_elements;
use super::grid::{elementwise_grid, THREADS};
use super::indexer::{narrow, Indexer, Operand};
use super::memory::cuda_allocator;
use super::{device_ptr, function, register, register_with_workspace, Args};
use crate::backend::LaunchTable;
use crate::dtype::DType;
use crate::kernel::{KernelError, Launch, Result, TensorMeta, Workspace};
use crate::ops::spec::gather::{Concat, Embedding, IndexSelect};
use crate::ops::spec::{axis_of, sized, INDEX_DTYPES};
use crate::shape;
use crate::tensor::Tensor;

pub use super::source::GATHER as SOURCE;

/// Bytes of the flag word a checked gather declares as its workspace.
const FLAG_BYTES: u64 = 8;

fn device_error(e: impl std::fmt::Display) -> KernelError {
    KernelError::Device(e.to_string())
}

/// The flag word's workspace (the same for any inputs).
fn flag_workspace<S>(_: &S, _: &[TensorMeta]) -> Result<u64> {
    Ok(FLAG_BYTES)
}

/// One gather: the output `[positions, ...]` (as `out_shape`) takes the source's entry at
/// `indices[c]` along dim `axis` for each coordinate `c` there.
struct Gather<'a> {
    op: &'static str,
    source: &'a Tensor,
    /// The output's shape as the source is addressed (the indices' positions along `axis`).
    out_shape: Vec<i64>,
    axis: usize,
    /// The source's stride along `axis` and its extent there (the indices' range).
    axis_stride: i64,
    bound: i64,
    indices: &'a Tensor,
    /// Names the range in errors ("table [4, 3]", "axis 1 of [2, 5]").
    what: String,
}

impl Gather<'_> {
    fn launch(&self, y: &Tensor, workspace: Workspace<'_>) -> Result<()> {
        let (flag, flag_len) = (workspace.device_ptr(), workspace.len());
        let (op, device) = (self.op, y.device());
        let n = y.numel();
        if n == 0 {
            return self.check_on_host(); // no entry to copy, but the indices are still checked
        }
        if (flag_len as u64) < FLAG_BYTES {
            return Err(KernelError::Invalid(format!(
                "{op}: the workspace holds {flag_len} bytes, not the flag's {FLAG_BYTES}"
            )));
        }
        let mut strides = self.source.strides().to_vec();
        strides[self.axis] = 0; // the index's term is added by the kernel
        let operand = Operand { strides, offset: self.source.offset() };
        let (mut ix, position) = Indexer::with_axis(op, &self.out_shape, &[operand], self.axis)?;
        let idx_operand = Operand::broadcast(op, self.indices, self.indices.shape())?;
        let ii = Indexer::new(op, self.indices.shape(), &[idx_operand])?;
        let itemsize = width(op, self.source.dtype())?;
        let (x_base, y_base) = (storage_ptr(self.source), device_ptr(y));
        let per_word = 16 / itemsize;
        let mut unit = match itemsize {
            1 => "b1",
            2 => "b2",
            4 => "b4",
            8 => "b8",
            16 => "b16",
            other => return Err(KernelError::Invalid(format!("{op}: no gather of {other}-byte elements"))),
        };
        let (mut n, mut axis_stride) = (n, self.axis_stride);
        let words = position != 0
            && ix.shape[0] % per_word == 0
            && axis_stride % per_word == 0
            && y_base % 16 == 0
            && ix.rows_of_words(0, per_word, x_base);
        if words {
            (ix, n, axis_stride, unit) = (ix.in_words(1, per_word), n / per_word, axis_stride / per_word, "w16");
        }
        let index = match self.indices.dtype() {
            DType::Int32 => "i32",
            DType::Int64 => "i64",
            other => return Err(KernelError::Invalid(format!("{op}: indices must be int32 or int64, got {other}"))),
        };
        let allocator = cuda_allocator(device.index).map_err(device_error)?;
        allocator.zero(flag, FLAG_BYTES as usize).map_err(device_error)?;
        let f = function(device, &SOURCE, format_args!("gather_{unit}_{index}"))?;
        let mut args = Args::new();
        args.ptr(x_base).value(&ix).i32(position).i64(axis_stride).ptr(storage_ptr(self.indices)).value(&ii);
        args.i64(self.bound).ptr(y_base).i64(n).i32(narrow(n)).ptr(flag);
        f.launch(elementwise_grid(f.context(), n), [THREADS, 1, 1], 0, &mut args)?;
        if f.context().is_capturing().map_err(KernelError::Device)? {
            return Ok(());
        }
        self.check(flag, ix.shape[position as usize])
    }

    /// Reads the flag back (after the launch); a raised one refuses the call naming the first
    /// bad index, as the CPU kernel does.
    fn check(&self, flag: u64, positions: i64) -> Result<()> {
        let allocator = cuda_allocator(self.indices.device().index).map_err(device_error)?;
        let mut word = [0u8; FLAG_BYTES as usize];
        allocator.read(flag, &mut word).map_err(device_error)?;
        let raised = u64::from_le_bytes(word) as i64;
        if raised == 0 {
            return Ok(());
        }
        let position = positions - raised;
        Err(self.out_of_range(self.index_at(position)?, position))
    }

    /// Checks the indices on the host (read back) where no entry is gathered: an output of
    /// size 0 copies nothing, yet the CPU still refuses a bad index.
    fn check_on_host(&self) -> Result<()> {
        let values: Vec<i64> = match self.indices.dtype() {
            DType::Int32 => self.indices.to_vec::<i32>()?.into_iter().map(i64::from).collect(),
            _ => self.indices.to_vec::<i64>()?,
        };
        match values.iter().enumerate().find(|(_, &v)| v < 0 || v >= self.bound) {
            Some((position, value)) => Err(self.out_of_range(*value, position as i64)),
            None => Ok(()),
        }
    }

    fn out_of_range(&self, value: i64, position: i64) -> KernelError {
        KernelError::Invalid(format!(
            "{}: index {value} (at position {position}) is out of range [0, {}) of {}",
            self.op, self.bound, self.what
        ))
    }

    /// The index at row-major `position` of the indices (read from the device).
    fn index_at(&self, position: i64) -> Result<i64> {
        let indices = self.indices;
        let mut rest = position;
        let mut offset = indices.offset();
        for (&size, &stride) in indices.shape().iter().zip(indices.strides()).rev() {
            offset += rest % size * stride;
            rest /= size;
        }
        let itemsize = width(self.op, indices.dtype())?;
        let mut bytes = [0u8; 8];
        let allocator = cuda_allocator(indices.device().index).map_err(device_error)?;
        let address = storage_ptr(indices) + (offset * itemsize) as u64;
        allocator.read(address, &mut bytes[..itemsize as usize]).map_err(device_error)?;
        Ok(match indices.dtype() {
            DType::Int32 => i64::from(i32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]])),
            _ => i64::from_le_bytes(bytes),
        })
    }
}

fn run_embedding(_: &Embedding, launch: Launch<'_>) -> Result<()> {
    let (indices, table, y) = (&launch.inputs[0], &launch.inputs[1], &launch.outputs[0]);
    let gather = Gather {
        op: "embedding",
        source: table,
        out_shape: vec![indices.numel(), table.shape()[1]],
        axis: 0,
        axis_stride: table.strides()[0],
        bound: table.shape()[0],
        indices,
        what: format!("table {:?}", table.shape()),
    };
    gather.launch(y, launch.workspace)
}

fn run_index_select(spec: &IndexSelect, launch: Launch<'_>) -> Result<()> {
    let (x, indices, y) = (&launch.inputs[0], &launch.inputs[1], &launch.outputs[0]);
    let axis = axis_of("index_select", spec.axis, x.ndim())?;
    let gather = Gather {
        op: "index_select",
        source: x,
        out_shape: y.shape().to_vec(),
        axis,
        axis_stride: x.strides()[axis],
        bound: x.shape()[axis],
        indices,
        what: format!("axis {axis} of {:?}", x.shape()),
    };
    gather.launch(y, launch.workspace)
}

fn run_concat(spec: &Concat, launch: Launch<'_>) -> Result<()> {
    let y = &launch.outputs[0];
    let axis = axis_of("concat", spec.axis, y.ndim())?;
    let out_strides = shape::contiguous_strides(y.shape()).map_err(|e| KernelError::Invalid(format!("concat: {e}")))?;
    let itemsize = width("concat", y.dtype())?;
    let mut start = 0i64;
    for x in launch.inputs {
        let dst = Operand { strides: out_strides.clone(), offset: start * out_strides[axis] };
        let ix = Indexer::new("concat", x.shape(), &[Operand::broadcast("concat", x, x.shape())?, dst])?;
        copy_elements("concat", y.device(), &ix, storage_ptr(x), device_ptr(y), x.numel(), itemsize)?;
        start += x.shape()[axis];
    }
    Ok(())
}

/// Registers `embedding` (on the index dtypes), `index_select` and `concat` (on every dtype
/// with a width), as the CPU does.
pub fn register_all(table: &mut LaunchTable) {
    register_with_workspace(table, "embedding", &INDEX_DTYPES, run_embedding, flag_workspace);
    register_with_workspace(table, "index_select", &sized(), run_index_select, flag_workspace);
    register(table, "concat", &sized(), run_concat);
}
