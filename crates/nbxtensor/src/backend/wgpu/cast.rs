//! `cast` on a wgpu device between float32, float16, bfloat16, the integers and bool (every
//! pair), element for element as the CPU converts (`ops::spec::cast`): integers wrap, floats
//! truncate toward zero into integers, saturating, NaN to 0; into a float, an integer rounds to
//! float32 first (correctly rounded; a 64-bit one with integer arithmetic here), float32 to a
//! half format once, to nearest even; anything to bool is `!= 0` (NaN is true).

use super::elementwise::Map;
use super::gpu::Gpu;
use super::register_with_workspace;
use super::wgsl::{self, Elem};
use crate::backend::LaunchTable;
use crate::dtype::DType;
use crate::facts::Kind;
use crate::kernel::{KernelError, Launch, Result, TensorMeta};
use crate::ops::spec::cast::Cast;

/// The dtypes cast here, from and to.
pub const DTYPES: [DType; 12] = [
    DType::Float32,
    DType::Float16,
    DType::Bfloat16,
    DType::Int8,
    DType::Int16,
    DType::Int32,
    DType::Int64,
    DType::Uint8,
    DType::Uint16,
    DType::Uint32,
    DType::Uint64,
    DType::Bool,
];

/// Conversions between 64-bit integers (two words, low first) and float32.
const HELPERS: &str = r#"
fn is_nan(x: f32) -> bool {
    return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u;
}
// x within [lo, hi], NaN kept (clamp leaves NaN to the implementation)
fn clamp_finite(x: f32, lo: f32, hi: f32) -> f32 {
    return select(clamp(x, lo, hi), x, is_nan(x));
}
fn neg64(v: vec2<u32>) -> vec2<u32> {
    let lo = ~v.x + 1u;
    return vec2<u32>(lo, ~v.y + select(0u, 1u, lo == 0u));
}
// |x| < 2^64, truncated: its words
fn split64(a: f32) -> vec2<u32> {
    let hi = floor(a / 4294967296.0);
    return vec2<u32>(u32(a - hi * 4294967296.0), u32(hi));
}
fn f32_to_i64(x: f32) -> vec2<u32> {
    if (is_nan(x)) { return vec2<u32>(0u, 0u); }
    if (x >= 9223372036854775808.0) { return vec2<u32>(0xffffffffu, 0x7fffffffu); }
    if (x <= -9223372036854775808.0) { return vec2<u32>(0u, 0x80000000u); }
    let r = split64(trunc(abs(x)));
    return select(r, neg64(r), x < 0.0);
}
fn f32_to_u64(x: f32) -> vec2<u32> {
    if (is_nan(x) || x <= 0.0) { return vec2<u32>(0u, 0u); }
    if (x >= 18446744073709551616.0) { return vec2<u32>(0xffffffffu, 0xffffffffu); }
    return split64(trunc(x));
}
// a 64-bit magnitude to float32, rounded to nearest even
fn u64_to_f32(v: vec2<u32>) -> f32 {
    if (v.y == 0u) { return f32(v.x); }
    let n = countLeadingZeros(v.y);
    var top = v.y;
    var rest = v.x;
    if (n > 0u) {
        top = (v.y << n) | (v.x >> (32u - n));
        rest = v.x << n;
    }
    var mant = top >> 8u;
    let low = top & 0xffu;
    if (low > 0x80u || (low == 0x80u && (rest != 0u || (mant & 1u) == 1u))) {
        mant += 1u;
    }
    return ldexp(f32(mant), i32(40u - n));
}
fn i64_to_f32(v: vec2<u32>) -> f32 {
    if ((v.y >> 31u) == 1u) { return -u64_to_f32(neg64(v)); }
    return u64_to_f32(v);
}
fn f32_to_i32(x: f32) -> i32 {
    if (is_nan(x)) { return 0; }
    if (x >= 2147483648.0) { return 2147483647; }
    if (x <= -2147483648.0) { return -2147483647 - 1; }
    return i32(x);
}
fn f32_to_u32(x: f32) -> u32 {
    if (is_nan(x) || x <= 0.0) { return 0u; }
    if (x >= 4294967296.0) { return 0xffffffffu; }
    return u32(x);
}
"#;

/// The class of a dtype for the conversions.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Class {
    Float,
    Signed,
    Unsigned,
    Wide,
    Bool,
}

fn class(dtype: DType) -> Class {
    match (dtype.kind(), dtype) {
        (_, DType::Bool) => Class::Bool,
        (_, DType::Int64 | DType::Uint64) => Class::Wide,
        (Kind::Float, _) => Class::Float,
        (Kind::Int, _) => Class::Signed,
        _ => Class::Unsigned,
    }
}

/// The WGSL defining `v` (the output's type) from `x0` (the input's).
fn body(from: DType, to: DType) -> String {
    let (f, t) = (class(from), class(to));
    let expr = match t {
        Class::Float => match f {
            Class::Float => "x0".to_string(),
            Class::Wide if from == DType::Int64 => "i64_to_f32(x0)".into(),
            Class::Wide => "u64_to_f32(x0)".into(),
            _ => "f32(x0)".into(),
        },
        Class::Bool => match f {
            Class::Float => "select(0u, 1u, (bitcast<u32>(x0) & 0x7fffffffu) != 0u)".into(),
            Class::Wide => "select(0u, 1u, (x0.x | x0.y) != 0u)".into(),
            Class::Bool => "x0".into(),
            Class::Signed => "select(0u, 1u, x0 != 0)".into(),
            Class::Unsigned => "select(0u, 1u, x0 != 0u)".into(),
        },
        Class::Wide => match f {
            Class::Float if to == DType::Int64 => "f32_to_i64(x0)".into(),
            Class::Float => "f32_to_u64(x0)".into(),
            Class::Wide => "x0".into(),
            Class::Signed => "vec2<u32>(bitcast<u32>(x0), select(0u, 0xffffffffu, x0 < 0))".into(),
            _ => "vec2<u32>(x0, 0u)".into(),
        },
        Class::Signed | Class::Unsigned => {
            let bits = match f {
                Class::Float => {
                    // saturate to the target's range, as Rust's `as` does
                    let bits = 8 * to.itemsize().unwrap_or(4) as u32;
                    if bits == 32 && t == Class::Signed {
                        "bitcast<u32>(f32_to_i32(x0))".to_string()
                    } else if bits == 32 {
                        "f32_to_u32(x0)".to_string()
                    } else if t == Class::Signed {
                        let top = (1i64 << (bits - 1)) - 1;
                        format!("bitcast<u32>(f32_to_i32(clamp_finite(x0, {}.0, {top}.0)))", -top - 1)
                    } else {
                        format!("f32_to_u32(clamp_finite(x0, 0.0, {}.0))", (1i64 << bits) - 1)
                    }
                }
                Class::Wide => "x0.x".into(),
                Class::Signed => "bitcast<u32>(x0)".into(),
                _ => "x0".into(),
            };
            if t == Class::Signed {
                format!("bitcast<i32>({bits})")
            } else {
                bits
            }
        }
    };
    format!("        let v = {expr};")
}

/// Refuses a pair this backend does not cast, naming both dtypes.
fn served(from: DType, to: DType) -> Result<()> {
    if DTYPES.contains(&from) && DTYPES.contains(&to) {
        return Ok(());
    }
    Err(KernelError::Missing { op: "cast".into(), dtype: format!("{from} to {to}"), backend: "wgpu".into() })
}

fn run(gpu: &Gpu, spec: &Cast, launch: Launch<'_>) -> Result<()> {
    served(spec.from, spec.to)?;
    let (x, y) = (&launch.inputs[0], &launch.outputs[0]);
    let (mut from, to): (Elem, Elem) = (wgsl::elem("cast", spec.from)?, wgsl::elem("cast", spec.to)?);
    if class(spec.from) == Class::Float {
        // a float converted, never computed with: read bit for bit, so that a subnormal stays
        // one in another float format and is true as a bool, on a device that flushes too
        from = from.exact();
    }
    gpu.map(
        "cast",
        Map {
            name: format!("cast_{}_{}", spec.from.launch_key(), spec.to.launch_key()),
            inputs: vec![(x, from)],
            output: (y, to),
            body: body(spec.from, spec.to),
            helpers: HELPERS.into(),
            extra: Vec::new(),
        },
    )
}

/// Refuses, when the op is declared, a pair of dtypes not cast here; no workspace.
fn check_pair(spec: &Cast, _: &[TensorMeta]) -> Result<u64> {
    served(spec.from, spec.to)?;
    Ok(0)
}

/// Registers `cast` from each served dtype (to each served dtype; others are refused by name).
pub fn register_all(table: &mut LaunchTable) {
    register_with_workspace(table, "cast", &DTYPES, run, check_pair);
}
