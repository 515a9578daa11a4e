//! The calls the op_call fuzz target (docs/FUZZING.md) found crashing, as tests: each answers
//! (or is refused by name) and declares costs that saturate instead of wrapping. The fuzz
//! build checks overflow, so there each was a panic; in a release build each product wrapped
//! silently (a wrong flop or byte count, a wrong element count), which these tests check for.
//! Their inputs are seeds in `fuzz/seeds/op_call/` too.

use nbxtensor::backend::{cpu::cpu, Backend};
use nbxtensor::kernel::{Attrs, Cost, TensorMeta};
use nbxtensor::tensor::Tensor;
use nbxtensor::{ops, DType};

fn declared(op: &str, inputs: &[TensorMeta]) -> Cost {
    declare(op, inputs).unwrap()
}

fn declare(op: &str, inputs: &[TensorMeta]) -> nbxtensor::kernel::Result<Cost> {
    cpu().launches().bind(op, inputs[0].dtype, &Attrs::new())?.declare(inputs)
}

fn meta(dtype: DType, shape: &[i64]) -> TensorMeta {
    TensorMeta::new(dtype, shape)
}

/// A broadcast of one zero element of `dtype` to `shape`.
fn broadcast(dtype: DType, shape: &[i64]) -> Tensor {
    let ones = vec![1; shape.len()];
    Tensor::zeros(dtype, &ones).unwrap().expand(shape).unwrap()
}

#[test]
fn flops_of_huge_broadcasts_saturate() {
    // sigmoid and gelu_tanh of bfloat16 and float32 broadcasts of 2^62 and 2^63 - 1 elements
    assert_eq!(declared("sigmoid", &[meta(DType::Bfloat16, &[1 << 62])]).flops, u64::MAX);
    assert_eq!(declared("sigmoid", &[meta(DType::Bfloat16, &[i64::MAX, 1])]).flops, u64::MAX);
    // float32 of 2^63 - 1 elements passes 64-bit bytes: refused by name, not wrapped
    let err = declare("gelu_tanh", &[meta(DType::Float32, &[i64::MAX])]).unwrap_err().to_string();
    assert!(err.contains("overflows 64-bit bytes"), "{err}");
    assert_eq!(declared("log_softmax", &[meta(DType::Float16, &[1 << 62])]).flops, u64::MAX);
    assert_eq!(declared("softmax", &[meta(DType::Float16, &[1 << 62])]).flops, u64::MAX);
    assert_eq!(
        declared("rms_norm", &[meta(DType::Float16, &[1 << 62]), meta(DType::Float16, &[1 << 62])]).flops,
        u64::MAX
    );
}

#[test]
fn bytes_read_of_huge_broadcasts_saturate() {
    // le of a float16 broadcast of 2^63 - 1 elements and one element: 2^64 - 2 + 2 bytes
    let cost = declared("le", &[meta(DType::Float16, &[i64::MAX]), meta(DType::Float16, &[1])]);
    assert_eq!(cost.bytes_read, u64::MAX);
    let cost = declared("add", &[meta(DType::Uint16, &[i64::MAX]), meta(DType::Uint16, &[i64::MAX])]);
    assert_eq!(cost.bytes_read, u64::MAX);
    let cost = declared("add", &[meta(DType::Uint8, &[i64::MAX]), meta(DType::Uint8, &[i64::MAX])]);
    assert_eq!(cost.bytes_read, u64::MAX - 1, "exact below the saturation");
    // and the op itself is refused by the allocation of its output
    let big = broadcast(DType::Float16, &[i64::MAX]);
    let one = Tensor::zeros(DType::Float16, &[1]).unwrap();
    assert!(ops::call("le", &Attrs::new(), &[&big, &one]).is_err());
}

#[test]
fn rows_of_empty_tensors_with_huge_extents() {
    // softmax over the last axis of [2^40, 212484426680064, 4, 0, 3] and [2^63 - 1, 3, 0, 1]:
    // the extents before the axis multiply past 64 bits; the tensor has no element
    for shape in [&[1 << 40, 212_484_426_680_064, 4, 0, 3][..], &[i64::MAX, 3, 0, 1]] {
        let x = broadcast(DType::Float32, shape);
        for op in ["softmax", "log_softmax"] {
            let out = ops::call(op, &Attrs::new(), &[&x]).unwrap().remove(0);
            assert_eq!((out.shape(), out.numel()), (shape, 0));
        }
    }
}

#[test]
fn reductions_of_empty_tensors_with_huge_extents() {
    let x = broadcast(DType::Uint16, &[1 << 62, 4, 0]);
    assert_eq!(x.numel(), 0, "the count of an empty shape is 0 (its other extents pass 64 bits)");
    let all = ops::call("sum", &Attrs::new(), &[&x]).unwrap().remove(0);
    assert_eq!(all.to_vec::<u64>().unwrap(), vec![0], "sums of uint16 are uint64");
    // the rows before the empty axis reduced: 2^62 · 4 elements a row, no row
    let leading = Attrs::new().with("axes", nbxtensor::kernel::AttrValue::Ints(vec![0, 1]));
    assert_eq!(ops::call("sum", &leading, &[&x]).unwrap()[0].shape(), &[0]);
    // the empty axis reduced: zeros
    let last = Attrs::new().with("axes", nbxtensor::kernel::AttrValue::Ints(vec![2]));
    let zeros = ops::call("sum", &last, &[&broadcast(DType::Uint16, &[1 << 10, 4, 0])]).unwrap().remove(0);
    assert_eq!(zeros.to_vec::<u64>().unwrap(), vec![0; 4096]);
    // the sums of [2^62, 4] rows would be 2^64 elements: refused by name
    let err = ops::call("sum", &last, &[&x]).unwrap_err().to_string();
    assert!(err.contains("overflows"), "{err}");
}

/// The dtypes of one to four inputs of an op bound to `dtype`: the first `dtype`, each other
/// `dtype` or one of the index, mask, byte and half dtypes.
fn input_dtypes(dtype: DType) -> Vec<Vec<DType>> {
    let others = [dtype, DType::Int64, DType::Int32, DType::Bool, DType::Uint8, DType::Float16, DType::Float32];
    let mut all = vec![vec![dtype]];
    let mut last = vec![vec![dtype]];
    for _ in 1..4 {
        last = last.iter().flat_map(|c| others.iter().map(move |&o| [&c[..], &[o]].concat())).collect();
        all.extend(last.iter().cloned());
    }
    all
}

#[test]
fn every_op_on_empty_inputs_of_huge_extents_answers_with_the_declared_outputs() {
    // pack_int8 of a weight of 2^40 rows and no column walked its 2^40 empty rows (found by the
    // fuzzer, seed `pack_int8_of_2_40_empty_rows`): every op, on each of its dtypes, of one to
    // four such inputs of its own and other dtypes either is refused by name or gives exactly
    // the outputs it declared
    nbxtensor::settings::memory_limit::set_limit(Some(1 << 30)).unwrap();
    let mut answered = std::collections::BTreeSet::new();
    for def in ops::spec::catalogue() {
        for &dtype in def.dtypes() {
            for shape in [&[1i64 << 40, 0][..], &[0, 1 << 40], &[1 << 20, 0, 1 << 20], &[0]] {
                for dtypes in input_dtypes(dtype) {
                    let inputs: Vec<Tensor> = dtypes.iter().map(|&d| broadcast(d, shape)).collect();
                    let refs: Vec<&Tensor> = inputs.iter().collect();
                    let Ok(outputs) = ops::call(def.name, &Attrs::new(), &refs) else { continue };
                    answered.insert(def.name);
                    let metas: Vec<TensorMeta> = dtypes.iter().map(|&d| meta(d, shape)).collect();
                    let declared = declared(def.name, &metas).outputs;
                    let given: Vec<_> = outputs.iter().map(|t| (t.dtype(), t.shape().to_vec())).collect();
                    let wanted: Vec<_> = declared.iter().map(|m| (m.dtype, m.shape.clone())).collect();
                    assert_eq!(given, wanted, "{} of {dtypes:?} {shape:?}", def.name);
                }
            }
        }
    }
    // ops of every family answer (the others want attributes or other shapes, and are refused
    // by name)
    for op in ["pack_int8", "pack_int4", "softmax", "sum", "sort", "qr", "concat", "where", "embedding", "matmul"] {
        assert!(answered.contains(op), "{op} refused every call: {answered:?}");
    }
}
