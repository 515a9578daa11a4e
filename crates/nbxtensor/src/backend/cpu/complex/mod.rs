//! complex64 and complex128 on the host: the loops of the unary, binary, comparison and
//! reduction families for complex elements (each family's launch calls here on a complex
//! dtype; `ops::spec` says what each op computes; matrix products go through `gemm`), the
//! arithmetic they share ([`math`]) and the C library's C99 complex functions ([`libm`]).
//!
//! Every part is computed in its own type (float32 for complex64, float64 for complex128),
//! but sums, products and means reduce in complex128 and round once, as the real reductions
//! accumulate in float64.

mod libm;
pub mod math;

use self::libm::Function;
use self::math::{c, Part};
use super::broadcast::zip2;
use super::buffers::{map_into, write};
use super::flags::as_bytes;
use super::reduce_loop::Fold;
use crate::kernel::{KernelError, Launch, Result};
use crate::ops::spec::binary::{Binary, BinaryOp};
use crate::ops::spec::reduce::ReduceOp;
use crate::ops::spec::unary::{Unary, UnaryOp};
use crate::tensor::{Complex, Element, Tensor};

/// The unary op of `spec` on complex elements of part `P`.
pub fn unary<P: Part>(spec: &Unary, launch: &Launch<'_>) -> Result<()>
where
    Complex<P>: Element,
{
    let (x, y) = (&launch.inputs[0], &launch.outputs[0]);
    let same = |f: &(dyn Fn(Complex<P>) -> Complex<P> + Sync)| map_into(x, y, f);
    let part = |f: fn(Complex<P>) -> P| map_into(x, y, f);
    let test = |f: fn(Complex<P>) -> bool| map_into(x, &as_bytes(y)?, move |z: Complex<P>| u8::from(f(z)));
    let call = |f: Function| map_into(x, y, move |z: Complex<P>| math::libm(f, z));
    match spec.op {
        UnaryOp::Neg => same(&|z| c(-z.re, -z.im)),
        UnaryOp::Conj => same(&|z| c(z.re, -z.im)),
        UnaryOp::Abs => part(math::abs),
        UnaryOp::Real => part(|z| z.re),
        UnaryOp::Imag => part(|z| z.im),
        UnaryOp::Square => same(&|z| math::mul(z, z)),
        UnaryOp::Reciprocal => same(&|z| math::div(c(P::ONE, P::ZERO), z)),
        UnaryOp::Sign => same(&math::sign),
        UnaryOp::Round => same(&math::round),
        UnaryOp::Expm1 => same(&math::expm1),
        UnaryOp::Log1p => same(&math::log1p),
        UnaryOp::Log2 => same(&|z| math::log_base(z, 2.0)),
        UnaryOp::Log10 => same(&|z| math::log_base(z, 10.0)),
        UnaryOp::Isnan => test(math::is_nan),
        UnaryOp::Isinf => test(math::is_infinite),
        UnaryOp::Isfinite => test(math::is_finite),
        UnaryOp::Exp => call(Function::Exp),
        UnaryOp::Log => call(Function::Log),
        UnaryOp::Sqrt => call(Function::Sqrt),
        UnaryOp::Sin => call(Function::Sin),
        UnaryOp::Cos => call(Function::Cos),
        UnaryOp::Tan => call(Function::Tan),
        UnaryOp::Sinh => call(Function::Sinh),
        UnaryOp::Cosh => call(Function::Cosh),
        UnaryOp::Tanh => same(&math::tanh),
        UnaryOp::Asin => call(Function::Asin),
        UnaryOp::Acos => call(Function::Acos),
        UnaryOp::Atan => call(Function::Atan),
        UnaryOp::Asinh => call(Function::Asinh),
        UnaryOp::Acosh => call(Function::Acosh),
        UnaryOp::Atanh => call(Function::Atanh),
        other => Err(KernelError::Invalid(format!("{}: no complex loop", other.name()))),
    }
}

/// The binary op of `spec` (arithmetic or a comparison) on complex elements of part `P`.
pub fn binary<P: Part>(spec: &Binary, launch: &Launch<'_>) -> Result<()>
where
    Complex<P>: Element,
{
    let (a, b, out_tensor) = (&launch.inputs[0], &launch.inputs[1], &launch.outputs[0]);
    let shape = out_tensor.shape();
    if spec.op.is_comparison() {
        let view = as_bytes(out_tensor)?;
        // SAFETY: the output is this launch's own buffer.
        let out = unsafe { write::<u8>(&view)? };
        return match spec.op {
            BinaryOp::Eq => zip2(a, b, shape, out, |p: Complex<P>, q: Complex<P>| u8::from(p == q)),
            BinaryOp::Ne => zip2(a, b, shape, out, |p: Complex<P>, q: Complex<P>| u8::from(p != q)),
            other => Err(KernelError::Invalid(format!("{}: complex numbers have no order", other.name()))),
        };
    }
    // SAFETY: the output is this launch's own buffer.
    let out = unsafe { write::<Complex<P>>(out_tensor)? };
    let f: fn(Complex<P>, Complex<P>) -> Complex<P> = match spec.op {
        BinaryOp::Add => math::add,
        BinaryOp::Sub => math::sub,
        BinaryOp::Mul => math::mul,
        BinaryOp::Div => math::div,
        BinaryOp::Pow => math::pow,
        other => return Err(KernelError::Invalid(format!("{}: no complex loop", other.name()))),
    };
    zip2(a, b, shape, out, f)
}

/// The sum, mean or product (`ReduceOp`) of complex elements, accumulated in complex128 and
/// rounded once.
struct Accumulate<P>(ReduceOp, std::marker::PhantomData<P>);

impl<P: Part> Fold for Accumulate<P> {
    type In = Complex<P>;
    type Acc = Complex<f64>;
    type Out = Complex<P>;
    fn init(&self) -> Complex<f64> {
        if self.0 == ReduceOp::Prod {
            c(1.0, 0.0)
        } else {
            c(0.0, 0.0)
        }
    }
    #[inline(always)]
    fn fold(&self, acc: Complex<f64>, x: Complex<P>, _: usize) -> Complex<f64> {
        let x = c(x.re.wide(), x.im.wide());
        if self.0 == ReduceOp::Prod {
            math::mul(acc, x)
        } else {
            math::add(acc, x)
        }
    }
    fn finish(&self, acc: Complex<f64>, count: usize) -> Complex<P> {
        let n = if self.0 == ReduceOp::Mean { count as f64 } else { 1.0 };
        c(P::of(acc.re / n), P::of(acc.im / n))
    }
}

/// The reduction `op` of complex elements of part `P`, `input` into `output` over the axes
/// marked in `reduced`.
pub fn reduce<P: Part>(op: ReduceOp, input: &Tensor, output: &Tensor, reduced: &[bool]) -> Result<()>
where
    Complex<P>: Element,
{
    let x = super::buffers::read::<Complex<P>>(input)?;
    // SAFETY: the output is this launch's own buffer.
    let out = unsafe { write::<Complex<P>>(output)? };
    let shape = input.shape();
    match op {
        ReduceOp::Sum | ReduceOp::Mean | ReduceOp::Prod => {
            super::reduce_loop::reduce(&Accumulate::<P>(op, Default::default()), &x, shape, reduced, out)
        }
        other => Err(KernelError::Invalid(format!("{}: complex numbers have no order", other.name()))),
    }
}

#[cfg(test)]
mod tests {
    use crate::kernel::Attrs;
    use crate::ops::call;
    use crate::tensor::{Complex, Tensor};
    use crate::DType;

    fn z(values: &[(f64, f64)]) -> Tensor {
        let v: Vec<Complex<f64>> = values.iter().map(|&(re, im)| Complex::new(re, im)).collect();
        Tensor::from_vec(v, &[values.len() as i64]).unwrap()
    }

    fn run(op: &str, inputs: &[&Tensor]) -> Tensor {
        call(op, &Attrs::new(), inputs).unwrap().remove(0)
    }

    #[test]
    fn unary_ops_give_complex_or_their_part() {
        let x = z(&[(3.0, -4.0), (0.0, 1.0)]);
        let abs = run("abs", &[&x]);
        assert_eq!((abs.dtype(), abs.to_vec::<f64>().unwrap()), (DType::Float64, vec![5.0, 1.0]));
        assert_eq!(run("imag", &[&x]).to_vec::<f64>().unwrap(), vec![-4.0, 1.0]);
        assert_eq!(run("conj", &[&x]).to_vec::<Complex<f64>>().unwrap()[0], Complex::new(3.0, 4.0));
        let e = run("exp", &[&x]).to_vec::<Complex<f64>>().unwrap();
        assert!((e[1].re - 1f64.cos()).abs() < 1e-16 && (e[1].im - 1f64.sin()).abs() < 1e-16, "{e:?}");
        let n = run("isnan", &[&z(&[(0.0, f64::NAN), (1.0, 2.0)])]);
        assert_eq!(n.to_bytes().unwrap(), vec![1, 0]);
    }

    #[test]
    fn binary_ops_broadcast_and_compare() {
        let a = z(&[(1.0, 2.0), (3.0, 4.0)]);
        let b = z(&[(0.0, 1.0)]);
        let p = run("mul", &[&a, &b]).to_vec::<Complex<f64>>().unwrap();
        assert_eq!(p, vec![Complex::new(-2.0, 1.0), Complex::new(-4.0, 3.0)]);
        let q = run("div", &[&a, &b]).to_vec::<Complex<f64>>().unwrap();
        assert_eq!(q, vec![Complex::new(2.0, -1.0), Complex::new(4.0, -3.0)]);
        assert_eq!(run("eq", &[&a, &z(&[(1.0, 2.0), (3.0, -4.0)])]).to_bytes().unwrap(), vec![1, 0]);
        let err = call("lt", &Attrs::new(), &[&a, &a]).unwrap_err().to_string();
        assert!(err.contains("lt") && err.contains("complex128"), "{err}");
    }

    #[test]
    fn sums_products_and_matrix_products() {
        let a = z(&[(1.0, 1.0), (2.0, -1.0), (0.0, 3.0), (1.0, 0.0)]).reshape(&[2, 2]).unwrap();
        let attrs = Attrs::new().with("axes", crate::kernel::AttrValue::Ints(vec![0]));
        let s = call("sum", &attrs, &[&a]).unwrap().remove(0).to_vec::<Complex<f64>>().unwrap();
        assert_eq!(s, vec![Complex::new(1.0, 4.0), Complex::new(3.0, -1.0)]);
        let p = call("prod", &attrs, &[&a]).unwrap().remove(0).to_vec::<Complex<f64>>().unwrap();
        assert_eq!(p, vec![Complex::new(-3.0, 3.0), Complex::new(2.0, -1.0)]);
        // [[1+i, 2-i], [3i, 1]] squared
        let m = run("matmul", &[&a, &a]).to_vec::<Complex<f64>>().unwrap();
        let want = [(3.0, 8.0), (5.0, 0.0), (-3.0, 6.0), (4.0, 6.0)];
        assert_eq!(m, want.iter().map(|&(re, im)| Complex::new(re, im)).collect::<Vec<_>>());
    }
}
