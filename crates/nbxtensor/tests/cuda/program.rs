//! The GPU's matrix products, and programs on the GPU: planned device memory, CUDA-graph
//! capture verified byte for byte, a drifting kernel refused; and a dry run of a CUDA program
//! on a machine without a GPU. Tests that need a device skip, saying so, where there is none.

use super::common::*;
use nbxtensor::backend::cuda::memory::{context, cuda_allocator};
use nbxtensor::backend::cuda::MATMUL_WORKSPACE_BYTES;
use nbxtensor::backend::Peaks;
use nbxtensor::kernel::{AttrValue, Attrs, Cost, Kernel, KernelError, Launch, TensorMeta};
use nbxtensor::memory::{Device, DeviceKind};
use nbxtensor::program::{self, Executable, ProgramError};
use nbxtensor::tensor::Tensor;
use nbxtensor::{ops, DType};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

const FLOATS: [DType; 3] = [DType::Float32, DType::Float16, DType::Bfloat16];

/// numpy's matmul in float64 on the CPU, from elementwise products and a sum (independent of
/// any matrix kernel): `sum(a[.., m, k, 1] * b[.., 1, k, n], axis=-2)`.
fn matmul_reference(a: &Tensor, b: &Tensor, ta: bool, tb: bool) -> Vec<f64> {
    let (mut a, mut b) = (cast(a, DType::Float64), cast(b, DType::Float64));
    if ta {
        a = a.transpose(-1, -2).unwrap();
    }
    if tb {
        b = b.transpose(-1, -2).unwrap();
    }
    let (vector_a, vector_b) = (a.ndim() == 1, b.ndim() == 1);
    if vector_a {
        a = a.unsqueeze(0).unwrap();
    }
    if vector_b {
        b = b.unsqueeze(1).unwrap();
    }
    let products = ops::call("mul", &Attrs::new(), &[&a.unsqueeze(-1).unwrap(), &b.unsqueeze(-3).unwrap()]).unwrap();
    let sum =
        ops::call("sum", &Attrs::new().with("axes", AttrValue::Ints(vec![-2])), &[&products[0]]).unwrap().remove(0);
    values(&sum)
}

fn matmul_attrs(ta: bool, tb: bool) -> Attrs {
    Attrs::new().with("transpose_a", AttrValue::Bool(ta)).with("transpose_b", AttrValue::Bool(tb))
}

#[test]
fn matmul_and_linear_match_the_cpu_and_float64() {
    let Some(device) = gpu("matmul_and_linear_match_the_cpu_and_float64") else { return };
    let mut draw = Draw::new(11);
    // (a shape, b shape, transpose_a, transpose_b)
    let cases: [(&[i64], &[i64], bool, bool); 7] = [
        (&[33, 70], &[70, 45], false, false),
        (&[70, 33], &[70, 45], true, false),
        (&[33, 70], &[45, 70], false, true),
        (&[3, 2, 17, 24], &[24, 9], false, false), // batch, right operand broadcast
        (&[2, 17, 24], &[3, 1, 24, 9], false, false), // batch dims broadcast both ways
        (&[24], &[4, 24, 5], false, false),        // a vector on the left
        (&[6, 24], &[24], false, false),           // a vector on the right
    ];
    for dtype in FLOATS {
        let rtol = tolerance(dtype) * 4.0;
        for (sa, sb, ta, tb) in cases {
            let na: i64 = sa.iter().product();
            let nb: i64 = sb.iter().product();
            let a = host(&draw.uniform(na as usize, -1.0, 1.0), sa, dtype);
            let b = host(&draw.uniform(nb as usize, -1.0, 1.0), sb, dtype);
            let reference = matmul_reference(&a, &b, ta, tb);
            let (gpu, cpu) = run_two(device, "matmul", &matmul_attrs(ta, tb), &[a, b]);
            let what = format!("matmul {dtype} {sa:?}·{sb:?} ta={ta} tb={tb}");
            assert_close(&format!("{what} vs float64"), &gpu, &reference, rtol);
            assert_close(&format!("{what} vs cpu"), &gpu, &cpu, rtol);
        }
        let x = host(&draw.uniform(5 * 7 * 64, -1.0, 1.0), &[5, 7, 64], dtype);
        let w = host(&draw.uniform(48 * 64, -1.0, 1.0), &[48, 64], dtype);
        let bias = host(&draw.uniform(48, -1.0, 1.0), &[48], dtype);
        let product = matmul_reference(&x, &w, false, true);
        let bias_values = values(&bias);
        let with_bias: Vec<f64> = product.iter().enumerate().map(|(i, p)| p + bias_values[i % 48]).collect();
        let (gpu, cpu) = run_two(device, "linear", &Attrs::new(), &[x.clone(), w.clone(), bias]);
        assert_close(&format!("linear {dtype} with bias vs float64"), &gpu, &with_bias, rtol);
        assert_close(&format!("linear {dtype} with bias vs cpu"), &gpu, &cpu, rtol);
        let (gpu, _) = run_two(device, "linear", &Attrs::new(), &[x, w]);
        assert_close(&format!("linear {dtype}"), &gpu, &product, rtol);
    }
    // a transposed view on the device is read in place
    let a = host(&draw.uniform(40 * 30, -1.0, 1.0), &[40, 30], DType::Float32);
    let b = host(&draw.uniform(40 * 20, -1.0, 1.0), &[40, 20], DType::Float32);
    let at = a.to(device).unwrap().transpose(0, 1).unwrap();
    let got = ops::call("matmul", &Attrs::new(), &[&at, &b.to(device).unwrap()]).unwrap().remove(0);
    assert_close("matmul of a transposed device view", &values(&got), &matmul_reference(&a, &b, true, false), 1e-5);
    // the declared workspace is cuBLASLt's
    let k = nbxtensor::backend::cuda::launches().bind("matmul", DType::Float32, &Attrs::new()).unwrap();
    let cost =
        k.declare(&[TensorMeta::new(DType::Float32, &[4, 4]), TensorMeta::new(DType::Float32, &[4, 4])]).unwrap();
    assert_eq!(cost.workspace, MATMUL_WORKSPACE_BYTES);
}

/// The kernels that read a constant input before they await their inputs (the one-row GEMV's
/// weight, a norm's weight) wait when the op just before wrote it: the weights here are made
/// by a `mul` queued right before, into memory that held zeros a moment before.
#[test]
fn weights_written_by_the_previous_op_are_read_after_it() {
    let Some(device) = gpu("weights_written_by_the_previous_op_are_read_after_it") else { return };
    let mut draw = Draw::new(23);
    let (n, k) = (4096i64, 4096i64);
    let dtype = DType::Bfloat16;
    let x = host(&draw.uniform(k as usize, -1.0, 1.0), &[1, k], dtype);
    let w0 = host(&draw.uniform((n * k) as usize, -1.0, 1.0), &[n, k], dtype);
    let g0 = host(&draw.uniform(k as usize, 0.5, 1.5), &[k], dtype);
    let two = host(&[2.0], &[], dtype);
    let call = |op: &str, inputs: &[&Tensor]| ops::call(op, &Attrs::new(), inputs).unwrap().remove(0);
    let (w2, g2) = (call("mul", &[&w0, &two]), call("mul", &[&g0, &two]));
    let want_linear = values(&call("linear", &[&x, &w2]));
    let eps = Attrs::new().with("eps", AttrValue::Float(1e-5));
    let want_norm = values(&ops::call("add_rms_norm", &eps, &[&x, &x, &g2]).unwrap()[1]);
    let on = |t: &Tensor| t.to(device).unwrap();
    let (xd, w0d, g0d, twod, zero) = (on(&x), on(&w0), on(&g0), on(&two), on(&host(&[0.0], &[], dtype)));
    for round in 0..4 {
        // blocks of the weights' sizes filled with zeros and freed: the pool hands them to the mul
        drop((call("mul", &[&w0d, &zero]), call("mul", &[&g0d, &zero])));
        let w = call("mul", &[&w0d, &twod]);
        let got = values(&call("linear", &[&xd, &w]));
        assert_close(&format!("round {round}: linear of a weight the previous op wrote"), &got, &want_linear, 2e-2);
        let g = call("mul", &[&g0d, &twod]);
        let got = values(&ops::call("add_rms_norm", &eps, &[&xd, &xd, &g]).unwrap()[1]);
        assert_close(&format!("round {round}: add_rms_norm of a weight the previous op wrote"), &got, &want_norm, 2e-2);
    }
}

fn block(inputs: &[Tensor]) -> Result<Vec<Tensor>, ProgramError> {
    let (x, w1, w2) = (&inputs[0], &inputs[1], &inputs[2]);
    let h = ops::call("linear", &Attrs::new(), &[x, w1])?.remove(0);
    let h = ops::call("gelu", &Attrs::new(), &[&h])?.remove(0);
    let y = ops::call("linear", &Attrs::new(), &[&h, w2])?.remove(0);
    Ok(vec![ops::call("tanh", &Attrs::new(), &[&y])?.remove(0)])
}

/// A kernel that negates on its first launch and takes the absolute value after: its CUDA
/// graph differs from the eager run.
struct Drifting(AtomicU32, Arc<dyn Kernel>, Arc<dyn Kernel>);

impl Kernel for Drifting {
    fn key(&self) -> String {
        "drifting:fp32".into()
    }
    fn declare(&self, inputs: &[TensorMeta]) -> Result<Cost, KernelError> {
        self.1.declare(inputs)
    }
    fn launch(&self, launch: Launch<'_>) -> Result<(), KernelError> {
        if self.0.fetch_add(1, Ordering::SeqCst) == 0 {
            self.1.launch(launch)
        } else {
            self.2.launch(launch)
        }
    }
}

#[test]
fn programs_run_planned_and_replay_as_verified_cuda_graphs() {
    let Some(device) = gpu("programs_run_planned_and_replay_as_verified_cuda_graphs") else { return };
    let mut draw = Draw::new(12);
    let x = host(&draw.uniform(8 * 64, -1.0, 1.0), &[8, 64], DType::Float32).to(device).unwrap();
    let w1 = host(&draw.uniform(256 * 64, -0.2, 0.2), &[256, 64], DType::Float32).to(device).unwrap();
    let w2 = host(&draw.uniform(64 * 256, -0.2, 0.2), &[64, 256], DType::Float32).to(device).unwrap();
    let eager = block(&[x.clone(), w1.clone(), w2.clone()]).unwrap().remove(0);

    let program = program::trace(&[x.clone()], |t| block(&[t[0].clone(), w1.clone(), w2.clone()])).unwrap();
    assert_eq!(program.device, device);
    assert_eq!(program.steps.len(), 4);
    let plan = program.plan().unwrap();
    assert!(plan.arena_bytes() as f64 <= plan.plan.lower_bound as f64 * 1.05, "{}", plan.report());

    // the arena is the device memory the run takes, to the driver's granularity (2 MiB)
    let allocator = cuda_allocator(device.index).unwrap();
    allocator.release_parked().unwrap();
    let ctx = context(device.index).unwrap();
    let (free_before, _) = ctx.memory_info().unwrap();
    let executable = Executable::new(program.clone(), plan).unwrap();
    let (free_after, _) = ctx.memory_info().unwrap();
    let taken = free_before - free_after;
    let arena = executable.arena_bytes() as u64;
    let granularity = 2u64 << 20;
    assert_eq!(taken, arena.div_ceil(granularity) * granularity, "device memory taken by a {arena}-byte arena");

    let run = executable.run(&[&x]).unwrap().remove(0);
    assert_eq!(run.device(), device);
    assert_eq!(run.to_bytes().unwrap(), eager.to_bytes().unwrap(), "a planned run is byte-equal to eager");
    let replay = executable.capture(&[&x]).unwrap();
    // one node per kernel at least (cuBLASLt may split a product into two kernels)
    let nodes = replay.graph().map(|g| g.nodes()).unwrap_or(0);
    assert!(nodes >= 4, "{nodes} graph nodes for 4 launches");
    let y = host(&draw.uniform(8 * 64, -1.0, 1.0), &[8, 64], DType::Float32).to(device).unwrap();
    let replayed = replay.run(&[&y]).unwrap().remove(0);
    let expected = block(&[y, w1.clone(), w2.clone()]).unwrap().remove(0);
    assert_eq!(replayed.to_bytes().unwrap(), expected.to_bytes().unwrap(), "the replay is byte-equal to eager");

    // a kernel whose graph differs from the eager run is refused, and named
    let cat = nbxtensor::backend::cuda::launches();
    let drifting: Arc<dyn Kernel> = Arc::new(Drifting(
        AtomicU32::new(0),
        cat.bind("neg", DType::Float32, &Attrs::new()).unwrap(),
        cat.bind("abs", DType::Float32, &Attrs::new()).unwrap(),
    ));
    let unstable = program::trace(&[x.clone()], |t| {
        let a = ops::call("exp", &Attrs::new(), &[&t[0]])?.remove(0);
        Ok(ops::call_kernel(&drifting, &[&a])?)
    })
    .unwrap();
    let plan = unstable.plan().unwrap();
    let err = Executable::new(unstable, plan).unwrap().capture(&[&x]).map(drop).unwrap_err();
    // compared on the device, then read back to name the byte: exp(x) > 0, so neg and abs first
    // differ in element 0's sign, its last byte (little-endian float32)
    match err {
        ProgramError::NotReproducible { index, ref key, byte, .. } => {
            assert_eq!((index, key.as_str(), byte), (1, "drifting:fp32", 3))
        }
        other => panic!("expected NotReproducible, got {other}"),
    }
}

/// A CUDA program is traced, planned and priced without a GPU (a dry run).
#[test]
fn cuda_programs_trace_and_price_without_a_device() {
    let cuda = Device { kind: DeviceKind::Cuda, index: 0 };
    let x = Tensor::symbolic(cuda, DType::Bfloat16, &[16, 64]).unwrap();
    let w1 = Tensor::symbolic(cuda, DType::Bfloat16, &[256, 64]).unwrap();
    let w2 = Tensor::symbolic(cuda, DType::Bfloat16, &[64, 256]).unwrap();
    let program = program::trace(&[x], |t| block(&[t[0].clone(), w1.clone(), w2.clone()])).unwrap();
    assert_eq!(program.keys(), vec!["linear:bf16", "gelu:bf16", "linear:bf16", "tanh:bf16"]);
    let plan = program.plan().unwrap();
    assert_eq!(plan.arena_bytes() % 256, 0);
    let h200 = Peaks::of_device("nvidia", "h200").unwrap();
    // the device file has no non-tensor-core bfloat16 rate: pricing says which fact is missing
    let missing = program.price(&h200).map(drop).unwrap_err().to_string();
    assert!(missing.contains("no peak rate for bfloat16"), "{missing}");
    let x = Tensor::symbolic(cuda, DType::Float32, &[1024, 1024]).unwrap();
    let chain = program::trace(&[x], |t| {
        let e = ops::call("exp", &Attrs::new(), &[&t[0]])?.remove(0);
        Ok(ops::call("tanh", &Attrs::new(), &[&e])?)
    })
    .unwrap();
    let price = chain.price(&h200).unwrap();
    assert_eq!((price.launches, price.flops), (2, 2 * 1024 * 1024));
    // two passes over 4 MiB in, 4 MiB out, at the datasheet's 4.8 TB/s
    let floor = 2.0 * 2.0 * 4.0 * 1024.0 * 1024.0 / 4.8e12;
    assert!((price.seconds - floor).abs() < floor * 1e-9, "{} vs {floor}", price.seconds);
}
