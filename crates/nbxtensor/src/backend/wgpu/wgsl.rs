//! The pieces every WGSL kernel is composed of: how a dtype is read and written as 32-bit
//! words (any dtype of 1, 2, 4 or 8 bytes, at any byte: WGSL has no narrower storage type
//! everywhere), the exact conversions of the half formats, the bindings, and the walk of a
//! strided operand. The floats compute in float32 (as the CPU computes float16 and bfloat16),
//! the integers of up to 32 bits in i32/u32, bool as 0/1; a 64-bit integer travels as two words.
//!
//! Conversions to float16 and bfloat16 round to nearest, ties to even, with integer
//! arithmetic (WGSL leaves `pack2x16float`'s rounding to the implementation), so a kernel's
//! half-format bytes equal the host's.

use crate::dtype::DType;
use crate::kernel::{KernelError, Result};
use crate::shape::Walk;

/// Dims a kernel walks (after merging): the parameters hold this many extents and strides.
pub const MAX_DIMS: usize = 8;

/// How the kernels hold one dtype.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Elem {
    /// The dtype.
    pub dtype: DType,
    /// Its bytes.
    pub width: u32,
    /// The WGSL type it computes in (`f32`, `i32`, `u32`, `vec2<u32>`).
    pub ty: &'static str,
    /// The expression decoding raw bits `$` (the element in its low bits; two words for 8
    /// bytes) into `ty`.
    decode: &'static str,
    /// The expression encoding a `ty` value `$` into its bits.
    encode: &'static str,
    /// Whether a float32 or bfloat16 is decoded bit for bit even where the device flushes
    /// subnormals ([`Elem::exact`]).
    exact: bool,
}

/// The kernels' view of `dtype`; refused (naming `op`) for the dtypes no WGSL kernel holds:
/// float64 and the complex dtypes (WGSL has no 64-bit float everywhere), the 8-bit floats and
/// the packed formats.
pub fn elem(op: &str, dtype: DType) -> Result<Elem> {
    let (width, ty, decode, encode) = match dtype {
        DType::Float32 => (4, "f32", "from_bits($)", "bitcast<u32>($)"),
        DType::Float16 => (2, "f32", "f16_to_f32($ & 0xffffu)", "f32_to_f16($)"),
        DType::Bfloat16 => (2, "f32", "from_bits($ << 16u)", "f32_to_bf16($)"),
        DType::Int8 => (1, "i32", "bitcast<i32>($ << 24u) >> 24u", "bitcast<u32>($) & 0xffu"),
        DType::Int16 => (2, "i32", "bitcast<i32>($ << 16u) >> 16u", "bitcast<u32>($) & 0xffffu"),
        DType::Int32 => (4, "i32", "bitcast<i32>($)", "bitcast<u32>($)"),
        DType::Uint8 => (1, "u32", "$ & 0xffu", "$ & 0xffu"),
        DType::Uint16 => (2, "u32", "$ & 0xffffu", "$ & 0xffffu"),
        DType::Uint32 => (4, "u32", "$", "$"),
        DType::Bool => (1, "u32", "select(0u, 1u, ($ & 0xffu) != 0u)", "select(0u, 1u, $ != 0u)"),
        DType::Int64 | DType::Uint64 => (8, "vec2<u32>", "$", "$"),
        other => {
            return Err(KernelError::Missing {
                op: op.to_string(),
                dtype: other.name().to_string(),
                backend: "wgpu".to_string(),
            })
        }
    };
    Ok(Elem { dtype, width, ty, decode, encode, exact: false })
}

impl Elem {
    /// The WGSL expression of `v` (a `ty`) encoded as bits.
    pub fn encoded(&self, v: &str) -> String {
        format!("({})", self.encode.replace('$', &format!("({v})")))
    }

    /// The WGSL expression of bits `w` decoded as a `ty`.
    pub fn decoded(&self, w: &str) -> String {
        let decode =
            if self.exact { self.decode.replace("from_bits(", "bitcast<f32>(") } else { self.decode.to_string() };
        format!("({})", decode.replace('$', &format!("({w})")))
    }

    /// This element decoded bit for bit, its subnormals kept even on a device that flushes
    /// them: for kernels that only move or convert floats (casts), never compare or compute.
    pub fn exact(self) -> Elem {
        Elem { exact: true, ..self }
    }

    /// The mask of the element's bits within a word (all ones for 4 and 8 bytes).
    pub fn mask(&self) -> &'static str {
        match self.width {
            1 => "0xffu",
            2 => "0xffffu",
            _ => "0xffffffffu",
        }
    }
}

/// The statement of `from_bits` (in [`COMMON`]) on a device that keeps float32 subnormals.
const KEEP_SUBNORMALS: &str = "return bitcast<f32>(x); // subnormals kept";

/// The same on a device whose float32 arithmetic flushes subnormals (`Gpu::flushes_subnormals`): it reads them as zeros of
/// their sign, so that every comparison, selection and bit test of a kernel sees the value its
/// arithmetic sees (a subnormal passed through a `select` would otherwise come out unflushed
/// beside a comparison that took it for zero).
const FLUSH_SUBNORMALS: &str = "return bitcast<f32>(select(x, x & 0x80000000u, (x & 0x7f800000u) == 0u));";

/// A kernel's WGSL for a device that keeps float32 subnormals or flushes them.
pub fn for_device(source: String, keeps_subnormals: bool) -> String {
    if keeps_subnormals {
        source
    } else {
        source.replace(KEEP_SUBNORMALS, FLUSH_SUBNORMALS)
    }
}

/// Conversions shared by every kernel: float16 to and from float32, float32 to bfloat16, each
/// rounding to nearest even; NaNs stay NaN, quiet.
pub const COMMON: &str = r#"
// a float32 from its bits (see KEEP_SUBNORMALS)
fn from_bits(x: u32) -> f32 {
    return bitcast<f32>(x); // subnormals kept
}
fn f16_to_f32(h: u32) -> f32 {
    let sign = (h & 0x8000u) << 16u;
    let e = (h >> 10u) & 0x1fu;
    let m = h & 0x3ffu;
    if (e == 0x1fu) {
        return bitcast<f32>(sign | 0x7f800000u | (m << 13u));
    }
    if (e != 0u) {
        return bitcast<f32>(sign | ((e + 112u) << 23u) | (m << 13u));
    }
    // zero or subnormal: m · 2^-24, a normal float32 (or zero), exact
    return bitcast<f32>(sign | bitcast<u32>(f32(m) * 5.9604644775390625e-8));
}

fn f32_to_f16(v: f32) -> u32 {
    let x = bitcast<u32>(v);
    let sign = (x >> 16u) & 0x8000u;
    let e = (x >> 23u) & 0xffu;
    let m = x & 0x7fffffu;
    if (e == 0xffu) {
        return sign | 0x7c00u | select(0u, 0x200u | (m >> 13u), m != 0u);
    }
    let half_e = i32(e) - 112;
    if (half_e >= 0x1f) {
        return sign | 0x7c00u;
    }
    if (half_e <= 0) {
        // a subnormal float16 (or zero): the mantissa with its hidden bit, shifted
        let shift = u32(14 - half_e);
        if (shift > 24u) {
            return sign;
        }
        let full = m | 0x800000u;
        var out = full >> shift;
        let half_way = 1u << (shift - 1u);
        let rest = full & ((half_way << 1u) - 1u);
        if (rest > half_way || (rest == half_way && (out & 1u) == 1u)) {
            out += 1u;
        }
        return sign | out;
    }
    var out = (u32(half_e) << 10u) | (m >> 13u);
    let rest = m & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (out & 1u) == 1u)) {
        out += 1u; // a carry into the exponent rounds up to the next binade, or to infinity
    }
    return sign | out;
}

fn f32_to_bf16(v: f32) -> u32 {
    let x = bitcast<u32>(v);
    if ((x & 0x7fffffffu) > 0x7f800000u) {
        return (x >> 16u) | 0x40u;
    }
    return (x + 0x7fffu + ((x >> 16u) & 1u)) >> 16u;
}
"#;

/// A tensor read by the kernel: binding `slot` as `name`, with `w_<name>(byte)` (the bits from
/// `byte`, any alignment: the next word is read too, clamped into the window, and used only
/// where the element reaches into it) and `ld_<name>(byte)` (the element at `byte`, as `ty`).
pub fn input(slot: u32, name: &str, e: Elem) -> String {
    let load = if e.width == 8 {
        format!("vec2<u32>(w_{name}(byte_), w_{name}(byte_ + 4u))")
    } else {
        e.decoded(&format!("w_{name}(byte_)"))
    };
    format!(
        r#"
@group(0) @binding({slot}) var<storage, read_write> {name}: array<u32>;
fn w_{name}(byte_: u32) -> u32 {{
    let word_ = byte_ >> 2u;
    let shift_ = (byte_ & 3u) * 8u;
    // both words read unconditionally (a load under a branch is issued alone, so a kernel's
    // loads would not be in flight together), the next one clamped into the window
    let low_ = {name}[word_];
    let high_ = {name}[min(word_ + 1u, arrayLength(&{name}) - 1u)];
    return select((low_ >> shift_) | (high_ << (32u - shift_)), low_ >> shift_, shift_ + {bits}u <= 32u);
}}
fn ld_{name}(byte_: u32) -> {ty} {{
    return {load};
}}
"#,
        ty = e.ty,
        bits = 8 * e.width.min(4)
    )
}

/// A tensor the kernel writes: binding `slot` as `name`, with `st_<name>(byte, value)`. An
/// element of 1 or 2 bytes shares its word with others, so such an output is a binding of atomic
/// words, each element's bits cleared and set by two atomic operations (no two invocations write
/// the same element). The element must lie at a multiple of its width.
pub fn output(slot: u32, name: &str, e: Elem) -> String {
    let store = match e.width {
        8 => format!("{name}[byte_ >> 2u] = value_.x;\n    {name}[(byte_ >> 2u) + 1u] = value_.y;"),
        4 => format!("{name}[byte_ >> 2u] = {};", e.encoded("value_")),
        _ => format!(
            "let shift_ = (byte_ & 3u) * 8u;\n    atomicAnd(&{name}[byte_ >> 2u], ~({mask} << shift_));\n    atomicOr(&{name}[byte_ >> 2u], ({bits} & {mask}) << shift_);",
            mask = e.mask(),
            bits = e.encoded("value_")
        ),
    };
    let words = if e.width < 4 { "array<atomic<u32>>" } else { "array<u32>" };
    format!(
        r#"
@group(0) @binding({slot}) var<storage, read_write> {name}: {words};
fn st_{name}(byte_: u32, value_: {ty}) {{
    {store}
}}
"#,
        ty = e.ty
    )
}

/// The launch parameters, binding `slot`: `p[i]` are u32 words (bitcast for signed values).
pub fn params(slot: u32) -> String {
    format!("\n@group(0) @binding({slot}) var<storage, read> p: array<u32>;\n")
}

/// The linear invocation index of a dispatch laid out by `Gpu::grid` (`x + y · groups_x` groups
/// of `threads`).
pub fn invocation(threads: u32) -> String {
    format!(
        r#"
fn invocation(gid: vec3<u32>, groups: vec3<u32>) -> u32 {{
    return gid.x + gid.y * groups.x * {threads}u;
}}
"#
    )
}

/// The walk of `operands` operands over merged dims, its parameters from word `at`: the dims
/// used, the extents (innermost first, [`MAX_DIMS`] words), then per operand its base byte and
/// its byte strides ([`MAX_DIMS`] words, wrapping). `<name>(i)` gives every operand's byte of
/// row-major element `i`.
pub fn walker(name: &str, operands: usize, at: usize) -> String {
    let stride = 1 + MAX_DIMS;
    let dims = MAX_DIMS;
    format!(
        r#"
fn {name}(i: u32) -> array<u32, {operands}> {{
    var out: array<u32, {operands}>;
    for (var k = 0u; k < {operands}u; k++) {{
        out[k] = p[{at}u + 1u + {dims}u + k * {stride}u];
    }}
    let nd = p[{at}u];
    if (nd == 1u) {{
        // one dim (every contiguous layout): no division
        for (var k = 0u; k < {operands}u; k++) {{
            out[k] += i * p[{at}u + 2u + {dims}u + k * {stride}u];
        }}
        return out;
    }}
    var rest = i;
    for (var d = 0u; d < nd; d++) {{
        let size = p[{at}u + 1u + d];
        let index = rest % size;
        rest = rest / size;
        for (var k = 0u; k < {operands}u; k++) {{
            out[k] += index * p[{at}u + 2u + {dims}u + k * {stride}u + d];
        }}
    }}
    return out;
}}
"#
    )
}

/// The words of a walk's parameters (see [`walker`]): `walk` in elements, each operand's base
/// byte and element width.
pub fn walk_params(op: &str, walk: &Walk, operands: &[(u32, u32)]) -> Result<Vec<u32>> {
    if walk.shape.len() > MAX_DIMS {
        return Err(KernelError::Invalid(format!(
            "{op}: a wgpu kernel walks at most {MAX_DIMS} dims; {} remain after merging",
            walk.shape.len()
        )));
    }
    let mut words = vec![walk.shape.len() as u32];
    for d in 0..MAX_DIMS {
        words.push(walk.shape.get(d).map_or(1, |&s| s as u32));
    }
    for (k, &(base, width)) in operands.iter().enumerate() {
        words.push(base);
        for d in 0..MAX_DIMS {
            // strides in bytes, reduced modulo 2^32: the sums wrap back into the window
            let stride = walk.strides[k].get(d).copied().unwrap_or(0);
            words.push((stride.wrapping_mul(i64::from(width))) as u32);
        }
    }
    Ok(words)
}

/// `fn <name>(v: f32, lid: u32) -> f32`: the values of a workgroup of `threads` invocations
/// combined by `combine` (an expression of `a`, the lower invocations' value, and `b`), in a
/// tree of fixed order, through a workgroup array of its own. Every invocation calls it
/// (uniform control: it holds barriers).
pub fn workgroup_reduction(name: &str, threads: u32, combine: &str) -> String {
    format!(
        r#"
var<workgroup> {name}_values: array<f32, {threads}>;
fn {name}(v: f32, lid: u32) -> f32 {{
    {name}_values[lid] = v;
    workgroupBarrier();
    for (var w = {half}u; w > 0u; w = w >> 1u) {{
        if (lid < w) {{
            let a = {name}_values[lid];
            let b = {name}_values[lid + w];
            {name}_values[lid] = {combine};
        }}
        workgroupBarrier();
    }}
    let total = {name}_values[0];
    workgroupBarrier();
    return total;
}}
"#,
        half = threads / 2
    )
}

/// The number of words [`walk_params`] gives for `operands` operands.
pub fn walk_words(operands: usize) -> usize {
    1 + MAX_DIMS + operands * (1 + MAX_DIMS)
}

/// Refuses an element count past what a u32 index holds (a kernel indexes in 32 bits).
pub fn count(op: &str, n: i64) -> Result<u32> {
    u32::try_from(n)
        .map_err(|_| KernelError::Invalid(format!("{op}: {n} elements are more than a wgpu kernel indexes (2^32 - 1)")))
}
