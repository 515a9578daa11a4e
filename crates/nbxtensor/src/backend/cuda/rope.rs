//! Rotary position embedding on the GPU (`kernels/rope.cu`): `rope(x, cos, sin)` with the
//! attribute `interleaved`, with the CPU kernel's operands and semantics
//! (`backend/cpu/rope.rs`: x `[..., seq, head_dim]`, cos and sin `[seq, head_dim / 2]`), on
//! float32, float16 and bfloat16. Contiguous, aligned operands take 16-byte accesses; any
//! other layout, one thread per pair.

use super::dims::{aligned16, merged_layout};
use super::grid::{elementwise_grid, THREADS};
use super::{device_ptr, function, register, Args};
use crate::backend::LaunchTable;
use crate::kernel::{KernelError, Launch, Result};
use crate::ops::spec::rows::Rope;
use crate::ops::spec::FLOATS;

pub use super::source::ROPE as SOURCE;

fn run(spec: &Rope, launch: Launch<'_>) -> Result<()> {
    let [x, cos, sin] = launch.inputs else {
        return Err(KernelError::Invalid(format!("rope: takes 3 inputs (x, cos, sin), got {}", launch.inputs.len())));
    };
    let y = &launch.outputs[0];
    if y.numel() == 0 {
        return Ok(());
    }
    let interleaved = spec.interleaved;
    let nd = x.ndim();
    let (seq, dim) = (x.shape()[nd - 2], x.shape()[nd - 1]);
    let rows = y.numel() / dim;
    let dt = spec.dtype.launch_key();
    let itemsize = spec.dtype.itemsize().map_err(|e| KernelError::Invalid(format!("rope: {e}")))? as u64;
    let (c, s) = (cos.strides(), sin.strides());
    let per_vector = 16 / itemsize as i64;
    // half-split: V pairs of a half row per thread; interleaved: V elements of a row
    let vector_width = if interleaved { dim } else { dim / 2 };
    let vector = x.is_contiguous()
        && c[1] == 1
        && s[1] == 1
        && vector_width % per_vector == 0
        && aligned16(&[
            device_ptr(x),
            device_ptr(y),
            device_ptr(cos),
            device_ptr(sin),
            c[0] as u64 * itemsize,
            s[0] as u64 * itemsize,
        ]);
    let (layout, vec) = (if interleaved { "_interleaved" } else { "" }, if vector { "_vec" } else { "" });
    let f = function(y.device(), &SOURCE, format_args!("rope_{dt}{layout}{vec}"))?;
    let mut args = Args::new();
    let units = if vector {
        args.ptr(device_ptr(x)).ptr(device_ptr(cos)).i64(c[0]).ptr(device_ptr(sin)).i64(s[0]);
        rows * (vector_width / per_vector)
    } else {
        args.ptr(x.storage().as_ptr() as u64).value(&merged_layout(x.shape(), x.strides(), x.offset())?);
        args.ptr(device_ptr(cos)).i64(c[0]).i64(c[1]).ptr(device_ptr(sin)).i64(s[0]).i64(s[1]);
        rows * (dim / 2)
    };
    args.ptr(device_ptr(y)).i64(rows).i64(seq).i64(dim);
    f.launch(elementwise_grid(f.context(), units), [THREADS, 1, 1], 0, &mut args)
}

/// Registers `rope` on float32, float16 and bfloat16.
pub fn register_all(table: &mut LaunchTable) {
    register(table, "rope", &FLOATS, run);
}
