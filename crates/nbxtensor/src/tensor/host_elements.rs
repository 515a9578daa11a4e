//! A tensor's elements in row-major order on the host, for a kernel or a copy to read:
//! borrowed in place when the tensor is a contiguous host tensor whose first element is
//! aligned for the element type, else gathered into a block of the host allocator (counted
//! against the memory limit while it lives, like every other allocation of the library).

use super::{Element, Result, Tensor, TensorError};
use crate::memory::{host_allocator, Allocator, Device, HostBlock};
use std::marker::PhantomData;
use std::ops::Deref;

/// The elements of a tensor as a slice of `T`: borrowed, or a counted gathered copy.
pub struct HostElements<'a, T> {
    source: Source<'a, T>,
}

enum Source<'a, T> {
    Borrowed(&'a [T]),
    Gathered { block: HostBlock, len: usize, _elements: PhantomData<T> },
}

impl<T> HostElements<'_, T> {
    /// Whether the elements were copied (the tensor was strided, on a device, or unaligned).
    pub fn is_gathered(&self) -> bool {
        matches!(self.source, Source::Gathered { .. })
    }
}

impl<T: std::fmt::Debug> std::fmt::Debug for HostElements<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostElements").field("gathered", &self.is_gathered()).field("len", &self.len()).finish()
    }
}

impl<T> Deref for HostElements<'_, T> {
    type Target = [T];

    fn deref(&self) -> &[T] {
        match &self.source {
            Source::Borrowed(slice) => slice,
            Source::Gathered { len: 0, .. } => &[],
            // SAFETY: the block holds `len` elements of T written by `copy_to`; host blocks
            // are 64-byte aligned, enough for every element type.
            Source::Gathered { block, len, .. } => unsafe {
                std::slice::from_raw_parts(block.as_ptr().cast::<T>(), *len)
            },
        }
    }
}

impl Tensor {
    /// The elements as `T` (which must be the tensor's dtype), in row-major order: the
    /// tensor's own memory when it is contiguous on the host and aligned for `T`, else a
    /// copy in a block of the host allocator, refused with the allocator's error over the
    /// memory limit.
    ///
    /// ```
    /// use nbxtensor::tensor::Tensor;
    /// let t = Tensor::from_vec((0..6).map(|x| x as f32).collect(), &[2, 3])?;
    /// assert!(!t.host_elements::<f32>()?.is_gathered());
    /// let columns = t.transpose(0, 1)?;
    /// let gathered = columns.host_elements::<f32>()?;
    /// assert!(gathered.is_gathered());
    /// assert_eq!(&gathered[..], &[0.0, 3.0, 1.0, 4.0, 2.0, 5.0]);
    /// # Ok::<(), nbxtensor::tensor::TensorError>(())
    /// ```
    pub fn host_elements<T: Element>(&self) -> Result<HostElements<'_, T>> {
        if T::DTYPE != self.dtype() {
            return Err(TensorError::Invalid(format!(
                "the elements of a {} tensor were read as {}",
                self.dtype(),
                T::DTYPE
            )));
        }
        self.elements_as::<T>()
    }

    /// The elements' bytes in row-major order: the tensor's own memory when it is contiguous
    /// on the host, else a counted copy (see [`Tensor::host_elements`]).
    pub fn host_bytes(&self) -> Result<HostElements<'_, u8>> {
        self.elements_as::<u8>()
    }

    fn elements_as<T>(&self) -> Result<HostElements<'_, T>> {
        let bytes = self.byte_len()?;
        let len = bytes / std::mem::size_of::<T>();
        if bytes == 0 {
            return Ok(HostElements { source: Source::Borrowed(&[]) });
        }
        let ptr = self.data_ptr();
        if self.device() == Device::CPU
            && !self.storage().is_symbolic()
            && self.is_contiguous()
            && ptr as usize % std::mem::align_of::<T>() == 0
        {
            // SAFETY: a contiguous host tensor holds `bytes` bytes from data_ptr inside its
            // storage (checked when it was made), aligned for T (checked above); `T` is an
            // element type of the tensor's width or u8, every bit pattern valid.
            let slice = unsafe { std::slice::from_raw_parts(ptr.cast::<T>(), len) };
            return Ok(HostElements { source: Source::Borrowed(slice) });
        }
        let mut block = host_allocator().alloc(bytes)?;
        self.copy_to(block.as_mut_slice())?;
        Ok(HostElements { source: Source::Gathered { block, len, _elements: PhantomData } })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_strided_or_broadcast_tensor_is_gathered_in_row_major_order() {
        let one = Tensor::from_vec(vec![7u16], &[1]).unwrap();
        // Miri interprets each element's copy: a shorter broadcast takes the same path
        let n = if cfg!(miri) { 1 << 8 } else { 1 << 16 };
        let wide = one.expand(&[n]).unwrap();
        let gathered = wide.host_elements::<u16>().unwrap();
        assert!(gathered.is_gathered() && gathered.len() == n as usize && gathered.iter().all(|&v| v == 7));
        assert!(one.host_elements::<f32>().unwrap_err().to_string().contains("read as float32"));
        let empty = one.narrow(0, 1, 0).unwrap();
        assert_eq!(empty.host_elements::<u16>().unwrap().len(), 0);
    }

    #[test]
    fn an_unaligned_host_tensor_is_gathered_not_borrowed() {
        let bytes = Tensor::from_vec((0u8..9).collect(), &[9]).unwrap();
        // float32 elements that start one byte into a 64-byte aligned block
        let ptr = std::ptr::NonNull::new(bytes.data_ptr().wrapping_add(1)).unwrap();
        // SAFETY: 8 bytes from the block's second byte lie inside it; the keeper holds it.
        let storage = unsafe { crate::tensor::Storage::foreign(ptr, 8, Device::CPU, true, Box::new(bytes.clone())) };
        let floats = Tensor::from_storage(std::sync::Arc::new(storage), crate::DType::Float32, &[2], &[1], 0).unwrap();
        let elements = floats.host_elements::<f32>().unwrap();
        assert!(elements.is_gathered(), "an unaligned slice of f32 is never made");
        assert_eq!(elements[0].to_bits(), u32::from_le_bytes([1, 2, 3, 4]));
        assert_eq!(elements[1].to_bits(), u32::from_le_bytes([5, 6, 7, 8]));
    }
}
