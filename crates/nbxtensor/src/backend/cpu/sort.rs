//! `sort`, `argsort` and `searchsorted` on the host (`ops::spec::sort` says what they
//! compute): the input seen as `[outer, extent, inner]` around the axis, each line's positions
//! sorted by a stable merge sort (`slice::sort_by`) on their keys, NaN counting as the largest;
//! slabs of the outer dim run on the pool. A search halves the sorted input for each value, in
//! pieces on the pool.

use super::buffers::{par_pieces, read, write};
use super::math::{Real, Stored};
use crate::backend::LaunchTable;
use crate::dtype::DType;
use crate::kernel::{KernelError, Launch, Result};
use crate::ops::spec::scan::lines_of;
use crate::ops::spec::sort::{SearchSorted, Sort};
use crate::ops::spec::NUMBERS;
use crate::settings::threads;
use crate::tensor::Element;
use rayon::prelude::*;
use std::cmp::Ordering;

/// The order of two float keys: NaN after every number (before, descending), NaNs equal.
fn float_order<R: Real>(a: R, b: R, descending: bool) -> Ordering {
    let by_value = match (a.is_nan(), b.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        (false, false) => a.partial_cmp(&b).unwrap_or(Ordering::Equal),
    };
    if descending {
        by_value.reverse()
    } else {
        by_value
    }
}

/// The order of two integer keys.
fn int_order<T: Ord>(a: T, b: T, descending: bool) -> Ordering {
    if descending {
        b.cmp(&a)
    } else {
        a.cmp(&b)
    }
}

/// Sorts every line of the input by `key` under `order`, writing each line's sorted
/// positions through `emit` (a value or a position, of `O`).
fn sort_lines<T: Element, K: Copy + Send, O: Element>(
    spec: &Sort,
    launch: &Launch<'_>,
    key: fn(T) -> K,
    order: fn(K, K, bool) -> Ordering,
    emit: fn(T, usize) -> O,
) -> Result<()> {
    let input = &launch.inputs[0];
    let elements = read::<T>(input)?;
    let x: &[T] = &elements;
    // SAFETY: the output is this launch's own buffer.
    let out = unsafe { write::<O>(&launch.outputs[0])? };
    if out.is_empty() {
        return Ok(());
    }
    let axis = spec.axis_index(input.ndim())?;
    let (_, extent, inner) = lines_of(spec.name(), input.shape(), axis)?;
    let (extent, inner) = (extent as usize, inner as usize);
    let descending = spec.descending;
    threads::install(|| {
        out.par_chunks_mut(extent * inner).enumerate().for_each(|(o, slab)| {
            let line = &x[o * extent * inner..(o + 1) * extent * inner];
            let mut keyed: Vec<(K, usize)> = Vec::with_capacity(extent);
            for j in 0..inner {
                keyed.clear();
                keyed.extend((0..extent).map(|k| (key(line[k * inner + j]), k)));
                // stable: equal keys keep their positions' order
                keyed.sort_by(|a, b| order(a.0, b.0, descending));
                for (r, &(_, k)) in keyed.iter().enumerate() {
                    slab[r * inner + j] = emit(line[k * inner + j], k);
                }
            }
        })
    });
    Ok(())
}

fn float<T: Stored>(spec: &Sort, launch: &Launch<'_>) -> Result<()>
where
    T::Compute: Send,
{
    if spec.indices {
        sort_lines(spec, launch, T::load, float_order::<T::Compute>, |_, k| k as i64)
    } else {
        sort_lines(spec, launch, T::load, float_order::<T::Compute>, |v: T, _| v)
    }
}

fn int<T: Element + Ord>(spec: &Sort, launch: &Launch<'_>) -> Result<()> {
    if spec.indices {
        sort_lines(spec, launch, |v: T| v, int_order::<T>, |_, k| k as i64)
    } else {
        sort_lines(spec, launch, |v: T| v, int_order::<T>, |v: T, _| v)
    }
}

/// The count of elements of the ascending `sorted` that come before `value` under `order`:
/// those below it, or with `right` those not above it.
fn position<K: Copy>(sorted: &[K], value: K, right: bool, order: fn(K, K, bool) -> Ordering) -> usize {
    let (mut lo, mut hi) = (0, sorted.len());
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        let before = match order(sorted[mid], value, false) {
            Ordering::Less => true,
            Ordering::Equal => right,
            Ordering::Greater => false,
        };
        if before {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

/// Searches every value (read as a key by `key`) in the sorted input.
fn search<T: Element, K: Copy + Send + Sync>(
    spec: &SearchSorted,
    launch: &Launch<'_>,
    key: fn(T) -> K,
    order: fn(K, K, bool) -> Ordering,
) -> Result<()> {
    let sorted: Vec<K> = read::<T>(&launch.inputs[0])?.iter().map(|&v| key(v)).collect();
    let elements = read::<T>(&launch.inputs[1])?;
    let values: &[T] = &elements;
    // SAFETY: the output is this launch's own buffer.
    let out = unsafe { write::<i64>(&launch.outputs[0])? };
    par_pieces(out, |start, piece| {
        for (o, &v) in piece.iter_mut().zip(&values[start..]) {
            *o = position(&sorted, key(v), spec.right, order) as i64;
        }
    });
    Ok(())
}

fn float_search<T: Stored>(spec: &SearchSorted, launch: &Launch<'_>) -> Result<()>
where
    T::Compute: Send + Sync,
{
    search(spec, launch, T::load, float_order::<T::Compute>)
}

fn int_search<T: Element + Ord>(spec: &SearchSorted, launch: &Launch<'_>) -> Result<()> {
    search(spec, launch, |v: T| v, int_order::<T>)
}

fn launch_search(spec: &SearchSorted, launch: Launch<'_>) -> Result<()> {
    match spec.dtype {
        DType::Float32 => float_search::<f32>(spec, &launch),
        DType::Float16 => float_search::<half::f16>(spec, &launch),
        DType::Bfloat16 => float_search::<half::bf16>(spec, &launch),
        DType::Float64 => float_search::<f64>(spec, &launch),
        DType::Int8 => int_search::<i8>(spec, &launch),
        DType::Int16 => int_search::<i16>(spec, &launch),
        DType::Int32 => int_search::<i32>(spec, &launch),
        DType::Int64 => int_search::<i64>(spec, &launch),
        DType::Uint8 => int_search::<u8>(spec, &launch),
        DType::Uint16 => int_search::<u16>(spec, &launch),
        DType::Uint32 => int_search::<u32>(spec, &launch),
        DType::Uint64 => int_search::<u64>(spec, &launch),
        other => Err(KernelError::Invalid(format!("searchsorted: no loop for {other}"))),
    }
}

fn launch(spec: &Sort, launch: Launch<'_>) -> Result<()> {
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
        other => Err(KernelError::Invalid(format!("{}: no loop for {other}", spec.name()))),
    }
}

/// Registers sort, argsort and searchsorted on the floats and the integers.
pub fn register(table: &mut LaunchTable) {
    table.register("sort", &NUMBERS, launch);
    table.register("argsort", &NUMBERS, launch);
    table.register("searchsorted", &NUMBERS, launch_search);
}

#[cfg(test)]
mod tests {
    use crate::tensor::Tensor;
    use crate::DType;

    #[test]
    fn sorts_are_stable_and_put_nan_last_ascending_first_descending() {
        let nan = f32::NAN;
        let x = Tensor::from_vec(vec![3.0f32, nan, 1.0, -0.0, 0.0, 1.0, 2.0, nan], &[2, 4]).unwrap();
        let i = x.argsort(1, false).unwrap();
        assert_eq!((i.dtype(), i.to_vec::<i64>().unwrap()), (DType::Int64, vec![3, 2, 0, 1, 0, 1, 2, 3]));
        let s = x.sort(1, false).unwrap().to_vec::<f32>().unwrap();
        let bits: Vec<u32> = s.iter().map(|v| v.to_bits()).collect();
        assert_eq!(&bits[..3], &[(-0.0f32).to_bits(), 1.0f32.to_bits(), 3.0f32.to_bits()]);
        assert_eq!(&bits[4..7], &[0, 1.0f32.to_bits(), 2.0f32.to_bits()]);
        assert!(s[3].is_nan() && s[7].is_nan());
        // descending: NaN first
        assert_eq!(x.argsort(1, true).unwrap().to_vec::<i64>().unwrap(), vec![1, 0, 2, 3, 3, 2, 1, 0]);
        // -0.0 and 0.0 are equal: their order is kept either way
        let z = Tensor::from_vec(vec![0.0f64, -0.0, 0.0], &[3]).unwrap();
        assert_eq!(z.argsort(0, false).unwrap().to_vec::<i64>().unwrap(), vec![0, 1, 2]);
        assert_eq!(z.argsort(0, true).unwrap().to_vec::<i64>().unwrap(), vec![0, 1, 2]);
        // along axis 0 of a transposed view
        let t = x.transpose(0, 1).unwrap();
        assert_eq!(t.argsort(0, false).unwrap().to_vec::<i64>().unwrap(), vec![3, 0, 2, 1, 0, 2, 1, 3]);
        let x = Tensor::from_vec(vec![5u8, 0, 5, 255, 0, 9], &[6]).unwrap();
        assert_eq!(x.sort(0, true).unwrap().to_vec::<u8>().unwrap(), vec![255, 9, 5, 5, 0, 0]);
        assert_eq!(x.argsort(-1, true).unwrap().to_vec::<i64>().unwrap(), vec![3, 5, 0, 2, 1, 4]);
        assert_eq!(x.argsort(0, false).unwrap().to_vec::<i64>().unwrap(), vec![1, 4, 0, 2, 5, 3]);
        let err = Tensor::from_vec(vec![1i32], &[]).unwrap().sort(0, false).unwrap_err().to_string();
        assert!(err.contains("sort: a 0-d input"), "{err}");
        let empty = Tensor::from_vec(Vec::<f64>::new(), &[3, 0]).unwrap();
        assert_eq!(empty.argsort(1, false).unwrap().shape(), &[3, 0]);
    }

    #[test]
    fn searchsorted_counts_the_elements_before_each_value() {
        let sorted = Tensor::from_vec(vec![1.0f32, 2.0, 2.0, 5.0, f32::NAN], &[5]).unwrap();
        let values = Tensor::from_vec(vec![0.0f32, 2.0, 3.0, 5.0, 9.0, f32::NAN], &[2, 3]).unwrap();
        let left = sorted.searchsorted(&values, false).unwrap();
        assert_eq!((left.dtype(), left.shape()), (DType::Int64, &[2, 3][..]));
        assert_eq!(left.to_vec::<i64>().unwrap(), vec![0, 1, 3, 3, 4, 4]);
        assert_eq!(sorted.searchsorted(&values, true).unwrap().to_vec::<i64>().unwrap(), vec![0, 3, 3, 4, 4, 5]);
        let sorted = Tensor::from_vec(vec![-5i16, 0, 0, 7], &[4]).unwrap();
        // a strided view of values is read in its own order
        let values = Tensor::from_vec(vec![0i16, 8, -9, 7], &[2, 2]).unwrap().transpose(0, 1).unwrap();
        assert_eq!(sorted.searchsorted(&values, false).unwrap().to_vec::<i64>().unwrap(), vec![1, 0, 4, 3]);
        assert_eq!(sorted.searchsorted(&values, true).unwrap().to_vec::<i64>().unwrap(), vec![3, 0, 4, 4]);
        let empty = Tensor::from_vec(Vec::<i16>::new(), &[0]).unwrap();
        assert_eq!(empty.searchsorted(&values, true).unwrap().to_vec::<i64>().unwrap(), vec![0; 4]);
        assert!(values.searchsorted(&sorted, false).unwrap_err().to_string().contains("must be 1-d"));
    }
}
