//! Binary ops with numpy broadcasting on a wgpu device, as the host computes them
//! (`ops::spec::binary`): on float32, float16 and bfloat16 (computed in float32) the
//! arithmetic (add, sub, mul, div correctly rounded, remainder, floor_divide), maximum and
//! minimum (NaN propagates), copysign, nextafter (the stored format's next value) and
//! silu_mul; on the integers of up to 32 bits the wrapping arithmetic, maximum, minimum,
//! Python's remainder and floor division (0 for a zero divisor), pow, the bitwise ops and the
//! shifts; on bool the logical and bitwise ops; the comparisons on every dtype served, to bool.
//!
//! NaN is found by its bits, never by a float comparison (WGSL lets a compiler assume finite
//! values), and a quotient is corrected to the nearest float by its residual (`fma`), since
//! Vulkan allows a division 2.5 ulp off.

use super::elementwise::Map;
use super::gpu::Gpu;
use super::register;
use super::wgsl;
use crate::backend::LaunchTable;
use crate::dtype::DType;
use crate::facts::Kind;
use crate::kernel::{KernelError, Launch, Result};
use crate::ops::spec::binary::{Binary, BinaryOp};
use crate::ops::spec::FLOATS;

/// Float helpers: NaN and finiteness by the bits, the correctly rounded quotient, Python's
/// divmod.
pub const FLOAT_HELPERS: &str = r#"
fn is_nan(x: f32) -> bool {
    return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u;
}
fn is_finite(x: f32) -> bool {
    return (bitcast<u32>(x) & 0x7f800000u) != 0x7f800000u;
}
fn nan() -> f32 {
    return bitcast<f32>(0x7fc00000u);
}
// a / b rounded to nearest even, by integer long division of the significands (Vulkan lets a
// float division be 2.5 ulp off, and a compiler may split an fma, so neither is used)
fn div_rn(a: f32, b: f32) -> f32 {
    let ua = bitcast<u32>(a);
    let ub = bitcast<u32>(b);
    let sign = (ua ^ ub) & 0x80000000u;
    let aa = ua & 0x7fffffffu;
    let ab = ub & 0x7fffffffu;
    if (aa > 0x7f800000u || ab > 0x7f800000u || (aa == ab && (aa == 0u || aa == 0x7f800000u))) {
        return nan();
    }
    if (aa == 0x7f800000u || ab == 0u) {
        return bitcast<f32>(sign | 0x7f800000u);
    }
    if (aa == 0u || ab == 0x7f800000u) {
        return bitcast<f32>(sign);
    }
    // significands of 24 bits with their exponents, subnormals normalized
    var ma = aa & 0x7fffffu;
    var ea = i32(aa >> 23u);
    if (ea == 0) {
        let shift = countLeadingZeros(ma) - 8u;
        ma = ma << shift;
        ea = 1 - i32(shift);
    } else {
        ma = ma | 0x800000u;
    }
    var mb = ab & 0x7fffffu;
    var eb = i32(ab >> 23u);
    if (eb == 0) {
        let shift = countLeadingZeros(mb) - 8u;
        mb = mb << shift;
        eb = 1 - i32(shift);
    } else {
        mb = mb | 0x800000u;
    }
    var e = ea - eb + 127;
    if (ma < mb) {
        ma = ma << 1u;
        e = e - 1;
    }
    // 25 bits of ma / mb in [1, 2): 24 of the significand and one to round by
    var rest = ma;
    var q = 0u;
    for (var i = 0; i < 25; i++) {
        q = q << 1u;
        if (rest >= mb) {
            rest = rest - mb;
            q = q | 1u;
        }
        rest = rest << 1u;
    }
    if (e >= 255) {
        return bitcast<f32>(sign | 0x7f800000u);
    }
    // a subnormal result drops more bits
    let shift = u32(select(1, 2 - e, e < 1));
    if (shift > 26u) {
        return bitcast<f32>(sign);
    }
    var field = q >> shift;
    let round = (q >> (shift - 1u)) & 1u;
    let sticky = (q & ((1u << (shift - 1u)) - 1u)) != 0u || rest != 0u;
    if (round == 1u && (sticky || (field & 1u) == 1u)) {
        field = field + 1u;
    }
    // the hidden bit (and a carry of the rounding) adds into the exponent field
    let bits = (u32(max(e, 1) - 1) << 23u) + field;
    if (bits >= 0x7f800000u) {
        return bitcast<f32>(sign | 0x7f800000u);
    }
    return bitcast<f32>(sign | bits);
}
// numpy's divmod on floats: (floored quotient, remainder with the divisor's sign); a zero
// divisor gives (a / b, NaN)
fn divmod(a: f32, b: f32) -> vec2<f32> {
    var rem = fmod_exact(a, b);
    if ((bitcast<u32>(b) & 0x7fffffffu) == 0u && !is_nan(a)) {
        return vec2<f32>(div_rn(a, b), rem);
    }
    if (is_nan(rem)) {
        return vec2<f32>(nan(), nan());
    }
    var d = div_rn(a - rem, b);
    if ((bitcast<u32>(rem) & 0x7fffffffu) != 0u) {
        if ((b < 0.0) != (rem < 0.0)) {
            rem = rem + b;
            d = d - 1.0;
        }
    } else {
        rem = bitcast<f32>(bitcast<u32>(b) & 0x80000000u);
    }
    var quotient: f32;
    if ((bitcast<u32>(d) & 0x7fffffffu) != 0u) {
        let f = floor(d);
        quotient = select(f, f + 1.0, d - f > 0.5);
    } else {
        quotient = bitcast<f32>(bitcast<u32>(div_rn(a, b)) & 0x80000000u);
    }
    return vec2<f32>(quotient, rem);
}
// fmod(a, b) exactly, as the C library's (a's sign): the significands reduced with integer
// arithmetic, one exponent step at a time
fn fmod_exact(a: f32, b: f32) -> f32 {
    let ua = bitcast<u32>(a);
    let aa = ua & 0x7fffffffu;
    let ab = bitcast<u32>(b) & 0x7fffffffu;
    let sign = ua & 0x80000000u;
    if (aa >= 0x7f800000u || ab > 0x7f800000u || ab == 0u) {
        return nan();
    }
    if (ab == 0x7f800000u || aa < ab) {
        return a;
    }
    var ma = aa & 0x7fffffu;
    var ea = aa >> 23u;
    if (ea == 0u) { ea = 1u; } else { ma = ma | 0x800000u; }
    var mb = ab & 0x7fffffu;
    var eb = ab >> 23u;
    if (eb == 0u) { eb = 1u; } else { mb = mb | 0x800000u; }
    var r = ma % mb;
    for (var e = ea; e > eb; e--) {
        r = (r << 1u) % mb;
    }
    if (r == 0u) {
        return bitcast<f32>(sign);
    }
    // r · 2^(eb - 150), normalized (a subnormal when the exponent runs out)
    let shift = min(countLeadingZeros(r) - 8u, eb - 1u);
    r = r << shift;
    let field = eb - shift;
    if (r >= 0x800000u) {
        return bitcast<f32>(sign | (field << 23u) | (r & 0x7fffffu));
    }
    return bitcast<f32>(sign | r);
}
"#;

/// `silu(a) · b` with e = e^-|a| ≤ 1 (nothing overflows), after [`super::math::EXP`].
const SILU_MUL: &str = r#"
fn silu_mul(a: f32, b: f32) -> f32 {
    let e = exp_f32(-abs(a));
    let silu = select(div_rn(a * e, 1.0 + e), div_rn(a, 1.0 + e), a >= 0.0);
    return silu * b;
}
"#;

/// Integer helpers on i32 and u32 values (the narrower integers computed in them).
const INTEGER_HELPERS: &str = r#"
fn power_i(a: i32, e: i32) -> i32 {
    if (e < 0) {
        if (a == 1) { return 1; }
        if (a == -1) { return select(-1, 1, (e & 1) == 0); }
        return 0;
    }
    var base = a;
    var n = e;
    var acc = 1;
    while (n != 0) {
        if ((n & 1) == 1) { acc = acc * base; }
        base = base * base;
        n = n >> 1u;
    }
    return acc;
}
fn power_u(a: u32, e: u32) -> u32 {
    var base = a;
    var n = e;
    var acc = 1u;
    while (n != 0u) {
        if ((n & 1u) == 1u) { acc = acc * base; }
        base = base * base;
        n = n >> 1u;
    }
    return acc;
}
fn floor_div_i(a: i32, b: i32) -> i32 {
    if (b == 0) { return 0; }
    if (b == -1) { return -a; }
    let q = a / b;
    if (q * b != a && ((a < 0) != (b < 0))) { return q - 1; }
    return q;
}
fn remainder_i(a: i32, b: i32) -> i32 {
    if (b == 0 || b == -1) { return 0; }
    let r = a % b;
    if (r != 0 && ((r < 0) != (b < 0))) { return r + b; }
    return r;
}
"#;

/// The WGSL of `a op b` on compute values `x0`, `x1` of `dtype`; `None` where not served here.
fn expression(op: BinaryOp, dtype: DType) -> Option<String> {
    let float = FLOATS.contains(&dtype);
    let signed = dtype.kind() == Kind::Int;
    let bits = 8 * dtype.itemsize().unwrap_or(4) as u32;
    if float {
        let nextafter = match dtype {
            DType::Float32 => "next_f32(x0, x1)",
            DType::Float16 => "next_half(x0, x1, 13u)",
            _ => "next_half(x0, x1, 16u)",
        };
        return Some(
            match op {
                BinaryOp::Add => "x0 + x1",
                BinaryOp::Sub => "x0 - x1",
                BinaryOp::Mul => "x0 * x1",
                BinaryOp::Div => "div_rn(x0, x1)",
                BinaryOp::Maximum => "select(max(x0, x1), nan(), is_nan(x0) || is_nan(x1))",
                BinaryOp::Minimum => "select(min(x0, x1), nan(), is_nan(x0) || is_nan(x1))",
                BinaryOp::Copysign => {
                    "bitcast<f32>((bitcast<u32>(x0) & 0x7fffffffu) | (bitcast<u32>(x1) & 0x80000000u))"
                }
                BinaryOp::Remainder => "divmod(x0, x1).y",
                BinaryOp::FloorDivide => "floor_divide(x0, x1)",
                BinaryOp::SiluMul => "silu_mul(x0, x1)",
                BinaryOp::Nextafter => nextafter,
                _ => return None,
            }
            .to_string(),
        );
    }
    if dtype == DType::Bool {
        return Some(
            match op {
                BinaryOp::LogicalAnd | BinaryOp::BitwiseAnd => "x0 & x1",
                BinaryOp::LogicalOr | BinaryOp::BitwiseOr => "x0 | x1",
                BinaryOp::LogicalXor | BinaryOp::BitwiseXor => "x0 ^ x1",
                _ => return None,
            }
            .to_string(),
        );
    }
    if bits > 32 {
        return None;
    }
    let (power, floor_div, remainder) = if signed {
        ("power_i(x0, x1)", "floor_div_i(x0, x1)", "remainder_i(x0, x1)")
    } else {
        ("power_u(x0, x1)", "select(x0 / x1, 0u, x1 == 0u)", "select(x0 % x1, 0u, x1 == 0u)")
    };
    // shifts: a count past the width, or negative, shifts every bit out
    let (zero, ones) = if signed { ("0", "-1") } else { ("0u", "0u") };
    let count = if signed { "u32(x1)" } else { "x1" };
    let out_of_range = if signed { format!("x1 < 0 || x1 >= {bits}") } else { format!("x1 >= {bits}u") };
    let left = format!("select(x0 << {count}, {zero}, {out_of_range})");
    let right = format!("select(x0 >> {count}, select({zero}, {ones}, x0 < {zero}), {out_of_range})");
    Some(match op {
        BinaryOp::Add => "x0 + x1".into(),
        BinaryOp::Sub => "x0 - x1".into(),
        BinaryOp::Mul => "x0 * x1".into(),
        BinaryOp::Maximum => "max(x0, x1)".into(),
        BinaryOp::Minimum => "min(x0, x1)".into(),
        BinaryOp::Pow => power.into(),
        BinaryOp::FloorDivide => floor_div.into(),
        BinaryOp::Remainder => remainder.into(),
        BinaryOp::BitwiseAnd => "x0 & x1".into(),
        BinaryOp::BitwiseOr => "x0 | x1".into(),
        BinaryOp::BitwiseXor => "x0 ^ x1".into(),
        BinaryOp::BitwiseLeftShift => left,
        BinaryOp::BitwiseRightShift => right,
        _ => return None,
    })
}

/// Python's floor division on floats, and the next values of the three float formats.
const FLOAT_EXTRAS: &str = r#"
fn floor_divide(a: f32, b: f32) -> f32 {
    if (is_nan(a) || is_nan(b) || b == 0.0 || is_finite(a) != is_finite(b)) {
        return div_rn(a, b);
    }
    if (!is_finite(a)) {
        return nan();
    }
    return divmod(a, b).x;
}
fn next_f32(a: f32, b: f32) -> f32 {
    if (is_nan(a) || is_nan(b)) { return nan(); }
    if (a == b) { return b; }
    if (a == 0.0) { return bitcast<f32>(select(1u, 0x80000001u, b < a)); }
    let away = (b > a) == (bitcast<u32>(a) < 0x80000000u);
    return bitcast<f32>(select(bitcast<u32>(a) - 1u, bitcast<u32>(a) + 1u, away));
}
// the next value of a half format (float16: `shift` 13 bits of float32's mantissa dropped, an
// exponent of its own; bfloat16: the upper 16 bits), as float32
fn next_half(a: f32, b: f32, shift: u32) -> f32 {
    if (is_nan(a) || is_nan(b)) { return nan(); }
    if (a == b) { return b; }
    var h: u32;
    if (shift == 16u) { h = bitcast<u32>(a) >> 16u; } else { h = f32_to_f16(a); }
    if (a == 0.0) {
        h = select(1u, 0x8001u, b < a);
    } else {
        let away = (b > a) == (h < 0x8000u);
        h = select(h - 1u, h + 1u, away);
    }
    if (shift == 16u) { return bitcast<f32>(h << 16u); }
    return f16_to_f32(h);
}
"#;

/// The WGSL of the comparison `op` on compute values `x0`, `x1` of `dtype`, as a bool.
fn comparison(op: BinaryOp, dtype: DType) -> Option<String> {
    let symbol = match op {
        BinaryOp::Eq => "==",
        BinaryOp::Ne => "!=",
        BinaryOp::Lt => "<",
        BinaryOp::Le => "<=",
        BinaryOp::Gt => ">",
        BinaryOp::Ge => ">=",
        _ => return None,
    };
    if FLOATS.contains(&dtype) {
        // NaN: unequal to everything, ordered before nothing
        let nan = "(is_nan(x0) || is_nan(x1))";
        return Some(if op == BinaryOp::Ne {
            format!("{nan} || x0 != x1")
        } else {
            format!("!{nan} && x0 {symbol} x1")
        });
    }
    if matches!(dtype, DType::Int64 | DType::Uint64) {
        // words compared high first: the high word signed for int64
        let high = if dtype == DType::Int64 { "bitcast<i32>(x0.y) {s} bitcast<i32>(x1.y)" } else { "x0.y {s} x1.y" };
        let strict = |s: &str| high.replace("{s}", s);
        return Some(match op {
            BinaryOp::Eq => "all(x0 == x1)".into(),
            BinaryOp::Ne => "any(x0 != x1)".into(),
            _ => {
                let (first, tie) = match op {
                    BinaryOp::Lt => ("<", "<"),
                    BinaryOp::Le => ("<", "<="),
                    BinaryOp::Gt => (">", ">"),
                    _ => (">", ">="),
                };
                format!("({}) || (x0.y == x1.y && x0.x {tie} x1.x)", strict(first))
            }
        });
    }
    Some(format!("x0 {symbol} x1"))
}

fn run(gpu: &Gpu, spec: &Binary, launch: Launch<'_>) -> Result<()> {
    let (a, b, y) = (&launch.inputs[0], &launch.inputs[1], &launch.outputs[0]);
    let missing =
        || KernelError::Missing { op: spec.op.name().into(), dtype: spec.dtype.name().into(), backend: "wgpu".into() };
    let e = wgsl::elem(spec.op.name(), spec.dtype)?;
    if spec.op == BinaryOp::SiluMul {
        gpu.require_f64("silu_mul")?;
    }
    let math = if spec.op == BinaryOp::SiluMul { format!("{}{SILU_MUL}", super::math::EXP) } else { String::new() };
    let float_helpers = format!("{FLOAT_HELPERS}{FLOAT_EXTRAS}{math}");
    let (expr, out, helpers) = if spec.op.is_comparison() {
        let expr = comparison(spec.op, spec.dtype).ok_or_else(missing)?;
        (format!("select(0u, 1u, {expr})"), wgsl::elem("compare", DType::Bool)?, float_helpers)
    } else {
        let helpers = if e.ty == "f32" { float_helpers } else { INTEGER_HELPERS.to_string() };
        (expression(spec.op, spec.dtype).ok_or_else(missing)?, e, helpers)
    };
    gpu.map(
        spec.op.name(),
        Map {
            name: format!("binary_{}_{}", spec.op.name(), spec.dtype.launch_key()),
            inputs: vec![(a, e), (b, e)],
            output: (y, out),
            body: format!("        let v = {expr};"),
            helpers,
            extra: Vec::new(),
        },
    )
}

/// The dtypes of `op` served here.
fn served(op: BinaryOp) -> Vec<DType> {
    op.dtypes()
        .iter()
        .copied()
        .filter(|&d| wgsl::elem("", d).is_ok())
        .filter(|&d| if op.is_comparison() { comparison(op, d).is_some() } else { expression(op, d).is_some() })
        .collect()
}

/// Registers every binary op on the dtypes served here.
pub fn register_all(table: &mut LaunchTable) {
    for op in BinaryOp::all() {
        let dtypes = served(op);
        if !dtypes.is_empty() {
            register(table, op.name(), &dtypes, run);
        }
    }
}
