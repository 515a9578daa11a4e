//! Casts on the GPU between float32, float16, bfloat16, the integers and bool (every pair of
//! them), element for element as the CPU kernel converts: `kernels/cast.cu`. float64, the
//! 8-bit floats and the complex dtypes are not served here.
//!
//! The kernels are compiled in four groups by source dtype (floats, signed, unsigned, bool),
//! each its own module, so that a first cast compiles a quarter of the pairs.

use super::addressing::storage_ptr;
use super::grid::{elementwise_grid, THREADS};
use super::indexer::{narrow, Indexer, Operand};
use super::{device_ptr, function, register_with_workspace, Args, KernelSource};
use crate::backend::LaunchTable;
use crate::dtype::DType;
use crate::kernel::{KernelError, Launch, Result, TensorMeta};
use crate::ops::spec::cast::Cast;

pub use super::source::CAST_FROM_BOOL as FROM_BOOL;
pub use super::source::CAST_FROM_FLOATS as FROM_FLOATS;
pub use super::source::CAST_FROM_SIGNED as FROM_SIGNED;
pub use super::source::CAST_FROM_UNSIGNED as FROM_UNSIGNED;

/// Each dtype served, and the source holding the casts from it.
static DTYPES: [(DType, &KernelSource); 12] = [
    (DType::Float32, &FROM_FLOATS),
    (DType::Float16, &FROM_FLOATS),
    (DType::Bfloat16, &FROM_FLOATS),
    (DType::Int8, &FROM_SIGNED),
    (DType::Int16, &FROM_SIGNED),
    (DType::Int32, &FROM_SIGNED),
    (DType::Int64, &FROM_SIGNED),
    (DType::Uint8, &FROM_UNSIGNED),
    (DType::Uint16, &FROM_UNSIGNED),
    (DType::Uint32, &FROM_UNSIGNED),
    (DType::Uint64, &FROM_UNSIGNED),
    (DType::Bool, &FROM_BOOL),
];

/// The kernel-name suffix (the dtype's launch key) and source of a served dtype; a pair with
/// another dtype is refused naming both.
fn served(from: DType, to: DType, dtype: DType) -> Result<(&'static str, &'static KernelSource)> {
    DTYPES.iter().find(|(d, _)| *d == dtype).map(|&(d, source)| (d.launch_key(), source)).ok_or_else(|| {
        KernelError::Missing { op: "cast".into(), dtype: format!("{from} to {to}"), backend: "cuda".into() }
    })
}

fn run(spec: &Cast, launch: Launch<'_>) -> Result<()> {
    let (x, y) = (&launch.inputs[0], &launch.outputs[0]);
    let n = y.numel();
    if n == 0 {
        return Ok(());
    }
    let (from, to) = (spec.from, spec.to);
    let (from_suffix, source) = served(from, to, from)?;
    let (to_suffix, _) = served(from, to, to)?;
    let mut args = Args::new();
    let f = if x.is_contiguous() {
        args.ptr(device_ptr(x)).ptr(device_ptr(y)).i64(n);
        function(y.device(), source, format_args!("cast_{from_suffix}_{to_suffix}"))?
    } else {
        let ix = Indexer::new("cast", x.shape(), &[Operand::broadcast("cast", x, x.shape())?])?;
        args.ptr(storage_ptr(x)).value(&ix).ptr(device_ptr(y)).i64(n).i32(narrow(n));
        function(y.device(), source, format_args!("cast_{from_suffix}_{to_suffix}_strided"))?
    };
    f.launch(elementwise_grid(f.context(), n), [THREADS, 1, 1], 0, &mut args)
}

/// Refuses, when the op is declared, a pair of dtypes the GPU kernels do not cast; no workspace.
fn check_pair(spec: &Cast, _: &[TensorMeta]) -> Result<u64> {
    served(spec.from, spec.to, spec.to)?;
    served(spec.from, spec.to, spec.from)?;
    Ok(0)
}

/// Registers `cast` from each served dtype (to each served dtype: others are refused by name).
pub fn register_all(table: &mut LaunchTable) {
    let dtypes: Vec<DType> = DTYPES.iter().map(|(d, _)| *d).collect();
    register_with_workspace(table, "cast", &dtypes, run, check_pair);
}
