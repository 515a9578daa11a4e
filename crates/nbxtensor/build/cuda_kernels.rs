//! The CUDA sources of the crate, composed from `cuda_sources::SOURCES` into `$OUT_DIR/cuda/`,
//! and `$OUT_DIR/cuda_sources.rs`: a `KernelSource` static for each, and `ALL`.
//!
//! With `NBX_SHIP_CUDA` set (`1`: the architectures of `data/shipped_cuda.yml`; or a list,
//! `sm_90,sm_89`), every source is compiled here by NVRTC for each architecture, in parallel,
//! and its machine code embedded, zstd-compressed, in the static: a process on one of those
//! architectures then compiles nothing. NVRTC is found at `NBX_NVRTC` (the path of
//! `libnvrtc.so.13`), else where the run time looks for it (`$CUDA_HOME/lib64`,
//! `/usr/local/cuda/lib64`, the `nvidia/*/lib` folders of `$VIRTUAL_ENV` and `$PYTHONPATH`);
//! not found, the build fails saying where it looked. Compiled code is kept in
//! `<target>/nbx-cuda-kernels/` under its whole key, so a rebuild compiles only what changed.

use super::cuda_sources::{compose, SourceParts, PRELUDE_FILE, SOURCES};
use super::kernel_files::{architecture_option, cache_key, fnv1a, program_text, read_cache, write_cache, OPTIONS};
use super::libraries::search_folders;
use std::ffi::{c_char, c_int, c_void, CString};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// zstd's level for the embedded images (a 12 MB cubin becomes about 0.4 MB).
const LEVEL: i32 = 19;

/// The architectures to ship, from `NBX_SHIP_CUDA` (empty: none).
fn shipped_architectures() -> Vec<String> {
    println!("cargo:rerun-if-env-changed=NBX_SHIP_CUDA");
    let asked = std::env::var("NBX_SHIP_CUDA").unwrap_or_default();
    let asked = asked.trim();
    let list: Vec<String> = match asked {
        "" | "0" => return Vec::new(),
        "1" => {
            println!("cargo:rerun-if-changed=data/shipped_cuda.yml");
            #[derive(serde::Deserialize)]
            #[serde(deny_unknown_fields)]
            struct Shipped {
                architectures: Vec<String>,
            }
            let text = std::fs::read_to_string("data/shipped_cuda.yml").expect("data/shipped_cuda.yml is readable");
            let table: Shipped = serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("data/shipped_cuda.yml: {e}"));
            table.architectures
        }
        list => list.split(',').map(|a| a.trim().to_string()).collect(),
    };
    for arch in &list {
        let digits = arch.strip_prefix("sm_").unwrap_or("");
        if digits.len() < 2 || !digits.bytes().all(|b| b.is_ascii_digit()) {
            panic!("NBX_SHIP_CUDA: '{arch}' is not an architecture like sm_90 (NBX_SHIP_CUDA is 1, or a list such as sm_80,sm_90)");
        }
    }
    list
}

/// The NVRTC entry points the build calls.
struct Nvrtc {
    _library: libloading::Library,
    version: (i32, i32),
    create: unsafe extern "C" fn(
        *mut *mut c_void,
        *const c_char,
        *const c_char,
        c_int,
        *const *const c_char,
        *const *const c_char,
    ) -> c_int,
    compile: unsafe extern "C" fn(*mut c_void, c_int, *const *const c_char) -> c_int,
    code_size: unsafe extern "C" fn(*mut c_void, *mut usize) -> c_int,
    code: unsafe extern "C" fn(*mut c_void, *mut c_char) -> c_int,
    log_size: unsafe extern "C" fn(*mut c_void, *mut usize) -> c_int,
    log: unsafe extern "C" fn(*mut c_void, *mut c_char) -> c_int,
    destroy: unsafe extern "C" fn(*mut *mut c_void) -> c_int,
}

// SAFETY: NVRTC's entry points may be called from several threads on distinct programs.
unsafe impl Sync for Nvrtc {}

impl Nvrtc {
    /// NVRTC from `NBX_NVRTC`, else the run time's search folders; its builtins library (which
    /// it opens by name) is loaded first from the same folder.
    fn open() -> Nvrtc {
        for var in ["NBX_NVRTC", "CUDA_HOME", "CUDA_PATH", "VIRTUAL_ENV", "PYTHONPATH"] {
            println!("cargo:rerun-if-env-changed={var}");
        }
        let candidates: Vec<PathBuf> = match std::env::var_os("NBX_NVRTC") {
            Some(path) => vec![PathBuf::from(path)],
            None => search_folders().into_iter().map(|folder| folder.join("libnvrtc.so.13")).collect(),
        };
        let Some(path) = candidates.iter().find(|p| p.is_file()) else {
            let tried: Vec<String> = candidates.iter().map(|p| p.display().to_string()).collect();
            panic!(
                "NBX_SHIP_CUDA asks for CUDA machine code, but NVRTC 13 (libnvrtc.so.13) is not at any of: {}. \
                 Install it (pip install 'nvidia-cuda-nvrtc==13.0.*' in $VIRTUAL_ENV) or name it in NBX_NVRTC, \
                 or unset NBX_SHIP_CUDA",
                tried.join(", ")
            );
        };
        let folder = path.parent().unwrap_or(Path::new("."));
        let mut builtins: Vec<PathBuf> =
            std::fs::read_dir(folder).map(|entries| entries.flatten().map(|e| e.path()).collect()).unwrap_or_default();
        builtins
            .retain(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("libnvrtc-builtins.so.")));
        for builtin in builtins {
            // SAFETY: loading NVRTC's builtins runs its initialisers, which have no preconditions.
            let library = unsafe { libloading::Library::new(&builtin) }
                .unwrap_or_else(|e| panic!("{}: could not be loaded: {e}", builtin.display()));
            std::mem::forget(library); // NVRTC finds it by its soname from now on
        }
        // SAFETY: as above.
        let library = unsafe { libloading::Library::new(path) }
            .unwrap_or_else(|e| panic!("{}: could not be loaded: {e}", path.display()));
        // SAFETY: each symbol is NVRTC's, with the signature of its header; the library outlives them.
        unsafe {
            fn symbol<T: Copy>(library: &libloading::Library, path: &Path, name: &str) -> T {
                // SAFETY: the caller names a symbol of the type it has.
                *unsafe { library.get::<T>(name.as_bytes()) }
                    .unwrap_or_else(|e| panic!("{}: no entry point {name}: {e}", path.display()))
            }
            let version_of: unsafe extern "C" fn(*mut c_int, *mut c_int) -> c_int =
                symbol(&library, path, "nvrtcVersion");
            let (mut major, mut minor) = (0, 0);
            version_of(&mut major, &mut minor);
            if major != 13 {
                panic!(
                    "{}: NVRTC {major}.{minor}; the run time loads NVRTC 13, so the build needs 13 too",
                    path.display()
                );
            }
            Nvrtc {
                version: (major, minor),
                create: symbol(&library, path, "nvrtcCreateProgram"),
                compile: symbol(&library, path, "nvrtcCompileProgram"),
                code_size: symbol(&library, path, "nvrtcGetCUBINSize"),
                code: symbol(&library, path, "nvrtcGetCUBIN"),
                log_size: symbol(&library, path, "nvrtcGetProgramLogSize"),
                log: symbol(&library, path, "nvrtcGetProgramLog"),
                destroy: symbol(&library, path, "nvrtcDestroyProgram"),
                _library: library,
            }
        }
    }

    /// The cubin of `program` (named `name`) for `arch`; a compile error panics with NVRTC's log.
    fn cubin(&self, name: &str, program: &str, arch: &str) -> Vec<u8> {
        let text = CString::new(program).expect("no nul in a kernel source");
        let c_name = CString::new(name).expect("no nul in a source name");
        let mut options: Vec<CString> = OPTIONS.iter().map(|o| CString::new(*o).expect("no nul in options")).collect();
        options.push(CString::new(architecture_option(arch)).expect("no nul in an architecture"));
        let pointers: Vec<*const c_char> = options.iter().map(|o| o.as_ptr()).collect();
        let mut handle: *mut c_void = std::ptr::null_mut();
        // SAFETY: every pointer is valid for the call; the program is destroyed below.
        unsafe {
            let created =
                (self.create)(&mut handle, text.as_ptr(), c_name.as_ptr(), 0, std::ptr::null(), std::ptr::null());
            assert_eq!(created, 0, "nvrtcCreateProgram failed for {name}");
            let compiled = (self.compile)(handle, pointers.len() as c_int, pointers.as_ptr());
            let result = if compiled == 0 {
                let mut size = 0usize;
                (self.code_size)(handle, &mut size);
                let mut code = vec![0u8; size];
                (self.code)(handle, code.as_mut_ptr().cast());
                Ok(code)
            } else {
                let mut size = 0usize;
                (self.log_size)(handle, &mut size);
                let mut log = vec![0u8; size];
                (self.log)(handle, log.as_mut_ptr().cast());
                Err(String::from_utf8_lossy(&log).trim_end_matches('\0').to_string())
            };
            (self.destroy)(&mut handle);
            result.unwrap_or_else(|log| panic!("{name}: NVRTC could not compile it for {arch}:\n{log}"))
        }
    }
}

/// `<target>/nbx-cuda-kernels`: the cargo target folder is the first above `OUT_DIR` holding
/// cargo's `.rustc_info.json` or `CACHEDIR.TAG` (a target folder made by maturin first has no
/// tag), so every profile and every build of the workspace shares one cache; OUT_DIR itself
/// where none does.
fn cache_folder(out: &Path) -> PathBuf {
    let target = out
        .ancestors()
        .find(|a| a.join(".rustc_info.json").is_file() || a.join("CACHEDIR.TAG").is_file())
        .unwrap_or(out);
    target.join("nbx-cuda-kernels")
}

/// The compressed machine code of each (source, architecture), compiled in parallel threads
/// (or read from the cache folder).
fn ship(programs: &[(&SourceParts, String)], architectures: &[String], out: &Path) -> Vec<Vec<Vec<u8>>> {
    let nvrtc = Nvrtc::open();
    let cache = cache_folder(out);
    // the longest sources first, so that no thread is left with a long one at the end
    let mut order: Vec<(usize, usize)> =
        (0..programs.len()).flat_map(|s| (0..architectures.len()).map(move |a| (s, a))).collect();
    order.sort_by_key(|&(s, _)| std::cmp::Reverse(programs[s].1.len()));
    let threads = std::env::var("NUM_JOBS").ok().and_then(|n| n.parse().ok()).unwrap_or(2usize).max(1);
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results = std::sync::Mutex::new(vec![vec![Vec::new(); architectures.len()]; programs.len()]);
    std::thread::scope(|scope| {
        for _ in 0..threads.min(order.len()) {
            scope.spawn(|| loop {
                let at = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(&(s, a)) = order.get(at) else { break };
                let (parts, program) = &programs[s];
                let arch = &architectures[a];
                let key = format!("zstd {LEVEL}\n{}", cache_key(nvrtc.version, arch, parts.name, "", program));
                let path = cache.join(format!("{:016x}.zst", fnv1a(key.as_bytes())));
                let packed = read_cache(&path, &key).unwrap_or_else(|| {
                    let code = nvrtc.cubin(parts.name, program, arch);
                    let packed = zstd::bulk::compress(&code, LEVEL).expect("zstd compresses a cubin");
                    write_cache(&path, &key, &packed).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                    packed
                });
                results.lock().unwrap()[s][a] = packed;
            });
        }
    });
    results.into_inner().unwrap()
}

/// Writes the sources, the shipped images and `cuda_sources.rs` into `OUT_DIR`.
pub fn generate() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let kernels = manifest.join("src/backend/cuda/kernels");
    println!("cargo:rerun-if-changed=src/backend/cuda/kernels");
    println!("cargo:rerun-if-changed=src/backend/cuda/kernel_files.rs");
    println!("cargo:rerun-if-changed=build/cuda_kernels.rs");
    println!("cargo:rerun-if-changed=build/cuda_sources.rs");
    let read =
        |file: &str| std::fs::read_to_string(kernels.join(file)).unwrap_or_else(|e| panic!("kernels/{file}: {e}"));
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap());
    let folder = out.join("cuda");
    std::fs::create_dir_all(&folder).expect("OUT_DIR is writable");
    let prelude = read(PRELUDE_FILE);
    let programs: Vec<(&SourceParts, String)> = SOURCES
        .iter()
        .map(|parts| {
            let text = compose(parts, read);
            let path = folder.join(parts.name);
            std::fs::write(&path, &text).expect("OUT_DIR is writable");
            (parts, program_text(&prelude, parts.name, &text))
        })
        .collect();
    let architectures = shipped_architectures();
    let images = if architectures.is_empty() { Vec::new() } else { ship(&programs, &architectures, &out) };

    let mut code = String::from("// Generated by build.rs (build/cuda_kernels.rs) from cuda_sources::SOURCES.\n\n");
    writeln!(code, "/// The architectures this build carries machine code for (`NBX_SHIP_CUDA`; empty: none).")
        .unwrap();
    writeln!(code, "pub const SHIPPED_ARCHITECTURES: &[&str] = &{architectures:?};\n").unwrap();
    for (s, (parts, _)) in programs.iter().enumerate() {
        writeln!(code, "/// {}", parts.doc).unwrap();
        writeln!(code, "pub static {}: KernelSource = KernelSource {{", parts.ident).unwrap();
        writeln!(code, "    name: {:?},", parts.name).unwrap();
        writeln!(code, "    text: include_str!({:?}),", folder.join(parts.name).display().to_string()).unwrap();
        code.push_str("    shipped: &[\n");
        for (a, arch) in architectures.iter().enumerate() {
            let path = folder.join(format!("{}.{arch}.zst", parts.name));
            std::fs::write(&path, &images[s][a]).expect("OUT_DIR is writable");
            writeln!(
                code,
                "        Shipped {{ arch: {arch:?}, image: include_bytes!({:?}) }},",
                path.display().to_string()
            )
            .unwrap();
        }
        code.push_str("    ],\n};\n\n");
    }
    writeln!(code, "/// Every CUDA source of the crate.").unwrap();
    writeln!(code, "pub static ALL: [&KernelSource; {}] = [", programs.len()).unwrap();
    for (parts, _) in &programs {
        writeln!(code, "    &{},", parts.ident).unwrap();
    }
    code.push_str("];\n");
    std::fs::write(out.join("cuda_sources.rs"), code).expect("OUT_DIR is writable");
}
