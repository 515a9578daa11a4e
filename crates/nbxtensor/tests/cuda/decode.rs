//! Decoding over a KV cache on the GPU: `kv_cache_write` and `decode_attention` against
//! attention computed by its definition in float64 and against the CPU backend, lengths read
//! from the device (0, 1, ragged, the whole cache, past it: clamped), writes at the end of the
//! cache and past it (skipped, never out of bounds), and one CUDA graph replayed at every
//! step of a decode. Skipped, saying so, where there is no CUDA device.

use super::common::*;
use nbxtensor::kernel::{AttrValue, Attrs};
use nbxtensor::memory::Device;
use nbxtensor::program::{self, ProgramError};
use nbxtensor::tensor::Tensor;
use nbxtensor::{ops, DType};

const FLOATS: [DType; 3] = [DType::Float32, DType::Float16, DType::Bfloat16];

/// Decode attention by its definition in float64: per batch row `i`, the first `lengths[i]`
/// rows of the caches, the queries the last `sq` rows of that length when `causal`.
fn reference(q: &Tensor, k: &Tensor, v: &Tensor, lengths: &[usize], causal: bool) -> Vec<f64> {
    let (qv, kv, vv) = (values(q), values(k), values(v));
    let [b, hq, sq, d] = q.shape()[..].try_into().map(|s: [i64; 4]| s.map(|x| x as usize)).unwrap();
    let [_, hk, t, _] = k.shape()[..].try_into().map(|s: [i64; 4]| s.map(|x| x as usize)).unwrap();
    let dv = v.shape()[3] as usize;
    let scale = 1.0 / (d as f64).sqrt();
    let mut out = vec![0.0; b * hq * sq * dv];
    for batch in 0..b {
        let len = lengths[batch];
        for h in 0..hq {
            let kh = h / (hq / hk);
            for i in 0..sq {
                let visible = if causal { (len + 1 + i).saturating_sub(sq).min(len) } else { len };
                if visible == 0 {
                    continue;
                }
                let scores: Vec<f64> = (0..visible)
                    .map(|j| {
                        (0..d)
                            .map(|c| qv[((batch * hq + h) * sq + i) * d + c] * kv[((batch * hk + kh) * t + j) * d + c])
                            .sum::<f64>()
                            * scale
                    })
                    .collect();
                let top = scores.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                let weights: Vec<f64> = scores.iter().map(|s| (s - top).exp()).collect();
                let total: f64 = weights.iter().sum();
                for c in 0..dv {
                    let acc: f64 = (0..visible).map(|j| weights[j] * vv[((batch * hk + kh) * t + j) * dv + c]).sum();
                    out[((batch * hq + h) * sq + i) * dv + c] = acc / total;
                }
            }
        }
    }
    out
}

fn index(values: &[i64], shape: &[i64], dtype: DType, device: Device) -> Tensor {
    let t = Tensor::from_vec(values.to_vec(), shape).unwrap();
    let t = if dtype == DType::Int32 { cast(&t, DType::Int32) } else { t };
    t.to(device).unwrap()
}

fn attrs(causal: bool) -> Attrs {
    Attrs::new().with("causal", AttrValue::Bool(causal))
}

#[test]
fn decode_attention_matches_float64_over_ragged_lengths_and_grouped_heads() {
    let Some(gpu) = gpu("decode_attention_matches_float64_over_ragged_lengths_and_grouped_heads") else { return };
    let mut draw = Draw::new(131);
    // (b, hq, hk, sq, T, d): T not a multiple of a split; 1 and 8 queries; d 64, 128 (the
    // tensor cores' on float16 and bfloat16: 4, 3, 32 and 12 rows a cache head) and 80
    let cases = [
        (2, 8, 2, 1, 1000, 128),
        (1, 4, 4, 3, 333, 64),
        (2, 32, 8, 8, 200, 64),
        (1, 12, 2, 2, 300, 128),
        (1, 6, 2, 2, 130, 80),
    ];
    for dtype in FLOATS {
        for (b, hq, hk, sq, t, d) in cases {
            let q = host(&draw.uniform(b * hq * sq * d, -1.0, 1.0), &[b as i64, hq as i64, sq as i64, d as i64], dtype);
            let shape = [b as i64, hk as i64, t as i64, d as i64];
            let k = host(&draw.uniform(b * hk * t * d, -1.0, 1.0), &shape, dtype);
            let v = host(&draw.uniform(b * hk * t * d, -1.0, 1.0), &shape, dtype);
            let (qg, kg, vg) = (q.to(gpu).unwrap(), k.to(gpu).unwrap(), v.to(gpu).unwrap());
            // 0 and 1 keys, ragged, the whole cache; past the end clamps to T on the GPU
            let lengths: Vec<Vec<i64>> = if b == 2 {
                vec![vec![0, 1], vec![t as i64 - 1, 77], vec![t as i64, t as i64 + 50]]
            } else {
                vec![vec![1], vec![t as i64], vec![(t / 2) as i64 + 3]]
            };
            for (n, lens) in lengths.iter().enumerate() {
                for causal in [true, false] {
                    let ldt = if n % 2 == 0 { DType::Int32 } else { DType::Int64 };
                    let length = index(lens, &[b as i64], ldt, gpu);
                    let what = format!(
                        "decode_attention {dtype} b{b} hq{hq} hk{hk} sq{sq} T{t} d{d} lengths {lens:?} causal {causal}"
                    );
                    let out = ops::call("decode_attention", &attrs(causal), &[&qg, &kg, &vg, &length])
                        .unwrap_or_else(|e| panic!("{what}: {e}"))
                        .remove(0);
                    assert_eq!(out.shape(), &[b as i64, hq as i64, sq as i64, d as i64]);
                    let clamped: Vec<usize> = lens.iter().map(|&l| (l as usize).min(t)).collect();
                    assert_close(&what, &values(&out), &reference(&q, &k, &v, &clamped, causal), tolerance(dtype));
                    if lens.iter().all(|&l| l as usize <= t) {
                        let host_length = length.to(Device::CPU).unwrap();
                        let cpu = ops::call("decode_attention", &attrs(causal), &[&q, &k, &v, &host_length]).unwrap();
                        assert_close(
                            &format!("{what}, against the CPU"),
                            &values(&out),
                            &values(&cpu[0]),
                            tolerance(dtype),
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn cache_rows_past_the_length_never_reach_the_result() {
    let Some(gpu) = gpu("cache_rows_past_the_length_never_reach_the_result") else { return };
    let mut draw = Draw::new(133);
    // the rows a decoder has not written yet may hold anything: NaN and infinities there must
    // neither score nor weigh, also in the tile or split that holds the length's last row
    let (b, hq, hk, t) = (1usize, 8usize, 2usize, 300usize);
    for dtype in FLOATS {
        for d in [64usize, 128] {
            for len in [1usize, 37, 64, 200, 299] {
                let shape = [b as i64, hk as i64, t as i64, d as i64];
                let stale = |mut rows: Vec<f64>| {
                    for (i, value) in rows.iter_mut().enumerate() {
                        if (i / d) % t >= len {
                            *value = [f64::NAN, f64::INFINITY, f64::NEG_INFINITY][i % 3];
                        }
                    }
                    rows
                };
                let q = host(&draw.uniform(b * hq * d, -1.0, 1.0), &[b as i64, hq as i64, 1, d as i64], dtype);
                let k = host(&stale(draw.uniform(b * hk * t * d, -1.0, 1.0)), &shape, dtype);
                let v = host(&stale(draw.uniform(b * hk * t * d, -1.0, 1.0)), &shape, dtype);
                let length = index(&[len as i64], &[], DType::Int32, gpu);
                let (qg, kg, vg) = (q.to(gpu).unwrap(), k.to(gpu).unwrap(), v.to(gpu).unwrap());
                let out = ops::call("decode_attention", &attrs(true), &[&qg, &kg, &vg, &length]).unwrap().remove(0);
                let what = format!("decode_attention {dtype} d{d} T{t}, length {len}, stale rows past it");
                assert_close(&what, &values(&out), &reference(&q, &k, &v, &[len], true), tolerance(dtype));
            }
        }
    }
}

#[test]
fn caches_whose_rows_are_not_16_byte_aligned_take_the_element_kernel_over_the_same_splits() {
    let Some(gpu) = gpu("caches_whose_rows_are_not_16_byte_aligned_take_the_element_kernel_over_the_same_splits")
    else {
        return;
    };
    let mut draw = Draw::new(17);
    // head dim 64 of rows 65 elements apart: the tensor cores' shape, rows they cannot load
    let (b, hq, hk, t, d) = (1usize, 8usize, 2usize, 300usize, 64usize);
    for dtype in [DType::Float16, DType::Bfloat16] {
        let q = host(&draw.uniform(b * hq * d, -1.0, 1.0), &[b as i64, hq as i64, 1, d as i64], dtype);
        let wide = [b as i64, hk as i64, t as i64, d as i64 + 1];
        let (kw, vw) = (
            host(&draw.uniform(b * hk * t * (d + 1), -1.0, 1.0), &wide, dtype),
            host(&draw.uniform(b * hk * t * (d + 1), -1.0, 1.0), &wide, dtype),
        );
        // the views taken on the device (a copy there would be contiguous)
        let (k, v) = (kw.narrow(3, 0, d as i64).unwrap(), vw.narrow(3, 1, d as i64).unwrap());
        let kg = kw.to(gpu).unwrap().narrow(3, 0, d as i64).unwrap();
        let vg = vw.to(gpu).unwrap().narrow(3, 1, d as i64).unwrap();
        let qg = q.to(gpu).unwrap();
        for len in [1i64, 200, 300] {
            let length = index(&[len], &[], DType::Int32, gpu);
            let out = ops::call("decode_attention", &attrs(true), &[&qg, &kg, &vg, &length]).unwrap().remove(0);
            let what = format!("decode_attention {dtype} over unaligned rows, length {len}");
            assert_close(&what, &values(&out), &reference(&q, &k, &v, &[len as usize], true), tolerance(dtype));
        }
    }
}

#[test]
fn a_cache_write_lands_at_its_device_position_and_skips_rows_past_the_end() {
    let Some(gpu) = gpu("a_cache_write_lands_at_its_device_position_and_skips_rows_past_the_end") else { return };
    let mut draw = Draw::new(132);
    let (b, h, t, s, d) = (2usize, 3usize, 40usize, 4usize, 16usize);
    for dtype in FLOATS {
        for positions in [vec![0i64, 0], vec![7, 36], vec![38, -2], vec![40, 100]] {
            let start = draw.uniform(b * h * t * d, -1.0, 1.0);
            let cache = host(&start, &[b as i64, h as i64, t as i64, d as i64], dtype).to(gpu).unwrap();
            let before = values(&cache);
            let new_values = draw.uniform(b * h * s * d, -1.0, 1.0);
            let new = host(&new_values, &[b as i64, h as i64, s as i64, d as i64], dtype);
            let position = index(&positions, &[b as i64], DType::Int64, gpu);
            ops::call("kv_cache_write", &Attrs::new(), &[&cache, &new.to(gpu).unwrap(), &position]).unwrap();
            let rounded = values(&new);
            let mut want = before.clone();
            for bi in 0..b {
                for hh in 0..h {
                    for j in 0..s {
                        let row = positions[bi] + j as i64;
                        if (0..t as i64).contains(&row) {
                            let at = ((bi * h + hh) * t + row as usize) * d;
                            want[at..at + d].copy_from_slice(&rounded[((bi * h + hh) * s + j) * d..][..d]);
                        }
                    }
                }
            }
            assert_eq!(values(&cache), want, "kv_cache_write {dtype} at {positions:?}");
        }
        // a transposed view of the new rows is read through its strides
        let cache = host(&vec![0.0; h * t * d], &[1, h as i64, t as i64, d as i64], dtype).to(gpu).unwrap();
        let wide =
            host(&draw.uniform(h * s * d, -1.0, 1.0), &[1, h as i64, d as i64, s as i64], dtype).to(gpu).unwrap();
        let new = wide.transpose(2, 3).unwrap();
        let position = index(&[t as i64 - s as i64], &[], DType::Int32, gpu);
        ops::call("kv_cache_write", &Attrs::new(), &[&cache, &new, &position]).unwrap();
        let got = values(&cache);
        let expect = values(&new);
        for hh in 0..h {
            assert_eq!(
                &got[(hh * t + t - s) * d..][..s * d],
                &expect[hh * s * d..][..s * d],
                "{dtype}: the view's rows"
            );
        }
    }
}

/// A decode step (write the new key and value at the position, attend over position + 1
/// rows), captured once as a CUDA graph and replayed step after step: every step equals the
/// same step run eagerly on a second cache, and float64 attention over the keys written so far.
#[test]
fn one_captured_graph_serves_every_decode_step() {
    let Some(gpu) = gpu("one_captured_graph_serves_every_decode_step") else { return };
    let mut draw = Draw::new(133);
    let (hq, hk, t, d) = (8usize, 2usize, 300usize, 64usize);
    let dtype = DType::Bfloat16;
    let cache =
        |draw: &mut Draw| host(&draw.uniform(hk * t * d, -1.0, 1.0), &[1, hk as i64, t as i64, d as i64], dtype);
    let (k0, v0) = (cache(&mut draw), cache(&mut draw));
    let (kc, vc) = (k0.to(gpu).unwrap(), v0.to(gpu).unwrap());
    let (ke, ve) = (k0.to(gpu).unwrap(), v0.to(gpu).unwrap());
    let step = |kc: &Tensor, vc: &Tensor, t: &[Tensor]| -> Result<Vec<Tensor>, ProgramError> {
        kc.kv_cache_write(&t[1], &t[3])?;
        vc.kv_cache_write(&t[2], &t[3])?;
        Ok(vec![t[0].decode_attention(kc, vc, &t[4], true, None)?])
    };
    let inputs = |draw: &mut Draw, at: usize| -> Vec<Tensor> {
        let row = |draw: &mut Draw, heads: usize| {
            host(&draw.uniform(heads * d, -1.0, 1.0), &[1, heads as i64, 1, d as i64], dtype).to(gpu).unwrap()
        };
        let (q, k, v) = (row(draw, hq), row(draw, hk), row(draw, hk));
        vec![q, k, v, index(&[at as i64], &[], DType::Int32, gpu), index(&[at as i64 + 1], &[1], DType::Int64, gpu)]
    };
    let first = inputs(&mut draw, 0);
    let traced = program::trace(&first, |x| step(&kc, &vc, x)).unwrap();
    assert_eq!(traced.keys(), ["kv_cache_write:bf16", "kv_cache_write:bf16", "decode_attention:bf16"]);
    let plan = traced.plan().unwrap();
    let refs: Vec<&Tensor> = first.iter().collect();
    let replay = program::Executable::new(traced, plan).unwrap().capture(&refs).unwrap();
    assert!(replay.graph().is_some(), "captured as a CUDA graph");
    step(&ke, &ve, &first).unwrap();
    for at in [1, 2, 63, 64, 65, 200, 298, 299] {
        let x = inputs(&mut draw, at);
        let refs: Vec<&Tensor> = x.iter().collect();
        let replayed = replay.run(&refs).unwrap();
        let eager = step(&ke, &ve, &x).unwrap();
        let (r, e) = (replayed[0].to(Device::CPU).unwrap(), eager[0].to(Device::CPU).unwrap());
        assert_eq!(r.to_bytes().unwrap(), e.to_bytes().unwrap(), "step at {at}: the replay differs from eager");
        let want = reference(
            &x[0].to(Device::CPU).unwrap(),
            &kc.to(Device::CPU).unwrap(),
            &vc.to(Device::CPU).unwrap(),
            &[at + 1],
            true,
        );
        assert_close(&format!("step at {at}"), &values(&r), &want, tolerance(dtype));
    }
    assert_eq!(kc.to(Device::CPU).unwrap().to_bytes().unwrap(), ke.to(Device::CPU).unwrap().to_bytes().unwrap());
}
