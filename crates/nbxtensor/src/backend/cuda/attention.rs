//! Scaled dot-product attention on the GPU (`kernels/attention.cu`): `sdpa(q, k, v[, mask])`
//! with the attributes `causal` and `scale`, with the CPU kernel's operands, shapes and
//! semantics (`backend/cpu/attention.rs`), on float32, float16 and bfloat16.
//!
//! Two paths: a flash-attention style prefill kernel (tiles of keys and values in shared
//! memory, an online softmax, float32 accumulation; no workspace), and for one query row over
//! more than [`DECODE_CHUNK`] keys a split-K decode kernel: each block writes a partial
//! (max, sum, accumulator) to the workspace and a second kernel combines them in order. The
//! workspace is declared for exactly that: `4·b·hq·splits·(2 + dv)` bytes, 0 otherwise.
//!
//! On float16 and bfloat16, prefill is cuDNN's fused flash attention (`cudnn::attention`)
//! wherever it applies ([`fused`]): the declaration reserves its workspace, and a launch takes
//! it when the probabilities are rounded to the inputs' dtype (the default attention operands
//! of `settings::host`; `float32` probabilities are this file's kernel) and the operands' strides
//! and addresses suit it (unit-stride head dims, 16-byte aligned). Without cuDNN such a launch
//! is an error that says so, never the slower kernel in its place.

use super::cudnn::attention::{self as fused_attention, Addresses, Call, Layout};
use super::dims::{grid_extent, workspace_of};
use super::{device_ptr, function, register_with_workspace, Args};
use crate::backend::LaunchTable;
use crate::dtype::DType;
use crate::kernel::{KernelError, Launch, Result, TensorMeta};
use crate::ops::spec::attention::Sdpa;
use crate::ops::spec::FLOATS;
use crate::shape;
use crate::tensor::Tensor;

pub use super::source::ATTENTION as SOURCE;

/// Keys per split of the decode kernel (`NBX_CHUNK` of the source).
pub const DECODE_CHUNK: i64 = 256;
/// Query rows per prefill block, keys per tile, output columns per block (`NBX_BQ`,
/// `NBX_BK`, `NBX_SLICE` of the source).
const QUERY_ROWS: i64 = 16;
const KEY_TILE: u64 = 32;
const SLICE: i64 = 256;
/// Threads per block of the prefill and decode kernels (4 warps), and of the combine kernel.
const THREADS: u32 = 128;
const COMBINE_THREADS: u32 = 256;
/// The most grid blocks in the y and z dims.
const GRID_YZ: u32 = 65535;
/// Dynamic shared memory a block gets without opting in.
const DEFAULT_SHARED: u64 = 48 * 1024;

/// Element strides of a 4-d operand (the source's `Strides`).
#[repr(C)]
#[derive(Clone, Copy)]
struct Strides([i64; 4]);

/// Extents and flags of a call (the source's `Sizes`).
#[repr(C)]
#[derive(Clone, Copy)]
struct Sizes {
    b: i32,
    hq: i32,
    hk: i32,
    sq: i32,
    sk: i32,
    d: i32,
    dv: i32,
    causal: i32,
    masked: i32,
    round_p: i32,
}

/// `(b, hq, sq, sk, dv)` of q, k, v shapes (checked by the declaration).
fn extents(q: &[i64], k: &[i64], v: &[i64]) -> Result<(i64, i64, i64, i64, i64)> {
    match (q, k, v) {
        ([b, hq, sq, _], [_, _, sk, _], [_, _, _, dv]) => Ok((*b, *hq, *sq, *sk, *dv)),
        _ => Err(KernelError::Invalid(format!("sdpa: q, k, v must be 4-d, got {q:?}, {k:?}, {v:?}"))),
    }
}

/// Splits of the decode path for these shapes (None: the prefill path serves them).
fn decode_splits(sq: i64, sk: i64) -> Option<i64> {
    (sq == 1 && sk > DECODE_CHUNK).then(|| (sk + DECODE_CHUNK - 1) / DECODE_CHUNK)
}

/// Bytes of the decode path's partials: (max, sum, dv values) in float32 per split, batch and head.
fn partial_bytes(b: i64, hq: i64, splits: i64, dv: i64) -> u64 {
    4 * (b * hq * splits * (2 + dv)) as u64
}

/// The device workspace: the decode path's partials, cuDNN's where it serves, else nothing.
fn workspace(spec: &Sdpa, inputs: &[TensorMeta]) -> Result<u64> {
    let [q, k, v, ..] = inputs else { return Ok(0) };
    let (b, hq, sq, sk, dv) = extents(&q.shape, &k.shape, &v.shape)?;
    if fused(spec, inputs)? {
        return Ok(fused_attention::WORKSPACE_BYTES);
    }
    Ok(decode_splits(sq, sk).map_or(0, |splits| partial_bytes(b, hq, splits, dv)))
}

/// Whether cuDNN's fused attention serves calls of these operands, from their shapes alone:
/// float16 or bfloat16; one head dim for keys and values, a multiple of 8 up to 128; not the
/// decode path; causal only with `sq ≤ sk`; a mask only without a causal offset, of full
/// `[sq, sk]` rows, broadcast over batch and heads at most.
fn fused(spec: &Sdpa, inputs: &[TensorMeta]) -> Result<bool> {
    if !matches!(spec.dtype, DType::Float16 | DType::Bfloat16) {
        return Ok(false);
    }
    let z = spec.sizes(inputs)?;
    let sizes_fit = z.d == z.dv && z.d % 8 == 0 && (8..=128).contains(&z.d) && z.b * z.hq * z.sq * z.sk > 0;
    if !sizes_fit || decode_splits(z.sq as i64, z.sk as i64).is_some() || spec.causal && z.sq > z.sk {
        return Ok(false);
    }
    Ok(match inputs.get(3) {
        None => true,
        Some(mask) => {
            let full = [z.b as i64, z.hq as i64, z.sq as i64, z.sk as i64];
            let dims = padded(&mask.shape);
            !(spec.causal && z.sq != z.sk)
                && dims[2..] == full[2..]
                && (0..2).all(|i| dims[i] == 1 || dims[i] == full[i])
        }
    })
}

/// A shape of at most 4 dims as 4, ones in front.
fn padded(shape: &[i64]) -> [i64; 4] {
    let mut dims = [1; 4];
    dims[4 - shape.len()..].copy_from_slice(shape);
    dims
}

/// The operand as cuDNN's tensor, when its head dim has unit stride and the rest are whole
/// multiples of 16 bytes from a 16-byte aligned address; `None` otherwise.
fn cudnn_layout(t: &Tensor) -> Option<Layout> {
    let dims = padded(t.shape());
    let given = t.strides();
    let mut strides = [0; 4];
    strides[4 - given.len()..].copy_from_slice(given);
    // float16 and bfloat16 only reach here (`fused`): 8 elements in 16 bytes
    let per16 = 16 / t.dtype().itemsize().ok()? as i64;
    let unit = dims[3] == 1 || strides[3] == 1;
    let whole = (0..3).all(|i| dims[i] == 1 || strides[i] % per16 == 0);
    (unit && whole && device_ptr(t) % 16 == 0).then(|| {
        // a dim of extent 1 may carry any stride: cuDNN is given a tidy one
        for i in (0..4).rev() {
            if dims[i] == 1 {
                strides[i] = if i == 3 { 1 } else { strides[i + 1] * dims[i + 1] };
            }
        }
        Layout { dims, strides }
    })
}

/// The launch through cuDNN, when the probabilities are rounded to the inputs' dtype and every
/// operand's layout suits it; `Ok(false)` leaves the launch to this file's kernels.
fn run_fused(spec: &Sdpa, launch: &Launch<'_>) -> Result<bool> {
    let rounded = crate::settings::host::attention_operands() == crate::settings::host::AttentionOperands::Input;
    if !rounded || !matches!(spec.dtype, DType::Float16 | DType::Bfloat16) {
        return Ok(false);
    }
    let metas: Vec<TensorMeta> = launch.inputs.iter().map(|t| TensorMeta::new(t.dtype(), t.shape())).collect();
    if !fused(spec, &metas)? {
        return Ok(false);
    }
    let (q, k, v, out) = (&launch.inputs[0], &launch.inputs[1], &launch.inputs[2], &launch.outputs[0]);
    let layouts = [q, k, v, out].map(cudnn_layout);
    let mask = launch.inputs.get(3);
    let (Some(lq), Some(lk), Some(lv), Some(lo)) = (layouts[0], layouts[1], layouts[2], layouts[3]) else {
        return Ok(false);
    };
    let mask_layout = match mask.map(cudnn_layout) {
        Some(None) => return Ok(false),
        given => given.flatten(),
    };
    let z = spec.sizes(&metas)?;
    let call = Call {
        device: out.device(),
        dtype: spec.dtype,
        shape: z,
        causal: spec.causal,
        scale: spec.scale_for(z.d).to_bits(),
        operands: [lq, lk, lv, lo],
        mask: mask_layout,
    };
    super::cudnn::version().map_err(|e| {
        KernelError::Device(format!(
            "sdpa on {} is cuDNN's fused attention on CUDA, and {e}; install cuDNN 9 \
             (pip install nvidia-cudnn-cu13), or keep attention's probabilities in float32 \
             (nbxtensor.host.set_attention_operands) for this backend's own kernel",
            spec.dtype
        ))
    })?;
    let plan = fused_attention::plan(&call)?;
    let workspace = workspace_of("sdpa", &launch.workspace, plan.workspace)?;
    let at = Addresses {
        operands: [device_ptr(q), device_ptr(k), device_ptr(v), device_ptr(out)],
        mask: mask.map_or(0, device_ptr),
        workspace,
    };
    fused_attention::execute(out.device(), &plan, &at)?;
    Ok(true)
}

fn strides_of(t: &Tensor) -> Strides {
    let s = t.strides();
    Strides([s[0], s[1], s[2], s[3]])
}

fn int(value: i64) -> Result<i32> {
    i32::try_from(value)
        .map_err(|_| KernelError::Invalid(format!("sdpa: extent {value} exceeds the CUDA kernels' range")))
}

fn run(spec: &Sdpa, launch: Launch<'_>) -> Result<()> {
    let (q, k, v, out) = (&launch.inputs[0], &launch.inputs[1], &launch.inputs[2], &launch.outputs[0]);
    if out.numel() == 0 || run_fused(spec, &launch)? {
        return Ok(());
    }
    let (b, hq, sq, sk, dv) = extents(q.shape(), k.shape(), v.shape())?;
    let (hk, d) = (k.shape()[1], q.shape()[3]);
    let scale = spec.scale_for(d as usize);
    let (mask, mask_strides) = match launch.inputs.get(3) {
        Some(m) => {
            let target = [b, hq, sq, sk];
            let s = shape::broadcast_strides(m.shape(), m.strides(), &target)
                .map_err(|e| KernelError::Invalid(format!("sdpa: mask: {e}")))?;
            (device_ptr(m), Strides([s[0], s[1], s[2], s[3]]))
        }
        None => (0, Strides([0; 4])),
    };
    let sizes = Sizes {
        b: int(b)?,
        hq: int(hq)?,
        hk: int(hk)?,
        sq: int(sq)?,
        sk: int(sk)?,
        d: int(d)?,
        dv: int(dv)?,
        causal: i32::from(spec.causal),
        masked: i32::from(mask != 0),
        round_p: i32::from(
            spec.dtype != crate::dtype::DType::Float32
                && crate::settings::host::attention_operands() == crate::settings::host::AttentionOperands::Input,
        ),
    };
    let dt = spec.dtype.launch_key();
    let device = out.device();
    let slices = (dv + SLICE - 1) / SLICE;
    let z = grid_extent("sdpa", b * slices, 1, GRID_YZ)?;
    let y = grid_extent("sdpa", hq, 1, GRID_YZ)?;
    let mut args = Args::new();
    args.ptr(device_ptr(q)).value(&strides_of(q)).ptr(device_ptr(k)).value(&strides_of(k));
    args.ptr(device_ptr(v)).value(&strides_of(v)).ptr(mask).value(&mask_strides).value(&sizes).f32(scale);
    let (d, width) = (d as u64, dv.min(SLICE) as u64);
    if let Some(splits) = decode_splits(sq, sk) {
        let partials = workspace_of("sdpa", &launch.workspace, partial_bytes(b, hq, splits, dv))?;
        let warps = u64::from(THREADS / 32);
        let shared = 4 * (d + 2 * warps + warps * SLICE as u64);
        let f = function(device, &SOURCE, format_args!("attention_decode_{dt}"))?;
        allow(&f, shared)?;
        args.ptr(partials).i32(int(splits)?);
        let x = grid_extent("sdpa", splits, 1, i32::MAX as u32)?;
        f.launch([x, y, z], [THREADS, 1, 1], shared as u32, &mut args)?;
        let combine = function(device, &SOURCE, format_args!("attention_combine_{dt}"))?;
        let mut args = Args::new();
        args.ptr(partials).i32(int(splits)?).i32(int(dv)?).ptr(device_ptr(out));
        let blocks = grid_extent("sdpa", b * hq, 1, i32::MAX as u32)?;
        return combine.launch([blocks, 1, 1], [COMBINE_THREADS, 1, 1], 0, &mut args);
    }
    // the key tile's rows: d + 4 floats when d is a multiple of 4 (16-byte rows), else d + 1
    let key_stride = if d % 4 == 0 { d + 4 } else { d + 1 };
    let shared = 4 * (QUERY_ROWS as u64 * d + KEY_TILE * key_stride + KEY_TILE * width);
    let f = function(device, &SOURCE, format_args!("attention_prefill_{dt}"))?;
    allow(&f, shared)?;
    args.ptr(device_ptr(out));
    let x = grid_extent("sdpa", sq, QUERY_ROWS, i32::MAX as u32)?;
    f.launch([x, y, z], [THREADS, 1, 1], shared as u32, &mut args)
}

/// Lets `f` take `bytes` of dynamic shared memory; refused when the device has less.
fn allow(f: &super::CudaFunction, bytes: u64) -> Result<()> {
    let most = f.context().info().max_shared_per_block;
    if bytes > most {
        return Err(KernelError::Invalid(format!(
            "sdpa: the head dims need {bytes} bytes of shared memory per block, the device has {most}"
        )));
    }
    if bytes > DEFAULT_SHARED {
        f.allow_shared(bytes as u32)?;
    }
    Ok(())
}

/// Registers `sdpa` on float32, float16 and bfloat16.
pub fn register_all(table: &mut LaunchTable) {
    register_with_workspace(table, "sdpa", &FLOATS, run, workspace);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::{cpu::cpu, Backend};
    use crate::kernel::{AttrValue, Attrs};
    use crate::ops::spec;

    #[test]
    fn the_workspace_holds_the_decode_partials_and_nothing_else() {
        let f = DType::Float16;
        let meta = |shape: &[i64]| TensorMeta::new(f, shape);
        let causal = Attrs::new().with("causal", AttrValue::Bool(true));
        let kernel = super::super::cuda_backend(0).launches().kernel(spec::bind("sdpa", f, &causal).unwrap()).unwrap();
        // one query row over 1000 keys: 4 splits of 256, each (max, sum, 64 values) per head
        let decode = kernel.declare(&[meta(&[2, 8, 1, 64]), meta(&[2, 2, 1000, 64]), meta(&[2, 2, 1000, 64])]).unwrap();
        assert_eq!(decode.workspace, 4 * 2 * 8 * 4 * (2 + 64));
        // prefill, and a short decode, are cuDNN's: its workspace
        let prefill =
            kernel.declare(&[meta(&[2, 8, 5, 64]), meta(&[2, 2, 1000, 64]), meta(&[2, 2, 1000, 64])]).unwrap();
        let short = kernel.declare(&[meta(&[2, 8, 1, 64]), meta(&[2, 2, 256, 64]), meta(&[2, 2, 256, 64])]).unwrap();
        let fused = fused_attention::WORKSPACE_BYTES;
        assert_eq!((prefill.workspace, short.workspace), (fused, fused));
        // what cuDNN does not serve needs none: a head dim past 128, values of another width,
        // more queries than keys under the causal mask, float32
        for (q, k, v, dtype) in [
            ([2, 8, 5, 136], [2, 2, 9, 136], [2, 2, 9, 136], f),
            ([2, 8, 5, 64], [2, 2, 9, 64], [2, 2, 9, 32], f),
            ([2, 8, 12, 64], [2, 2, 9, 64], [2, 2, 9, 64], f),
            ([2, 8, 5, 64], [2, 2, 9, 64], [2, 2, 9, 64], DType::Float32),
        ] {
            let kernel =
                super::super::cuda_backend(0).launches().kernel(spec::bind("sdpa", dtype, &causal).unwrap()).unwrap();
            let metas = [q, k, v].map(|s: [i64; 4]| TensorMeta::new(dtype, &s));
            assert_eq!(kernel.declare(&metas).unwrap().workspace, 0, "{q:?} {k:?} {v:?} {dtype}");
        }
        // everything else is the spec's, as the CPU declares it
        let on_cpu = cpu().launches().kernel(spec::bind("sdpa", f, &causal).unwrap()).unwrap();
        let cpu = on_cpu.declare(&[meta(&[2, 8, 5, 64]), meta(&[2, 2, 1000, 64]), meta(&[2, 2, 1000, 64])]).unwrap();
        assert_eq!((prefill.outputs, prefill.flops, prefill.bytes_read), (cpu.outputs, cpu.flops, cpu.bytes_read));
    }
}
