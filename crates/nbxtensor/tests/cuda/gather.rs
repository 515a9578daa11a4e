//! The CUDA gathers (embedding, index_select, concat) against the CPU backend and a brute-force
//! reference, byte for byte, on contiguous and strided (device-side view) operands, with empty
//! edges and out-of-range indices refused by name; skipped, saying so, where there is no CUDA
//! device.

use super::common::*;
use nbxtensor::kernel::{AttrValue, Attrs};
use nbxtensor::memory::Device;
use nbxtensor::tensor::Tensor;
use nbxtensor::{ops, DType};

/// Random bytes as a tensor of `dtype` (bool bytes 0 or 1).
fn random(draw: &mut Draw, dtype: DType, shape: &[i64]) -> Tensor {
    let n = shape.iter().product::<i64>() as usize * dtype.itemsize().unwrap();
    let bytes: Vec<u8> = draw.uniform(n, 0.0, 256.0).iter().map(|v| *v as u8).collect();
    let bytes = if dtype == DType::Bool { bytes.iter().map(|b| b & 1).collect() } else { bytes };
    Tensor::from_bytes(dtype, shape, &bytes).unwrap()
}

/// Indices in [0, bound) of `dtype` and `shape`.
fn indices(draw: &mut Draw, dtype: DType, shape: &[i64], bound: i64) -> Tensor {
    let n = shape.iter().product::<i64>() as usize;
    let values: Vec<i64> = draw.uniform(n, 0.0, bound as f64).iter().map(|v| *v as i64).collect();
    match dtype {
        DType::Int32 => Tensor::from_vec(values.iter().map(|&v| v as i32).collect::<Vec<_>>(), shape).unwrap(),
        _ => Tensor::from_vec(values, shape).unwrap(),
    }
}

fn index_values(t: &Tensor) -> Vec<i64> {
    match t.dtype() {
        DType::Int32 => t.to_vec::<i32>().unwrap().into_iter().map(i64::from).collect(),
        _ => t.to_vec::<i64>().unwrap(),
    }
}

fn bytes(t: &Tensor) -> Vec<u8> {
    t.to(Device::CPU).unwrap().to_bytes().unwrap()
}

fn call(op: &str, attrs: &Attrs, inputs: &[&Tensor]) -> Tensor {
    ops::call(op, attrs, inputs).unwrap_or_else(|e| panic!("{op}: {e}")).remove(0)
}

fn axis(a: i64) -> Attrs {
    Attrs::new().with("axis", AttrValue::Int(a))
}

/// The rows of a host table at host indices, row after row: the brute-force embedding.
fn embedding_reference(table: &Tensor, idx: &Tensor) -> Vec<u8> {
    let row = table.shape()[1] as usize * table.dtype().itemsize().unwrap();
    let all = table.to_bytes().unwrap();
    index_values(idx).iter().flat_map(|&i| all[i as usize * row..][..row].to_vec()).collect()
}

#[test]
fn embedding_gathers_rows_of_any_layout() {
    let Some(device) = gpu("embedding_gathers_rows_of_any_layout") else { return };
    let mut draw = Draw::new(21);
    // D = 64 reads 16-byte words for every width below 16; D = 3 element by element
    for dtype in [DType::Float32, DType::Float16, DType::Bfloat16, DType::Int8, DType::Complex128] {
        for d in [64i64, 3] {
            let table = random(&mut draw, dtype, &[50, d]);
            for index_dtype in [DType::Int32, DType::Int64] {
                let idx = indices(&mut draw, index_dtype, &[3, 7], 50);
                let what = format!("embedding {dtype} D={d} {index_dtype}");
                let got = call("embedding", &Attrs::new(), &[&idx.to(device).unwrap(), &table.to(device).unwrap()]);
                assert_eq!(got.shape(), &[3, 7, d], "{what}");
                assert_eq!(bytes(&got), embedding_reference(&table, &idx), "{what}");
                let cpu = call("embedding", &Attrs::new(), &[&idx, &table]);
                assert_eq!(bytes(&got), bytes(&cpu), "{what} vs cpu");
                // a transposed table and transposed indices, made on the device
                let t_table = table.permute(&[1, 0]).unwrap().contiguous().unwrap();
                let t_idx = idx.permute(&[1, 0]).unwrap().contiguous().unwrap();
                let table_view = t_table.to(device).unwrap().permute(&[1, 0]).unwrap();
                let idx_view = t_idx.to(device).unwrap().permute(&[1, 0]).unwrap();
                assert!(!table_view.is_contiguous() && !idx_view.is_contiguous());
                let got = call("embedding", &Attrs::new(), &[&idx_view, &table_view]);
                assert_eq!(bytes(&got), embedding_reference(&table, &idx), "{what}, strided");
            }
        }
    }
}

#[test]
fn index_select_picks_entries_along_any_axis() {
    let Some(device) = gpu("index_select_picks_entries_along_any_axis") else { return };
    let mut draw = Draw::new(22);
    for dtype in [DType::Float32, DType::Float16, DType::Uint8, DType::Float64] {
        // inner extent 16: 16-byte words when the axis is not the last
        let x = random(&mut draw, dtype, &[4, 6, 16]);
        for (a, size) in [(0i64, 4i64), (1, 6), (2, 16), (-1, 16), (-3, 4)] {
            for index_dtype in [DType::Int32, DType::Int64] {
                let idx = indices(&mut draw, index_dtype, &[9], size);
                let what = format!("index_select {dtype} axis {a} {index_dtype}");
                let got = call("index_select", &axis(a), &[&x.to(device).unwrap(), &idx.to(device).unwrap()]);
                let cpu = call("index_select", &axis(a), &[&x, &idx]);
                assert_eq!(got.shape(), cpu.shape(), "{what}");
                assert_eq!(bytes(&got), bytes(&cpu), "{what} vs cpu");
                // brute force: each output element is x at the picked coordinate
                let (values, width) = (x.to_bytes().unwrap(), dtype.itemsize().unwrap());
                let (picked, out_bytes) = (index_values(&idx), bytes(&got));
                let dim = a.rem_euclid(3) as usize;
                let shape = got.shape().to_vec();
                let mut flat = 0;
                for i in 0..shape[0] {
                    for j in 0..shape[1] {
                        for k in 0..shape[2] {
                            let mut at = [i, j, k];
                            at[dim] = picked[at[dim] as usize];
                            let source = ((at[0] * 6 + at[1]) * 16 + at[2]) as usize * width;
                            assert_eq!(
                                &out_bytes[flat..][..width],
                                &values[source..][..width],
                                "{what} at {i},{j},{k}"
                            );
                            flat += width;
                        }
                    }
                }
            }
        }
        // a strided source: a device-side transpose
        let idx = indices(&mut draw, DType::Int64, &[5], 6);
        let view = |t: &Tensor| t.permute(&[1, 0, 2]).unwrap();
        let got = call("index_select", &axis(0), &[&view(&x.to(device).unwrap()), &idx.to(device).unwrap()]);
        let cpu = call("index_select", &axis(0), &[&view(&x), &idx]);
        assert_eq!(bytes(&got), bytes(&cpu), "index_select {dtype} of a transposed source");
    }
}

#[test]
fn concat_joins_inputs_of_any_layout() {
    let Some(device) = gpu("concat_joins_inputs_of_any_layout") else { return };
    let mut draw = Draw::new(23);
    for dtype in [DType::Float32, DType::Bfloat16, DType::Uint8, DType::Complex128, DType::Bool] {
        let parts = [
            random(&mut draw, dtype, &[2, 3, 8]),
            random(&mut draw, dtype, &[2, 5, 8]),
            random(&mut draw, dtype, &[2, 0, 8]),
            random(&mut draw, dtype, &[2, 1, 8]),
        ];
        for a in [1i64, -2] {
            let on_gpu: Vec<Tensor> = parts.iter().map(|t| t.to(device).unwrap()).collect();
            let got = call("concat", &axis(a), &on_gpu.iter().collect::<Vec<_>>());
            let cpu = call("concat", &axis(a), &parts.iter().collect::<Vec<_>>());
            assert_eq!(got.shape(), &[2, 9, 8]);
            assert_eq!(bytes(&got), bytes(&cpu), "concat {dtype} axis {a}");
        }
        // along the first and the last axis, one input a device-side transpose
        let square = random(&mut draw, dtype, &[8, 8]);
        let other = random(&mut draw, dtype, &[8, 8]);
        for a in [0i64, 1] {
            let view = square.to(device).unwrap().permute(&[1, 0]).unwrap();
            let got = call("concat", &axis(a), &[&view, &other.to(device).unwrap()]);
            let cpu = call("concat", &axis(a), &[&square.permute(&[1, 0]).unwrap(), &other]);
            assert_eq!(bytes(&got), bytes(&cpu), "concat {dtype} axis {a} with a transposed input");
            // brute force along axis 0: the first 64 elements are the transposed square
            if a == 0 {
                assert_eq!(
                    bytes(&got)[..bytes(&cpu).len() / 2],
                    square.permute(&[1, 0]).unwrap().to_bytes().unwrap()[..]
                );
            }
        }
    }
}

#[test]
fn out_of_range_indices_are_refused_naming_the_first() {
    let Some(device) = gpu("out_of_range_indices_are_refused_naming_the_first") else { return };
    let table = Tensor::from_vec((0..12).map(|v| v as f32).collect(), &[4, 3]).unwrap().to(device).unwrap();
    let bad = Tensor::from_vec(vec![1i32, 0, 7, 2, -1, 9], &[2, 3]).unwrap().to(device).unwrap();
    let err = ops::call("embedding", &Attrs::new(), &[&bad, &table]).unwrap_err().to_string();
    assert_eq!(err, "embedding: index 7 (at position 2) is out of range [0, 4) of table [4, 3]");
    let negative = Tensor::from_vec(vec![2i64, -1], &[2]).unwrap().to(device).unwrap();
    let err = ops::call("index_select", &axis(1), &[&table, &negative]).unwrap_err().to_string();
    assert_eq!(err, "index_select: index -1 (at position 1) is out of range [0, 3) of axis 1 of [4, 3]");
    // the same call refused on the CPU names the same index
    let cpu_err =
        ops::call("index_select", &axis(1), &[&table.to(Device::CPU).unwrap(), &negative.to(Device::CPU).unwrap()])
            .unwrap_err()
            .to_string();
    assert_eq!(err, cpu_err);
    // the flag is fresh for each launch: a good call after a bad one succeeds
    let good = Tensor::from_vec(vec![3i64, 0], &[2]).unwrap().to(device).unwrap();
    let rows = call("embedding", &Attrs::new(), &[&good, &table]);
    assert_eq!(rows.to(Device::CPU).unwrap().to_vec::<f32>().unwrap(), vec![9., 10., 11., 0., 1., 2.]);
    // an empty output still checks its indices; empty indices give an empty output
    let flat = Tensor::from_vec(Vec::<f32>::new(), &[4, 0]).unwrap().to(device).unwrap();
    let err = ops::call("embedding", &Attrs::new(), &[&bad, &flat]).unwrap_err().to_string();
    assert!(err.starts_with("embedding: index 7 (at position 2)"), "{err}");
    let none = Tensor::from_vec(Vec::<i32>::new(), &[0]).unwrap().to(device).unwrap();
    assert_eq!(call("embedding", &Attrs::new(), &[&none, &table]).shape(), &[0, 3]);
    let floats = Tensor::from_vec(vec![0.0f32], &[1]).unwrap().to(device).unwrap();
    let err = ops::call("index_select", &axis(0), &[&table, &floats]).unwrap_err().to_string();
    assert!(err.contains("index_select") && err.contains("int32 or int64"), "{err}");
}
