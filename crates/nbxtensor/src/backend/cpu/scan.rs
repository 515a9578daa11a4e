//! `cumulative_sum` and `cumulative_prod` on the host (`ops::spec::scan` says what they
//! compute): the input seen as `[outer, extent, inner]` around the axis, each running value
//! kept in float64 (floats, each output rounded once) or in 64 bits, wrapping (integers).
//! Slabs of the outer dim run on the pool; inside one, the `inner` running values advance
//! together along the axis (contiguous reads and writes).

use super::buffers::{read, write};
use super::math::{Real, Stored};
use super::reduce::Integer;
use crate::backend::LaunchTable;
use crate::dtype::DType;
use crate::kernel::{KernelError, Launch, Result};
use crate::ops::spec::scan::{lines_of, Scan, ScanOp};
use crate::ops::spec::NUMBERS;
use crate::settings::threads;
use crate::tensor::Element;
use rayon::prelude::*;

/// Runs `step` along the axis from `init`, writing `finish` of each running value (and of
/// `init` first, with `include_initial`).
fn scan<I: Element, A: Copy + Send + Sync, O: Element>(
    spec: &Scan,
    launch: &Launch<'_>,
    init: A,
    step: impl Fn(A, I) -> A + Sync,
    finish: impl Fn(A) -> O + Sync,
) -> Result<()> {
    let input = &launch.inputs[0];
    let elements = read::<I>(input)?;
    let x: &[I] = &elements;
    // SAFETY: the output is this launch's own buffer.
    let out = unsafe { write::<O>(&launch.outputs[0])? };
    if out.is_empty() {
        return Ok(());
    }
    let axis = spec.axis_index(input.ndim())?;
    let (_, extent, inner) = lines_of(spec.op.name(), input.shape(), axis)?;
    let (extent, inner) = (extent as usize, inner as usize);
    let first = usize::from(spec.include_initial);
    let slab_out = (extent + first) * inner;
    threads::install(|| {
        out.par_chunks_mut(slab_out).enumerate().for_each(|(o, slab)| {
            let mut acc = vec![init; inner];
            if first == 1 {
                slab[..inner].iter_mut().for_each(|y| *y = finish(init));
            }
            for k in 0..extent {
                let row = &x[(o * extent + k) * inner..(o * extent + k + 1) * inner];
                let written = &mut slab[(k + first) * inner..(k + first + 1) * inner];
                for ((a, &v), y) in acc.iter_mut().zip(row).zip(written) {
                    *a = step(*a, v);
                    *y = finish(*a);
                }
            }
        })
    });
    Ok(())
}

fn float<T: Stored>(spec: &Scan, launch: &Launch<'_>) -> Result<()> {
    let finish = |a: f64| T::store(<T::Compute as Real>::of(a));
    match spec.op {
        ScanOp::Sum => scan(spec, launch, 0.0, |a, v: T| a + v.load().wide(), finish),
        ScanOp::Prod => scan(spec, launch, 1.0, |a, v: T| a * v.load().wide(), finish),
    }
}

fn int<T: Integer>(spec: &Scan, launch: &Launch<'_>) -> Result<()>
where
    T::Wide: Send + Sync,
{
    match spec.op {
        ScanOp::Sum => scan(spec, launch, T::ZERO, |a, v: T| v.add_to(a), |a| a),
        ScanOp::Prod => scan(spec, launch, T::ONE, |a, v: T| v.mul_into(a), |a| a),
    }
}

fn launch(spec: &Scan, launch: Launch<'_>) -> Result<()> {
    match spec.dtype {
        DType::Float32 => float::<f32>(spec, &launch),
        DType::Float16 => float::<half::f16>(spec, &launch),
        DType::Bfloat16 => float::<half::bf16>(spec, &launch),
        DType::Float64 => float::<f64>(spec, &launch),
        DType::Int8 => int::<i8>(spec, &launch),
        DType::Int16 => int::<i16>(spec, &launch),
        DType::Int32 => int::<i32>(spec, &launch),
        DType::Int64 => int::<i64>(spec, &launch),
        DType::Uint8 => int::<u8>(spec, &launch),
        DType::Uint16 => int::<u16>(spec, &launch),
        DType::Uint32 => int::<u32>(spec, &launch),
        DType::Uint64 => int::<u64>(spec, &launch),
        other => Err(KernelError::Invalid(format!("{}: no loop for {other}", spec.op.name()))),
    }
}

/// Registers cumulative_sum and cumulative_prod on the floats and the integers.
pub fn register(table: &mut LaunchTable) {
    for op in ScanOp::every() {
        table.register(op.name(), &NUMBERS, launch);
    }
}

#[cfg(test)]
mod tests {
    use crate::tensor::Tensor;
    use crate::DType;

    #[test]
    fn running_sums_and_products_along_each_axis() {
        let x = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]).unwrap();
        let s = x.cumulative_sum(1, false).unwrap();
        assert_eq!((s.shape(), s.to_vec::<f32>().unwrap()), (&[2, 3][..], vec![1.0, 3.0, 6.0, 4.0, 9.0, 15.0]));
        let s = x.cumulative_sum(0, true).unwrap();
        assert_eq!(
            (s.shape(), s.to_vec::<f32>().unwrap()),
            (&[3, 3][..], vec![0.0, 0.0, 0.0, 1.0, 2.0, 3.0, 5.0, 7.0, 9.0])
        );
        let p = x.cumulative_prod(-1, true).unwrap();
        assert_eq!(p.to_vec::<f32>().unwrap(), vec![1.0, 1.0, 2.0, 6.0, 1.0, 4.0, 20.0, 120.0]);
        // a transposed view is read in its own order
        let t = x.transpose(0, 1).unwrap();
        assert_eq!(t.cumulative_sum(1, false).unwrap().to_vec::<f32>().unwrap(), vec![1.0, 5.0, 2.0, 7.0, 3.0, 9.0]);
        // float16 keeps the running value in float64: 2048 + 1 + 1 is 2050, not 2048 twice
        let h = Tensor::from_vec(vec![2048.0f64, 1.0, 1.0], &[3]).unwrap().cast(DType::Float16).unwrap();
        let s = h.cumulative_sum(0, false).unwrap().cast(DType::Float64).unwrap();
        assert_eq!(s.to_vec::<f64>().unwrap(), vec![2048.0, 2048.0, 2050.0]);
    }

    #[test]
    fn integer_scans_widen_and_wrap_and_bool_counts_as_int64() {
        let x = Tensor::from_vec(vec![100i8, 100, 100, -128], &[4]).unwrap();
        let s = x.cumulative_sum(0, false).unwrap();
        assert_eq!((s.dtype(), s.to_vec::<i64>().unwrap()), (DType::Int64, vec![100, 200, 300, 172]));
        let x = Tensor::from_vec(vec![u64::MAX, 2, 3], &[3]).unwrap();
        let p = x.cumulative_prod(0, true).unwrap();
        assert_eq!(p.to_vec::<u64>().unwrap(), vec![1, u64::MAX, u64::MAX - 1, u64::MAX - 5]);
        let b = Tensor::from_vec(vec![1u8, 0, 1, 1], &[4]).unwrap().view_dtype(DType::Bool).unwrap();
        let s = b.cumulative_sum(0, false).unwrap();
        assert_eq!((s.dtype(), s.to_vec::<i64>().unwrap()), (DType::Int64, vec![1, 1, 2, 3]));
        let empty = Tensor::from_vec(Vec::<i32>::new(), &[0, 2]).unwrap();
        let s = empty.cumulative_sum(0, true).unwrap();
        assert_eq!((s.shape(), s.to_vec::<i64>().unwrap()), (&[1, 2][..], vec![0, 0]));
        let err = Tensor::from_vec(vec![1.0f32], &[]).unwrap().cumulative_sum(0, false).unwrap_err();
        assert!(err.to_string().contains("0-d input"), "{err}");
    }
}
