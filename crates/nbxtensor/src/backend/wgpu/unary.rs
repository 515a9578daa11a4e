//! Unary ops on a wgpu device, as the host computes them (`ops::spec::unary`): on float32,
//! float16 and bfloat16 (computed in float32) the arithmetic, the tests, the roundings, clip,
//! and the functions — sqrt correctly rounded, exp, log, their variants, the hyperbolic
//! functions, sigmoid, silu and both GELUs — each computed in float64 arithmetic and rounded
//! once (`math.rs`; the adapter's `shader-f64`, refused by name without it); on the integers of
//! up to 32 bits the ops that keep integers (wrapping); on bool logical_not and bitwise_invert.
//! The trigonometric functions and their inverses are not served here (refused by name): an
//! accurate sine of a float32 up to 3.4e38 needs a reduction by π to over a hundred bits.

use super::elementwise::Map;
use super::gpu::Gpu;
use super::register;
use super::wgsl;
use crate::backend::LaunchTable;
use crate::dtype::DType;
use crate::facts::Kind;
use crate::kernel::{KernelError, Launch, Result};
use crate::ops::spec::unary::{Bound, Unary, UnaryOp, GELU_CUBIC, SQRT_2_OVER_PI};
use crate::ops::spec::FLOATS;

/// The float functions built on `math.rs`, each guarding its edges before the float64 path.
const FUNCTIONS: &str = r#"
fn inf() -> f32 { return bitcast<f32>(0x7f800000u); }
fn sqrt_f32(x: f32) -> f32 {
    if (is_nan(x) || x == 0.0) { return x; }
    if (x < 0.0) { return nan(); }
    return f32(sqrt(f64(x)));
}
fn rsqrt_f32(x: f32) -> f32 {
    if (is_nan(x)) { return x; }
    if (x == 0.0) { return bitcast<f32>(bitcast<u32>(x) | 0x7f800000u); }
    if (x < 0.0) { return nan(); }
    if (!is_finite(x)) { return 0.0; }
    return f32(1.0 / sqrt(f64(x)));
}
fn expm1_f32(x: f32) -> f32 {
    if (is_nan(x)) { return x; }
    if (x > 88.8) { return inf(); }
    if (x < -104.0) { return -1.0; }
    return f32(expm1_f64(f64(x)));
}
// the guards of a logarithm: NaN, negatives, zero, infinity
fn log_edge(x: f32) -> vec2<f32> {
    if (is_nan(x)) { return vec2<f32>(1.0, x); }
    if (x < 0.0) { return vec2<f32>(1.0, nan()); }
    if (x == 0.0) { return vec2<f32>(1.0, -inf()); }
    if (!is_finite(x)) { return vec2<f32>(1.0, x); }
    return vec2<f32>(0.0, 0.0);
}
fn log_f32(x: f32, scale: f64) -> f32 {
    let edge = log_edge(x);
    if (edge.x == 1.0) { return edge.y; }
    return f32(log_f64(f64(x)) * scale);
}
fn log1p_f32(x: f32) -> f32 {
    if (is_nan(x) || x == 0.0) { return x; }
    if (x < -1.0) { return nan(); }
    if (x == -1.0) { return -inf(); }
    if (!is_finite(x)) { return x; }
    return f32(log1p_f64(f64(x)));
}
fn tanh_f32(x: f32) -> f32 {
    if (is_nan(x) || x == 0.0) { return x; }
    if (abs(x) > 10.0) { return sign(x); }
    let e = expm1_f64(2.0 * f64(x));
    return f32(e / (e + 2.0));
}
// x · sigmoid(2u) with e^-2u taken in float64 (no cancellation, no overflow)
fn times_sigmoid(x: f64, t: f64) -> f64 {
    return x / (1.0 + exp_f64(-clamp(t, -1000.0, 1000.0)));
}
fn sigmoid_f32(x: f32) -> f32 {
    if (is_nan(x)) { return x; }
    return f32(times_sigmoid(1.0, f64(x)));
}
fn silu_f32(x: f32) -> f32 {
    if (is_nan(x)) { return x; }
    if (x == -inf()) { return -0.0; }
    if (x == inf()) { return x; }
    return f32(times_sigmoid(f64(x), f64(x)));
}
fn gelu_f32(x: f32) -> f32 {
    if (is_nan(x)) { return x; }
    if (x == -inf()) { return -0.0; }
    if (x == inf()) { return x; }
    let z = abs(f64(x)) * 0.7071067811865476;
    if (x >= 0.0) {
        return f32(0.5 * f64(x) * (2.0 - erfc_f64(z)));
    }
    return f32(0.5 * f64(x) * erfc_f64(z));
}
fn gelu_tanh_f32(x: f32) -> f32 {
    if (is_nan(x)) { return x; }
    if (x == -inf()) { return -0.0; }
    if (x == inf()) { return x; }
    let v = f64(x);
    return f32(times_sigmoid(v, 2.0 * SQRT_2_OVER_PI * (v + GELU_CUBIC * v * v * v)));
}
fn sinh_f32(x: f32) -> f32 {
    if (is_nan(x) || x == 0.0) { return x; }
    if (abs(x) > 89.5) { return select(-inf(), inf(), x > 0.0); }
    let e = expm1_f64(f64(x));
    return f32(0.5 * (e + e / (e + 1.0)));
}
fn cosh_f32(x: f32) -> f32 {
    if (is_nan(x)) { return x; }
    if (abs(x) > 89.5) { return inf(); }
    let e = exp_f64(f64(abs(x)));
    return f32(0.5 * (e + 1.0 / e));
}
fn asinh_f32(x: f32) -> f32 {
    if (is_nan(x) || x == 0.0 || !is_finite(x)) { return x; }
    let a = abs(f64(x));
    let r = log1p_f64(a + a * a / (1.0 + sqrt(1.0 + a * a)));
    return f32(select(r, -r, x < 0.0));
}
fn acosh_f32(x: f32) -> f32 {
    if (is_nan(x)) { return x; }
    if (x < 1.0) { return nan(); }
    if (!is_finite(x)) { return x; }
    let t = f64(x) - 1.0;
    return f32(log1p_f64(t + sqrt(t * (f64(x) + 1.0))));
}
fn atanh_f32(x: f32) -> f32 {
    if (is_nan(x) || x == 0.0) { return x; }
    if (abs(x) > 1.0) { return nan(); }
    if (abs(x) == 1.0) { return select(-inf(), inf(), x > 0.0); }
    let v = f64(x);
    return f32(0.5 * log1p_f64(2.0 * v / (1.0 - v)));
}
"#;

/// The WGSL of `op` on a float element `x0`, and whether it uses the float64 functions.
fn float_expression(op: UnaryOp) -> Option<(&'static str, bool)> {
    Some(match op {
        UnaryOp::Neg => ("-x0", false),
        UnaryOp::Abs => ("bitcast<f32>(bitcast<u32>(x0) & 0x7fffffffu)", false),
        UnaryOp::Square => ("x0 * x0", false),
        UnaryOp::Sign => ("select(select(-1.0, 1.0, x0 > 0.0), x0, x0 == 0.0 || is_nan(x0))", false),
        UnaryOp::Floor => ("floor(x0)", false),
        UnaryOp::Ceil => ("ceil(x0)", false),
        UnaryOp::Round => ("round(x0)", false),
        UnaryOp::Trunc => ("trunc(x0)", false),
        UnaryOp::Relu => ("select(x0, 0.0, !is_nan(x0) && x0 < 0.0)", false),
        UnaryOp::Reciprocal => ("div_rn(1.0, x0)", false),
        UnaryOp::Clip => ("clip(x0)", false),
        UnaryOp::Sqrt => ("sqrt_f32(x0)", true),
        UnaryOp::Rsqrt => ("rsqrt_f32(x0)", true),
        UnaryOp::Exp => ("exp_f32(x0)", true),
        UnaryOp::Expm1 => ("expm1_f32(x0)", true),
        UnaryOp::Log => ("log_f32(x0, 1.0)", true),
        UnaryOp::Log2 => ("log_f32(x0, 1.4426950408889634)", true),
        UnaryOp::Log10 => ("log_f32(x0, 0.4342944819032518)", true),
        UnaryOp::Log1p => ("log1p_f32(x0)", true),
        UnaryOp::Tanh => ("tanh_f32(x0)", true),
        UnaryOp::Sigmoid => ("sigmoid_f32(x0)", true),
        UnaryOp::Silu => ("silu_f32(x0)", true),
        UnaryOp::Gelu => ("gelu_f32(x0)", true),
        UnaryOp::GeluTanh => ("gelu_tanh_f32(x0)", true),
        UnaryOp::Sinh => ("sinh_f32(x0)", true),
        UnaryOp::Cosh => ("cosh_f32(x0)", true),
        UnaryOp::Asinh => ("asinh_f32(x0)", true),
        UnaryOp::Acosh => ("acosh_f32(x0)", true),
        UnaryOp::Atanh => ("atanh_f32(x0)", true),
        _ => return None,
    })
}

/// The WGSL of a test op on a float element `x0`, as a bool.
fn float_test(op: UnaryOp) -> Option<&'static str> {
    Some(match op {
        UnaryOp::Isnan => "is_nan(x0)",
        UnaryOp::Isinf => "(bitcast<u32>(x0) & 0x7fffffffu) == 0x7f800000u",
        UnaryOp::Isfinite => "is_finite(x0)",
        UnaryOp::Signbit => "bitcast<u32>(x0) >= 0x80000000u",
        _ => return None,
    })
}

/// The WGSL of `op` on an integer (i32 or u32) or bool element `x0`.
fn integer_expression(op: UnaryOp, dtype: DType) -> Option<&'static str> {
    let signed = dtype.kind() == Kind::Int;
    if dtype == DType::Bool {
        return matches!(op, UnaryOp::LogicalNot | UnaryOp::BitwiseInvert).then_some("x0 ^ 1u");
    }
    if dtype.itemsize().unwrap_or(8) > 4 {
        return None;
    }
    Some(match (op, signed) {
        (UnaryOp::Neg, true) => "-x0",
        (UnaryOp::Neg, false) => "0u - x0",
        (UnaryOp::Abs, true) => "abs(x0)",
        (UnaryOp::Square, _) => "x0 * x0",
        (UnaryOp::Sign, true) => "sign(x0)",
        (UnaryOp::Sign, false) => "min(x0, 1u)",
        (UnaryOp::Relu, true) => "max(x0, 0)",
        (UnaryOp::Abs | UnaryOp::Relu | UnaryOp::Floor | UnaryOp::Ceil | UnaryOp::Round | UnaryOp::Trunc, _) => "x0",
        (UnaryOp::Clip, _) => "clip(x0)",
        (UnaryOp::BitwiseInvert, _) => "~x0",
        _ => return None,
    })
}

/// The WGSL of an integer test (an integer is never NaN nor infinite).
fn integer_test(op: UnaryOp) -> Option<&'static str> {
    match op {
        UnaryOp::Isnan | UnaryOp::Isinf => Some("false"),
        UnaryOp::Isfinite => Some("true"),
        _ => None,
    }
}

/// Whether `op` on `dtype` is served here.
fn served(op: UnaryOp, dtype: DType) -> bool {
    if wgsl::elem("", dtype).is_err() {
        return false;
    }
    if FLOATS.contains(&dtype) {
        float_expression(op).is_some() || float_test(op).is_some()
    } else {
        integer_expression(op, dtype).is_some() || (dtype != DType::Bool && integer_test(op).is_some())
    }
}

/// `clip`'s WGSL and its parameter words: each bound's flag and value (as the element's bits).
fn clip(spec: &Unary, ty: &str) -> Result<(String, Vec<u32>)> {
    let word = |bound: Bound| -> Result<(u32, u32)> {
        Ok(match bound {
            Bound::None => (0, 0),
            Bound::Float(v) => (1, (v as f32).to_bits()),
            Bound::Int(v) => {
                let fits = match (spec.dtype.kind(), spec.dtype.itemsize().unwrap_or(4)) {
                    (Kind::Int, w) => v >= -(1i64 << (8 * w - 1)) && v < (1i64 << (8 * w - 1)),
                    (_, w) => v >= 0 && v < (1i64 << (8 * w)),
                };
                if !fits {
                    return Err(KernelError::Invalid(format!("clip: the bound {v} is not a {} value", spec.dtype)));
                }
                (1, v as u32)
            }
        })
    };
    let ((has_low, low), (has_high, high)) = (word(spec.min)?, word(spec.max)?);
    let value = |k: usize| {
        if ty == "f32" {
            format!("bitcast<f32>(p[EXTRA + {k}u])")
        } else {
            format!("bitcast<{ty}>(p[EXTRA + {k}u])")
        }
    };
    let (lt, gt) = if ty == "f32" { ("!is_nan(v) && v < lo", "!is_nan(v) && v > hi") } else { ("v < lo", "v > hi") };
    let text = format!(
        "fn clip(x: {ty}) -> {ty} {{\n    var v = x;\n    let lo = {lo};\n    let hi = {hi};\n    if (p[EXTRA] == 1u && {lt}) {{ v = lo; }}\n    if (p[EXTRA + 2u] == 1u && {gt}) {{ v = hi; }}\n    return v;\n}}\n",
        lo = value(1),
        hi = value(3)
    );
    Ok((text, vec![has_low, low, has_high, high]))
}

fn run(gpu: &Gpu, spec: &Unary, launch: Launch<'_>) -> Result<()> {
    let (x, y) = (&launch.inputs[0], &launch.outputs[0]);
    let name = spec.op.name();
    let missing = || KernelError::Missing { op: name.into(), dtype: spec.dtype.name().into(), backend: "wgpu".into() };
    if !served(spec.op, spec.dtype) {
        return Err(missing());
    }
    let e = wgsl::elem(name, spec.dtype)?;
    let float = FLOATS.contains(&spec.dtype);
    let (expr, out, wide) = if float {
        match float_test(spec.op) {
            Some(test) => (format!("select(0u, 1u, {test})"), wgsl::elem(name, DType::Bool)?, false),
            None => {
                let (expr, wide) = float_expression(spec.op).ok_or_else(missing)?;
                (expr.to_string(), e, wide)
            }
        }
    } else {
        match integer_test(spec.op).filter(|_| spec.dtype != DType::Bool) {
            Some(test) => (format!("select(0u, 1u, {test})"), wgsl::elem(name, DType::Bool)?, false),
            None => (integer_expression(spec.op, spec.dtype).ok_or_else(missing)?.to_string(), e, false),
        }
    };
    let (mut helpers, extra) = if spec.op == UnaryOp::Clip { clip(spec, e.ty)? } else { (String::new(), Vec::new()) };
    if float {
        helpers = format!("{}{helpers}", super::binary::FLOAT_HELPERS);
    }
    if wide {
        gpu.require_f64(name)?;
        helpers += &format!(
            "const SQRT_2_OVER_PI: f64 = {SQRT_2_OVER_PI:?};\nconst GELU_CUBIC: f64 = {GELU_CUBIC:?};\n{}{}{}{FUNCTIONS}",
            super::math::EXP,
            super::math::LOG,
            super::math::ERF
        );
    }
    // clip's bounds are parameters: one kernel serves every bound
    gpu.map(
        name,
        Map {
            name: format!("unary_{name}_{}", spec.dtype.launch_key()),
            inputs: vec![(x, e)],
            output: (y, out),
            body: format!("        let v = {expr};"),
            helpers,
            extra,
        },
    )
}

/// Registers every unary op on the dtypes served here.
pub fn register_all(table: &mut LaunchTable) {
    for op in UnaryOp::all() {
        let dtypes: Vec<DType> = op.dtypes().iter().copied().filter(|&d| served(op, d)).collect();
        if !dtypes.is_empty() {
            register(table, op.name(), &dtypes, run);
        }
    }
}
