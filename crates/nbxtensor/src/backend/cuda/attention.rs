//! Scaled dot-product attention on the GPU (`kernels/attention.cu`): `sdpa(q, k, v[, mask])`
//! with the attributes `causal` and `scale`, with the CPU kernel's operands, shapes and
//! semantics (`backend/cpu/attention.rs`), on float32, float16 and bfloat16.
//!
//! Two paths: a flash-attention style prefill kernel (tiles of keys and values in shared
//! memory, an online softmax, float32 accumulation; no workspace), and for one query row over
//! more than [`DECODE_CHUNK`] keys a split-K decode kernel: each block writes a partial
//! (max, sum, accumulator) to the workspace and a second kernel combines them in order. The
//! workspace is declared for exactly that: `4·b·hq·splits·(2 + dv)` bytes, 0 otherwise.

use super::dims::{grid_extent, workspace_of};
use super::{device_ptr, function, register_with_workspace, Args, KernelSource};
use crate::backend::LaunchTable;
use crate::kernel::{KernelError, Launch, Result, TensorMeta};
use crate::ops::spec::attention::Sdpa;
use crate::ops::spec::FLOATS;
use crate::shape;
use crate::tensor::Tensor;

/// The source of the attention kernels.
pub static SOURCE: KernelSource = KernelSource { name: "attention.cu", text: include_str!("kernels/attention.cu") };

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

/// The device workspace: the decode path's partials, else nothing.
fn workspace(_: &Sdpa, inputs: &[TensorMeta]) -> Result<u64> {
    let [q, k, v, ..] = inputs else { return Ok(0) };
    let (b, hq, sq, sk, dv) = extents(&q.shape, &k.shape, &v.shape)?;
    Ok(decode_splits(sq, sk).map_or(0, |splits| partial_bytes(b, hq, splits, dv)))
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
    if out.numel() == 0 {
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
    use crate::dtype::DType;
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
        // prefill, and a short decode, need none
        let prefill =
            kernel.declare(&[meta(&[2, 8, 5, 64]), meta(&[2, 2, 1000, 64]), meta(&[2, 2, 1000, 64])]).unwrap();
        let short = kernel.declare(&[meta(&[2, 8, 1, 64]), meta(&[2, 2, 256, 64]), meta(&[2, 2, 256, 64])]).unwrap();
        assert_eq!((prefill.workspace, short.workspace), (0, 0));
        // everything else is the spec's, as the CPU declares it
        let on_cpu = cpu().launches().kernel(spec::bind("sdpa", f, &causal).unwrap()).unwrap();
        let cpu = on_cpu.declare(&[meta(&[2, 8, 5, 64]), meta(&[2, 2, 1000, 64]), meta(&[2, 2, 1000, 64])]).unwrap();
        assert_eq!((prefill.outputs, prefill.flops, prefill.bytes_read), (cpu.outputs, cpu.flops, cpu.bytes_read));
    }
}
