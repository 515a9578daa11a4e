//! A user's program written with the typed Rust API only (methods, weak scalars, promotion,
//! a policy, a trace): the values against float64 arithmetic written here, the dtypes as the
//! Array API promotes them, and the traced program equal to the eager run.

use nbxtensor::dtype::policy::Policy;
use nbxtensor::kernel::KernelError;
use nbxtensor::ops;
use nbxtensor::program::{self, Executable};
use nbxtensor::{DType, Tensor};

/// A two-layer perceptron with a residual and a softmax head, in f64 on the host.
fn reference(x: &[f32], w1: &[f32], w2: &[f32], rows: usize, width: usize) -> Vec<f64> {
    let mut out = Vec::with_capacity(rows * width);
    for r in 0..rows {
        let xr: Vec<f64> = x[r * width..(r + 1) * width].iter().map(|&v| f64::from(v)).collect();
        let dense = |w: &[f32], v: &[f64]| -> Vec<f64> {
            (0..width).map(|o| (0..width).map(|i| f64::from(w[o * width + i]) * v[i]).sum()).collect()
        };
        let hidden: Vec<f64> = dense(w1, &xr).iter().map(|&h| h.max(0.0)).collect();
        let y: Vec<f64> = dense(w2, &hidden).iter().zip(&xr).map(|(a, b)| (a + b) * 0.5).collect();
        let top = y.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let e: Vec<f64> = y.iter().map(|v| (v - top).exp()).collect();
        let total: f64 = e.iter().sum();
        out.extend(e.iter().map(|v| v / total));
    }
    out
}

fn values(seed: u32, n: usize) -> Vec<f32> {
    (0..n)
        .map(|i| (((i as u32).wrapping_mul(2_654_435_761).wrapping_add(seed) >> 8) as f32 / 16_777_216.0) - 0.5)
        .collect()
}

fn model(x: &Tensor, w1: &Tensor, w2: &Tensor) -> Result<Tensor, KernelError> {
    let hidden = x.linear(w1, None)?.relu()?;
    // `* 0.5` is a weak scalar: the float32 activations stay float32
    hidden.linear(w2, None)?.add(x)?.mul(0.5)?.softmax(-1)
}

#[test]
fn a_perceptron_in_methods_matches_float64_and_its_trace() {
    let (rows, width) = (3, 8);
    let (xs, w1s, w2s) = (values(1, rows * width), values(2, width * width), values(3, width * width));
    let x = Tensor::from_vec(xs.clone(), &[rows as i64, width as i64]).unwrap();
    let w1 = Tensor::from_vec(w1s.clone(), &[width as i64, width as i64]).unwrap();
    let w2 = Tensor::from_vec(w2s.clone(), &[width as i64, width as i64]).unwrap();

    let eager = model(&x, &w1, &w2).unwrap();
    assert_eq!((eager.dtype(), eager.shape()), (DType::Float32, &[rows as i64, width as i64][..]));
    let got = eager.to_vec::<f32>().unwrap();
    for (g, w) in got.iter().zip(reference(&xs, &w1s, &w2s, rows, width)) {
        assert!((f64::from(*g) - w).abs() <= 1e-6 * w.abs().max(1e-3), "{g} against {w}");
    }
    let row_sums = eager.sum(&[-1], false).unwrap().to_vec::<f32>().unwrap();
    assert!(row_sums.iter().all(|s| (s - 1.0).abs() < 1e-6), "{row_sums:?}");

    let traced = program::trace(&[x.clone()], |t| Ok(vec![model(&t[0], &w1, &w2)?])).unwrap();
    let plan = traced.plan().unwrap();
    let replayed = Executable::new(traced, plan).unwrap().run(&[&x]).unwrap().remove(0);
    assert_eq!(replayed.to_bytes().unwrap(), eager.to_bytes().unwrap(), "the trace computes the eager bytes");
}

#[test]
fn operands_promote_as_the_array_api_says_with_weak_scalars() {
    let i = Tensor::from_vec(vec![7i32, -7, 9], &[3]).unwrap();
    let f16 = i.cast(DType::Float16).unwrap();
    // int32 with a Python-style int scalar stays int32; floor division and remainder follow Python
    let q = i.floor_divide(2i64).unwrap();
    assert_eq!((q.dtype(), q.to_vec::<i32>().unwrap()), (DType::Int32, vec![3, -4, 4]));
    assert_eq!(i.remainder(-4i64).unwrap().to_vec::<i32>().unwrap(), vec![-1, -3, -3]);
    // a float scalar on an int tensor gives float64, as numpy does; on float16 it stays float16
    assert_eq!(i.mul(0.5).unwrap().dtype(), DType::Float64);
    assert_eq!(f16.mul(0.5).unwrap().dtype(), DType::Float16);
    // int32 with float16 tensors promotes across kinds to float16; with int64 to int64
    assert_eq!(i.add(&f16).unwrap().dtype(), DType::Float16);
    let wide = Tensor::from_vec(vec![1i64, 2, 3], &[3]).unwrap();
    assert_eq!(i.add(&wide).unwrap().to_vec::<i64>().unwrap(), vec![8, -5, 12]);
    // comparisons give bool, which selects
    let positive = i.gt(0i64).unwrap();
    assert_eq!(positive.dtype(), DType::Bool);
    let picked = positive.if_else(&i, 0i64).unwrap();
    assert_eq!(picked.to_vec::<i32>().unwrap(), vec![7, 0, 9]);
    // a bad operand is refused by name, never coerced
    let err = i.bitwise_and(0.5).unwrap_err().to_string();
    assert!(err.contains("bitwise_and"), "{err}");
}

#[test]
fn a_policy_sets_the_dtype_each_call_computes_in() {
    let x = Tensor::from_vec(values(4, 12), &[3, 4]).unwrap();
    let w = Tensor::from_vec(values(5, 16), &[4, 4]).unwrap();
    let policy = Policy::parse("params=float32,compute=bfloat16,output=float32").unwrap();
    let (dense, probabilities) = ops::with_policy(policy, || {
        let dense = x.linear(&w, None).unwrap();
        let p = dense.softmax(-1).unwrap();
        (dense, p)
    });
    assert_eq!(dense.dtype(), DType::Bfloat16, "linear computes in the policy's compute dtype");
    assert_eq!(probabilities.dtype(), DType::Float32, "softmax in float32 whatever the policy");
    // outside the closure no policy is in force
    assert_eq!(x.linear(&w, None).unwrap().dtype(), DType::Float32);
}

#[test]
fn a_fused_norm_computes_in_the_class_of_the_norm_it_ends_in() {
    // bfloat16 inputs under a bfloat16 policy: add_layer_norm in float32, as layer_norm is,
    // the same values as the float32 call; add_rms_norm (rms_norm is in no class) in bfloat16
    let policy = Policy::parse("bfloat16").unwrap();
    let bf16 = |t: Tensor| t.cast(DType::Bfloat16).unwrap();
    let (x, r) = (
        bf16(Tensor::from_vec(values(3, 8), &[2, 4]).unwrap()),
        bf16(Tensor::from_vec(values(6, 8), &[2, 4]).unwrap()),
    );
    let (g, b) =
        (bf16(Tensor::from_vec(values(1, 4), &[4]).unwrap()), bf16(Tensor::from_vec(values(2, 4), &[4]).unwrap()));
    let (fused, rms) = ops::with_policy(policy, || {
        (x.add_layer_norm(&r, &g, &b, 1e-5).unwrap(), x.add_rms_norm(&r, &g, 1e-6).unwrap())
    });
    let f32 = |t: &Tensor| t.cast(DType::Float32).unwrap();
    let want = f32(&x).add_layer_norm(&f32(&r), &f32(&g), &f32(&b), 1e-5).unwrap();
    for (got, want) in [(&fused.0, &want.0), (&fused.1, &want.1)] {
        assert_eq!(got.dtype(), DType::Float32);
        assert_eq!(got.to_vec::<f32>().unwrap(), want.to_vec::<f32>().unwrap());
    }
    assert_eq!((rms.0.dtype(), rms.1.dtype()), (DType::Bfloat16, DType::Bfloat16));
}
