//! `copy` on a wgpu device: any layout into a contiguous tensor of the same dtype, as bit
//! patterns, for every dtype of 1, 2, 4 or 8 bytes. A contiguous input is one device copy
//! where its bytes lie on words; anything else walks the input's strides. [`copy_vectors`]
//! moves a range of whole 16-byte vectors (a kernel: NVIDIA's driver runs a buffer copy at a
//! fifth of the memory's bandwidth), [`copy_bytes`] one that does not lie on words.

use super::elementwise::{Map, THREADS};
use super::gpu::Gpu;
use super::register;
use super::wgsl::{self, Elem};
use crate::backend::LaunchTable;
use crate::dtype::DType;
use crate::kernel::{KernelError, Launch, Result};
use crate::ops::spec::cast::Copy;

/// A dtype as raw bits of its width: what a copy moves.
fn raw(op: &str, dtype: DType) -> Result<Elem> {
    let bits = match dtype.itemsize().map_err(|e| KernelError::Invalid(format!("{op}: {e}")))? {
        1 => DType::Uint8,
        2 => DType::Uint16,
        4 => DType::Uint32,
        8 => DType::Uint64,
        other => return Err(KernelError::Invalid(format!("{op}: no wgpu copy of {other}-byte elements"))),
    };
    wgsl::elem(op, bits)
}

fn run(gpu: &Gpu, spec: &Copy, launch: Launch<'_>) -> Result<()> {
    let (x, y) = (&launch.inputs[0], &launch.outputs[0]);
    if y.numel() == 0 {
        return Ok(());
    }
    if x.is_contiguous() {
        let bytes = x.byte_len().map_err(|e| KernelError::Invalid(format!("copy: {e}")))?;
        return gpu
            .copy_within(y.data_ptr() as u64, x.data_ptr() as u64, bytes)
            .map_err(|e| KernelError::Device(e.to_string()));
    }
    let e = raw("copy", spec.dtype)?;
    gpu.map(
        "copy",
        Map {
            name: format!("copy_b{}", e.width),
            inputs: vec![(x, e)],
            output: (y, e),
            body: "        let v = x0;".into(),
            helpers: String::new(),
            extra: Vec::new(),
        },
    )
}

/// The kernel moving bytes one by one: invocation `t` writes destination word `t` of the
/// destination's words that the range touches, keeping the bytes outside the range.
const BYTES: &str = r#"
@group(0) @binding(0) var<storage, read_write> src: array<u32>;
@group(0) @binding(1) var<storage, read_write> dst: array<u32>;
@group(0) @binding(2) var<storage, read> p: array<u32>;

fn byte_at(b: u32) -> u32 {
    return (src[b >> 2u] >> ((b & 3u) * 8u)) & 0xffu;
}

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    // p: source byte, destination byte (within their windows), bytes
    let t = gid.x + gid.y * groups.x * 256u;
    let first = p[1] & ~3u;
    let word = (first >> 2u) + t;
    let begin = word * 4u;
    if (begin >= p[1] + p[2]) {
        return;
    }
    var out = dst[word];
    for (var k = 0u; k < 4u; k++) {
        let b = begin + k;
        if (b >= p[1] && b < p[1] + p[2]) {
            let s = (b & 3u) * 8u;
            out = (out & ~(0xffu << s)) | (byte_at(p[0] + b - p[1]) << s);
        }
    }
    dst[word] = out;
}
"#;

/// The kernel moving 16-byte vectors: invocation `t` moves vector `t`.
const VECTORS: &str = r#"
@group(0) @binding(0) var<storage, read_write> src: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read_write> dst: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read> p: array<u32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    // p: source vector, destination vector (within their windows), vectors
    let t = gid.x + gid.y * groups.x * 256u;
    if (t >= p[2]) {
        return;
    }
    dst[p[1] + t] = src[p[0] + t];
}
"#;

/// Copies `len` bytes, a multiple of 16, from `src` to `dst` (virtual addresses of one device,
/// each on 16 bytes of its block); the ranges must not overlap.
pub fn copy_vectors(gpu: &Gpu, dst: u64, src: u64, len: usize) -> Result<()> {
    let n = wgsl::count("copy", (len / 16) as i64)?;
    let from = gpu.window("copy", src, len as u64, src)?;
    let to = gpu.window("copy", dst, len as u64, dst)?;
    if len % 16 != 0 || from.base % 16 != 0 || to.base % 16 != 0 {
        return Err(KernelError::Invalid(format!("copy: {len} bytes are not whole 16-byte vectors on 16 bytes")));
    }
    let pipeline = gpu.pipeline("copy_vectors", || VECTORS.to_string())?;
    let groups = gpu.grid("copy", u64::from(n).div_ceil(u64::from(THREADS)))?;
    gpu.dispatch(&pipeline, &[&from, &to], &[from.base / 16, to.base / 16, n], groups)
}

/// Copies `len` bytes from `src` to `dst` (virtual addresses of one device) that do not lie on
/// whole words; the ranges must not overlap.
pub fn copy_bytes(gpu: &Gpu, dst: u64, src: u64, len: usize) -> Result<()> {
    let n = wgsl::count("copy", len as i64)?;
    let from = gpu.window("copy", src, len as u64, src)?;
    let to = gpu.window("copy", dst, len as u64, dst)?;
    let pipeline = gpu.pipeline("copy_bytes", || BYTES.to_string())?;
    let words = u64::from((to.base % 4 + n).div_ceil(4));
    let groups = gpu.grid("copy", words.div_ceil(u64::from(THREADS)))?;
    gpu.dispatch(&pipeline, &[&from, &to], &[from.base, to.base, n], groups)
}

/// Registers `copy` on every dtype of 1, 2, 4 or 8 bytes.
pub fn register_all(table: &mut LaunchTable) {
    let dtypes: Vec<DType> =
        crate::ops::spec::sized().iter().copied().filter(|d| matches!(d.itemsize(), Ok(1 | 2 | 4 | 8))).collect();
    register(table, "copy", &dtypes, run);
}
