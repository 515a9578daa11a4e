//! CUDA device memory, through cudarc with dynamic loading: the same binary runs with or
//! without CUDA. CUDA is present iff the driver library loads, reports a version this build
//! supports, has every entry point the build calls, and sees a device; otherwise every CUDA
//! request is an error that says which of these failed.
//!
//! ```
//! use nbxtensor::backend::cuda::memory as cuda;
//! match cuda::driver() {
//!     Ok(driver) => assert!(!driver.devices.is_empty()),
//!     Err(why) => assert!(why.starts_with("CUDA is not")),
//! }
//! ```

mod allocator;
mod context;
mod driver;
mod libraries;

pub use allocator::{cuda_allocator, size_class, CudaAllocator, CudaBlock, DEVICE_ALIGNMENT, STAGING_BYTES};
pub use context::{context, CudaContext};
pub use driver::{
    check, describe, driver, is_available, CudaDeviceInfo, Driver, DRIVER_SYMBOLS, REQUIRED_DRIVER_VERSION,
};
pub use libraries::{preload, require_symbols, search_folders, CudaLibrary};
