//! Decoding over a KV cache on a wgpu device (`ops::spec::decode`), on float32, float16 and
//! bfloat16: `decode_attention(q, k_cache, v_cache, length)` — sdpa's row kernel with the valid
//! length read from the device (clamped to the cache, so one captured program serves every
//! step) — and `kv_cache_write(cache, new, position)`, in place, the position read from the
//! device, a row that would land outside the cache skipped.

use super::attention::{rows_of, shared_params, source as attention_source, Keys};
use super::gpu::Gpu;
use super::register;
use super::wgsl::{self, Elem};
use crate::backend::LaunchTable;
use crate::dtype::DType;
use crate::kernel::{KernelError, Launch, Result, TensorMeta};
use crate::ops::spec::decode::{DecodeAttention, KvCacheWrite};
use crate::ops::spec::FLOATS;
use crate::tensor::Tensor;

/// The byte stride between the batch rows' values of a position or length tensor (0: one for
/// every row).
fn index_stride(t: &Tensor) -> u32 {
    let width = if t.dtype() == DType::Int64 { 8 } else { 4 };
    if t.numel() > 1 {
        (t.strides()[0] * width) as u32
    } else {
        0
    }
}

fn attention(gpu: &Gpu, spec: &DecodeAttention, launch: Launch<'_>) -> Result<()> {
    let op = "decode_attention";
    let metas: Vec<TensorMeta> = launch.inputs.iter().map(|t| TensorMeta::new(t.dtype(), t.shape())).collect();
    let z = spec.sizes(&metas)?;
    let Some(rows) = rows_of(op, &z)? else {
        return Ok(());
    };
    let e = wgsl::elem(op, spec.dtype)?;
    let length = &launch.inputs[3];
    let bound: Vec<_> = launch.inputs.iter().chain(launch.outputs).map(|t| gpu.bind(op, t)).collect::<Result<_>>()?;
    let bases = [bound[0].base, bound[1].base, bound[2].base];
    let mut params = shared_params(op, &z, rows, spec.causal, spec.scale_for(z.d), e, &launch.inputs[..3], bases)?;
    // no mask (p[24..29]); the output's base; the length's base and batch stride
    params.extend([0; 5]);
    params.push(bound[4].base);
    params.extend([bound[3].base, index_stride(length)]);
    let wide = length.dtype() == DType::Int64;
    let kernel = format!("decode_attention_{}{}", spec.dtype.launch_key(), if wide { "_i64" } else { "_i32" });
    let pipeline = gpu.pipeline(&kernel, || attention_source(e, Keys::Cached { wide }))?;
    let operands: Vec<_> = bound.iter().collect();
    gpu.dispatch(&pipeline, &operands, &params, gpu.grid(op, u64::from(rows))?)
}

fn write_source(e: Elem, wide: bool) -> String {
    let w = e.width;
    // the position as an i32 (an int64 one past i32's range puts every row outside the cache)
    let position = if wide {
        "let lo = w_n(p[10] + b * p[11]);\n    let hi = w_n(p[10] + b * p[11] + 4u);\n    if (hi != select(0u, 0xffffffffu, bitcast<i32>(lo) < 0)) { return; }\n    let at = bitcast<i32>(lo);"
    } else {
        "let at = bitcast<i32>(w_n(p[10] + b * p[11]));"
    };
    format!(
        r#"{common}{src}{cache}{pos}{params}
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {{
    // p: elements of new, h, s, d, t, new's strides (b, h, j, e; bytes), new's base, the
    //    position's base and batch stride, the cache's base (a row before 0 or past t is
    //    skipped: the position lives on the device, where no error can be raised)
    let idx = gid.x + gid.y * groups.x * 256u;
    if (idx >= p[0]) {{ return; }}
    let d = p[3];
    let s = p[2];
    let h = p[1];
    let e = idx % d;
    let j = (idx / d) % s;
    let hh = (idx / (d * s)) % h;
    let b = idx / (d * s * h);
    {position}
    let signed_row = at + i32(j);
    if (signed_row < 0 || u32(signed_row) >= p[4]) {{ return; }}
    let row = u32(signed_row);
    let value = ld_x(p[9] + b * p[5] + hh * p[6] + j * p[7] + e * p[8]);
    st_c(p[12] + (((b * h + hh) * p[4] + row) * d + e) * {w}u, value);
}}
"#,
        common = wgsl::COMMON,
        src = wgsl::input(0, "x", e),
        cache = wgsl::output(1, "c", e),
        pos = wgsl::input(2, "n", wgsl::elem("kv_cache_write", DType::Uint32).expect("uint32 is held")),
        params = wgsl::params(3),
    )
}

fn write(gpu: &Gpu, spec: &KvCacheWrite, launch: Launch<'_>) -> Result<()> {
    let op = "kv_cache_write";
    let [cache, new, position] = launch.inputs else {
        return Err(KernelError::Invalid(format!("{op}: takes 3 inputs, got {}", launch.inputs.len())));
    };
    if !cache.is_contiguous() || cache.is_read_only() {
        return Err(KernelError::Invalid(format!(
            "{op}: the cache must be a contiguous, writable tensor (it is written in place)"
        )));
    }
    if std::sync::Arc::ptr_eq(cache.storage(), new.storage()) {
        return Err(KernelError::Invalid(format!("{op}: the new rows are a view of the cache itself")));
    }
    let metas: Vec<TensorMeta> = launch.inputs.iter().map(|t| TensorMeta::new(t.dtype(), t.shape())).collect();
    let z = spec.sizes(&metas)?;
    let n = wgsl::count(op, (z.b * z.h * z.s * z.d) as i64)?;
    if n == 0 {
        return Ok(());
    }
    let e = wgsl::elem(op, spec.dtype)?;
    let (bn, bc, bp) = (gpu.bind(op, new)?, gpu.bind(op, cache)?, gpu.bind(op, position)?);
    let bytes = |s: i64| s.wrapping_mul(i64::from(e.width)) as u32;
    let st = new.strides();
    let c = |n: usize| wgsl::count(op, n as i64);
    let params = vec![
        n,
        c(z.h)?,
        c(z.s)?,
        c(z.d)?,
        c(z.t)?,
        bytes(st[0]),
        bytes(st[1]),
        bytes(st[2]),
        bytes(st[3]),
        bn.base,
        bp.base,
        index_stride(position),
        bc.base,
    ];
    let wide = position.dtype() == DType::Int64;
    let kernel = format!("kv_cache_write_{}{}", spec.dtype.launch_key(), if wide { "_i64" } else { "_i32" });
    let pipeline = gpu.pipeline(&kernel, || write_source(e, wide))?;
    gpu.dispatch(&pipeline, &[&bn, &bc, &bp], &params, gpu.grid(op, u64::from(n).div_ceil(256))?)
}

/// Registers `decode_attention` and `kv_cache_write` on float32, float16 and bfloat16.
pub fn register_all(table: &mut LaunchTable) {
    register(table, "decode_attention", &FLOATS, attention);
    register(table, "kv_cache_write", &FLOATS, write);
}
