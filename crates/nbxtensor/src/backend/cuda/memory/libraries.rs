//! Finding the CUDA libraries where users have them, before cudarc opens them by name.
//!
//! cudarc opens `libcuda.so.1`, `libnvrtc.so.13`, `libcublasLt.so.13` and `libcudnn.so.9` by name, which finds
//! only what the loader's path and cache list. Many machines keep them elsewhere: under
//! `$CUDA_HOME/lib64`, `/usr/local/cuda/lib64`, or the `lib` folders of the pip `nvidia-*`
//! wheels. Loading a library once by its full path (process-wide) makes the later open by name
//! find it, since the loader matches an already loaded library by its soname.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

/// A CUDA library this build opens.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CudaLibrary {
    /// The driver (`libcuda.so.1`), installed with the GPU driver.
    Driver,
    /// The run-time compiler (`libnvrtc.so.13`).
    Nvrtc,
    /// The matrix-product library (`libcublasLt.so.13`).
    CublasLt,
    /// The deep-learning library (`libcudnn.so.9`), for fused attention.
    Cudnn,
}

impl CudaLibrary {
    /// The file names tried, most specific first.
    pub fn file_names(self) -> &'static [&'static str] {
        match self {
            CudaLibrary::Driver => &["libcuda.so.1", "libcuda.so"],
            CudaLibrary::Nvrtc => &["libnvrtc.so.13", "libnvrtc.so"],
            CudaLibrary::CublasLt => &["libcublasLt.so.13", "libcublasLt.so"],
            CudaLibrary::Cudnn => &["libcudnn.so.9"],
        }
    }

    /// The libraries of the same folder the library itself opens by name at run time (cuDNN 9's
    /// graph, heuristic and engine parts), loaded from that folder beside it, in this order.
    pub fn parts(self) -> &'static [&'static str] {
        match self {
            CudaLibrary::Cudnn => &[
                "libcudnn_graph.so.9",
                "libcudnn_heuristic.so.9",
                "libcudnn_engines_precompiled.so.9",
                "libcudnn_engines_runtime_compiled.so.9",
            ],
            _ => &[],
        }
    }

    /// The parts of `folder` to load before the library: [`CudaLibrary::parts`], and for NVRTC
    /// its builtins (`libnvrtc-builtins.so.<major>.<minor>`, whose name carries the minor
    /// version), which NVRTC opens by name only when it compiles.
    fn parts_in(self, folder: &Path) -> Vec<PathBuf> {
        let mut parts: Vec<PathBuf> = self.parts().iter().map(|part| folder.join(part)).collect();
        if self == CudaLibrary::Nvrtc {
            let mut builtins: Vec<PathBuf> = std::fs::read_dir(folder)
                .map(|entries| entries.flatten().map(|e| e.path()).collect())
                .unwrap_or_default();
            builtins.retain(|p| {
                p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("libnvrtc-builtins.so."))
            });
            builtins.sort();
            parts.extend(builtins);
        }
        parts
    }
}

/// The folders searched after the loader's own path: `$CUDA_HOME/lib64`, `$CUDA_PATH/lib64`,
/// `/usr/local/cuda/lib64`, and the `nvidia/*/lib` folders of every `site-packages` on
/// `$PYTHONPATH` and beside the running Python (`$VIRTUAL_ENV`).
pub fn search_folders() -> Vec<PathBuf> {
    let mut folders = Vec::new();
    for var in ["CUDA_HOME", "CUDA_PATH"] {
        if let Some(home) = std::env::var_os(var) {
            folders.push(PathBuf::from(home).join("lib64"));
        }
    }
    folders.push(PathBuf::from("/usr/local/cuda/lib64"));
    let mut site_packages: Vec<PathBuf> =
        std::env::var_os("PYTHONPATH").map(|paths| std::env::split_paths(&paths).collect()).unwrap_or_default();
    if let Some(venv) = std::env::var_os("VIRTUAL_ENV") {
        site_packages.extend(python_site_packages(&PathBuf::from(venv).join("lib")));
    }
    for site in site_packages {
        let nvidia = site.join("nvidia");
        if let Ok(entries) = std::fs::read_dir(&nvidia) {
            let mut libs: Vec<PathBuf> =
                entries.flatten().map(|e| e.path().join("lib")).filter(|p| p.is_dir()).collect();
            libs.sort();
            folders.extend(libs);
        }
    }
    folders
}

/// The `pythonX.Y/site-packages` folders under a venv's `lib`.
fn python_site_packages(lib: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(lib) else { return Vec::new() };
    entries.flatten().map(|e| e.path().join("site-packages")).filter(|p| p.is_dir()).collect()
}

/// Where `library` was found: `Ok(None)` when the loader finds it by name, `Ok(Some(path))`
/// when it was loaded from a search folder, `Err` naming every place tried.
pub fn preload(library: CudaLibrary) -> Result<Option<PathBuf>, String> {
    static LOADED: OnceLock<Mutex<Vec<(&'static str, Result<Option<PathBuf>, String>)>>> = OnceLock::new();
    let loaded = LOADED.get_or_init(|| Mutex::new(Vec::new()));
    let mut loaded = loaded.lock().unwrap_or_else(|e| e.into_inner());
    let key = library.file_names()[0];
    if let Some((_, found)) = loaded.iter().find(|(name, _)| *name == key) {
        return found.clone();
    }
    let found = locate(library);
    loaded.push((key, found.clone()));
    found
}

/// Checks that a loaded library has every entry point this build calls; the error names the
/// library (`what`) and the first one missing.
pub fn require_symbols(lib: &libloading::Library, what: &str, symbols: &[&str]) -> Result<(), String> {
    for name in symbols {
        // SAFETY: looking a symbol up has no side effect.
        if unsafe { lib.get::<*const ()>(name.as_bytes()) }.is_err() {
            return Err(format!("{what} is not usable: its library has no entry point {name}"));
        }
    }
    Ok(())
}

fn locate(library: CudaLibrary) -> Result<Option<PathBuf>, String> {
    for name in library.file_names() {
        // SAFETY: loading a CUDA library runs its initialisers, which have no preconditions.
        if let Ok(lib) = unsafe { libloading::Library::new(*name) } {
            std::mem::forget(lib); // stays loaded for the process
            return Ok(None);
        }
    }
    let folders = search_folders();
    for folder in &folders {
        for name in library.file_names() {
            let path = folder.join(name);
            if !path.is_file() {
                continue;
            }
            for part in library.parts_in(folder) {
                // SAFETY: as above.
                match unsafe { libloading::Library::new(&part) } {
                    Ok(lib) => std::mem::forget(lib),
                    Err(e) => return Err(format!("{} was found but could not be loaded: {e}", part.display())),
                }
            }
            // SAFETY: as above.
            match unsafe { libloading::Library::new(&path) } {
                Ok(lib) => {
                    std::mem::forget(lib);
                    return Ok(Some(path));
                }
                Err(e) => return Err(format!("{} was found but could not be loaded: {e}", path.display())),
            }
        }
    }
    let tried: Vec<String> = folders.iter().map(|f| f.display().to_string()).collect();
    Err(format!(
        "{} was not found: not on the loader's path, nor in {}",
        library.file_names()[0],
        if tried.is_empty() { "any search folder".to_string() } else { tried.join(", ") }
    ))
}
