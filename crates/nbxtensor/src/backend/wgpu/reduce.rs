//! Reductions on a wgpu device (`ops::spec::reduce`): a workgroup per output element, its
//! invocations striding over the reduced elements, then a tree in workgroup memory, in a fixed
//! order (a replay gives the same bits). The reduced and the kept dims are walked apart, each
//! merged where the layout allows.
//!
//! Float sums and means accumulate in float64 (the adapter's `shader-f64`, refused by name
//! without it) and round once, as the host's; integer sums wrap in 64 bits; max and min
//! propagate NaN; argmax and argmin give the first extreme (a NaN counting as one); all and any
//! read nonzero (NaN too) as true. prod is not served here (refused by name).

use super::gpu::Gpu;
use super::register;
use super::wgsl::{self, Elem};
use crate::backend::LaunchTable;
use crate::dtype::DType;
use crate::facts::Kind;
use crate::kernel::{KernelError, Launch, Result};
use crate::ops::spec::reduce::{Reduce, ReduceOp};
use crate::shape::walk;

/// Invocations of a reduction's workgroup.
const THREADS: u32 = 256;

/// The state of one reduction: its WGSL struct fields, and the functions `init() -> S`,
/// `add(s, x, r) -> S` (element `x` at reduced index `r`), `combine(s, t) -> S` (t over the
/// later indices) and `finish(s, count) -> OUT`.
struct Code {
    state: String,
    functions: String,
}

/// The truth of an element `x` of `e`, as a bool expression.
fn truth(e: Elem) -> &'static str {
    match e.ty {
        "f32" => "(bitcast<u32>(x) & 0x7fffffffu) != 0u",
        "vec2<u32>" => "(x.x | x.y) != 0u",
        "i32" => "x != 0",
        _ => "x != 0u",
    }
}

/// The code of `op` on elements of `e`, or `None` where it is not served here.
fn code(op: ReduceOp, e: Elem) -> Option<Code> {
    let float = e.ty == "f32";
    let signed = e.dtype.kind() == Kind::Int;
    Some(match op {
        ReduceOp::Any | ReduceOp::All => {
            let (init, join) = if op == ReduceOp::Any { ("0u", "|") } else { ("1u", "&") };
            Code {
                state: "a: u32".into(),
                functions: format!(
                    "fn init() -> S {{ return S({init}); }}\n\
                     fn add(s: S, x: {t}, r: u32) -> S {{ return S(s.a {join} select(0u, 1u, {truth})); }}\n\
                     fn combine(s: S, t: S) -> S {{ return S(s.a {join} t.a); }}\n\
                     fn finish(s: S, count: u32) -> u32 {{ return s.a; }}\n",
                    t = e.ty,
                    truth = truth(e)
                ),
            }
        }
        ReduceOp::Sum | ReduceOp::Mean if float => {
            // float64 accumulation, rounded once, as the host's
            let finish = if op == ReduceOp::Mean { "f32(s.a / f64(count))" } else { "f32(s.a)" };
            Code {
                state: "a: f64".into(),
                functions: format!(
                    "fn init() -> S {{ return S(f64(0.0)); }}\n\
                     fn add(s: S, x: f32, r: u32) -> S {{ return S(s.a + f64(x)); }}\n\
                     fn combine(s: S, t: S) -> S {{ return S(s.a + t.a); }}\n\
                     fn finish(s: S, count: u32) -> f32 {{ if (count == 0u && {mean}) {{ return nan(); }} return {finish}; }}\n",
                    mean = op == ReduceOp::Mean
                ),
            }
        }
        ReduceOp::Sum if e.width <= 4 || e.ty == "vec2<u32>" => {
            let widen = match e.ty {
                "vec2<u32>" => "x",
                "i32" => "vec2<u32>(bitcast<u32>(x), select(0u, 0xffffffffu, x < 0))",
                _ => "vec2<u32>(x, 0u)",
            };
            Code {
                state: "a: vec2<u32>".into(),
                functions: format!(
                    "fn add64(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {{ let lo = a.x + b.x; return vec2<u32>(lo, a.y + b.y + select(0u, 1u, lo < a.x)); }}\n\
                     fn init() -> S {{ return S(vec2<u32>(0u, 0u)); }}\n\
                     fn add(s: S, x: {t}, r: u32) -> S {{ return S(add64(s.a, {widen})); }}\n\
                     fn combine(s: S, t: S) -> S {{ return S(add64(s.a, t.a)); }}\n\
                     fn finish(s: S, count: u32) -> vec2<u32> {{ return s.a; }}\n",
                    t = e.ty
                ),
            }
        }
        ReduceOp::Max | ReduceOp::Min if e.width <= 4 => {
            let pick = if op == ReduceOp::Max { "max" } else { "min" };
            let (join, start) = if float {
                (format!("select({pick}(a, b), nan(), is_nan(a) || is_nan(b))"), "0.0")
            } else {
                (format!("{pick}(a, b)"), if signed { "0" } else { "0u" })
            };
            Code {
                state: format!("a: {t}, seen: u32", t = e.ty),
                functions: format!(
                    "fn pick(a: {t}, b: {t}) -> {t} {{ return {join}; }}\n\
                     fn init() -> S {{ return S({start}, 0u); }}\n\
                     fn add(s: S, x: {t}, r: u32) -> S {{ if (s.seen == 0u) {{ return S(x, 1u); }} return S(pick(s.a, x), 1u); }}\n\
                     fn combine(s: S, t: S) -> S {{ if (t.seen == 0u) {{ return s; }} if (s.seen == 0u) {{ return t; }} return S(pick(s.a, t.a), 1u); }}\n\
                     fn finish(s: S, count: u32) -> {t} {{ return s.a; }}\n",
                    t = e.ty
                ),
            }
        }
        ReduceOp::ArgMax | ReduceOp::ArgMin if e.width <= 4 => {
            let better = if op == ReduceOp::ArgMax { ">" } else { "<" };
            let (nan_a, nan_b, start) = if float {
                ("is_nan(s.a)", "is_nan(t.a)", "0.0")
            } else {
                ("false", "false", if signed { "0" } else { "0u" })
            };
            Code {
                state: format!("a: {t}, i: u32, seen: u32", t = e.ty),
                functions: format!(
                    "fn init() -> S {{ return S({start}, 0u, 0u); }}\n\
                     // t wins where it is a NaN first, or strictly better, or equal at a smaller index\n\
                     fn combine(s: S, t: S) -> S {{\n    if (t.seen == 0u) {{ return s; }}\n    if (s.seen == 0u) {{ return t; }}\n    let sn = {nan_a};\n    let tn = {nan_b};\n    if (sn || tn) {{\n        if (sn && tn && t.i < s.i) {{ return t; }}\n        if (sn) {{ return s; }}\n        return t;\n    }}\n    if (t.a {better} s.a || (t.a == s.a && t.i < s.i)) {{ return t; }}\n    return s;\n}}\n\
                     fn add(s: S, x: {t}, r: u32) -> S {{ return combine(s, S(x, r, 1u)); }}\n\
                     fn finish(s: S, count: u32) -> vec2<u32> {{ return vec2<u32>(s.i, 0u); }}\n",
                    t = e.ty
                ),
            }
        }
        _ => return None,
    })
}

fn compose(e: Elem, out: Elem, code: &Code) -> String {
    let mut text = String::from(wgsl::COMMON);
    text += super::binary::FLOAT_HELPERS;
    text += &wgsl::input(0, "x", e);
    text += &wgsl::output(1, "y", out);
    text += &wgsl::params(2);
    text += &wgsl::walker("walk_kept", 1, 3);
    text += &wgsl::walker("walk_reduced", 1, 3 + wgsl::walk_words(1));
    text += &format!("struct S {{ {} }}\nvar<workgroup> part: array<S, {THREADS}>;\n", code.state);
    text += &code.functions;
    text += &format!(
        r#"
@compute @workgroup_size({THREADS})
fn main(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {{
    // p: outputs, reduced count, output base byte, the kept walk, the reduced walk
    let o = wid.x + wid.y * groups.x;
    if (o >= p[0]) {{
        return;
    }}
    let count = p[1];
    let base = walk_kept(o)[0];
    var s = init();
    for (var r = lid.x; r < count; r += {THREADS}u) {{
        s = add(s, ld_x(base + walk_reduced(r)[0]), r);
    }}
    part[lid.x] = s;
    workgroupBarrier();
    for (var w = {half}u; w > 0u; w = w >> 1u) {{
        if (lid.x < w) {{
            part[lid.x] = combine(part[lid.x], part[lid.x + w]);
        }}
        workgroupBarrier();
    }}
    if (lid.x == 0u) {{
        st_y(p[2] + o * {width}u, finish(part[0], count));
    }}
}}
"#,
        half = THREADS / 2,
        width = out.width
    );
    text
}

fn run(gpu: &Gpu, spec: &Reduce, launch: Launch<'_>) -> Result<()> {
    let (x, y) = (&launch.inputs[0], &launch.outputs[0]);
    let name = spec.op.name();
    let e = wgsl::elem(name, spec.dtype)?;
    let out = wgsl::elem(name, spec.output_dtype())?;
    if e.ty == "f32" && matches!(spec.op, ReduceOp::Sum | ReduceOp::Mean) {
        gpu.require_f64(name)?;
    }
    let code = code(spec.op, e).ok_or_else(|| KernelError::Missing {
        op: name.into(),
        dtype: spec.dtype.name().into(),
        backend: "wgpu".into(),
    })?;
    let outputs = wgsl::count(name, y.numel())?;
    if outputs == 0 {
        return Ok(());
    }
    let reduced = spec.reduced(x.ndim())?;
    let (mut kept_shape, mut kept_strides, mut red_shape, mut red_strides) = (vec![], vec![], vec![], vec![]);
    for ((&extent, &stride), &r) in x.shape().iter().zip(x.strides()).zip(&reduced) {
        if r {
            red_shape.push(extent);
            red_strides.push(stride);
        } else {
            kept_shape.push(extent);
            kept_strides.push(stride);
        }
    }
    let count = wgsl::count(name, red_shape.iter().product())?;
    let input = gpu.bind(name, x)?;
    let output = gpu.bind(name, y)?;
    let mut params = vec![outputs, count, output.base];
    params.extend(wgsl::walk_params(name, &walk(&kept_shape, &[&kept_strides], None), &[(input.base, e.width)])?);
    params.extend(wgsl::walk_params(name, &walk(&red_shape, &[&red_strides], None), &[(0, e.width)])?);
    let kernel = format!("reduce_{name}_{}", spec.dtype.launch_key());
    let pipeline = gpu.pipeline(&kernel, || compose(e, out, &code))?;
    let groups = gpu.grid(name, u64::from(outputs))?;
    gpu.dispatch(&pipeline, &[&input, &output], &params, groups)
}

/// Registers every reduction on the dtypes served here.
pub fn register_all(table: &mut LaunchTable) {
    for op in ReduceOp::every() {
        let dtypes: Vec<DType> =
            op.dtypes().iter().copied().filter(|&d| wgsl::elem("", d).is_ok_and(|e| code(op, e).is_some())).collect();
        if !dtypes.is_empty() {
            register(table, op.name(), &dtypes, run);
        }
    }
}
