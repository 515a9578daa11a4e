//! Copies: a strided layout gathered into a contiguous one, and element reads.

use super::{Element, Result, Tensor, TensorError};
use crate::shape;
use std::sync::Arc;

impl Tensor {
    /// The elements in row-major order as bytes (a copy).
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        let len = self.numel() as usize * self.dtype.itemsize()?;
        let mut out = Vec::new();
        out.try_reserve_exact(len).map_err(|e| TensorError::Invalid(format!("to_bytes: {e}")))?;
        out.resize(len, 0);
        self.copy_to(&mut out)?;
        Ok(out)
    }

    /// Writes the elements in row-major order into `out` (exactly `numel * itemsize` bytes).
    pub fn copy_to(&self, out: &mut [u8]) -> Result<()> {
        let itemsize = self.dtype.itemsize()?;
        if out.len() != self.numel() as usize * itemsize {
            return Err(TensorError::Invalid(format!(
                "copy_to: {} elements of {} take {} bytes, the destination has {}",
                self.numel(),
                self.dtype,
                self.numel() as usize * itemsize,
                out.len()
            )));
        }
        if self.numel() == 0 {
            return Ok(());
        }
        let storage = self.storage.host_bytes()?;
        // the innermost dim is copied as one run when its stride is 1
        let (outer_shape, run) = match (self.shape.last(), self.strides.last()) {
            (Some(&size), Some(&1)) => (&self.shape[..self.ndim() - 1], size as usize * itemsize),
            _ => (&self.shape[..], itemsize),
        };
        let outer_strides = &self.strides[..outer_shape.len()];
        let mut index = vec![0i64; outer_shape.len()];
        let mut written = 0;
        loop {
            let element = self.offset + index.iter().zip(outer_strides).map(|(i, s)| i * s).sum::<i64>();
            let start = element as usize * itemsize;
            out[written..written + run].copy_from_slice(&storage[start..start + run]);
            written += run;
            // advance the row-major index over the outer dims
            let mut axis = outer_shape.len();
            loop {
                if axis == 0 {
                    return Ok(());
                }
                axis -= 1;
                index[axis] += 1;
                if index[axis] < outer_shape[axis] {
                    break;
                }
                index[axis] = 0;
            }
        }
    }

    /// The elements in row-major order, as `T` (which must be the tensor's dtype).
    pub fn to_vec<T: Element>(&self) -> Result<Vec<T>> {
        if T::DTYPE != self.dtype {
            return Err(TensorError::Invalid(format!("to_vec: the tensor holds {}, not {}", self.dtype, T::DTYPE)));
        }
        let bytes = self.to_bytes()?;
        let mut values = Vec::with_capacity(bytes.len() / std::mem::size_of::<T>());
        for chunk in bytes.chunks_exact(std::mem::size_of::<T>()) {
            // SAFETY: every bit pattern of the width is a valid T (Element's contract).
            values.push(unsafe { std::ptr::read_unaligned(chunk.as_ptr().cast::<T>()) });
        }
        Ok(values)
    }

    /// The tensor itself when contiguous (offset kept, no copy), else a contiguous copy.
    pub fn contiguous(&self) -> Result<Tensor> {
        if self.is_contiguous() {
            return Ok(self.clone());
        }
        let strides = shape::contiguous_strides(&self.shape)?;
        let storage = super::Storage::copy_of(&self.to_bytes()?)?;
        Tensor::from_storage(Arc::new(storage), self.dtype, &self.shape, &strides, 0)
    }
}
