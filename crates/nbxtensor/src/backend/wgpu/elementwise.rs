//! Elementwise kernels (`map`): inputs walked through their strides (broadcasts included) into
//! a contiguous output, one WGSL expression per element. An invocation writes whole output words
//! (four bool or 8-bit elements a word, two of 16 bits, one element of 32 or 64 bits), [`WORDS`]
//! of them a grid apart, so no two invocations share a word; an output starts on a word, as every fresh output does (blocks and
//! planned offsets are aligned). Where every input lies element for element under the output
//! (contiguous, unbroadcast, of the output's width) and all start on 16 bytes, the kernel reads
//! and writes 16-byte vectors instead, nothing walked ([`vector_form`]).

use super::gpu::Gpu;
use super::wgsl::{self, Elem};
use crate::kernel::{KernelError, Result};
use crate::shape::walk;
use crate::tensor::Tensor;

/// Invocations per workgroup of the elementwise kernels.
pub const THREADS: u32 = 256;

/// Output words an invocation writes, a grid's width apart (more loads in flight per invocation).
const WORDS: u32 = 4;

/// One elementwise kernel: its name (unique per body and dtypes), its inputs and output, and
/// the WGSL that computes `v` (of the output's type) from `x0`, `x1`, … (the inputs' elements,
/// each of its input's type). `helpers` are functions the body calls; `extra` are parameter
/// words the body reads as `p[EXTRA + k]`.
pub struct Map<'a> {
    /// The kernel's name: the pipeline cache's key.
    pub name: String,
    /// The inputs and how the kernel reads each.
    pub inputs: Vec<(&'a Tensor, Elem)>,
    /// The output (contiguous) and how the kernel writes it.
    pub output: (&'a Tensor, Elem),
    /// WGSL statements ending with `v` defined.
    pub body: String,
    /// WGSL functions the body calls.
    pub helpers: String,
    /// Parameter words the body reads from `EXTRA` on.
    pub extra: Vec<u32>,
}

fn compose(map: &Map<'_>) -> String {
    let k = map.inputs.len();
    let out = map.output.1;
    let per = (4 / out.width).max(1);
    let mut text = String::from(wgsl::COMMON);
    for (slot, (_, e)) in map.inputs.iter().enumerate() {
        text += &wgsl::input(slot as u32, &format!("x{slot}"), *e);
    }
    text += &format!("\n@group(0) @binding({k}) var<storage, read_write> y: array<u32>;\n");
    text += &wgsl::params(k as u32 + 1);
    text += &wgsl::invocation(THREADS);
    if k > 0 {
        text += &wgsl::walker("walk", k, 2);
    }
    text += &format!("const EXTRA: u32 = {}u;\n", 2 + wgsl::walk_words(k));
    text += &map.helpers;
    let loads: String = (0..k).map(|i| format!("            let x{i} = ld_x{i}(at[{i}]);\n")).collect();
    let at = if k > 0 { "            let at = walk(i);\n" } else { "" };
    // each pass's word is computed before any is stored: the loads of every pass are in flight
    // together (a store to the output may alias an input, so a compiler cannot move a later
    // pass's loads above an earlier pass's store)
    let (zero, fold) = match out.width {
        8 => ("vec2<u32>(0u, 0u)", "word = v;".to_string()),
        4 => ("0u", format!("word = {};", out.encoded("v"))),
        width => ("0u", format!("word |= ({} & {}) << (e * {}u);", out.encoded("v"), out.mask(), width * 8)),
    };
    // an element reads its inputs unconditionally, its index clamped to the last element
    // (loads under a condition are issued one after another, unconditional ones all at once);
    // a word past the end is computed but not stored, an element past the end of the last word
    // left zero
    let mut passes = String::new();
    for pass in 0..WORDS {
        let keep = if per == 1 {
            fold.clone()
        } else {
            format!("if (t{pass} * {per}u + e < n) {{\n                {fold}\n            }}")
        };
        passes += &format!(
            "    let t{pass} = first + {pass}u * stride;\n    var word{pass} = {zero};\n    {{\n        var word = {zero};\n        for (var e = 0u; e < {per}u; e++) {{\n            let i = min(t{pass} * {per}u + e, n - 1u);\n{at}{loads}{body}\n            {keep}\n        }}\n        word{pass} = word;\n    }}\n",
            body = map.body
        );
    }
    let stores: String = (0..WORDS)
        .map(|pass| match out.width {
            8 => format!("    if (t{pass} * {per}u < n) {{\n        y[(p[1] >> 2u) + 2u * t{pass}] = word{pass}.x;\n        y[(p[1] >> 2u) + 2u * t{pass} + 1u] = word{pass}.y;\n    }}\n"),
            _ => format!("    if (t{pass} * {per}u < n) {{\n        y[(p[1] >> 2u) + t{pass}] = word{pass};\n    }}\n"),
        })
        .collect();
    text += &format!(
        r#"
@compute @workgroup_size({THREADS})
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {{
    let n = p[0];
    let stride = groups.x * groups.y * {THREADS}u;
    let first = invocation(gid, groups);
    if (first * {per}u >= n) {{
        return;
    }}
{passes}{stores}}}
"#
    );
    text
}

/// The vector form of `map`: invocation `t` reads the 16 bytes `t` of every input and writes
/// the output's 16 bytes `t`. p: vectors, the output's vector base, each input's vector base,
/// then the body's extra words.
fn vector_form(map: &Map<'_>) -> String {
    let k = map.inputs.len();
    let out = map.output.1;
    let per = 4 / out.width;
    let mut text = String::from(wgsl::COMMON);
    for slot in 0..k {
        text += &format!("@group(0) @binding({slot}) var<storage, read_write> x{slot}: array<vec4<u32>>;\n");
    }
    text += &format!("@group(0) @binding({k}) var<storage, read_write> y: array<vec4<u32>>;\n");
    text += &wgsl::params(k as u32 + 1);
    text += &wgsl::invocation(THREADS);
    text += &format!("const EXTRA: u32 = {}u;\n", 2 + k);
    text += &map.helpers;
    let fold = match out.width {
        4 => format!("word = {};", out.encoded("v")),
        width => format!("word |= ({} & {}) << (e * {}u);", out.encoded("v"), out.mask(), width * 8),
    };
    let loads: String = (0..k).map(|i| format!("    let w{i} = x{i}[p[{}] + t];\n", 2 + i)).collect();
    let mut lanes = String::new();
    for (q, lane) in ["x", "y", "z", "w"].iter().enumerate() {
        let values: String = map
            .inputs
            .iter()
            .enumerate()
            .map(|(i, (_, e))| {
                format!("            let x{i} = {};\n", e.decoded(&format!("w{i}.{lane} >> (e * {}u)", e.width * 8)))
            })
            .collect();
        lanes += &format!(
            "    {{\n        var word = 0u;\n        for (var e = 0u; e < {per}u; e++) {{\n            let i = (t * 4u + {q}u) * {per}u + e;\n{values}{body}\n            {fold}\n        }}\n        out.{lane} = word;\n    }}\n",
            body = map.body
        );
    }
    text += &format!(
        r#"
@compute @workgroup_size({THREADS})
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {{
    let t = invocation(gid, groups);
    if (t >= p[0]) {{
        return;
    }}
{loads}    var out = vec4<u32>(0u, 0u, 0u, 0u);
{lanes}    y[p[1] + t] = out;
}}
"#
    );
    text
}

impl Gpu {
    /// Runs one elementwise kernel over every element of its output.
    pub(super) fn map(&self, op: &str, map: Map<'_>) -> Result<()> {
        let (y, out) = map.output;
        let n = wgsl::count(op, y.numel())?;
        if n == 0 {
            return Ok(());
        }
        let per = (4 / out.width).max(1);
        let output = self.bind(op, y)?;
        if output.base % 4 != 0 || !y.is_contiguous() {
            return Err(KernelError::Invalid(format!(
                "{op}: the output must be contiguous and start on a 4-byte word"
            )));
        }
        let inputs = map.inputs.iter().map(|(x, _)| self.bind(op, x)).collect::<Result<Vec<_>>>()?;
        let mut bound: Vec<&super::pipeline::Bound> = inputs.iter().collect();
        bound.push(&output);
        // the vector form: every input element for element under the output, 16-byte aligned
        let vectors = out.width <= 4
            && n % (4 * per) == 0
            && output.base % 16 == 0
            && map.inputs.iter().zip(&inputs).all(|((x, e), b)| {
                e.width == out.width && x.shape() == y.shape() && x.is_contiguous() && b.base % 16 == 0
            });
        if vectors {
            let count = n / (4 * per);
            let mut params = vec![count, output.base / 16];
            params.extend(inputs.iter().map(|b| b.base / 16));
            params.extend_from_slice(&map.extra);
            let pipeline = self.pipeline(&format!("{}_v4", map.name), || vector_form(&map))?;
            let groups = self.grid(op, u64::from(count).div_ceil(u64::from(THREADS)))?;
            return self.dispatch(&pipeline, &bound, &params, groups);
        }
        let strides: Vec<Vec<i64>> = map
            .inputs
            .iter()
            .map(|(x, _)| {
                crate::shape::broadcast_strides(x.shape(), x.strides(), y.shape())
                    .map_err(|e| KernelError::Invalid(format!("{op}: {e}")))
            })
            .collect::<Result<_>>()?;
        let views: Vec<&[i64]> = strides.iter().map(Vec::as_slice).collect();
        let walked = walk(y.shape(), &views, None);
        let widths: Vec<(u32, u32)> = inputs.iter().zip(&map.inputs).map(|(b, (_, e))| (b.base, e.width)).collect();
        let mut params = vec![n, output.base];
        if !map.inputs.is_empty() {
            params.extend(wgsl::walk_params(op, &walked, &widths)?);
        } else {
            params.extend(std::iter::repeat_n(0, wgsl::walk_words(0)));
        }
        params.extend_from_slice(&map.extra);
        let pipeline = self.pipeline(&map.name, || compose(&map))?;
        let groups = self.grid(op, u64::from(n.div_ceil(per)).div_ceil(u64::from(THREADS * WORDS)))?;
        self.dispatch(&pipeline, &bound, &params, groups)
    }
}
