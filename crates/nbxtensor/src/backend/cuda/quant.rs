//! Products against packed 4-bit weights on the GPU (`kernels/quant.cu`):
//! `matmul_int4(x, packed, scales, minima)` with the CPU kernel's operands and semantics
//! (`backend/cpu/quant.rs`: the table's `int4-g128-asym` layout, `x [.., K]` float32,
//! float16 or bfloat16 → `[.., N]`), accumulated in float32.
//!
//! float16 and bfloat16 x (contiguous, 16-byte aligned, groups a multiple of [`MMA_SPAN`]) run
//! on the tensor cores at any row count: the codes stream into registers, become exact 16-bit
//! values there and meet x in `mma` instructions (up to 16 rows as the product's A operand, so
//! that no product is spent on rows x does not have; more rows in 64-row blocks), with the
//! warps a block the autotune measured best for the device and shape class. On Hopper (sm_90)
//! the warpgroup products (`quant_wg_…`: 64 × 128 output blocks, the depth cut into 1 to 8 parts
//! whose float32 sums a second kernel adds in part order) are candidates of that choice for more
//! than 16 rows, beside the 64-row blocks' warps. float32 x of
//! up to [`GEMV_ROWS`] rows reads the codes into registers, 16 bytes per lane, and dequantizes
//! them for float32 products; other rows and layouts run a tiled product that dequantizes tiles
//! of W into shared memory. The workspace ([`workspace`]) holds the parts' sums of the
//! warpgroup calls of more than one part, where the tensor cores serve more than 16 rows; no
//! other call needs any.

use super::dims::{aligned16, grid_extent, merged_layout};
use super::memory::{CudaContext, CudaDeviceInfo};
use super::tensor_map::{Swizzle, TensorMap};
use super::{device_context, device_ptr, function, recent, register_with_workspace, tuning, Args};
use crate::backend::LaunchTable;
use crate::dtype::DType;
use crate::kernel::{KernelError, Launch, Result, TensorMeta};
use crate::memory::Device;
use crate::ops::spec::quant::MatmulInt4;
use crate::ops::spec::FLOATS;
use crate::settings::autotune;

pub use super::source::QUANT as SOURCE;

/// Rows of x up to which the product reads codes into registers (in passes of 8 rows).
pub const GEMV_ROWS: i64 = 16;
/// Output columns per block of the register path (4 warps × 4), and its bytes of codes per lane.
const GEMV_COLUMNS: i64 = 16;
const CODE_BYTES: u32 = 16;
/// Depth of one pass of the tensor-core path (4 lanes × 32 codes): groups must be a multiple.
pub const MMA_SPAN: i64 = 128;
/// Output columns per block of the tensor-core path.
const MMA_COLUMNS: i64 = 32;
/// Rows of x up to which the tensor-core path runs its few-rows kernel (`quant_few_…`: the
/// codes as the product's A operand, 8 or 16 rows of x as B) in blocks of 16 rows.
const FEW_ROWS: i64 = 16;
/// Rows of x up to which the few-rows kernel runs in blocks of 8 rows.
const FEW_ROWS_SMALL: i64 = 8;
/// The rows of x a few-rows block takes for `m` rows: 8 up to `FEW_ROWS_SMALL`, else 16.
fn few_block_rows(m: i64) -> i64 {
    if m <= FEW_ROWS_SMALL {
        FEW_ROWS_SMALL
    } else {
        FEW_ROWS
    }
}

/// The warps (splitting the depth) of a few-rows block where the autotune can neither measure
/// nor find a choice (a launch recorded into a graph first), for `blocks` blocks on a device of
/// `multiprocessors`: 16 where the blocks are fewer than two a multiprocessor (one block of 16
/// warps each), else 8 (two blocks of 8 each), so that each multiprocessor's
/// schedulers have 16 warps to issue from: on an H100 at one row 6.7 against 8.3 µs (16 warps
/// against 8) for 4096 × 4096 and 16.4 against 23.4 for 4096 × 14336 (128 blocks), while
/// 14336 × 4096 (448 blocks) kept 8 warps' 17.2 against 16 warps' 20.5 (docs/BENCHMARKS.md,
/// twelfth session).
fn few_warps(blocks: i64, multiprocessors: u32) -> u32 {
    if blocks < 2 * i64::from(multiprocessors) {
        16
    } else {
        8
    }
}

/// The warps a few-rows block may have (`NBX_QUANT_FEWS` instantiates each).
const FEW_WARPS: &[u32] = &[4, 8, 16];
/// The warps a many-rows block may have (`NBX_QUANT_MMAS` instantiates each).
const MMA_WARPS: &[u32] = &[4, 8];

/// Rows of x a block of the many-rows tensor-core kernel computes (four 16-row tiles).
const MMA_ROWS: i64 = 64;
/// Spans of codes a warp of the many-rows kernel keeps in flight (2 and 4 measured no faster on
/// an H100, docs/BENCHMARKS.md, eleventh session).
const MMA_DEPTH: u32 = 1;

/// The architecture whose machine code holds the warpgroup kernels (`quant_wg_…`, compiled for
/// sm_90a only: `kernel_files::ARCH_SPECIFIC`).
const WARPGROUP_ARCH: &str = "sm_90";
/// Rows × columns of a warpgroup block, and its threads (a warpgroup and a loading warp).
const WG_ROWS: i64 = 64;
const WG_COLUMNS: i64 = 128;
const WG_THREADS: u32 = 160;
/// The depth of one box of x a warpgroup block copies (two make a span).
const WG_DEPTH_BOX: i64 = 64;
/// Spans in flight in a warpgroup block's ring (`NBX_QUANT_WG` instantiates it).
const WG_STAGES: u32 = 4;
/// The parts a warpgroup call may cut the depth into (each part's blocks independent; more than
/// one writes float32 sums that `quant_wg_fold_…` adds).
const WG_PARTS: &[u32] = &[1, 2, 4, 8];
/// The most blocks a warpgroup call of more than one part may have: two waves of the largest
/// Hopper's 132 multiprocessors, rounded up, so that its workspace stays within
/// `WG_SPLIT_BLOCKS · WG_TILE_BYTES` = 8 MiB.
const WG_SPLIT_BLOCKS: i64 = 256;
/// The float32 sums of one block's part (64 × 128), in the workspace.
const WG_TILE_BYTES: u64 = (WG_ROWS * WG_COLUMNS * 4) as u64;
/// Threads a block of the fold of the parts' sums (`quant_wg_fold_…`), 4 columns each.
const FOLD_THREADS: u32 = 256;

/// The parts a warpgroup call of `tiles` output blocks over `spans` spans may take: no more
/// than the spans, and more than one only while the blocks stay within [`WG_SPLIT_BLOCKS`].
fn wg_part_counts(tiles: i64, spans: i64) -> impl Iterator<Item = u32> {
    WG_PARTS
        .iter()
        .copied()
        .filter(move |&c| i64::from(c) <= spans.max(1) && (c == 1 || tiles * i64::from(c) <= WG_SPLIT_BLOCKS))
}

/// The bytes of the float32 sums of `parts` parts of `tiles` output blocks.
fn wg_sums_bytes(parts: u32, tiles: i64) -> u64 {
    u64::from(parts) * tiles.max(0) as u64 * WG_TILE_BYTES
}

/// The workspace of a warpgroup call of `tiles` output blocks over `spans` spans: the float32
/// sums of its largest part count above one (none where it has no such count).
fn wg_workspace(tiles: i64, spans: i64) -> u64 {
    wg_part_counts(tiles, spans).filter(|&c| c > 1).map(|c| wg_sums_bytes(c, tiles)).max().unwrap_or(0)
}

/// The dynamic shared memory of a warpgroup block of `stages` (quant.cu's `WG_SHARED`, which
/// the kernel checks it was given): 1 KiB of alignment; the ring of x (16 KiB a span), codes
/// (8 KiB) and scales (512 bytes); two 34 KiB B buffers; two spans' scales and shifts; the ring's
/// two barriers a slot.
const fn wg_shared(stages: u32) -> u32 {
    1024 + stages * (WG_X_SLOT + WG_CODE_SLOT + 512) + 2 * 2 * 17408 + 2 * 128 * 8 + 2 * stages * 8
}

/// The bytes of x and of codes a span's ring slot holds (quant.cu's `WG_XSTAGE`, `WG_CSTAGE`):
/// the slot's barrier expects exactly their sum from the TMA boxes of [`warpgroup_maps`].
const WG_X_SLOT: u32 = 16384;
const WG_CODE_SLOT: u32 = 8192;

/// The parts of a warpgroup call where the autotune can neither measure nor find a choice: the
/// most of [`wg_part_counts`] that keeps the blocks within one a multiprocessor. On an H100 at
/// 64 rows, each choice pinned: 4 parts of 32 blocks 38.8 µs at 4096 × 14336 (the 64-row
/// blocks' 8 warps 55.5) and 18.6 at 4096 × 4096 (their 17.5), 1 part of 112 blocks 37.7 at
/// 14336 × 4096 (61.6) (docs/BENCHMARKS.md, twenty-second session).
fn wg_parts(blocks: i64, counts: impl Iterator<Item = u32>, multiprocessors: u32) -> u32 {
    counts.filter(|&c| blocks * i64::from(c) <= i64::from(multiprocessors)).max().unwrap_or(1)
}

/// The output blocks (64 × 128) of a warpgroup call of `m` rows and `n` columns.
fn wg_tiles(m: i64, n: i64) -> i64 {
    ((n.max(0) + WG_COLUMNS - 1) / WG_COLUMNS) * ((m.max(0) + WG_ROWS - 1) / WG_ROWS)
}

/// The warps of a many-rows tensor-core block where the autotune can neither measure nor find
/// a choice, for `blocks` blocks on a device of `multiprocessors`: a block of 4 warps holds 255
/// registers a thread (two blocks a multiprocessor); where the blocks are fewer than two a
/// multiprocessor, 8 warps split the depth instead (one block a multiprocessor, but all of them
/// busy): on an H100 at 64 rows 18.2 against 25.9 µs for 4096 × 4096 and 57.7 against 86.3 for
/// 4096 × 14336 (128 blocks), while 14336 × 4096 (448 blocks) kept 4 warps' 64.5 against 8
/// warps' 70.0 (docs/BENCHMARKS.md, eleventh session).
fn mma_warps(blocks: i64, multiprocessors: u32) -> u32 {
    if blocks < 2 * i64::from(multiprocessors) {
        8
    } else {
        4
    }
}

/// Whether every scale and minimum of a float16 `[n, groups]` operand lies under 2^31 elements
/// from its first: the few-rows kernel keeps their offsets in 32 bits.
fn offsets_fit_u32(shape: &[i64], strides: &[i64]) -> bool {
    let last = shape.iter().zip(strides).try_fold(0i64, |sum, (&extent, &stride)| {
        let reach = (extent - 1).max(0).checked_mul(stride).filter(|_| stride >= 0)?;
        sum.checked_add(reach)
    });
    last.is_some_and(|last| last < i64::from(i32::MAX))
}

/// Output tile of the tiled product (its side), and its threads.
const TILE: i64 = 64;
const GEMM_THREADS: u32 = 256;
const GEMV_THREADS: u32 = 128;

fn invalid(message: String) -> KernelError {
    KernelError::Invalid(message)
}

/// The tensor-core kernels: which serves a call of `m` rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Path {
    /// `quant_few_…`: up to 16 rows, blocks of 8 or 16; the choice is its warps.
    Few,
    /// More rows: `quant_mma_…` (blocks of 64 × 32; the choice is its warps) and, on Hopper,
    /// `quant_wg_…` (blocks of 64 × 128; the choice is the depth's parts) as candidates of one
    /// choice: each wins at some shapes (docs/BENCHMARKS.md, twentieth session).
    Many,
}

impl Path {
    /// The path of `m` rows; `offsets_fit`: the scales' and minima's offsets fit the few-rows
    /// kernel's 32 bits.
    fn of(m: i64, offsets_fit: bool) -> Path {
        if m <= FEW_ROWS && offsets_fit {
            Path::Few
        } else {
            Path::Many
        }
    }
}

/// One candidate of a tensor-core call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Choice {
    /// The few- or many-rows kernel with this many warps a block (named `w…`).
    Warps(u32),
    /// The warpgroup kernel over this many parts of the depth (named `c…`).
    Parts(u32),
}

impl Choice {
    fn name(self) -> String {
        match self {
            Choice::Warps(w) => format!("w{w}"),
            Choice::Parts(c) => format!("c{c}"),
        }
    }
}

/// A call on the tensor cores: its candidates and the autotune's choice among them for the
/// device and shape class ([`TensorCoreCall::choice`]).
struct TensorCoreCall {
    path: Path,
    /// The key's kernel family (`quant_few_bf16_r16`, `quant_mma_bf16_m4`); the warpgroup
    /// kernel, where a candidate, is `quant_wg_<dt>_s<stages>`.
    family: String,
    dt: &'static str,
    candidates: Vec<Choice>,
    /// Rows of x and columns of W.
    m: i64,
    n: i64,
    /// Its shape class: of the many-rows kernels the rows rounded up to a power of two (one
    /// choice for the whole class), of the few-rows one to its block rows.
    shape: String,
}

impl TensorCoreCall {
    /// The call of `m` rows × `n` columns × `k` depth on `path`; `warpgroup`: the device runs
    /// the warpgroup kernel; `room`: the workspace's bytes, which bound its part counts above
    /// one ([`wg_workspace`] is what the call declares).
    fn new(
        spec: &MatmulInt4,
        path: Path,
        warpgroup: bool,
        m: i64,
        n: i64,
        k: i64,
        room: u64,
    ) -> Result<TensorCoreCall> {
        let dt = spec.dtype.launch_key();
        let spans = k / MMA_SPAN;
        let (family, candidates, row_class) = match path {
            Path::Few => {
                let rows = few_block_rows(m);
                (format!("quant_few_{dt}_r{rows}"), FEW_WARPS.iter().map(|&w| Choice::Warps(w)).collect(), rows)
            }
            Path::Many => {
                let mut candidates: Vec<Choice> = MMA_WARPS.iter().map(|&w| Choice::Warps(w)).collect();
                if warpgroup {
                    let tiles = wg_tiles(m, n);
                    let parts = wg_part_counts(tiles, spans).filter(|&c| c == 1 || wg_sums_bytes(c, tiles) <= room);
                    candidates.extend(parts.map(Choice::Parts));
                }
                (format!("quant_mma_{dt}_m4"), candidates, (m.max(1) as u64).next_power_of_two() as i64)
            }
        };
        let shape = format!("m{row_class} n{n} k{k} g{}", spec.layout.group);
        let call = TensorCoreCall { path, family, dt, candidates, m, n, shape };
        for &choice in &call.candidates {
            call.grid(choice)?;
        }
        Ok(call)
    }

    /// The kernel of a choice.
    fn kernel(&self, choice: Choice) -> String {
        match (self.path, choice) {
            (_, Choice::Parts(_)) => format!("quant_wg_{}_s{WG_STAGES}", self.dt),
            (Path::Many, Choice::Warps(w)) => format!("{}_w{w}_d{MMA_DEPTH}", self.family),
            (Path::Few, Choice::Warps(w)) => format!("{}_w{w}", self.family),
        }
    }

    /// The grid of a choice (the parts of the depth in its z).
    fn grid(&self, choice: Choice) -> Result<[u32; 3]> {
        let (rows, columns, parts) = match (self.path, choice) {
            (_, Choice::Parts(c)) => (WG_ROWS, WG_COLUMNS, c),
            (Path::Few, _) => (few_block_rows(self.m), MMA_COLUMNS, 1),
            (Path::Many, _) => (MMA_ROWS, MMA_COLUMNS, 1),
        };
        let grid_x = grid_extent("matmul_int4", self.n, columns, i32::MAX as u32)?;
        let grid_y = grid_extent("matmul_int4", self.m, rows, 65535)?;
        Ok([grid_x, grid_y, parts])
    }

    /// The key on the device of `info`.
    fn key_on(&self, info: &CudaDeviceInfo) -> autotune::TuneKey {
        autotune::TuneKey::new(tuning::device_key(info), self.family.as_str(), self.shape.as_str())
    }

    fn names(&self) -> Vec<String> {
        self.candidates.iter().map(|c| c.name()).collect()
    }

    /// The choice where nothing can be measured (a launch recorded into a graph) and the store
    /// proves nothing: the one measured best on an H100 for the grid's blocks.
    fn fallback(&self, multiprocessors: u32) -> Result<Choice> {
        let blocks = |choice| -> Result<i64> {
            let [x, y, _] = self.grid(choice)?;
            Ok(i64::from(x) * i64::from(y))
        };
        Ok(match self.path {
            Path::Few => Choice::Warps(few_warps(blocks(Choice::Warps(1))?, multiprocessors)),
            Path::Many if self.candidates.contains(&Choice::Parts(1)) => {
                let counts = self.candidates.iter().filter_map(|c| match c {
                    Choice::Parts(p) => Some(*p),
                    Choice::Warps(_) => None,
                });
                Choice::Parts(wg_parts(blocks(Choice::Parts(1))?, counts, multiprocessors))
            }
            Path::Many => Choice::Warps(mma_warps(blocks(Choice::Warps(1))?, multiprocessors)),
        })
    }

    /// The choice: proven in the autotune store for this device and shape class, or measured
    /// now (each candidate launched by `launch`) and kept there; while the stream records a
    /// graph, a proven choice or [`TensorCoreCall::fallback`].
    fn choice(&self, context: &CudaContext, mut launch: impl FnMut(Choice) -> Result<()>) -> Result<Choice> {
        let info = context.info();
        let names = self.names();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let chosen =
            tuning::choice(context, "matmul_int4", &self.key_on(info), &names, tuning::Timing::FromMemory, |name| {
                launch(self.parse(name).map_err(invalid)?)
            })?;
        match chosen {
            Some(name) => self.parse(&name).map_err(invalid),
            None => self.fallback(info.multiprocessors),
        }
    }

    /// The choice a candidate's name (`w8`, `c4`) stands for.
    fn parse(&self, name: &str) -> std::result::Result<Choice, String> {
        self.candidates
            .iter()
            .copied()
            .find(|c| c.name() == name)
            .ok_or_else(|| format!("matmul_int4: {name} is not one of the candidates of {}", self.family))
    }

    /// Launches the call with `choice` (`args` its kernel's), and for warpgroup parts above one
    /// the fold of their sums (in `partials`) into `out`.
    fn launch(&self, device: Device, choice: Choice, args: &mut Args, partials: u64, out: u64) -> Result<()> {
        let f = function(device, &SOURCE, format_args!("{}", self.kernel(choice)))?;
        let grid = self.grid(choice)?;
        let parts = match choice {
            Choice::Warps(w) => return f.launch(grid, [w * 32, 1, 1], 0, args),
            Choice::Parts(c) => c,
        };
        let shared = wg_shared(WG_STAGES);
        let most = f.context().info().max_shared_per_block;
        if u64::from(shared) > most {
            return Err(invalid(format!(
                "matmul_int4: {} needs {shared} bytes of shared memory a block, the device has {most}",
                self.kernel(choice)
            )));
        }
        f.allow_shared(shared)?;
        f.launch(grid, [WG_THREADS, 1, 1], shared, args)?;
        if parts == 1 {
            return Ok(());
        }
        let fold = function(device, &SOURCE, format_args!("quant_wg_fold_{}", self.dt))?;
        let threads = wg_tiles(self.m, self.n) * WG_ROWS * WG_COLUMNS / 4;
        let blocks = grid_extent("matmul_int4", threads, i64::from(FOLD_THREADS), i32::MAX as u32)?;
        let mut fold_args = Args::new();
        fold_args.ptr(partials).i32(parts as i32).i64(self.m).i64(self.n).ptr(out);
        fold.launch([blocks, 1, 1], [FOLD_THREADS, 1, 1], 0, &mut fold_args)
    }
}

/// The TMA descriptors of a warpgroup launch (quant.cu's `quant_wg`): x [m, k] as 16-bit
/// elements in boxes of 64 rows × [`WG_DEPTH_BOX`] (128-byte swizzle, two boxes a span), and the
/// codes [n, k / 2] in boxes of [`WG_COLUMNS`] columns × a span's 64 bytes (64-byte swizzle). The
/// kernel expects exactly these boxes' bytes on each slot's barrier.
fn warpgroup_maps(x: u64, packed: u64, m: i64, n: i64, k: i64) -> Result<[TensorMap; 2]> {
    let depth_box = WG_DEPTH_BOX as u32;
    let x_map = TensorMap::tiled_2d(
        "matmul_int4's x",
        x,
        2,
        k as u64,
        m as u64,
        2 * k as u64,
        [depth_box, WG_ROWS as u32],
        Swizzle::Bytes128,
    )?;
    let code_map = TensorMap::tiled_2d(
        "matmul_int4's codes",
        packed,
        1,
        (k / 2) as u64,
        n as u64,
        (k / 2) as u64,
        [(MMA_SPAN / 2) as u32, WG_COLUMNS as u32],
        Swizzle::Bytes64,
    )?;
    Ok([x_map, code_map])
}

/// Whether the call's dtype and layout suit the tensor cores (float16 or bfloat16 x, 4-bit
/// codes in groups of whole spans); its operands must also be contiguous and 16-byte aligned.
fn tensor_core_layout(spec: &MatmulInt4) -> bool {
    matches!(spec.dtype, DType::Float16 | DType::Bfloat16)
        && spec.layout.bits == 4
        && spec.layout.group as i64 % MMA_SPAN == 0
}

/// The workspace a tensor-core call on `path` declares: on the many-rows path the warpgroup
/// parts' sums ([`wg_workspace`]; unused where the device has no warpgroup kernel), else none.
fn declared(path: Path, m: i64, n: i64, k: i64) -> u64 {
    match path {
        Path::Many => wg_workspace(wg_tiles(m, n), k / MMA_SPAN),
        Path::Few => 0,
    }
}

/// The (contiguous) rows, columns and depth of a call's operands, and whether its scales' and
/// minima's offsets fit 32 bits; `None` where the inputs are not x, packed, scales, minima.
fn call_sizes(inputs: &[TensorMeta]) -> Option<(i64, i64, i64, bool)> {
    let [x, packed, scales, minima] = inputs else { return None };
    let (&k, rows) = x.shape.split_last()?;
    let (m, n) = (rows.iter().product::<i64>(), *packed.shape.first()?);
    let contiguous = |meta: &TensorMeta| crate::shape::contiguous_strides(&meta.shape).ok();
    let offsets_fit =
        offsets_fit_u32(&scales.shape, &contiguous(scales)?) && offsets_fit_u32(&minima.shape, &contiguous(minima)?);
    Some((m, n, k, offsets_fit))
}

/// The workspace of a call ([`declared`] for a tensor-core call of contiguous operands).
fn workspace(spec: &MatmulInt4, inputs: &[TensorMeta]) -> Result<u64> {
    match call_sizes(inputs) {
        Some((m, n, k, offsets_fit)) if tensor_core_layout(spec) && m * n > 0 => {
            Ok(declared(Path::of(m, offsets_fit), m, n, k))
        }
        _ => Ok(0),
    }
}

/// What a dry run records for a call on the tensor cores: its autotune key (for contiguous,
/// aligned operands) and whether the store proves its choice; `None` for other calls or where
/// no device answers.
fn tuning(spec: &MatmulInt4, inputs: &[TensorMeta], device: Device) -> Option<(String, bool)> {
    let (m, n, k, offsets_fit) = call_sizes(inputs)?;
    if !tensor_core_layout(spec) || m * n == 0 {
        return None;
    }
    let info = device_context(device).ok()?.info();
    let path = Path::of(m, offsets_fit);
    let call = TensorCoreCall::new(spec, path, info.arch() == WARPGROUP_ARCH, m, n, k, declared(path, m, n, k)).ok()?;
    let key = call.key_on(info);
    let names = call.names();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let proven = autotune::proven(&key, &names).ok()?;
    Some((key.spelled(), proven.is_some()))
}

fn run(spec: &MatmulInt4, launch: Launch<'_>) -> Result<()> {
    let [x, packed, scales, minima] = launch.inputs else {
        return Err(invalid(format!("matmul_int4: takes 4 inputs, got {}", launch.inputs.len())));
    };
    let out = &launch.outputs[0];
    if out.numel() == 0 {
        return Ok(());
    }
    let (bits, group) = (spec.layout.bits, spec.layout.group as i64);
    let last = x.ndim() - 1;
    let k = x.shape()[last];
    let m: i64 = x.shape()[..last].iter().product();
    let n = packed.shape()[0];
    let dt = spec.dtype.launch_key();
    let itemsize = spec.dtype.itemsize().map_err(|e| invalid(format!("matmul_int4: {e}")))? as u64;
    let (sc, mn, p) = (scales.strides(), minima.strides(), packed.strides());
    let device = out.device();
    let mut args = Args::new();
    let codes_per_lane = i64::from(CODE_BYTES * 8 / bits);
    let row_bytes = k * i64::from(bits) / 8;
    let tensor_cores = tensor_core_layout(spec)
        && x.is_contiguous()
        && packed.is_contiguous()
        && aligned16(&[device_ptr(x), device_ptr(packed)]);
    if tensor_cores {
        let offsets_fit =
            offsets_fit_u32(scales.shape(), scales.strides()) && offsets_fit_u32(minima.shape(), minima.strides());
        let context = device_context(device)?;
        let warpgroup = context.info().arch() == WARPGROUP_ARCH;
        let room = launch.workspace.len() as u64;
        let call = TensorCoreCall::new(spec, Path::of(m, offsets_fit), warpgroup, m, n, k, room)?;
        let partials = launch.workspace.device_ptr();
        // the codes read before the inputs are awaited when the previous op cannot have written them
        let early = recent::untouched_by_previous_op(context.stream_handle(), packed);
        let launch_with = |choice: Choice, early: bool| {
            let mut args = Args::new();
            args.ptr(device_ptr(x)).i64(m).i64(k).ptr(device_ptr(packed));
            args.ptr(device_ptr(scales)).i64(sc[0]).i64(sc[1]).ptr(device_ptr(minima)).i64(mn[0]).i64(mn[1]);
            args.i64(n).i32(group as i32).ptr(device_ptr(out));
            if let Choice::Parts(_) = choice {
                args.ptr(partials);
            }
            args.i32(i32::from(early));
            if let Choice::Parts(_) = choice {
                let [x_map, code_map] = warpgroup_maps(device_ptr(x), device_ptr(packed), m, n, k)?;
                args.tensor_map(&x_map).tensor_map(&code_map);
            }
            call.launch(device, choice, &mut args, partials, device_ptr(out))
        };
        let choice = call.choice(context, |choice| launch_with(choice, false))?;
        return launch_with(choice, early);
    }
    let registers = m <= GEMV_ROWS
        && group % codes_per_lane == 0
        && x.is_contiguous()
        && packed.is_contiguous()
        && aligned16(&[device_ptr(x), device_ptr(packed), k as u64 * itemsize, row_bytes as u64]);
    if registers {
        let rows = if m == 1 { 1 } else { 8 };
        let f = function(device, &SOURCE, format_args!("quant_gemv_b{bits}_{dt}_r{rows}"))?;
        args.ptr(device_ptr(x)).i64(m).i64(k).ptr(device_ptr(packed));
        args.ptr(device_ptr(scales)).i64(sc[0]).i64(sc[1]).ptr(device_ptr(minima)).i64(mn[0]).i64(mn[1]);
        args.i64(n).i32(group as i32).ptr(device_ptr(out));
        let grid_x = grid_extent("matmul_int4", n, GEMV_COLUMNS, i32::MAX as u32)?;
        let grid_y = grid_extent("matmul_int4", m, rows, 65535)?;
        return f.launch([grid_x, grid_y, 1], [GEMV_THREADS, 1, 1], 0, &mut args);
    }
    let f = function(device, &SOURCE, format_args!("quant_gemm_b{bits}_{dt}"))?;
    let x_rows = merged_layout(&x.shape()[..last], &x.strides()[..last], x.offset())?;
    args.ptr(x.storage().as_ptr() as u64).value(&x_rows).i64(x.strides()[last]).i64(m).i64(k);
    args.ptr(device_ptr(packed)).i64(p[0]).i64(p[1]);
    args.ptr(device_ptr(scales)).i64(sc[0]).i64(sc[1]).ptr(device_ptr(minima)).i64(mn[0]).i64(mn[1]);
    args.i64(n).i32(group as i32).ptr(device_ptr(out));
    let grid_x = grid_extent("matmul_int4", n, TILE, i32::MAX as u32)?;
    let grid_y = grid_extent("matmul_int4", m, TILE, 65535)?;
    f.launch([grid_x, grid_y, 1], [GEMM_THREADS, 1, 1], 0, &mut args)
}

/// Registers `matmul_int4` on x's float32, float16 and bfloat16, with its [`workspace`].
pub fn register_all(table: &mut LaunchTable) {
    register_with_workspace(table, "matmul_int4", &FLOATS, run, workspace);
    table.tunes("matmul_int4", &FLOATS, tuning);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_fit_in_32_bits_only_when_the_last_element_does() {
        assert!(offsets_fit_u32(&[14336, 32], &[32, 1]));
        assert!(offsets_fit_u32(&[0, 32], &[32, 1]), "no element: nothing to reach");
        // (2^20 − 1)·2^12 + 2^12 − 1 = 2^32 − 1: past 2^31
        assert!(!offsets_fit_u32(&[1 << 20, 1 << 12], &[1 << 12, 1]));
        assert!(!offsets_fit_u32(&[4, 32], &[-32, 1]), "a negative stride");
        assert!(!offsets_fit_u32(&[i64::MAX, 2], &[i64::MAX, 1]), "an overflowing reach");
    }

    #[test]
    fn sixteen_warps_where_the_blocks_are_fewer_than_two_a_multiprocessor() {
        assert_eq!(few_warps(128, 132), 16);
        assert_eq!(few_warps(263, 132), 16);
        assert_eq!(few_warps(264, 132), 8);
        assert_eq!(mma_warps(128, 132), 8);
        assert_eq!(mma_warps(448, 132), 4);
    }

    #[test]
    fn the_warpgroup_boxes_fill_a_ring_slot_exactly() {
        // a box short of the slot leaves its barrier waiting for bytes that never come
        let x_boxes = 2 * WG_DEPTH_BOX * 2 * WG_ROWS;
        assert_eq!(x_boxes, i64::from(WG_X_SLOT), "two depth boxes of x a span");
        assert_eq!(WG_DEPTH_BOX * 2, MMA_SPAN, "two depth boxes make a span");
        assert_eq!(MMA_SPAN / 2 * WG_COLUMNS, i64::from(WG_CODE_SLOT), "one box of codes a span");
    }

    #[test]
    fn warpgroup_parts_keep_one_wave_and_no_more_parts_than_spans() {
        let parts = |blocks, spans| wg_parts(blocks, wg_part_counts(blocks, spans), 132);
        assert_eq!(parts(32, 32), 4, "4096 columns at 64 rows: 32 blocks × 4");
        assert_eq!(parts(112, 32), 1, "14336 columns: 112 blocks");
        assert_eq!(parts(16, 32), 8);
        assert_eq!(parts(16, 3), 2, "3 spans: at most 2 parts");
        assert_eq!(parts(500, 32), 1);
    }

    #[test]
    fn the_fold_takes_every_part_count() {
        // quant_wg_fold keeps one load a part in flight: its bound is WG_PARTS' largest
        let most = WG_PARTS.iter().max().unwrap();
        assert!(SOURCE.text.contains(&format!("#define WG_MAX_PARTS {most} ")), "quant.cu's WG_MAX_PARTS");
    }

    #[test]
    fn split_parts_stay_within_the_block_limit_and_their_sums_are_declared() {
        let counts = |tiles, spans| wg_part_counts(tiles, spans).collect::<Vec<_>>();
        assert_eq!(counts(32, 32), [1, 2, 4, 8]);
        assert_eq!(counts(64, 32), [1, 2, 4], "256 blocks at 4 parts, 512 past the limit");
        assert_eq!(counts(112, 32), [1, 2], "224 blocks at 2 parts, 448 past the limit");
        assert_eq!(counts(300, 32), [1]);
        assert_eq!(counts(32, 3), [1, 2], "3 spans");
        let tile = 64 * 128 * 4;
        assert_eq!(wg_workspace(32, 32), 8 * 32 * tile);
        assert_eq!(wg_workspace(112, 32), 2 * 112 * tile);
        assert_eq!(wg_workspace(300, 32), 0, "one part: no sums to keep");
        assert_eq!(wg_workspace(3, 1), 0, "one span: one part");
        assert_eq!(wg_tiles(65, 129), 4);
        assert_eq!(declared(Path::Few, 16, 4096, 4096), 0);
        assert_eq!(declared(Path::Many, 64, 4096, 4096), 8 * 32 * tile);
    }

    /// The warpgroup kernels exist in the machine code for sm_90 (compiled as sm_90a) and nowhere
    /// else, where `Path::of` never picks them. Compiled by NVRTC where the build ships neither
    /// architecture (where NVRTC is missing, the test says so and passes).
    #[test]
    fn the_warpgroup_kernels_are_in_hoppers_machine_code_only() {
        if let Err(why) = super::super::nvrtc_version() {
            eprintln!("skipped: {why}");
            return;
        }
        let name = format!("quant_wg_bf16_s{WG_STAGES}");
        for (arch, present) in [(WARPGROUP_ARCH, true), ("sm_80", false)] {
            let (code, _) = super::super::cubin(&SOURCE, arch).unwrap_or_else(|e| panic!("{e}"));
            let found = code.windows(name.len()).any(|w| w == name.as_bytes());
            assert_eq!(found, present, "{name} in the machine code for {arch}");
        }
    }

    #[test]
    fn the_path_follows_rows_and_offsets() {
        assert_eq!(Path::of(16, true), Path::Few);
        assert_eq!(Path::of(16, false), Path::Many);
        assert_eq!(Path::of(17, true), Path::Many);
    }

    #[test]
    fn the_warpgroup_kernel_is_a_candidate_on_hopper_and_the_fallback_there() {
        let spec = MatmulInt4 {
            dtype: DType::Bfloat16,
            layout: crate::ops::spec::quant::Int4Layout::of_table("test").unwrap(),
        };
        let call = |warpgroup, n, k, room| TensorCoreCall::new(&spec, Path::Many, warpgroup, 64, n, k, room).unwrap();
        let names = |warpgroup, k| call(warpgroup, 4096, k, declared(Path::Many, 64, 4096, k)).names();
        assert_eq!(names(false, 4096), ["w4", "w8"]);
        assert_eq!(names(true, 4096), ["w4", "w8", "c1", "c2", "c4", "c8"]);
        assert_eq!(names(true, 384), ["w4", "w8", "c1", "c2"], "3 spans: at most 2 parts");
        let tile = 64 * 128 * 4;
        assert_eq!(call(true, 4096, 4096, 0).names(), ["w4", "w8", "c1"], "no workspace: one part");
        assert_eq!(call(true, 4096, 4096, 4 * 32 * tile).names(), ["w4", "w8", "c1", "c2", "c4"]);
        let fallback = |n, k| call(true, n, k, declared(Path::Many, 64, n, k)).fallback(132).unwrap();
        assert_eq!(fallback(14336, 4096), Choice::Parts(1), "112 blocks");
        assert_eq!(fallback(4096, 14336), Choice::Parts(4), "32 blocks × 4 parts");
        assert_eq!(fallback(8448, 4096), Choice::Parts(2), "66 blocks × 2 parts");
        assert_eq!(fallback(8192, 4096), Choice::Parts(2), "64 blocks × 2 parts");
        assert_eq!(call(false, 4096, 4096, 0).fallback(132).unwrap(), Choice::Warps(8), "no warpgroup kernel");
        let few = TensorCoreCall::new(&spec, Path::Few, true, 12, 4096, 4096, 0).unwrap();
        assert_eq!(few.names(), ["w4", "w8", "w16"], "the few-rows kernel alone");
        assert_eq!(few.kernel(Choice::Warps(8)), "quant_few_bf16_r16_w8");
        let many = call(true, 4096, 4096, declared(Path::Many, 64, 4096, 4096));
        assert_eq!(many.kernel(Choice::Parts(4)), "quant_wg_bf16_s4");
        assert_eq!(many.kernel(Choice::Warps(4)), "quant_mma_bf16_m4_w4_d1");
        assert_eq!(many.grid(Choice::Parts(4)).unwrap(), [32, 1, 4]);
        assert_eq!(many.grid(Choice::Warps(4)).unwrap(), [128, 1, 1]);
        assert!(many.parse("c3").is_err() && many.parse("w16").is_err());
    }
}
