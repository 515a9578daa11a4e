//! `cast` on the host (`ops::spec::cast` says what each pair of dtypes takes): one loop per
//! source dtype, each element converted by the dtype layer's conversions
//! (`nbxtensor::dtype::convert`) where Rust's `as` does not round as the spec says.

use super::buffers::Float;
use crate::backend::LaunchTable;
use crate::dtype::convert::{bf16 as bf16_bits, Fp8Format};
use crate::dtype::DType;
use crate::kernel::{KernelError, Launch, Result};
use crate::ops::spec::cast::Cast;
use crate::settings::tiling;
use crate::tensor::{Complex, Tensor};
use half::{bf16, f16};
use rayon::prelude::*;
use std::sync::OnceLock;

/// A bool element (any nonzero byte is true).
#[derive(Clone, Copy)]
#[repr(transparent)]
struct Bool(u8);
/// A float8_e4m3fn bit pattern.
#[derive(Clone, Copy)]
#[repr(transparent)]
struct E4m3(u8);
/// A float8_e5m2 bit pattern.
#[derive(Clone, Copy)]
#[repr(transparent)]
struct E5m2(u8);
/// A complex64 element.
type C64 = Complex<f32>;
/// A complex128 element.
type C128 = Complex<f64>;

fn e4m3() -> &'static Fp8Format {
    static FORMAT: OnceLock<Fp8Format> = OnceLock::new();
    FORMAT.get_or_init(|| Fp8Format::of(DType::Float8E4m3fn).expect("checked when the cast kernel is built"))
}

fn e5m2() -> &'static Fp8Format {
    static FORMAT: OnceLock<Fp8Format> = OnceLock::new();
    FORMAT.get_or_init(|| Fp8Format::of(DType::Float8E5m2).expect("checked when the cast kernel is built"))
}

/// An element a cast writes, made from an integer, a float32 or a float64 value.
trait CastOut: Copy + Send + Sync {
    fn from_int(value: i128) -> Self;
    fn from_f32(value: f32) -> Self;
    fn from_f64(value: f64) -> Self;
}

/// A complex element a cast writes, also made from two parts.
trait ComplexOut: CastOut {
    fn from_parts(re: f64, im: f64) -> Self;
}

/// A real element a cast reads.
trait CastIn: Copy + Send + Sync {
    fn convert<D: CastOut>(self) -> D;
}

macro_rules! integers {
    ($($t:ty),*) => {$(
        impl CastOut for $t {
            #[inline(always)]
            fn from_int(value: i128) -> $t { value as $t }
            #[inline(always)]
            fn from_f32(value: f32) -> $t { value as $t }
            #[inline(always)]
            fn from_f64(value: f64) -> $t { value as $t }
        }
        impl CastIn for $t {
            #[inline(always)]
            fn convert<D: CastOut>(self) -> D { D::from_int(self as i128) }
        }
    )*};
}

integers!(i8, i16, i32, i64, u8, u16, u32, u64);

impl CastOut for f32 {
    fn from_int(value: i128) -> f32 {
        value as f32
    }
    fn from_f32(value: f32) -> f32 {
        value
    }
    fn from_f64(value: f64) -> f32 {
        value as f32
    }
}

impl CastOut for f64 {
    fn from_int(value: i128) -> f64 {
        value as f64
    }
    fn from_f32(value: f32) -> f64 {
        f64::from(value)
    }
    fn from_f64(value: f64) -> f64 {
        value
    }
}

impl CastIn for f32 {
    fn convert<D: CastOut>(self) -> D {
        D::from_f32(self)
    }
}

impl CastIn for f64 {
    fn convert<D: CastOut>(self) -> D {
        D::from_f64(self)
    }
}

impl CastOut for f16 {
    fn from_int(value: i128) -> f16 {
        Float::from_f32(value as f32)
    }
    fn from_f32(value: f32) -> f16 {
        Float::from_f32(value)
    }
    fn from_f64(value: f64) -> f16 {
        f16::from_f64(value)
    }
}

impl CastOut for bf16 {
    fn from_int(value: i128) -> bf16 {
        bf16::from_bits(bf16_bits::from_f32(value as f32))
    }
    fn from_f32(value: f32) -> bf16 {
        bf16::from_bits(bf16_bits::from_f32(value))
    }
    fn from_f64(value: f64) -> bf16 {
        bf16::from_bits(bf16_bits::from_f32(value as f32))
    }
}

macro_rules! narrow_float_in {
    ($($t:ty => $wide:expr),*) => {$(
        impl CastIn for $t {
            #[inline(always)]
            fn convert<D: CastOut>(self) -> D { D::from_f32($wide(self)) }
        }
    )*};
}

narrow_float_in!(
    f16 => f16::to_f32,
    bf16 => |v: bf16| bf16_bits::to_f32(v.to_bits()),
    E4m3 => |v: E4m3| e4m3().decode(v.0),
    E5m2 => |v: E5m2| e5m2().decode(v.0),
    Bool => |v: Bool| if v.0 != 0 { 1.0 } else { 0.0 }
);

macro_rules! fp8_out {
    ($($t:ident => $format:ident),*) => {$(
        impl CastOut for $t {
            fn from_int(value: i128) -> $t { $t($format().encode(value as f32)) }
            fn from_f32(value: f32) -> $t { $t($format().encode(value)) }
            fn from_f64(value: f64) -> $t { $t($format().encode(value as f32)) }
        }
    )*};
}

fp8_out!(E4m3 => e4m3, E5m2 => e5m2);

impl CastOut for Bool {
    fn from_int(value: i128) -> Bool {
        Bool(u8::from(value != 0))
    }
    fn from_f32(value: f32) -> Bool {
        Bool(u8::from(value != 0.0))
    }
    fn from_f64(value: f64) -> Bool {
        Bool(u8::from(value != 0.0))
    }
}

impl CastOut for C64 {
    fn from_int(value: i128) -> C64 {
        Complex::new(value as f32, 0.0)
    }
    fn from_f32(value: f32) -> C64 {
        Complex::new(value, 0.0)
    }
    fn from_f64(value: f64) -> C64 {
        Complex::new(value as f32, 0.0)
    }
}

impl ComplexOut for C64 {
    fn from_parts(re: f64, im: f64) -> C64 {
        Complex::new(re as f32, im as f32)
    }
}

impl CastOut for C128 {
    fn from_int(value: i128) -> C128 {
        Complex::new(value as f64, 0.0)
    }
    fn from_f32(value: f32) -> C128 {
        Complex::new(f64::from(value), 0.0)
    }
    fn from_f64(value: f64) -> C128 {
        Complex::new(value, 0.0)
    }
}

impl ComplexOut for C128 {
    fn from_parts(re: f64, im: f64) -> C128 {
        Complex::new(re, im)
    }
}

/// A complex element a cast reads.
trait ComplexIn: Copy + Send + Sync {
    fn parts(self) -> (f64, f64);
}

impl ComplexIn for C64 {
    fn parts(self) -> (f64, f64) {
        (f64::from(self.re), f64::from(self.im))
    }
}

impl ComplexIn for C128 {
    fn parts(self) -> (f64, f64) {
        (self.re, self.im)
    }
}

/// The elements of a tensor as `T`, which must have the dtype's width and alignment (the
/// input is gathered first when it is not contiguous).
fn elements<T>(tensor: &Tensor) -> Result<&[T]> {
    let width = tensor.dtype().itemsize().map_err(|e| KernelError::Invalid(format!("cast: {e}")))?;
    if width != std::mem::size_of::<T>() || !tensor.is_contiguous() {
        return Err(KernelError::Invalid(format!("cast: a {} tensor read with the wrong layout", tensor.dtype())));
    }
    let len = tensor.numel() as usize;
    if len == 0 {
        return Ok(&[]);
    }
    // SAFETY: a contiguous host tensor holds `len` elements of this width from data_ptr, aligned
    // (storage is 64-byte aligned, offsets are whole elements, T's alignment divides its
    // width), and every bit pattern is a valid T (plain integers and floats).
    Ok(unsafe { std::slice::from_raw_parts(tensor.data_ptr().cast::<T>(), len) })
}

/// Writes `out[i] = convert(src[i])` on the pool, in the tiling table's pieces.
fn cast_loop<S: Copy + Send + Sync, D: Copy + Send + Sync>(
    input: &Tensor,
    output: &Tensor,
    convert: impl Fn(S) -> D + Sync,
) -> Result<()> {
    if output.is_read_only() {
        return Err(KernelError::Invalid("cast: a read-only output".into()));
    }
    let gathered = input.contiguous()?;
    let src = elements::<S>(&gathered)?;
    let len = elements::<D>(output)?.len();
    if len == 0 {
        return Ok(());
    }
    // SAFETY: the output is this launch's own buffer, contiguous, writable and of D's width
    // (checked above); no other reference to it is alive during the launch.
    let dst = unsafe { std::slice::from_raw_parts_mut(output.data_ptr().cast::<D>(), len) };
    let chunk = tiling::tiling_table().host_chunk_elements.max(1);
    if dst.len() <= chunk {
        dst.iter_mut().zip(src).for_each(|(d, &s)| *d = convert(s));
    } else {
        crate::settings::threads::install(|| {
            dst.par_chunks_mut(chunk).zip(src.par_chunks(chunk)).for_each(|(d, s)| {
                d.iter_mut().zip(s).for_each(|(d, &s)| *d = convert(s));
            })
        });
    }
    Ok(())
}

/// The cast of a real input of element type `S` to `to`.
fn from_real<S: CastIn>(input: &Tensor, output: &Tensor, to: DType) -> Result<()> {
    macro_rules! to {
        ($d:ty) => {
            cast_loop(input, output, |s: S| s.convert::<$d>())
        };
    }
    match to {
        DType::Bool => to!(Bool),
        DType::Int8 => to!(i8),
        DType::Int16 => to!(i16),
        DType::Int32 => to!(i32),
        DType::Int64 => to!(i64),
        DType::Uint8 => to!(u8),
        DType::Uint16 => to!(u16),
        DType::Uint32 => to!(u32),
        DType::Uint64 => to!(u64),
        DType::Float16 => to!(f16),
        DType::Bfloat16 => to!(bf16),
        DType::Float32 => to!(f32),
        DType::Float64 => to!(f64),
        DType::Float8E4m3fn => to!(E4m3),
        DType::Float8E5m2 => to!(E5m2),
        DType::Complex64 => to!(C64),
        DType::Complex128 => to!(C128),
        other => Err(KernelError::Invalid(format!("cast: no loop to {other}"))),
    }
}

/// The cast of a complex input of element type `S` to a complex `to`.
fn from_complex<S: ComplexIn>(input: &Tensor, output: &Tensor, to: DType) -> Result<()> {
    match to {
        DType::Complex64 => cast_loop(input, output, |s: S| {
            let (re, im) = s.parts();
            C64::from_parts(re, im)
        }),
        DType::Complex128 => cast_loop(input, output, |s: S| {
            let (re, im) = s.parts();
            C128::from_parts(re, im)
        }),
        other => Err(KernelError::Invalid(format!("cast: no loop from complex to {other}"))),
    }
}

fn launch(spec: &Cast, launch: Launch<'_>) -> Result<()> {
    let (input, output, to) = (&launch.inputs[0], &launch.outputs[0], spec.to);
    match spec.from {
        DType::Bool => from_real::<Bool>(input, output, to),
        DType::Int8 => from_real::<i8>(input, output, to),
        DType::Int16 => from_real::<i16>(input, output, to),
        DType::Int32 => from_real::<i32>(input, output, to),
        DType::Int64 => from_real::<i64>(input, output, to),
        DType::Uint8 => from_real::<u8>(input, output, to),
        DType::Uint16 => from_real::<u16>(input, output, to),
        DType::Uint32 => from_real::<u32>(input, output, to),
        DType::Uint64 => from_real::<u64>(input, output, to),
        DType::Float16 => from_real::<f16>(input, output, to),
        DType::Bfloat16 => from_real::<bf16>(input, output, to),
        DType::Float32 => from_real::<f32>(input, output, to),
        DType::Float64 => from_real::<f64>(input, output, to),
        DType::Float8E4m3fn => from_real::<E4m3>(input, output, to),
        DType::Float8E5m2 => from_real::<E5m2>(input, output, to),
        DType::Complex64 => from_complex::<C64>(input, output, to),
        DType::Complex128 => from_complex::<C128>(input, output, to),
        other => Err(KernelError::Invalid(format!("cast: no loop from {other}"))),
    }
}

/// Registers `cast` on every dtype with a per-element width.
pub fn register(table: &mut LaunchTable) {
    table.register("cast", &crate::ops::spec::sized(), launch);
}

#[cfg(test)]
mod tests {
    use crate::kernel::{AttrValue, Attrs};
    use crate::ops::call;
    use crate::tensor::Tensor;
    use crate::DType;

    fn cast(x: &Tensor, to: DType) -> crate::kernel::Result<Tensor> {
        Ok(call("cast", &Attrs::new().with("dtype", AttrValue::DType(to)), &[x])?.remove(0))
    }

    #[test]
    fn float_to_int_truncates_and_saturates() {
        let x = Tensor::from_vec(vec![-1.7f32, 2.9, 1e10, f32::NAN, -300.0], &[5]).unwrap();
        assert_eq!(cast(&x, DType::Int32).unwrap().to_vec::<i32>().unwrap(), vec![-1, 2, i32::MAX, 0, -300]);
        assert_eq!(cast(&x, DType::Uint8).unwrap().to_vec::<u8>().unwrap(), vec![0, 2, 255, 0, 0]);
        let b = cast(&x, DType::Bool).unwrap();
        assert_eq!(b.to_bytes().unwrap(), vec![1, 1, 1, 1, 1]);
    }

    #[test]
    fn integers_wrap_and_complex_to_real_is_refused() {
        let x = Tensor::from_vec(vec![300i32, -1], &[2]).unwrap();
        assert_eq!(cast(&x, DType::Uint8).unwrap().to_vec::<u8>().unwrap(), vec![44, 255]);
        let c = cast(&x, DType::Complex64).unwrap();
        assert_eq!(c.view_dtype(DType::Uint64).unwrap().to_vec::<u64>().unwrap()[0], u64::from(300f32.to_bits()));
        let err = cast(&c, DType::Float32).err().unwrap().to_string();
        assert!(err.contains("complex64 to float32"), "{err}");
    }

    #[test]
    fn fp8_and_bf16_round_to_nearest_even() {
        // 1 + 2^-8 lies halfway between bfloat16 1 and 1 + 2^-7: ties to even gives 1
        let x = Tensor::from_vec(vec![1.0f64 + 1.0 / 256.0, 448.0, 1e6], &[3]).unwrap();
        let bf = cast(&x, DType::Bfloat16).unwrap().to_vec::<half::bf16>().unwrap();
        assert_eq!(bf[0], half::bf16::ONE);
        let fp8 = cast(&x, DType::Float8E4m3fn).unwrap().to_bytes().unwrap();
        // e4m3fn: 1.0 = 0x38, 448 = 0x7E (its largest finite value), past it NaN = 0x7F
        assert_eq!(fp8, vec![0x38, 0x7E, 0x7F]);
    }
}
