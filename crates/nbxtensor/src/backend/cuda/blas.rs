//! Matrix products on the GPU through cuBLASLt: `matmul` (numpy's rules, batch dims broadcast,
//! transposes as attributes) and `linear` (`x · weightᵀ + bias`, the bias added by cuBLASLt's
//! epilogue), on float32, float16 and bfloat16 with float32 accumulation. TF32 is off: float32
//! products are computed in full float32.
//!
//! The row-major product `C = A · B` is computed as the column-major `Cᵀ = Bᵀ · Aᵀ`; each
//! operand is read in place through its strides when one of its two matrix dims has unit
//! stride (a transposed view is a transposed operand), and its batch dims collapse to one
//! stride (a broadcast operand has stride 0); otherwise the product runs once per batch
//! matrix. An operand with no unit-stride matrix dim whose other stride spans it (a view stepping
//! over columns, rows broadcast with stride 0), or a strided bias, is declared unreadable: the op
//! call copies it to a contiguous tensor first.
//!
//! `linear` of at most `gemv::MAX_ROWS` rows in float16 or bfloat16 runs the library's own
//! GEMV instead (`gemv.rs`), where it serves the layout.
//!
//! The workspace cuBLASLt may use is declared ([`WORKSPACE_BYTES`]), in place of the CPU
//! kernel's widening buffer. Of the algorithms cuBLASLt's heuristic proposes for a shape (up to
//! [`ALGORITHMS`]), the autotune measures each at the shape's first call and keeps the fastest
//! in the proven-settings store (`tuning.rs`), for products of [`TUNED_FLOPS`] and more; smaller
//! ones run the heuristic's first.

use super::addressing::storage_ptr;
use super::copy::copy_elements;
use super::indexer::{Indexer, Operand};
use super::launch::{device_context, device_ptr};
use super::memory::{preload, require_symbols, CudaLibrary};
use super::{register_with_workspace, tuning};
use crate::backend::LaunchTable;
use crate::dtype::DType;
use crate::kernel::{KernelError, Launch, Result, TensorMeta};
use crate::memory::Device;
use crate::ops::spec::matmul::Product;
use crate::settings::autotune::TuneKey;
use crate::tensor::Tensor;
use cudarc::cublaslt::sys;
use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::{Mutex, OnceLock};

/// The workspace every GPU matrix product declares (what cuBLASLt asks for on Hopper).
pub const WORKSPACE_BYTES: u64 = 32 << 20;

/// Every cuBLASLt entry point this build calls.
const CUBLASLT_SYMBOLS: &[&str] = &[
    "cublasLtCreate",
    "cublasLtMatmul",
    "cublasLtMatmulAlgoGetHeuristic",
    "cublasLtMatmulDescCreate",
    "cublasLtMatmulDescSetAttribute",
    "cublasLtMatmulPreferenceCreate",
    "cublasLtMatmulPreferenceSetAttribute",
    "cublasLtMatrixLayoutCreate",
    "cublasLtMatrixLayoutSetAttribute",
    "cublasLtGetStatusName",
    "cublasLtGetVersion",
];

fn check(status: sys::cublasStatus_t, call: &str) -> Result<()> {
    if status == sys::cublasStatus_t::CUBLAS_STATUS_SUCCESS {
        return Ok(());
    }
    // SAFETY: returns a static string for any status.
    let name = unsafe { std::ffi::CStr::from_ptr(sys::cublasLtGetStatusName(status)) };
    Err(KernelError::Device(format!("{call} failed: {}", name.to_string_lossy())))
}

/// The cuBLASLt handle of a device (made at first use, after the library and its entry points
/// are found).
fn handle(device: Device) -> Result<sys::cublasLtHandle_t> {
    static LIBRARY: OnceLock<std::result::Result<(), String>> = OnceLock::new();
    LIBRARY
        .get_or_init(|| {
            preload(CudaLibrary::CublasLt).map_err(|e| format!("cuBLASLt is not available: {e}"))?;
            // SAFETY: the library is loaded, so culib() finds it by name.
            let lib = unsafe { sys::culib() };
            require_symbols(lib, "cuBLASLt", CUBLASLT_SYMBOLS)?;
            Ok(())
        })
        .clone()
        .map_err(KernelError::Device)?;
    static HANDLES: OnceLock<Mutex<HashMap<u32, usize>>> = OnceLock::new();
    let mut handles = HANDLES.get_or_init(|| Mutex::new(HashMap::new())).lock().unwrap_or_else(|e| e.into_inner());
    if let Some(&h) = handles.get(&device.index) {
        return Ok(h as sys::cublasLtHandle_t);
    }
    device_context(device)?;
    let mut h: sys::cublasLtHandle_t = std::ptr::null_mut();
    // SAFETY: the device's context is current; the pointer is valid.
    check(unsafe { sys::cublasLtCreate(&mut h) }, "cublasLtCreate")?;
    handles.insert(device.index, h as usize);
    Ok(h)
}

fn data_type(dtype: DType) -> Result<sys::cudaDataType_t> {
    match dtype {
        DType::Float32 => Ok(sys::cudaDataType_t::CUDA_R_32F),
        DType::Float16 => Ok(sys::cudaDataType_t::CUDA_R_16F),
        DType::Bfloat16 => Ok(sys::cudaDataType_t::CUDA_R_16BF),
        other => Err(KernelError::Missing { op: "matmul".into(), dtype: other.name().into(), backend: "cuda".into() }),
    }
}

/// One operand as a (batch of) matrices: rows × cols with their strides, in elements.
struct Matrix {
    rows: i64,
    cols: i64,
    row_stride: i64,
    col_stride: i64,
    batch: Vec<i64>,
    batch_strides: Vec<i64>,
}

fn matrix(t: &Tensor, left: bool, transposed: bool) -> Matrix {
    let (shape, strides) = (t.shape(), t.strides());
    let nd = shape.len();
    if nd == 1 {
        let (rows, cols, row_stride, col_stride) =
            if left { (1, shape[0], 0, strides[0]) } else { (shape[0], 1, strides[0], 0) };
        return Matrix { rows, cols, row_stride, col_stride, batch: Vec::new(), batch_strides: Vec::new() };
    }
    let (mut rows, mut cols, mut row_stride, mut col_stride) =
        (shape[nd - 2], shape[nd - 1], strides[nd - 2], strides[nd - 1]);
    if transposed {
        (rows, cols, row_stride, col_stride) = (cols, rows, col_stride, row_stride);
    }
    Matrix {
        rows,
        cols,
        row_stride,
        col_stride,
        batch: shape[..nd - 2].to_vec(),
        batch_strides: strides[..nd - 2].to_vec(),
    }
}

/// A stored matrix as cuBLASLt reads it (column-major): its op, rows, cols and leading dim.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Stored {
    transposed: bool,
    rows: i64,
    cols: i64,
    ld: i64,
}

/// How cuBLASLt reads `x`, the row-major `r × c` factor whose column-major transpose
/// (`c × r`) enters the product; refused without a unit-stride dim whose other stride spans
/// it.
fn stored(op: &str, which: &str, x: &Matrix) -> Result<Stored> {
    let (r, c) = (x.rows, x.cols);
    // cuBLASLt's leading dim spans a whole row (or column): rows that overlap (a stride-0
    // broadcast) are not such a layout, and are copied first
    if (x.col_stride == 1 || c <= 1) && (r <= 1 || x.row_stride >= c) {
        // row-major with leading dim row_stride: column-major c × r, as is
        return Ok(Stored { transposed: false, rows: c, cols: r, ld: x.row_stride.max(c).max(1) });
    }
    if (x.row_stride == 1 || r <= 1) && (c <= 1 || x.col_stride >= r) {
        // column-major r × c with leading dim col_stride: transposed
        return Ok(Stored { transposed: true, rows: r, cols: c, ld: x.col_stride.max(r).max(1) });
    }
    Err(KernelError::Invalid(format!(
        "{op} on cuda: operand {which} ({r} × {c}, strides {} and {}) is not a matrix cuBLASLt reads; make it contiguous first",
        x.row_stride, x.col_stride
    )))
}

/// The strides of `x` along the output's batch dims (0 where it is broadcast).
fn along(x: &Matrix, batch: &[i64]) -> Vec<i64> {
    let skip = batch.len() - x.batch.len();
    (0..batch.len())
        .map(|i| match i.checked_sub(skip) {
            Some(j) if x.batch[j] != 1 => x.batch_strides[j],
            _ => 0,
        })
        .collect()
}

/// One stride for the flattened batch, when the strides allow it.
fn flat(strides: &[i64], batch: &[i64]) -> Option<i64> {
    if strides.iter().all(|&s| s == 0) {
        return Some(0);
    }
    for i in 0..strides.len().saturating_sub(1) {
        if batch[i] > 1 && strides[i] != strides[i + 1] * batch[i + 1] {
            return None;
        }
    }
    strides.last().copied()
}

/// The most algorithms cuBLASLt's heuristic is asked for a shape: the autotune's candidates.
const ALGORITHMS: usize = 8;
/// The flops from which a product's algorithm is measured; a smaller one (under about 25 µs on
/// an H100) runs the heuristic's first. On an H100 the measurement kept the first at 4096³ and
/// gained 2.4% at 8192³, while at 1024³ the candidates differed by launch noise alone and their
/// first use (each algorithm's kernel loaded) took a fresh process's first product to 0.54 s,
/// against 0.105 s without the measurement and torch's 0.11 (docs/BENCHMARKS.md, fourteenth
/// session).
const TUNED_FLOPS: f64 = (1u64 << 34) as f64;

/// The cuBLASLt objects of one product shape, made once and reused: the heuristic's first
/// `count` algorithms, best first by its estimate.
#[derive(Clone, Copy)]
struct Prepared {
    desc: usize,
    layouts: [usize; 3],
    algos: [sys::cublasLtMatmulAlgo_t; ALGORITHMS],
    count: usize,
}

#[derive(Clone, PartialEq, Eq, Hash)]
struct ShapeKey {
    device: u32,
    dtype: DType,
    x: Stored,
    y: Stored,
    out: (i64, i64),
    batch: i32,
    strides: (i64, i64, i64),
    bias: bool,
    /// float32 operands rounded to TF32 on the matrix unit (`settings::host`).
    tf32: bool,
}

fn layout(dtype: sys::cudaDataType_t, rows: i64, cols: i64, ld: i64, batch: i32, stride: i64) -> Result<usize> {
    let mut l: sys::cublasLtMatrixLayout_t = std::ptr::null_mut();
    // SAFETY: pointers are valid; the attributes' sizes match their types.
    unsafe {
        check(
            sys::cublasLtMatrixLayoutCreate(&mut l, dtype, rows as u64, cols as u64, ld),
            "cublasLtMatrixLayoutCreate",
        )?;
        if batch > 1 {
            let set = |attr, value: *const c_void, size| {
                check(sys::cublasLtMatrixLayoutSetAttribute(l, attr, value, size), "cublasLtMatrixLayoutSetAttribute")
            };
            set(
                sys::cublasLtMatrixLayoutAttribute_t::CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
                (&batch as *const i32).cast(),
                4,
            )?;
            set(
                sys::cublasLtMatrixLayoutAttribute_t::CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                (&stride as *const i64).cast(),
                8,
            )?;
        }
    }
    Ok(l as usize)
}

fn prepare(key: &ShapeKey, handle: sys::cublasLtHandle_t) -> Result<Prepared> {
    static PREPARED: OnceLock<Mutex<HashMap<ShapeKey, Prepared>>> = OnceLock::new();
    let mut prepared = PREPARED.get_or_init(|| Mutex::new(HashMap::new())).lock().unwrap_or_else(|e| e.into_inner());
    if let Some(p) = prepared.get(key) {
        return Ok(*p);
    }
    let t = data_type(key.dtype)?;
    let mut desc: sys::cublasLtMatmulDesc_t = std::ptr::null_mut();
    // SAFETY: pointers are valid; attribute sizes match their types.
    unsafe {
        check(
            sys::cublasLtMatmulDescCreate(
                &mut desc,
                if key.tf32 {
                    sys::cublasComputeType_t::CUBLAS_COMPUTE_32F_FAST_TF32
                } else {
                    sys::cublasComputeType_t::CUBLAS_COMPUTE_32F
                },
                sys::cudaDataType_t::CUDA_R_32F,
            ),
            "cublasLtMatmulDescCreate",
        )?;
        let set = |attr, value: *const c_void, size| {
            check(sys::cublasLtMatmulDescSetAttribute(desc, attr, value, size), "cublasLtMatmulDescSetAttribute")
        };
        let (op_x, op_y) = (i32::from(key.x.transposed), i32::from(key.y.transposed));
        set(sys::cublasLtMatmulDescAttributes_t::CUBLASLT_MATMUL_DESC_TRANSA, (&op_x as *const i32).cast(), 4)?;
        set(sys::cublasLtMatmulDescAttributes_t::CUBLASLT_MATMUL_DESC_TRANSB, (&op_y as *const i32).cast(), 4)?;
        if key.bias {
            let epilogue = sys::cublasLtEpilogue_t::CUBLASLT_EPILOGUE_BIAS;
            set(
                sys::cublasLtMatmulDescAttributes_t::CUBLASLT_MATMUL_DESC_EPILOGUE,
                (&epilogue as *const sys::cublasLtEpilogue_t).cast(),
                std::mem::size_of::<sys::cublasLtEpilogue_t>(),
            )?;
        }
    }
    let layouts = [
        layout(t, key.x.rows, key.x.cols, key.x.ld, key.batch, key.strides.0)?,
        layout(t, key.y.rows, key.y.cols, key.y.ld, key.batch, key.strides.1)?,
        layout(t, key.out.0, key.out.1, key.out.0.max(1), key.batch, key.strides.2)?,
    ];
    let mut preference: sys::cublasLtMatmulPreference_t = std::ptr::null_mut();
    // SAFETY: a plain C struct, all zeros a valid value.
    let mut results: [sys::cublasLtMatmulHeuristicResult_t; ALGORITHMS] = unsafe { std::mem::zeroed() };
    let mut found = 0i32;
    // SAFETY: the objects were made above; pointers are valid.
    unsafe {
        check(sys::cublasLtMatmulPreferenceCreate(&mut preference), "cublasLtMatmulPreferenceCreate")?;
        let limit = WORKSPACE_BYTES as usize;
        check(
            sys::cublasLtMatmulPreferenceSetAttribute(
                preference,
                sys::cublasLtMatmulPreferenceAttributes_t::CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                (&limit as *const usize).cast(),
                std::mem::size_of::<usize>(),
            ),
            "cublasLtMatmulPreferenceSetAttribute",
        )?;
        let l = |i: usize| layouts[i] as sys::cublasLtMatrixLayout_t;
        check(
            sys::cublasLtMatmulAlgoGetHeuristic(
                handle,
                desc,
                l(0),
                l(1),
                l(2),
                l(2),
                preference,
                ALGORITHMS as i32,
                results.as_mut_ptr(),
                &mut found,
            ),
            "cublasLtMatmulAlgoGetHeuristic",
        )?;
    }
    if found == 0 {
        return Err(KernelError::Device("cublasLtMatmulAlgoGetHeuristic found no algorithm for this product".into()));
    }
    let count = (found as usize).min(ALGORITHMS);
    let p = Prepared { desc: desc as usize, layouts, algos: results.map(|r| r.algo), count };
    prepared.insert(key.clone(), p);
    Ok(p)
}

impl ShapeKey {
    /// The shape as the autotune's key spells it: the column-major product, its operands'
    /// reads and strides, the batch.
    fn spelled(&self) -> String {
        let read = |s: &Stored| format!("{}{}x{} ld{}", if s.transposed { "T" } else { "N" }, s.rows, s.cols, s.ld);
        let (sx, sy, so) = self.strides;
        format!(
            "out {}x{}, x {}, y {}, batch {} strides {sx}/{sy}/{so}",
            self.out.0,
            self.out.1,
            read(&self.x),
            read(&self.y),
            self.batch
        )
    }
}

/// Which of a shape's algorithms runs: proven in the autotune store for the device, the dtype
/// and epilogue with cuBLASLt's version, and the shape (the store's memory answers after the
/// first call), or measured now, each launched by `launch`;
/// while the stream records a graph and nothing is proven, the heuristic's first.
fn algorithm(
    key: &ShapeKey,
    prepared: &Prepared,
    device: Device,
    mut launch: impl FnMut(&sys::cublasLtMatmulAlgo_t) -> Result<()>,
) -> Result<usize> {
    if prepared.count == 1 {
        return Ok(0);
    }
    let context = device_context(device)?;
    // SAFETY: the library is loaded (its handle was made).
    let version = unsafe { sys::cublasLtGetVersion() };
    let tf32 = if key.tf32 { "_tf32" } else { "" };
    let bias = if key.bias { "_bias" } else { "" };
    let tune_key = TuneKey::new(
        tuning::device_key(context.info()),
        format!("cublaslt_{}{tf32}{bias} v{version}", key.dtype.launch_key()),
        key.spelled(),
    );
    let names: Vec<String> = (0..prepared.count).map(|i| format!("h{i}")).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let index_of = |name: &str| {
        names.iter().position(|n| *n == name).ok_or_else(|| {
            KernelError::Invalid(format!("matmul on cuda: the autotune chose {name}, not one of {}", names.join(", ")))
        })
    };
    let op = if key.bias { "linear" } else { "matmul" };
    let choice = tuning::choice(context, op, &tune_key, &names, tuning::Timing::BackToBack, |name| {
        launch(&prepared.algos[index_of(name)?])
    })?;
    choice.map_or(Ok(0), |name| index_of(&name))
}

fn run(spec: &Product, launch: Launch<'_>) -> Result<()> {
    let op = spec.op;
    let (a, b, y) = (&launch.inputs[0], &launch.inputs[1], &launch.outputs[0]);
    let (ta, tb) = (spec.transpose_a, spec.transpose_b);
    let (ma, mb) = (matrix(a, true, ta), matrix(b, false, tb));
    let (m, n, k) = (ma.rows, mb.cols, ma.cols);
    if m == 0 || n == 0 || y.numel() == 0 {
        return Ok(());
    }
    if super::gemv::linear(spec, &launch)? {
        return Ok(());
    }
    let device = y.device();
    let bias = launch.inputs.get(2);
    if k == 0 {
        let itemsize = y.dtype().itemsize().map_err(crate::tensor::TensorError::from)? as i64;
        if let Some(bias) = bias {
            // an empty sum plus the bias: the bias broadcast over the rows
            let operands = [Operand::broadcast(op, bias, y.shape())?, Operand::contiguous(op, y.shape(), 0)?];
            let ix = Indexer::new(op, y.shape(), &operands)?;
            return copy_elements(op, device, &ix, storage_ptr(bias), device_ptr(y), y.numel(), itemsize);
        }
        let bytes = y.numel() as usize * y.dtype().itemsize().map_err(crate::tensor::TensorError::from)?;
        let allocator = super::memory::cuda_allocator(device.index).map_err(crate::tensor::TensorError::from)?;
        return allocator.zero(y.data_ptr() as u64, bytes).map_err(|e| KernelError::Tensor(e.into()));
    }
    if let Some(bias) = bias {
        if bias.strides() != [1] && bias.numel() > 1 {
            return Err(KernelError::Invalid(format!("{op} on cuda: the bias must be contiguous; copy it first")));
        }
    }
    let out_batch = crate::shape::broadcast_shapes(&[&ma.batch, &mb.batch])
        .map_err(|e| KernelError::Invalid(format!("{op}: batch dims: {e}")))?;
    let batch_count: i64 = out_batch.iter().product();
    // column-major: Dᵀ (n × m) = X (from b) · Y (from a)
    let (x, yy) = (stored(op, "b", &mb)?, stored(op, "a", &ma)?);
    let (sx, sy) = (along(&mb, &out_batch), along(&ma, &out_batch));
    let itemsize = y.dtype().itemsize().map_err(crate::tensor::TensorError::from)? as u64;
    let handle = handle(device)?;
    let stream = device_context(device)?.stream() as sys::cudaStream_t;
    let (alpha, beta) = (1f32, 0f32);
    let product = |batch: i32, strides: (i64, i64, i64), offsets: (i64, i64, i64)| -> Result<()> {
        let key = ShapeKey {
            device: device.index,
            dtype: spec.dtype,
            x,
            y: yy,
            out: (n, m),
            batch,
            strides,
            bias: bias.is_some(),
            tf32: spec.dtype == DType::Float32
                && crate::settings::host::matrix_operands() == crate::settings::host::MatrixOperands::Tf32,
        };
        let p = prepare(&key, handle)?;
        let desc = p.desc as sys::cublasLtMatmulDesc_t;
        if let Some(bias) = bias {
            let pointer = bias.data_ptr() as u64;
            // SAFETY: the descriptor is ours; the size matches a device pointer.
            check(
                unsafe {
                    sys::cublasLtMatmulDescSetAttribute(
                        desc,
                        sys::cublasLtMatmulDescAttributes_t::CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                        (&pointer as *const u64).cast(),
                        8,
                    )
                },
                "cublasLtMatmulDescSetAttribute",
            )?;
        }
        let l = |i: usize| p.layouts[i] as sys::cublasLtMatrixLayout_t;
        let at = |t: &Tensor, offset: i64| (t.data_ptr() as u64 + offset as u64 * itemsize) as *const c_void;
        let matmul = |algo: &sys::cublasLtMatmulAlgo_t| {
            // SAFETY: every pointer addresses the launch's tensors within their layouts (checked
            // when the layouts were derived); the workspace holds WORKSPACE_BYTES on the device.
            check(
                unsafe {
                    sys::cublasLtMatmul(
                        handle,
                        desc,
                        (&alpha as *const f32).cast(),
                        at(b, offsets.0),
                        l(0),
                        at(a, offsets.1),
                        l(1),
                        (&beta as *const f32).cast(),
                        at(y, offsets.2),
                        l(2),
                        at(y, offsets.2) as *mut c_void,
                        l(2),
                        algo,
                        launch.workspace.device_ptr() as *mut c_void,
                        launch.workspace.len(),
                        stream,
                    )
                },
                "cublasLtMatmul",
            )
        };
        let flops = 2.0 * (m * n * k) as f64 * f64::from(batch);
        let index = if flops >= TUNED_FLOPS { algorithm(&key, &p, device, matmul)? } else { 0 };
        matmul(&p.algos[index])
    };
    match (flat(&sx, &out_batch), flat(&sy, &out_batch)) {
        (Some(fx), Some(fy)) => product(batch_count as i32, (fx, fy, m * n), (0, 0, 0)),
        _ => {
            // one product per batch matrix, at its offsets
            for index in 0..batch_count {
                let (mut rest, mut ox, mut oy) = (index, 0, 0);
                for d in (0..out_batch.len()).rev() {
                    let i = rest % out_batch[d];
                    rest /= out_batch[d];
                    ox += i * sx[d];
                    oy += i * sy[d];
                }
                product(1, (0, 0, 0), (ox, oy, index * m * n))?;
            }
            Ok(())
        }
    }
}

/// cuBLASLt's workspace, whatever the shapes.
fn workspace(_: &Product, _: &[TensorMeta]) -> Result<u64> {
    Ok(WORKSPACE_BYTES)
}

/// The first operand cuBLASLt cannot read in place: a factor that is not such a matrix ([`stored`]),
/// or a bias that is not contiguous (the op call copies it first).
fn unreadable(spec: &Product, inputs: &[&Tensor]) -> Option<usize> {
    let factor = |i: usize, left: bool, transposed: bool| {
        let t = inputs.get(i)?;
        let which = if left { "a" } else { "b" };
        (t.ndim() > 0 && stored(spec.op, which, &matrix(t, left, transposed)).is_err()).then_some(i)
    };
    factor(0, true, spec.transpose_a).or_else(|| factor(1, false, spec.transpose_b)).or_else(|| {
        let bias = inputs.get(2)?;
        (bias.strides() != [1] && bias.numel() > 1).then_some(2)
    })
}

/// Registers matmul and linear on float32, float16 and bfloat16.
pub fn register_all(table: &mut LaunchTable) {
    for op in ["matmul", "linear"] {
        register_with_workspace(table, op, &crate::ops::spec::FLOATS, run, workspace);
        table.reads_only(op, &crate::ops::spec::FLOATS, unreadable);
    }
}
