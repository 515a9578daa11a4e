//! One cuDNN backend descriptor, owned: made, given its attributes, finalized, destroyed when
//! dropped.

use super::check;
use crate::kernel::Result;
use cudarc::cudnn::sys;
use std::ffi::c_void;

use sys::cudnnBackendAttributeName_t as Name;
use sys::cudnnBackendAttributeType_t as Type;

/// An owned backend descriptor of one type.
pub struct Descriptor {
    raw: sys::cudnnBackendDescriptor_t,
    kind: sys::cudnnBackendDescriptorType_t,
}

// SAFETY: a descriptor is plain host state of cuDNN; it is used from one thread at a time.
unsafe impl Send for Descriptor {}
// SAFETY: after it is finalized a descriptor is only read (executed) by cuDNN.
unsafe impl Sync for Descriptor {}

impl Descriptor {
    /// A new descriptor of `kind`.
    pub fn new(kind: sys::cudnnBackendDescriptorType_t) -> Result<Descriptor> {
        let mut raw: sys::cudnnBackendDescriptor_t = std::ptr::null_mut();
        // SAFETY: the pointer is valid; cuDNN is loaded (the caller got a handle).
        check(unsafe { sys::cudnnBackendCreateDescriptor(kind, &mut raw) }, "cudnnBackendCreateDescriptor")?;
        Ok(Descriptor { raw, kind })
    }

    /// The raw descriptor, for another descriptor's attribute or an execution.
    pub fn raw(&self) -> sys::cudnnBackendDescriptor_t {
        self.raw
    }

    fn set(&self, name: Name, kind: Type, count: usize, values: *const c_void) -> Result<&Self> {
        // SAFETY: `values` points at `count` elements of the type `kind` names.
        let status = unsafe { sys::cudnnBackendSetAttribute(self.raw, name, kind, count as i64, values) };
        check(status, &format!("cudnnBackendSetAttribute({name:?})"))?;
        Ok(self)
    }

    /// Sets 64-bit integers.
    pub fn ints(&self, name: Name, values: &[i64]) -> Result<&Self> {
        self.set(name, Type::CUDNN_TYPE_INT64, values.len(), values.as_ptr().cast())
    }

    /// Sets one boolean.
    pub fn boolean(&self, name: Name, value: bool) -> Result<&Self> {
        self.set(name, Type::CUDNN_TYPE_BOOLEAN, 1, (&value as *const bool).cast())
    }

    /// Sets one value of an enum-typed attribute (`kind`: its attribute type).
    pub fn enumerated(&self, name: Name, kind: Type, value: i32) -> Result<&Self> {
        self.set(name, kind, 1, (&value as *const i32).cast())
    }

    /// Sets descriptors.
    pub fn descriptors(&self, name: Name, values: &[&Descriptor]) -> Result<&Self> {
        let raw: Vec<sys::cudnnBackendDescriptor_t> = values.iter().map(|d| d.raw).collect();
        self.set(name, Type::CUDNN_TYPE_BACKEND_DESCRIPTOR, raw.len(), raw.as_ptr().cast())
    }

    /// Sets the handle.
    pub fn handle(&self, name: Name, handle: sys::cudnnHandle_t) -> Result<&Self> {
        self.set(name, Type::CUDNN_TYPE_HANDLE, 1, (&handle as *const sys::cudnnHandle_t).cast())
    }

    /// Sets pointers (device addresses, or host addresses of values passed by value).
    pub fn pointers(&self, name: Name, values: &[*mut c_void]) -> Result<&Self> {
        self.set(name, Type::CUDNN_TYPE_VOID_PTR, values.len(), values.as_ptr().cast())
    }

    /// Finalizes the descriptor: its attributes are checked and it becomes usable.
    pub fn finalize(&self) -> Result<&Self> {
        // SAFETY: the descriptor is live.
        check(unsafe { sys::cudnnBackendFinalize(self.raw) }, &format!("cudnnBackendFinalize({:?})", self.kind))?;
        Ok(self)
    }

    /// Finalizes the descriptor, giving cuDNN's refusal as the status (no error built).
    pub fn try_finalize(&self) -> sys::cudnnStatus_t {
        // SAFETY: the descriptor is live.
        unsafe { sys::cudnnBackendFinalize(self.raw) }
    }

    /// Reads one 64-bit integer.
    pub fn int(&self, name: Name) -> Result<i64> {
        let (mut value, mut count) = (0i64, 0i64);
        // SAFETY: room for one element is given.
        let status = unsafe {
            sys::cudnnBackendGetAttribute(
                self.raw,
                name,
                Type::CUDNN_TYPE_INT64,
                1,
                &mut count,
                (&mut value as *mut i64).cast(),
            )
        };
        check(status, &format!("cudnnBackendGetAttribute({name:?})"))?;
        Ok(value)
    }

    /// Reads up to `into.len()` descriptors into the (made, not finalized) descriptors given;
    /// returns how many cuDNN wrote.
    pub fn read_descriptors(&self, name: Name, into: &[Descriptor]) -> Result<usize> {
        let mut raw: Vec<sys::cudnnBackendDescriptor_t> = into.iter().map(|d| d.raw).collect();
        let mut count = 0i64;
        // SAFETY: `raw` holds `into.len()` live descriptors for cuDNN to fill.
        let status = unsafe {
            sys::cudnnBackendGetAttribute(
                self.raw,
                name,
                Type::CUDNN_TYPE_BACKEND_DESCRIPTOR,
                raw.len() as i64,
                &mut count,
                raw.as_mut_ptr().cast(),
            )
        };
        check(status, &format!("cudnnBackendGetAttribute({name:?})"))?;
        Ok(count.clamp(0, into.len() as i64) as usize)
    }
}

impl Drop for Descriptor {
    fn drop(&mut self) {
        // SAFETY: the descriptor is live and owned; nothing uses it after this.
        unsafe { sys::cudnnBackendDestroyDescriptor(self.raw) };
    }
}
