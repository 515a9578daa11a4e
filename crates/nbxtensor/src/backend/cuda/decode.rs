//! Decoding over a KV cache on the GPU (`kernels/decode.cu`): `decode_attention(q, k_cache,
//! v_cache, length)` and `kv_cache_write(cache, new, position)`, with the CPU kernels'
//! semantics (`backend/cpu/decode.rs`), on float32, float16 and bfloat16.
//!
//! Attention is flash-decoding: the cache is cut into splits, a block per (split, cache head ×
//! row group, batch) reads each key and value row once for all the query rows of its head group
//! and writes a partial (max, sum, weighted values) per row to the workspace; a second kernel
//! combines them in order. float16 and bfloat16 caches of head dim 64 or 128 (d = dv) with
//! 16-byte aligned rows score and weigh on the tensor cores (`decode_mma_…`); other calls run
//! the CUDA-core kernels (`decode_split_…`). The splits depend on the shapes alone, never on
//! the length, which the kernel reads from the device: one graph serves every step. How many
//! is the autotune's choice ([`candidates`]: the cuts aiming at each of [`BLOCK_TARGETS`]
//! blocks, at least one loop step's keys a split), measured at the first call of a device and
//! shape class, each run from memory as a decoder reads its cache (`tuning::Timing::FromMemory`),
//! and kept in the proven-settings store; where nothing can be measured (a launch
//! recorded into a graph first) and the store proves nothing, [`plan`]'s cut serves (about
//! [`TARGET_BLOCKS`] or [`MMA_TARGET_BLOCKS`] blocks). The workspace is declared for the
//! partials of the candidate of most splits, `4·b·hq·sq·splits·(2 + dv)` bytes.
//!
//! The valid length is clamped to `0..=T` and a write skips the rows outside the cache: the
//! values live on the device, where no error can be raised (the host backend refuses them).

use super::dims::{aligned16, grid_extent, workspace_of};
use super::memory::CudaDeviceInfo;
use super::{device_context, device_ptr, function, register, register_with_workspace, tuning, Args};
use crate::backend::LaunchTable;
use crate::dtype::DType;
use crate::kernel::{KernelError, Launch, Result, TensorMeta};
use crate::memory::Device;
use crate::ops::spec::attention::AttentionShape;
use crate::ops::spec::decode::{DecodeAttention, KvCacheWrite};
use crate::ops::spec::FLOATS;
use crate::settings::autotune::TuneKey;
use crate::tensor::Tensor;

pub use super::source::DECODE as SOURCE;

/// Threads of a split block (`NBX_DEC_THREADS`) and of a combine block (`NBX_COMBINE_THREADS`).
const THREADS: u32 = 128;
const COMBINE_THREADS: u32 = 256;
/// Key rows a split block takes per step of its loop, times the threads a key row takes
/// (`NBX_DEC_THREADS · NBX_DEC_STEPS`): a split takes a multiple of `KEY_STEP / threads_per_key`
/// keys, at least one step's (short caches are cut into one-step splits: their time is the
/// loads' latency, not their bytes).
const KEY_STEP: i64 = 128 * 2;
/// The blocks the autotune's candidate cuts aim at (so that the splits fill the device at every
/// batch and head count): one wave of two blocks a multiprocessor on a 132-SM Hopper, two, or four.
pub const BLOCK_TARGETS: [i64; 3] = [256, 512, 1024];
/// The blocks a launch of the CUDA-core kernels aims at where the autotune proves nothing (512
/// measured faster than 1024 at 8K to 128K keys on an H200, docs/BENCHMARKS.md).
pub const TARGET_BLOCKS: i64 = 512;
/// The blocks a launch of the tensor-core kernels aims at where the autotune proves nothing:
/// about one wave (longer splits; 256 measured 15% faster than 512 at 8K keys, 3–5% at 32K and
/// the same at 1K and 128K on an H100, docs/BENCHMARKS.md).
pub const MMA_TARGET_BLOCKS: i64 = 256;
/// The widest head dim the kernels hold (32 threads of 8 columns).
const MAX_WIDTH: i64 = 256;
/// Keys a tensor-core block takes per step of its loop: 4 warps × a tile of 16
/// (`NBX_DEC_MMA_WARPS · NBX_DEC_MMA_TILE`).
const MMA_KEY_STEP: i64 = 4 * 16;
/// The head dims the tensor-core kernels are instantiated for.
const MMA_HEAD_DIMS: [usize; 2] = [64, 128];
/// The most grid blocks in the y and z dims.
const GRID_YZ: u32 = 65535;

/// Which split kernel serves a call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Split {
    /// `decode_split_…` on the CUDA cores, this many threads (8 columns each) per key row: 8,
    /// 16 or 32.
    Cores {
        /// Threads per key row.
        threads_per_key: i64,
    },
    /// `decode_mma_…` on the tensor cores (where the rows are 16-byte aligned; else the CUDA
    /// cores' element-by-element kernel over the same splits).
    TensorCores,
}

/// How a call is cut: the kernel, query rows per block, row groups, splits, keys per split.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cut {
    /// The split kernel.
    pub split: Split,
    /// Query rows per block: 4 or 8 on the CUDA cores, 8 or 16 on the tensor cores.
    pub rows_per_block: i64,
    /// Blocks per cache head along its query rows.
    pub row_groups: i64,
    /// Splits of the cache.
    pub splits: i64,
    /// Keys per split.
    pub chunk: i64,
}

/// Whether calls of sizes `z` on `dtype` take the tensor-core kernels (float16 or bfloat16,
/// d = dv of 64 or 128).
pub fn on_tensor_cores(z: &AttentionShape, dtype: DType) -> bool {
    matches!(dtype, DType::Float16 | DType::Bfloat16) && z.d == z.dv && MMA_HEAD_DIMS.contains(&z.d)
}

/// Threads of the CUDA-core kernels per key row of `width` columns (8 columns each): 8, 16 or 32.
fn threads_per_key(width: i64) -> i64 {
    (((width + 7) / 8).max(8) as u64).next_power_of_two() as i64
}

/// The cut of a call of sizes `z` on `dtype` where the autotune proves nothing (aiming at
/// [`TARGET_BLOCKS`] or [`MMA_TARGET_BLOCKS`] blocks); refused (naming the op) for head dims
/// over 256.
pub fn plan(z: &AttentionShape, dtype: DType) -> Result<Cut> {
    let target = if on_tensor_cores(z, dtype) { MMA_TARGET_BLOCKS } else { TARGET_BLOCKS };
    cut_for(z, dtype, target)
}

/// The autotune's candidates for a call: the distinct cuts aiming at each of
/// [`BLOCK_TARGETS`] blocks, fewest splits first ([`plan`]'s among them).
pub fn candidates(z: &AttentionShape, dtype: DType) -> Result<Vec<Cut>> {
    let mut cuts: Vec<Cut> = Vec::new();
    for target in BLOCK_TARGETS {
        let cut = cut_for(z, dtype, target)?;
        if !cuts.iter().any(|c| c.splits == cut.splits) {
            cuts.push(cut);
        }
    }
    cuts.sort_by_key(|c| c.splits);
    Ok(cuts)
}

/// The cut of a call of sizes `z` on `dtype` into splits for about `target` blocks.
fn cut_for(z: &AttentionShape, dtype: DType, target: i64) -> Result<Cut> {
    let width = z.d.max(z.dv) as i64;
    if width > MAX_WIDTH {
        return Err(KernelError::Invalid(format!(
            "decode_attention: the CUDA kernel takes head dims up to {MAX_WIDTH}, got d {} and dv {}",
            z.d, z.dv
        )));
    }
    let rows = ((z.hq / z.hk.max(1)) * z.sq) as i64;
    let (split, rows_per_block, step) = if on_tensor_cores(z, dtype) {
        (Split::TensorCores, if rows <= 8 { 8 } else { 16 }, MMA_KEY_STEP)
    } else {
        let threads_per_key = threads_per_key(width);
        (Split::Cores { threads_per_key }, if rows <= 4 { 4 } else { 8 }, KEY_STEP / threads_per_key)
    };
    let row_groups = ((rows + rows_per_block - 1) / rows_per_block).max(1);
    let t = z.sk as i64;
    let per_split = (z.b * z.hk) as i64 * row_groups;
    let most = (target / per_split.max(1)).max(1);
    let wanted = ((t + step - 1) / step).clamp(1, most);
    let chunk = ((t + wanted - 1) / wanted + step - 1) / step * step;
    let chunk = chunk.max(step);
    let splits = ((t + chunk - 1) / chunk).max(1);
    Ok(Cut { split, rows_per_block, row_groups, splits, chunk })
}

/// Bytes of the partials: (max, sum, dv values) in float32 per query row and split.
fn partial_bytes(z: &AttentionShape, cut: &Cut) -> u64 {
    4 * (z.b * z.hq * z.sq) as u64 * cut.splits as u64 * (2 + z.dv) as u64
}

/// The partials of the candidate of most splits (the last).
fn workspace(spec: &DecodeAttention, inputs: &[TensorMeta]) -> Result<u64> {
    let z = spec.sizes(inputs)?;
    Ok(candidates(&z, spec.dtype)?.last().map_or(0, |cut| partial_bytes(&z, cut)))
}

/// The split kernel of `cut` (its row groups too: the element-by-element kernel's rows a block
/// differ), for rows 16-byte aligned (`vec`) or not.
fn split_kernel(z: &AttentionShape, cut: &Cut, dt: &str, vec: bool) -> (String, i64) {
    match (cut.split, vec) {
        (Split::TensorCores, true) => (format!("decode_mma_{dt}_{}_{}", z.d, cut.rows_per_block), cut.row_groups),
        (Split::Cores { threads_per_key }, true) => {
            (format!("decode_split_{dt}_{threads_per_key}_{}", cut.rows_per_block), cut.row_groups)
        }
        (split, false) => {
            // the tensor cores' shapes: the CUDA cores' row blocks over the same splits
            let threads_per_key = match split {
                Split::Cores { threads_per_key } => threads_per_key,
                Split::TensorCores => threads_per_key(z.d.max(z.dv) as i64),
            };
            let rb = cut.rows_per_block.min(8);
            let rows = ((z.hq / z.hk.max(1)) * z.sq) as i64;
            (format!("decode_split_{dt}_{threads_per_key}_{rb}_scalar"), ((rows + rb - 1) / rb).max(1))
        }
    }
}

/// The autotune key of a call of `kernel` on the device of `info`: the shape class is the
/// batch, cache heads, query rows a cache head and cache length, which fix the candidates.
fn tune_key(info: &CudaDeviceInfo, kernel: &str, z: &AttentionShape) -> TuneKey {
    let rows = (z.hq / z.hk.max(1)) * z.sq;
    TuneKey::new(tuning::device_key(info), kernel, format!("b{} hk{} rows{rows} T{}", z.b, z.hk, z.sk))
}

/// A candidate's name in the store: its splits (`s32`).
fn cut_name(cut: &Cut) -> String {
    format!("s{}", cut.splits)
}

/// What a dry run records for a call of more than one candidate: its autotune key (for rows
/// 16-byte aligned, as a contiguous cache's are) and whether the store proves its choice;
/// `None` for other calls or where no device answers.
fn tuning(spec: &DecodeAttention, inputs: &[TensorMeta], device: Device) -> Option<(String, bool)> {
    let z = spec.sizes(inputs).ok()?;
    let cuts = candidates(&z, spec.dtype).ok()?;
    if cuts.len() < 2 || z.b * z.hq * z.sq * z.dv == 0 {
        return None;
    }
    let info = device_context(device).ok()?.info();
    let (kernel, _) = split_kernel(&z, &cuts[0], spec.dtype.launch_key(), z.d % 8 == 0 && z.dv % 8 == 0);
    let key = tune_key(info, &kernel, &z);
    let names: Vec<String> = cuts.iter().map(cut_name).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let proven = crate::settings::autotune::proven(&key, &names).ok()?;
    Some((key.spelled(), proven.is_some()))
}

/// Extents and flags of a call (the source's `DecodeSizes`).
#[repr(C)]
#[derive(Clone, Copy)]
struct Sizes {
    b: i32,
    hq: i32,
    hk: i32,
    sq: i32,
    t: i32,
    d: i32,
    dv: i32,
    causal: i32,
    rows: i32,
    row_groups: i32,
    splits: i32,
    chunk: i32,
    len_stride: i32,
    len64: i32,
}

/// Element strides of q and the caches (the source's `DecodeStrides`).
#[repr(C)]
#[derive(Clone, Copy)]
struct Strides {
    q: [i64; 4],
    k: [i64; 3],
    v: [i64; 3],
}

fn int(op: &str, value: impl TryInto<i32> + Copy + std::fmt::Display) -> Result<i32> {
    value.try_into().map_err(|_| KernelError::Invalid(format!("{op}: extent {value} exceeds the CUDA kernels' range")))
}

/// The element stride between the batch rows' values of an index tensor (0: one value for
/// all), and whether it is int64.
fn index_flags(op: &str, t: &Tensor) -> Result<(i32, i32)> {
    let stride = if t.numel() > 1 { int(op, t.strides()[0])? } else { 0 };
    Ok((stride, i32::from(t.dtype() == DType::Int64)))
}

fn run(spec: &DecodeAttention, launch: Launch<'_>) -> Result<()> {
    let [q, k, v, length] = launch.inputs else {
        return Err(KernelError::Invalid(format!("decode_attention: takes 4 inputs, got {}", launch.inputs.len())));
    };
    let out = &launch.outputs[0];
    if out.numel() == 0 {
        return Ok(());
    }
    let metas: Vec<TensorMeta> = launch.inputs.iter().map(|t| TensorMeta::new(t.dtype(), t.shape())).collect();
    let z = spec.sizes(&metas)?;
    let cuts = candidates(&z, spec.dtype)?;
    let most = cuts.last().map_or(0, |cut| partial_bytes(&z, cut));
    let partials = workspace_of("decode_attention", &launch.workspace, most)?;
    let itemsize = spec.dtype.itemsize().map_err(|e| KernelError::Invalid(format!("decode_attention: {e}")))? as u64;
    let (ks, vs) = (k.strides(), v.strides());
    let vec = z.d % 8 == 0
        && z.dv % 8 == 0
        && aligned16(&[device_ptr(k), device_ptr(v)])
        && aligned16(&[ks[0], ks[1], ks[2], vs[0], vs[1], vs[2]].map(|s| s as u64 * itemsize));
    let (len_stride, len64) = index_flags("decode_attention", length)?;
    let op = "decode_attention";
    let (dt, device) = (spec.dtype.launch_key(), out.device());
    // the candidates differ in their splits alone: one kernel and row groups serve them all
    let (kernel, row_groups) = split_kernel(&z, &cuts[0], dt, vec);
    let qs = q.strides();
    let strides = Strides { q: [qs[0], qs[1], qs[2], qs[3]], k: [ks[0], ks[1], ks[2]], v: [vs[0], vs[1], vs[2]] };
    let scale = spec.scale_for(z.d) * std::f32::consts::LOG2_E;
    let split = function(device, &SOURCE, format_args!("{kernel}"))?;
    let combine = function(device, &SOURCE, format_args!("decode_combine_{dt}"))?;
    let y = grid_extent(op, z.hk as i64 * row_groups, 1, GRID_YZ)?;
    let zb = grid_extent(op, z.b as i64, 1, GRID_YZ)?;
    let rows = grid_extent(op, (z.b * z.hq * z.sq) as i64, 1, i32::MAX as u32)?;
    let columns = grid_extent(op, z.dv as i64, 32, GRID_YZ)?;
    // the candidates' sizes differ in their splits and chunk alone
    let sizes = Sizes {
        b: int(op, z.b)?,
        hq: int(op, z.hq)?,
        hk: int(op, z.hk)?,
        sq: int(op, z.sq)?,
        t: int(op, z.sk)?,
        d: int(op, z.d)?,
        dv: int(op, z.dv)?,
        causal: i32::from(spec.causal),
        rows: int(op, (z.hq / z.hk) * z.sq)?,
        row_groups: int(op, row_groups)?,
        splits: 0,
        chunk: 0,
        len_stride,
        len64,
    };
    let launch_cut = |cut: &Cut| -> Result<()> {
        let sizes = Sizes { splits: int(op, cut.splits)?, chunk: int(op, cut.chunk)?, ..sizes };
        let mut args = Args::new();
        args.ptr(device_ptr(q)).value(&strides).ptr(device_ptr(k)).ptr(device_ptr(v)).ptr(device_ptr(length));
        args.value(&sizes).f32(scale).ptr(partials);
        let x = grid_extent(op, cut.splits, 1, i32::MAX as u32)?;
        split.launch([x, y, zb], [THREADS, 1, 1], 0, &mut args)?;
        let mut args = Args::new();
        args.ptr(partials).value(&sizes).ptr(device_ptr(out));
        combine.launch([rows, columns, 1], [COMBINE_THREADS, 1, 1], 0, &mut args)
    };
    let cut = match &cuts[..] {
        [only] => *only,
        _ => {
            let context = device_context(device)?;
            let names: Vec<String> = cuts.iter().map(cut_name).collect();
            let names: Vec<&str> = names.iter().map(String::as_str).collect();
            let of = |name: &str| {
                cuts.iter().copied().find(|c| cut_name(c) == name).ok_or_else(|| {
                    KernelError::Invalid(format!("decode_attention: {name} is not one of the candidates of {kernel}"))
                })
            };
            let key = tune_key(context.info(), &kernel, &z);
            match tuning::choice(context, op, &key, &names, tuning::Timing::FromMemory, |name| launch_cut(&of(name)?))?
            {
                Some(name) => of(&name)?,
                None => plan(&z, spec.dtype)?,
            }
        }
    };
    launch_cut(&cut)
}

/// The first cache the kernel cannot read: one whose columns are not unit-stride.
fn unreadable(_: &DecodeAttention, inputs: &[&Tensor]) -> Option<usize> {
    (1..3).find(|&i| inputs.get(i).is_some_and(|t| t.ndim() == 4 && t.shape()[3] > 1 && t.strides()[3] != 1))
}

/// Sizes of a write (the source's `WriteSizes`).
#[repr(C)]
#[derive(Clone, Copy)]
struct WriteSizes {
    b: i32,
    h: i32,
    t: i32,
    s: i32,
    d: i32,
    pos_stride: i32,
    pos64: i32,
}

fn write(spec: &KvCacheWrite, launch: Launch<'_>) -> Result<()> {
    let [cache, new, position] = launch.inputs else {
        return Err(KernelError::Invalid(format!("kv_cache_write: takes 3 inputs, got {}", launch.inputs.len())));
    };
    if !cache.is_contiguous() || cache.is_read_only() {
        return Err(KernelError::Invalid(
            "kv_cache_write: the cache must be a contiguous, writable tensor (it is written in place)".into(),
        ));
    }
    if std::sync::Arc::ptr_eq(cache.storage(), new.storage()) {
        return Err(KernelError::Invalid("kv_cache_write: the new rows are a view of the cache itself".into()));
    }
    let metas: Vec<TensorMeta> = launch.inputs.iter().map(|t| TensorMeta::new(t.dtype(), t.shape())).collect();
    let z = spec.sizes(&metas)?;
    let count = (z.b * z.h * z.s * z.d) as i64;
    if count == 0 {
        return Ok(());
    }
    let op = "kv_cache_write";
    let (pos_stride, pos64) = index_flags(op, position)?;
    let sizes = WriteSizes {
        b: int(op, z.b)?,
        h: int(op, z.h)?,
        t: int(op, z.t)?,
        s: int(op, z.s)?,
        d: int(op, z.d)?,
        pos_stride,
        pos64,
    };
    let ns = new.strides();
    let f = function(cache.device(), &SOURCE, format_args!("kv_cache_write_{}", spec.dtype.launch_key()))?;
    let mut args = Args::new();
    args.ptr(device_ptr(cache)).ptr(device_ptr(new)).value(&[ns[0], ns[1], ns[2], ns[3]]).ptr(device_ptr(position));
    args.value(&sizes);
    let blocks = grid_extent(op, count, 256, u32::MAX)?.min(4096);
    f.launch([blocks, 1, 1], [256, 1, 1], 0, &mut args)
}

/// Registers `decode_attention` and `kv_cache_write` on float32, float16 and bfloat16.
pub fn register_all(table: &mut LaunchTable) {
    register_with_workspace(table, "decode_attention", &FLOATS, run, workspace);
    table.reads_only("decode_attention", &FLOATS, unreadable);
    table.tunes("decode_attention", &FLOATS, tuning);
    register(table, "kv_cache_write", &FLOATS, write);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(b: usize, hq: usize, hk: usize, sq: usize, t: usize, d: usize) -> AttentionShape {
        AttentionShape { b, hq, hk, sq, sk: t, d, dv: d }
    }

    #[test]
    fn the_splits_fill_the_device_and_cover_the_cache() {
        // one query of 32 heads over 8 cache heads on the CUDA cores (float32): 4 rows a block,
        // 64 splits at most (16 keys a step: a short cache takes one step a split)
        let cores = Split::Cores { threads_per_key: 16 };
        for (t, splits, chunk) in
            [(512, 32, 16), (1024, 64, 16), (8192, 64, 128), (32768, 64, 512), (131072, 64, 2048), (100, 7, 16)]
        {
            let cut = plan(&shape(1, 32, 8, 1, t, 128), DType::Float32).unwrap();
            assert_eq!((cut.split, cut.rows_per_block, cut.row_groups), (cores, 4, 1));
            assert_eq!((cut.splits, cut.chunk), (splits, chunk), "T = {t}");
            assert!(cut.splits * cut.chunk >= t as i64 && (cut.splits - 1) * cut.chunk < t as i64);
        }
        // the same on bfloat16: the tensor cores, 8 rows a block, 64 keys a step, 32 splits at most
        for (t, splits, chunk) in [(1024, 16, 64), (8192, 32, 256), (131072, 32, 4096), (100, 2, 64)] {
            let cut = plan(&shape(1, 32, 8, 1, t, 128), DType::Bfloat16).unwrap();
            assert_eq!((cut.split, cut.rows_per_block, cut.row_groups), (Split::TensorCores, 8, 1));
            assert_eq!((cut.splits, cut.chunk), (splits, chunk), "T = {t}");
        }
        // 12 rows of a group take a 16-row block; d 80 stays on the CUDA cores
        let cut = plan(&shape(1, 12, 2, 2, 4096, 64), DType::Float16).unwrap();
        assert_eq!((cut.split, cut.rows_per_block, cut.row_groups), (Split::TensorCores, 16, 1));
        assert_eq!(
            plan(&shape(1, 8, 2, 1, 64, 80), DType::Bfloat16).unwrap().split,
            Split::Cores { threads_per_key: 16 }
        );
        // 8 rows of a group over 4 query heads × 2 queries; d 64; an empty cache still takes a split
        let cut = plan(&shape(2, 8, 2, 2, 0, 64), DType::Float32).unwrap();
        assert_eq!(
            (cut.split, cut.rows_per_block, cut.row_groups, cut.splits),
            (Split::Cores { threads_per_key: 8 }, 8, 1, 1)
        );
        assert_eq!(plan(&shape(1, 64, 1, 8, 4096, 256), DType::Float32).unwrap().row_groups, 64);
        assert!(plan(&shape(1, 1, 1, 1, 16, 320), DType::Float32).unwrap_err().to_string().contains("up to 256"));
    }

    #[test]
    fn the_workspace_holds_the_partials() {
        let f = DType::Bfloat16;
        let spec = DecodeAttention { dtype: f, causal: true, scale: None };
        let m = |s: &[i64]| TensorMeta::new(f, s);
        let inputs =
            [m(&[1, 32, 1, 128]), m(&[1, 8, 8192, 128]), m(&[1, 8, 8192, 128]), TensorMeta::new(DType::Int32, &[])];
        // 32 splits of 256 keys on the tensor cores by default; the candidate of most splits,
        // 128 of 64 keys, declares the workspace
        assert_eq!(workspace(&spec, &inputs).unwrap(), 4 * 32 * 128 * 130);
    }

    #[test]
    fn the_candidates_are_the_distinct_cuts_fewest_splits_first_the_default_among_them() {
        // bfloat16 d128, 32 query heads over 8 cache heads: 8 blocks a split
        for (t, splits) in
            [(1024, &[16][..]), (8192, &[32, 64, 128]), (32768, &[32, 64, 128]), (131072, &[32, 64, 128]), (100, &[2])]
        {
            let z = shape(1, 32, 8, 1, t, 128);
            let cuts = candidates(&z, DType::Bfloat16).unwrap();
            assert_eq!(cuts.iter().map(|c| c.splits).collect::<Vec<_>>(), splits, "T = {t}");
            assert!(cuts.contains(&plan(&z, DType::Bfloat16).unwrap()), "T = {t}");
            for cut in &cuts {
                assert!(cut.splits * cut.chunk >= t as i64 && (cut.splits - 1) * cut.chunk < t as i64, "T = {t}");
            }
        }
        // at 128K the splits take 4096, 2048 and 1024 keys; names are the splits
        let cuts = candidates(&shape(1, 32, 8, 1, 131072, 128), DType::Bfloat16).unwrap();
        assert_eq!(cuts.iter().map(|c| c.chunk).collect::<Vec<_>>(), [4096, 2048, 1024]);
        assert_eq!(cuts.iter().map(cut_name).collect::<Vec<_>>(), ["s32", "s64", "s128"]);
        // float32 on the CUDA cores: 512 blocks by default, 256 and 1024 the others
        let z = shape(1, 32, 8, 1, 131072, 128);
        let cuts = candidates(&z, DType::Float32).unwrap();
        assert_eq!(cuts.iter().map(|c| c.splits).collect::<Vec<_>>(), [32, 64, 128]);
        assert_eq!(plan(&z, DType::Float32).unwrap().splits, 64);
        // many cache heads and batch rows fill the device with one split each
        assert_eq!(candidates(&shape(64, 64, 64, 1, 4096, 128), DType::Bfloat16).unwrap().len(), 1);
    }
}
