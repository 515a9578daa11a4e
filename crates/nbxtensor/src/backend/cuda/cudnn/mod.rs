//! cuDNN 9, loaded at run time like cuBLASLt, for what it does better than this backend's own
//! kernels: fused (flash) attention ([`attention`]). Only its graph ("backend") API is used:
//! descriptors with typed attributes, finalized, then an execution plan run on the device's
//! stream.
//!
//! cuDNN is found where users have it ([`preload`]: the loader's path, `$CUDA_HOME/lib64`,
//! the `nvidia/cudnn/lib` folder of the pip `nvidia-cudnn-cu13` wheel); a version before
//! [`MIN_VERSION`] or a missing entry point is an error that says so.

pub mod attention;
mod descriptor;

pub use descriptor::Descriptor;

use super::launch::device_context;
use super::memory::{preload, require_symbols, CudaLibrary};
use crate::kernel::{KernelError, Result};
use crate::memory::Device;
use cudarc::cudnn::sys;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

/// The oldest cuDNN this backend uses (9.6: the first with bottom-right causal masks of any
/// length).
pub const MIN_VERSION: usize = 90600;

/// Every cuDNN entry point this build calls.
const SYMBOLS: &[&str] = &[
    "cudnnGetVersion",
    "cudnnCreate",
    "cudnnSetStream",
    "cudnnGetErrorString",
    "cudnnGetLastErrorString",
    "cudnnBackendCreateDescriptor",
    "cudnnBackendDestroyDescriptor",
    "cudnnBackendSetAttribute",
    "cudnnBackendGetAttribute",
    "cudnnBackendFinalize",
    "cudnnBackendExecute",
];

/// The loaded library's version (`cudnnGetVersion`, e.g. 91900), or why cuDNN is not usable.
pub fn version() -> std::result::Result<usize, String> {
    static LIBRARY: OnceLock<std::result::Result<usize, String>> = OnceLock::new();
    LIBRARY
        .get_or_init(|| {
            preload(CudaLibrary::Cudnn).map_err(|e| format!("cuDNN is not available: {e}"))?;
            // SAFETY: the library is loaded, so culib() finds it by name.
            let lib = unsafe { sys::culib() };
            require_symbols(lib, "cuDNN", SYMBOLS)?;
            // SAFETY: every entry point is present; the call has no preconditions.
            let version = unsafe { sys::cudnnGetVersion() };
            if version < MIN_VERSION {
                return Err(format!("cuDNN {version} is too old: this build needs {MIN_VERSION} or later"));
            }
            Ok(version)
        })
        .clone()
}

/// Turns a cuDNN status into an error naming the call, the status and cuDNN's last message.
pub fn check(status: sys::cudnnStatus_t, call: &str) -> Result<()> {
    if status == sys::cudnnStatus_t::CUDNN_STATUS_SUCCESS {
        return Ok(());
    }
    // SAFETY: returns a static string for any status.
    let name = unsafe { std::ffi::CStr::from_ptr(sys::cudnnGetErrorString(status)) }.to_string_lossy().into_owned();
    let mut message = [0 as std::ffi::c_char; 512];
    // SAFETY: cuDNN writes at most `len` bytes, NUL-terminated.
    unsafe { sys::cudnnGetLastErrorString(message.as_mut_ptr(), message.len()) };
    // SAFETY: the buffer is NUL-terminated (zeroed, and cuDNN terminates what it writes).
    let last = unsafe { std::ffi::CStr::from_ptr(message.as_ptr()) }.to_string_lossy();
    let detail = if last.is_empty() { String::new() } else { format!(" ({last})") };
    Err(KernelError::Device(format!("{call} failed: {name}{detail}")))
}

/// A device's cuDNN handle, bound to the device's shared stream. Calls through it take its
/// lock (a handle is not for concurrent use); a thread recording a graph lends it its own
/// stream for one call ([`Handle::on_stream`]).
pub struct Handle {
    raw: sys::cudnnHandle_t,
}

// SAFETY: the handle is used only under its lock, with the device's context current.
unsafe impl Send for Handle {}

impl Handle {
    /// The raw handle, for descriptors and plans made under the lock.
    pub fn raw(&self) -> sys::cudnnHandle_t {
        self.raw
    }

    /// Runs `call` with the handle bound to `stream` (the calling thread's: the shared stream,
    /// or the stream it records a graph on), then binds it back to `shared`: a recording
    /// stream is destroyed after its capture, and the handle is never left on one (given a
    /// new stream while bound to a destroyed one, cuDNN crashed: the concurrency suite).
    pub fn on_stream<T>(
        &mut self,
        stream: cudarc::driver::sys::CUstream,
        shared: cudarc::driver::sys::CUstream,
        call: impl FnOnce(&Handle) -> Result<T>,
    ) -> Result<T> {
        if stream == shared {
            return call(self);
        }
        // SAFETY: the handle is ours under the lock; both streams belong to its device.
        check(unsafe { sys::cudnnSetStream(self.raw, stream as sys::cudaStream_t) }, "cudnnSetStream")?;
        let result = call(self);
        // SAFETY: as above.
        let restored = check(unsafe { sys::cudnnSetStream(self.raw, shared as sys::cudaStream_t) }, "cudnnSetStream");
        let value = result?;
        restored?;
        Ok(value)
    }
}

/// The cuDNN handle of `device`, made at first use (after the library is found) and bound to
/// the device's shared stream, the device's context current on this thread.
pub fn handle(device: Device) -> Result<Arc<Mutex<Handle>>> {
    version().map_err(KernelError::Device)?;
    static HANDLES: OnceLock<Mutex<HashMap<u32, Arc<Mutex<Handle>>>>> = OnceLock::new();
    let context = device_context(device)?;
    let mut handles = HANDLES.get_or_init(|| Mutex::new(HashMap::new())).lock().unwrap_or_else(|e| e.into_inner());
    if let Some(h) = handles.get(&device.index) {
        return Ok(Arc::clone(h));
    }
    let mut raw: sys::cudnnHandle_t = std::ptr::null_mut();
    // SAFETY: the device's context is current; the pointer is valid.
    check(unsafe { sys::cudnnCreate(&mut raw) }, "cudnnCreate")?;
    // SAFETY: the handle was just made; the shared stream lives for the process.
    check(unsafe { sys::cudnnSetStream(raw, context.shared_stream() as sys::cudaStream_t) }, "cudnnSetStream")?;
    let handle = Arc::new(Mutex::new(Handle { raw }));
    handles.insert(device.index, Arc::clone(&handle));
    Ok(handle)
}
