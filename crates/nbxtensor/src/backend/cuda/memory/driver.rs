//! The CUDA driver, probed once: the library found, its version read first
//! (`cuDriverGetVersion`), every entry point this build calls looked up (a missing one is an
//! error naming it, never a panic), then the devices discovered with their facts.

use super::libraries::{preload, CudaLibrary};
use cudarc::driver::sys;
use std::ffi::c_int;
use std::sync::OnceLock;

/// The oldest driver API this build is written against (CUDA 13.0, as `cuDriverGetVersion`
/// writes it).
pub const REQUIRED_DRIVER_VERSION: i32 = 13000;

/// Every driver entry point this build calls, looked up before the first call.
pub const DRIVER_SYMBOLS: &[&str] = &[
    "cuInit",
    "cuDriverGetVersion",
    "cuGetErrorName",
    "cuGetErrorString",
    "cuDeviceGetCount",
    "cuDeviceGet",
    "cuDeviceGetName",
    "cuDeviceGetAttribute",
    "cuDeviceTotalMem_v2",
    "cuDevicePrimaryCtxRetain",
    "cuCtxSetCurrent",
    "cuCtxGetCurrent",
    "cuCtxSynchronize",
    "cuStreamCreate",
    "cuStreamDestroy_v2",
    "cuStreamSynchronize",
    "cuStreamBeginCapture_v2",
    "cuStreamEndCapture",
    "cuStreamIsCapturing",
    "cuStreamWaitEvent",
    "cuMemAlloc_v2",
    "cuMemFree_v2",
    "cuMemHostAlloc",
    "cuMemFreeHost",
    "cuMemcpyHtoDAsync_v2",
    "cuMemcpyDtoHAsync_v2",
    "cuMemcpyDtoDAsync_v2",
    "cuMemsetD8Async",
    "cuMemGetInfo_v2",
    "cuPointerGetAttribute",
    "cuModuleLoadData",
    "cuModuleGetFunction",
    "cuFuncSetAttribute",
    "cuLaunchKernelEx",
    "cuGraphInstantiateWithFlags",
    "cuGraphLaunch",
    "cuGraphExecDestroy",
    "cuGraphDestroy",
    "cuGraphGetNodes",
    "cuEventCreate",
    "cuEventRecord",
    "cuEventSynchronize",
    "cuEventElapsedTime_v2",
    "cuEventDestroy_v2",
];

/// What discovery reads off one device.
#[derive(Clone, Debug, PartialEq)]
pub struct CudaDeviceInfo {
    /// The ordinal (`cuda:N`).
    pub index: u32,
    /// The name the driver reports (`"NVIDIA H200"`).
    pub name: String,
    /// Compute capability, major and minor (9, 0 on Hopper).
    pub compute_capability: (u32, u32),
    /// Streaming multiprocessors.
    pub multiprocessors: u32,
    /// Device memory in bytes.
    pub total_memory: u64,
    /// L2 cache in bytes.
    pub l2_bytes: u64,
    /// The most shared memory one block may opt into, in bytes.
    pub max_shared_per_block: u64,
}

impl CudaDeviceInfo {
    /// The architecture as the compiler names it (`"sm_90"`).
    pub fn arch(&self) -> String {
        format!("sm_{}{}", self.compute_capability.0, self.compute_capability.1)
    }
}

/// The probed driver: its version and its devices.
#[derive(Clone, Debug)]
pub struct Driver {
    /// `cuDriverGetVersion` (13000 for CUDA 13.0).
    pub version: i32,
    /// Where libcuda was loaded from (`None`: the loader's own path).
    pub library: Option<std::path::PathBuf>,
    /// The devices, by ordinal.
    pub devices: Vec<CudaDeviceInfo>,
}

/// The driver, probed once per process; the error says why CUDA is not usable here (no
/// library, an old driver, a missing entry point, no device).
pub fn driver() -> Result<&'static Driver, String> {
    static DRIVER: OnceLock<Result<Driver, String>> = OnceLock::new();
    DRIVER.get_or_init(probe).as_ref().map_err(Clone::clone)
}

/// Whether CUDA is usable: the driver library and at least one device are present.
pub fn is_available() -> bool {
    driver().is_ok()
}

/// The name and description of a driver error code.
pub fn describe(code: sys::CUresult) -> String {
    let error = cudarc::driver::result::DriverError(code);
    match (error.error_name(), error.error_string()) {
        (Ok(name), Ok(text)) => format!("{} ({})", name.to_string_lossy(), text.to_string_lossy()),
        _ => format!("{code:?}"),
    }
}

/// Turns a driver result into an error naming the call.
pub fn check(result: sys::CUresult, call: &str) -> Result<(), String> {
    match result {
        sys::CUresult::CUDA_SUCCESS => Ok(()),
        code => Err(format!("{call} failed: {}", describe(code))),
    }
}

fn probe() -> Result<Driver, String> {
    let library = preload(CudaLibrary::Driver).map_err(|e| format!("CUDA is not available: {e}"))?;
    // SAFETY: the library is loaded (preload succeeded), so culib() finds it by name.
    let lib = unsafe { sys::culib() };
    for name in ["cuDriverGetVersion"].iter().chain(DRIVER_SYMBOLS) {
        // SAFETY: looking a symbol up has no side effect.
        if unsafe { lib.get::<*const ()>(name.as_bytes()) }.is_err() {
            return Err(format!("CUDA is not usable: the driver library has no entry point {name}"));
        }
    }
    let mut version: c_int = 0;
    // SAFETY: the symbol exists; the pointer is valid.
    check(unsafe { sys::cuDriverGetVersion(&mut version) }, "cuDriverGetVersion")?;
    if version < REQUIRED_DRIVER_VERSION {
        return Err(format!(
            "CUDA is not usable: the driver supports CUDA {}.{}, this build needs {}.{} or newer",
            version / 1000,
            version % 1000 / 10,
            REQUIRED_DRIVER_VERSION / 1000,
            REQUIRED_DRIVER_VERSION % 1000 / 10
        ));
    }
    // SAFETY: every symbol was checked above.
    check(unsafe { sys::cuInit(0) }, "cuInit")?;
    let mut count: c_int = 0;
    check(unsafe { sys::cuDeviceGetCount(&mut count) }, "cuDeviceGetCount")?;
    if count == 0 {
        return Err("CUDA is not usable: the driver sees no device".to_string());
    }
    let devices = (0..count).map(|ordinal| discover(ordinal as u32)).collect::<Result<Vec<_>, _>>()?;
    Ok(Driver { version, library, devices })
}

fn attribute(device: sys::CUdevice, attribute: sys::CUdevice_attribute) -> Result<u64, String> {
    let mut value: c_int = 0;
    // SAFETY: the device handle is valid; the pointer is valid.
    check(unsafe { sys::cuDeviceGetAttribute(&mut value, attribute, device) }, "cuDeviceGetAttribute")?;
    u64::try_from(value).map_err(|_| format!("cuDeviceGetAttribute({attribute:?}) gave {value}"))
}

fn discover(index: u32) -> Result<CudaDeviceInfo, String> {
    use sys::CUdevice_attribute as A;
    let mut device: sys::CUdevice = 0;
    // SAFETY: the ordinal is below the count; pointers are valid.
    check(unsafe { sys::cuDeviceGet(&mut device, index as c_int) }, "cuDeviceGet")?;
    let mut name = [0 as std::ffi::c_char; 256];
    check(unsafe { sys::cuDeviceGetName(name.as_mut_ptr(), name.len() as c_int, device) }, "cuDeviceGetName")?;
    // SAFETY: the driver wrote a nul-terminated string into the buffer.
    let name = unsafe { std::ffi::CStr::from_ptr(name.as_ptr()) }.to_string_lossy().into_owned();
    let mut total: usize = 0;
    check(unsafe { sys::cuDeviceTotalMem_v2(&mut total, device) }, "cuDeviceTotalMem_v2")?;
    Ok(CudaDeviceInfo {
        index,
        name,
        compute_capability: (
            attribute(device, A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)? as u32,
            attribute(device, A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)? as u32,
        ),
        multiprocessors: attribute(device, A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)? as u32,
        total_memory: total as u64,
        l2_bytes: attribute(device, A::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)?,
        max_shared_per_block: attribute(device, A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)?,
    })
}
