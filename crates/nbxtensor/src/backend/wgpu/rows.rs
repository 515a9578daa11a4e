//! The row ops of transformers on a wgpu device (`ops::spec::rows`): softmax and log_softmax
//! along an axis, layer_norm, rms_norm and add_rms_norm over the last dim — a workgroup per
//! row, its statistics reduced in workgroup memory in a fixed order — and rope, an invocation
//! per rotated pair. Inputs are read contiguous (the op call copies another layout first);
//! float32, float16 and bfloat16, computed in float32.

use super::gpu::Gpu;
use super::register;
use super::wgsl::{self, Elem};
use crate::backend::LaunchTable;
use crate::kernel::{Launch, Result};
use crate::ops::spec::rows::{Norm, Rope, Softmax};
use crate::ops::spec::FLOATS;
use crate::tensor::Tensor;

/// Invocations of a row's workgroup.
const THREADS: u32 = 256;

/// The workgroup reductions a row kernel uses: every invocation calls them (uniform control).
fn reductions() -> String {
    format!(
        r#"
var<workgroup> red: array<f32, {THREADS}>;
fn reduce_sum(v: f32, lid: u32) -> f32 {{
    red[lid] = v;
    workgroupBarrier();
    for (var w = {half}u; w > 0u; w = w >> 1u) {{
        if (lid < w) {{ red[lid] = red[lid] + red[lid + w]; }}
        workgroupBarrier();
    }}
    let total = red[0];
    workgroupBarrier();
    return total;
}}
// the largest value, NaN ignored (the host's `if v > m`)
fn reduce_max(v: f32, lid: u32) -> f32 {{
    red[lid] = v;
    workgroupBarrier();
    for (var w = {half}u; w > 0u; w = w >> 1u) {{
        if (lid < w) {{
            let o = red[lid + w];
            if (!is_nan(o) && (is_nan(red[lid]) || o > red[lid])) {{ red[lid] = o; }}
        }}
        workgroupBarrier();
    }}
    let top = red[0];
    workgroupBarrier();
    return top;
}}
"#,
        half = THREADS / 2
    )
}

/// The head of a row kernel: the conversions, the float helpers, the reductions.
fn head() -> String {
    format!("{}{}{}", wgsl::COMMON, super::binary::FLOAT_HELPERS, reductions())
}

const MAIN: &str = "@compute @workgroup_size(256)\nfn main(@builtin(local_invocation_id) lid3: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {\n    let lid = lid3.x;\n    let row = wid.x + wid.y * groups.x;\n    if (row >= p[0]) { return; }\n    let n = p[1];\n";

fn softmax_source(spec: &Softmax, e: Elem) -> String {
    let last = if spec.log { "x - top - log(total)" } else { "div_rn(exp(x - top), total)" };
    format!(
        r#"{head}{x}{y}{params}
{MAIN}    // p: rows, n, inner extent B, x base, y base; element i of row (a, b) at a·n·B + i·B + b
    let inner = p[2];
    let first = (row / inner) * n * inner + row % inner;
    var top = bitcast<f32>(0xff800000u);
    for (var i = lid; i < n; i += {THREADS}u) {{
        let x = ld_x(p[3] + (first + i * inner) * {w}u);
        if (!is_nan(x) && x > top) {{ top = x; }}
    }}
    top = reduce_max(top, lid);
    var sum = 0.0;
    for (var i = lid; i < n; i += {THREADS}u) {{
        sum += exp(ld_x(p[3] + (first + i * inner) * {w}u) - top);
    }}
    let total = reduce_sum(sum, lid);
    for (var i = lid; i < n; i += {THREADS}u) {{
        let x = ld_x(p[3] + (first + i * inner) * {w}u);
        st_y(p[4] + (first + i * inner) * {w}u, {last});
    }}
}}
"#,
        head = head(),
        x = wgsl::input(0, "x", e),
        y = wgsl::output(1, "y", e),
        params = wgsl::params(2),
        w = e.width
    )
}

fn norm_source(spec: &Norm, e: Elem) -> String {
    let w = e.width;
    let mut text = head();
    // the element a norm reads: x, or for add_rms_norm the sum rounded to the dtype as `add`
    // rounds it (bit for bit what `add` then `rms_norm` read)
    let load = if spec.residual {
        format!("{}", e.decoded(&e.encoded(&format!("ld_x(xb + i * {w}u) + ld_r(rb + i * {w}u)"))))
    } else {
        format!("ld_x(xb + i * {w}u)")
    };
    let (stats, value) = if spec.layer {
        (
            format!(
                r#"    var s = 0.0;
    for (var i = lid; i < n; i += {THREADS}u) {{ s += {load}; }}
    let mean = reduce_sum(s, lid) / f32(n);
    var q = 0.0;
    for (var i = lid; i < n; i += {THREADS}u) {{ let d = {load} - mean; q += d * d; }}
    let scale = 1.0 / sqrt(reduce_sum(q, lid) / f32(n) + eps);
"#
            ),
            format!("({load} - mean) * scale * ld_w(p[4] + i * {w}u) + ld_b(p[5] + i * {w}u)"),
        )
    } else {
        (
            format!(
                "    var q = 0.0;\n    for (var i = lid; i < n; i += {THREADS}u) {{ let v = {load}; q += v * v; }}\n    let scale = 1.0 / sqrt(reduce_sum(q, lid) / f32(n) + eps);\n"
            ),
            format!("{load} * scale * ld_w(p[4] + i * {w}u)"),
        )
    };
    text += &wgsl::input(0, "x", e);
    let (sums, slot) = match (spec.layer, spec.residual) {
        (true, _) => {
            text += &(wgsl::input(1, "w", e) + &wgsl::input(2, "b", e));
            ("", 3)
        }
        (false, false) => {
            text += &wgsl::input(1, "w", e);
            ("", 2)
        }
        (false, true) => {
            text += &(wgsl::input(1, "r", e) + &wgsl::input(2, "w", e) + &wgsl::output(3, "sum", e));
            ("        st_sum(sb + i * {w}u, v);\n", 4)
        }
    };
    text += &wgsl::output(slot, "y", e);
    text += &wgsl::params(slot + 1);
    let sums = sums.replace("{w}", &w.to_string());
    text += &format!(
        r#"
{MAIN}    // p: rows, n, x base, residual base, weight base, bias base, y base, sums base, eps
    let eps = bitcast<f32>(p[8]);
    let xb = p[2] + row * n * {w}u;
    let rb = p[3] + row * n * {w}u;
    let yb = p[6] + row * n * {w}u;
    let sb = p[7] + row * n * {w}u;
{stats}    for (var i = lid; i < n; i += {THREADS}u) {{
        let v = {load};
{sums}        st_y(yb + i * {w}u, {value});
    }}
}}
"#
    );
    text
}

fn base(gpu: &Gpu, op: &str, t: &Tensor) -> Result<super::pipeline::Bound> {
    gpu.bind(op, t)
}

fn softmax(gpu: &Gpu, spec: &Softmax, launch: Launch<'_>) -> Result<()> {
    let (x, y) = (&launch.inputs[0], &launch.outputs[0]);
    let name = spec.name();
    let (a, n, b) = spec.split(x.shape())?;
    let rows = wgsl::count(name, (a * b) as i64)?;
    if rows == 0 || n == 0 {
        return Ok(());
    }
    let e = wgsl::elem(name, spec.dtype)?;
    let (input, output) = (base(gpu, name, x)?, base(gpu, name, y)?);
    let params = [rows, wgsl::count(name, n as i64)?, b as u32, input.base, output.base];
    let kernel = format!("{name}_{}", spec.dtype.launch_key());
    let pipeline = gpu.pipeline(&kernel, || softmax_source(spec, e))?;
    gpu.dispatch(&pipeline, &[&input, &output], &params, gpu.grid(name, u64::from(rows))?)
}

fn norm(gpu: &Gpu, spec: &Norm, launch: Launch<'_>) -> Result<()> {
    let name = spec.name();
    let x = &launch.inputs[0];
    let n = *x.shape().last().unwrap_or(&0);
    let rows = if n == 0 { 0 } else { wgsl::count(name, x.numel() / n)? };
    if rows == 0 {
        return Ok(());
    }
    let e = wgsl::elem(name, spec.dtype)?;
    let bound: Vec<_> = launch.inputs.iter().chain(launch.outputs).map(|t| base(gpu, name, t)).collect::<Result<_>>()?;
    let eps = (spec.eps as f32).to_bits();
    let n = wgsl::count(name, n)?;
    let kernel = format!("{name}_{}", spec.dtype.launch_key());
    // p: rows, n, x base, residual base, weight base, bias base, y base, sums base, eps
    let (params, order): (Vec<u32>, Vec<usize>) = match (spec.layer, spec.residual) {
        (true, _) => (vec![rows, n, bound[0].base, 0, bound[1].base, bound[2].base, bound[3].base, 0, eps], vec![0, 1, 2, 3]),
        (false, false) => (vec![rows, n, bound[0].base, 0, bound[1].base, 0, bound[2].base, 0, eps], vec![0, 1, 2]),
        (false, true) => {
            (vec![rows, n, bound[0].base, bound[1].base, bound[2].base, 0, bound[4].base, bound[3].base, eps], vec![0, 1, 2, 3, 4])
        }
    };
    let pipeline = gpu.pipeline(&kernel, || norm_source(spec, e))?;
    let operands: Vec<_> = order.iter().map(|&i| &bound[i]).collect();
    gpu.dispatch(&pipeline, &operands, &params, gpu.grid(name, u64::from(rows))?)
}

fn rope_source(spec: &Rope, e: Elem) -> String {
    let w = e.width;
    let (first, second) = if spec.interleaved { ("2u * i", "2u * i + 1u") } else { ("i", "i + half") };
    format!(
        r#"{common}{x}{c}{s}{y}{params}
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {{
    // p: pairs, half, seq, x base, cos base, sin base, y base
    let t = gid.x + gid.y * groups.x * 256u;
    if (t >= p[0]) {{ return; }}
    let half = p[1];
    let row = t / half;
    let i = t % half;
    let position = row % p[2];
    let a = row * 2u * half + {first};
    let b = row * 2u * half + {second};
    let x1 = ld_x(p[3] + a * {w}u);
    let x2 = ld_x(p[3] + b * {w}u);
    let c = ld_c(p[4] + (position * half + i) * {w}u);
    let s = ld_s(p[5] + (position * half + i) * {w}u);
    st_y(p[6] + a * {w}u, x1 * c - x2 * s);
    st_y(p[6] + b * {w}u, x2 * c + x1 * s);
}}
"#,
        common = wgsl::COMMON,
        x = wgsl::input(0, "x", e),
        c = wgsl::input(1, "c", e),
        s = wgsl::input(2, "s", e),
        y = wgsl::output(3, "y", e),
        params = wgsl::params(4)
    )
}

fn rope(gpu: &Gpu, spec: &Rope, launch: Launch<'_>) -> Result<()> {
    let metas: Vec<_> = launch.inputs.iter().map(|t| crate::kernel::TensorMeta::new(t.dtype(), t.shape())).collect();
    let (seq, dim) = spec.check(&metas)?;
    let y = &launch.outputs[0];
    let pairs = wgsl::count("rope", y.numel() / 2)?;
    if pairs == 0 || dim == 0 {
        return Ok(());
    }
    let e = wgsl::elem("rope", spec.dtype)?;
    let bound: Vec<_> = launch.inputs.iter().chain(launch.outputs).map(|t| base(gpu, "rope", t)).collect::<Result<_>>()?;
    let params = [pairs, (dim / 2) as u32, seq as u32, bound[0].base, bound[1].base, bound[2].base, bound[3].base];
    let kernel = format!("rope_{}{}", spec.dtype.launch_key(), if spec.interleaved { "_interleaved" } else { "" });
    let pipeline = gpu.pipeline(&kernel, || rope_source(spec, e))?;
    let operands: Vec<_> = bound.iter().collect();
    gpu.dispatch(&pipeline, &operands, &params, gpu.grid("rope", u64::from(pairs).div_ceil(256))?)
}

/// The first input a row kernel cannot read: one that is not contiguous.
fn contiguous_only<S>(_: &S, inputs: &[&Tensor]) -> Option<usize> {
    inputs.iter().position(|t| !t.is_contiguous())
}

/// Registers softmax, log_softmax, the norms and rope on float32, float16 and bfloat16.
pub fn register_all(table: &mut LaunchTable) {
    for op in ["softmax", "log_softmax"] {
        register(table, op, &FLOATS, softmax);
        table.reads_only(op, &FLOATS, contiguous_only::<Softmax>);
    }
    for op in ["layer_norm", "rms_norm", "add_rms_norm"] {
        register(table, op, &FLOATS, norm);
        table.reads_only(op, &FLOATS, contiguous_only::<Norm>);
    }
    register(table, "rope", &FLOATS, rope);
    table.reads_only("rope", &FLOATS, contiguous_only::<Rope>);
}
