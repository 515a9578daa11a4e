//! `embedding` on a wgpu device: the rows of `table [V, D]` at `indices` (int32 or int64, any
//! shape and layout), byte-exact on every dtype of 1, 2, 4 or 8 bytes. An invocation writes one
//! output word. Indices live on the device, so they are checked there: a bad one is never read
//! through (its entries are written as zeros) and raises the launch's flag word (its 8-byte
//! workspace) with the first bad position; the host reads it back after the launch and refuses
//! the call as the CPU does. While a capture records, nothing can be read back: the capture's
//! eager run checked the same launch (as on CUDA).

use super::gpu::Gpu;
use super::register_with_workspace;
use super::wgsl;
use crate::backend::LaunchTable;
use crate::dtype::DType;
use crate::kernel::{KernelError, Launch, Result, TensorMeta};
use crate::ops::spec::gather::Embedding;
use crate::ops::spec::INDEX_DTYPES;
use crate::shape::walk;

/// Bytes of the flag word.
const FLAG_BYTES: u64 = 8;

fn flag_workspace(_: &Embedding, _: &[TensorMeta]) -> Result<u64> {
    Ok(FLAG_BYTES)
}

fn source(index: DType, width: u32) -> String {
    let per = (4 / width).max(1);
    let words = (width / 4).max(1);
    let valid = if index == DType::Int64 { "idx.y == 0u && idx.x < rows" } else { "idx < rows" };
    let ty = if index == DType::Int64 { "vec2<u32>" } else { "u32" };
    let load = if index == DType::Int64 { "vec2<u32>(w_i(at), w_i(at + 4u))" } else { "w_i(at)" };
    let row = if index == DType::Int64 { "idx.x" } else { "idx" };
    // an element of 4 bytes or more: its words; a narrower one: its bits in the word written
    let (before, store, after) = if width >= 4 {
        (
            String::new(),
            format!("for (var q = 0u; q < {words}u; q++) {{\n            var v = 0u;\n            if (ok) {{ v = w_x(src + 4u * q); }}\n            y[(p[5] >> 2u) + e0 * {words}u + q] = v;\n        }}"),
            String::new(),
        )
    } else {
        let mask = if width == 1 { "0xffu" } else { "0xffffu" };
        (
            "    var word = 0u;\n".to_string(),
            format!("if (ok) {{ word |= (w_x(src) & {mask}) << (k * {}u); }}", width * 8),
            "    y[(p[5] >> 2u) + t] = word;\n".to_string(),
        )
    };
    format!(
        r#"
@group(0) @binding(0) var<storage, read_write> i: array<u32>;
@group(0) @binding(1) var<storage, read_write> x: array<u32>;
@group(0) @binding(2) var<storage, read_write> y: array<u32>;
@group(0) @binding(3) var<storage, read_write> flag: array<atomic<u32>>;
@group(0) @binding(4) var<storage, read> p: array<u32>;
{raw_i}{raw_x}{walk}
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {{
    // p: output elements, D, V, table row stride (bytes), table column stride (bytes),
    //    y base, positions, (unused ×3), table base, then the walk of the indices
    let n = p[0];
    let t = gid.x + gid.y * groups.x * 256u;
    if (t * {per}u >= n) {{ return; }}
    let d = p[1];
    let rows = p[2];
{before}    for (var k = 0u; k < {per}u; k++) {{
        let e0 = t * {per}u + k;
        if (e0 >= n) {{ break; }}
        let position = e0 / d;
        let column = e0 % d;
        let at = walk(position)[0];
        let idx: {ty} = {load};
        let ok = {valid};
        let src = p[10] + {row} * p[3] + column * p[4];
        if (!ok && column == 0u) {{
            atomicMax(&flag[0], p[6] - position);
        }}
        {store}
    }}
{after}}}
"#,
        raw_i = raw("i", 4),
        raw_x = raw("x", width),
        walk = wgsl::walker("walk", 1, 11),
    )
}

/// `w_<name>(byte)`: the bits of an element of `width` bytes from `byte` of a binding, at any
/// alignment (the next word read only where the element reaches into it).
fn raw(name: &str, width: u32) -> String {
    let bits = 8 * width.min(4);
    format!(
        "fn w_{name}(b: u32) -> u32 {{\n    let j = b >> 2u;\n    let s = (b & 3u) * 8u;\n    if (s + {bits}u <= 32u) {{ return {name}[j] >> s; }}\n    return ({name}[j] >> s) | ({name}[j + 1u] << (32u - s));\n}}\n"
    )
}

fn run(gpu: &Gpu, spec: &Embedding, launch: Launch<'_>) -> Result<()> {
    let (indices, table, y) = (&launch.inputs[0], &launch.inputs[1], &launch.outputs[0]);
    let op = "embedding";
    let positions = indices.numel();
    let (rows, d) = (table.shape()[0], table.shape()[1]);
    let refuse = |value: i64, position: i64| {
        KernelError::Invalid(format!(
            "embedding: index {value} (at position {position}) is out of range [0, {rows}) of table {:?}",
            table.shape()
        ))
    };
    if y.numel() == 0 {
        // no entry to copy, but the indices are still checked
        let values: Vec<i64> = match spec.dtype {
            DType::Int32 => indices.to(crate::memory::Device::CPU)?.to_vec::<i32>()?.into_iter().map(i64::from).collect(),
            _ => indices.to(crate::memory::Device::CPU)?.to_vec::<i64>()?,
        };
        return match values.iter().enumerate().find(|(_, &v)| v < 0 || v >= rows) {
            Some((position, &value)) => Err(refuse(value, position as i64)),
            None => Ok(()),
        };
    }
    let width = table.dtype().itemsize().map_err(|e| KernelError::Invalid(format!("{op}: {e}")))? as u32;
    if !matches!(width, 1 | 2 | 4 | 8 | 16) {
        return Err(KernelError::Invalid(format!("{op}: no wgpu gather of {width}-byte elements")));
    }
    let n = wgsl::count(op, y.numel())?;
    let flag_address = launch.workspace.device_ptr();
    if (launch.workspace.len() as u64) < FLAG_BYTES {
        return Err(KernelError::Invalid(format!("{op}: the workspace holds {} bytes, not the flag's 8", launch.workspace.len())));
    }
    gpu.zero(flag_address, FLAG_BYTES as usize).map_err(|e| KernelError::Device(e.to_string()))?;
    let (bi, bx, by) = (gpu.bind(op, indices)?, gpu.bind(op, table)?, gpu.bind(op, y)?);
    let flag = gpu.window(op, flag_address, FLAG_BYTES, flag_address)?;
    let index_width = if spec.dtype == DType::Int64 { 8 } else { 4 };
    let walked = walk(indices.shape(), &[indices.strides()], None);
    let stride = |s: i64| s.wrapping_mul(i64::from(width)) as u32;
    let (rs, cs) = (stride(table.strides()[0]), stride(table.strides()[1]));
    let mut params = vec![n, wgsl::count(op, d)?, wgsl::count(op, rows)?, rs, cs, by.base, wgsl::count(op, positions)?, 0, 0, 0, bx.base];
    params.extend(wgsl::walk_params(op, &walked, &[(bi.base, index_width)])?);
    let kernel = format!("embedding_{}_b{width}", spec.dtype.launch_key());
    let pipeline = gpu.pipeline(&kernel, || source(spec.dtype, width))?;
    let per = (4 / width).max(1);
    let groups = gpu.grid(op, u64::from(n.div_ceil(per)).div_ceil(256))?;
    gpu.dispatch(&pipeline, &[&bi, &bx, &by, &flag], &params, groups)?;
    if gpu.recording() {
        return Ok(());
    }
    let mut word = [0u8; 4];
    gpu.read(flag_address, &mut word).map_err(|e| KernelError::Device(e.to_string()))?;
    let raised = u32::from_le_bytes(word);
    if raised == 0 {
        return Ok(());
    }
    let position = i64::from(positions as u32 - raised);
    let host = indices.to(crate::memory::Device::CPU)?;
    let flat = host.reshape(&[positions])?;
    let value = match spec.dtype {
        DType::Int32 => i64::from(flat.narrow(0, position, 1)?.to_vec::<i32>()?[0]),
        _ => flat.narrow(0, position, 1)?.to_vec::<i64>()?[0],
    };
    Err(refuse(value, position))
}

/// Registers `embedding` on the index dtypes.
pub fn register_all(table: &mut LaunchTable) {
    register_with_workspace(table, "embedding", &INDEX_DTYPES, run, flag_workspace);
}
