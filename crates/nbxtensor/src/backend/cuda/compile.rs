//! The machine code of a CUDA source for a device's architecture: the build's own where it
//! ships that architecture (`NBX_SHIP_CUDA`, `data/shipped_cuda.yml`), else NVRTC's, compiled at
//! first use and cached on disk (`<store>/kernels/<hash>.cubin` in the proven-settings store, or
//! the directory `settings::host` names), keyed by the source, the architecture, the options and
//! the compiler's version. A cached file holds its whole key and is used only when the key matches
//! byte for byte; an unreadable or stale file is compiled again and rewritten.

use super::kernel_files::{architecture_option, cache_key, fnv1a, program_text, read_cache, write_cache, OPTIONS};
use super::memory::{preload, require_symbols, CudaLibrary};
use super::source::{KernelSource, PRELUDE};
use crate::kernel::KernelError;
use crate::settings::host;
use cudarc::nvrtc::sys;
use std::ffi::{c_char, c_int, CString};
use std::path::PathBuf;
use std::sync::OnceLock;

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

fn cache_path(key: &str) -> Result<PathBuf, KernelError> {
    let cache = host::build_cache().map_err(|e| device_error(e.to_string()))?;
    Ok(cache.join(format!("{:016x}.cubin", fnv1a(key.as_bytes()))))
}

/// Whether the cache served the last compile of a source (for tests and logs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// The build's own machine code (`NBX_SHIP_CUDA`).
    Shipped,
    /// Read from the disk cache.
    Cached,
    /// Compiled now (and written to the cache).
    Compiled,
}

/// The machine code of `source` for `arch` (`"sm_90"`): the build's own where it ships `arch`,
/// else from the disk cache when a file holds the same key, else compiled by NVRTC (saying so on
/// stderr: it takes seconds) and cached. A compile error carries NVRTC's log.
pub fn cubin(source: &KernelSource, arch: &str) -> Result<(Vec<u8>, Origin), KernelError> {
    if let Some(image) = source.shipped_for(arch) {
        let code = zstd::stream::decode_all(image).map_err(|e| {
            device_error(format!("{}: the machine code shipped for {arch} is damaged: {e}", source.name))
        })?;
        return Ok((code, Origin::Shipped));
    }
    let version = nvrtc_version()?;
    let key = cache_key(version, arch, source.name, PRELUDE, source.text);
    let path = cache_path(&key)?;
    if let Some(cubin) = read_cache(&path, &key) {
        return Ok((cubin, Origin::Cached));
    }
    eprintln!(
        "nbxtensor: compiling the CUDA kernels of {} for {arch} (this build ships machine code for {}); \
         kept in {} for the next process",
        source.name,
        shipped_list(),
        path.parent().map(|p| p.display().to_string()).unwrap_or_default()
    );
    let cubin = compile(source, arch)?;
    write_cache(&path, &key, &cubin)
        .map_err(|e| device_error(format!("the kernel cache {} is not writable: {e}", path.display())))?;
    Ok((cubin, Origin::Compiled))
}

/// The architectures the build ships, as a phrase.
fn shipped_list() -> String {
    match super::source::SHIPPED_ARCHITECTURES {
        [] => "no architecture: it was built without NBX_SHIP_CUDA".to_string(),
        archs => archs.join(", "),
    }
}

/// Compiles `source` (after the prelude) for `arch` with NVRTC, without the cache.
pub fn compile(source: &KernelSource, arch: &str) -> Result<Vec<u8>, KernelError> {
    nvrtc_version()?;
    let text = CString::new(program_text(PRELUDE, source.name, source.text))
        .map_err(|_| device_error(format!("{}: the source holds a nul byte", source.name)))?;
    let name = CString::new(source.name).map_err(|_| device_error("a source name holds a nul byte".into()))?;
    let mut options: Vec<CString> = OPTIONS.iter().map(|o| CString::new(*o).expect("no nul in options")).collect();
    options.push(CString::new(architecture_option(arch)).map_err(|_| device_error("bad arch".into()))?);
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
        let key = |version, arch, text| cache_key(version, arch, "a.cu", PRELUDE, text);
        let (a, b) = ("__global__ void f() {}", "__global__ void f() { }");
        assert_ne!(key((13, 0), "sm_90", a), key((13, 0), "sm_90", b));
        assert_ne!(key((13, 0), "sm_90", a), key((13, 0), "sm_80", a));
        assert_ne!(key((13, 0), "sm_90", a), key((13, 1), "sm_90", a));
        assert_ne!(fnv1a(b"a"), fnv1a(b"b"));
    }

    /// Every kernel entry of every source awaits its inputs (`nbx_await_inputs`, the
    /// prelude's) in its own body: kernels launch programmatically on compute capability 9.0
    /// and later (launch.rs), where one that touched memory before the wait would race with the
    /// kernel before it. What precedes the wait in an entry reads no kernel's output (a GEMV's
    /// first weights).
    #[test]
    fn every_kernel_entry_awaits_its_inputs() {
        let mut entries = 0;
        for source in super::super::sources() {
            let text = source.text;
            for (at, _) in text.match_indices("extern \"C\" __global__") {
                let open = at + text[at..].find('{').unwrap();
                let mut depth = 0;
                let close = text[open..]
                    .char_indices()
                    .find(|&(_, c)| {
                        depth += match c {
                            '{' => 1,
                            '}' => -1,
                            _ => 0,
                        };
                        depth == 0
                    })
                    .map(|(i, _)| open + i)
                    .unwrap();
                let signature = text[at..open].split('(').next().unwrap_or("").trim();
                assert!(
                    text[open..close].contains("nbx_await_inputs();"),
                    "{}: the kernel entry `{signature}` does not await its inputs",
                    source.name
                );
                entries += 1;
            }
        }
        assert!(entries >= 49, "{entries} kernel entries found");
    }

    /// A build made with `NBX_SHIP_CUDA` carries, for every source and every architecture it
    /// names, a cubin for that architecture, and the run time serves it without NVRTC; a build
    /// without ships none (and the run time compiles).
    #[test]
    fn shipped_machine_code_covers_every_source() {
        let architectures = super::super::SHIPPED_ARCHITECTURES;
        for source in super::super::sources() {
            assert_eq!(source.shipped.len(), architectures.len(), "{}", source.name);
            for &arch in architectures {
                let (code, origin) = cubin(source, arch).unwrap_or_else(|e| panic!("{e}"));
                assert_eq!(origin, Origin::Shipped, "{} {arch}", source.name);
                assert_eq!(&code[..4], b"\x7fELF", "{} {arch}: not an ELF cubin", source.name);
                // the ELF header's e_flags (offset 48) carries the SM number in its second byte
                let flags = u32::from_le_bytes(code[48..52].try_into().unwrap());
                let sm: u32 = arch.trim_start_matches("sm_").parse().unwrap();
                assert_eq!((flags >> 8) & 0xff, sm, "{} {arch}: e_flags {flags:#x}", source.name);
            }
            assert!(source.shipped_for("sm_1").is_none());
        }
        eprintln!("shipped architectures: {architectures:?}");
    }
}
