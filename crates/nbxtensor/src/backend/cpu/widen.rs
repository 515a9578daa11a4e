//! Widening a tensor of any layout into contiguous float32 (row-major), on the pool: how
//! the half-precision kernels fill their declared float32 workspace.

use super::buffers::{par_pieces, Float};
use crate::kernel::{KernelError, Result, Workspace};
use crate::tensor::Tensor;

/// The element offset (from the first element) of the row-major flat index `flat` of a
/// layout.
fn offset_of(mut flat: usize, shape: &[i64], strides: &[i64]) -> isize {
    let mut offset = 0isize;
    for (&size, &stride) in shape.iter().zip(strides).rev() {
        let size = size as usize;
        offset += (flat % size) as isize * stride as isize;
        flat /= size;
    }
    offset
}

/// Writes the elements of `tensor` (dtype `T`, any layout) as float32 into `out`, in
/// row-major order; `out` holds exactly `tensor.numel()` values.
pub fn widen<T: Float>(tensor: &Tensor, out: &mut [f32]) -> Result<()> {
    if T::DTYPE != tensor.dtype() || out.len() as i64 != tensor.numel() {
        return Err(KernelError::Invalid(format!(
            "a kernel widened a {} {:?} tensor as {} into {} values",
            tensor.dtype(),
            tensor.shape(),
            T::DTYPE,
            out.len()
        )));
    }
    if out.is_empty() {
        return Ok(());
    }
    let base = tensor.data_ptr().cast::<T>() as usize;
    let (shape, strides) = (tensor.shape(), tensor.strides());
    let inner = *shape.last().unwrap_or(&1) as usize;
    let inner_stride = *strides.last().unwrap_or(&1) as isize;
    par_pieces(out, |start, piece| {
        let base = base as *const T;
        let mut flat = start;
        let mut piece = piece;
        while !piece.is_empty() {
            let column = flat % inner;
            let run = (inner - column).min(piece.len());
            let (head, rest) = piece.split_at_mut(run);
            let first = offset_of(flat, shape, strides);
            for (j, value) in head.iter_mut().enumerate() {
                // SAFETY: every (flat) index below numel addresses an element of the tensor,
                // checked when the tensor was made.
                *value = unsafe { *base.offset(first + j as isize * inner_stride) }.to_f32();
            }
            flat += run;
            piece = rest;
        }
    });
    Ok(())
}

/// The first `count` float32 values of a launch's workspace; refused (naming `op`) when the
/// workspace is shorter or not aligned for float32.
pub fn floats<'w>(op: &str, workspace: Workspace<'w>, count: usize) -> Result<&'w mut [f32]> {
    let workspace = workspace.into_host(op)?;
    let len = workspace.len();
    // SAFETY: every bit pattern is a valid f32; align_to_mut splits off misaligned ends.
    let (head, floats, _) = unsafe { workspace.align_to_mut::<f32>() };
    if !head.is_empty() || floats.len() < count {
        return Err(KernelError::Invalid(format!(
            "{op}: the workspace ({len} bytes) does not hold {count} aligned float32 values"
        )));
    }
    Ok(&mut floats[..count])
}

#[cfg(test)]
mod tests {
    use super::*;
    use half::f16;

    #[test]
    fn widens_a_transposed_half_tensor_in_row_major_order() {
        let values: Vec<f16> = (0..6).map(|v| f16::from_f32(v as f32)).collect();
        let t = Tensor::from_vec(values, &[2, 3]).unwrap().transpose(0, 1).unwrap();
        let mut out = vec![0.0f32; 6];
        widen::<f16>(&t, &mut out).unwrap();
        assert_eq!(out, [0.0, 3.0, 1.0, 4.0, 2.0, 5.0]);
    }

    #[test]
    fn refuses_a_wrong_length() {
        let t = Tensor::from_vec(vec![1.0f32; 4], &[4]).unwrap();
        assert!(widen::<f32>(&t, &mut [0.0; 3]).is_err());
    }
}
