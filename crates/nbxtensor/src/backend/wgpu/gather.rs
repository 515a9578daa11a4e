//! Gathers on a wgpu device, byte-exact on every dtype of 1 to 16 bytes: `embedding` (the rows
//! of `table [V, D]` at `indices`, int32 or int64, any shape and layout) and `index_select`
//! (the entries of `x` at the 1-d `indices` along an axis), one kernel: the source walked over the
//! output's coordinates, the index's term added along the axis. An invocation writes one output
//! word. Indices live on the device, so they are checked there: a bad one is never read
//! through (its entries are written as zeros) and raises the launch's flag word (its 8-byte
//! workspace) with the first bad position; the host reads it back after the launch and refuses
//! the call as the CPU does. While a capture records, nothing can be read back: the capture's
//! eager run checked the same launch (as on CUDA).
//!
//! `concat` places each input in its slice of the output, one launch per input: both walked
//! over the input's coordinates; elements narrower than a word are merged into their output
//! word by atomic bit operations (each bit written by one invocation).

use super::gpu::Gpu;
use super::wgsl;
use super::{register, register_with_workspace};
use crate::backend::LaunchTable;
use crate::dtype::DType;
use crate::kernel::{KernelError, Launch, Result, TensorMeta};
use crate::ops::spec::gather::{Concat, Embedding, IndexSelect};
use crate::ops::spec::{axis_of, sized, INDEX_DTYPES};
use crate::shape::walk;
use crate::tensor::Tensor;

/// Bytes of the flag word.
const FLAG_BYTES: u64 = 8;

fn flag_workspace<S>(_: &S, _: &[TensorMeta]) -> Result<u64> {
    Ok(FLAG_BYTES)
}

fn source(index: DType, width: u32) -> String {
    let per = (4 / width).max(1);
    let words = (width / 4).max(1);
    let valid = if index == DType::Int64 { "idx.y == 0u && idx.x < rows" } else { "idx < rows" };
    let ty = if index == DType::Int64 { "vec2<u32>" } else { "u32" };
    let load = if index == DType::Int64 { "vec2<u32>(w_i(at_i), w_i(at_i + 4u))" } else { "w_i(at_i)" };
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
{raw_i}{raw_x}{walk_x}{walk_i}
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {{
    // p: output elements, elements after the axis, positions (the axis' extent in the output),
    //    the source's extent there (the indices' range), its byte stride there, y base, then
    //    the source walked over the output (its axis stride 0) and the indices walked
    let n = p[0];
    let t = gid.x + gid.y * groups.x * 256u;
    if (t * {per}u >= n) {{ return; }}
    let rows = p[3];
{before}    for (var k = 0u; k < {per}u; k++) {{
        let e0 = t * {per}u + k;
        if (e0 >= n) {{ break; }}
        let position = (e0 / p[1]) % p[2];
        let at_i = walk_i(position)[0];
        let idx: {ty} = {load};
        let ok = {valid};
        let src = walk_x(e0)[0] + {row} * p[4];
        if (!ok) {{
            atomicMax(&flag[0], p[2] - position);
        }}
        {store}
    }}
{after}}}
"#,
        raw_i = raw("i", 4),
        raw_x = raw("x", width),
        walk_x = wgsl::walker("walk_x", 1, 6),
        walk_i = wgsl::walker("walk_i", 1, 6 + wgsl::walk_words(1)),
    )
}

/// `w_<name>(byte)`: the bits of an element of `width` bytes from `byte` of a binding, at any
/// alignment (both words read unconditionally, the next clamped into the window and used only
/// where the element reaches into it).
fn raw(name: &str, width: u32) -> String {
    let bits = 8 * width.min(4);
    format!(
        "fn w_{name}(b: u32) -> u32 {{\n    let j = b >> 2u;\n    let s = (b & 3u) * 8u;\n    let low = {name}[j];\n    let high = {name}[min(j + 1u, arrayLength(&{name}) - 1u)];\n    return select((low >> s) | (high << (32u - s)), low >> s, s + {bits}u <= 32u);\n}}\n"
    )
}

/// One gather: the output (addressed as `out_shape`) takes the source's entry at
/// `indices[c]` along `axis` for each coordinate `c` there.
struct Gather<'a> {
    op: &'static str,
    source: &'a Tensor,
    /// The output's shape as the source is addressed (the indices' positions along `axis`).
    out_shape: Vec<i64>,
    axis: usize,
    indices: &'a Tensor,
    /// Names the range in errors ("table [4, 3]", "axis 1 of [2, 5]").
    what: String,
}

impl Gather<'_> {
    fn bound(&self) -> i64 {
        self.source.shape()[self.axis]
    }

    fn refuse(&self, value: i64, position: i64) -> KernelError {
        KernelError::Invalid(format!(
            "{}: index {value} (at position {position}) is out of range [0, {}) of {}",
            self.op,
            self.bound(),
            self.what
        ))
    }

    /// The indices, read to the host, in row-major order.
    fn host_indices(&self) -> Result<Vec<i64>> {
        let host = self.indices.to(crate::memory::Device::CPU)?;
        Ok(match self.indices.dtype() {
            DType::Int32 => host.to_vec::<i32>()?.into_iter().map(i64::from).collect(),
            _ => host.to_vec::<i64>()?,
        })
    }

    fn launch(&self, gpu: &Gpu, y: &Tensor, workspace: &crate::kernel::Workspace<'_>) -> Result<()> {
        let op = self.op;
        if y.numel() == 0 {
            // no entry to copy, but the indices are still checked
            let values = self.host_indices()?;
            return match values.iter().enumerate().find(|(_, &v)| v < 0 || v >= self.bound()) {
                Some((position, &value)) => Err(self.refuse(value, position as i64)),
                None => Ok(()),
            };
        }
        let width = self.source.dtype().itemsize().map_err(|e| KernelError::Invalid(format!("{op}: {e}")))? as u32;
        if !matches!(width, 1 | 2 | 4 | 8 | 16) {
            return Err(KernelError::Invalid(format!("{op}: no wgpu gather of {width}-byte elements")));
        }
        let n = wgsl::count(op, y.numel())?;
        let flag_address = workspace.device_ptr();
        if (workspace.len() as u64) < FLAG_BYTES {
            return Err(KernelError::Invalid(format!(
                "{op}: the workspace holds {} bytes, not the flag's 8",
                workspace.len()
            )));
        }
        gpu.zero(flag_address, FLAG_BYTES as usize).map_err(|e| KernelError::Device(e.to_string()))?;
        let (bi, bx, by) = (gpu.bind(op, self.indices)?, gpu.bind(op, self.source)?, gpu.bind(op, y)?);
        let flag = gpu.window(op, flag_address, FLAG_BYTES, flag_address)?;
        let index_width = if self.indices.dtype() == DType::Int64 { 8 } else { 4 };
        // the source over the output's coordinates, its axis stride 0 (the index's term added)
        let mut strides = self.source.strides().to_vec();
        let axis_stride = std::mem::replace(&mut strides[self.axis], 0);
        let walked_x = walk(&self.out_shape, &[&strides], None);
        let walked_i = walk(self.indices.shape(), &[self.indices.strides()], None);
        let inner: i64 = self.out_shape[self.axis + 1..].iter().product();
        let mut params = vec![
            n,
            wgsl::count(op, inner)?,
            wgsl::count(op, self.out_shape[self.axis])?,
            wgsl::count(op, self.bound())?,
            axis_stride.wrapping_mul(i64::from(width)) as u32,
            by.base,
        ];
        params.extend(wgsl::walk_params(op, &walked_x, &[(bx.base, width)])?);
        params.extend(wgsl::walk_params(op, &walked_i, &[(bi.base, index_width)])?);
        let kernel = format!("gather_{}_b{width}", self.indices.dtype().launch_key());
        let pipeline = gpu.pipeline(&kernel, || source(self.indices.dtype(), width))?;
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
        let position = i64::from(self.out_shape[self.axis] as u32 - raised);
        let values = self.host_indices()?;
        Err(self.refuse(values[position as usize], position))
    }
}

fn run_embedding(gpu: &Gpu, _: &Embedding, launch: Launch<'_>) -> Result<()> {
    let (indices, table, y) = (&launch.inputs[0], &launch.inputs[1], &launch.outputs[0]);
    let gather = Gather {
        op: "embedding",
        source: table,
        out_shape: vec![indices.numel(), table.shape()[1]],
        axis: 0,
        indices,
        what: format!("table {:?}", table.shape()),
    };
    gather.launch(gpu, y, &launch.workspace)
}

fn run_index_select(gpu: &Gpu, spec: &IndexSelect, launch: Launch<'_>) -> Result<()> {
    let (x, indices, y) = (&launch.inputs[0], &launch.inputs[1], &launch.outputs[0]);
    let axis = axis_of("index_select", spec.axis, x.ndim())?;
    let gather = Gather {
        op: "index_select",
        source: x,
        out_shape: y.shape().to_vec(),
        axis,
        indices,
        what: format!("axis {axis} of {:?}", x.shape()),
    };
    gather.launch(gpu, y, &launch.workspace)
}

/// The kernel placing the elements of `x` at `y`'s offsets, both walked over `x`'s
/// coordinates.
fn placing_source(width: u32) -> String {
    let (y_type, store) = if width >= 4 {
        let words = width / 4;
        (
            "array<u32>",
            format!(
                "for (var q = 0u; q < {words}u; q++) {{\n        y[(at[1] >> 2u) + q] = w_x(at[0] + 4u * q);\n    }}"
            ),
        )
    } else {
        let mask = if width == 1 { "0xffu" } else { "0xffffu" };
        (
            "array<atomic<u32>>",
            format!(
                "let s = (at[1] & 3u) * 8u;\n    atomicAnd(&y[at[1] >> 2u], ~({mask} << s));\n    atomicOr(&y[at[1] >> 2u], (w_x(at[0]) & {mask}) << s);"
            ),
        )
    };
    format!(
        r#"
@group(0) @binding(0) var<storage, read_write> x: array<u32>;
@group(0) @binding(1) var<storage, read_write> y: {y_type};
@group(0) @binding(2) var<storage, read> p: array<u32>;
{raw_x}{walk}
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {{
    // p: elements, then x and its place in y walked over x's coordinates
    let t = gid.x + gid.y * groups.x * 256u;
    if (t >= p[0]) {{ return; }}
    let at = walk(t);
    {store}
}}
"#,
        raw_x = raw("x", width),
        walk = wgsl::walker("walk", 2, 1),
    )
}

fn run_concat(gpu: &Gpu, spec: &Concat, launch: Launch<'_>) -> Result<()> {
    let y = &launch.outputs[0];
    let axis = axis_of("concat", spec.axis, y.ndim())?;
    let width = y.dtype().itemsize().map_err(|e| KernelError::Invalid(format!("concat: {e}")))? as u32;
    let pipeline = gpu.pipeline(&format!("concat_b{width}"), || placing_source(width))?;
    let by = gpu.bind("concat", y)?;
    let mut offset = 0i64;
    for x in launch.inputs.iter() {
        let at = offset;
        offset += x.shape()[axis];
        if x.numel() == 0 {
            continue;
        }
        let bx = gpu.bind("concat", x)?;
        let place = by.base as i64 + at * y.strides()[axis] * i64::from(width);
        let walked = walk(x.shape(), &[x.strides(), y.strides()], None);
        let n = wgsl::count("concat", x.numel())?;
        let mut params = vec![n];
        params.extend(wgsl::walk_params("concat", &walked, &[(bx.base, width), (place as u32, width)])?);
        let groups = gpu.grid("concat", u64::from(n).div_ceil(256))?;
        gpu.dispatch(&pipeline, &[&bx, &by], &params, groups)?;
    }
    Ok(())
}

/// Registers `embedding` (on the index dtypes), and `index_select` and `concat` (on every
/// dtype of 1 to 16 bytes).
pub fn register_all(table: &mut LaunchTable) {
    register_with_workspace(table, "embedding", &INDEX_DTYPES, run_embedding, flag_workspace);
    let dtypes: Vec<DType> =
        sized().iter().copied().filter(|d| matches!(d.itemsize(), Ok(1 | 2 | 4 | 8 | 16))).collect();
    register_with_workspace(table, "index_select", &dtypes, run_index_select, flag_workspace);
    register(table, "concat", &dtypes, run_concat);
}
