//! matmul_int4 on the GPU (the tensor-core path for float16 and bfloat16, the register path
//! for few rows of float32, the tiled path for more and for strided x) against the product
//! with the weight dequantized by the table's definition, in float64, and against the CPU
//! backend; skipped, saying so, where there is no CUDA device.

use super::common::*;
use nbxtensor::backend::cuda::launches;
use nbxtensor::facts::Group;
use nbxtensor::kernel::{Attrs, TensorMeta};
use nbxtensor::tensor::Tensor;
use nbxtensor::{ops, DType};

const FLOATS: [DType; 3] = [DType::Float32, DType::Float16, DType::Bfloat16];

/// `(bits, group)` of the table's int4-g128-asym layout.
fn layout() -> (usize, usize) {
    let packed = DType::Int4G128Asym.packed().unwrap();
    let Group::Elements(group) = packed.group else { panic!("a fixed group") };
    (packed.bits as usize, group as usize)
}

/// The packed weight of a random `[n, k]` float32 weight, packed by the CPU.
fn packed_weight(draw: &mut Draw, n: usize, k: usize) -> [Tensor; 3] {
    let w = host(&draw.uniform(n * k, -1.0, 1.0), &[n as i64, k as i64], DType::Float32);
    let mut parts = ops::call("pack_int4", &Attrs::new(), &[&w]).unwrap();
    [parts.remove(0), parts.remove(0), parts.remove(0)]
}

/// For each weight element: (code·scale, minimum), decoded from the packed bytes by the table's
/// layout (low bits first, a scale and a minimum per group of consecutive codes).
fn decoded(packed: &Tensor, scales: &Tensor, minima: &Tensor, k: usize) -> Vec<(f64, f64)> {
    let (bits, group) = layout();
    let (p, s, m) = (packed.to_vec::<u8>().unwrap(), values(scales), values(minima));
    let per_byte = 8 / bits;
    let n = p.len() * per_byte / k;
    let mut w = Vec::with_capacity(n * k);
    for r in 0..n {
        for i in 0..k {
            let byte = p[(r * k + i) / per_byte];
            let code = (byte >> ((i % per_byte) * bits)) & ((1u8 << bits) - 1);
            let g = r * (k / group) + i / group;
            w.push((f64::from(code) * s[g], m[g]));
        }
    }
    w
}

/// Asserts `got [m, n]` is x·Wᵀ: each element within `rtol` of the magnitude of its terms
/// (Σ |x|·(|code·scale| + |minimum|)) plus the output's own rounding.
fn assert_product(what: &str, got: &[f64], x: &[f64], w: &[(f64, f64)], n: usize, k: usize, dtype: DType) {
    let rows = x.len() / k;
    assert_eq!(got.len(), rows * n, "{what}: size");
    for r in 0..rows {
        for c in 0..n {
            let terms = (0..k).map(|i| (x[r * k + i], w[c * k + i]));
            let want: f64 = terms.clone().map(|(x, (cs, m))| x * (cs + m)).sum();
            let magnitude: f64 = terms.map(|(x, (cs, m))| x.abs() * (cs.abs() + m.abs())).sum();
            let bound = 2e-5 * magnitude + tolerance(dtype) * want.abs();
            let g = got[r * n + c];
            assert!((g - want).abs() <= bound, "{what}: ({r}, {c}): got {g}, want {want}");
        }
    }
}

#[test]
fn products_match_the_dequantized_weight_and_the_cpu() {
    let Some(device) = gpu("products_match_the_dequantized_weight_and_the_cpu") else { return };
    let mut draw = Draw::new(61);
    let (_, group) = layout();
    // float32 x: 1 row (the one-row register path), 3 and 16 (8 rows at a time), 17 and more
    // (tiled); float16 and bfloat16 on the tensor cores: blocks of 8 rows up to 8 rows, of 16 up
    // to 16 (16 warps a block where the blocks are few, 8 where 12000 columns make them many),
    // 64-row tiles past, the depth split among the warps unevenly (37 spans), columns past a
    // block's 32
    let cases = [
        (1, 12000, group),
        (12, 12000, 2 * group),
        (1, 70, 3 * group),
        (3, 5, group),
        (16, 33, 2 * group),
        (17, 70, group),
        (100, 65, 3 * group),
        (1, 9, 37 * group),
        (9, 72, 37 * group),
        (64, 40, 16 * group),
        (130, 33, 5 * group),
    ];
    for (rows, n, k) in cases {
        let [packed, scales, minima] = packed_weight(&mut draw, n, k);
        let w = decoded(&packed, &scales, &minima, k);
        for dtype in FLOATS {
            let x = host(&draw.uniform(rows * k, -1.0, 1.0), &[rows as i64, k as i64], dtype);
            let inputs = [&x, &packed, &scales, &minima];
            let moved: Vec<Tensor> = inputs.iter().map(|t| t.to(device).unwrap()).collect();
            let out = ops::call("matmul_int4", &Attrs::new(), &moved.iter().collect::<Vec<_>>()).unwrap().remove(0);
            assert_eq!((out.dtype(), out.shape()), (dtype, &[rows as i64, n as i64][..]));
            let got = values(&out);
            let what = format!("matmul_int4 {dtype} [{rows}, {k}] x [{n}, {k}]");
            assert_product(&what, &got, &values(&x), &w, n, k, dtype);
            let cpu = values(&ops::call("matmul_int4", &Attrs::new(), &inputs).unwrap()[0]);
            assert_close(&format!("{what} vs cpu"), &got, &cpu, 2.0 * tolerance(dtype));
        }
    }
}

#[test]
fn leading_dims_strided_x_and_bad_shapes() {
    let Some(device) = gpu("leading_dims_strided_x_and_bad_shapes") else { return };
    let mut draw = Draw::new(62);
    let (_, group) = layout();
    let (n, k) = (40, 2 * group);
    let [packed, scales, minima] = packed_weight(&mut draw, n, k);
    let w = decoded(&packed, &scales, &minima, k);
    let weights: Vec<Tensor> = [&packed, &scales, &minima].iter().map(|t| t.to(device).unwrap()).collect();
    // x [2, 3, K] (6 rows of float16: the tensor cores) and x stored [K, 5] viewed [5, K] (tiled path)
    let x = host(&draw.uniform(6 * k, -1.0, 1.0), &[2, 3, k as i64], DType::Float16);
    let stored = host(&draw.uniform(5 * k, -1.0, 1.0), &[k as i64, 5], DType::Float32);
    let view = stored.to(device).unwrap().permute(&[1, 0]).unwrap();
    assert!(!view.is_contiguous());
    for (x_gpu, x_values, dtype) in [
        (x.to(device).unwrap(), values(&x), DType::Float16),
        (view, values(&stored.permute(&[1, 0]).unwrap()), DType::Float32),
    ] {
        let out = ops::call("matmul_int4", &Attrs::new(), &[&x_gpu, &weights[0], &weights[1], &weights[2]]).unwrap();
        let expected_shape: Vec<i64> = x_gpu.shape()[..x_gpu.ndim() - 1].iter().copied().chain([n as i64]).collect();
        assert_eq!(out[0].shape(), &expected_shape[..]);
        assert_product(&format!("matmul_int4 of {:?}", x_gpu.shape()), &values(&out[0]), &x_values, &w, n, k, dtype);
    }
    // a K that does not match the weight is refused by name
    let short = host(&draw.uniform(3 * group, -1.0, 1.0), &[3, group as i64], DType::Float16).to(device).unwrap();
    let err = ops::call("matmul_int4", &Attrs::new(), &[&short, &weights[0], &weights[1], &weights[2]]).unwrap_err();
    assert!(err.to_string().starts_with("matmul_int4:"), "{err}");
}

#[test]
fn the_device_declares_no_workspace() {
    // the CPU declares scratch for x widened (and W dequantized past a few rows); the GPU none
    let (bits, group) = layout();
    let k = 2 * group as i64;
    let meta = |dtype: DType, shape: &[i64]| TensorMeta::new(dtype, shape);
    let kernel = launches().bind("matmul_int4", DType::Float16, &Attrs::new()).unwrap();
    for rows in [1, 100] {
        let inputs = [
            meta(DType::Float16, &[rows, k]),
            meta(DType::Uint8, &[40, k * bits as i64 / 8]),
            meta(DType::Float16, &[40, k / group as i64]),
            meta(DType::Float16, &[40, k / group as i64]),
        ];
        assert_eq!(kernel.declare(&inputs).unwrap().workspace, 0, "{rows} rows");
    }
}
