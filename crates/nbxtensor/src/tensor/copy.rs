//! Copies: a strided layout gathered into a contiguous one, and element reads.

use super::{Element, Result, Tensor, TensorError};
use crate::backend;
use crate::memory::host_allocator;
use crate::shape;
use std::sync::Arc;

impl Tensor {
    /// The elements in row-major order as bytes (a copy), counted against the host's memory
    /// limit while it is made; the vector is the caller's after.
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        let len = self.byte_len()?;
        let _counted = host_allocator().charge(len as u64)?;
        let mut out = Vec::new();
        out.try_reserve_exact(len).map_err(|e| TensorError::Invalid(format!("to_bytes: {e}")))?;
        out.resize(len, 0);
        self.copy_to(&mut out)?;
        Ok(out)
    }

    /// Writes the elements in row-major order into `out` (exactly `numel * itemsize` bytes).
    pub fn copy_to(&self, out: &mut [u8]) -> Result<()> {
        let itemsize = self.dtype.itemsize()?;
        let len = self.byte_len()?;
        if out.len() != len {
            return Err(TensorError::Invalid(format!(
                "copy_to: {} elements of {} take {len} bytes, the destination has {}",
                self.numel(),
                self.dtype,
                out.len()
            )));
        }
        if self.numel() == 0 {
            return Ok(());
        }
        if !backend::of(self.device()).host_addressable() {
            return self.to_host()?.copy_to(out);
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

    /// The same elements in a contiguous host tensor: the bytes the layout reaches are copied
    /// off the device (after the work queued before), then gathered.
    fn to_host(&self) -> Result<Tensor> {
        let itemsize = self.dtype.itemsize()?;
        let Some(reach) = shape::bytes::reach(&self.shape, &self.strides, self.offset)? else {
            return Tensor::zeros(self.dtype, &self.shape);
        };
        // the reach lies inside the storage (checked when the tensor was made)
        let (low, len) = (reach.low as i64, reach.span_bytes(itemsize) as usize);
        let span = super::Storage::zeroed(len)?;
        // SAFETY: the storage is new and nobody else holds it; it has `len` bytes.
        let bytes = unsafe { std::slice::from_raw_parts_mut(span.as_ptr(), len) };
        self.storage.read_into(low as usize * itemsize, bytes)?;
        let storage = Arc::new(span);
        Tensor::from_storage(storage, self.dtype, &self.shape, &self.strides, self.offset - low)?.contiguous()
    }

    /// Writes the elements into `dst`, a contiguous tensor of the same dtype and shape on any
    /// device (a copy on one GPU stays on it; other pairs go through the host).
    ///
    /// # Safety
    /// Nothing may read or write `dst`'s bytes while the copy runs (on a GPU: nothing queued
    /// on another stream).
    pub unsafe fn write_into(&self, dst: &Tensor) -> Result<()> {
        if dst.dtype != self.dtype || dst.shape != self.shape || !dst.is_contiguous() {
            return Err(TensorError::Invalid(format!(
                "write_into: a {} {:?} tensor cannot be written into a {} {:?} tensor (contiguous: {})",
                self.dtype,
                self.shape,
                dst.dtype,
                dst.shape,
                dst.is_contiguous()
            )));
        }
        if dst.is_read_only() {
            return Err(TensorError::ReadOnly("write_into: the destination is read-only".into()));
        }
        let len = self.byte_len()?;
        if len == 0 {
            return Ok(());
        }
        let target = backend::of(dst.device());
        let address = dst.data_ptr() as u64;
        // SAFETY (all): dst is contiguous with `len` bytes at data_ptr (checked above); the
        // caller guarantees exclusive access.
        if target.host_addressable() {
            if Arc::ptr_eq(self.storage(), dst.storage()) {
                // one storage: the source's bytes may overlap the destination's (a move)
                let bytes = self.host_bytes()?;
                unsafe { std::ptr::copy(bytes.as_ptr(), dst.data_ptr(), len) };
            } else {
                // gathered (or read off the source's device) straight into the destination
                self.copy_to(unsafe { std::slice::from_raw_parts_mut(dst.data_ptr(), len) })?;
            }
        } else if self.device() == dst.device() && self.is_contiguous() {
            unsafe { target.copy_within(address, self.data_ptr() as u64, len)? };
        } else {
            // through the host, in a counted block
            unsafe { target.write(address, &self.host_bytes()?)? };
        }
        Ok(())
    }

    /// A new contiguous tensor with the same elements, on the same device.
    pub fn fresh_copy(&self) -> Result<Tensor> {
        let copy = Tensor::for_output(self.device(), self.dtype, &self.shape)?;
        // SAFETY: the copy is new and nobody else holds it.
        unsafe { self.write_into(&copy)? };
        Ok(copy)
    }

    /// The elements in row-major order, as `T` (which must be the tensor's dtype).
    pub fn to_vec<T: Element>(&self) -> Result<Vec<T>> {
        if T::DTYPE != self.dtype {
            return Err(TensorError::Invalid(format!("to_vec: the tensor holds {}, not {}", self.dtype, T::DTYPE)));
        }
        let len = self.byte_len()?;
        let _counted = host_allocator().charge(len as u64)?;
        let mut values = Vec::new();
        let n = len / std::mem::size_of::<T>();
        values.try_reserve_exact(n).map_err(|e| TensorError::Invalid(format!("to_vec: {e}")))?;
        // SAFETY: every bit pattern of the width, zero included, is a valid T (Element's contract).
        values.resize(n, unsafe { std::mem::zeroed::<T>() });
        // SAFETY: the vector holds `len` bytes of plain elements, written here as bytes.
        self.copy_to(unsafe { std::slice::from_raw_parts_mut(values.as_mut_ptr().cast::<u8>(), len) })?;
        Ok(values)
    }

    /// The tensor itself when contiguous (offset kept, no copy), else a contiguous copy.
    pub fn contiguous(&self) -> Result<Tensor> {
        if self.is_contiguous() {
            return Ok(self.clone());
        }
        self.fresh_copy()
    }
}
