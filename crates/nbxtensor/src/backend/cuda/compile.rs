//! NVRTC: CUDA C sources of the crate compiled for a device's exact architecture at first
//! use, and cached on disk (`<store>/kernels/<hash>.cubin` in the proven-settings store, or the
//! directory `settings::host` names), keyed by the source, the architecture, the options and
//! the compiler's version. A cached file holds its whole key and is used only when the key matches
//! byte for byte; an unreadable or stale file is compiled again and rewritten.

use super::memory::{preload, require_symbols, CudaLibrary};
use super::source::{KernelSource, PRELUDE};
use crate::kernel::KernelError;
use crate::settings::host;
use cudarc::nvrtc::sys;
use std::ffi::{c_char, c_int, CString};
use std::path::PathBuf;
use std::sync::OnceLock;

/// The options every kernel is compiled with (besides the architecture).
pub const OPTIONS: &[&str] = &["--std=c++17", "-default-device"];

/// What a cache file starts with.
const MAGIC: &[u8] = b"nbxtensor-cubin-1\n";

/// Every NVRTC entry point this build calls.
const NVRTC_SYMBOLS: &[&str] = &[
    "nvrtcVersion",
    "nvrtcCreateProgram",
    "nvrtcCompileProgram",
    "nvrtcGetCUBINSize",
    "nvrtcGetCUBIN",
    "nvrtcGetProgramLogSize",
    "nvrtcGetProgramLog",
    "nvrtcDestroyProgram",
    "nvrtcGetErrorString",
];

fn device_error(message: String) -> KernelError {
    KernelError::Device(message)
}

/// The NVRTC version (major, minor), once its library and entry points are found.
pub fn nvrtc_version() -> Result<(i32, i32), KernelError> {
    static VERSION: OnceLock<Result<(i32, i32), String>> = OnceLock::new();
    VERSION
        .get_or_init(|| {
            preload(CudaLibrary::Nvrtc).map_err(|e| format!("NVRTC is not available: {e}"))?;
            // SAFETY: the library is loaded, so culib() finds it by name.
            let lib = unsafe { sys::culib() };
            require_symbols(lib, "NVRTC", NVRTC_SYMBOLS)?;
            let (mut major, mut minor) = (0, 0);
            // SAFETY: the symbol exists; pointers are valid.
            check(unsafe { sys::nvrtcVersion(&mut major, &mut minor) }, "nvrtcVersion")?;
            Ok((major, minor))
        })
        .clone()
        .map_err(device_error)
}

fn check(result: sys::nvrtcResult, call: &str) -> Result<(), String> {
    if result == sys::nvrtcResult::NVRTC_SUCCESS {
        return Ok(());
    }
    // SAFETY: nvrtcGetErrorString returns a static string for any code.
    let text = unsafe { std::ffi::CStr::from_ptr(sys::nvrtcGetErrorString(result)) };
    Err(format!("{call} failed: {}", text.to_string_lossy()))
}

/// The key a compiled source is cached under: everything its machine code depends on.
fn cache_key(source: &KernelSource, arch: &str, version: (i32, i32)) -> String {
    format!(
        "nvrtc {}.{}\narch {arch}\noptions {}\nsource {}\n{PRELUDE}\n{}",
        version.0,
        version.1,
        OPTIONS.join(" "),
        source.name,
        source.text
    )
}

/// FNV-1a, 64 bits: names the cache file (the file itself holds the whole key).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &b| (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

fn cache_path(key: &str) -> Result<PathBuf, KernelError> {
    let cache = host::build_cache().map_err(|e| device_error(e.to_string()))?;
    Ok(cache.join(format!("{:016x}.cubin", fnv1a(key.as_bytes()))))
}

/// The cached machine code for `key`, if a file holds exactly that key.
fn read_cache(path: &PathBuf, key: &str) -> Option<Vec<u8>> {
    let bytes = std::fs::read(path).ok()?;
    let rest = bytes.strip_prefix(MAGIC)?;
    let (len, rest) = rest.split_first_chunk::<8>()?;
    let len = usize::try_from(u64::from_le_bytes(*len)).ok()?;
    if rest.len() < len || &rest[..len] != key.as_bytes() {
        return None;
    }
    Some(rest[len..].to_vec())
}

fn write_cache(path: &PathBuf, key: &str, cubin: &[u8]) -> Result<(), KernelError> {
    let unwritable =
        |e: std::io::Error| device_error(format!("the kernel cache {} is not writable: {e}", path.display()));
    if let Some(folder) = path.parent() {
        std::fs::create_dir_all(folder).map_err(unwritable)?;
    }
    let mut bytes = Vec::with_capacity(MAGIC.len() + 8 + key.len() + cubin.len());
    bytes.extend_from_slice(MAGIC);
    bytes.extend_from_slice(&(key.len() as u64).to_le_bytes());
    bytes.extend_from_slice(key.as_bytes());
    bytes.extend_from_slice(cubin);
    // write beside, then rename: a reader never sees half a file
    let partial = path.with_extension(format!("{}.partial", std::process::id()));
    std::fs::write(&partial, bytes).map_err(unwritable)?;
    std::fs::rename(&partial, path).map_err(unwritable)
}

/// Whether the cache served the last compile of a source (for tests and logs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// Read from the disk cache.
    Cached,
    /// Compiled now (and written to the cache).
    Compiled,
}

/// The machine code of `source` for `arch` (`"sm_90"`): from the disk cache when a file holds
/// the same key, else compiled by NVRTC and cached. A compile error carries NVRTC's log.
pub fn cubin(source: &KernelSource, arch: &str) -> Result<(Vec<u8>, Origin), KernelError> {
    let version = nvrtc_version()?;
    let key = cache_key(source, arch, version);
    let path = cache_path(&key)?;
    if let Some(cubin) = read_cache(&path, &key) {
        return Ok((cubin, Origin::Cached));
    }
    let cubin = compile(source, arch)?;
    write_cache(&path, &key, &cubin)?;
    Ok((cubin, Origin::Compiled))
}

/// Compiles `source` (after the prelude) for `arch` with NVRTC, without the cache.
pub fn compile(source: &KernelSource, arch: &str) -> Result<Vec<u8>, KernelError> {
    nvrtc_version()?;
    let text = CString::new(format!("{PRELUDE}\n#line 1 \"{}\"\n{}", source.name, source.text))
        .map_err(|_| device_error(format!("{}: the source holds a nul byte", source.name)))?;
    let name = CString::new(source.name).map_err(|_| device_error("a source name holds a nul byte".into()))?;
    let mut options: Vec<CString> = OPTIONS.iter().map(|o| CString::new(*o).expect("no nul in options")).collect();
    options.push(CString::new(format!("--gpu-architecture={arch}")).map_err(|_| device_error("bad arch".into()))?);
    let option_ptrs: Vec<*const c_char> = options.iter().map(|o| o.as_ptr()).collect();
    let mut program: sys::nvrtcProgram = std::ptr::null_mut();
    // SAFETY: every pointer is valid for the call; the program is destroyed below.
    unsafe {
        check(
            sys::nvrtcCreateProgram(&mut program, text.as_ptr(), name.as_ptr(), 0, std::ptr::null(), std::ptr::null()),
            "nvrtcCreateProgram",
        )
        .map_err(device_error)?;
        let compiled = sys::nvrtcCompileProgram(program, option_ptrs.len() as c_int, option_ptrs.as_ptr());
        let result = if compiled == sys::nvrtcResult::NVRTC_SUCCESS {
            let mut size = 0usize;
            check(sys::nvrtcGetCUBINSize(program, &mut size), "nvrtcGetCUBINSize").and_then(|_| {
                let mut cubin = vec![0u8; size];
                check(sys::nvrtcGetCUBIN(program, cubin.as_mut_ptr().cast()), "nvrtcGetCUBIN").map(|_| cubin)
            })
        } else {
            let mut size = 0usize;
            let mut log = String::new();
            if sys::nvrtcGetProgramLogSize(program, &mut size) == sys::nvrtcResult::NVRTC_SUCCESS {
                let mut bytes = vec![0u8; size];
                if sys::nvrtcGetProgramLog(program, bytes.as_mut_ptr().cast()) == sys::nvrtcResult::NVRTC_SUCCESS {
                    log = String::from_utf8_lossy(&bytes).trim_end_matches('\0').to_string();
                }
            }
            Err(format!("{}: NVRTC could not compile it for {arch}:\n{log}", source.name))
        };
        sys::nvrtcDestroyProgram(&mut program);
        result.map_err(device_error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_files_hold_their_key() {
        let dir = std::env::temp_dir().join(format!("nbx-cubin-{}", std::process::id()));
        let path = dir.join("x.cubin");
        write_cache(&path, "key one", b"\x7fELF machine code").unwrap();
        assert_eq!(read_cache(&path, "key one").unwrap(), b"\x7fELF machine code");
        assert_eq!(read_cache(&path, "key two"), None, "another key is a miss");
        std::fs::write(&path, b"garbage").unwrap();
        assert_eq!(read_cache(&path, "key one"), None, "a damaged file is a miss");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn keys_change_with_what_the_code_depends_on() {
        let a = KernelSource { name: "a.cu", text: "__global__ void f() {}" };
        let b = KernelSource { name: "a.cu", text: "__global__ void f() { }" };
        assert_ne!(cache_key(&a, "sm_90", (13, 0)), cache_key(&b, "sm_90", (13, 0)));
        assert_ne!(cache_key(&a, "sm_90", (13, 0)), cache_key(&a, "sm_80", (13, 0)));
        assert_ne!(cache_key(&a, "sm_90", (13, 0)), cache_key(&a, "sm_90", (13, 1)));
        assert_ne!(fnv1a(b"a"), fnv1a(b"b"));
    }
}
