//! Loading compiled sources as modules (once per device) and launching their functions on
//! the device's stream.

use super::compile::cubin;
use super::memory::{check, context, CudaContext};
use super::source::KernelSource;
use crate::kernel::KernelError;
use crate::memory::{Device, DeviceKind};
use cudarc::driver::sys;
use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::{c_void, CString};
use std::fmt::{Arguments, Write};
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};

/// The first compute capability with programmatic dependent launch (CUDA C++ Programming
/// Guide, "Programmatic Dependent Launch and Synchronization"); `nbx_await_inputs` of
/// `kernels/prelude.cuh` waits for the previous kernel on the same architectures.
const PROGRAMMATIC_LAUNCH_SINCE: (u32, u32) = (9, 0);

/// Whether kernels are launched programmatically where the device has it (on by default).
static OVERLAPPED: AtomicBool = AtomicBool::new(true);

/// Sets whether a kernel may start while the one before it on the stream ends, on devices of
/// compute capability 9.0 and later (programmatic dependent launch: its blocks take the
/// multiprocessors the previous kernel frees and wait for its writes in `nbx_await_inputs`; a
/// GEMV reads its first weights before). On by default; graphs captured later follow the
/// setting, graphs captured earlier keep theirs.
pub fn set_overlapped_launches(on: bool) {
    OVERLAPPED.store(on, Ordering::Relaxed);
}

/// Whether kernels launch overlapped where the device allows it ([`set_overlapped_launches`]).
pub fn overlapped_launches() -> bool {
    OVERLAPPED.load(Ordering::Relaxed)
}

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

thread_local! {
    /// This thread's functions found so far, by device and source, then by name (a repeated
    /// request takes no lock and allocates nothing), and the buffer names are written into.
    static FOUND: RefCell<Found> = RefCell::new(Found { name: String::new(), sources: Vec::new() });
}

struct Found {
    name: String,
    sources: Vec<(u32, &'static str, HashMap<String, CudaFunction>)>,
}

/// The function `name` of `source` on `device`: the source is compiled (or read from the
/// cache) and loaded at the first request in the process, then the handle is reused.
pub fn function(
    device: Device,
    source: &'static KernelSource,
    name: Arguments<'_>,
) -> Result<CudaFunction, KernelError> {
    FOUND.with(|found| {
        let mut found = found.borrow_mut();
        let Found { name: buffer, sources } = &mut *found;
        buffer.clear();
        buffer.write_fmt(name).map_err(|_| KernelError::Invalid("a kernel name could not be written".into()))?;
        let at = match sources.iter().position(|(index, s, _)| *index == device.index && *s == source.name) {
            Some(at) => at,
            None => {
                sources.push((device.index, source.name, HashMap::new()));
                sources.len() - 1
            }
        };
        let functions = &mut sources[at].2;
        if let Some(&function) = functions.get(buffer.as_str()) {
            return Ok(function);
        }
        let function = load(device, source, buffer)?;
        functions.insert(buffer.clone(), function);
        Ok(function)
    })
}

/// The function `name` of `source` on `device`, from the process's modules (the source
/// compiled and loaded at the first request).
fn load(device: Device, source: &'static KernelSource, name: &str) -> Result<CudaFunction, KernelError> {
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

/// The most 8-byte words a launch's parameters take (1 KiB, a quarter of the driver's
/// classic 4 KiB limit: the largest family, gather, takes under 80).
pub const ARGS_WORDS: usize = 128;

/// The most parameters a kernel takes.
pub const ARGS_COUNT: usize = 32;

/// A kernel's parameters, each held in whole 8-byte words (a 4-byte value is read from the low
/// half, which little-endian machines put first), or as a struct passed by value. Held inline:
/// making and launching them allocates nothing.
pub struct Args {
    words: [MaybeUninit<u64>; ARGS_WORDS],
    used: usize,
    starts: [u16; ARGS_COUNT],
    count: usize,
    /// The first parameter that did not fit, if one did not (the launch is then refused).
    overflow: Option<usize>,
}

impl Default for Args {
    fn default() -> Args {
        Args::new()
    }
}

impl Args {
    /// No parameters yet.
    pub fn new() -> Args {
        Args { words: [MaybeUninit::uninit(); ARGS_WORDS], used: 0, starts: [0; ARGS_COUNT], count: 0, overflow: None }
    }

    /// Reserves `words` words for the next parameter; `None` (and the launch refused) when
    /// they do not fit.
    fn reserve(&mut self, words: usize) -> Option<usize> {
        let start = self.used;
        if self.overflow.is_some() || self.count == ARGS_COUNT || start + words > ARGS_WORDS {
            self.overflow.get_or_insert(self.count);
            return None;
        }
        self.starts[self.count] = start as u16;
        self.count += 1;
        self.used += words;
        Some(start)
    }

    fn word(&mut self, word: u64) -> &mut Args {
        if let Some(start) = self.reserve(1) {
            self.words[start] = MaybeUninit::new(word);
        }
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

    /// A 64-bit float.
    pub fn f64(&mut self, value: f64) -> &mut Args {
        self.word(value.to_bits())
    }

    /// A plain-data struct passed by value (`#[repr(C)]`, no pointers to host memory).
    pub fn value<T: Copy>(&mut self, value: &T) -> &mut Args {
        let words = std::mem::size_of::<T>().div_ceil(8).max(1);
        if let Some(start) = self.reserve(words) {
            // the padding past the value is zero
            self.words[start..start + words].fill(MaybeUninit::new(0));
            // SAFETY: the words from `start` hold at least size_of::<T>() bytes, 8-byte aligned.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    (value as *const T).cast::<u8>(),
                    self.words.as_mut_ptr().add(start).cast(),
                    std::mem::size_of::<T>(),
                )
            };
        }
        self
    }

    /// Writes the address of each parameter into `pointers` (valid while the Args is neither
    /// moved nor changed); refused when a parameter did not fit.
    fn pointers(&mut self, pointers: &mut [*mut c_void; ARGS_COUNT]) -> Result<(), KernelError> {
        if let Some(at) = self.overflow {
            return Err(KernelError::Invalid(format!(
                "kernel parameter {at} does not fit: a launch takes at most {ARGS_COUNT} parameters in {} bytes",
                ARGS_WORDS * 8
            )));
        }
        let base = self.words.as_mut_ptr();
        for (pointer, &start) in pointers.iter_mut().zip(&self.starts[..self.count]) {
            // SAFETY: every start lies within the words.
            *pointer = unsafe { base.add(usize::from(start)) }.cast();
        }
        Ok(())
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
        let mut pointers = [std::ptr::null_mut(); ARGS_COUNT];
        args.pointers(&mut pointers)?;
        let overlapped = overlapped_launches() && self.context.info().compute_capability >= PROGRAMMATIC_LAUNCH_SINCE;
        let mut attributes = Vec::with_capacity(1);
        if overlapped {
            attributes.push(sys::CUlaunchAttribute {
                id: sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION,
                pad: [0; 4],
                value: sys::CUlaunchAttributeValue { programmaticStreamSerializationAllowed: 1 },
            });
        }
        let config = sys::CUlaunchConfig {
            gridDimX: grid[0],
            gridDimY: grid[1],
            gridDimZ: grid[2],
            blockDimX: block[0],
            blockDimY: block[1],
            blockDimZ: block[2],
            sharedMemBytes: shared_bytes,
            hStream: self.context.stream(),
            attrs: attributes.as_mut_ptr(),
            numAttrs: attributes.len() as u32,
        };
        // SAFETY: the function was loaded in this context; the parameters match the kernel's
        // signature (each family's contract) and live, like the configuration, until
        // cuLaunchKernelEx has copied them; every kernel awaits its inputs (prelude.cuh) before
        // it touches memory, which makes the programmatic launch safe.
        let result =
            unsafe { sys::cuLaunchKernelEx(&config, self.function, pointers.as_mut_ptr(), std::ptr::null_mut()) };
        check(result, "cuLaunchKernelEx").map_err(KernelError::Device)
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

#[cfg(test)]
mod tests {
    use super::{Args, ARGS_COUNT, ARGS_WORDS};

    /// The bytes the driver would read for parameter `at` (of `len` bytes).
    fn read(args: &mut Args, at: usize, len: usize) -> Vec<u8> {
        let mut pointers = [std::ptr::null_mut(); ARGS_COUNT];
        args.pointers(&mut pointers).expect("the parameters fit");
        // SAFETY: the pointer addresses `len` bytes inside the args' words.
        unsafe { std::slice::from_raw_parts(pointers[at].cast::<u8>(), len) }.to_vec()
    }

    #[test]
    fn parameters_are_laid_out_in_whole_words() {
        let mut args = Args::new();
        args.ptr(0x1234_5678_9abc).i32(-2).f32(1.5).value(&[7u8, 8, 9]).i64(-1);
        assert_eq!(read(&mut args, 0, 8), 0x1234_5678_9abcu64.to_le_bytes());
        assert_eq!(read(&mut args, 1, 4), (-2i32).to_le_bytes());
        assert_eq!(read(&mut args, 2, 4), 1.5f32.to_le_bytes());
        // a 3-byte struct takes a word, zero past its bytes
        assert_eq!(read(&mut args, 3, 8), [7, 8, 9, 0, 0, 0, 0, 0]);
        assert_eq!(read(&mut args, 4, 8), (-1i64).to_le_bytes());
    }

    #[test]
    fn too_many_parameters_or_words_are_refused_by_name() {
        let mut pointers = [std::ptr::null_mut(); ARGS_COUNT];
        let mut args = Args::new();
        for i in 0..=ARGS_COUNT {
            args.i64(i as i64);
        }
        let error = args.pointers(&mut pointers).unwrap_err().to_string();
        assert!(error.contains(&format!("parameter {ARGS_COUNT} does not fit")), "{error}");
        let mut args = Args::new();
        args.ptr(1).value(&[0u64; ARGS_WORDS]);
        let error = args.pointers(&mut pointers).unwrap_err().to_string();
        assert!(error.contains("parameter 1 does not fit"), "{error}");
        assert!(error.contains(&format!("{} bytes", ARGS_WORDS * 8)), "{error}");
    }
}
