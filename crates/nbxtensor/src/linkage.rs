//! C symbols this crate defines for its own link. naga (the WGSL compiler of the wgpu backend)
//! calls the C library's `hypot` and `hypotf` through Rust's `f64::hypot`; glibc 2.35 gave them
//! a new symbol version (GLIBC_2.35), so the extension would need a glibc newer than the wheel's
//! manylinux_2_34 policy allows. Defined here (by the `libm` crate, as the CPU kernels' hypot
//! is), the link resolves them without the C library: the extension asks glibc for nothing past
//! 2.34 (`tests/test_packaging.py` checks the symbol versions). Not under Miri, which links
//! nothing and serves `hypot` itself.

/// `hypot(x, y)`: `sqrt(x² + y²)` without overflow, for the link of this library.
#[cfg(all(target_os = "linux", target_env = "gnu", not(miri)))]
#[no_mangle]
pub extern "C" fn hypot(x: f64, y: f64) -> f64 {
    libm::hypot(x, y)
}

/// `hypotf(x, y)`: as [`hypot`] in float32.
#[cfg(all(target_os = "linux", target_env = "gnu", not(miri)))]
#[no_mangle]
pub extern "C" fn hypotf(x: f32, y: f32) -> f32 {
    libm::hypotf(x, y)
}
