//! Programs end to end: trace, plan, price, execute, capture, verified replay; a
//! nondeterministic kernel refused by the capture. One test function: the host allocator's
//! accounting is process-wide, so nothing else may allocate while it is read.

use nbxtensor::kernel::{Attrs, Cost, Kernel, KernelError, Launch, TensorMeta};
use nbxtensor::memory::{host_allocator, Allocator};
use nbxtensor::program::{self, Executable, ProgramError};
use nbxtensor::tensor::Tensor;
use nbxtensor::{ops, DType};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

/// A kernel whose output changes at every launch: what verification must catch.
struct Drifting(AtomicU32);

impl Kernel for Drifting {
    fn key(&self) -> String {
        "drifting:fp32".into()
    }
    fn declare(&self, inputs: &[TensorMeta]) -> Result<Cost, KernelError> {
        Cost::simple(vec![inputs[0].clone()], inputs[0].bytes()?, 0)
    }
    fn launch(&self, launch: Launch<'_>) -> Result<(), KernelError> {
        let tick = self.0.fetch_add(1, Ordering::SeqCst) as f32;
        let values = vec![tick; launch.outputs[0].numel() as usize];
        let out = launch.outputs[0].data_ptr().cast::<f32>();
        // SAFETY: the output holds numel float32 elements.
        unsafe { std::ptr::copy_nonoverlapping(values.as_ptr(), out, values.len()) };
        Ok(())
    }
}

fn chain(inputs: &[Tensor]) -> Result<Vec<Tensor>, ProgramError> {
    let a = ops::call("exp", &Attrs::new(), &[&inputs[0]])?.remove(0);
    let b = ops::call("neg", &Attrs::new(), &[&a])?.remove(0);
    let c = ops::call("abs", &Attrs::new(), &[&b.transpose(0, 1)?])?.remove(0);
    Ok(vec![c, a])
}

#[test]
fn programs_trace_plan_price_run_and_replay_verified() {
    let x = Tensor::from_vec((0..12).map(|i| i as f32 / 7.0).collect(), &[3, 4]).unwrap();
    let eager = chain(&[x.clone()]).unwrap();

    let program = program::trace(&[x.clone()], chain).unwrap();
    assert_eq!(program.keys(), vec!["exp:fp32", "neg:fp32", "abs:fp32"]);
    let plan = program.plan().unwrap();
    assert!(plan.arena_bytes() >= plan.plan.lower_bound);
    assert!(plan.report().contains("arena"));

    // the run allocates exactly what the price predicted
    let peaks = nbxtensor::backend::Peaks::of_device("nvidia", "h200").unwrap();
    let price = program.price(&peaks).unwrap();
    assert_eq!(price.arena_bytes, plan.arena_bytes());
    let before = host_allocator().in_use();
    let executable = Executable::new(program.clone(), plan).unwrap();
    assert_eq!(host_allocator().in_use() - before, price.allocated_bytes);

    let outputs = executable.run(&[&x]).unwrap();
    for (got, want) in outputs.iter().zip(&eager) {
        assert_eq!(got.to_bytes().unwrap(), want.to_bytes().unwrap());
    }
    let y = Tensor::from_vec((0..12).map(|i| -(i as f32) / 3.0).collect(), &[3, 4]).unwrap();
    executable.run(&[&y]).unwrap(); // the arena now holds y's outputs
    let replay = executable.capture(&[&x]).unwrap();
    // the capture's checked run on x left x's outputs in the arena: no third run needed
    let kept = replay.executable().last_outputs().unwrap();
    assert_eq!(kept.len(), eager.len());
    for (got, want) in kept.iter().zip(&eager) {
        assert_eq!(got.to_bytes().unwrap(), want.to_bytes().unwrap());
    }
    let replayed = replay.run(&[&y]).unwrap();
    let expected = chain(&[y.clone()]).unwrap();
    assert_eq!(replayed[0].to_vec::<f32>().unwrap(), expected[0].to_vec::<f32>().unwrap());
    let kept = replay.executable().last_outputs().unwrap();
    assert_eq!(kept[0].to_vec::<f32>().unwrap(), expected[0].to_vec::<f32>().unwrap());

    // a kernel that is not reproducible is caught, and named
    let drifting: Arc<dyn Kernel> = Arc::new(Drifting(AtomicU32::new(0)));
    let unstable = program::trace(&[x.clone()], |t| {
        let a = ops::call("exp", &Attrs::new(), &[&t[0]])?.remove(0);
        Ok(ops::call_kernel(&drifting, &[&a])?)
    })
    .unwrap();
    let plan = unstable.plan().unwrap();
    let err = Executable::new(unstable, plan).unwrap().capture(&[&x]).map(drop).unwrap_err();
    match err {
        ProgramError::NotReproducible { index, ref key, .. } => assert_eq!((index, key.as_str()), (1, "drifting:fp32")),
        other => panic!("expected NotReproducible, got {other}"),
    }
    assert!(err.to_string().contains("launch 1 (drifting:fp32)"));

    // the host's measured rates price a program on the CPU
    let host = nbxtensor::backend::of(nbxtensor::memory::Device::CPU).peaks().unwrap();
    assert!(host.bandwidth > 0.0 && host.matrix["float32"] > 0.0 && host.vector["bfloat16"] > 0.0);
    assert!(program.price(&host).unwrap().seconds > 0.0);
    assert_eq!(
        nbxtensor::backend::of(nbxtensor::memory::Device::CPU).peaks().unwrap(),
        host,
        "measured once per process"
    );

    // a traced tensor has no data to read
    let refused =
        program::trace(&[x.clone()], |t| Ok(vec![Tensor::from_bytes(DType::Float32, &[3, 4], &t[0].to_bytes()?)?]));
    assert!(refused.map(drop).unwrap_err().to_string().contains("no data"));
}
