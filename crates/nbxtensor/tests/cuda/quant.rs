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
    // block's 32; on Hopper 64 × 128 warpgroup blocks past 16 rows, the depth cut into parts
    // (unevenly at 37 and 9 spans), columns past a block's 128
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
        (64, 300, 32 * group),
        (200, 129, 9 * group),
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
fn the_device_declares_workspace_for_the_warpgroup_parts_sums_alone() {
    // the many-rows path keeps the float32 sums of the warpgroup kernel's largest part count
    // (64 × 128 a block and part); the few-rows path and float32 x need none
    let (bits, group) = layout();
    let k = 2 * group as i64;
    let meta = |dtype: DType, shape: &[i64]| TensorMeta::new(dtype, shape);
    for (dtype, rows, want) in [
        (DType::Float16, 1, 0),
        (DType::Float16, 16, 0),
        (DType::Float16, 100, 2 * 2 * 64 * 128 * 4), // 2 row blocks × 1 column block, 2 spans: 2 parts
        (DType::Bfloat16, 64, 2 * 64 * 128 * 4),
        (DType::Float32, 100, 0),
    ] {
        let kernel = launches().bind("matmul_int4", dtype, &Attrs::new()).unwrap();
        let inputs = [
            meta(dtype, &[rows, k]),
            meta(DType::Uint8, &[40, k * bits as i64 / 8]),
            meta(DType::Float16, &[40, k / group as i64]),
            meta(DType::Float16, &[40, k / group as i64]),
        ];
        assert_eq!(kernel.declare(&inputs).unwrap().workspace, want, "{dtype:?}, {rows} rows");
    }
}

/// Set in a child process's environment: the store it tunes in (the second child reads it).
const CHILD_STORE: &str = "NBX_INT4_TUNING_STORE";
/// Set in the second child's environment: the store holds every choice already.
const CHILD_SECOND: &str = "NBX_INT4_TUNING_SECOND";
const TUNING_TEST: &str = "quant::the_tensor_core_kernels_are_tuned_once_and_every_choice_matches";

#[test]
fn the_tensor_core_kernels_are_tuned_once_and_every_choice_matches() {
    use nbxtensor::settings::autotune::measurements;
    use nbxtensor::settings::autotune_store::{set_store, StoreSetting};
    use nbxtensor::settings::launch_observer::{set_launch_observer, KeyRecorder};
    let Some(device) = gpu("the_tensor_core_kernels_are_tuned_once_and_every_choice_matches") else { return };
    let Some(store) = std::env::var_os(CHILD_STORE).map(std::path::PathBuf::from) else {
        // the parent: two processes of this test alone (the measurement count is per process)
        let store = std::env::temp_dir().join(format!("nbx-int4-tuning-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&store);
        for second in [false, true] {
            let mut child = std::process::Command::new(std::env::current_exe().unwrap());
            child.args(["--exact", TUNING_TEST, "--nocapture", "--test-threads=1"]).env(CHILD_STORE, &store);
            if second {
                child.env(CHILD_SECOND, "1");
            }
            let out = child.output().unwrap();
            let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
            assert!(out.status.success() && said.contains("1 passed"), "child (second: {second}):\n{said}");
        }
        std::fs::remove_dir_all(&store).unwrap();
        return;
    };
    let second = std::env::var_os(CHILD_SECOND).is_some();
    set_store(StoreSetting::Path(store.clone()));
    let mut draw = Draw::new(63);
    let (_, group) = layout();
    // 300 columns (ragged past the blocks' 32), 5 spans of depth; 45 rows take the many-rows
    // kernel (3 of a block's 16-row tiles, the last ragged), 12 the few-rows one (a 16-row block)
    let (n, k) = (300, 5 * group);
    let [packed, scales, minima] = packed_weight(&mut draw, n, k);
    let w = decoded(&packed, &scales, &minima, k);
    let weights: Vec<Tensor> = [&packed, &scales, &minima].iter().map(|t| t.to(device).unwrap()).collect();
    // on Hopper the warpgroup kernel's parts are candidates of the many-rows call beside its warps
    let arch = nbxtensor::backend::cuda::memory::driver().unwrap().devices[0].arch();
    let hopper = arch == "sm_90";
    let mut calls = Vec::new();
    for (rows, kernel) in [(45, "quant_mma_bf16_m4"), (12, "quant_few_bf16_r16")] {
        let x = host(&draw.uniform(rows * k, -1.0, 1.0), &[rows as i64, k as i64], DType::Bfloat16);
        calls.push((x.to(device).unwrap(), x, kernel));
    }
    let dry_run = |x_gpu: &Tensor| {
        let recorder = std::sync::Arc::new(KeyRecorder::default());
        set_launch_observer(Some(recorder.clone()));
        ops::call("matmul_int4", &Attrs::new(), &[x_gpu, &weights[0], &weights[1], &weights[2]]).unwrap();
        set_launch_observer(None);
        let launches = recorder.launches();
        assert_eq!(launches.len(), 1, "{launches:?}");
        launches[0].clone()
    };
    let product = |what: &str, x_gpu: &Tensor, x: &Tensor| {
        let out = ops::call("matmul_int4", &Attrs::new(), &[x_gpu, &weights[0], &weights[1], &weights[2]]).unwrap();
        assert_product(what, &values(&out[0]), &values(x), &w, n, k, DType::Bfloat16);
    };
    for (x_gpu, x, kernel) in &calls {
        let before = measurements();
        let (tuned, key) = dry_run(x_gpu);
        assert!(key.contains(kernel) && key.contains(&format!("n{n} k{k}")), "{key}");
        assert_eq!(measurements(), before, "a dry run measures nothing");
        assert_eq!(tuned, second, "proven only once the first process measured it: {key}");
        product(&format!("{kernel}, the first call"), x_gpu, x);
        assert_eq!(dry_run(x_gpu), (true, key.clone()), "proven after the first call");
        product(&format!("{kernel}, the second call"), x_gpu, x);
    }
    let int4_measured = measurements();
    // a bfloat16 matmul on cuBLASLt large enough to be tuned (2·2048³ flops): the heuristic's
    // algorithms measured once; sampled elements against float64
    let before = measurements();
    let side = 2048usize;
    let (a, b) = (
        host(&draw.uniform(side * side, -1.0, 1.0), &[side as i64, side as i64], DType::Bfloat16),
        host(&draw.uniform(side * side, -1.0, 1.0), &[side as i64, side as i64], DType::Bfloat16),
    );
    let (a_values, b_values) = (values(&a), values(&b));
    let (a_gpu, b_gpu) = (a.to(device).unwrap(), b.to(device).unwrap());
    for _ in 0..2 {
        let got = values(&ops::call("matmul", &Attrs::new(), &[&a_gpu, &b_gpu]).unwrap()[0]);
        for sample in 0..64 {
            let (r, c) = ((sample * 977) % side, (sample * 613 + 5) % side);
            let terms = (0..side).map(|i| (a_values[r * side + i], b_values[i * side + c]));
            let want: f64 = terms.clone().map(|(x, y)| x * y).sum();
            let magnitude: f64 = terms.map(|(x, y)| (x * y).abs()).sum();
            let g = got[r * side + c];
            let bound = 2e-5 * magnitude + tolerance(DType::Bfloat16) * want.abs();
            assert!((g - want).abs() <= bound, "matmul bf16 {side}³ ({r}, {c}): got {g}, want {want}");
        }
    }
    let matmul_measured = measurements() - before;
    if second {
        assert_eq!(measurements(), 0, "the second process found the choices in the store");
        return;
    }
    // the first process measured each candidate of each kernel once; each candidate, proven in a
    // store of its own (the first's file with that choice), gives the product
    assert_eq!(measurements(), int4_measured + matmul_measured);
    let files: Vec<_> = std::fs::read_dir(store.join("autotune")).unwrap().map(|e| e.unwrap().path()).collect();
    let file = files.iter().find(|p| p.extension().is_some_and(|e| e == "json")).unwrap();
    assert_eq!(files.iter().filter(|p| p.extension().is_some_and(|e| e == "json")).count(), 1, "one file a device");
    let stored: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
    let entries = stored["entries"].as_object().unwrap();
    // cuBLASLt's entry (its heuristic proposes several algorithms at this size)
    let cublaslt: Vec<_> = entries.iter().filter(|(name, _)| name.starts_with("cublaslt_bf16")).collect();
    let [(_, entry)] = cublaslt.as_slice() else { panic!("one matmul shape, {} entries", cublaslt.len()) };
    assert!(matmul_measured > 1);
    assert_eq!(entry["measured"].as_array().unwrap().len() as u64, matmul_measured);
    assert_eq!(entries.len(), 2 + cublaslt.len(), "{entries:?}");
    let mut measured_candidates = 0;
    for (x_gpu, x, kernel) in &calls {
        let (name, entry) = entries.iter().find(|(name, _)| name.contains(kernel)).unwrap();
        let candidates: Vec<&str> =
            entry["measured"].as_array().unwrap().iter().map(|m| m["candidate"].as_str().unwrap()).collect();
        assert!(candidates.len() >= 2, "{candidates:?}");
        let parts = candidates.iter().filter(|c| c.starts_with('c')).count();
        let want_parts = if hopper && *kernel == "quant_mma_bf16_m4" { 3 } else { 0 };
        assert_eq!(parts, want_parts, "5 spans: the warpgroup kernel in 1, 2 or 4 parts: {candidates:?}");
        measured_candidates += candidates.len() as u64;
        for candidate in candidates {
            let mut pinned = stored.clone();
            pinned["entries"][name]["choice"] = serde_json::Value::String(candidate.to_string());
            let dir = store.join(format!("pinned-{kernel}-{candidate}"));
            std::fs::create_dir_all(dir.join("autotune")).unwrap();
            std::fs::write(dir.join("autotune").join(file.file_name().unwrap()), pinned.to_string()).unwrap();
            set_store(StoreSetting::Path(dir));
            product(&format!("{kernel} with {candidate}"), x_gpu, x);
        }
    }
    assert_eq!(measured_candidates, int4_measured, "each int4 candidate measured once");
    assert_eq!(measurements(), int4_measured + matmul_measured, "pinned choices are not measured");
    set_store(StoreSetting::Default);
}
