//! Unary kernels: one element in, one element out, of the input's shape and dtype.
//!
//! Floats (float32, float16, bfloat16 computed in float32; float64 in float64): neg, abs, exp,
//! log, sqrt, rsqrt, tanh, sigmoid, silu, gelu (the erf form, `x Φ(x)`: in float64 as
//! `x/2 erfc(-x/√2)`, in float32 by the vectorized `gelu_f32`, within 6 ulp and accurate where
//! it is small), gelu_tanh (the tanh
//! approximation), relu. Signed integers (int8 … int64): neg and abs (wrapping, as numpy:
//! `-(-128)` is `-128` in int8) and relu.

use super::buffers::{map_into, par_pieces, read, write};
use super::math::{Real, Stored, REALS};
use crate::backend::CapabilityTable;
use crate::dtype::DType;
use crate::kernel::{Attrs, Cost, Kernel, KernelError, Launch, Result, TensorMeta};
use crate::tensor::Element;
use half::{bf16, f16};

/// A unary op.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Neg,
    Abs,
    Exp,
    Log,
    Sqrt,
    Rsqrt,
    Tanh,
    Sigmoid,
    Silu,
    Gelu,
    GeluTanh,
    Relu,
}

/// Each op: its name, its operations per element (a transcendental function counts one), and
/// whether signed integers have it.
const OPS: [(Op, &str, u64, bool); 12] = [
    (Op::Neg, "neg", 1, true),
    (Op::Abs, "abs", 1, true),
    (Op::Exp, "exp", 1, false),
    (Op::Log, "log", 1, false),
    (Op::Sqrt, "sqrt", 1, false),
    (Op::Rsqrt, "rsqrt", 2, false),
    (Op::Tanh, "tanh", 1, false),
    (Op::Sigmoid, "sigmoid", 4, false),
    (Op::Silu, "silu", 5, false),
    (Op::Gelu, "gelu", 5, false),
    (Op::GeluTanh, "gelu_tanh", 10, false),
    (Op::Relu, "relu", 1, true),
];

/// The signed integer dtypes neg, abs and relu serve.
const SIGNED: [DType; 4] = [DType::Int8, DType::Int16, DType::Int32, DType::Int64];

struct Unary {
    op: Op,
    name: &'static str,
    flops: u64,
    dtype: DType,
}

/// sqrt(2/π), the scale of the tanh approximation of GELU.
const SQRT_2_OVER_PI: f64 = 0.797_884_560_802_865_4;
/// The cubic coefficient of the tanh approximation of GELU (Hendrycks & Gimpel, 2016).
const GELU_CUBIC: f64 = 0.044_715;

/// `out[i] = f(x[i])` over pieces on the pool.
/// Maps the launch's input into its output with `f` in the compute type; the output may be
/// the input's own memory (planned in place): `map_into` reads each element before writing it.
fn map<T: Stored>(launch: &Launch<'_>, f: impl Fn(T::Compute) -> T::Compute + Sync) -> Result<()> {
    map_into(
        &launch.inputs[0],
        &launch.outputs[0],
        #[inline(always)]
        |v: T| T::store(f(v.load())),
    )
}

fn run_float<T: Stored>(op: Op, launch: &Launch<'_>) -> Result<()> {
    let one = <T::Compute as Real>::ONE;
    match op {
        Op::Neg => map::<T>(launch, |v| -v),
        Op::Abs => map::<T>(launch, Real::abs),
        Op::Exp => map::<T>(launch, Real::exp),
        Op::Log => map::<T>(launch, Real::ln),
        Op::Sqrt => map::<T>(launch, Real::sqrt),
        Op::Rsqrt => map::<T>(launch, |v| one / v.sqrt()),
        Op::Tanh => map::<T>(launch, Real::tanh),
        Op::Sigmoid => map::<T>(launch, |v| one / (one + (-v).exp())),
        Op::Silu => map::<T>(launch, |v| v / (one + (-v).exp())),
        Op::Gelu => map::<T>(launch, Real::gelu),
        Op::GeluTanh => {
            let (scale, cubic) = (<T::Compute as Real>::of(SQRT_2_OVER_PI), <T::Compute as Real>::of(GELU_CUBIC));
            let two = one + one;
            // x/2 (1 + tanh(u)) written as x sigmoid(2u): no cancellation where it is small
            map::<T>(launch, |v| v / (one + (-(two * scale * (v + cubic * v * v * v))).exp()))
        }
        // NaN stays NaN (numpy's maximum(x, 0) and torch's relu propagate it)
        Op::Relu => map::<T>(launch, |v| if v < <T::Compute as Real>::ZERO { <T::Compute as Real>::ZERO } else { v }),
    }
}

/// Wrapping integer arithmetic of one signed integer type.
trait SignedInt: Element {
    fn wrapping_neg(self) -> Self;
    fn wrapping_abs(self) -> Self;
    fn relu(self) -> Self;
}

macro_rules! signed_int {
    ($($t:ty),*) => {$(
        impl SignedInt for $t {
            #[inline(always)]
            fn wrapping_neg(self) -> $t { <$t>::wrapping_neg(self) }
            #[inline(always)]
            fn wrapping_abs(self) -> $t { <$t>::wrapping_abs(self) }
            #[inline(always)]
            fn relu(self) -> $t { self.max(0) }
        }
    )*};
}

signed_int!(i8, i16, i32, i64);

fn run_int<T: SignedInt>(op: Op, launch: &Launch<'_>) -> Result<()> {
    let x = read::<T>(&launch.inputs[0])?;
    // SAFETY: the output is this launch's own buffer.
    let out = unsafe { write::<T>(&launch.outputs[0])? };
    let f: fn(T) -> T = match op {
        Op::Neg => T::wrapping_neg,
        Op::Abs => T::wrapping_abs,
        Op::Relu => T::relu,
        other => return Err(KernelError::Invalid(format!("{other:?} has no integer loop"))),
    };
    par_pieces(out, |start, piece| {
        for (o, v) in piece.iter_mut().zip(&x[start..]) {
            *o = f(*v);
        }
    });
    Ok(())
}

impl Kernel for Unary {
    fn key(&self) -> String {
        format!("{}:{}", self.name, self.dtype.launch_key())
    }

    fn declare(&self, inputs: &[TensorMeta]) -> Result<Cost> {
        let [input] = inputs else {
            return Err(KernelError::Invalid(format!("{}: takes one input, got {}", self.name, inputs.len())));
        };
        if input.dtype != self.dtype {
            return Err(KernelError::Invalid(format!(
                "{}: input is {}, the kernel serves {}",
                self.name, input.dtype, self.dtype
            )));
        }
        let mut cost = Cost::simple(vec![input.clone()], input.bytes()?, input.numel()? * self.flops)?;
        cost.in_place = vec![(0, 0)];
        Ok(cost)
    }

    fn launch(&self, launch: Launch<'_>) -> Result<()> {
        match self.dtype {
            DType::Float32 => run_float::<f32>(self.op, &launch),
            DType::Float16 => run_float::<f16>(self.op, &launch),
            DType::Bfloat16 => run_float::<bf16>(self.op, &launch),
            DType::Float64 => run_float::<f64>(self.op, &launch),
            DType::Int8 => run_int::<i8>(self.op, &launch),
            DType::Int16 => run_int::<i16>(self.op, &launch),
            DType::Int32 => run_int::<i32>(self.op, &launch),
            DType::Int64 => run_int::<i64>(self.op, &launch),
            other => Err(KernelError::Invalid(format!("{}: no loop for {other}", self.name))),
        }
    }
}

fn build(name: &str, dtype: DType, attrs: &Attrs) -> Result<Box<dyn Kernel>> {
    let &(op, name, flops, _) =
        OPS.iter().find(|entry| entry.1 == name).ok_or_else(|| KernelError::Invalid(format!("{name}: not unary")))?;
    attrs.only(name, &[])?;
    Ok(Box::new(Unary { op, name, flops, dtype }))
}

macro_rules! factory {
    ($name:literal) => {
        |dtype, attrs| build($name, dtype, attrs)
    };
}

/// Registers the unary ops: every op on the float dtypes, neg/abs/relu on the signed integers.
pub fn register(table: &mut CapabilityTable) {
    let factories: [(&str, crate::backend::KernelFactory); 12] = [
        ("neg", factory!("neg")),
        ("abs", factory!("abs")),
        ("exp", factory!("exp")),
        ("log", factory!("log")),
        ("sqrt", factory!("sqrt")),
        ("rsqrt", factory!("rsqrt")),
        ("tanh", factory!("tanh")),
        ("sigmoid", factory!("sigmoid")),
        ("silu", factory!("silu")),
        ("gelu", factory!("gelu")),
        ("gelu_tanh", factory!("gelu_tanh")),
        ("relu", factory!("relu")),
    ];
    for (name, factory) in factories {
        let integers = OPS.iter().any(|entry| entry.1 == name && entry.3);
        table.register(name, &REALS, factory);
        if integers {
            table.register(name, &SIGNED, factory);
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::kernel::Attrs;
    use crate::ops::call;
    use crate::tensor::Tensor;

    fn unary(op: &str, x: &Tensor) -> Tensor {
        call(op, &Attrs::new(), &[x]).unwrap().remove(0)
    }

    #[test]
    fn float_ops_match_the_standard_library() {
        let values = vec![-2.5f64, -0.75, 0.5, 1.25, 3.0];
        let x = Tensor::from_vec(values.clone(), &[5]).unwrap();
        let cases: [(&str, fn(f64) -> f64); 5] = [
            ("tanh", f64::tanh),
            ("sigmoid", |v| 1.0 / (1.0 + (-v).exp())),
            ("silu", |v| v / (1.0 + (-v).exp())),
            ("relu", |v| v.max(0.0)),
            ("neg", |v| -v),
        ];
        for (op, f) in cases {
            let got = unary(op, &x).to_vec::<f64>().unwrap();
            for (g, v) in got.iter().zip(&values) {
                assert!((g - f(*v)).abs() < 1e-15, "{op}({v}) = {g}");
            }
        }
    }

    #[test]
    fn gelu_forms_agree_near_zero_and_differ_by_little() {
        let x = Tensor::from_vec(vec![-1.0f32, 0.0, 1.0, 2.0], &[4]).unwrap();
        let exact = unary("gelu", &x).to_vec::<f32>().unwrap();
        let approx = unary("gelu_tanh", &x).to_vec::<f32>().unwrap();
        // GELU(1) = Φ(1) = 0.841344746… (the normal CDF at 1)
        assert!((exact[2] - 0.841_344_7).abs() < 1e-6, "{exact:?}");
        assert_eq!(exact[1], 0.0);
        for (e, a) in exact.iter().zip(&approx) {
            assert!((e - a).abs() < 1e-3);
        }
    }

    #[test]
    fn integer_neg_wraps_and_relu_clamps() {
        let x = Tensor::from_vec(vec![i8::MIN, -3, 0, 7], &[4]).unwrap();
        assert_eq!(unary("neg", &x).to_vec::<i8>().unwrap(), vec![i8::MIN, 3, 0, -7]);
        assert_eq!(unary("abs", &x).to_vec::<i8>().unwrap(), vec![i8::MIN, 3, 0, 7]);
        assert_eq!(unary("relu", &x).to_vec::<i8>().unwrap(), vec![0, 0, 0, 7]);
        let err = call("exp", &Attrs::new(), &[&x]).unwrap_err().to_string();
        assert!(err.contains("exp") && err.contains("int8"), "{err}");
    }
}
