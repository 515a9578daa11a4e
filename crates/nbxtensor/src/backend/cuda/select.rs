//! Selection with numpy broadcasting on the GPU: `where(cond, a, b)` (a where cond is true,
//! else b; elements of 1, 2, 4 or 8 bytes of any dtype) and `masked_fill(x, mask, value)` (value
//! where mask is true, else x; float32, float16, bfloat16, float64, the integers and bool):
//! `kernels/select.cu`. Both copy bit patterns; a bool reads true for any nonzero byte.
//!
//! `masked_fill`'s value is fitted to the dtype by the policy's fill rule and rounded as the
//! CPU kernel rounds it (through float32 for the float dtypes), then passed as its bit pattern.

use super::addressing::{storage_ptr, width};
use super::grid::{elementwise_grid, THREADS};
use super::indexer::{narrow, Indexer, Operand};
use super::{device_ptr, function, register, Args};
use crate::backend::LaunchTable;
use crate::dtype::policy::FillValue;
use crate::dtype::DType;
use crate::facts::Kind;
use crate::kernel::{KernelError, Launch, Result};
use crate::ops::spec::select::{MaskedFill, Where};
use half::{bf16, f16};

pub use super::source::SELECT as SOURCE;

/// The kernel-name suffix of elements of `dtype` (`b<width>`); refused past 8 bytes.
fn bits_suffix(op: &str, dtype: DType) -> Result<&'static str> {
    match width(op, dtype)? {
        1 => Ok("b1"),
        2 => Ok("b2"),
        4 => Ok("b4"),
        8 => Ok("b8"),
        other => Err(KernelError::Invalid(format!("{op}: {dtype} elements ({other} bytes) cannot be selected"))),
    }
}

fn run_where(_: &Where, launch: Launch<'_>) -> Result<()> {
    let (c, a, b, y) = (&launch.inputs[0], &launch.inputs[1], &launch.inputs[2], &launch.outputs[0]);
    let n = y.numel();
    if n == 0 {
        return Ok(());
    }
    let (device, shape) = (y.device(), y.shape());
    let bits = bits_suffix("where", y.dtype())?;
    let mut args = Args::new();
    let f = if [c, a, b].iter().all(|t| t.is_contiguous() && t.shape() == shape) {
        args.ptr(device_ptr(c)).ptr(device_ptr(a)).ptr(device_ptr(b)).ptr(device_ptr(y)).i64(n);
        function(device, &SOURCE, format_args!("where_{bits}"))?
    } else {
        let operands = [
            Operand::broadcast("where", c, shape)?,
            Operand::broadcast("where", a, shape)?,
            Operand::broadcast("where", b, shape)?,
        ];
        let ix = Indexer::new("where", shape, &operands)?;
        args.ptr(storage_ptr(c)).ptr(storage_ptr(a)).ptr(storage_ptr(b)).value(&ix).ptr(device_ptr(y));
        args.i64(n).i32(narrow(n));
        function(device, &SOURCE, format_args!("where_{bits}_strided"))?
    };
    f.launch(elementwise_grid(f.context(), n), [THREADS, 1, 1], 0, &mut args)
}

/// The bit pattern `masked_fill` writes (its low bytes), as the host kernel makes the value.
fn fill_bits(spec: &MaskedFill) -> Result<u64> {
    let dtype = spec.dtype;
    match (dtype, spec.value) {
        (DType::Float32, FillValue::Float(v)) => Ok(u64::from((v as f32).to_bits())),
        (DType::Float16, FillValue::Float(v)) => Ok(u64::from(f16::from_f32(v as f32).to_bits())),
        (DType::Bfloat16, FillValue::Float(v)) => Ok(u64::from(bf16::from_f32(v as f32).to_bits())),
        (DType::Float64, FillValue::Float(v)) => Ok(v.to_bits()),
        // within the dtype's range (the fill rule clamps): its two's complement low bytes
        (_, FillValue::Int(v)) if matches!(dtype.kind(), Kind::Int | Kind::Uint) => Ok(v as u64),
        (DType::Bool, FillValue::Bool(v)) => Ok(u64::from(v)),
        (other, value) => Err(KernelError::Invalid(format!("masked_fill: no fill of {other} with {value:?}"))),
    }
}

fn run_masked_fill(spec: &MaskedFill, launch: Launch<'_>) -> Result<()> {
    let (x, m, y) = (&launch.inputs[0], &launch.inputs[1], &launch.outputs[0]);
    let n = y.numel();
    if n == 0 {
        return Ok(());
    }
    let (device, shape) = (y.device(), y.shape());
    let fill = fill_bits(spec)?;
    let bits = bits_suffix("masked_fill", spec.dtype)?;
    let mut args = Args::new();
    let f = if [x, m].iter().all(|t| t.is_contiguous() && t.shape() == shape) {
        args.ptr(device_ptr(x)).ptr(device_ptr(m)).ptr(device_ptr(y)).i64(n);
        function(device, &SOURCE, format_args!("masked_fill_{bits}"))?
    } else {
        let operands = [Operand::broadcast("masked_fill", x, shape)?, Operand::broadcast("masked_fill", m, shape)?];
        let ix = Indexer::new("masked_fill", shape, &operands)?;
        args.ptr(storage_ptr(x)).ptr(storage_ptr(m)).value(&ix).ptr(device_ptr(y)).i64(n).i32(narrow(n));
        function(device, &SOURCE, format_args!("masked_fill_{bits}_strided"))?
    };
    args.i64(fill as i64);
    f.launch(elementwise_grid(f.context(), n), [THREADS, 1, 1], 0, &mut args)
}

/// Registers `where` (on its bool condition) and `masked_fill` on every dtype its spec takes
/// (a fill writes bit patterns: float64 included).
pub fn register_all(table: &mut LaunchTable) {
    register(table, "where", &[DType::Bool], run_where);
    let dtypes = crate::ops::spec::op("masked_fill").map(|d| d.dtypes()).unwrap_or_default();
    register(table, "masked_fill", &dtypes, run_masked_fill);
}
