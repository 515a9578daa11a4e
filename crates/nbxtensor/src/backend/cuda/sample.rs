//! `sample` on the GPU (`kernels/sample.cu`): a block per row computing, step for step, what
//! `ops::spec::sample` defines and the host computes (`backend/cpu/sample.rs`), so a seed gives
//! the same tokens on both from the same logits. The exponential's constants and the fixed
//! point come from the spec as kernel parameters. The position is read on the device; a row
//! without a finite logit gets −1 (no error can be raised there).

use super::{device_ptr, function, register, Args};
use crate::backend::LaunchTable;
use crate::dtype::DType;
use crate::kernel::{KernelError, Launch, Result, TensorMeta};
use crate::ops::spec::sample::{Sample, EXP, WEIGHT_BITS};
use crate::ops::spec::FLOATS;
use crate::tensor::Tensor;

pub use super::source::SAMPLE as SOURCE;

/// Threads of a row's block (`NBX_SAMPLE_THREADS`).
const THREADS: u32 = 1024;

/// The source's `SampleParams`.
#[repr(C)]
#[derive(Clone, Copy)]
struct Params {
    exp: [f32; 12],
    inverse_temperature: f32,
    top_k: i32,
    top_p: u32,
    use_top_p: i32,
    pos64: i32,
    weight_bits: i32,
    seed: u64,
    vocab: i64,
}

fn run(spec: &Sample, launch: Launch<'_>) -> Result<()> {
    let metas: Vec<TensorMeta> = launch.inputs.iter().map(|t| TensorMeta::new(t.dtype(), t.shape())).collect();
    let z = spec.sizes(&metas)?;
    let out = &launch.outputs[0];
    if z.rows == 0 {
        return Ok(());
    }
    let needed = 8 * (z.rows * z.vocab) as u64;
    if (launch.workspace.len() as u64) < needed {
        return Err(KernelError::Invalid(format!("sample: the workspace does not hold {needed} bytes of weights")));
    }
    let top_k = spec.top_k_of(z.vocab).map_or(Ok(0), |k| {
        i32::try_from(k).map_err(|_| KernelError::Invalid(format!("sample: top_k {k} exceeds the CUDA kernel's range")))
    })?;
    let params = Params {
        exp: EXP,
        inverse_temperature: spec.inverse_temperature(),
        top_k,
        top_p: spec.top_p_fraction().unwrap_or(0),
        use_top_p: i32::from(spec.top_p_fraction().is_some()),
        pos64: i32::from(launch.inputs[1].dtype() == DType::Int64),
        weight_bits: WEIGHT_BITS,
        seed: spec.seed,
        vocab: z.vocab as i64,
    };
    let rows = u32::try_from(z.rows)
        .ok()
        .filter(|&r| r <= i32::MAX as u32)
        .ok_or_else(|| KernelError::Invalid(format!("sample: {} rows exceed the CUDA grid", z.rows)))?;
    let f = function(out.device(), &SOURCE, format_args!("sample_{}", spec.dtype.launch_key()))?;
    let mut args = Args::new();
    args.ptr(device_ptr(&launch.inputs[0])).ptr(device_ptr(&launch.inputs[1])).value(&params);
    args.ptr(launch.workspace.device_ptr()).ptr(device_ptr(out));
    f.launch([rows, 1, 1], [THREADS, 1, 1], 0, &mut args)
}

/// The logits the kernel cannot read: rows that are not contiguous.
fn unreadable(_: &Sample, inputs: &[&Tensor]) -> Option<usize> {
    inputs.first().is_some_and(|t| !t.is_contiguous()).then_some(0)
}

/// Registers `sample` on the floats.
pub fn register_all(table: &mut LaunchTable) {
    register(table, "sample", &FLOATS, run);
    table.reads_only("sample", &FLOATS, unreadable);
}
