//! Binary ops with numpy broadcasting on the GPU, as the CPU kernels: add, sub, mul, div, pow,
//! maximum, minimum on float32, float16 and bfloat16 (computed in float32; maximum and minimum
//! propagate NaN); add, sub, mul (wrapping around), maximum and minimum on the integers
//! (int8 … int64, uint8 … uint64): `kernels/binary.cu`, the floats and the integers compiled
//! apart.
//!
//! Operands of the output's shape, both contiguous, take 16-byte accesses; broadcast operands
//! whose innermost dim is contiguous or broadcast take 16-byte words per row; any other layout
//! (transposed, narrowed, broadcast inside) is read element by element through its strides.

use super::declared::CudaKernel;
use super::grid::{elementwise_grid, THREADS};
use super::indexer::{narrow, Indexer, Operand};
use super::{device_ptr, function, suffix, Args, KernelSource, FLOATS};
use crate::backend::CapabilityTable;
use crate::dtype::DType;
use crate::kernel::{KernelError, Launch, Result};
use crate::tensor::Tensor;

macro_rules! group {
    ($define:literal, $name:literal) => {
        KernelSource {
            name: $name,
            text: concat!(
                "#define ",
                $define,
                "\n",
                include_str!("kernels/indexer.cuh"),
                include_str!("kernels/integers.cuh"),
                "#line 1 \"binary.cu\"\n",
                include_str!("kernels/binary.cu")
            ),
        }
    };
}

/// The binary kernels on the floats.
pub static SOURCE: KernelSource = group!("NBX_BINARY_FLOATS", "binary.cu");
/// The binary kernels on the integers.
pub static INTEGER_SOURCE: KernelSource = group!("NBX_BINARY_INTEGERS", "binary_integers.cu");

/// The integer dtypes the GPU kernels serve, with their suffix in kernel names.
pub const INTEGERS: [(DType, &str); 8] = [
    (DType::Int8, "i8"),
    (DType::Int16, "i16"),
    (DType::Int32, "i32"),
    (DType::Int64, "i64"),
    (DType::Uint8, "u8"),
    (DType::Uint16, "u16"),
    (DType::Uint32, "u32"),
    (DType::Uint64, "u64"),
];

/// The suffix of a float or integer `dtype` in kernel names, and whether it is a float; a
/// dtype the kernels do not serve is refused naming op, dtype and backend.
pub fn float_or_integer(op: &str, dtype: DType) -> Result<(&'static str, bool)> {
    match INTEGERS.iter().find(|(d, _)| *d == dtype) {
        Some(&(_, suffix)) => Ok((suffix, false)),
        None => Ok((suffix(op, dtype)?, true)),
    }
}

/// The address of a tensor's storage (its elements are found by offset and strides).
pub fn storage_ptr(tensor: &Tensor) -> u64 {
    tensor.storage().as_ptr() as u64
}

/// The width of `dtype`'s elements, as a kernel error.
pub fn width(op: &str, dtype: DType) -> Result<i64> {
    dtype.itemsize().map(|w| w as i64).map_err(|e| KernelError::Invalid(format!("{op}: {e}")))
}

/// Whether every operand of `ix` reads its innermost dim in 16-byte words (stride 1, aligned
/// rows) or as a splat (stride 0), and that dim holds whole words.
pub fn rows_fit(ix: &Indexer, operands: &[&Tensor], per_word: i64) -> bool {
    ix.shape[0] % per_word == 0
        && operands
            .iter()
            .enumerate()
            .all(|(k, t)| ix.strides[k][0] == 0 || ix.rows_of_words(k, per_word, storage_ptr(t)))
}

fn run(kernel: &CudaKernel, launch: Launch<'_>) -> Result<()> {
    let (a, b, y) = (&launch.inputs[0], &launch.inputs[1], &launch.outputs[0]);
    let n = y.numel();
    if n == 0 {
        return Ok(());
    }
    let (op, device, shape) = (kernel.op, y.device(), y.shape());
    let (dtype_suffix, float) = float_or_integer(op, kernel.dtype)?;
    let source = if float { &SOURCE } else { &INTEGER_SOURCE };
    let mut args = Args::new();
    if a.is_contiguous() && b.is_contiguous() && a.shape() == shape && b.shape() == shape {
        args.ptr(device_ptr(a)).ptr(device_ptr(b)).ptr(device_ptr(y)).i64(n);
        let f = function(device, source, format_args!("binary_{op}_{dtype_suffix}"))?;
        return f.launch(elementwise_grid(f.context(), n), [THREADS, 1, 1], 0, &mut args);
    }
    let ix = Indexer::new(op, shape, &[Operand::broadcast(op, a, shape)?, Operand::broadcast(op, b, shape)?])?;
    let per_word = 16 / width(op, kernel.dtype)?;
    args.ptr(storage_ptr(a)).ptr(storage_ptr(b)).value(&ix).ptr(device_ptr(y));
    if device_ptr(y) % 16 == 0 && rows_fit(&ix, &[a, b], per_word) {
        args.i64(n / per_word).i32(narrow(n));
        let f = function(device, source, format_args!("binary_{op}_{dtype_suffix}_rows"))?;
        return f.launch(elementwise_grid(f.context(), n / per_word), [THREADS, 1, 1], 0, &mut args);
    }
    args.i64(n).i32(narrow(n));
    let f = function(device, source, format_args!("binary_{op}_{dtype_suffix}_strided"))?;
    f.launch(elementwise_grid(f.context(), n), [THREADS, 1, 1], 0, &mut args)
}

/// Registers the binary ops: every one on the float dtypes; add, sub, mul, maximum and minimum
/// on the integers.
pub fn register(table: &mut CapabilityTable) {
    let floats: Vec<DType> = FLOATS.iter().map(|(d, _)| *d).collect();
    let all: Vec<DType> = FLOATS.iter().chain(&INTEGERS).map(|(d, _)| *d).collect();
    macro_rules! op {
        ($name:literal, $dtypes:expr) => {
            table.register($name, $dtypes, |dtype, attrs| CudaKernel::new($name, dtype, attrs, run))
        };
    }
    op!("add", &all);
    op!("sub", &all);
    op!("mul", &all);
    op!("div", &floats);
    op!("pow", &floats);
    op!("maximum", &all);
    op!("minimum", &all);
}
