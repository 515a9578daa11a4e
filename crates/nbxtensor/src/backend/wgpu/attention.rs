//! `sdpa(q, k, v[, mask])` on a wgpu device (`ops::spec::attention`) on float32, float16 and
//! bfloat16, computed in float32: a workgroup per query row, the keys taken 256 at a time — each
//! invocation scores one key, the block's maximum and weights found in workgroup memory, the
//! running output rescaled (an online softmax) and each invocation accumulating output
//! columns over the block's keys. Any layout is read through its strides; grouped-query heads,
//! the bottom-right causal mask and an additive mask broadcast to the scores. A row with no
//! visible key (or only masked ones) is zeros.

use super::gpu::Gpu;
use super::register;
use super::wgsl::{self, Elem};
use crate::backend::LaunchTable;
use crate::kernel::{KernelError, Launch, Result, TensorMeta};
use crate::ops::spec::attention::{AttentionShape, Sdpa};
use crate::ops::spec::FLOATS;
use crate::shape::broadcast_strides;
use crate::tensor::Tensor;

/// Invocations of a row's workgroup, and keys per block.
const THREADS: u32 = 256;
/// The widest value head dim a workgroup holds (4 output columns an invocation).
const MAX_DV: usize = 4 * THREADS as usize;

/// How a row's visible keys are known.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Keys {
    /// sdpa: every key, or the bottom-right causal ones, with an additive mask or not.
    Prefill { masked: bool },
    /// decode_attention: the valid length read from the device (int32, or int64 when `wide`),
    /// clamped to the cache; causal rows see up to their place in it.
    Cached { wide: bool },
}

/// The kernel of `sdpa` and `decode_attention` (their rows differ only in the keys they see).
pub(super) fn source(e: Elem, keys: Keys) -> String {
    let w = e.width;
    let mut text = String::from(wgsl::COMMON);
    text += super::binary::FLOAT_HELPERS;
    text += &wgsl::input(0, "q", e);
    text += &wgsl::input(1, "k", e);
    text += &wgsl::input(2, "v", e);
    let masked = keys == Keys::Prefill { masked: true };
    let slot = match keys {
        Keys::Prefill { masked: false } => 3,
        _ => {
            // the mask, or the length
            text += &wgsl::input(3, "m", e);
            4
        }
    };
    let visible = match keys {
        Keys::Prefill { .. } => "    var visible = sk;\n    if (p[7] == 1u) {\n        visible = min(sk, select(0u, i + 1u + sk - sq, i + 1u + sk >= sq));\n    }\n".to_string(),
        Keys::Cached { wide } => {
            // p[30]: the length's base byte, p[31] its byte stride between batch rows
            let read = if wide {
                "let lo = w_m(p[30] + b * p[31]);\n    let hi = w_m(p[30] + b * p[31] + 4u);\n    var len = select(lo, 0u, bitcast<i32>(hi) < 0);\n    if (hi > 0u && bitcast<i32>(hi) > 0) { len = sk; }"
            } else {
                "let raw = bitcast<i32>(w_m(p[30] + b * p[31]));\n    var len = select(u32(raw), 0u, raw < 0);"
            };
            // read from a writable binding, the count is made uniform through workgroup memory
            // (the loop over the keys holds barriers)
            format!(
                "    {read}\n    len = min(len, sk);\n    var seen = len;\n    if (p[7] == 1u) {{\n        seen = min(len, select(0u, len - sq + 1u + i, len + 1u + i >= sq));\n    }}\n    if (lid == 0u) {{ uniform_keys = seen; }}\n    let visible = workgroupUniformLoad(&uniform_keys);\n"
            )
        }
    };
    text += &wgsl::output(slot, "y", e);
    text += &wgsl::params(slot + 1);
    let mask = if masked { format!("s = s + ld_m(mb + j * p[27]);") } else { String::new() };
    text += &format!(
        r#"
var<workgroup> weight: array<f32, {THREADS}>;
var<workgroup> uniform_keys: u32;
{reductions}
@compute @workgroup_size({THREADS})
fn main(@builtin(local_invocation_id) lid3: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {{
    // p: rows (b·hq·sq), hq, sq, sk, d, dv, heads per kv head, causal, scale,
    //    q strides (b, h, i, e), k strides (b, h, j, e), v strides (b, h, j, e), y base,
    //    q base, k base, v base, mask base, mask strides (b, h, i, j), all in bytes
    let lid = lid3.x;
    let row = wid.x + wid.y * groups.x;
    if (row >= p[0]) {{ return; }}
    let hq = p[1];
    let sq = p[2];
    let sk = p[3];
    let d = p[4];
    let dv = p[5];
    let i = row % sq;
    let h = (row / sq) % hq;
    let b = row / (sq * hq);
    let kh = h / p[6];
    let scale = bitcast<f32>(p[8]);
{visible}
    let qb = p[21] + b * p[9] + h * p[10] + i * p[11];
    let kb = p[22] + b * p[13] + kh * p[14];
    let vb = p[23] + b * p[17] + kh * p[18];
    let mb = p[24] + b * p[25] + h * p[26] + i * p[28];
    var top = bitcast<f32>(0xff800000u);
    var total = 0.0;
    var acc = array<f32, 4>(0.0, 0.0, 0.0, 0.0);
    for (var j0 = 0u; j0 < visible; j0 += {THREADS}u) {{
        let j = j0 + lid;
        var s = bitcast<f32>(0xff800000u);
        if (j < visible) {{
            var dot = 0.0;
            for (var e = 0u; e < d; e++) {{
                dot = dot + ld_q(qb + e * p[12]) * ld_k(kb + j * p[15] + e * p[16]);
            }}
            s = dot * scale;
            {mask}
        }}
        let block_top = block_max(s, lid);
        let new_top = max(top, block_top);
        // weights of this block against the running maximum; an all-masked block adds nothing
        var wgt = 0.0;
        if (new_top != bitcast<f32>(0xff800000u) && j < visible) {{
            wgt = exp(s - new_top);
        }}
        var rescale = 0.0;
        if (top != bitcast<f32>(0xff800000u)) {{
            rescale = exp(top - new_top);
        }}
        weight[lid] = wgt;
        let block_total = block_sum(wgt, lid);
        total = total * rescale + block_total;
        top = new_top;
        let count = min({THREADS}u, visible - j0);
        for (var c = 0u; c < 4u; c++) {{
            let col = lid + c * {THREADS}u;
            if (col < dv) {{
                var a = acc[c] * rescale;
                for (var t = 0u; t < count; t++) {{
                    a = a + weight[t] * ld_v(vb + (j0 + t) * p[19] + col * p[20]);
                }}
                acc[c] = a;
            }}
        }}
        workgroupBarrier();
    }}
    let out = p[29] + row * dv * {w}u;
    for (var c = 0u; c < 4u; c++) {{
        let col = lid + c * {THREADS}u;
        if (col < dv) {{
            var o = 0.0;
            if (total > 0.0) {{ o = div_rn(acc[c], total); }}
            st_y(out + col * {w}u, o);
        }}
    }}
}}
"#,
        reductions = wgsl::workgroup_reduction("block_max", THREADS, "max(a, b)")
            + &wgsl::workgroup_reduction("block_sum", THREADS, "a + b")
    );
    text
}

/// The query rows of a call of sizes `z` (`None` when there is nothing to compute); refused
/// past the value head dims a workgroup holds.
pub(super) fn rows_of(op: &str, z: &AttentionShape) -> Result<Option<u32>> {
    let rows = wgsl::count(op, (z.b * z.hq * z.sq) as i64)?;
    if rows == 0 || z.dv == 0 {
        return Ok(None);
    }
    if z.dv > MAX_DV {
        return Err(KernelError::Invalid(format!(
            "{op}: the wgpu kernel takes value head dims up to {MAX_DV}, got {}",
            z.dv
        )));
    }
    Ok(Some(rows))
}

/// The parameters both kernels read, `p[0..24]`: the sizes, the causal flag, the scale, the
/// byte strides of q, k and v (batch, head, row, column) and their base bytes.
pub(super) fn shared_params(
    op: &str,
    z: &AttentionShape,
    rows: u32,
    causal: bool,
    scale: f32,
    e: Elem,
    qkv: &[Tensor],
    bases: [u32; 3],
) -> Result<Vec<u32>> {
    let c = |n: usize| wgsl::count(op, n as i64);
    let mut params = vec![rows, c(z.hq)?, c(z.sq)?, c(z.sk)?, c(z.d)?, c(z.dv)?, c(z.hq / z.hk.max(1))?];
    params.push(u32::from(causal));
    params.push(scale.to_bits());
    for t in qkv {
        params.extend(t.strides().iter().map(|&s| s.wrapping_mul(i64::from(e.width)) as u32));
    }
    params.extend(bases);
    Ok(params)
}

fn run(gpu: &Gpu, spec: &Sdpa, launch: Launch<'_>) -> Result<()> {
    let op = "sdpa";
    let metas: Vec<TensorMeta> = launch.inputs.iter().map(|t| TensorMeta::new(t.dtype(), t.shape())).collect();
    let z = spec.sizes(&metas)?;
    let Some(rows) = rows_of(op, &z)? else {
        return Ok(());
    };
    let e = wgsl::elem(op, spec.dtype)?;
    let masked = launch.inputs.len() == 4;
    let bound: Vec<_> = launch.inputs.iter().chain(launch.outputs).map(|t| gpu.bind(op, t)).collect::<Result<_>>()?;
    let bases = [bound[0].base, bound[1].base, bound[2].base];
    let mut params = shared_params(op, &z, rows, spec.causal, spec.scale_for(z.d), e, &launch.inputs[..3], bases)?;
    // p[24]: the mask's base, p[25..29] its byte strides (batch, head, key, query row)
    if masked {
        let m = &launch.inputs[3];
        let target = [z.b as i64, z.hq as i64, z.sq as i64, z.sk as i64];
        let s = broadcast_strides(m.shape(), m.strides(), &target)
            .map_err(|e| KernelError::Invalid(format!("{op}: mask: {e}")))?;
        let bytes = |s: i64| s.wrapping_mul(i64::from(e.width)) as u32;
        params.extend([bound[3].base, bytes(s[0]), bytes(s[1]), bytes(s[3]), bytes(s[2])]);
    } else {
        params.extend([0; 5]);
    }
    params.push(bound[bound.len() - 1].base);
    let kernel = format!("sdpa_{}{}", spec.dtype.launch_key(), if masked { "_mask" } else { "" });
    let pipeline = gpu.pipeline(&kernel, || source(e, Keys::Prefill { masked }))?;
    let operands: Vec<_> = bound.iter().collect();
    gpu.dispatch(&pipeline, &operands, &params, gpu.grid(op, u64::from(rows))?)
}

/// Registers `sdpa` on float32, float16 and bfloat16.
pub fn register_all(table: &mut LaunchTable) {
    register(table, "sdpa", &FLOATS, run);
}
