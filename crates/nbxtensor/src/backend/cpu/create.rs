//! `iota` on the host (`ops::spec::create` says what it computes): floats as
//! `start + i · step` in float64, rounded once to the dtype; integers in 64-bit wrapping
//! arithmetic, wrapped to the dtype.

use super::buffers::{par_pieces, write};
use crate::backend::LaunchTable;
use crate::dtype::DType;
use crate::kernel::{KernelError, Launch, Result};
use crate::ops::spec::create::Iota;
use crate::ops::spec::NUMBERS;
use crate::tensor::Element;
use half::{bf16, f16};

/// Writes `value(i)` at every position `i` of the output, on the pool.
fn fill<T: Element>(launch: &Launch<'_>, value: impl Fn(usize) -> T + Sync) -> Result<()> {
    // SAFETY: the output is this launch's own buffer.
    let out = unsafe { write::<T>(&launch.outputs[0])? };
    par_pieces(out, |start, piece| {
        for (k, o) in piece.iter_mut().enumerate() {
            *o = value(start + k);
        }
    });
    Ok(())
}

/// `v` rounded to float32 toward zero, its lowest bit set when that was inexact ("round to
/// odd"): a float32 has more than two bits beyond a 16-bit format's, so rounding this to
/// nearest even in float16 or bfloat16 is the correct rounding of `v` itself (no double
/// rounding; `half`'s own conversions from f64 pass through an f32 rounded to nearest).
fn round_odd(v: f64) -> f32 {
    let nearest = v as f32;
    if v.is_nan() || f64::from(nearest) == v {
        return nearest;
    }
    // one step toward zero when nearest rounded away from it (bits order magnitudes)
    let toward_zero = if f64::from(nearest).abs() > v.abs() { nearest.to_bits() - 1 } else { nearest.to_bits() };
    f32::from_bits(toward_zero | 1)
}

/// A float iota: each value in float64, rounded to the dtype by `round` (once).
fn float<T: Element>(spec: &Iota, launch: &Launch<'_>, round: fn(f64) -> T) -> Result<()> {
    let (start, step) = spec.float_terms();
    fill(launch, |i| round(start + i as f64 * step))
}

/// An integer iota: 64-bit wrapping arithmetic, wrapped to the dtype by `wrap`.
fn int<T: Element>(spec: &Iota, launch: &Launch<'_>, wrap: fn(i64) -> T) -> Result<()> {
    let (start, step) = spec.int_terms();
    fill(launch, |i| wrap(start.wrapping_add(step.wrapping_mul(i as i64))))
}

fn launch(spec: &Iota, launch: Launch<'_>) -> Result<()> {
    match spec.dtype {
        DType::Float32 => float(spec, &launch, |v| v as f32),
        DType::Float16 => float(spec, &launch, |v| f16::from_f32(round_odd(v))),
        DType::Bfloat16 => float(spec, &launch, |v| bf16::from_f32(round_odd(v))),
        DType::Float64 => float(spec, &launch, |v| v),
        DType::Int8 => int(spec, &launch, |v| v as i8),
        DType::Int16 => int(spec, &launch, |v| v as i16),
        DType::Int32 => int(spec, &launch, |v| v as i32),
        DType::Int64 => int(spec, &launch, |v| v),
        DType::Uint8 => int(spec, &launch, |v| v as u8),
        DType::Uint16 => int(spec, &launch, |v| v as u16),
        DType::Uint32 => int(spec, &launch, |v| v as u32),
        DType::Uint64 => int(spec, &launch, |v| v as u64),
        other => Err(KernelError::Invalid(format!("iota: no loop for {other}"))),
    }
}

/// Registers `iota` on the floats and the integers.
pub fn register(table: &mut LaunchTable) {
    table.register("iota", &NUMBERS, launch);
}

#[cfg(test)]
mod tests {
    use crate::kernel::{AttrValue, Attrs};
    use crate::memory::Device;
    use crate::ops::call;
    use crate::tensor::Tensor;
    use crate::DType;
    use half::{bf16, f16};

    /// The float16 nearest `v` (ties to even): the double rounding through float32 is at most
    /// one step off, so the nearest of it and its two neighbours (the reference a single
    /// rounding must match).
    fn nearest_f16(v: f64) -> f16 {
        let guess = f16::from_f32(v as f32).to_bits();
        let distance = |h: f16| (f64::from(h.to_f32()) - v).abs();
        let mut best = f16::from_bits(guess);
        for bits in [guess.wrapping_sub(1), guess.wrapping_add(1)] {
            let candidate = f16::from_bits(bits);
            if candidate.is_finite()
                && (distance(candidate) < distance(best) || (distance(candidate) == distance(best) && bits % 2 == 0))
            {
                best = candidate;
            }
        }
        best
    }

    #[test]
    fn float_iotas_round_the_float64_value_once() {
        for n in [0i64, 1, 7, 100_003] {
            let (start, step) = (-3.25, 0.1);
            let want: Vec<f64> = (0..n).map(|i| start + i as f64 * step).collect();
            let t = Tensor::iota(n, start, step, DType::Float64, Device::CPU).unwrap();
            assert_eq!((t.shape(), t.to_vec::<f64>().unwrap()), (&[n][..], want.clone()));
            let t = Tensor::iota(n, start, step, DType::Float32, Device::CPU).unwrap();
            assert_eq!(t.to_vec::<f32>().unwrap(), want.iter().map(|&v| v as f32).collect::<Vec<_>>());
            let t = Tensor::iota(n, start, step, DType::Float16, Device::CPU).unwrap();
            assert_eq!(t.to_vec::<f16>().unwrap(), want.iter().map(|&v| nearest_f16(v)).collect::<Vec<_>>());
            let t = Tensor::iota(n, start, step, DType::Bfloat16, Device::CPU).unwrap();
            // these values are far from bfloat16's ties: one rounding through float32 agrees
            assert_eq!(t.to_vec::<bf16>().unwrap(), want.iter().map(|&v| bf16::from_f32(v as f32)).collect::<Vec<_>>());
        }
        // values float32 then float16 (or bfloat16) would round twice: 1 + 2^-11 + 2^-30 is
        // above the float16 tie, so rounds up; through float32 it would land on the tie (and
        // go to even, 1.0); likewise 1 + 2^-8 + 2^-30 for bfloat16, and their negatives
        for sign in [1.0, -1.0] {
            let t = Tensor::iota(1, sign * (1.0 + 2f64.powi(-11) + 2f64.powi(-30)), 0.0, DType::Float16, Device::CPU)
                .unwrap();
            assert_eq!(t.to_vec::<f16>().unwrap(), vec![f16::from_f64(sign * (1.0 + 2f64.powi(-10)))]);
            let t = Tensor::iota(1, sign * (1.0 + 2f64.powi(-8) + 2f64.powi(-30)), 0.0, DType::Bfloat16, Device::CPU)
                .unwrap();
            assert_eq!(t.to_vec::<bf16>().unwrap(), vec![bf16::from_f64(sign * (1.0 + 2f64.powi(-7)))]);
        }
        // an exact tie stays a tie (to even), and a value past float32's range overflows
        let t = Tensor::iota(1, 1.0 + 2f64.powi(-11), 0.0, DType::Float16, Device::CPU).unwrap();
        assert_eq!(t.to_vec::<f16>().unwrap(), vec![f16::ONE]);
        let t = Tensor::iota(1, 1e300, 0.0, DType::Bfloat16, Device::CPU).unwrap();
        assert_eq!(t.to_vec::<bf16>().unwrap(), vec![bf16::INFINITY]);
    }

    #[test]
    fn integer_iotas_wrap_and_the_string_path_runs_on_the_host() {
        let t = Tensor::iota(6, 120, 3, DType::Int8, Device::CPU).unwrap();
        assert_eq!(t.to_vec::<i8>().unwrap(), vec![120, 123, 126, -127, -124, -121]);
        let t = Tensor::iota(4, 5, -2, DType::Uint16, Device::CPU).unwrap();
        assert_eq!(t.to_vec::<u16>().unwrap(), vec![5, 3, 1, 65535]);
        let t = Tensor::iota(3, i64::MAX, 1, DType::Int64, Device::CPU).unwrap();
        assert_eq!(t.to_vec::<i64>().unwrap(), vec![i64::MAX, i64::MIN, i64::MIN + 1]);
        let attrs = Attrs::new()
            .with("n", AttrValue::Int(3))
            .with("start", AttrValue::Int(10))
            .with("dtype", AttrValue::DType(DType::Uint32));
        let t = call("iota", &attrs, &[]).unwrap().remove(0);
        assert_eq!(t.to_vec::<u32>().unwrap(), vec![10, 11, 12]);
        let err = call("sum", &Attrs::new(), &[]).unwrap_err().to_string();
        assert!(err.contains("takes at least one input"), "{err}");
        let err = Tensor::iota(2, 0.5, 1, DType::Int32, Device::CPU).unwrap_err().to_string();
        assert!(err.contains("integer start"), "{err}");
    }
}
