//! The tensor layer: a [`Tensor`] is shared [`Storage`] seen through a layout (shape,
//! strides in elements, offset in elements) with a dtype. Views share the storage and never
//! copy; a view the layout does not allow is an error that says to copy first.
//!
//! ```
//! use nbxtensor::tensor::Tensor;
//! use nbxtensor::DType;
//! let t = Tensor::from_vec((0..24).map(|x| x as f32).collect(), &[2, 3, 4])?;
//! let v = t.permute(&[2, 0, 1])?.narrow(0, 1, 2)?;
//! assert_eq!((v.shape(), v.strides()), (&[2, 2, 3][..], &[1, 12, 4][..]));
//! assert!(v.reshape(&[12]).is_err());                       // not a view: copy first
//! assert_eq!(v.contiguous()?.reshape(&[12])?.to_vec::<f32>()?[..3], [1.0, 5.0, 9.0]);
//! # Ok::<(), nbxtensor::tensor::TensorError>(())
//! ```

mod copy;
mod display;
pub mod dlpack;
mod element;
mod error;
mod host_elements;
mod storage;
mod views;

pub use element::{Complex, Element};
pub use error::TensorError;
pub use host_elements::HostElements;
pub use storage::Storage;

use crate::dtype::DType;
use crate::memory::Device;
use crate::shape;
use std::sync::Arc;

/// A result of the tensor layer.
pub type Result<T, E = TensorError> = std::result::Result<T, E>;

/// A dtype, a layout and shared storage.
#[derive(Clone)]
pub struct Tensor {
    storage: Arc<Storage>,
    dtype: DType,
    shape: Vec<i64>,
    strides: Vec<i64>,
    offset: i64,
}

impl Tensor {
    /// A tensor over `storage` with the given layout; every element it addresses must lie
    /// inside the storage, and the dtype must have a per-element width.
    pub fn from_storage(
        storage: Arc<Storage>,
        dtype: DType,
        shape: &[i64],
        strides: &[i64],
        offset: i64,
    ) -> Result<Tensor> {
        let itemsize = dtype.itemsize()?;
        if let Some(reach) = shape::bytes::reach(shape, strides, offset)? {
            if !reach.fits(itemsize, storage.len()) {
                return Err(TensorError::Invalid(format!(
                    "a {dtype} layout of shape {shape:?}, strides {strides:?}, offset {offset} addresses elements {}..={}, outside a storage of {} bytes",
                    reach.low,
                    reach.high,
                    storage.len()
                )));
            }
        }
        Ok(Tensor { storage, dtype, shape: shape.to_vec(), strides: strides.to_vec(), offset })
    }

    /// A contiguous tensor holding a copy of `bytes` (exactly `numel * itemsize` of them).
    pub fn from_bytes(dtype: DType, shape: &[i64], bytes: &[u8]) -> Result<Tensor> {
        let expected = shape::bytes::shape_bytes(shape, dtype.itemsize()?)?;
        if expected != bytes.len() {
            return Err(TensorError::Invalid(format!(
                "a {dtype} tensor of shape {shape:?} takes {expected} bytes, {} were given",
                bytes.len()
            )));
        }
        let strides = shape::contiguous_strides(shape)?;
        Tensor::from_storage(Arc::new(Storage::copy_of(bytes)?), dtype, shape, &strides, 0)
    }

    /// A contiguous tensor of zeros (all bytes zero).
    pub fn zeros(dtype: DType, shape: &[i64]) -> Result<Tensor> {
        let bytes = Tensor::bytes_of(dtype, shape)?;
        let strides = shape::contiguous_strides(shape)?;
        Tensor::from_storage(Arc::new(Storage::zeroed(bytes)?), dtype, shape, &strides, 0)
    }

    /// A contiguous tensor of zeros on `device`.
    pub fn zeros_on(device: Device, dtype: DType, shape: &[i64]) -> Result<Tensor> {
        let bytes = Tensor::bytes_of(dtype, shape)?;
        let strides = shape::contiguous_strides(shape)?;
        Tensor::from_storage(Arc::new(Storage::zeroed_on(bytes, device)?), dtype, shape, &strides, 0)
    }

    /// A contiguous tensor on `device` for a kernel to write in full: zeroed on the host,
    /// uninitialised on a GPU.
    pub fn for_output(device: Device, dtype: DType, shape: &[i64]) -> Result<Tensor> {
        let bytes = Tensor::bytes_of(dtype, shape)?;
        let strides = shape::contiguous_strides(shape)?;
        // contiguous over exactly its bytes: nothing for from_storage's checks to refuse
        let storage = Arc::new(Storage::for_outputs(bytes, device)?);
        Ok(Tensor { storage, dtype, shape: shape.to_vec(), strides, offset: 0 })
    }

    /// A contiguous tensor on `device` with no data: a stand-in for tracing or a dry run,
    /// usable where no such device is present.
    pub fn symbolic(device: Device, dtype: DType, shape: &[i64]) -> Result<Tensor> {
        let bytes = Tensor::bytes_of(dtype, shape)?;
        let strides = shape::contiguous_strides(shape)?;
        Tensor::from_storage(Arc::new(Storage::symbolic(bytes, device)), dtype, shape, &strides, 0)
    }

    /// The bytes of a contiguous `dtype` tensor of `shape`, refused by name past the address
    /// space.
    fn bytes_of(dtype: DType, shape: &[i64]) -> Result<usize> {
        let numel = shape::numel(shape)?;
        Ok(shape::bytes::byte_len(numel, dtype.itemsize()?, || format!("a {dtype} tensor of shape {shape:?}"))?)
    }

    /// The bytes of the tensor's elements (`numel * itemsize`), refused by name past the
    /// address space (a broadcast view may have more elements than any memory holds).
    ///
    /// ```
    /// use nbxtensor::tensor::Tensor;
    /// let one = Tensor::from_vec(vec![1.0f64], &[1])?;
    /// assert_eq!(one.expand(&[1 << 20])?.byte_len()?, 8 << 20);
    /// assert!(one.expand(&[1 << 61])?.byte_len().unwrap_err().to_string().contains("more than an address space holds"));
    /// # Ok::<(), nbxtensor::tensor::TensorError>(())
    /// ```
    pub fn byte_len(&self) -> Result<usize> {
        Tensor::bytes_of(self.dtype, &self.shape)
    }

    /// A contiguous tensor owning `values`.
    pub fn from_vec<T: Element>(values: Vec<T>, shape: &[i64]) -> Result<Tensor> {
        Tensor::from_bytes(T::DTYPE, shape, T::as_bytes(&values))
    }

    /// The dtype.
    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// The extents.
    pub fn shape(&self) -> &[i64] {
        &self.shape
    }

    /// The strides, in elements.
    pub fn strides(&self) -> &[i64] {
        &self.strides
    }

    /// The offset of the first element in the storage, in elements.
    pub fn offset(&self) -> i64 {
        self.offset
    }

    /// The number of dims.
    pub fn ndim(&self) -> usize {
        self.shape.len()
    }

    /// The number of elements (0 when a dim is 0, however large the others: the layout's
    /// check bounds the count of a shape without a 0, not the product of the other dims).
    pub fn numel(&self) -> i64 {
        if self.shape.contains(&0) {
            0
        } else {
            self.shape.iter().product()
        }
    }

    /// Where the storage lives.
    pub fn device(&self) -> Device {
        self.storage.device()
    }

    /// The shared storage.
    pub fn storage(&self) -> &Arc<Storage> {
        &self.storage
    }

    /// Whether the producer of the storage forbade writes.
    pub fn is_read_only(&self) -> bool {
        self.storage.is_read_only()
    }

    /// Whether the layout is row-major without gaps (ATen's rule).
    pub fn is_contiguous(&self) -> bool {
        shape::is_contiguous(&self.shape, &self.strides).unwrap_or(false)
    }

    /// The address of the first element.
    pub fn data_ptr(&self) -> *mut u8 {
        let itemsize = self.dtype.itemsize().expect("a tensor's dtype has a width (checked when made)");
        // SAFETY: the offset lies inside the storage (checked when made) unless numel is 0,
        // where the pointer is never read.
        self.storage.as_ptr().wrapping_add(self.offset as usize * itemsize)
    }

    /// The tensor on `device`: itself when it is there already, else a contiguous copy
    /// (host ↔ GPU through pinned staging; a GPU's copy waits for the work queued before it).
    /// A device that is not present is an error naming why.
    ///
    /// ```
    /// use nbxtensor::{memory::Device, tensor::Tensor};
    /// let t = Tensor::from_vec(vec![1.0f32, 2.0], &[2])?;
    /// match t.to(Device::parse("cuda")?) {
    ///     Ok(on_gpu) => assert_eq!(on_gpu.to(Device::CPU)?.to_vec::<f32>()?, vec![1.0, 2.0]),
    ///     Err(e) => assert!(e.to_string().contains("CUDA is not")),
    /// }
    /// # Ok::<(), nbxtensor::Error>(())
    /// ```
    pub fn to(&self, device: Device) -> Result<Tensor> {
        if device == self.device() {
            return Ok(self.clone());
        }
        if self.storage.is_symbolic() {
            return Err(TensorError::Invalid(format!(
                "to({device}): a traced tensor has no data to move; move the inputs before tracing"
            )));
        }
        let out = Tensor::for_output(device, self.dtype, &self.shape)?;
        // SAFETY: the output is new and nobody else holds it.
        unsafe { self.write_into(&out)? };
        Ok(out)
    }
}

impl std::fmt::Debug for Tensor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Tensor(dtype={}, shape={:?}, strides={:?}, offset={}, device={})",
            self.dtype,
            self.shape,
            self.strides,
            self.offset,
            self.device()
        )
    }
}
