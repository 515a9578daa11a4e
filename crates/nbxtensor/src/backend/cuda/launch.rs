//! Loading compiled sources as modules (once per device) and launching their functions on
//! the device's stream.

use super::compile::cubin;
use super::source::KernelSource;
use crate::kernel::KernelError;
use crate::memory::cuda::{check, context, CudaContext};
use crate::memory::{Device, DeviceKind};
use cudarc::driver::sys;
use std::collections::HashMap;
use std::ffi::{c_void, CString};
use std::sync::{Mutex, OnceLock};

/// A kernel function of a loaded module, on one device.
#[derive(Clone, Copy)]
pub struct CudaFunction {
    function: sys::CUfunction,
    context: &'static CudaContext,
}

// SAFETY: a CUfunction handle is valid on any thread with its context current (launch binds it).
unsafe impl Send for CudaFunction {}
unsafe impl Sync for CudaFunction {}

/// Per device and source: the loaded module and the functions looked up in it, by name.
struct Handles {
    modules: HashMap<(u32, &'static str), Module>,
}

struct Module {
    module: usize,
    functions: HashMap<String, usize>,
}

fn handles() -> &'static Mutex<Handles> {
    static HANDLES: OnceLock<Mutex<Handles>> = OnceLock::new();
    HANDLES.get_or_init(|| Mutex::new(Handles { modules: HashMap::new() }))
}

/// The context of a CUDA device, as a kernel error.
pub fn device_context(device: Device) -> Result<&'static CudaContext, KernelError> {
    if device.kind != DeviceKind::Cuda {
        return Err(KernelError::Invalid(format!("{device} is not a CUDA device")));
    }
    context(device.index).map_err(KernelError::Device)
}

/// The function `name` of `source` on `device`: the source is compiled (or read from the
/// cache) and loaded at the first request, then the handle is reused.
pub fn function(device: Device, source: &'static KernelSource, name: &str) -> Result<CudaFunction, KernelError> {
    let context = device_context(device)?;
    let mut handles = handles().lock().unwrap_or_else(|e| e.into_inner());
    if let Some(&function) = handles.modules.get(&(device.index, source.name)).and_then(|m| m.functions.get(name)) {
        return Ok(CudaFunction { function: function as sys::CUfunction, context });
    }
    let loaded = match handles.modules.entry((device.index, source.name)) {
        std::collections::hash_map::Entry::Occupied(entry) => entry.into_mut(),
        std::collections::hash_map::Entry::Vacant(entry) => {
            let (image, _) = cubin(source, &context.info().arch())?;
            let mut module: sys::CUmodule = std::ptr::null_mut();
            // SAFETY: the image is a cubin for this device's arch; the context is current.
            check(unsafe { sys::cuModuleLoadData(&mut module, image.as_ptr().cast()) }, "cuModuleLoadData")
                .map_err(|e| KernelError::Device(format!("{}: {e}", source.name)))?;
            entry.insert(Module { module: module as usize, functions: HashMap::new() })
        }
    };
    let c_name = CString::new(name).map_err(|_| KernelError::Invalid("a kernel name holds a nul byte".into()))?;
    let mut function: sys::CUfunction = std::ptr::null_mut();
    // SAFETY: the module is loaded in this context.
    check(
        unsafe { sys::cuModuleGetFunction(&mut function, loaded.module as sys::CUmodule, c_name.as_ptr()) },
        "cuModuleGetFunction",
    )
    .map_err(|e| KernelError::Device(format!("{}: function {name}: {e}", source.name)))?;
    loaded.functions.insert(name.to_string(), function as usize);
    Ok(CudaFunction { function, context })
}

/// A kernel's parameters, each held in whole 8-byte words (a 4-byte value is read from the low
/// half, which little-endian machines put first), or as a struct passed by value.
#[derive(Default)]
pub struct Args {
    words: Vec<u64>,
    starts: Vec<usize>,
}

impl Args {
    /// No parameters yet.
    pub fn new() -> Args {
        Args { words: Vec::with_capacity(32), starts: Vec::with_capacity(16) }
    }

    fn word(&mut self, word: u64) -> &mut Args {
        self.starts.push(self.words.len());
        self.words.push(word);
        self
    }

    /// A device address.
    pub fn ptr(&mut self, address: u64) -> &mut Args {
        self.word(address)
    }

    /// A 64-bit integer.
    pub fn i64(&mut self, value: i64) -> &mut Args {
        self.word(value as u64)
    }

    /// A 32-bit integer.
    pub fn i32(&mut self, value: i32) -> &mut Args {
        self.word(u64::from(value as u32))
    }

    /// A 32-bit float.
    pub fn f32(&mut self, value: f32) -> &mut Args {
        self.word(u64::from(value.to_bits()))
    }

    /// A plain-data struct passed by value (`#[repr(C)]`, no pointers to host memory).
    pub fn value<T: Copy>(&mut self, value: &T) -> &mut Args {
        let start = self.words.len();
        let words = std::mem::size_of::<T>().div_ceil(8).max(1);
        self.starts.push(start);
        self.words.resize(start + words, 0);
        // SAFETY: the words from `start` hold at least size_of::<T>() bytes, 8-byte aligned.
        unsafe {
            std::ptr::copy_nonoverlapping(
                (value as *const T).cast::<u8>(),
                self.words.as_mut_ptr().add(start).cast(),
                std::mem::size_of::<T>(),
            )
        };
        self
    }

    /// The address of each parameter (valid while the words are neither moved nor grown).
    fn pointers(&mut self) -> Vec<*mut c_void> {
        let base = self.words.as_mut_ptr();
        // SAFETY: every start lies within the words.
        self.starts.iter().map(|&start| unsafe { base.add(start) }.cast()).collect()
    }
}

impl CudaFunction {
    /// Queues the function on the device's stream with `grid` × `block` threads,
    /// `shared_bytes` of dynamic shared memory and `args` (which must match its parameters).
    pub fn launch(
        &self,
        grid: [u32; 3],
        block: [u32; 3],
        shared_bytes: u32,
        args: &mut Args,
    ) -> Result<(), KernelError> {
        self.context.bind().map_err(KernelError::Device)?;
        if grid.contains(&0) {
            return Ok(()); // nothing to do: an empty tensor
        }
        let mut pointers = args.pointers();
        // SAFETY: the function was loaded in this context; the parameters match the kernel's
        // signature (each family's contract) and live until cuLaunchKernel has copied them.
        let result = unsafe {
            sys::cuLaunchKernel(
                self.function,
                grid[0],
                grid[1],
                grid[2],
                block[0],
                block[1],
                block[2],
                shared_bytes,
                self.context.stream(),
                pointers.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        };
        check(result, "cuLaunchKernel").map_err(KernelError::Device)
    }

    /// Lets the function use up to `bytes` of dynamic shared memory (above the default 48 KiB).
    pub fn allow_shared(&self, bytes: u32) -> Result<(), KernelError> {
        self.context.bind().map_err(KernelError::Device)?;
        // SAFETY: the function belongs to the current context.
        let result = unsafe {
            sys::cuFuncSetAttribute(
                self.function,
                sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                bytes as i32,
            )
        };
        check(result, "cuFuncSetAttribute").map_err(KernelError::Device)
    }

    /// The device's context (its stream, its facts).
    pub fn context(&self) -> &'static CudaContext {
        self.context
    }
}

/// The device address of a tensor's first element.
pub fn device_ptr(tensor: &crate::tensor::Tensor) -> u64 {
    tensor.data_ptr() as u64
}
