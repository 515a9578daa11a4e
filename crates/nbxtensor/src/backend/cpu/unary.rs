//! Unary float kernels: one element in, one element out, computed in float32.

use super::buffers::{map_into, Float, FLOATS};
use crate::backend::CapabilityTable;
use crate::dtype::DType;
use crate::kernel::{Attrs, Cost, Kernel, KernelError, Launch, Result, TensorMeta};
use half::{bf16, f16};

/// The unary ops and their float32 functions.
const OPS: [(&str, fn(f32) -> f32); 3] = [("neg", |x| -x), ("exp", f32::exp), ("abs", f32::abs)];

struct Unary {
    op: &'static str,
    function: fn(f32) -> f32,
    dtype: DType,
}

fn build(op: &'static str) -> impl Fn(DType, &Attrs) -> Result<Box<dyn Kernel>> {
    move |dtype, attrs| {
        attrs.only(op, &[])?;
        let function =
            OPS.iter().find(|(name, _)| *name == op).map(|(_, f)| *f).expect("registered ops have a function");
        Ok(Box::new(Unary { op, function, dtype }))
    }
}

fn run<T: Float>(function: fn(f32) -> f32, launch: &Launch<'_>) -> Result<()> {
    map_into(&launch.inputs[0], &launch.outputs[0], |x: T| T::from_f32(function(x.to_f32())))
}

impl Kernel for Unary {
    fn key(&self) -> String {
        format!("{}:{}", self.op, self.dtype.launch_key())
    }

    fn declare(&self, inputs: &[TensorMeta]) -> Result<Cost> {
        let [input] = inputs else {
            return Err(KernelError::Invalid(format!("{}: takes one input, got {}", self.op, inputs.len())));
        };
        if input.dtype != self.dtype {
            return Err(KernelError::Invalid(format!(
                "{}: input is {}, the kernel serves {}",
                self.op, input.dtype, self.dtype
            )));
        }
        let mut cost = Cost::simple(vec![input.clone()], input.bytes()?, input.numel()?)?;
        cost.in_place = vec![(0, 0)];
        Ok(cost)
    }

    fn launch(&self, launch: Launch<'_>) -> Result<()> {
        match self.dtype {
            DType::Float32 => run::<f32>(self.function, &launch),
            DType::Float16 => run::<f16>(self.function, &launch),
            DType::Bfloat16 => run::<bf16>(self.function, &launch),
            other => Err(KernelError::Invalid(format!("{}: no loop for {other}", self.op))),
        }
    }
}

/// Registers the unary ops on the float dtypes.
pub fn register(table: &mut CapabilityTable) {
    table.register("neg", &FLOATS, |d, a| build("neg")(d, a));
    table.register("exp", &FLOATS, |d, a| build("exp")(d, a));
    table.register("abs", &FLOATS, |d, a| build("abs")(d, a));
}
