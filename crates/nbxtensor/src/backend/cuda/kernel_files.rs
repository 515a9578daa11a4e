//! How a CUDA source is compiled and its machine code kept: the options, the program text, the
//! key and the cache file. Shared with `build.rs` (through `#[path]`, so std only), which compiles
//! the sources into the build when asked to (`NBX_SHIP_CUDA`); the run time (`compile.rs`)
//! compiles only what a build did not ship.

use std::path::Path;

/// The options every kernel is compiled with (besides the architecture).
pub const OPTIONS: &[&str] = &["--std=c++17", "-default-device"];

/// The architectures compiled with their architecture-specific features (`sm_90` as `sm_90a`:
/// Hopper's warpgroup products). Such machine code runs on that compute capability only, as the
/// machine code of every source is compiled for, and kept under, the device's exact architecture.
pub const ARCH_SPECIFIC: &[&str] = &["sm_90"];

/// NVRTC's architecture option for `arch` (`"sm_90"` → `--gpu-architecture=sm_90a`).
pub fn architecture_option(arch: &str) -> String {
    let suffix = if ARCH_SPECIFIC.contains(&arch) { "a" } else { "" };
    format!("--gpu-architecture={arch}{suffix}")
}

/// What NVRTC compiles for a source: the prelude, then the source under its own name.
pub fn program_text(prelude: &str, name: &str, text: &str) -> String {
    format!("{prelude}\n#line 1 \"{name}\"\n{text}")
}

/// The key machine code is kept under: everything it depends on, the compiler's version first.
pub fn cache_key(version: (i32, i32), arch: &str, name: &str, prelude: &str, text: &str) -> String {
    format!(
        "nvrtc {}.{}\narch {arch}\noptions {} {}\nsource {name}\n{prelude}\n{text}",
        version.0,
        version.1,
        OPTIONS.join(" "),
        architecture_option(arch)
    )
}

/// FNV-1a, 64 bits: names a cache file (the file itself holds the whole key).
pub fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &b| (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

/// What a cache file starts with.
const MAGIC: &[u8] = b"nbxtensor-cubin-1\n";

/// The machine code a cache file holds for `key`, if it holds exactly that key.
pub fn read_cache(path: &Path, key: &str) -> Option<Vec<u8>> {
    let bytes = std::fs::read(path).ok()?;
    let rest = bytes.strip_prefix(MAGIC)?;
    let (len, rest) = rest.split_first_chunk::<8>()?;
    let len = usize::try_from(u64::from_le_bytes(*len)).ok()?;
    if rest.len() < len || &rest[..len] != key.as_bytes() {
        return None;
    }
    Some(rest[len..].to_vec())
}

/// Writes a cache file of `key` and its machine code: beside, then renamed, so that a reader
/// never sees half a file.
pub fn write_cache(path: &Path, key: &str, code: &[u8]) -> std::io::Result<()> {
    if let Some(folder) = path.parent() {
        std::fs::create_dir_all(folder)?;
    }
    let mut bytes = Vec::with_capacity(MAGIC.len() + 8 + key.len() + code.len());
    bytes.extend_from_slice(MAGIC);
    bytes.extend_from_slice(&(key.len() as u64).to_le_bytes());
    bytes.extend_from_slice(key.as_bytes());
    bytes.extend_from_slice(code);
    let partial = path.with_extension(format!("{}.partial", std::process::id()));
    std::fs::write(&partial, bytes)?;
    std::fs::rename(&partial, path)
}
