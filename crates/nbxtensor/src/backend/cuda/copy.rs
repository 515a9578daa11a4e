//! `copy` on the GPU: any layout into a contiguous tensor of the same dtype, for every dtype
//! with a per-element width, as bit patterns (`kernels/copy.cu`). A contiguous input is one
//! device-to-device memcpy; a strided one is copied element by element through its strides,
//! in 16-byte words where its rows allow. [`copy_elements`] also serves `concat`.

use super::addressing::{storage_ptr, width};
use super::grid::{elementwise_grid, THREADS};
use super::indexer::{narrow, Indexer, Operand};
use super::memory::cuda_allocator;
use super::{device_ptr, function, register, Args};
use crate::backend::LaunchTable;
use crate::kernel::{KernelError, Launch, Result};
use crate::memory::Device;
use crate::ops::spec::cast::{Assign, Copy};

pub use super::source::COPY as SOURCE;

/// The kernel-name suffix of units of `itemsize` bytes.
fn unit(op: &str, itemsize: i64) -> Result<&'static str> {
    match itemsize {
        1 => Ok("b1"),
        2 => Ok("b2"),
        4 => Ok("b4"),
        8 => Ok("b8"),
        16 => Ok("b16"),
        other => Err(KernelError::Invalid(format!("{op}: no copy of {other}-byte elements"))),
    }
}

/// Copies `n` elements of `itemsize` bytes: the one at operand 0's offset of each row-major
/// index of `ix`, from `x_base`, to operand 1's offset from `y_base` (device addresses);
/// 16-byte words where both operands' rows are contiguous, aligned and whole words.
pub fn copy_elements(
    op: &str,
    device: Device,
    ix: &Indexer,
    x_base: u64,
    y_base: u64,
    n: i64,
    itemsize: i64,
) -> Result<()> {
    if n == 0 {
        return Ok(());
    }
    let mut unit = unit(op, itemsize)?;
    let (mut ix, mut n) = (*ix, n);
    let per_word = 16 / itemsize;
    if ix.shape[0] % per_word == 0 && ix.rows_of_words(0, per_word, x_base) && ix.rows_of_words(1, per_word, y_base) {
        (ix, n, unit) = (ix.in_words(2, per_word), n / per_word, "w16");
    }
    let f = function(device, &SOURCE, format_args!("copy_{unit}"))?;
    let mut args = Args::new();
    args.ptr(x_base).value(&ix).ptr(y_base).i64(n).i32(narrow(n));
    f.launch(elementwise_grid(f.context(), n), [THREADS, 1, 1], 0, &mut args)
}

fn run(spec: &Copy, launch: Launch<'_>) -> Result<()> {
    let (x, y) = (&launch.inputs[0], &launch.outputs[0]);
    let (n, device) = (y.numel(), y.device());
    let itemsize = width("copy", spec.dtype)?;
    if n == 0 {
        return Ok(());
    }
    if x.is_contiguous() {
        let allocator = cuda_allocator(device.index).map_err(|e| KernelError::Device(e.to_string()))?;
        let bytes = (n * itemsize) as usize;
        return allocator
            .copy_within(device_ptr(y), device_ptr(x), bytes)
            .map_err(|e| KernelError::Device(e.to_string()));
    }
    let operands = [Operand::broadcast("copy", x, x.shape())?, Operand::contiguous("copy", y.shape(), 0)?];
    let ix = Indexer::new("copy", x.shape(), &operands)?;
    copy_elements("copy", device, &ix, storage_ptr(x), device_ptr(y), n, itemsize)
}

/// `assign`: the value (input 1), broadcast, written through the destination's layout (input
/// 0) in place, element by element (16-byte words where both rows allow).
fn assign(spec: &Assign, launch: Launch<'_>) -> Result<()> {
    let (dst, src) = (&launch.inputs[0], &launch.inputs[1]);
    Assign::check_layouts(dst, src)?;
    let itemsize = width("assign", spec.dtype)?;
    let operands = [Operand::broadcast("assign", src, dst.shape())?, Operand::broadcast("assign", dst, dst.shape())?];
    let ix = Indexer::new("assign", dst.shape(), &operands)?;
    copy_elements("assign", dst.device(), &ix, storage_ptr(src), storage_ptr(dst), dst.numel(), itemsize)
}

/// Registers `copy` and `assign` on every dtype with a per-element width.
pub fn register_all(table: &mut LaunchTable) {
    register(table, "copy", &crate::ops::spec::sized(), run);
    register(table, "assign", &crate::ops::spec::sized(), assign);
}
