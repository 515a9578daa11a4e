//! The row ops of transformers on a wgpu device (`ops::spec::rows`): softmax and log_softmax
//! along an axis, layer_norm, rms_norm, add_rms_norm and add_layer_norm over the last dim — a workgroup per
//! row, its statistics reduced in workgroup memory in a fixed order — and rope, an invocation
//! per rotated pair. Inputs are read contiguous (the op call copies another layout first);
//! float32, float16 and bfloat16, computed in float32. Float32 rows of 1024 to 4096 elements on
//! 16 bytes take a vector form (softmax over the last axis, the norms): whole `vec4`s read and
//! written, the same statistics and values.

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

/// A norm kernel's input bindings in the launch's order: x, [residual,] weight, [bias] (the
/// outputs follow: [sum,] y).
fn norm_inputs(spec: &Norm) -> Vec<&'static str> {
    let mut names = vec!["x"];
    if spec.residual {
        names.push("r");
    }
    names.push("w");
    if spec.layer {
        names.push("b");
    }
    names
}

/// The workgroup reductions a row kernel uses: the sum, and the largest value with NaN ignored
/// (the host's `if v > m`).
fn reductions() -> String {
    wgsl::workgroup_reduction("reduce_sum", THREADS, "a + b")
        + &wgsl::workgroup_reduction("reduce_max", THREADS, "select(a, b, !is_nan(b) && (is_nan(a) || b > a))")
}

/// The head of a row kernel: the conversions, the float helpers, the reductions.
fn head() -> String {
    format!("{}{}{}", wgsl::COMMON, super::binary::FLOAT_HELPERS, reductions())
}

const MAIN: &str = "@compute @workgroup_size(256)\nfn main(@builtin(local_invocation_id) lid3: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {\n    let lid = lid3.x;\n    let row = wid.x + wid.y * groups.x;\n    if (row >= p[0]) { return; }\n    let n = p[1];\n";

/// Row elements an invocation holds in registers where the row fits in them (256 × 16 = 4096
/// elements): the row is then read once, not once per pass.
const CACHED: u32 = 16;

/// The WGSL running `body` over the row elements of this invocation: `{i}` is the element's
/// index, `{v}` its value (read by `load`, in which `{i}` stands for the index). Cached, the
/// values were read once into registers `c0 ..` by [`cache`]; else each pass reads them again.
fn each(cached: bool, load: &str, body: &str) -> String {
    if !cached {
        let value = load.replace("{i}", "i");
        let body = body.replace("{i}", "i").replace("{v}", &format!("({value})"));
        return format!("    for (var i = lid; i < n; i += {THREADS}u) {{\n        {body}\n    }}\n");
    }
    (0..CACHED)
        .map(|c| {
            format!(
                "    if (i{c} < n) {{\n        {}\n    }}\n",
                body.replace("{i}", &format!("i{c}")).replace("{v}", &format!("c{c}"))
            )
        })
        .collect()
}

/// The WGSL reading this invocation's row elements into registers (cached rows only). Every
/// load is unconditional, its index clamped into the row (a slot past the row's end reads its
/// last element, which no pass uses): loads under a condition are issued one after another,
/// unconditional ones all at once.
fn cache(cached: bool, load: &str) -> String {
    if !cached {
        return String::new();
    }
    (0..CACHED)
        .map(|c| {
            let value = load.replace("{i}", &format!("min(i{c}, n - 1u)"));
            format!("    let i{c} = lid + {}u;\n    let c{c} = {value};\n", c * THREADS)
        })
        .collect()
}

/// Softmax's value of element `{v}`: the weight scaled by the sum's reciprocal (softmax is
/// held to a few ulps, not to the correctly rounded quotient), or its log.
fn softmax_value(spec: &Softmax) -> &'static str {
    if spec.log {
        "{v} - top - log(total)"
    } else {
        "exp({v} - top) * inverse"
    }
}

/// A softmax kernel of either form: its bindings, the statements placing the row (`first`),
/// reading it (`cache`), and its three passes (the largest value, the sum, the write).
fn softmax_kernel(bindings: &str, first: &str, cache: &str, max: &str, sum: &str, write: &str) -> String {
    format!(
        r#"{head}{bindings}{params}
{MAIN}{first}{cache}    var top = bitcast<f32>(0xff800000u);
{max}    top = reduce_max(top, lid);
    var sum = 0.0;
{sum}    let total = reduce_sum(sum, lid);
    let inverse = 1.0 / total;
{write}}}
"#,
        head = head(),
        params = wgsl::params(2),
    )
}

fn softmax_source(spec: &Softmax, e: Elem, cached: bool) -> String {
    let w = e.width;
    let load = format!("ld_x(p[3] + (first + {{i}} * inner) * {w}u)");
    let store = format!("st_y(p[4] + (first + {{i}} * inner) * {w}u, {});", softmax_value(spec));
    softmax_kernel(
        &(wgsl::input(0, "x", e) + &wgsl::output(1, "y", e)),
        "    // p: rows, n, inner extent B, x base, y base; element i of row (a, b) at a·n·B + i·B + b\n    let inner = p[2];\n    let first = (row / inner) * n * inner + row % inner;\n",
        &cache(cached, &load),
        &each(cached, &load, "let x = {v};\n        if (!is_nan(x) && x > top) { top = x; }"),
        &each(cached, &load, "sum += exp({v} - top);"),
        &each(cached, &load, &store),
    )
}

fn norm_source(spec: &Norm, e: Elem, cached: bool) -> String {
    let w = e.width;
    let mut text = head();
    // the element a norm reads: x, or for the add_ ops the sum rounded to the dtype as `add`
    // rounds it (bit for bit what `add` then the norm read)
    let load = if spec.residual {
        e.decoded(&e.encoded(&format!("ld_x(xb + {{i}} * {w}u) + ld_r(rb + {{i}} * {w}u)")))
    } else {
        format!("ld_x(xb + {{i}} * {w}u)")
    };
    let stats = if spec.layer {
        format!(
            "    var s = 0.0;\n{}    let mean = reduce_sum(s, lid) / f32(n);\n    var q = 0.0;\n{}    let scale = 1.0 / sqrt(reduce_sum(q, lid) / f32(n) + eps);\n",
            each(cached, &load, "s += {v};"),
            each(cached, &load, "let d = {v} - mean;\n        q += d * d;")
        )
    } else {
        format!(
            "    var q = 0.0;\n{}    let scale = 1.0 / sqrt(reduce_sum(q, lid) / f32(n) + eps);\n",
            each(cached, &load, "let v = {v};\n        q += v * v;")
        )
    };
    let value = if spec.layer {
        format!("({{v}} - mean) * scale * ld_w(p[4] + {{i}} * {w}u) + ld_b(p[5] + {{i}} * {w}u)")
    } else {
        format!("{{v}} * scale * ld_w(p[4] + {{i}} * {w}u)")
    };
    let mut slot = 0;
    for name in norm_inputs(spec) {
        text += &wgsl::input(slot, name, e);
        slot += 1;
    }
    let sums = if spec.residual {
        text += &wgsl::output(slot, "sum", e);
        slot += 1;
        format!("st_sum(sb + {{i}} * {w}u, {{v}});\n        ")
    } else {
        String::new()
    };
    text += &wgsl::output(slot, "y", e);
    text += &wgsl::params(slot + 1);
    let write = each(cached, &load, &format!("{sums}st_y(yb + {{i}} * {w}u, {value});"));
    text += &format!(
        r#"
{MAIN}    // p: rows, n, x base, residual base, weight base, bias base, y base, sums base, eps
    let eps = bitcast<f32>(p[8]);
    let xb = p[2] + row * n * {w}u;
    let rb = p[3] + row * n * {w}u;
    let yb = p[6] + row * n * {w}u;
    let sb = p[7] + row * n * {w}u;
{cache}{stats}{write}}}
"#,
        cache = cache(cached, &load)
    );
    text
}

/// Vectors of a row an invocation holds in the vector form: 4, so rows of up to 4096.
const MAX_VECTORS: u32 = 4;

/// The vector form's count of 16-byte vectors an invocation holds, where it serves: float32
/// rows of 1024, 2048, 3072 or 4096 elements, every operand on 16 bytes. Each invocation
/// then reads and writes whole `vec4`s (one load of 16 bytes where the general form makes four
/// of 4), the row's elements `4·(lid + 256·k) + lane` in its registers.
fn vectors(e: Elem, n: u32, bases: &[u32]) -> Option<u32> {
    let count = n / (4 * THREADS);
    (e.width == 4 && n % (4 * THREADS) == 0 && (1..=MAX_VECTORS).contains(&count) && bases.iter().all(|b| b % 16 == 0))
        .then_some(count)
}

/// A binding of 16-byte vectors.
fn vector_binding(slot: u32, name: &str) -> String {
    format!("@group(0) @binding({slot}) var<storage, read_write> {name}: array<vec4<u32>>;\n")
}

const LANES: [&str; 4] = ["x", "y", "z", "w"];

/// The vector form's registers: `c<j>` decoded from the vectors `q<name><k>` of each input
/// (its name and the WGSL of its row's first vector), combined by `value` (in which `{name}`
/// stands for that input's lane).
fn vector_cache(e: Elem, count: u32, inputs: &[(&str, &str)], value: &str) -> String {
    let mut text = String::new();
    for k in 0..count {
        for (name, first) in inputs {
            text += &format!("    let q{name}{k} = {name}[{first} + lid + {}u];\n", k * THREADS);
        }
        for (l, lane) in LANES.iter().enumerate() {
            let mut v = value.to_string();
            for (name, _) in inputs {
                v = v.replace(&format!("{{{name}}}"), &e.decoded(&format!("q{name}{k}.{lane}")));
            }
            text += &format!("    let c{} = {v};\n", 4 * k + l as u32);
        }
    }
    text
}

/// The vector form's store: vector `first + lid + 256·k` of `name` takes `value` (of `{j}`, a
/// register's number, and `{lane}`) encoded, lane by lane.
fn vector_store(e: Elem, count: u32, name: &str, first: &str, value: &str) -> String {
    (0..count)
        .map(|k| {
            let lanes: Vec<String> = LANES
                .iter()
                .enumerate()
                .map(|(l, lane)| {
                    e.encoded(
                        &value
                            .replace("{j}", &(4 * k + l as u32).to_string())
                            .replace("{lane}", lane)
                            .replace("{k}", &k.to_string()),
                    )
                })
                .collect();
            format!("    {name}[{first} + lid + {}u] = vec4<u32>({});\n", k * THREADS, lanes.join(", "))
        })
        .collect()
}

/// Softmax over the last axis in the vector form (see [`vectors`]).
fn softmax_vector_source(spec: &Softmax, e: Elem, count: u32) -> String {
    let registers = 4 * count;
    let max: String =
        (0..registers).map(|j| format!("    if (!is_nan(c{j}) && c{j} > top) {{ top = c{j}; }}\n")).collect();
    let sum: String = (0..registers).map(|j| format!("    sum += exp(c{j} - top);\n")).collect();
    softmax_kernel(
        &(vector_binding(0, "x") + &vector_binding(1, "y")),
        "    // p: rows, n, inner extent (1), x base, y base\n    let first = row * (n >> 2u);\n",
        &vector_cache(e, count, &[("x", "(p[3] >> 4u) + first")], "{x}"),
        &max,
        &sum,
        &vector_store(e, count, "y", "(p[4] >> 4u) + first", &softmax_value(spec).replace("{v}", "c{j}")),
    )
}

/// layer_norm, rms_norm, add_rms_norm and add_layer_norm in the vector form (see [`vectors`]): the statistics
/// and values as the general form computes them.
fn norm_vector_source(spec: &Norm, e: Elem, count: u32) -> String {
    let registers = 4 * count;
    let mut text = head();
    let x = ("x", "(p[2] >> 4u) + first");
    let (inputs, value) = if spec.residual {
        (vec![x, ("r", "(p[3] >> 4u) + first")], e.decoded(&e.encoded("{x} + {r}")))
    } else {
        (vec![x], "{x}".to_string())
    };
    let stats = if spec.layer {
        let s: String = (0..registers).map(|j| format!("    s += c{j};\n")).collect();
        let q: String = (0..registers).map(|j| format!("    {{ let d = c{j} - mean; q += d * d; }}\n")).collect();
        format!("    var s = 0.0;\n{s}    let mean = reduce_sum(s, lid) / f32(n);\n    var q = 0.0;\n{q}    let scale = 1.0 / sqrt(reduce_sum(q, lid) / f32(n) + eps);\n")
    } else {
        let q: String = (0..registers).map(|j| format!("    q += c{j} * c{j};\n")).collect();
        format!("    var q = 0.0;\n{q}    let scale = 1.0 / sqrt(reduce_sum(q, lid) / f32(n) + eps);\n")
    };
    let weight = |k: &str, lane: &str, name: &str, base: &str| {
        e.decoded(&format!("{name}[({base} >> 4u) + lid + {k}u * {THREADS}u].{lane}"))
    };
    let output = if spec.layer {
        format!(
            "(c{{j}} - mean) * scale * {} + {}",
            weight("{k}", "{lane}", "w", "p[4]"),
            weight("{k}", "{lane}", "b", "p[5]")
        )
    } else {
        format!("c{{j}} * scale * {}", weight("{k}", "{lane}", "w", "p[4]"))
    };
    let mut names = norm_inputs(spec);
    if spec.residual {
        names.push("sum");
    }
    for (slot, name) in names.iter().enumerate() {
        text += &vector_binding(slot as u32, name);
    }
    let slot = names.len() as u32;
    text += &vector_binding(slot, "y");
    text += &wgsl::params(slot + 1);
    let cache = vector_cache(e, count, &inputs, &value);
    let sums =
        if spec.residual { vector_store(e, count, "sum", "(p[7] >> 4u) + first", "c{j}") } else { String::new() };
    text += &format!(
        r#"
{MAIN}    // p: rows, n, x base, residual base, weight base, bias base, y base, sums base, eps
    let eps = bitcast<f32>(p[8]);
    let first = row * (n >> 2u);
{cache}{stats}{sums}{write}}}
"#,
        write = vector_store(e, count, "y", "(p[6] >> 4u) + first", &output),
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
    if let Some(count) = vectors(e, params[1], &[input.base, output.base]).filter(|_| b == 1) {
        let kernel = format!("{name}_{}_v{count}", spec.dtype.launch_key());
        let pipeline = gpu.pipeline(&kernel, || softmax_vector_source(spec, e, count))?;
        return gpu.dispatch(&pipeline, &[&input, &output], &params, gpu.grid(name, u64::from(rows))?);
    }
    let cached = n <= (THREADS * CACHED) as usize;
    let kernel = format!("{name}_{}{}", spec.dtype.launch_key(), if cached { "_cached" } else { "" });
    let pipeline = gpu.pipeline(&kernel, || softmax_source(spec, e, cached))?;
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
    let bound: Vec<_> =
        launch.inputs.iter().chain(launch.outputs).map(|t| base(gpu, name, t)).collect::<Result<_>>()?;
    let eps = (spec.eps as f32).to_bits();
    let n = wgsl::count(name, n)?;
    let cached = n <= THREADS * CACHED;
    let kernel = format!("{name}_{}{}", spec.dtype.launch_key(), if cached { "_cached" } else { "" });
    // p: rows, n, x base, residual base, weight base, bias base, y base, sums base, eps; the
    // operands bound in the launch's order (x, [residual,] weight, [bias,] [sum,] y)
    let mut at = bound.iter().map(|b| b.base);
    let mut next = || at.next().unwrap_or(0);
    let x_base = next();
    let r_base = if spec.residual { next() } else { 0 };
    let w_base = next();
    let b_base = if spec.layer { next() } else { 0 };
    let s_base = if spec.residual { next() } else { 0 };
    let params = vec![rows, n, x_base, r_base, w_base, b_base, next(), s_base, eps];
    let operands: Vec<_> = bound.iter().collect();
    let bases: Vec<u32> = bound.iter().map(|b| b.base).collect();
    let pipeline = match vectors(e, n, &bases) {
        Some(count) => {
            let kernel = format!("{name}_{}_v{count}", spec.dtype.launch_key());
            gpu.pipeline(&kernel, || norm_vector_source(spec, e, count))?
        }
        None => gpu.pipeline(&kernel, || norm_source(spec, e, cached))?,
    };
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
    let bound: Vec<_> =
        launch.inputs.iter().chain(launch.outputs).map(|t| base(gpu, "rope", t)).collect::<Result<_>>()?;
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
    for op in ["layer_norm", "rms_norm", "add_rms_norm", "add_layer_norm"] {
        register(table, op, &FLOATS, norm);
        table.reads_only(op, &FLOATS, contiguous_only::<Norm>);
    }
    register(table, "rope", &FLOATS, rope);
    table.reads_only("rope", &FLOATS, contiguous_only::<Rope>);
}
