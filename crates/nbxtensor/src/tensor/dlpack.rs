//! DLPack, the exchange format of tensor libraries (dlpack.h, v1.1): the C structures, and a
//! [`Tensor`] exported to, or imported from, a managed tensor (versioned or legacy).
//!
//! Export hands out a managed tensor whose context keeps a clone of the tensor (so the
//! storage lives until the consumer calls the deleter, exactly once). Import takes ownership
//! of a producer's managed tensor: the tensor's storage keeps it, and calls its deleter
//! exactly once when the last view is dropped (or at once, when the import is refused).

use super::{Result, Storage, Tensor, TensorError};
use crate::dtype::DType;
use std::ffi::c_void;
use std::ptr::NonNull;
use std::sync::Arc;

/// `DLDataTypeCode` of signed integers.
pub const KDL_INT: u8 = 0;
/// `DLDataTypeCode` of unsigned integers.
pub const KDL_UINT: u8 = 1;
/// `DLDataTypeCode` of IEEE floats.
pub const KDL_FLOAT: u8 = 2;
/// `DLDataTypeCode` of complex numbers.
pub const KDL_COMPLEX: u8 = 5;
/// `DLDataTypeCode` of booleans.
pub const KDL_BOOL: u8 = 6;
/// `DLDeviceType` of host memory.
pub const KDL_CPU: i32 = 1;
/// The flag of a read-only versioned tensor.
pub const FLAG_READ_ONLY: u64 = 1 << 0;
/// The flag of a versioned tensor that is a copy made for the export.
pub const FLAG_IS_COPIED: u64 = 1 << 1;
/// The DLPack version this library implements.
pub const VERSION: DLPackVersion = DLPackVersion { major: 1, minor: 1 };

/// `DLDevice`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DLDevice {
    /// `DLDeviceType`.
    pub device_type: i32,
    /// The device's index.
    pub device_id: i32,
}

/// `DLDataType`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DLDataType {
    /// `DLDataTypeCode`.
    pub code: u8,
    /// Bits of one lane.
    pub bits: u8,
    /// Lanes (1 for scalars).
    pub lanes: u16,
}

/// `DLTensor`: a view of memory, not an owner.
#[repr(C)]
#[derive(Debug)]
pub struct DLTensor {
    /// The base pointer.
    pub data: *mut c_void,
    /// Where the memory lives.
    pub device: DLDevice,
    /// The number of dims.
    pub ndim: i32,
    /// The element type.
    pub dtype: DLDataType,
    /// `ndim` extents.
    pub shape: *mut i64,
    /// `ndim` strides in elements, or null for a contiguous layout.
    pub strides: *mut i64,
    /// Bytes from `data` to the first element.
    pub byte_offset: u64,
}

/// `DLPackVersion`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct DLPackVersion {
    /// Major version (1).
    pub major: u32,
    /// Minor version.
    pub minor: u32,
}

impl DLPackVersion {
    /// `(major, minor)`.
    pub fn major_minor(self) -> (u32, u32) {
        (self.major, self.minor)
    }
}

/// `DLManagedTensor` (legacy, before 1.0).
#[repr(C)]
#[derive(Debug)]
pub struct DLManagedTensor {
    /// The view.
    pub dl_tensor: DLTensor,
    /// The producer's context.
    pub manager_ctx: *mut c_void,
    /// Called once by the consumer when done.
    pub deleter: Option<unsafe extern "C" fn(*mut DLManagedTensor)>,
}

/// `DLManagedTensorVersioned` (1.0 and later).
#[repr(C)]
#[derive(Debug)]
pub struct DLManagedTensorVersioned {
    /// The producer's DLPack version.
    pub version: DLPackVersion,
    /// The producer's context.
    pub manager_ctx: *mut c_void,
    /// Called once by the consumer when done.
    pub deleter: Option<unsafe extern "C" fn(*mut DLManagedTensorVersioned)>,
    /// `FLAG_READ_ONLY`, `FLAG_IS_COPIED`.
    pub flags: u64,
    /// The view.
    pub dl_tensor: DLTensor,
}

/// What an exported managed tensor keeps alive: the tensor and its shape and strides.
struct ExportContext {
    _tensor: Tensor,
    shape: Vec<i64>,
    strides: Vec<i64>,
}

fn dl_tensor(tensor: &Tensor, context: &mut ExportContext) -> Result<DLTensor> {
    if tensor.storage().is_symbolic() {
        return Err(TensorError::Invalid(
            "a traced tensor has no data to export: its values exist only when the program runs".into(),
        ));
    }
    let dl = tensor.dtype().dlpack()?;
    let device = tensor.device();
    crate::backend::of(device).dlpack_exportable().map_err(TensorError::Invalid)?;
    let (device_type, device_id) = crate::backend::of(device).dlpack_device();
    let itemsize = tensor.dtype().itemsize()? as u64;
    Ok(DLTensor {
        data: tensor.storage().as_ptr().cast(),
        device: DLDevice { device_type, device_id },
        ndim: tensor.ndim() as i32,
        dtype: DLDataType { code: dl.code, bits: dl.bits, lanes: 1 },
        shape: context.shape.as_mut_ptr(),
        strides: context.strides.as_mut_ptr(),
        byte_offset: tensor.offset() as u64 * itemsize,
    })
}

fn export_context(tensor: &Tensor) -> Box<ExportContext> {
    Box::new(ExportContext {
        _tensor: tensor.clone(),
        shape: tensor.shape().to_vec(),
        strides: tensor.strides().to_vec(),
    })
}

unsafe extern "C" fn delete_versioned(managed: *mut DLManagedTensorVersioned) {
    if managed.is_null() {
        return;
    }
    // SAFETY: `managed` and its context were boxed by `export_versioned`; the consumer calls
    // the deleter once.
    unsafe {
        let managed = Box::from_raw(managed);
        drop(Box::from_raw(managed.manager_ctx.cast::<ExportContext>()));
    }
}

unsafe extern "C" fn delete_legacy(managed: *mut DLManagedTensor) {
    if managed.is_null() {
        return;
    }
    // SAFETY: as above, for `export_legacy`.
    unsafe {
        let managed = Box::from_raw(managed);
        drop(Box::from_raw(managed.manager_ctx.cast::<ExportContext>()));
    }
}

/// Exports `tensor` as a versioned managed tensor (zero-copy); the consumer owns the
/// returned pointer and calls its deleter once. `flags` may carry [`FLAG_IS_COPIED`]; a
/// read-only tensor is exported with [`FLAG_READ_ONLY`].
pub fn export_versioned(tensor: &Tensor, flags: u64) -> Result<*mut DLManagedTensorVersioned> {
    let mut context = export_context(tensor);
    let view = dl_tensor(tensor, &mut context)?;
    let flags = flags | if tensor.is_read_only() { FLAG_READ_ONLY } else { 0 };
    Ok(Box::into_raw(Box::new(DLManagedTensorVersioned {
        version: VERSION,
        manager_ctx: Box::into_raw(context).cast(),
        deleter: Some(delete_versioned),
        flags,
        dl_tensor: view,
    })))
}

/// Exports `tensor` as a legacy managed tensor (zero-copy). Legacy tensors carry no flags,
/// so a read-only tensor is refused: the consumer could not know it must not write.
pub fn export_legacy(tensor: &Tensor) -> Result<*mut DLManagedTensor> {
    if tensor.is_read_only() {
        return Err(TensorError::ReadOnly(
            "a read-only tensor cannot be exported as a legacy DLPack capsule (it has no read-only flag, so numpy refuses it too); ask for version 1.0 or later, or for a writable copy with copy=True".into(),
        ));
    }
    let mut context = export_context(tensor);
    let view = dl_tensor(tensor, &mut context)?;
    Ok(Box::into_raw(Box::new(DLManagedTensor {
        dl_tensor: view,
        manager_ctx: Box::into_raw(context).cast(),
        deleter: Some(delete_legacy),
    })))
}

/// Owns an imported managed tensor; calls its deleter exactly once, when dropped.
enum Imported {
    Versioned(*mut DLManagedTensorVersioned),
    Legacy(*mut DLManagedTensor),
}

// SAFETY: DLPack's deleter may be called from any thread (the standard asks producers to
// allow it); the pointer is only used by the deleter.
unsafe impl Send for Imported {}
unsafe impl Sync for Imported {}

impl Drop for Imported {
    fn drop(&mut self) {
        // SAFETY: the producer handed the managed tensor over; this is its one deleter call.
        unsafe {
            match *self {
                Imported::Versioned(m) => {
                    if let Some(deleter) = (*m).deleter {
                        deleter(m)
                    }
                }
                Imported::Legacy(m) => {
                    if let Some(deleter) = (*m).deleter {
                        deleter(m)
                    }
                }
            }
        }
    }
}

/// Imports a producer's versioned managed tensor, taking ownership (its deleter is called
/// once: when the tensor's last view is dropped, or at once if the import is refused).
///
/// # Safety
/// `managed` must be a valid `DLManagedTensorVersioned` whose ownership passes to this call.
pub unsafe fn import_versioned(managed: *mut DLManagedTensorVersioned) -> Result<Tensor> {
    let owner = Imported::Versioned(managed);
    // SAFETY: valid by the caller's contract.
    let (version, flags, view) = unsafe { ((*managed).version, (*managed).flags, &(*managed).dl_tensor) };
    if version.major != VERSION.major {
        return Err(TensorError::Invalid(format!(
            "DLPack version {}.{} is not supported: this library reads major version {}",
            version.major, version.minor, VERSION.major
        )));
    }
    // SAFETY: the view belongs to the managed tensor the owner keeps.
    unsafe { import_view(view, flags & FLAG_READ_ONLY != 0, Box::new(owner)) }
}

/// Imports a producer's legacy managed tensor, taking ownership (see [`import_versioned`]).
/// A legacy tensor cannot say whether its producer allows writes (an immutable jax array is
/// exported this way), so it is imported read-only, as numpy imports it.
///
/// # Safety
/// `managed` must be a valid `DLManagedTensor` whose ownership passes to this call.
pub unsafe fn import_legacy(managed: *mut DLManagedTensor) -> Result<Tensor> {
    let owner = Imported::Legacy(managed);
    // SAFETY: valid by the caller's contract; the owner keeps it.
    unsafe { import_view(&(*managed).dl_tensor, true, Box::new(owner)) }
}

/// A tensor over a DLTensor's memory, kept alive by `owner`; every field is checked first.
unsafe fn import_view(view: &DLTensor, read_only: bool, owner: Box<Imported>) -> Result<Tensor> {
    let device = crate::backend::device_of_dlpack(view.device.device_type, view.device.device_id)
        .map_err(TensorError::Invalid)?;
    let dtype = DType::from_dlpack(view.dtype.code, view.dtype.bits, view.dtype.lanes)?;
    let itemsize = dtype.itemsize()?;
    let ndim = usize::try_from(view.ndim)
        .map_err(|_| TensorError::Invalid(format!("DLPack ndim {} is negative", view.ndim)))?;
    if ndim > MAX_IMPORT_DIMS {
        return Err(TensorError::Invalid(format!(
            "DLPack ndim {ndim} is more than {MAX_IMPORT_DIMS} dims (numpy's limit, and this library's for imports)"
        )));
    }
    if ndim > 0 && view.shape.is_null() {
        return Err(TensorError::Invalid("DLPack tensor with dims but a null shape".into()));
    }
    // SAFETY: shape (and strides, when not null) hold ndim entries by the DLPack contract.
    let shape: Vec<i64> =
        if ndim == 0 { Vec::new() } else { unsafe { std::slice::from_raw_parts(view.shape, ndim) }.to_vec() };
    crate::shape::numel(&shape)?;
    let strides = if view.strides.is_null() || ndim == 0 {
        crate::shape::contiguous_strides(&shape)?
    } else {
        // SAFETY: as above.
        unsafe { std::slice::from_raw_parts(view.strides, ndim) }.to_vec()
    };
    let placed = place(view.data as usize, view.byte_offset, &shape, &strides, itemsize).map_err(|why| {
        TensorError::Invalid(format!(
            "DLPack tensor of shape {shape:?}, strides {strides:?}, byte offset {} from address {:#x}: {why}",
            view.byte_offset, view.data as usize
        ))
    })?;
    let (base, len, offset) = match placed {
        None => (NonNull::dangling(), 0, 0),
        Some(Placed { base, len, offset }) => (
            NonNull::new(base as *mut u8)
                .ok_or_else(|| TensorError::Invalid("DLPack tensor with a null data pointer".into()))?,
            len,
            offset,
        ),
    };
    // SAFETY: the producer keeps the span readable (and writable unless read-only) until its
    // deleter runs, which the owner delays until the storage is dropped.
    let storage = unsafe { Storage::foreign(base, len, device, read_only, owner) };
    Tensor::from_storage(Arc::new(storage), dtype, &shape, &strides, offset)
}

/// The most dims an imported tensor may have (numpy's `NPY_MAXDIMS`).
pub const MAX_IMPORT_DIMS: usize = 64;

/// Where an imported layout's bytes lie: the first byte reached, the bytes spanned, and the
/// first element's index from that byte.
#[derive(Debug, PartialEq, Eq)]
struct Placed {
    base: usize,
    len: usize,
    offset: i64,
}

/// The top of the addresses a process can be given: 2^57 on 64-bit targets (x86-64 with
/// 5-level paging gives user space up to 2^56, arm64 up to 2^52; CUDA's unified addresses lie
/// in the same range), the whole pointer width elsewhere. A producer's span past it cannot be
/// memory, so it is refused before anything reads it.
const ADDRESS_TOP: i128 = if usize::BITS >= 64 { 1 << 57 } else { usize::MAX as i128 + 1 };

/// The bytes a layout at `data + byte_offset` reaches (`None` for no element), computed in
/// 128 bits and refused, by name, when any byte lies outside the address space (below 0, at
/// or past [`ADDRESS_TOP`]), the span passes `isize::MAX`, or the first element's index does
/// not fit 64 bits.
fn place(
    data: usize,
    byte_offset: u64,
    shape: &[i64],
    strides: &[i64],
    itemsize: usize,
) -> std::result::Result<Option<Placed>, String> {
    let Some(reach) = crate::shape::bytes::reach(shape, strides, 0).map_err(|e| e.to_string())? else {
        return Ok(None);
    };
    let size = itemsize as i128;
    let first = data as i128 + i128::from(byte_offset);
    let top = ADDRESS_TOP;
    // |reach| < 2^126 elements, times the element's bytes: checked, an overflow lies
    // outside every address space as surely as a span past the top
    let byte = |element: i128| element.checked_mul(size).and_then(|b| b.checked_add(first));
    let (Some(start), Some(end)) = (byte(reach.low), reach.high.checked_add(1).and_then(byte)) else {
        return Err(format!(
            "its bytes lie outside the address space (0..{top}): elements {}..={} of {itemsize} bytes",
            reach.low, reach.high
        ));
    };
    if start < 0 || end > top {
        return Err(format!("its bytes {start}..{end} lie outside the address space (0..{top})"));
    }
    let len = end - start;
    if len > i128::from(crate::shape::bytes::MAX_BYTES) {
        return Err(format!("it spans {len} bytes, more than an address space holds"));
    }
    let offset =
        i64::try_from(-reach.low).map_err(|_| format!("its first element is {} elements into its span", -reach.low))?;
    Ok(Some(Placed { base: start as usize, len: len as usize, offset }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_outside_the_address_space_are_refused_by_name() {
        let at = 0x1000_0000usize;
        assert_eq!(place(at, 8, &[3], &[1], 4), Ok(Some(Placed { base: at + 8, len: 12, offset: 0 })));
        assert_eq!(place(at, 0, &[3], &[-1], 4), Ok(Some(Placed { base: at - 8, len: 12, offset: 2 })));
        assert_eq!(place(at, u64::MAX, &[0], &[1], 4), Ok(None), "no element: nothing is read");
        // found by the dlpack_import fuzz target: 2^62 elements 2^63 - 1 apart reach 2^125
        // elements, whose bytes (16 each) overflowed 128 bits
        let wide = place(at, 0, &[1 << 62], &[i64::MAX], 16).unwrap_err();
        assert!(wide.contains("outside the address space"), "{wide}");
        for (offset, shape, strides) in [
            (1u64 << 63, vec![1i64], vec![1i64]),
            (u64::MAX, vec![1], vec![1]),
            (0, vec![2], vec![-(1i64 << 60)]),
            (0, vec![2], vec![1 << 60]),
            (0, vec![2, 2], vec![i64::MAX, i64::MAX]),
            (0, vec![2], vec![i64::MIN]),
        ] {
            let err = place(at, offset, &shape, &strides, 8).unwrap_err();
            assert!(err.contains("outside the address space"), "{offset} {shape:?} {strides:?}: {err}");
        }
    }

    fn managed_with(
        ndim: i32,
        shape: &mut [i64],
        strides: *mut i64,
        byte_offset: u64,
        data: *mut c_void,
    ) -> DLManagedTensorVersioned {
        DLManagedTensorVersioned {
            version: VERSION,
            manager_ctx: std::ptr::null_mut(),
            deleter: None,
            flags: 0,
            dl_tensor: DLTensor {
                data,
                device: DLDevice { device_type: KDL_CPU, device_id: 0 },
                ndim,
                dtype: DLDataType { code: KDL_FLOAT, bits: 32, lanes: 1 },
                shape: shape.as_mut_ptr(),
                strides,
                byte_offset,
            },
        }
    }

    #[test]
    fn imports_refuse_too_many_dims_and_wild_offsets_before_reading() {
        let mut buffer = [1.0f32; 4];
        let data = buffer.as_mut_ptr().cast::<c_void>();
        // a shape array of 1 entry described as 2^31 - 1 dims: refused before it is read
        let mut one = [1i64];
        let mut wide = managed_with(i32::MAX, &mut one, std::ptr::null_mut(), 0, data);
        let err = unsafe { import_versioned(&mut wide) }.map(drop).unwrap_err().to_string();
        assert!(err.contains("ndim 2147483647 is more than 64 dims"), "{err}");
        let mut many = [1i64; 65];
        let mut m = managed_with(65, &mut many, std::ptr::null_mut(), 0, data);
        assert!(unsafe { import_versioned(&mut m) }.map(drop).unwrap_err().to_string().contains("65 is more than 64"));
        for offset in [1u64 << 63, u64::MAX] {
            let mut shape = [1i64];
            let mut m = managed_with(1, &mut shape, std::ptr::null_mut(), offset, data);
            let err = unsafe { import_versioned(&mut m) }.map(drop).unwrap_err().to_string();
            assert!(err.contains("outside the address space"), "{err}");
        }
        let (mut shape, mut strides) = ([2i64], [-(1i64 << 60)]);
        let mut m = managed_with(1, &mut shape, strides.as_mut_ptr(), 0, data);
        assert!(unsafe { import_versioned(&mut m) }.map(drop).unwrap_err().to_string().contains("address space"));
        let mut shape = [4i64];
        let mut fine = managed_with(1, &mut shape, std::ptr::null_mut(), 0, data);
        assert_eq!(unsafe { import_versioned(&mut fine) }.unwrap().to_vec::<f32>().unwrap(), vec![1.0; 4]);
    }

    #[test]
    fn an_empty_capsule_whose_contiguous_strides_pass_i64_is_accepted() {
        // found by the dlpack_import fuzz target (seed `empty_with_strides_past_i64`): no
        // strides, a 0 dim, and the other dims' product past 2^63: row-major strides, which
        // count the 0 dim as 1, overflowed, so a capsule of no element was refused
        let mut buffer = [0.0f32; 1];
        let data = buffer.as_mut_ptr().cast::<c_void>();
        let mut shape = [3i64, 0, 1 << 32, 1 << 32];
        let mut m = managed_with(4, &mut shape, std::ptr::null_mut(), 0, data);
        let t = unsafe { import_versioned(&mut m) }.unwrap();
        assert_eq!(t.shape(), &[3, 0, 1 << 32, 1 << 32]);
        assert_eq!(t.numel(), 0);
        assert_eq!(t.strides(), &[0, 0, 1 << 32, 1]);
        assert!(t.to_vec::<f32>().unwrap().is_empty());
    }

    #[test]
    fn an_export_imports_back_as_the_same_elements_without_a_copy() {
        let t = Tensor::from_vec((0..12).map(|x| x as i32).collect(), &[3, 4])
            .unwrap()
            .transpose(0, 1)
            .unwrap()
            .narrow(0, 1, 2)
            .unwrap();
        let managed = export_versioned(&t, 0).unwrap();
        let back = unsafe { import_versioned(managed) }.unwrap();
        assert_eq!(back.shape(), t.shape());
        assert_eq!(back.to_vec::<i32>().unwrap(), t.to_vec::<i32>().unwrap());
        assert_eq!(back.data_ptr(), t.data_ptr(), "the same memory");
        let legacy = export_legacy(&t).unwrap();
        let again = unsafe { import_legacy(legacy) }.unwrap();
        assert_eq!(again.to_vec::<i32>().unwrap(), vec![1, 5, 9, 2, 6, 10]);
        assert!(!back.is_read_only(), "a versioned capsule without the flag is writable");
        assert!(again.is_read_only(), "a legacy capsule cannot say writes are allowed: read-only");
        assert_eq!(again.data_ptr(), t.data_ptr(), "still the same memory");
    }

    #[test]
    fn the_exported_tensor_outlives_its_producer() {
        let managed = {
            let t = Tensor::from_vec(vec![1.5f64, 2.5], &[2]).unwrap();
            export_versioned(&t, 0).unwrap()
        };
        let back = unsafe { import_versioned(managed) }.unwrap();
        assert_eq!(back.to_vec::<f64>().unwrap(), vec![1.5, 2.5]);
    }

    #[test]
    fn a_refused_import_still_calls_the_deleter_once() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static CALLS: AtomicUsize = AtomicUsize::new(0);
        unsafe extern "C" fn count(_: *mut DLManagedTensorVersioned) {
            CALLS.fetch_add(1, Ordering::SeqCst);
        }
        let mut shape = [2i64];
        let mut managed = DLManagedTensorVersioned {
            version: VERSION,
            manager_ctx: std::ptr::null_mut(),
            deleter: Some(count),
            flags: 0,
            dl_tensor: DLTensor {
                data: std::ptr::null_mut(),
                device: DLDevice { device_type: 4, device_id: 0 },
                ndim: 1,
                dtype: DLDataType { code: 2, bits: 32, lanes: 1 },
                shape: shape.as_mut_ptr(),
                strides: std::ptr::null_mut(),
                byte_offset: 0,
            },
        };
        let err = unsafe { import_versioned(&mut managed) }.map(drop).unwrap_err().to_string();
        assert!(err.contains("device type 4"), "{err}");
        assert_eq!(CALLS.load(Ordering::SeqCst), 1);
        // Vulkan memory (type 7) is a device this build serves, and still refused: wgpu takes
        // no foreign buffer
        managed.dl_tensor.device.device_type = 7;
        let err = unsafe { import_versioned(&mut managed) }.map(drop).unwrap_err().to_string();
        assert!(err.contains("vulkan memory (device 0) cannot be imported"), "{err}");
        assert_eq!(CALLS.load(Ordering::SeqCst), 2);
    }
}
