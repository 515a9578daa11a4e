//! The binary ops on the host (`ops::spec::binary` says what each computes), with numpy
//! broadcasting (`broadcast::zip2`): floats through [`Real`] (float32 for float32 and the half
//! formats, float64 for float64), integers wrapping as numpy does, bool bytewise. The
//! comparisons live beside, in `compare.rs`.

use super::broadcast::zip2;
use super::buffers::write;
use super::flags::as_bytes;
use super::math::{Real, Stored};
use crate::backend::LaunchTable;
use crate::dtype::DType;
use crate::kernel::{KernelError, Launch, Result};
use crate::ops::spec::binary::{Binary, BinaryOp};
use crate::tensor::Element;
use half::{bf16, f16};

/// The larger of two values; NaN when either is NaN.
#[inline(always)]
fn maximum<R: Real>(p: R, q: R) -> R {
    if p.is_nan() || p > q {
        p
    } else {
        q
    }
}

/// The smaller of two values; NaN when either is NaN.
#[inline(always)]
fn minimum<R: Real>(p: R, q: R) -> R {
    if p.is_nan() || p < q {
        p
    } else {
        q
    }
}

/// The floored quotient as the Array API states it: numpy's `divmod` quotient for finite
/// operands; with one operand infinite, `a / b` (an infinity, or a zero signed as the
/// quotient), where `divmod`'s remainder arithmetic gives NaN or -1.
#[inline(always)]
fn floored<R: Real>(a: R, b: R) -> R {
    if a.is_infinite() != b.is_infinite() && !a.is_nan() && !b.is_nan() {
        a / b
    } else {
        divmod(a, b).0
    }
}

/// numpy's `divmod` of floats (`npy_divmod`): the floored quotient and the remainder with the
/// divisor's sign; a zero divisor gives `a / b` and NaN.
#[inline(always)]
fn divmod<R: Real>(a: R, b: R) -> (R, R) {
    let zero = R::ZERO;
    let mut rem = a.fmod(b);
    if b == zero {
        return (a / b, rem);
    }
    let mut div = (a - rem) / b;
    if rem != zero {
        if (b < zero) != (rem < zero) {
            rem = rem + b;
            div = div - R::ONE;
        }
    } else {
        rem = zero.copysign(b);
    }
    let quotient = if div != zero {
        let floor = div.floor();
        if div - floor > R::of(0.5) {
            floor + R::ONE
        } else {
            floor
        }
    } else {
        zero.copysign(a / b)
    };
    (quotient, rem)
}

/// `ln(e^a + e^b)` without overflow (numpy's `npy_logaddexp`).
#[inline(always)]
fn logaddexp<R: Real>(a: R, b: R) -> R {
    if a == b {
        return a + R::of(std::f64::consts::LN_2);
    }
    let d = a - b;
    if d > R::ZERO {
        a + (-d).exp().ln_1p()
    } else if d <= R::ZERO {
        b + d.exp().ln_1p()
    } else {
        d
    }
}

/// `silu(a) · b` with e = e^-|a| ≤ 1, so that nothing overflows: `a / (1 + e)` for a ≥ 0,
/// `a · e / (1 + e)` below (a subnormal e^a where `a / (1 + e^-a)` would give 0).
#[inline(always)]
fn silu_mul<R: Real>(a: R, b: R) -> R {
    let e = (-a.abs()).exp();
    let silu = if a >= R::ZERO { a / (R::ONE + e) } else { a * e / (R::ONE + e) };
    silu * b
}

/// The next value of a stored float type after `self` toward `toward`, by its bit patterns.
trait NextAfter: Stored {
    fn next_after(self, toward: Self) -> Self;
}

macro_rules! next_after {
    ($($t:ty: $bits:ty),*) => {$(
        impl NextAfter for $t {
            fn next_after(self, toward: $t) -> $t {
                let (a, b) = (self.load(), toward.load());
                if a.is_nan() || b.is_nan() {
                    return <$t as Stored>::store(a + b);
                }
                if a == b {
                    return toward;
                }
                let bits = self.to_bits();
                let sign_bit: $bits = 1 << (<$bits>::BITS - 1);
                if a == <<$t as Stored>::Compute as Real>::ZERO {
                    // the smallest subnormal, with the sign of the direction
                    let tiny: $bits = 1;
                    return <$t>::from_bits(if b < a { tiny | sign_bit } else { tiny });
                }
                let away = (b > a) == (bits & sign_bit == 0);
                <$t>::from_bits(if away { bits + 1 } else { bits - 1 })
            }
        }
    )*};
}

next_after!(f32: u32, f64: u64, f16: u16, bf16: u16);

fn run_float<T: Stored + NextAfter>(spec: &Binary, launch: &Launch<'_>) -> Result<()> {
    let (a, b, out_tensor) = (&launch.inputs[0], &launch.inputs[1], &launch.outputs[0]);
    // SAFETY: the output is this launch's own buffer.
    let out = unsafe { write::<T>(out_tensor)? };
    let shape = out_tensor.shape();
    macro_rules! with {
        ($f:expr) => {
            zip2(a, b, shape, out, |p: T, q: T| T::store($f(p.load(), q.load())))
        };
    }
    match spec.op {
        BinaryOp::Add => with!(|p, q| p + q),
        BinaryOp::Sub => with!(|p, q| p - q),
        BinaryOp::Mul => with!(|p, q| p * q),
        BinaryOp::Div => with!(|p, q| p / q),
        BinaryOp::Pow => with!(|p: T::Compute, q| p.powf(q)),
        BinaryOp::Maximum => with!(maximum::<T::Compute>),
        BinaryOp::Minimum => with!(minimum::<T::Compute>),
        BinaryOp::Remainder => with!(|p, q| divmod::<T::Compute>(p, q).1),
        BinaryOp::FloorDivide => with!(|p, q| floored::<T::Compute>(p, q)),
        BinaryOp::Atan2 => with!(|p: T::Compute, q| p.atan2(q)),
        BinaryOp::Copysign => with!(|p: T::Compute, q| p.copysign(q)),
        BinaryOp::Hypot => with!(|p: T::Compute, q| p.hypot(q)),
        BinaryOp::Logaddexp => with!(logaddexp::<T::Compute>),
        BinaryOp::SiluMul => with!(silu_mul::<T::Compute>),
        BinaryOp::Nextafter => zip2(a, b, shape, out, |p: T, q: T| p.next_after(q)),
        other => Err(KernelError::Invalid(format!("{}: no float loop", other.name()))),
    }
}

/// The integer arithmetic of the binary loops, wrapping as numpy does.
trait Integer: Element + Ord {
    fn wrapping_add(self, other: Self) -> Self;
    fn wrapping_sub(self, other: Self) -> Self;
    fn wrapping_mul(self, other: Self) -> Self;
    fn is_negative(self) -> bool;
    /// Python's `%` (0 for a zero divisor).
    fn remainder(self, other: Self) -> Self;
    /// Python's `//` (0 for a zero divisor).
    fn floor_divide(self, other: Self) -> Self;
    /// `self ^ exponent`, wrapping; a negative exponent truncates `1 / self^-n`.
    fn power(self, exponent: Self) -> Self;
    fn and(self, other: Self) -> Self;
    fn or(self, other: Self) -> Self;
    fn xor(self, other: Self) -> Self;
    /// `self << count`; a count past the width, or negative, gives 0.
    fn shift_left(self, count: Self) -> Self;
    /// `self >> count` (arithmetic when signed); past the width, or negative, every bit out.
    fn shift_right(self, count: Self) -> Self;
}

macro_rules! integer {
    ($($t:ty),*) => {$(
        impl Integer for $t {
            #[inline(always)]
            fn wrapping_add(self, other: $t) -> $t { <$t>::wrapping_add(self, other) }
            #[inline(always)]
            fn wrapping_sub(self, other: $t) -> $t { <$t>::wrapping_sub(self, other) }
            #[inline(always)]
            fn wrapping_mul(self, other: $t) -> $t { <$t>::wrapping_mul(self, other) }
            #[inline(always)]
            #[allow(unused_comparisons)]
            fn is_negative(self) -> bool { self < 0 }
            #[inline(always)]
            fn remainder(self, other: $t) -> $t {
                if other == 0 {
                    return 0;
                }
                let r = self.wrapping_rem(other);
                if r != 0 && (r.is_negative() != other.is_negative()) { r.wrapping_add(other) } else { r }
            }
            #[inline(always)]
            fn floor_divide(self, other: $t) -> $t {
                if other == 0 {
                    return 0;
                }
                let q = self.wrapping_div(other);
                let exact = self.wrapping_rem(other) == 0;
                if !exact && (self.is_negative() != other.is_negative()) { q.wrapping_sub(1) } else { q }
            }
            #[inline(always)]
            fn power(self, exponent: $t) -> $t {
                if exponent.is_negative() {
                    // 1 / x^n truncated: 1 for 1, ±1 for -1 by parity, 0 otherwise
                    return match self {
                        1 => 1,
                        _ if self.wrapping_add(1) == 0 => if exponent & 1 == 0 { 1 } else { self },
                        _ => 0,
                    };
                }
                let (mut base, mut e, mut acc): ($t, $t, $t) = (self, exponent, 1);
                while e != 0 {
                    if e & 1 == 1 {
                        acc = acc.wrapping_mul(base);
                    }
                    base = base.wrapping_mul(base);
                    e >>= 1;
                }
                acc
            }
            #[inline(always)]
            fn and(self, other: $t) -> $t { self & other }
            #[inline(always)]
            fn or(self, other: $t) -> $t { self | other }
            #[inline(always)]
            fn xor(self, other: $t) -> $t { self ^ other }
            #[inline(always)]
            fn shift_left(self, count: $t) -> $t {
                if count.is_negative() || count as u128 >= u128::from(<$t>::BITS) { 0 } else { self << count }
            }
            #[inline(always)]
            fn shift_right(self, count: $t) -> $t {
                if count.is_negative() || count as u128 >= u128::from(<$t>::BITS) {
                    if self.is_negative() { self.wrapping_sub(self).wrapping_sub(1) } else { 0 }
                } else {
                    self >> count
                }
            }
        }
    )*};
}

integer!(i8, i16, i32, i64, u8, u16, u32, u64);

fn run_int<T: Integer>(spec: &Binary, launch: &Launch<'_>) -> Result<()> {
    let (a, b, out_tensor) = (&launch.inputs[0], &launch.inputs[1], &launch.outputs[0]);
    // SAFETY: the output is this launch's own buffer.
    let out = unsafe { write::<T>(out_tensor)? };
    let shape = out_tensor.shape();
    let f: fn(T, T) -> T = match spec.op {
        BinaryOp::Add => T::wrapping_add,
        BinaryOp::Sub => T::wrapping_sub,
        BinaryOp::Mul => T::wrapping_mul,
        BinaryOp::Pow => T::power,
        BinaryOp::Maximum => Ord::max,
        BinaryOp::Minimum => Ord::min,
        BinaryOp::Remainder => T::remainder,
        BinaryOp::FloorDivide => T::floor_divide,
        BinaryOp::BitwiseAnd => T::and,
        BinaryOp::BitwiseOr => T::or,
        BinaryOp::BitwiseXor => T::xor,
        BinaryOp::BitwiseLeftShift => T::shift_left,
        BinaryOp::BitwiseRightShift => T::shift_right,
        other => return Err(KernelError::Invalid(format!("{}: no integer loop", other.name()))),
    };
    zip2(a, b, shape, out, f)
}

/// The logical (and bitwise) ops on bool: any nonzero byte is true, the output 0 or 1.
fn run_bool(spec: &Binary, launch: &Launch<'_>) -> Result<()> {
    let (a, b) = (as_bytes(&launch.inputs[0])?, as_bytes(&launch.inputs[1])?);
    let view = as_bytes(&launch.outputs[0])?;
    // SAFETY: the output is this launch's own buffer.
    let out = unsafe { write::<u8>(&view)? };
    let f: fn(bool, bool) -> bool = match spec.op {
        BinaryOp::LogicalAnd | BinaryOp::BitwiseAnd => |p, q| p && q,
        BinaryOp::LogicalOr | BinaryOp::BitwiseOr => |p, q| p || q,
        BinaryOp::LogicalXor | BinaryOp::BitwiseXor => |p, q| p != q,
        other => return Err(KernelError::Invalid(format!("{}: no bool loop", other.name()))),
    };
    zip2(&a, &b, launch.outputs[0].shape(), out, |p: u8, q: u8| u8::from(f(p != 0, q != 0)))
}

fn launch(spec: &Binary, launch: Launch<'_>) -> Result<()> {
    match spec.dtype {
        DType::Float32 => run_float::<f32>(spec, &launch),
        DType::Float16 => run_float::<f16>(spec, &launch),
        DType::Bfloat16 => run_float::<bf16>(spec, &launch),
        DType::Float64 => run_float::<f64>(spec, &launch),
        DType::Int8 => run_int::<i8>(spec, &launch),
        DType::Int16 => run_int::<i16>(spec, &launch),
        DType::Int32 => run_int::<i32>(spec, &launch),
        DType::Int64 => run_int::<i64>(spec, &launch),
        DType::Uint8 => run_int::<u8>(spec, &launch),
        DType::Uint16 => run_int::<u16>(spec, &launch),
        DType::Uint32 => run_int::<u32>(spec, &launch),
        DType::Uint64 => run_int::<u64>(spec, &launch),
        DType::Bool => run_bool(spec, &launch),
        DType::Complex64 => super::complex::binary::<f32>(spec, &launch),
        DType::Complex128 => super::complex::binary::<f64>(spec, &launch),
        other => Err(KernelError::Invalid(format!("{}: no loop for {other}", spec.op.name()))),
    }
}

/// Registers every binary op but the comparisons on every dtype it takes.
pub fn register(table: &mut LaunchTable) {
    for op in BinaryOp::all().filter(|op| !op.is_comparison()) {
        table.register(op.name(), &op.dtypes(), launch);
    }
}

#[cfg(test)]
mod tests {
    use crate::kernel::Attrs;
    use crate::ops::call;
    use crate::tensor::Tensor;

    fn binary(op: &str, a: &Tensor, b: &Tensor) -> Tensor {
        call(op, &Attrs::new(), &[a, b]).unwrap().remove(0)
    }

    #[test]
    fn broadcast_add_and_nan_maximum() {
        let a = Tensor::from_vec(vec![1.0f32, f32::NAN], &[2, 1]).unwrap();
        let b = Tensor::from_vec(vec![0.5f32, 2.0, -1.0], &[3]).unwrap();
        let sum = binary("add", &a, &b);
        assert_eq!(sum.shape(), &[2, 3]);
        assert_eq!(sum.to_vec::<f32>().unwrap()[..3], [1.5, 3.0, 0.0]);
        let max = binary("maximum", &a, &b).to_vec::<f32>().unwrap();
        assert_eq!(max[..3], [1.0, 2.0, 1.0]);
        assert!(max[3..].iter().all(|v| v.is_nan()));
    }

    #[test]
    fn integers_wrap_and_mismatches_are_named() {
        let a = Tensor::from_vec(vec![250u8, 3], &[2]).unwrap();
        let b = Tensor::from_vec(vec![10u8, 4], &[2]).unwrap();
        assert_eq!(binary("add", &a, &b).to_vec::<u8>().unwrap(), vec![4, 7]);
        assert_eq!(binary("sub", &b, &a).to_vec::<u8>().unwrap(), vec![16, 1]);
        let c = Tensor::from_vec(vec![1.0f32, 2.0], &[2]).unwrap();
        let err = call("mul", &Attrs::new(), &[&c, &a]).unwrap_err().to_string();
        assert!(err.contains("mul") && err.contains("float32") && err.contains("uint8"), "{err}");
        let d = Tensor::from_vec(vec![1.0f32, 2.0, 3.0], &[3]).unwrap();
        let err = call("add", &Attrs::new(), &[&c, &d]).unwrap_err().to_string();
        assert!(err.starts_with("add: shapes (2,) and (3,)"), "{err}");
        assert!(call("div", &Attrs::new(), &[&a, &b]).is_err());
    }

    #[test]
    fn python_division_rules() {
        let a = Tensor::from_vec(vec![7i32, -7, 7, -7, 5, i32::MIN], &[6]).unwrap();
        let b = Tensor::from_vec(vec![2i32, 2, -2, -2, 0, -1], &[6]).unwrap();
        assert_eq!(binary("floor_divide", &a, &b).to_vec::<i32>().unwrap(), vec![3, -4, -4, 3, 0, i32::MIN]);
        assert_eq!(binary("remainder", &a, &b).to_vec::<i32>().unwrap(), vec![1, 1, -1, -1, 0, 0]);
        let x = Tensor::from_vec(vec![7.5f64, -7.5, 1.0], &[3]).unwrap();
        let y = Tensor::from_vec(vec![2.0f64, 2.0, 0.0], &[3]).unwrap();
        assert_eq!(binary("floor_divide", &x, &y).to_vec::<f64>().unwrap()[..2], [3.0, -4.0]);
        // the standard's special cases: one infinite operand gives a / b
        let xi = Tensor::from_vec(vec![f64::INFINITY, f64::NEG_INFINITY, -1.0, 1.0, f64::INFINITY], &[5]).unwrap();
        let yi = Tensor::from_vec(vec![2.0, 2.0, f64::INFINITY, f64::NEG_INFINITY, f64::INFINITY], &[5]).unwrap();
        let q = binary("floor_divide", &xi, &yi).to_vec::<f64>().unwrap();
        assert_eq!(q[..2], [f64::INFINITY, f64::NEG_INFINITY]);
        assert!(q[2] == 0.0 && q[2].is_sign_negative() && q[3] == 0.0 && q[3].is_sign_negative(), "{q:?}");
        assert!(q[4].is_nan());
        let r = binary("remainder", &x, &y).to_vec::<f64>().unwrap();
        assert_eq!(r[..2], [1.5, 0.5]);
        assert!(r[2].is_nan());
        let p = Tensor::from_vec(vec![3i64, -1, 2], &[3]).unwrap();
        let e = Tensor::from_vec(vec![4i64, -3, -1], &[3]).unwrap();
        assert_eq!(binary("pow", &p, &e).to_vec::<i64>().unwrap(), vec![81, -1, 0]);
    }

    #[test]
    fn nextafter_steps_by_the_stored_ulp_and_shifts_saturate() {
        let one = half::bf16::ONE;
        let a = Tensor::from_vec(vec![one, half::bf16::ZERO], &[2]).unwrap();
        let b = Tensor::from_vec(vec![half::bf16::from_f32(2.0), half::bf16::from_f32(-1.0)], &[2]).unwrap();
        let next = binary("nextafter", &a, &b).to_vec::<half::bf16>().unwrap();
        assert_eq!(next[0].to_f32(), 1.0 + 1.0 / 128.0);
        assert_eq!(next[1].to_bits(), 0x8001);
        let x = Tensor::from_vec(vec![-8i8, 1, 1], &[3]).unwrap();
        let s = Tensor::from_vec(vec![9i8, 3, -1], &[3]).unwrap();
        assert_eq!(binary("bitwise_right_shift", &x, &s).to_vec::<i8>().unwrap(), vec![-1, 0, 0]);
        assert_eq!(binary("bitwise_left_shift", &x, &s).to_vec::<i8>().unwrap(), vec![0, 8, 0]);
    }
}
