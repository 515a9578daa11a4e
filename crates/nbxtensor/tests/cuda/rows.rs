//! The row-wise GPU kernels (reductions, softmax, layer_norm and rms_norm, rope) against the
//! CPU backend and float64 references; skipped, saying so, where there is no CUDA device.

use super::common::*;
use nbxtensor::kernel::{AttrValue, Attrs};
use nbxtensor::memory::Device;
use nbxtensor::tensor::Tensor;
use nbxtensor::{ops, DType};

const FLOATS: [DType; 3] = [DType::Float32, DType::Float16, DType::Bfloat16];

fn axes(list: &[i64]) -> Attrs {
    Attrs::new().with("axes", AttrValue::Ints(list.to_vec()))
}

fn axis(a: i64) -> Attrs {
    Attrs::new().with("axis", AttrValue::Int(a))
}

/// Output 0 of `op` on tensors already on their device.
fn call(op: &str, attrs: &Attrs, inputs: &[&Tensor]) -> Tensor {
    ops::call(op, attrs, inputs).unwrap_or_else(|e| panic!("{op}: {e}")).remove(0)
}

/// Asserts `got` is within `rtol` of `want` (as `assert_close`), infinities matching exactly.
fn assert_close_or_infinite(what: &str, got: &[f64], want: &[f64], rtol: f64) {
    assert_eq!(got.len(), want.len(), "{what}: lengths differ");
    let finite = |values: &[f64]| values.iter().map(|v| if v.is_infinite() { 0.0 } else { *v }).collect::<Vec<_>>();
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert_eq!(g.is_infinite(), w.is_infinite(), "{what}: element {i}: got {g}, want {w}");
        assert!(!g.is_infinite() || g == w, "{what}: element {i}: got {g}, want {w}");
    }
    assert_close(what, &finite(got), &finite(want), rtol);
}

/// Asserts two value lists are identical (NaN equal to NaN).
fn assert_same(what: &str, got: &[f64], want: &[f64]) {
    assert_eq!(got.len(), want.len(), "{what}: lengths differ");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(g == w || (g.is_nan() && w.is_nan()), "{what}: element {i}: got {g}, want {w}");
    }
}

// ---- reductions

/// (shape, attributes) covering each loop: long rows (a block per output), short rows (a
/// warp per output), a middle axis (columns), split axes (the general odometer), every axis,
/// and few outputs of many elements (two passes through the workspace), along rows and columns.
fn reduction_cases(argmax: bool) -> Vec<(Vec<i64>, Attrs)> {
    let keep = |a: Attrs| a.with("keepdim", AttrValue::Bool(true));
    if argmax {
        return vec![
            (vec![37, 1500], axis(-1)),
            (vec![9, 70], keep(axis(1))),
            (vec![5, 300, 7], axis(1)),
            (vec![300, 3], axis(0)),
            (vec![2, 70000], axis(-1)),
            (vec![70000, 3], axis(0)),
        ];
    }
    vec![
        (vec![37, 1500], axes(&[-1])),
        (vec![9, 70], keep(axes(&[1]))),
        (vec![5, 300, 7], axes(&[1])),
        (vec![6, 4, 5], keep(axes(&[0, 2]))),
        (vec![3, 4, 50], Attrs::new()),
        (vec![3, 70000], axes(&[-1])),
        (vec![300, 2, 300], keep(axes(&[0, 2]))),
    ]
}

#[test]
fn float_reductions_match_the_cpu_and_float64() {
    let Some(device) = gpu("float_reductions_match_the_cpu_and_float64") else { return };
    let mut draw = Draw::new(11);
    for op in ["sum", "mean", "max", "min", "argmax"] {
        for (shape, attrs) in reduction_cases(op == "argmax") {
            for dtype in FLOATS {
                let n = shape.iter().product::<i64>() as usize;
                let x = host(&draw.uniform(n, -2.0, 2.0), &shape, dtype);
                let (gpu, cpu, reference) = run_three(device, op, &attrs, &[x]);
                let what = format!("{op} {dtype} {shape:?} {attrs:?}");
                if matches!(op, "sum" | "mean") {
                    assert_close(&format!("{what} vs float64"), &gpu, &reference, tolerance(dtype));
                    assert_close(&format!("{what} vs cpu"), &gpu, &cpu, tolerance(dtype));
                } else {
                    // no rounding: the same elements, the same first maximum
                    assert_same(&format!("{what} vs cpu"), &gpu, &cpu);
                    assert_same(&format!("{what} vs float64"), &gpu, &reference);
                }
            }
        }
    }
}

#[test]
fn integer_reductions_are_exact() {
    let Some(device) = gpu("integer_reductions_are_exact") else { return };
    let mut draw = Draw::new(12);
    let integers = [
        DType::Int8,
        DType::Int16,
        DType::Int32,
        DType::Int64,
        DType::Uint8,
        DType::Uint16,
        DType::Uint32,
        DType::Uint64,
    ];
    for dtype in integers {
        // values from a small range: argmax meets ties, and must take the first
        let low = if dtype.name().starts_with('u') { 0.0 } else { -60.0 };
        for op in ["sum", "max", "min", "argmax"] {
            for (shape, attrs) in reduction_cases(op == "argmax") {
                let n = shape.iter().product::<i64>() as usize;
                let values: Vec<f64> = draw.uniform(n, low, 60.0).into_iter().map(f64::floor).collect();
                let x = host(&values, &shape, dtype);
                let (gpu, cpu, _) = run_three(device, op, &attrs, &[x]);
                assert_same(&format!("{op} {dtype} {shape:?}"), &gpu, &cpu);
            }
        }
    }
    // the sum of int8 widens to int64 and wraps nothing; that of uint64 wraps modulo 2^64
    let x = Tensor::from_vec(vec![100i8; 1500], &[1500]).unwrap();
    let s = call("sum", &Attrs::new(), &[&x.to(device).unwrap()]).to(Device::CPU).unwrap();
    assert_eq!((s.dtype(), s.to_vec::<i64>().unwrap()), (DType::Int64, vec![150_000]));
    let x = Tensor::from_vec(vec![u64::MAX, 3, u64::MAX], &[3]).unwrap();
    let s = call("sum", &Attrs::new(), &[&x.to(device).unwrap()]).to(Device::CPU).unwrap();
    assert_eq!(s.to_vec::<u64>().unwrap(), vec![1]);
}

#[test]
fn prod_argmin_all_and_any_match_the_cpu() {
    let Some(device) = gpu("prod_argmin_all_and_any_match_the_cpu") else { return };
    let mut draw = Draw::new(14);
    let integers = [
        DType::Int8,
        DType::Int16,
        DType::Int32,
        DType::Int64,
        DType::Uint8,
        DType::Uint16,
        DType::Uint32,
        DType::Uint64,
    ];
    for (op, one_axis) in [("prod", false), ("argmin", true), ("all", false), ("any", false)] {
        for (shape, attrs) in reduction_cases(one_axis) {
            let n = shape.iter().product::<i64>() as usize;
            let what = |dtype: DType| format!("{op} {dtype} {shape:?} {attrs:?}");
            for dtype in FLOATS {
                let values: Vec<f64> = match op {
                    // products near 1 stay in every dtype's range
                    "prod" => draw.uniform(n, 0.999, 1.001),
                    // zeros often enough that all and any meet both answers
                    "all" | "any" => {
                        draw.uniform(n, 0.0, 1.0).into_iter().map(|v| if v < 0.02 { 0.0 } else { v }).collect()
                    }
                    _ => draw.uniform(n, -2.0, 2.0),
                };
                let x = host(&values, &shape, dtype);
                let (gpu, cpu, reference) = run_three(device, op, &attrs, &[x]);
                if op == "prod" {
                    assert_close(&format!("{} vs cpu", what(dtype)), &gpu, &cpu, tolerance(dtype));
                    assert_close(&format!("{} vs float64", what(dtype)), &gpu, &reference, tolerance(dtype));
                } else {
                    assert_same(&format!("{} vs cpu", what(dtype)), &gpu, &cpu);
                }
            }
            for dtype in integers {
                let low = if dtype.name().starts_with('u') { 0.0 } else { -3.0 };
                let values: Vec<f64> = draw.uniform(n, low, 3.0).into_iter().map(f64::floor).collect();
                let x = host(&values, &shape, dtype);
                // integer products wrap: compared as the CPU's wrapped 64-bit values
                let on_gpu = call(op, &attrs, &[&x.to(device).unwrap()]).to(Device::CPU).unwrap();
                let on_cpu = call(op, &attrs, &[&x]);
                assert_eq!(on_gpu.dtype(), on_cpu.dtype(), "{}", what(dtype));
                assert_eq!(on_gpu.to_bytes().unwrap(), on_cpu.to_bytes().unwrap(), "{}", what(dtype));
            }
            if op == "all" || op == "any" {
                let bytes: Vec<u8> = draw.uniform(n, 0.0, 1.0).into_iter().map(|v| u8::from(v > 0.01)).collect();
                let x = Tensor::from_vec(bytes, &shape).unwrap().view_dtype(DType::Bool).unwrap();
                let on_gpu = call(op, &attrs, &[&x.to(device).unwrap()]).to(Device::CPU).unwrap();
                assert_eq!(
                    on_gpu.to_bytes().unwrap(),
                    call(op, &attrs, &[&x]).to_bytes().unwrap(),
                    "{}",
                    what(DType::Bool)
                );
            }
        }
    }
    // NaN: argmin points at the first, all and any read it as true
    let mut v = draw.uniform(2 * 600, 1.0, 2.0);
    v[250] = f64::NAN;
    v[400] = f64::NAN;
    v[600 + 599] = -5.0;
    let g = host(&v, &[2, 600], DType::Float32).to(device).unwrap();
    assert_eq!(values(&call("argmin", &axis(1), &[&g])), vec![250.0, 599.0]);
    let truth = |op: &str, t: &Tensor| call(op, &axes(&[1]), &[t]).to(Device::CPU).unwrap().to_bytes().unwrap();
    assert_eq!(truth("all", &g), vec![1, 1]);
    let zeros = Tensor::zeros_on(device, DType::Float16, &[3, 5]).unwrap();
    assert_eq!(truth("any", &zeros), vec![0, 0, 0]);
    let empty = Tensor::zeros_on(device, DType::Int32, &[2, 0]).unwrap();
    assert_eq!((truth("all", &empty), truth("any", &empty)), (vec![1, 1], vec![0, 0]));
    assert_eq!(values(&call("prod", &axes(&[1]), &[&empty])), vec![1.0, 1.0]);
}

#[test]
fn long_reductions_declare_their_partials() {
    use nbxtensor::backend::cuda::launches;
    use nbxtensor::kernel::TensorMeta;
    let meta = |shape: &[i64]| [TensorMeta::new(DType::Float32, shape)];
    let sum = launches().bind("sum", DType::Float32, &Attrs::new()).unwrap();
    // 2^20 elements into one output: 64 partials of 2^14 elements, 16 bytes each
    assert_eq!(sum.declare(&meta(&[1024, 1024])).unwrap().workspace, 16 * 64);
    // 1024 outputs, or short rows: one pass, no workspace
    let rows = launches().bind("sum", DType::Float32, &axes(&[1])).unwrap();
    assert_eq!(rows.declare(&meta(&[1024, 1 << 16])).unwrap().workspace, 0);
    assert_eq!(rows.declare(&meta(&[4, 1000])).unwrap().workspace, 0);
    let argmax = launches().bind("argmax", DType::Int8, &axis(0)).unwrap();
    assert_eq!(argmax.declare(&[TensorMeta::new(DType::Int8, &[1 << 17, 3])]).unwrap().workspace, 16 * 3 * 8);
}

#[test]
fn reductions_read_strided_views_and_handle_edges() {
    let Some(device) = gpu("reductions_read_strided_views_and_handle_edges") else { return };
    let mut draw = Draw::new(13);
    let x = host(&draw.uniform(6 * 8 * 50, -3.0, 3.0), &[6, 8, 50], DType::Float32);
    let view = |t: &Tensor| t.permute(&[2, 0, 1]).unwrap().narrow(0, 5, 40).unwrap();
    let on_gpu = view(&x.to(device).unwrap());
    assert!(!on_gpu.is_contiguous());
    for (op, attrs) in [("sum", axes(&[0])), ("max", axes(&[1, 2])), ("mean", axes(&[2])), ("argmax", axis(0))] {
        let got = values(&call(op, &attrs, &[&on_gpu]));
        let want = values(&call(op, &attrs, &[&view(&x)]));
        assert_close(&format!("{op} of a permuted, narrowed view"), &got, &want, 2e-5);
    }
    // NaN: max propagates it, argmax points at the first
    let mut v = draw.uniform(2 * 600, -1.0, 1.0);
    v[250] = f64::NAN;
    v[400] = f64::NAN;
    v[600 + 599] = 5.0;
    let x = host(&v, &[2, 600], DType::Float32);
    let g = x.to(device).unwrap();
    let max = values(&call("max", &axes(&[1]), &[&g]));
    assert!(max[0].is_nan() && max[1] == 5.0, "{max:?}");
    assert_eq!(values(&call("argmax", &axis(1), &[&g])), vec![250.0, 599.0]);
    // an empty reduced axis: sum 0, mean NaN (as the CPU); max refused by name
    let empty = Tensor::zeros_on(device, DType::Float32, &[3, 0]).unwrap();
    assert_eq!(values(&call("sum", &axes(&[1]), &[&empty])), vec![0.0; 3]);
    assert!(values(&call("mean", &axes(&[1]), &[&empty])).iter().all(|v| v.is_nan()));
    let err = ops::call("max", &axes(&[1]), &[&empty]).unwrap_err().to_string();
    assert!(err.starts_with("max:"), "{err}");
    assert_eq!(call("sum", &axes(&[0]), &[&empty]).shape(), &[0]);
    // no axis reduced: every element is its own output
    let x = host(&draw.uniform(12, -1.0, 1.0), &[3, 4], DType::Float16);
    for op in ["sum", "mean", "max", "min"] {
        assert_same(
            &format!("{op} over no axis"),
            &values(&call(op, &axes(&[]), &[&x.to(device).unwrap()])),
            &values(&x),
        );
    }
    // one element, and a bad axis named by the op
    let one = host(&[0.75], &[1, 1], DType::Bfloat16).to(device).unwrap();
    assert_eq!(values(&call("sum", &Attrs::new(), &[&one])), vec![0.75]);
    let err = ops::call("argmax", &axis(2), &[&one]).unwrap_err().to_string();
    assert!(err.starts_with("argmax:") && err.contains("out of range"), "{err}");
}

// ---- softmax

/// Row lengths that take each split of the one-pass row kernels on each dtype: 1, 2, 4 and 8
/// chunks a thread, of 16 bytes (lengths whose bytes are a multiple of 16) or of one element.
const ROW_LENGTHS: [i64; 9] = [7, 45, 64, 99, 200, 400, 800, 1001, 4096];

#[test]
fn softmax_matches_the_cpu_and_float64() {
    let Some(device) = gpu("softmax_matches_the_cpu_and_float64") else { return };
    let mut draw = Draw::new(21);
    // (shape, axis): one-pass rows of every split (lengths 7 to 4096: 1 to 8 chunks a thread,
    // 16-byte or single-element chunks, a warp or a block a row), rows too long for registers,
    // an outer axis (few rows: two passes; many: a thread per row) and a middle axis of short
    // extent
    let mut cases: Vec<(Vec<i64>, i64)> = ROW_LENGTHS.iter().map(|&n| (vec![3, n], -1)).collect();
    cases.extend([
        (vec![2, 1], -1),
        (vec![2, 40000], -1),
        (vec![300, 70], 0),
        (vec![20, 1100], 0),
        (vec![4, 9, 3], 1),
        (vec![2, 3000, 5], 1),
    ]);
    for op in ["softmax", "log_softmax"] {
        for (shape, a) in &cases {
            let (shape, a) = (&shape[..], *a);
            for dtype in FLOATS {
                let n = shape.iter().product::<i64>() as usize;
                let x = host(&draw.uniform(n, -8.0, 8.0), shape, dtype);
                let (gpu, cpu, reference) = run_three(device, op, &axis(a), &[x]);
                let what = format!("{op} {dtype} {shape:?} axis {a}");
                // log_softmax values reach -16: an absolute error of the inputs' rounding
                assert_close(&format!("{what} vs float64"), &gpu, &reference, 2.0 * tolerance(dtype));
                assert_close(&format!("{what} vs cpu"), &gpu, &cpu, 2.0 * tolerance(dtype));
            }
        }
    }
}

#[test]
fn softmax_is_stable_and_agrees_on_infinities() {
    let Some(device) = gpu("softmax_is_stable_and_agrees_on_infinities") else { return };
    let mut draw = Draw::new(22);
    // large values: no overflow
    let x = host(&draw.uniform(4 * 512, 900.0, 1000.0), &[4, 512], DType::Float32);
    let (gpu, _, reference) = run_three(device, "softmax", &Attrs::new(), &[x]);
    assert_close("softmax of large values", &gpu, &reference, 2e-5);
    // masked entries (-inf) weigh nothing; a row of -inf only is NaN, as on the CPU
    let (rows, n) = (1100usize, 40usize);
    let mut v = draw.uniform(rows * (n + 1), -1.0, 1.0);
    for i in (0..rows * (n + 1)).step_by(3) {
        v[i] = f64::NEG_INFINITY;
    }
    v[(rows - 1) * (n + 1)..].iter_mut().for_each(|e| *e = f64::NEG_INFINITY);
    let wide = host(&v, &[rows as i64, n as i64 + 1], DType::Float32);
    let x = wide.narrow(1, 0, n as i64).unwrap().contiguous().unwrap();
    let on_gpu = x.to(device).unwrap();
    // the same rows through each kernel: one pass (contiguous), a thread per row (stored
    // transposed: neighbouring rows adjacent), two passes (rows apart in memory)
    let views = [
        on_gpu.clone(),
        on_gpu.permute(&[1, 0]).unwrap().contiguous().unwrap().permute(&[1, 0]).unwrap(),
        wide.to(device).unwrap().narrow(1, 0, n as i64).unwrap(),
    ];
    for (k, view) in views.iter().enumerate() {
        for op in ["softmax", "log_softmax"] {
            let got = values(&call(op, &Attrs::new(), &[view]));
            let want = values(&call(op, &Attrs::new(), &[&x]));
            assert_close_or_infinite(&format!("{op} with -inf entries, layout {k}"), &got, &want, 2e-5);
            assert!(got[(rows - 1) * n..].iter().all(|g| g.is_nan()), "{op}, layout {k}: a row of -inf only");
        }
    }
    // 16-bit rows of 4096 in registers: rows of numbers convert two values at a time; rows
    // holding a NaN, a +inf or only -inf are NaN, as on the CPU
    let n = 4096;
    let mut v = draw.uniform(5 * n, -6.0, 6.0);
    v[n + 17] = f64::NAN;
    v[2 * n + 4000] = f64::INFINITY;
    v[3 * n..4 * n].iter_mut().for_each(|e| *e = f64::NEG_INFINITY);
    v[4 * n..].iter_mut().step_by(2).for_each(|e| *e = f64::NEG_INFINITY);
    for dtype in [DType::Float16, DType::Bfloat16] {
        let x = host(&v, &[5, n as i64], dtype);
        for op in ["softmax", "log_softmax"] {
            let got = call(op, &Attrs::new(), &[&x.to(device).unwrap()]).to(Device::CPU).unwrap();
            let want = call(op, &Attrs::new(), &[&x]);
            let (g, w) = (values(&got), values(&want));
            let what = format!("{op} {dtype} rows of {n}");
            assert_close_or_infinite(&what, &g[..n], &w[..n], 2.0 * tolerance(dtype));
            assert_close_or_infinite(&what, &g[4 * n..], &w[4 * n..], 2.0 * tolerance(dtype));
            assert!(g[n..4 * n].iter().all(|e| e.is_nan()), "{what}: rows with a NaN, a +inf, only -inf");
        }
    }
}

#[test]
fn softmax_reads_strided_views_and_refuses_bad_axes() {
    let Some(device) = gpu("softmax_reads_strided_views_and_refuses_bad_axes") else { return };
    let mut draw = Draw::new(23);
    let x = host(&draw.uniform(40 * 70, -4.0, 4.0), &[40, 70], DType::Float16);
    let view = |t: &Tensor| t.permute(&[1, 0]).unwrap().narrow(1, 3, 30).unwrap();
    let on_gpu = view(&x.to(device).unwrap());
    for a in [0, 1] {
        let got = values(&call("softmax", &axis(a), &[&on_gpu]));
        let want = values(&call("softmax", &axis(a), &[&view(&x)]));
        assert_close(&format!("softmax axis {a} of a transposed view"), &got, &want, tolerance(DType::Float16));
    }
    let empty = Tensor::zeros_on(device, DType::Float32, &[0, 5]).unwrap();
    assert_eq!(call("softmax", &Attrs::new(), &[&empty]).shape(), &[0, 5]);
    let err = ops::call("log_softmax", &axis(2), &[&on_gpu]).unwrap_err().to_string();
    assert!(err.starts_with("log_softmax:") && err.contains("out of range"), "{err}");
}

// ---- layer_norm and rms_norm

#[test]
fn norms_match_the_cpu_and_float64() {
    let Some(device) = gpu("norms_match_the_cpu_and_float64") else { return };
    let mut draw = Draw::new(31);
    // one-pass rows of every split, one element, and rows too long for registers
    let mut shapes: Vec<Vec<i64>> = ROW_LENGTHS.iter().map(|&n| vec![2, n]).collect();
    shapes.extend([vec![3, 5, 96], vec![1, 1], vec![2, 40000]]);
    for op in ["layer_norm", "rms_norm"] {
        for shape in &shapes {
            let shape = &shape[..];
            for dtype in FLOATS {
                let n = *shape.last().unwrap();
                let count = shape.iter().product::<i64>() as usize;
                // an offset mean, so that layer_norm's centring matters
                let x = host(&draw.uniform(count, -1.0, 3.0), shape, dtype);
                let w = host(&draw.uniform(n as usize, 0.5, 1.5), &[n], dtype);
                let b = host(&draw.uniform(n as usize, -1.0, 1.0), &[n], dtype);
                let inputs = if op == "layer_norm" { vec![x, w, b] } else { vec![x, w] };
                let attrs = Attrs::new().with("eps", AttrValue::Float(1e-3));
                let (gpu, cpu, reference) = run_three(device, op, &attrs, &inputs);
                let what = format!("{op} {dtype} {shape:?}");
                assert_close(&format!("{what} vs float64"), &gpu, &reference, 2.0 * tolerance(dtype));
                assert_close(&format!("{what} vs cpu"), &gpu, &cpu, 2.0 * tolerance(dtype));
            }
        }
    }
}

#[test]
fn norms_read_strided_operands_and_refuse_bad_weights() {
    let Some(device) = gpu("norms_read_strided_operands_and_refuse_bad_weights") else { return };
    let mut draw = Draw::new(32);
    let n = 96;
    let x_view = |t: &Tensor| t.permute(&[1, 0]).unwrap();
    let w_view = |t: &Tensor| t.select(1, 0).unwrap();
    let b_view = |t: &Tensor| t.select(1, 1).unwrap();
    for dtype in [DType::Float32, DType::Bfloat16] {
        // x stored transposed; weight and bias every other element of a [n, 2] buffer
        let x = host(&draw.uniform(n * 10, -1.0, 3.0), &[n as i64, 10], dtype);
        let wb = host(&draw.uniform(n * 2, 0.5, 1.5), &[n as i64, 2], dtype);
        let (xg, wg) = (x.to(device).unwrap(), wb.to(device).unwrap());
        for op in ["layer_norm", "rms_norm"] {
            let (on_gpu, on_cpu) = if op == "layer_norm" {
                (vec![x_view(&xg), w_view(&wg), b_view(&wg)], vec![x_view(&x), w_view(&wb), b_view(&wb)])
            } else {
                (vec![x_view(&xg), w_view(&wg)], vec![x_view(&x), w_view(&wb)])
            };
            let got = values(&call(op, &Attrs::new(), &on_gpu.iter().collect::<Vec<_>>()));
            let want = values(&call(op, &Attrs::new(), &on_cpu.iter().collect::<Vec<_>>()));
            assert_close(&format!("{op} {dtype} of strided operands"), &got, &want, tolerance(dtype));
        }
        let short = wg.select(1, 0).unwrap().narrow(0, 0, 50).unwrap();
        let err = ops::call("rms_norm", &Attrs::new(), &[&x_view(&xg), &short]).unwrap_err().to_string();
        assert!(err.starts_with("rms_norm: weight has shape"), "{err}");
    }
}

// ---- rope

/// Rope by its definition, in float64, on the values of x, cos and sin.
fn rope_reference(x: &Tensor, cos: &Tensor, sin: &Tensor, interleaved: bool) -> Vec<f64> {
    let (xv, c, s) = (values(x), values(cos), values(sin));
    let shape = x.shape();
    let (seq, dim) = (shape[shape.len() - 2] as usize, shape[shape.len() - 1] as usize);
    let half = dim / 2;
    let mut out = xv.clone();
    for row in 0..xv.len() / dim.max(1) {
        let p = row % seq;
        for i in 0..half {
            let (a, b) = if interleaved { (2 * i, 2 * i + 1) } else { (i, i + half) };
            let (x1, x2) = (xv[row * dim + a], xv[row * dim + b]);
            out[row * dim + a] = x1 * c[p * half + i] - x2 * s[p * half + i];
            out[row * dim + b] = x2 * c[p * half + i] + x1 * s[p * half + i];
        }
    }
    out
}

fn angles(draw: &mut Draw, seq: usize, half: usize, dtype: DType) -> (Tensor, Tensor) {
    let theta = draw.uniform(seq * half, -3.2, 3.2);
    let shape = [seq as i64, half as i64];
    (
        host(&theta.iter().map(|t| t.cos()).collect::<Vec<_>>(), &shape, dtype),
        host(&theta.iter().map(|t| t.sin()).collect::<Vec<_>>(), &shape, dtype),
    )
}

#[test]
fn rope_matches_its_definition_and_the_cpu() {
    let Some(device) = gpu("rope_matches_its_definition_and_the_cpu") else { return };
    let mut draw = Draw::new(41);
    // head_dim 64 (16-byte paths) and 6 (a thread per pair); head_dim 128 over more units of
    // 16 bytes than the grid has threads (each thread takes two units a step)
    for (shape, seq) in [([2i64, 3, 5, 64], 5usize), ([1, 2, 7, 6], 7), ([5, 8, 1031, 128], 1031)] {
        let dim = shape[3] as usize;
        for dtype in FLOATS {
            for interleaved in [false, true] {
                let n = shape.iter().product::<i64>() as usize;
                let x = host(&draw.uniform(n, -2.0, 2.0), &shape, dtype);
                let (cos, sin) = angles(&mut draw, seq, dim / 2, dtype);
                let attrs = Attrs::new().with("interleaved", AttrValue::Bool(interleaved));
                let args = [x.to(device).unwrap(), cos.to(device).unwrap(), sin.to(device).unwrap()];
                let got = values(&call("rope", &attrs, &args.iter().collect::<Vec<_>>()));
                let want = values(&call("rope", &attrs, &[&x, &cos, &sin]));
                let what = format!("rope {dtype} {shape:?} interleaved={interleaved}");
                assert_close(
                    &format!("{what} vs definition"),
                    &got,
                    &rope_reference(&x, &cos, &sin, interleaved),
                    tolerance(dtype),
                );
                assert_close(&format!("{what} vs cpu"), &got, &want, tolerance(dtype));
            }
        }
    }
}

#[test]
fn rope_reads_strided_operands_and_refuses_bad_tables() {
    let Some(device) = gpu("rope_reads_strided_operands_and_refuses_bad_tables") else { return };
    let mut draw = Draw::new(42);
    let (seq, dim) = (6usize, 32usize);
    // x [2, seq, 4, dim] viewed as [2, 4, seq, dim]; cos and sin transposed [seq, dim/2]
    let x = host(&draw.uniform(2 * seq * 4 * dim, -1.0, 1.0), &[2, seq as i64, 4, dim as i64], DType::Float32);
    let (cos_t, sin_t) = angles(&mut draw, dim / 2, seq, DType::Float32);
    let x_view = |t: &Tensor| t.permute(&[0, 2, 1, 3]).unwrap();
    let t_view = |t: &Tensor| t.permute(&[1, 0]).unwrap();
    for interleaved in [false, true] {
        let attrs = Attrs::new().with("interleaved", AttrValue::Bool(interleaved));
        let on_gpu =
            [x_view(&x.to(device).unwrap()), t_view(&cos_t.to(device).unwrap()), t_view(&sin_t.to(device).unwrap())];
        let got = values(&call("rope", &attrs, &on_gpu.iter().collect::<Vec<_>>()));
        let (xv, c, s) = (
            x_view(&x).contiguous().unwrap(),
            t_view(&cos_t).contiguous().unwrap(),
            t_view(&sin_t).contiguous().unwrap(),
        );
        assert_close("rope of strided operands", &got, &rope_reference(&xv, &c, &s, interleaved), 2e-5);
    }
    let x = host(&draw.uniform(4 * 8, -1.0, 1.0), &[1, 4, 8], DType::Float32).to(device).unwrap();
    let (cos, _) = angles(&mut draw, 3, 4, DType::Float32);
    let cos = cos.to(device).unwrap();
    let err = ops::call("rope", &Attrs::new(), &[&x, &cos, &cos]).unwrap_err().to_string();
    assert!(err.starts_with("rope: cos must be"), "{err}");
}
