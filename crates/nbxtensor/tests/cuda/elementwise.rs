//! The elementwise CUDA kernels (binary, compare, where, masked_fill, cast, copy) against the
//! CPU backend and a float64 reference, on contiguous, broadcast and strided (device-side view)
//! operands, with size-0 and size-1 edges; skipped, saying so, where there is no CUDA device.

use super::common::*;
use nbxtensor::kernel::{AttrValue, Attrs};
use nbxtensor::memory::Device;
use nbxtensor::tensor::Tensor;
use nbxtensor::{ops, DType};

const FLOATS: [DType; 3] = [DType::Float32, DType::Float16, DType::Bfloat16];

const INTEGERS: [DType; 8] =
    [DType::Int8, DType::Int16, DType::Int32, DType::Int64, DType::Uint8, DType::Uint16, DType::Uint32, DType::Uint64];

/// A view of an input, applied alike on the GPU, the CPU and the float64 reference.
type View = fn(usize, &Tensor) -> Tensor;

/// The shapes of a `where`'s condition and operands, and their view.
type Triple = (&'static [i64], &'static [i64], &'static [i64], View);

/// A view of a whole tensor.
type Reshape = fn(&Tensor) -> Tensor;

fn plain(_: usize, t: &Tensor) -> Tensor {
    t.clone()
}

/// Runs `op` on `inputs` (host tensors) seen through `view`: on the GPU (the view made on the
/// device), on the CPU, and on the CPU in float64; returns the three outputs on the host.
fn three(device: Device, op: &str, attrs: &Attrs, inputs: &[Tensor], view: View) -> [Tensor; 3] {
    let run = |side: Vec<Tensor>| {
        let refs: Vec<&Tensor> = side.iter().collect();
        let out = ops::call(op, attrs, &refs).unwrap_or_else(|e| panic!("{op}: {e}")).remove(0);
        out.to(Device::CPU).unwrap()
    };
    let gpu_inputs: Vec<Tensor> = inputs.iter().enumerate().map(|(k, t)| view(k, &t.to(device).unwrap())).collect();
    let wide = |t: &Tensor| if t.dtype().is_float() { cast(t, DType::Float64) } else { t.clone() };
    let gpu = run(gpu_inputs);
    let cpu = run(inputs.iter().enumerate().map(|(k, t)| view(k, t)).collect());
    let reference = run(inputs.iter().enumerate().map(|(k, t)| view(k, &wide(t))).collect());
    assert_eq!((gpu.dtype(), gpu.shape()), (cpu.dtype(), cpu.shape()), "{op}: output meta");
    [gpu, cpu, reference]
}

/// The row-major bytes of a host tensor.
fn bytes(t: &Tensor) -> Vec<u8> {
    t.to(Device::CPU).unwrap().to_bytes().unwrap()
}

/// Asserts two outputs hold the same bytes, naming the first differing element.
fn assert_same_bytes(what: &str, got: &Tensor, want: &Tensor) {
    let (g, w) = (bytes(got), bytes(want));
    assert_eq!(g.len(), w.len(), "{what}: lengths differ");
    let width = got.dtype().itemsize().unwrap();
    if let Some(at) = g.iter().zip(&w).position(|(a, b)| a != b) {
        let e = at / width;
        panic!("{what}: element {e} differs: {:?} vs {:?}", &g[e * width..][..width], &w[e * width..][..width]);
    }
}

fn transposed(k: usize, t: &Tensor) -> Tensor {
    if k == 0 {
        t.permute(&[1, 0]).unwrap()
    } else {
        t.clone()
    }
}

fn narrowed(k: usize, t: &Tensor) -> Tensor {
    if k == 0 {
        t.narrow(1, 4, 32).unwrap()
    } else {
        t.clone()
    }
}

/// (shape of a, shape of b, view): each path of the kernels — contiguous with a tail, broadcast
/// rows of words (a row operand, a column splat), broadcast inside a row, transposed and narrowed
/// views, a 0-d operand, size 0 and size 1.
const PAIRS: [(&[i64], &[i64], View); 9] = [
    (&[4099], &[4099], plain),
    (&[64, 256], &[256], plain),
    (&[64, 256], &[64, 1], plain),
    (&[6, 1, 130], &[5, 130], plain),
    (&[70, 6], &[6, 70], transposed),
    (&[8, 40], &[8, 32], narrowed),
    (&[], &[7], plain),
    (&[0, 5], &[5], plain),
    (&[1], &[1], plain),
];

fn numel(shape: &[i64]) -> usize {
    shape.iter().product::<i64>() as usize
}

/// Operands of `op` where it is defined and well conditioned: pow takes positive bases, div
/// denominators away from zero.
fn operands(op: &str, draw: &mut Draw, a: &[i64], b: &[i64], dtype: DType) -> [Tensor; 2] {
    let (x, y) = match op {
        "pow" => (draw.uniform(numel(a), 0.1, 4.0), draw.uniform(numel(b), -3.0, 3.0)),
        "div" => {
            let signs = draw.uniform(numel(b), -1.0, 1.0);
            let magnitudes = draw.uniform(numel(b), 0.5, 4.0);
            (draw.uniform(numel(a), -4.0, 4.0), magnitudes.iter().zip(&signs).map(|(m, s)| m.copysign(*s)).collect())
        }
        _ => (draw.uniform(numel(a), -4.0, 4.0), draw.uniform(numel(b), -4.0, 4.0)),
    };
    [host(&x, a, dtype), host(&y, b, dtype)]
}

#[test]
fn binary_ops_match_the_cpu_and_float64_on_every_path() {
    let Some(device) = gpu("binary_ops_match_the_cpu_and_float64_on_every_path") else { return };
    let mut draw = Draw::new(11);
    for op in ["add", "sub", "mul", "div", "pow", "maximum", "minimum"] {
        for dtype in FLOATS {
            for (a, b, view) in PAIRS {
                let what = format!("{op} {dtype} {a:?} {b:?}");
                let [gpu, cpu, reference] =
                    three(device, op, &Attrs::new(), &operands(op, &mut draw, a, b, dtype), view);
                assert_close(&format!("{what} vs float64"), &values(&gpu), &values(&reference), tolerance(dtype));
                if op == "pow" {
                    // the device's powf is not the host's libm: close, not equal
                    assert_close(&format!("{what} vs cpu"), &values(&gpu), &values(&cpu), tolerance(dtype));
                } else {
                    // one IEEE operation in float32, rounded once: the same bits as the CPU
                    assert_same_bytes(&format!("{what} vs cpu"), &gpu, &cpu);
                }
            }
        }
    }
}

#[test]
fn integer_binary_ops_wrap_around_as_the_cpu() {
    let Some(device) = gpu("integer_binary_ops_wrap_around_as_the_cpu") else { return };
    let mut draw = Draw::new(17);
    for op in ["add", "sub", "mul", "maximum", "minimum"] {
        for dtype in INTEGERS {
            for (a, b, view) in PAIRS {
                // any bit patterns: sums, differences and products wrap
                let inputs = [elements(&mut draw, a, dtype), elements(&mut draw, b, dtype)];
                let [gpu, cpu, _] = three(device, op, &Attrs::new(), &inputs, view);
                assert_same_bytes(&format!("{op} {dtype} {a:?} {b:?}"), &gpu, &cpu);
            }
        }
    }
    // independently: int8 and uint16 wrap as Rust's wrapping arithmetic does
    let (p, q) = ([100i8, -100, 127, -128], [100i8, -100, 1, -1]);
    let on = |t: Tensor| t.to(device).unwrap();
    let x = on(Tensor::from_vec(p.to_vec(), &[4]).unwrap());
    let y = on(Tensor::from_vec(q.to_vec(), &[4]).unwrap());
    let got = |op: &str, x: &Tensor, y: &Tensor| {
        ops::call(op, &Attrs::new(), &[x, y]).unwrap().remove(0).to(Device::CPU).unwrap()
    };
    let want: Vec<i8> = p.iter().zip(&q).map(|(a, b)| a.wrapping_add(*b)).collect();
    assert_eq!(got("add", &x, &y).to_vec::<i8>().unwrap(), want);
    let want: Vec<i8> = p.iter().zip(&q).map(|(a, b)| a.wrapping_sub(*b)).collect();
    assert_eq!(got("sub", &x, &y).to_vec::<i8>().unwrap(), want);
    let big = on(Tensor::from_vec(vec![65535u16, 300, 7], &[3]).unwrap());
    let want: Vec<u16> = [65535u16, 300, 7].iter().map(|v| v.wrapping_mul(*v)).collect();
    assert_eq!(got("mul", &big, &big).to_vec::<u16>().unwrap(), want);
}

#[test]
fn maximum_and_minimum_propagate_nan_and_keep_zero_signs_as_the_cpu() {
    let Some(device) = gpu("maximum_and_minimum_propagate_nan_and_keep_zero_signs_as_the_cpu") else { return };
    let a = [f64::NAN, 1.0, -0.0, 0.0, 2.0, f64::INFINITY, 3.0];
    let b = [1.0, f64::NAN, 0.0, -0.0, 2.0, 5.0, f64::NEG_INFINITY];
    for dtype in FLOATS {
        let inputs = [host(&a, &[7], dtype), host(&b, &[7], dtype)];
        for op in ["maximum", "minimum"] {
            let [gpu, cpu, _] = three(device, op, &Attrs::new(), &inputs, plain);
            assert_same_bytes(&format!("{op} {dtype}"), &gpu, &cpu);
            let got = values(&gpu);
            assert!(got[0].is_nan() && got[1].is_nan(), "{op} {dtype}: NaN propagates: {got:?}");
            let want = if op == "maximum" { [2.0, f64::INFINITY, 3.0] } else { [2.0, 5.0, f64::NEG_INFINITY] };
            assert_eq!(&got[4..], &want[..], "{op} {dtype}");
        }
    }
}

#[test]
fn comparisons_of_integers_and_bools_match_the_cpu() {
    let Some(device) = gpu("comparisons_of_integers_and_bools_match_the_cpu") else { return };
    let mut draw = Draw::new(18);
    let mut dtypes = INTEGERS.to_vec();
    dtypes.push(DType::Bool);
    for dtype in dtypes {
        for (a, b, view) in PAIRS {
            // few distinct values, so that ties are frequent (bool: 0 and 1)
            let (low, high) = if dtype == DType::Bool { (0.0, 1.9) } else { (-3.0, 4.0) };
            let mut small = |shape: &[i64]| -> Vec<f64> {
                draw.uniform(numel(shape), low, high).iter().map(|v| v.floor()).collect()
            };
            let inputs = [host(&small(a), a, dtype), host(&small(b), b, dtype)];
            for op in ["eq", "ne", "lt", "le", "gt", "ge"] {
                let [gpu, cpu, _] = three(device, op, &Attrs::new(), &inputs, view);
                assert_same_bytes(&format!("{op} {dtype} {a:?} {b:?}"), &gpu, &cpu);
            }
        }
    }
    // a bool byte other than 1 reads as true
    let on = |t: Tensor| t.to(device).unwrap();
    let p = on(Tensor::from_bytes(DType::Bool, &[3], &[2, 0, 1]).unwrap());
    let q = on(Tensor::from_bytes(DType::Bool, &[3], &[1, 0, 0]).unwrap());
    let eq = ops::call("eq", &Attrs::new(), &[&p, &q]).unwrap().remove(0);
    assert_eq!(bytes(&eq), vec![1, 1, 0]);
}

#[test]
fn comparisons_match_the_cpu_exactly_with_ties_and_nan() {
    let Some(device) = gpu("comparisons_match_the_cpu_exactly_with_ties_and_nan") else { return };
    let mut draw = Draw::new(12);
    for dtype in FLOATS {
        for (a, b, view) in PAIRS {
            let x = draw.uniform(numel(a), -2.0, 2.0);
            let mut y = draw.uniform(numel(b), -2.0, 2.0);
            // ties: b repeats a's element of the same flat index (equal values where the shapes
            // are equal); a NaN
            for (i, v) in y.iter_mut().enumerate().take(x.len()) {
                if i % 3 == 0 {
                    *v = x[i];
                }
            }
            if let Some(v) = y.get_mut(1) {
                *v = f64::NAN;
            }
            let inputs = [host(&x, a, dtype), host(&y, b, dtype)];
            for op in ["eq", "ne", "lt", "le", "gt", "ge"] {
                let what = format!("{op} {dtype} {a:?} {b:?}");
                let [gpu, cpu, reference] = three(device, op, &Attrs::new(), &inputs, view);
                assert_eq!(gpu.dtype(), DType::Bool, "{what}");
                assert_same_bytes(&format!("{what} vs cpu"), &gpu, &cpu);
                // float16 and bfloat16 widen exactly: float64 compares the same values
                assert_same_bytes(&format!("{what} vs float64"), &gpu, &reference);
            }
        }
    }
}

fn flags(draw: &mut Draw, shape: &[i64]) -> Tensor {
    let bytes: Vec<u8> = draw.uniform(numel(shape), 0.0, 1.0).iter().map(|v| u8::from(*v < 0.5)).collect();
    Tensor::from_bytes(DType::Bool, shape, &bytes).unwrap()
}

/// Random elements of any dtype of 1, 2, 4 or 8 bytes (floats uniform, integers any pattern).
fn elements(draw: &mut Draw, shape: &[i64], dtype: DType) -> Tensor {
    if dtype.is_float() {
        return host(&draw.uniform(numel(shape), -100.0, 100.0), shape, dtype);
    }
    let width = dtype.itemsize().unwrap();
    let bytes: Vec<u8> = draw.uniform(numel(shape) * width, 0.0, 256.0).iter().map(|v| *v as u8).collect();
    Tensor::from_bytes(dtype, shape, &bytes).unwrap()
}

#[test]
fn where_copies_the_chosen_bits_on_every_path() {
    let Some(device) = gpu("where_copies_the_chosen_bits_on_every_path") else { return };
    let mut draw = Draw::new(13);
    let cases: [Triple; 5] = [
        (&[4099], &[4099], &[4099], plain),
        (&[6, 1], &[6, 40], &[40], plain),
        (&[40, 6], &[6, 40], &[6, 40], transposed),
        (&[0, 3], &[3], &[1], plain),
        (&[], &[1], &[], plain),
    ];
    for dtype in [DType::Float32, DType::Float16, DType::Bfloat16, DType::Int64, DType::Uint8, DType::Int16] {
        for (c, a, b, view) in cases {
            let inputs = [flags(&mut draw, c), elements(&mut draw, a, dtype), elements(&mut draw, b, dtype)];
            let [gpu, cpu, _] = three(device, "where", &Attrs::new(), &inputs, view);
            assert_same_bytes(&format!("where {dtype} {c:?} {a:?} {b:?}"), &gpu, &cpu);
        }
    }
    // an independent check: the chosen operand's bits, element by element
    let cond = Tensor::from_bytes(DType::Bool, &[4], &[1, 0, 2, 0]).unwrap();
    let a = Tensor::from_vec(vec![1i32, 2, 3, 4], &[4]).unwrap();
    let b = Tensor::from_vec(vec![-1i32, -2, -3, -4], &[4]).unwrap();
    let on = |t: &Tensor| t.to(device).unwrap();
    let out = ops::call("where", &Attrs::new(), &[&on(&cond), &on(&a), &on(&b)]).unwrap().remove(0);
    assert_eq!(out.to(Device::CPU).unwrap().to_vec::<i32>().unwrap(), vec![1, -2, 3, -4]);
}

#[test]
fn masked_fill_writes_the_value_the_cpu_writes() {
    let Some(device) = gpu("masked_fill_writes_the_value_the_cpu_writes") else { return };
    let mut draw = Draw::new(14);
    let values_for = |dtype: DType| -> Vec<AttrValue> {
        match dtype {
            DType::Int32 => vec![AttrValue::Int(-7), AttrValue::Int(1 << 40)],
            DType::Uint8 => vec![AttrValue::Int(300), AttrValue::Int(9)],
            DType::Bool => vec![AttrValue::Bool(true), AttrValue::Bool(false)],
            // beyond float16's range (clamped), a fraction, an infinity
            _ => vec![AttrValue::Float(-3.39e38), AttrValue::Float(2.7), AttrValue::Float(f64::INFINITY)],
        }
    };
    let cases: [(&[i64], &[i64], View); 4] =
        [(&[4099], &[4099], plain), (&[8, 64], &[64], plain), (&[64, 8], &[8, 64], transposed), (&[0, 4], &[4], plain)];
    let dtypes =
        [DType::Float32, DType::Float16, DType::Bfloat16, DType::Float64, DType::Int32, DType::Uint8, DType::Bool];
    for dtype in dtypes {
        for value in values_for(dtype) {
            let attrs = Attrs::new().with("value", value.clone());
            for (x, m, view) in cases {
                let x_tensor = if dtype == DType::Bool { flags(&mut draw, x) } else { elements(&mut draw, x, dtype) };
                let inputs = [x_tensor, flags(&mut draw, m)];
                let [gpu, cpu, _] = three(device, "masked_fill", &attrs, &inputs, view);
                assert_same_bytes(&format!("masked_fill {dtype} {value:?} {x:?} {m:?}"), &gpu, &cpu);
            }
        }
    }
    // independently: float16 takes its most negative finite value for -3.39e38
    let x = host(&[1.0, 2.0], &[2], DType::Float16).to(device).unwrap();
    let mask = Tensor::from_bytes(DType::Bool, &[2], &[0, 1]).unwrap().to(device).unwrap();
    let attrs = Attrs::new().with("value", AttrValue::Float(-3.39e38));
    let out = ops::call("masked_fill", &attrs, &[&x, &mask]).unwrap().remove(0);
    assert_eq!(values(&out), vec![1.0, -65504.0]);
}

/// The dtypes the GPU casts between.
const CASTABLE: [DType; 12] = [
    DType::Float32,
    DType::Float16,
    DType::Bfloat16,
    DType::Int8,
    DType::Int16,
    DType::Int32,
    DType::Int64,
    DType::Uint8,
    DType::Uint16,
    DType::Uint32,
    DType::Uint64,
    DType::Bool,
];

/// Inputs that reach every rule of a cast from `dtype`: for floats NaN, infinities, signed
/// zeros, subnormals, rounding ties, values past every integer range and random fractions; for
/// integers random bit patterns (wrapping) and both ends; for bool 0 and 1.
fn cast_input(draw: &mut Draw, dtype: DType, n: usize) -> Tensor {
    if dtype.is_float() {
        let mut v = vec![
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            0.0,
            -0.0,
            1e-40,
            -3e-8,
            1.0 + 1.0 / 256.0,
            1.0 + 3.0 / 256.0,
            65519.0,
            65520.0,
            -129.5,
            255.9,
            256.0,
            -1.7,
            2.9,
            3e9,
            -3e9,
            1e10,
            9.3e18,
            -9.3e18,
            1.9e19,
            4e19,
        ];
        let rest = n - v.len();
        v.extend(draw.uniform(rest / 2, -300.0, 300.0));
        v.extend(draw.uniform(rest - rest / 2, -7e4, 7e4));
        return host(&v, &[n as i64], dtype);
    }
    if dtype == DType::Bool {
        let bytes: Vec<u8> = draw.uniform(n, 0.0, 1.0).iter().map(|v| u8::from(*v < 0.5)).collect();
        return Tensor::from_bytes(DType::Bool, &[n as i64], &bytes).unwrap();
    }
    let width = dtype.itemsize().unwrap();
    let mut bytes: Vec<u8> = draw.uniform(n * width, 0.0, 256.0).iter().map(|v| *v as u8).collect();
    // the ends of the range: all ones (-1 or the maximum) and the sign bit alone
    bytes[..width].fill(0xFF);
    bytes[width..2 * width].fill(0);
    bytes[2 * width - 1] = 0x80;
    Tensor::from_bytes(dtype, &[n as i64], &bytes).unwrap()
}

#[test]
fn every_cast_pair_writes_the_bytes_the_cpu_writes() {
    let Some(device) = gpu("every_cast_pair_writes_the_bytes_the_cpu_writes") else { return };
    let mut draw = Draw::new(15);
    let n = 4 * 1031; // every vector width's body and a tail; even, for the strided view
    for from in CASTABLE {
        let x = cast_input(&mut draw, from, n);
        for to in CASTABLE {
            let attrs = Attrs::new().with("dtype", AttrValue::DType(to));
            let [gpu, cpu, _] = three(device, "cast", &attrs, std::slice::from_ref(&x), plain);
            assert_same_bytes(&format!("cast {from} to {to}"), &gpu, &cpu);
            // strided: the transpose of a [2, n/2] view
            let pair = x.reshape(&[2, n as i64 / 2]).unwrap();
            let [gpu, cpu, _] = three(device, "cast", &attrs, &[pair], transposed);
            assert_same_bytes(&format!("cast {from} to {to}, transposed"), &gpu, &cpu);
        }
    }
}

#[test]
fn large_casts_take_four_vectors_a_thread_and_agree() {
    let Some(device) = gpu("large_casts_take_four_vectors_a_thread_and_agree") else { return };
    let mut draw = Draw::new(16);
    // past 4 vectors × the grid's threads (8 blocks of 256 on each of up to 132
    // multiprocessors) for the widest vector (16 one-byte elements), plus a tail
    let n = 4 * 16 * 8 * 256 * 132 + 13;
    let pairs = [
        (DType::Float32, DType::Bfloat16),
        (DType::Bfloat16, DType::Float32),
        (DType::Float16, DType::Int64),
        (DType::Int64, DType::Int8),
        (DType::Uint8, DType::Float32),
        (DType::Uint8, DType::Int8),
    ];
    for (from, to) in pairs {
        let x = cast_input(&mut draw, from, n);
        let attrs = Attrs::new().with("dtype", AttrValue::DType(to));
        let [gpu, cpu, _] = three(device, "cast", &attrs, std::slice::from_ref(&x), plain);
        assert_same_bytes(&format!("cast of {n} elements, {from} to {to}"), &gpu, &cpu);
    }
}

#[test]
fn casts_follow_rust_as_and_refuse_unserved_pairs() {
    let Some(device) = gpu("casts_follow_rust_as_and_refuse_unserved_pairs") else { return };
    let source = [-1.7f32, 2.9, 1e10, f32::NAN, -3e9, 127.9, -128.9];
    let x = Tensor::from_vec(source.to_vec(), &[7]).unwrap().to(device).unwrap();
    let cast_on = |to: DType| {
        let attrs = Attrs::new().with("dtype", AttrValue::DType(to));
        ops::call("cast", &attrs, &[&x]).map(|mut v| v.remove(0).to(Device::CPU).unwrap())
    };
    let want: Vec<i32> = source.iter().map(|&v| v as i32).collect();
    assert_eq!(cast_on(DType::Int32).unwrap().to_vec::<i32>().unwrap(), want);
    let want: Vec<i8> = source.iter().map(|&v| v as i8).collect();
    assert_eq!(cast_on(DType::Int8).unwrap().to_vec::<i8>().unwrap(), want);
    let want: Vec<u64> = source.iter().map(|&v| v as u64).collect();
    assert_eq!(cast_on(DType::Uint64).unwrap().to_vec::<u64>().unwrap(), want);
    let want: Vec<u8> = source.iter().map(|&v| u8::from(v != 0.0)).collect();
    assert_eq!(cast_on(DType::Bool).unwrap().to_bytes().unwrap(), want);
    let err = cast_on(DType::Float64).unwrap_err().to_string();
    assert!(err.contains("cast") && err.contains("float64") && err.contains("cuda"), "{err}");
    let empty = Tensor::from_vec(Vec::<f32>::new(), &[0, 3]).unwrap().to(device).unwrap();
    let attrs = Attrs::new().with("dtype", AttrValue::DType(DType::Float16));
    let out = ops::call("cast", &attrs, &[&empty]).unwrap().remove(0);
    assert_eq!((out.dtype(), out.shape()), (DType::Float16, &[0i64, 3][..]));
}

#[test]
fn copy_gathers_any_view_into_the_bytes_of_its_elements() {
    let Some(device) = gpu("copy_gathers_any_view_into_the_bytes_of_its_elements") else { return };
    let mut draw = Draw::new(16);
    let views: [(&str, Reshape); 5] = [
        ("contiguous", |t| t.clone()),
        ("transposed", |t| t.permute(&[2, 0, 1]).unwrap()),
        ("narrowed rows", |t| t.narrow(2, 8, 32).unwrap()),
        ("narrowed columns", |t| t.narrow(2, 1, 13).unwrap()),
        ("expanded", |t| t.narrow(0, 1, 1).unwrap().expand(&[5, 6, 48]).unwrap()),
    ];
    let dtypes = [
        DType::Uint8,
        DType::Float16,
        DType::Float32,
        DType::Float64,
        DType::Complex64,
        DType::Complex128,
        DType::Bool,
    ];
    for dtype in dtypes {
        let width = dtype.itemsize().unwrap();
        let raw: Vec<u8> = draw.uniform(4 * 6 * 48 * width, 0.0, 256.0).iter().map(|v| *v as u8).collect();
        let raw: Vec<u8> = if dtype == DType::Bool { raw.iter().map(|b| b & 1).collect() } else { raw };
        let x = Tensor::from_bytes(dtype, &[4, 6, 48], &raw).unwrap();
        let on_gpu = x.to(device).unwrap();
        for (name, view) in views {
            let got = ops::call("copy", &Attrs::new(), &[&view(&on_gpu)]).unwrap().remove(0);
            assert!(got.is_contiguous());
            // the reference: the host's own strided read of the same view
            assert_eq!(got.shape(), view(&x).shape());
            assert_eq!(bytes(&got), view(&x).to_bytes().unwrap(), "copy {dtype} {name}");
        }
    }
    let empty = Tensor::from_vec(Vec::<f32>::new(), &[3, 0]).unwrap().to(device).unwrap().permute(&[1, 0]).unwrap();
    assert_eq!(ops::call("copy", &Attrs::new(), &[&empty]).unwrap()[0].shape(), &[0, 3]);
}

#[test]
fn bad_inputs_are_refused_naming_the_op() {
    let Some(device) = gpu("bad_inputs_are_refused_naming_the_op") else { return };
    let on = |t: Tensor| t.to(device).unwrap();
    let a = on(Tensor::from_vec(vec![1.0f32, 2.0], &[2]).unwrap());
    let b = on(Tensor::from_vec(vec![1.0f32, 2.0, 3.0], &[3]).unwrap());
    let err = ops::call("add", &Attrs::new(), &[&a, &b]).unwrap_err().to_string();
    assert!(err.starts_with("add: shapes (2,) and (3,)"), "{err}");
    let h = on(host(&[1.0, 2.0], &[2], DType::Float16));
    let err = ops::call("lt", &Attrs::new(), &[&a, &h]).unwrap_err().to_string();
    assert!(err.contains("lt") && err.contains("float32") && err.contains("float16"), "{err}");
    let cpu_side = Tensor::from_vec(vec![1.0f32, 2.0], &[2]).unwrap();
    let err = ops::call("mul", &Attrs::new(), &[&a, &cpu_side]).unwrap_err().to_string();
    assert!(err.starts_with("mul: an input lives on"), "{err}");
    let wide = on(Tensor::from_vec(vec![1.0f64, 2.0], &[2]).unwrap());
    let err = ops::call("sub", &Attrs::new(), &[&wide, &wide]).unwrap_err().to_string();
    assert!(err.contains("'sub'") && err.contains("float64") && err.contains("cuda"), "{err}");
    let ints = on(Tensor::from_vec(vec![1i32, 2], &[2]).unwrap());
    let err = ops::call("div", &Attrs::new(), &[&ints, &ints]).unwrap_err().to_string();
    // true division is defined on the floats only: the spec refuses it before any backend
    assert!(err.starts_with("div is not defined on int32"), "{err}");
    let mask = on(Tensor::from_vec(vec![1u8, 0], &[2]).unwrap());
    let attrs = Attrs::new().with("value", AttrValue::Float(0.0));
    let err = ops::call("masked_fill", &attrs, &[&a, &mask]).unwrap_err().to_string();
    assert!(err.contains("masked_fill") && err.contains("uint8"), "{err}");
}
