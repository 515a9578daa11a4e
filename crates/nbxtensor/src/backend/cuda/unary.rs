//! The unary ops on the GPU (`kernels/unary.cu`): the floats (float32, float16 and bfloat16,
//! computed in float32), the integers and bool, each group compiled apart. Kernel names carry
//! the op's name and the dtype's launch key (`unary_exp_fp16`).

use super::grid::{elementwise_grid, THREADS};
use super::{device_ptr, function, register, Args, Layout};
use crate::backend::LaunchTable;
use crate::dtype::DType;
use crate::facts::Kind;
use crate::kernel::{Launch, Result};
use crate::ops::spec::unary::{Bound, Unary, UnaryOp};
use crate::ops::spec::FLOATS;

pub use super::source::UNARY as SOURCE;
pub use super::source::UNARY_INTEGERS as INTEGER_SOURCE;

/// `clip`'s bounds as the kernels' `Bounds` struct.
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct Bounds {
    low: f64,
    high: f64,
    low_int: i64,
    high_int: i64,
    has_low: i32,
    has_high: i32,
}

fn bounds(spec: &Unary) -> Bounds {
    let mut b = Bounds::default();
    match spec.min {
        Bound::Float(v) => (b.low, b.has_low) = (v, 1),
        Bound::Int(v) => (b.low_int, b.has_low) = (v, 1),
        Bound::None => {}
    }
    match spec.max {
        Bound::Float(v) => (b.high, b.has_high) = (v, 1),
        Bound::Int(v) => (b.high_int, b.has_high) = (v, 1),
        Bound::None => {}
    }
    b
}

fn run(spec: &Unary, launch: Launch<'_>) -> Result<()> {
    let (x, y) = (&launch.inputs[0], &launch.outputs[0]);
    let n = y.numel();
    if n == 0 {
        return Ok(());
    }
    let device = y.device();
    let (op, dt) = (spec.op.name(), spec.dtype.launch_key());
    let source = if spec.dtype.is_float() { &SOURCE } else { &INTEGER_SOURCE };
    let mut args = Args::new();
    let f = if x.is_contiguous() {
        args.ptr(device_ptr(x)).ptr(device_ptr(y)).i64(n);
        function(device, source, format_args!("unary_{op}_{dt}"))?
    } else {
        args.ptr(x.storage().as_ptr() as u64).value(&Layout::of(x)?).ptr(device_ptr(y)).i64(n);
        function(device, source, format_args!("unary_{op}_{dt}_strided"))?
    };
    if spec.op == UnaryOp::Clip {
        args.value(&bounds(spec));
    }
    f.launch(elementwise_grid(f.context(), n), [THREADS, 1, 1], 0, &mut args)
}

/// The dtypes the GPU serves `op` on: the op's dtypes but float64 (no float64 kernels) and
/// the complex ones; none for real, imag and conj (ops of complex numbers, which no kernel here
/// holds: a call is refused naming op, dtype and backend).
fn served(op: UnaryOp) -> Vec<DType> {
    if matches!(op, UnaryOp::Real | UnaryOp::Imag | UnaryOp::Conj) {
        return Vec::new();
    }
    op.dtypes()
        .iter()
        .copied()
        .filter(|d| FLOATS.contains(d) || matches!(d.kind(), Kind::Int | Kind::Uint | Kind::Bool))
        .collect()
}

/// Registers every unary op on the dtypes it takes but float64.
pub fn register_all(table: &mut LaunchTable) {
    for op in UnaryOp::all() {
        register(table, op.name(), &served(op), run);
    }
}
