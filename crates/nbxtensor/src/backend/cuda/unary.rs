//! Unary ops on the GPU (float32, float16, bfloat16, computed in float32): `kernels/unary.cu`.

use super::declared::CudaKernel;
use super::grid::{elementwise_grid, THREADS};
use super::{device_ptr, function, Args, KernelSource, Layout};
use crate::backend::CapabilityTable;
use crate::dtype::DType;
use crate::kernel::{Launch, Result};

/// The source of the unary kernels.
pub static SOURCE: KernelSource = KernelSource { name: "unary.cu", text: include_str!("kernels/unary.cu") };

/// The float dtypes the GPU kernels serve, with their suffix in kernel names.
pub const FLOATS: [(DType, &str); 3] = [(DType::Float32, "f32"), (DType::Float16, "f16"), (DType::Bfloat16, "bf16")];

/// The suffix of `dtype` in kernel names; refused for a dtype the GPU kernels do not serve.
pub fn suffix(op: &str, dtype: DType) -> Result<&'static str> {
    FLOATS.iter().find(|(d, _)| *d == dtype).map(|(_, s)| *s).ok_or_else(|| crate::kernel::KernelError::Missing {
        op: op.to_string(),
        dtype: dtype.name().to_string(),
        backend: "cuda".to_string(),
    })
}

fn run(kernel: &CudaKernel, launch: Launch<'_>) -> Result<()> {
    let (x, y) = (&launch.inputs[0], &launch.outputs[0]);
    let n = y.numel();
    let device = y.device();
    let (op, dt) = (kernel.op, suffix(kernel.op, kernel.dtype)?);
    let mut args = Args::new();
    let f = if x.is_contiguous() {
        args.ptr(device_ptr(x)).ptr(device_ptr(y)).i64(n);
        function(device, &SOURCE, format_args!("unary_{op}_{dt}"))?
    } else {
        args.ptr(x.storage().as_ptr() as u64).value(&Layout::of(x)?).ptr(device_ptr(y)).i64(n);
        function(device, &SOURCE, format_args!("unary_{op}_{dt}_strided"))?
    };
    f.launch(elementwise_grid(f.context(), n), [THREADS, 1, 1], 0, &mut args)
}

/// Registers the unary ops on the float dtypes.
pub fn register(table: &mut CapabilityTable) {
    let dtypes: Vec<DType> = FLOATS.iter().map(|(d, _)| *d).collect();
    macro_rules! op {
        ($name:literal) => {
            table.register($name, &dtypes, |dtype, attrs| CudaKernel::new($name, dtype, attrs, run))
        };
    }
    op!("neg");
    op!("abs");
    op!("exp");
    op!("log");
    op!("sqrt");
    op!("rsqrt");
    op!("tanh");
    op!("sigmoid");
    op!("silu");
    op!("gelu");
    op!("gelu_tanh");
    op!("relu");
}
