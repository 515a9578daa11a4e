//! sdpa on float16 and bfloat16 through cuDNN's fused attention against attention computed by
//! its definition in float64: full, causal (bottom-right, ragged lengths), grouped heads,
//! additive masks, batch > 1, head dims 64 and 128; a captured replay equal to the eager run.
//! Skipped, saying so, where there is no CUDA device.
//!
//! Tolerance: the fused kernel rounds its probabilities to the inputs' dtype before they weigh
//! the values (each weight off by up to eps, the weights summing to 1: up to eps·max|v|), and
//! rounds the output (eps/2·|out|); float32 scores and sums add far less. Each element is held
//! to 2·eps·max|v| + eps·|want|.

use super::attention::{operands, reference};
use super::common::*;
use nbxtensor::kernel::{AttrValue, Attrs};
use nbxtensor::memory::Device;
use nbxtensor::program::{self, Executable, ProgramError};
use nbxtensor::tensor::Tensor;
use nbxtensor::{ops, DType};

const HALVES: [DType; 2] = [DType::Float16, DType::Bfloat16];

/// The unit roundoff of a half dtype.
fn eps(dtype: DType) -> f64 {
    if dtype == DType::Float16 {
        2f64.powi(-11)
    } else {
        2f64.powi(-8)
    }
}

fn assert_fused_close(what: &str, dtype: DType, got: &[f64], want: &[f64], max_v: f64) {
    assert_eq!(got.len(), want.len(), "{what}: lengths differ");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let bound = 2.0 * eps(dtype) * max_v + eps(dtype) * w.abs();
        assert!((g - w).abs() <= bound, "{what}: element {i}: got {g}, want {w} (bound {bound})");
    }
}

fn attrs(causal: bool) -> Attrs {
    Attrs::new().with("causal", AttrValue::Bool(causal))
}

fn on_gpu(device: Device, attrs: &Attrs, inputs: &[&Tensor]) -> Tensor {
    let moved: Vec<Tensor> = inputs.iter().map(|t| t.to(device).unwrap()).collect();
    ops::call("sdpa", attrs, &moved.iter().collect::<Vec<_>>()).unwrap_or_else(|e| panic!("sdpa: {e}")).remove(0)
}

#[test]
fn fused_attention_matches_the_definition() {
    let Some(device) = gpu("fused_attention_matches_the_definition") else { return };
    let mut draw = Draw::new(61);
    // [b, hq, hk, sq, sk, d, dv], causal: full and causal squares; grouped heads with more keys
    // than queries under the bottom-right mask, lengths off every tile; batch 2; one row
    let cases: [([i64; 7], bool); 6] = [
        ([1, 4, 4, 128, 128, 64, 64], false),
        ([1, 4, 4, 128, 128, 128, 128], true),
        ([2, 8, 2, 100, 300, 128, 128], true),
        ([2, 4, 1, 77, 77, 64, 64], false),
        ([1, 2, 2, 33, 1000, 64, 64], true),
        ([3, 2, 1, 1, 200, 128, 128], false),
    ];
    for (sizes, causal) in cases {
        for dtype in HALVES {
            let [q, k, v] = operands(&mut draw, dtype, sizes);
            let got = values(&on_gpu(device, &attrs(causal), &[&q, &k, &v]));
            let want = reference(&q, &k, &v, None, causal, 1.0 / (sizes[5] as f64).sqrt());
            assert_fused_close(&format!("sdpa {dtype} {sizes:?} causal={causal}"), dtype, &got, &want, 1.0);
        }
    }
}

#[test]
fn fused_attention_adds_masks_and_scales() {
    let Some(device) = gpu("fused_attention_adds_masks_and_scales") else { return };
    let mut draw = Draw::new(62);
    let (b, hq, sq, sk) = (2i64, 4i64, 50i64, 70i64);
    for dtype in HALVES {
        let [q, k, v] = operands(&mut draw, dtype, [b, hq, 2, sq, sk, 64, 64]);
        // per batch, a row of scores over every key (broadcast over heads), and one for all
        let per_batch = host(&draw.uniform((b * sq * sk) as usize, -2.0, 2.0), &[b, 1, sq, sk], dtype);
        let shared = host(&draw.uniform((sq * sk) as usize, -2.0, 2.0), &[sq, sk], dtype);
        for mask in [&per_batch, &shared] {
            let a = Attrs::new().with("scale", AttrValue::Float(0.3));
            let got = values(&on_gpu(device, &a, &[&q, &k, &v, mask]));
            let want = reference(&q, &k, &v, Some(mask), false, 0.3);
            assert_fused_close(&format!("sdpa {dtype} mask {:?}", mask.shape()), dtype, &got, &want, 1.0);
        }
        // a mask with the causal one, queries and keys the same length
        let [q, k, v] = operands(&mut draw, dtype, [b, hq, 2, sq, sq, 64, 64]);
        let square = host(&draw.uniform((sq * sq) as usize, -2.0, 2.0), &[sq, sq], dtype);
        let got = values(&on_gpu(device, &attrs(true), &[&q, &k, &v, &square]));
        let want = reference(&q, &k, &v, Some(&square), true, 1.0 / 8.0);
        assert_fused_close(&format!("sdpa {dtype} causal with a mask"), dtype, &got, &want, 1.0);
    }
}

#[test]
fn fused_attention_replays_as_a_captured_graph() {
    let Some(device) = gpu("fused_attention_replays_as_a_captured_graph") else { return };
    let mut draw = Draw::new(63);
    let dtype = DType::Bfloat16;
    let [q, k, v] = operands(&mut draw, dtype, [1, 8, 2, 64, 96, 128, 128]);
    let (q, k, v) = (q.to(device).unwrap(), k.to(device).unwrap(), v.to(device).unwrap());
    let attend = |t: &[Tensor]| -> Result<Tensor, ProgramError> {
        Ok(ops::call("sdpa", &attrs(true), &[&t[0], &k, &v])?.remove(0))
    };
    let eager = attend(std::slice::from_ref(&q)).unwrap();
    let program = program::trace(std::slice::from_ref(&q), |t| Ok(vec![attend(t)?])).unwrap();
    let plan = program.plan().unwrap();
    let executable = Executable::new(program, plan).unwrap();
    let replay = executable.capture(&[&q]).unwrap();
    assert!(replay.graph().map(|g| g.nodes()).unwrap_or(0) >= 1, "cuDNN's kernel is a node of the graph");
    let [q2, _, _] = operands(&mut draw, dtype, [1, 8, 2, 64, 96, 128, 128]);
    let q2 = q2.to(device).unwrap();
    let replayed = replay.run(&[&q2]).unwrap().remove(0);
    let expected = attend(std::slice::from_ref(&q2)).unwrap();
    assert_eq!(replayed.to_bytes().unwrap(), expected.to_bytes().unwrap(), "the replay is byte-equal to eager");
    assert_eq!(replay.run(&[&q]).unwrap().remove(0).to_bytes().unwrap(), eager.to_bytes().unwrap());
}
