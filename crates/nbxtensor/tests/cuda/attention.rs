//! sdpa on the GPU (the prefill kernel and the split-K decode path) against attention computed
//! by its definition in float64 and against the CPU backend; skipped, saying so, where there is
//! no CUDA device.

use super::common::*;
use nbxtensor::backend::cuda::launches;
use nbxtensor::kernel::{AttrValue, Attrs, Launch, TensorMeta, Workspace};
use nbxtensor::memory::Device;
use nbxtensor::tensor::Tensor;
use nbxtensor::{ops, DType};

const FLOATS: [DType; 3] = [DType::Float32, DType::Float16, DType::Bfloat16];

/// Attention by its definition, in float64, on the values of the (host) operands: per
/// (batch, query head) softmax(q·kᵀ·scale + mask) over the visible keys, times v; a row with
/// no visible key, or only -inf scores, is zeros.
pub fn reference(q: &Tensor, k: &Tensor, v: &Tensor, mask: Option<&Tensor>, causal: bool, scale: f64) -> Vec<f64> {
    let (qv, kv, vv) = (values(q), values(k), values(v));
    let [b, hq, sq, d] = q.shape()[..] else { panic!("q is 4-d") };
    let [_, hk, sk, _] = k.shape()[..] else { panic!("k is 4-d") };
    let dv = v.shape()[3];
    let (b, hq, sq, d, hk, sk, dv) =
        (b as usize, hq as usize, sq as usize, d as usize, hk as usize, sk as usize, dv as usize);
    let mask_values = mask.map(|m| (values(m), m.shape().to_vec()));
    let mask_at = |index: [usize; 4]| -> f64 {
        let Some((m, shape)) = &mask_values else { return 0.0 };
        // broadcast: the mask's dims align to the right; extent-1 dims repeat
        let lead = 4 - shape.len();
        let mut flat = 0usize;
        for (axis, &extent) in shape.iter().enumerate() {
            let i = if extent == 1 { 0 } else { index[lead + axis] };
            flat = flat * extent as usize + i;
        }
        m[flat]
    };
    let mut out = vec![0.0; b * hq * sq * dv];
    for batch in 0..b {
        for h in 0..hq {
            let kh = h / (hq / hk);
            for i in 0..sq {
                let visible = if causal { (i + 1 + sk).saturating_sub(sq).min(sk) } else { sk };
                let scores: Vec<f64> = (0..visible)
                    .map(|j| {
                        let dot: f64 = (0..d)
                            .map(|c| qv[((batch * hq + h) * sq + i) * d + c] * kv[((batch * hk + kh) * sk + j) * d + c])
                            .sum();
                        dot * scale + mask_at([batch, h, i, j])
                    })
                    .collect();
                let top = scores.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                if top == f64::NEG_INFINITY {
                    continue;
                }
                let weights: Vec<f64> = scores.iter().map(|s| (s - top).exp()).collect();
                let total: f64 = weights.iter().sum();
                for c in 0..dv {
                    let acc: f64 = (0..visible).map(|j| weights[j] * vv[((batch * hk + kh) * sk + j) * dv + c]).sum();
                    out[((batch * hq + h) * sq + i) * dv + c] = acc / total;
                }
            }
        }
    }
    out
}

fn attrs(causal: bool, scale: Option<f64>) -> Attrs {
    let attrs = Attrs::new().with("causal", AttrValue::Bool(causal));
    match scale {
        Some(s) => attrs.with("scale", AttrValue::Float(s)),
        None => attrs,
    }
}

/// Random q, k, v of the given extents, on the host.
pub fn operands(draw: &mut Draw, dtype: DType, [b, hq, hk, sq, sk, d, dv]: [i64; 7]) -> [Tensor; 3] {
    let mut t = |shape: [i64; 4]| host(&draw.uniform(shape.iter().product::<i64>() as usize, -1.0, 1.0), &shape, dtype);
    [t([b, hq, sq, d]), t([b, hk, sk, d]), t([b, hk, sk, dv])]
}

/// sdpa on the GPU, as float64 values.
fn on_gpu(device: Device, attrs: &Attrs, inputs: &[&Tensor]) -> Vec<f64> {
    let moved: Vec<Tensor> = inputs.iter().map(|t| t.to(device).unwrap()).collect();
    let out = ops::call("sdpa", attrs, &moved.iter().collect::<Vec<_>>()).unwrap_or_else(|e| panic!("sdpa: {e}"));
    values(&out[0])
}

#[test]
fn prefill_matches_the_definition_and_the_cpu() {
    let Some(device) = gpu("prefill_matches_the_definition_and_the_cpu") else { return };
    let mut draw = Draw::new(51);
    // [b, hq, hk, sq, sk, d, dv], causal: grouped heads; keys beyond a tile; sq > sk (rows
    // that see nothing); a value width past one slice of 256 columns; one query row and key;
    // a head dim that is not a multiple of 4 (single-float reads of the key tile)
    let cases: [([i64; 7], bool); 7] = [
        ([2, 4, 2, 37, 37, 64, 64], true),
        ([1, 3, 3, 20, 50, 40, 24], false),
        ([1, 2, 1, 10, 6, 16, 16], true),
        ([1, 2, 2, 5, 40, 32, 300], true),
        ([2, 2, 1, 1, 1, 8, 8], false),
        ([1, 1, 1, 3, 100, 256, 128], false),
        ([1, 2, 1, 9, 45, 7, 5], true),
    ];
    for (sizes, causal) in cases {
        for dtype in FLOATS {
            let [q, k, v] = operands(&mut draw, dtype, sizes);
            let scale = 1.0 / (sizes[5] as f64).sqrt();
            let a = attrs(causal, None);
            let got = on_gpu(device, &a, &[&q, &k, &v]);
            let cpu = values(&ops::call("sdpa", &a, &[&q, &k, &v]).unwrap()[0]);
            let what = format!("sdpa {dtype} {sizes:?} causal={causal}");
            assert_close(
                &format!("{what} vs definition"),
                &got,
                &reference(&q, &k, &v, None, causal, scale),
                2.0 * tolerance(dtype),
            );
            assert_close(&format!("{what} vs cpu"), &got, &cpu, 2.0 * tolerance(dtype));
        }
    }
}

#[test]
fn masks_scales_and_strided_operands() {
    let Some(device) = gpu("masks_scales_and_strided_operands") else { return };
    let mut draw = Draw::new(52);
    let sizes = [2, 4, 2, 12, 30, 32, 32];
    let [q, k, v] = operands(&mut draw, DType::Float32, sizes);
    // a [sq, sk] mask broadcast over batch and heads, with -inf entries, and one row all -inf
    let mut m = draw.uniform(12 * 30, -2.0, 2.0);
    for j in (0..12 * 30).step_by(4) {
        m[j] = f64::NEG_INFINITY;
    }
    m[5 * 30..6 * 30].iter_mut().for_each(|e| *e = f64::NEG_INFINITY);
    let mask = host(&m, &[12, 30], DType::Float32);
    let a = attrs(false, Some(0.3));
    let got = on_gpu(device, &a, &[&q, &k, &v, &mask]);
    let want = reference(&q, &k, &v, Some(&mask), false, 0.3);
    assert_close("sdpa with a broadcast mask and a scale", &got, &want, 2e-5);
    for batch_head in 0..8 {
        let row = &got[(batch_head * 12 + 5) * 32..][..32];
        assert!(row.iter().all(|&x| x == 0.0), "a row masked everywhere is zeros");
    }
    // q, k, v stored [b, s, h, d] and viewed [b, h, s, d] on the device
    let stored = |t: &Tensor| t.permute(&[0, 2, 1, 3]).unwrap().contiguous().unwrap();
    let view = |t: &Tensor| t.to(device).unwrap().permute(&[0, 2, 1, 3]).unwrap();
    let views = [view(&stored(&q)), view(&stored(&k)), view(&stored(&v))];
    assert!(!views[0].is_contiguous());
    let a = attrs(true, None);
    let out = ops::call("sdpa", &a, &views.iter().collect::<Vec<_>>()).unwrap().remove(0);
    let want = reference(&q, &k, &v, None, true, 1.0 / 32f64.sqrt());
    assert_close("sdpa of strided q, k, v", &values(&out), &want, 2e-5);
}

#[test]
fn decode_splits_long_caches_and_combines_them_deterministically() {
    let Some(device) = gpu("decode_splits_long_caches_and_combines_them_deterministically") else { return };
    let mut draw = Draw::new(53);
    // one query row over 1000 keys (4 splits), grouped heads; values past one slice
    for (sizes, masked) in [([2, 8, 2, 1, 1000, 128, 128], true), ([1, 2, 1, 1, 600, 64, 300], false)] {
        for dtype in FLOATS {
            let [q, k, v] = operands(&mut draw, dtype, sizes);
            let (b, sk) = (sizes[0], sizes[4]);
            // a per-batch mask over the keys: the first 300 keys of batch 0 hidden
            let mut m = draw.uniform((b * sk) as usize, -1.0, 1.0);
            m[..300].iter_mut().for_each(|e| *e = f64::NEG_INFINITY);
            let mask = host(&m, &[b, 1, 1, sk], dtype);
            let mut inputs = vec![&q, &k, &v];
            if masked {
                inputs.push(&mask);
            }
            let a = attrs(true, None);
            let got = on_gpu(device, &a, &inputs);
            let scale = 1.0 / (sizes[5] as f64).sqrt();
            let want = reference(&q, &k, &v, masked.then_some(&mask), true, scale);
            let what = format!("decode {dtype} {sizes:?}");
            assert_close(&format!("{what} vs definition"), &got, &want, 2.0 * tolerance(dtype));
            let cpu = values(&ops::call("sdpa", &a, &inputs).unwrap()[0]);
            assert_close(&format!("{what} vs cpu"), &got, &cpu, 2.0 * tolerance(dtype));
            let again = on_gpu(device, &a, &inputs);
            assert!(got.iter().zip(&again).all(|(x, y)| x.to_bits() == y.to_bits()), "{what}: runs differ");
        }
    }
    // no key at all: zeros, as on the CPU
    let [q, k, v] = operands(&mut draw, DType::Float16, [1, 2, 1, 3, 0, 8, 8]);
    assert_eq!(on_gpu(device, &Attrs::new(), &[&q, &k, &v]), vec![0.0; 2 * 3 * 8]);
    // every key masked: zeros, as on the CPU
    let [q, k, v] = operands(&mut draw, DType::Float32, [1, 1, 1, 1, 700, 16, 16]);
    let mask = host(&vec![f64::NEG_INFINITY; 700], &[700], DType::Float32);
    assert!(on_gpu(device, &Attrs::new(), &[&q, &k, &v, &mask]).iter().all(|&x| x == 0.0));
}

#[test]
fn the_decode_workspace_is_declared_and_bad_heads_refused() {
    let meta = |shape: &[i64]| TensorMeta::new(DType::Bfloat16, shape);
    let kernel = launches().bind("sdpa", DType::Bfloat16, &Attrs::new()).unwrap();
    // 3 splits of 256 keys for 700 keys: (max, sum, 80 values) per split, batch and head
    let cost = kernel.declare(&[meta(&[1, 4, 1, 64]), meta(&[1, 1, 700, 64]), meta(&[1, 1, 700, 80])]).unwrap();
    assert_eq!(cost.workspace, 4 * 4 * 3 * (2 + 80));
    let cost = kernel.declare(&[meta(&[1, 4, 2, 64]), meta(&[1, 1, 700, 64]), meta(&[1, 1, 700, 80])]).unwrap();
    assert_eq!(cost.workspace, 0);
    let Some(device) = gpu("the_decode_workspace_is_declared_and_bad_heads_refused") else { return };
    let mut draw = Draw::new(54);
    let [q, k, v] = operands(&mut draw, DType::Float32, [1, 3, 2, 4, 4, 8, 8]);
    let moved: Vec<Tensor> = [q, k, v].iter().map(|t| t.to(device).unwrap()).collect();
    let err = ops::call("sdpa", &Attrs::new(), &moved.iter().collect::<Vec<_>>()).unwrap_err().to_string();
    assert!(err.starts_with("sdpa:") && err.contains("multiple of hk"), "{err}");
    // a launch whose workspace is smaller than the declaration is refused, not overrun
    let [q, k, v] = operands(&mut draw, DType::Bfloat16, [1, 4, 1, 1, 700, 64, 80]);
    let inputs: Vec<Tensor> = [q, k, v].iter().map(|t| t.to(device).unwrap()).collect();
    let out = Tensor::zeros_on(device, DType::Bfloat16, &[1, 4, 1, 80]).unwrap();
    let launch = Launch { inputs: &inputs, outputs: std::slice::from_ref(&out), workspace: Workspace::host(&mut []) };
    let err = kernel.launch(launch).unwrap_err().to_string();
    assert!(err.starts_with("sdpa: the launch's workspace holds 0 bytes"), "{err}");
}
