//! `nbxtensor.backend.cpu.blas`: the thread count of the BLAS numpy calls (OpenBLAS), held
//! to the pool's: as many threads as the pool outside `parallel_for`, one per piece inside.
//!
//! The library is found among the objects loaded in the process (numpy loads its OpenBLAS,
//! `libscipy_openblas64_…so`, when it is imported) and its `set_num_threads` entry point is
//! called through `dlsym`. Where no OpenBLAS is loaded there is nothing to hold.

use pyo3::prelude::*;
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::sync::OnceLock;

/// The spellings of OpenBLAS's thread entry points: plain builds, 64-bit-integer builds and
/// the builds numpy ships (`scipy_openblas…64_`).
const SET_NAMES: [&str; 4] = [
    "scipy_openblas_set_num_threads64_",
    "openblas_set_num_threads64_",
    "scipy_openblas_set_num_threads",
    "openblas_set_num_threads",
];
const GET_NAMES: [&str; 4] = [
    "scipy_openblas_get_num_threads64_",
    "openblas_get_num_threads64_",
    "scipy_openblas_get_num_threads",
    "openblas_get_num_threads",
];

/// A loaded OpenBLAS and its thread entry points.
struct OpenBlas {
    path: String,
    set: unsafe extern "C" fn(c_int),
    get: unsafe extern "C" fn() -> c_int,
}

/// Paths of the loaded objects whose file name mentions openblas.
fn loaded_openblas_paths() -> Vec<String> {
    unsafe extern "C" fn visit(info: *mut libc::dl_phdr_info, _size: libc::size_t, data: *mut c_void) -> c_int {
        // SAFETY: dl_iterate_phdr hands a valid info for the duration of the call, and `data`
        // is the Vec passed below.
        let (info, paths) = unsafe { (&*info, &mut *(data as *mut Vec<String>)) };
        if !info.dlpi_name.is_null() {
            // SAFETY: dlpi_name is a NUL-terminated string owned by the loader.
            let name = unsafe { CStr::from_ptr(info.dlpi_name) }.to_string_lossy().into_owned();
            if name.to_ascii_lowercase().contains("openblas") {
                paths.push(name);
            }
        }
        0
    }
    let mut paths: Vec<String> = Vec::new();
    // SAFETY: the callback only reads the loader's records and writes to `paths`.
    unsafe { libc::dl_iterate_phdr(Some(visit), &mut paths as *mut Vec<String> as *mut c_void) };
    paths
}

/// The first entry point among `names` that the library exports.
fn symbol(handle: *mut c_void, names: &[&str]) -> Option<*mut c_void> {
    names.iter().find_map(|name| {
        let name = CString::new(*name).ok()?;
        // SAFETY: handle comes from dlopen and name is NUL-terminated.
        let address = unsafe { libc::dlsym(handle, name.as_ptr() as *const c_char) };
        (!address.is_null()).then_some(address)
    })
}

fn find() -> Option<OpenBlas> {
    loaded_openblas_paths().into_iter().find_map(|path| {
        let c_path = CString::new(path.clone()).ok()?;
        // SAFETY: RTLD_NOLOAD only returns a handle to an object already loaded.
        let handle = unsafe { libc::dlopen(c_path.as_ptr(), libc::RTLD_NOW | libc::RTLD_NOLOAD) };
        if handle.is_null() {
            return None;
        }
        let (set, get) = (symbol(handle, &SET_NAMES)?, symbol(handle, &GET_NAMES)?);
        // SAFETY: these OpenBLAS entry points have exactly these C signatures.
        Some(OpenBlas { path, set: unsafe { std::mem::transmute(set) }, get: unsafe { std::mem::transmute(get) } })
    })
}

fn openblas() -> Option<&'static OpenBlas> {
    static FOUND: OnceLock<Option<OpenBlas>> = OnceLock::new();
    FOUND.get_or_init(find).as_ref()
}

/// Sets the BLAS's thread count (nothing to do where no OpenBLAS is loaded).
pub fn hold_to(threads: usize) {
    if let Some(blas) = openblas() {
        // SAFETY: openblas_set_num_threads takes any positive int.
        unsafe { (blas.set)(c_int::try_from(threads.max(1)).unwrap_or(c_int::MAX)) };
    }
}

/// The path of the OpenBLAS numpy loaded, or None.
#[pyfunction]
fn library() -> Option<&'static str> {
    openblas().map(|b| b.path.as_str())
}

/// The BLAS's thread count now, or None where no OpenBLAS is loaded.
#[pyfunction]
fn threads() -> Option<i64> {
    // SAFETY: openblas_get_num_threads takes no argument.
    openblas().map(|b| i64::from(unsafe { (b.get)() }))
}

/// Holds the BLAS to the pool's size (called when the pool's size changes).
#[pyfunction]
fn hold_to_pool() {
    hold_to(nbxtensor::settings::threads::threads());
}

/// Registers the module's functions.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(library, m)?)?;
    m.add_function(wrap_pyfunction!(threads, m)?)?;
    m.add_function(wrap_pyfunction!(hold_to_pool, m)?)?;
    Ok(())
}
