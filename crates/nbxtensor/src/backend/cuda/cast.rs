//! Casts on the GPU between float32, float16, bfloat16, the integers and bool (every pair of
//! them), element for element as the CPU kernel converts: `kernels/cast.cu`. float64, the
//! 8-bit floats and the complex dtypes are not served here.
//!
//! The kernels are compiled in four groups by source dtype (floats, signed, unsigned, bool),
//! each its own module, so that a first cast compiles a quarter of the pairs.

use super::binary::storage_ptr;
use super::declared::CudaKernel;
use super::grid::{elementwise_grid, THREADS};
use super::indexer::{narrow, Indexer, Operand};
use super::{device_ptr, function, Args, KernelSource};
use crate::backend::CapabilityTable;
use crate::dtype::DType;
use crate::kernel::{Attrs, Kernel, KernelError, Launch, Result};

macro_rules! group {
    ($define:literal, $name:literal) => {
        KernelSource {
            name: $name,
            text: concat!(
                "#define ",
                $define,
                "\n",
                include_str!("kernels/indexer.cuh"),
                "#line 1 \"cast.cu\"\n",
                include_str!("kernels/cast.cu")
            ),
        }
    };
}

/// The casts from float32, float16 and bfloat16.
pub static FROM_FLOATS: KernelSource = group!("NBX_CAST_FROM_FLOATS", "cast_from_floats.cu");
/// The casts from the signed integers.
pub static FROM_SIGNED: KernelSource = group!("NBX_CAST_FROM_SIGNED", "cast_from_signed.cu");
/// The casts from the unsigned integers.
pub static FROM_UNSIGNED: KernelSource = group!("NBX_CAST_FROM_UNSIGNED", "cast_from_unsigned.cu");
/// The casts from bool.
pub static FROM_BOOL: KernelSource = group!("NBX_CAST_FROM_BOOL", "cast_from_bool.cu");

/// Each dtype served, its suffix in kernel names and the source holding the casts from it.
static DTYPES: [(DType, &str, &KernelSource); 12] = [
    (DType::Float32, "f32", &FROM_FLOATS),
    (DType::Float16, "f16", &FROM_FLOATS),
    (DType::Bfloat16, "bf16", &FROM_FLOATS),
    (DType::Int8, "i8", &FROM_SIGNED),
    (DType::Int16, "i16", &FROM_SIGNED),
    (DType::Int32, "i32", &FROM_SIGNED),
    (DType::Int64, "i64", &FROM_SIGNED),
    (DType::Uint8, "u8", &FROM_UNSIGNED),
    (DType::Uint16, "u16", &FROM_UNSIGNED),
    (DType::Uint32, "u32", &FROM_UNSIGNED),
    (DType::Uint64, "u64", &FROM_UNSIGNED),
    (DType::Bool, "bool", &FROM_BOOL),
];

/// The suffix and source of a served dtype; a pair with another dtype is refused naming both.
fn served(from: DType, to: DType, dtype: DType) -> Result<(&'static str, &'static KernelSource)> {
    DTYPES.iter().find(|(d, _, _)| *d == dtype).map(|&(_, suffix, source)| (suffix, source)).ok_or_else(|| {
        KernelError::Missing { op: "cast".into(), dtype: format!("{from} to {to}"), backend: "cuda".into() }
    })
}

fn run(kernel: &CudaKernel, launch: Launch<'_>) -> Result<()> {
    let (x, y) = (&launch.inputs[0], &launch.outputs[0]);
    let n = y.numel();
    if n == 0 {
        return Ok(());
    }
    let (from, to) = (kernel.dtype, y.dtype());
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

fn build(from: DType, attrs: &Attrs) -> Result<Box<dyn Kernel>> {
    let kernel = CudaKernel::new("cast", from, attrs, run)?;
    let to = attrs.dtype("cast", "dtype")?;
    served(from, to, to)?;
    Ok(kernel)
}

/// Registers `cast` from each served dtype (to each served dtype: others are refused by name).
pub fn register(table: &mut CapabilityTable) {
    let dtypes: Vec<DType> = DTYPES.iter().map(|(d, _, _)| *d).collect();
    table.register("cast", &dtypes, build);
}
