//! The gathers on the host (`ops::spec::gather` says what each computes), byte-exact on
//! every dtype with a per-element width. Every index is checked against its range before
//! anything is written; a bad one is refused with its position, its value and the range.
//! Inputs of any layout are read through their strides; each output block is copied by whole
//! contiguous runs where both sides allow.

use crate::backend::LaunchTable;
use crate::dtype::DType;
use crate::kernel::{KernelError, Launch, Result, TensorMeta};
use crate::ops::spec::gather::{Concat, Embedding, IndexSelect};
use crate::settings::threads;
use crate::shape;
use crate::tensor::Tensor;
use rayon::prelude::*;

/// Output bytes below which a gather copies on the calling thread.
const PARALLEL_BYTES: usize = 1 << 16;

/// One block to copy: its byte offsets from the source's and the output's first element, and
/// its layout (shape, source strides, output strides, all in elements).
struct Block<'a> {
    src: isize,
    dst: isize,
    shape: &'a [i64],
    src_strides: &'a [i64],
    dst_strides: &'a [i64],
}

/// Copies a strided block of `itemsize`-byte elements.
///
/// # Safety
/// Every element the layouts address from `src` and `dst` must be valid, the destinations
/// disjoint from every other writer.
unsafe fn copy_block(src: *const u8, dst: *mut u8, shape: &[i64], ss: &[i64], ds: &[i64], itemsize: usize) {
    match shape {
        [] => unsafe { std::ptr::copy_nonoverlapping(src, dst, itemsize) },
        [n] if ss[0] == 1 && ds[0] == 1 => unsafe { std::ptr::copy_nonoverlapping(src, dst, *n as usize * itemsize) },
        [n, rest @ ..] => {
            for i in 0..*n as isize {
                let (s, d) = (i * ss[0] as isize * itemsize as isize, i * ds[0] as isize * itemsize as isize);
                // SAFETY: the caller's guarantee, one dim down.
                unsafe { copy_block(src.offset(s), dst.offset(d), rest, &ss[1..], &ds[1..], itemsize) };
            }
        }
    }
}

/// Copies the blocks `block(0..count)` from `source` into `out` (on the pool when large).
/// The blocks are made as they are copied, never gathered into a list: their count follows
/// the inputs' extents (a broadcast of 2^62 empty rows has 2^62 of them), not the output's
/// bytes; an empty output copies nothing.
fn copy_blocks<'a>(
    source: &Tensor,
    out: &Tensor,
    count: usize,
    block: impl Fn(usize) -> Block<'a> + Sync,
) -> Result<()> {
    if out.is_read_only() || !out.is_contiguous() || out.dtype() != source.dtype() {
        return Err(KernelError::Invalid("a gather was given a bad output".into()));
    }
    if out.numel() == 0 || source.numel() == 0 {
        return Ok(());
    }
    let itemsize = out.dtype().itemsize().map_err(|e| KernelError::Invalid(e.to_string()))?;
    let (src, dst) = (source.data_ptr() as usize, out.data_ptr() as usize);
    let one = |b: Block<'_>| {
        // SAFETY: blocks address elements of the source's layout and disjoint parts of the
        // output (built so by each op from shapes it checked).
        unsafe {
            copy_block(
                (src as *const u8).offset(b.src),
                (dst as *mut u8).offset(b.dst),
                b.shape,
                b.src_strides,
                b.dst_strides,
                itemsize,
            )
        }
    };
    if out.numel() as usize * itemsize < PARALLEL_BYTES {
        (0..count).for_each(|i| one(block(i)));
    } else {
        threads::install(|| (0..count).into_par_iter().for_each(|i| one(block(i))));
    }
    Ok(())
}

/// The indices as i64, each checked against `0..size`, before anything is written.
fn checked_indices(op: &str, indices: &Tensor, size: i64, what: &str) -> Result<Vec<i64>> {
    let values: Vec<i64> = match indices.dtype() {
        DType::Int32 => indices.to_vec::<i32>()?.into_iter().map(i64::from).collect(),
        DType::Int64 => indices.to_vec::<i64>()?,
        other => return Err(KernelError::Invalid(format!("{op}: indices must be int32 or int64, got {other}"))),
    };
    if let Some((position, value)) = values.iter().enumerate().find(|(_, &v)| v < 0 || v >= size) {
        return Err(KernelError::Invalid(format!(
            "{op}: index {value} (at position {position}) is out of range [0, {size}) of {what}"
        )));
    }
    Ok(values)
}

fn invalid(message: String) -> KernelError {
    KernelError::Invalid(message)
}

fn contiguous(shape: &[i64]) -> Result<Vec<i64>> {
    shape::contiguous_strides(shape).map_err(|e| invalid(e.to_string()))
}

fn launch_embedding(_: &Embedding, launch: Launch<'_>) -> Result<()> {
    let (indices, table, out) = (&launch.inputs[0], &launch.inputs[1], &launch.outputs[0]);
    let rows = checked_indices("embedding", indices, table.shape()[0], &format!("table {:?}", table.shape()))?;
    let itemsize = table.dtype().itemsize().map_err(|e| invalid(e.to_string()))? as isize;
    let (d, ts) = (table.shape()[1], table.strides());
    copy_blocks(table, out, rows.len(), |p| Block {
        src: rows[p] as isize * ts[0] as isize * itemsize,
        dst: p as isize * d as isize * itemsize,
        shape: &table.shape()[1..],
        src_strides: &ts[1..],
        dst_strides: &[1],
    })
}

fn launch_index_select(spec: &IndexSelect, launch: Launch<'_>) -> Result<()> {
    let (x, indices, out) = (&launch.inputs[0], &launch.inputs[1], &launch.outputs[0]);
    let meta = |t: &Tensor| TensorMeta::new(t.dtype(), t.shape());
    let (axis, shape) = spec.out_shape(&meta(x), &meta(indices))?;
    let values = checked_indices("index_select", indices, x.shape()[axis], &format!("axis {axis} of {:?}", x.shape()))?;
    let itemsize = x.dtype().itemsize().map_err(|e| invalid(e.to_string()))? as isize;
    let out_strides = contiguous(&shape)?;
    let mut sub_shape = x.shape().to_vec();
    sub_shape.remove(axis);
    let mut src_strides = x.strides().to_vec();
    src_strides.remove(axis);
    let mut dst_strides = out_strides.clone();
    dst_strides.remove(axis);
    copy_blocks(x, out, values.len(), |l| Block {
        src: values[l] as isize * x.strides()[axis] as isize * itemsize,
        dst: l as isize * out_strides[axis] as isize * itemsize,
        shape: &sub_shape,
        src_strides: &src_strides,
        dst_strides: &dst_strides,
    })
}

fn launch_concat(spec: &Concat, launch: Launch<'_>) -> Result<()> {
    let metas: Vec<TensorMeta> = launch.inputs.iter().map(|t| TensorMeta::new(t.dtype(), t.shape())).collect();
    let (axis, shape) = spec.out_shape(&metas)?;
    let out_strides = contiguous(&shape)?;
    let itemsize = metas[0].dtype.itemsize().map_err(|e| invalid(e.to_string()))? as isize;
    let mut start = 0i64;
    for input in launch.inputs {
        // One block per index of the outermost dim (the unit of parallel work).
        // (an empty input copies nothing, however long its outer dim)
        let (outer, inner) = (input.shape()[0], &input.shape()[1..]);
        copy_blocks(input, &launch.outputs[0], outer as usize, |t| {
            let t = t as i64;
            let along = if axis == 0 { start + t } else { t };
            let beside = if axis == 0 { 0 } else { start * out_strides[axis] };
            Block {
                src: t as isize * input.strides()[0] as isize * itemsize,
                dst: (along * out_strides[0] + beside) as isize * itemsize,
                shape: inner,
                src_strides: &input.strides()[1..],
                dst_strides: &out_strides[1..],
            }
        })?;
        start += input.shape()[axis];
    }
    Ok(())
}

/// Registers `embedding` (on the index dtypes), `index_select` and `concat` (on every dtype
/// with a width).
pub fn register(table: &mut LaunchTable) {
    let sized = crate::ops::spec::sized();
    table.register("embedding", &crate::ops::spec::INDEX_DTYPES, launch_embedding);
    table.register("index_select", &sized, launch_index_select);
    table.register("concat", &sized, launch_concat);
}

#[cfg(test)]
mod tests {
    use crate::kernel::{AttrValue, Attrs};
    use crate::ops::call;
    use crate::tensor::Tensor;

    fn table() -> Tensor {
        Tensor::from_vec((0..12).map(|v| v as f32).collect(), &[4, 3]).unwrap()
    }

    #[test]
    fn embedding_copies_rows_of_a_transposed_table() {
        let t = Tensor::from_vec((0..12).map(|v| v as u16).collect(), &[3, 4]).unwrap().transpose(0, 1).unwrap();
        let idx = Tensor::from_vec(vec![3i64, 0, 3], &[3]).unwrap();
        let out = call("embedding", &Attrs::new(), &[&idx, &t]).unwrap().remove(0);
        assert_eq!(out.shape(), &[3, 3]);
        assert_eq!(out.to_vec::<u16>().unwrap(), vec![3, 7, 11, 0, 4, 8, 3, 7, 11]);
    }

    #[test]
    fn out_of_range_indices_are_named() {
        let idx = Tensor::from_vec(vec![1i32, 4], &[2]).unwrap();
        let err = call("embedding", &Attrs::new(), &[&idx, &table()]).unwrap_err().to_string();
        assert!(err.contains("index 4") && err.contains("[0, 4)"), "{err}");
        let attrs = Attrs::new().with("axis", AttrValue::Int(1));
        let neg = Tensor::from_vec(vec![-1i64], &[1]).unwrap();
        assert!(call("index_select", &attrs, &[&table(), &neg]).unwrap_err().to_string().contains("index -1"));
    }

    #[test]
    fn empty_inputs_of_huge_extents_copy_nothing() {
        // the op_call fuzz target's crash: concat of an empty broadcast of 2^62 rows made a
        // list of 2^62 blocks (an allocation past the address space, an abort)
        let empty = Tensor::zeros(crate::DType::Float32, &[1, 0]).unwrap().expand(&[1 << 62, 0]).unwrap();
        let one = Tensor::zeros(crate::DType::Float32, &[1, 0]).unwrap();
        let joined = call("concat", &Attrs::new(), &[&empty, &one]).unwrap().remove(0);
        assert_eq!(joined.shape(), &[(1 << 62) + 1, 0]);
        let err = call("concat", &Attrs::new(), &[&empty, &empty, &empty]).unwrap_err().to_string();
        assert!(err.contains("concat: the inputs' extents along axis 0 add up past 2^63 - 1"), "{err}");
        let along_one = Attrs::new().with("axis", AttrValue::Int(1));
        let wide = Tensor::zeros(crate::DType::Uint8, &[0, 1]).unwrap().expand(&[0, 1 << 61]).unwrap();
        assert_eq!(call("concat", &along_one, &[&wide, &wide]).unwrap()[0].shape(), &[0, 1 << 62]);
        // index_select and embedding of many indices into empty rows
        let indices = Tensor::from_vec(vec![0i64], &[1]).unwrap().expand(&[1 << 20]).unwrap();
        let rows = Tensor::zeros(crate::DType::Float32, &[1, 0]).unwrap();
        assert_eq!(call("embedding", &Attrs::new(), &[&indices, &rows]).unwrap()[0].shape(), &[1 << 20, 0]);
        let attrs = Attrs::new().with("axis", AttrValue::Int(0));
        assert_eq!(call("index_select", &attrs, &[&rows, &indices]).unwrap()[0].shape(), &[1 << 20, 0]);
    }

    #[test]
    fn index_select_and_concat_along_the_last_axis() {
        let attrs = Attrs::new().with("axis", AttrValue::Int(-1));
        let idx = Tensor::from_vec(vec![2i32, 2, 0], &[3]).unwrap();
        let out = call("index_select", &attrs, &[&table(), &idx]).unwrap().remove(0);
        assert_eq!(out.to_vec::<f32>().unwrap(), vec![2., 2., 0., 5., 5., 3., 8., 8., 6., 11., 11., 9.]);
        let narrow = table().narrow(1, 1, 1).unwrap();
        let joined = call("concat", &attrs, &[&narrow, &table()]).unwrap().remove(0);
        assert_eq!(joined.shape(), &[4, 4]);
        assert_eq!(joined.to_vec::<f32>().unwrap()[..8], [1., 0., 1., 2., 4., 3., 4., 5.]);
    }
}
