//! `iota` on the GPU (`kernels/create.cu`), with the CPU kernel's semantics
//! (`backend/cpu/create.rs`): floats computed in double as `start + i · step` (unfused) and
//! rounded once, integers in 64-bit wrapping arithmetic. Served on float32, float16,
//! bfloat16 and the eight integer dtypes.

use super::grid::{elementwise_grid, THREADS};
use super::{device_ptr, function, register, served, Args};
use crate::backend::LaunchTable;
use crate::kernel::{Launch, Result};
use crate::ops::spec::create::Iota;
use crate::ops::spec::NUMBERS;

pub use super::source::CREATE as SOURCE;

fn run(spec: &Iota, launch: Launch<'_>) -> Result<()> {
    let y = &launch.outputs[0];
    let n = y.numel();
    if n == 0 {
        return Ok(());
    }
    let f = function(y.device(), &SOURCE, format_args!("iota_{}", spec.dtype.launch_key()))?;
    let mut args = Args::new();
    args.ptr(device_ptr(y)).i64(n);
    if spec.dtype.is_float() {
        let (start, step) = spec.float_terms();
        args.f64(start).f64(step);
    } else {
        let (start, step) = spec.int_terms();
        args.i64(start).i64(step);
    }
    f.launch(elementwise_grid(f.context(), n), [THREADS, 1, 1], 0, &mut args)
}

/// Registers `iota` on the floats but float64 and the integers.
pub fn register_all(table: &mut LaunchTable) {
    register(table, "iota", &served(&NUMBERS), run);
}
