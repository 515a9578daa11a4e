//! The running reductions (cumulative_sum, cumulative_prod) and the sorts (sort, argsort) on
//! the GPU against the CPU backend: a scan walks each line in the CPU's order and a sort is
//! stable, so the outputs agree bit for bit; skipped, saying so, where there is no CUDA device.

use super::common::*;
use nbxtensor::kernel::{AttrValue, Attrs};
use nbxtensor::memory::Device;
use nbxtensor::tensor::Tensor;
use nbxtensor::{ops, DType};

const DTYPES: [DType; 11] = [
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
];

fn scan_attrs(axis: i64, include_initial: bool) -> Attrs {
    Attrs::new().with("axis", AttrValue::Int(axis)).with("include_initial", AttrValue::Bool(include_initial))
}

/// The bytes of output 0 of `op` on `x` (a host tensor, or a view made by `view`) on the GPU
/// and on the CPU, after checking their dtypes and shapes agree.
fn both(device: Device, op: &str, attrs: &Attrs, x: &Tensor, view: impl Fn(&Tensor) -> Tensor) -> (Vec<u8>, Vec<u8>) {
    let on_gpu =
        ops::call(op, attrs, &[&view(&x.to(device).unwrap())]).unwrap_or_else(|e| panic!("{op}: {e}")).remove(0);
    let on_cpu = ops::call(op, attrs, &[&view(x)]).unwrap().remove(0);
    assert_eq!((on_gpu.dtype(), on_gpu.shape()), (on_cpu.dtype(), on_cpu.shape()), "{op}: output meta");
    (on_gpu.to(Device::CPU).unwrap().to_bytes().unwrap(), on_cpu.to_bytes().unwrap())
}

#[test]
fn scans_match_the_cpu_bit_for_bit() {
    let Some(device) = gpu("scans_match_the_cpu_bit_for_bit") else { return };
    let mut draw = Draw::new(21);
    let cases: [(&[i64], i64); 6] =
        [(&[1000], 0), (&[37, 300], -1), (&[37, 300], 0), (&[5, 60, 7], 1), (&[3, 1, 4], 1), (&[0, 3], 0)];
    for op in ["cumulative_sum", "cumulative_prod"] {
        for dtype in DTYPES {
            for (shape, axis) in cases {
                let n = shape.iter().product::<i64>() as usize;
                let (low, high) = match (op, dtype.is_float(), dtype.name().starts_with('u')) {
                    ("cumulative_prod", true, _) => (0.99, 1.01),
                    (_, _, true) => (0.0, 9.0),
                    _ => (-9.0, 9.0),
                };
                let mut values = draw.uniform(n, low, high);
                if !dtype.is_float() {
                    values.iter_mut().for_each(|v| *v = v.floor());
                }
                let x = host(&values, shape, dtype);
                for include_initial in [false, true] {
                    let (gpu, cpu) = both(device, op, &scan_attrs(axis, include_initial), &x, Tensor::clone);
                    assert_eq!(gpu, cpu, "{op} {dtype} {shape:?} axis {axis} include_initial {include_initial}");
                }
            }
        }
    }
    // a permuted, narrowed view is read through its strides
    let x = host(&draw.uniform(6 * 8 * 50, -3.0, 3.0), &[6, 8, 50], DType::Float32);
    let view = |t: &Tensor| t.permute(&[2, 0, 1]).unwrap().narrow(0, 5, 40).unwrap();
    for axis in [0, 1, 2] {
        let (gpu, cpu) = both(device, "cumulative_sum", &scan_attrs(axis, true), &x, view);
        assert_eq!(gpu, cpu, "a view, axis {axis}");
    }
    let err = ops::call("cumulative_sum", &scan_attrs(3, false), &[&x.to(device).unwrap()]).unwrap_err().to_string();
    assert!(err.starts_with("cumulative_sum:") && err.contains("out of range"), "{err}");
}

fn sort_attrs(axis: i64, descending: bool) -> Attrs {
    Attrs::new().with("axis", AttrValue::Int(axis)).with("descending", AttrValue::Bool(descending))
}

#[test]
fn sorts_match_the_cpu_bit_for_bit() {
    let Some(device) = gpu("sorts_match_the_cpu_bit_for_bit") else { return };
    let mut draw = Draw::new(22);
    // one element, a power of two, odd lengths, the longest line served, many short lines
    let cases: [(&[i64], i64); 7] =
        [(&[1], 0), (&[64], 0), (&[37, 300], -1), (&[37, 300], 0), (&[5, 61, 7], 1), (&[2, 4096], 1), (&[20000, 3], 1)];
    for op in ["sort", "argsort"] {
        for dtype in DTYPES {
            for (shape, axis) in cases {
                let n = shape.iter().product::<i64>() as usize;
                let low = if dtype.name().starts_with('u') { 0.0 } else { -20.0 };
                // few distinct values: ties everywhere, so stability is what is compared
                let mut values: Vec<f64> = draw.uniform(n, low, 20.0).into_iter().map(f64::floor).collect();
                if dtype.is_float() {
                    values.iter_mut().step_by(17).for_each(|v| *v = f64::NAN);
                    values.iter_mut().skip(5).step_by(23).for_each(|v| *v = -0.0);
                }
                let x = host(&values, shape, dtype);
                for descending in [false, true] {
                    let (gpu, cpu) = both(device, op, &sort_attrs(axis, descending), &x, Tensor::clone);
                    assert_eq!(gpu, cpu, "{op} {dtype} {shape:?} axis {axis} descending {descending}");
                }
            }
        }
    }
    let x = host(&draw.uniform(6 * 8 * 50, -3.0, 3.0), &[6, 8, 50], DType::Bfloat16);
    let view = |t: &Tensor| t.permute(&[2, 0, 1]).unwrap().narrow(0, 5, 40).unwrap();
    for axis in [0, 1, 2] {
        let (gpu, cpu) = both(device, "argsort", &sort_attrs(axis, false), &x, view);
        assert_eq!(gpu, cpu, "a view, axis {axis}");
    }
    let long = Tensor::zeros_on(device, DType::Float32, &[2, 4097]).unwrap();
    let err = ops::call("sort", &sort_attrs(1, false), &[&long]).unwrap_err().to_string();
    assert!(err.contains("sort: the GPU sorts lines of at most 4096"), "{err}");
}

#[test]
fn searchsorted_matches_the_cpu() {
    let Some(device) = gpu("searchsorted_matches_the_cpu") else { return };
    let mut draw = Draw::new(23);
    for dtype in DTYPES {
        for n in [0i64, 1, 7, 1000] {
            let low = if dtype.name().starts_with('u') { 0.0 } else { -50.0 };
            let mut sorted: Vec<f64> = draw.uniform(n as usize, low, 50.0).into_iter().map(f64::floor).collect();
            sorted.sort_by(|a, b| a.partial_cmp(b).unwrap());
            if dtype.is_float() && n > 2 {
                sorted[n as usize - 1] = f64::NAN;
            }
            let mut values: Vec<f64> = draw.uniform(3 * 41, low - 5.0, 55.0).into_iter().map(f64::floor).collect();
            if dtype.is_float() {
                values[7] = f64::NAN;
            }
            let (s, v) = (host(&sorted, &[n], dtype), host(&values, &[3, 41], dtype));
            for right in [false, true] {
                let attrs = Attrs::new().with("right", AttrValue::Bool(right));
                let on_gpu = ops::call(
                    "searchsorted",
                    &attrs,
                    &[&s.to(device).unwrap(), &v.to(device).unwrap().transpose(0, 1).unwrap()],
                )
                .unwrap()
                .remove(0);
                let on_cpu = ops::call("searchsorted", &attrs, &[&s, &v.transpose(0, 1).unwrap()]).unwrap().remove(0);
                assert_eq!(on_gpu.shape(), &[41, 3]);
                assert_eq!(
                    on_gpu.to(Device::CPU).unwrap().to_vec::<i64>().unwrap(),
                    on_cpu.to_vec::<i64>().unwrap(),
                    "{dtype} n {n} right {right}"
                );
            }
        }
    }
}
