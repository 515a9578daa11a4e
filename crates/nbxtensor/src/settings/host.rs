//! The services an application may still pass in (the spec's `nbxtensor.host`), each plain
//! data with a default, each restored by setting it back to its default:
//!
//! - the device description: the file the library recognises from the driver's device name,
//!   or another file of the package named by the application ([`set_device_description`]);
//! - the operand decisions of the matrix unit: float32 products computed exactly (the
//!   default), or with TF32 operands where the device's matrix unit takes them
//!   ([`set_matrix_operands`]);
//! - the operand decision of attention: the softmax probabilities rounded to the inputs' dtype
//!   before they weigh the values, as FlashAttention, cuDNN and torch's attention do (the
//!   default; on CUDA it is what lets cuDNN's fused attention serve float16 and bfloat16), or
//!   kept in float32 ([`set_attention_operands`]);
//! - where backend builds live: the compiled GPU kernels' cache, by default `kernels/` in the
//!   proven-settings store ([`set_build_cache`]).
//!
//! Each is read when it is used (a decision when a launch runs or a product is prepared), and
//! is process-wide.

use super::{autotune_store, SettingsError};
use std::path::PathBuf;
use std::sync::RwLock;

/// Which device description the library uses for a GPU.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum DeviceDescription {
    /// The file whose names hold the driver's device name.
    #[default]
    Recognised,
    /// This file of the package (`vendor`, `name`), whatever the driver reports.
    File {
        /// The vendor (`"nvidia"`).
        vendor: String,
        /// The file's name (`"h100"`).
        name: String,
    },
}

/// How float32 matrix products use the matrix unit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum MatrixOperands {
    /// Exactly, in float32 (every backend's default).
    #[default]
    Float32,
    /// TF32 operands (10-bit mantissas) and float32 accumulation, where the matrix unit has
    /// TF32 (CUDA on Ampere and later); the CPU computes float32 products exactly either way.
    Tf32,
}

/// How attention multiplies its softmax probabilities by the values.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum AttentionOperands {
    /// The probabilities stay float32 (exact; on CUDA this backend's own kernel, slower than
    /// cuDNN's).
    Float32,
    /// The probabilities are rounded to the inputs' dtype first (float16, bfloat16), as the
    /// fused attention kernels of FlashAttention and cuDNN feed their matrix units (the default).
    #[default]
    Input,
}

/// Where compiled GPU kernels are cached.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum BuildCache {
    /// `kernels/` in the proven-settings store (`autotune_store`).
    #[default]
    InStore,
    /// This directory.
    Path(PathBuf),
}

struct Services {
    device: DeviceDescription,
    matrix: MatrixOperands,
    attention: AttentionOperands,
    cache: BuildCache,
}

fn services() -> &'static RwLock<Services> {
    static SERVICES: RwLock<Services> = RwLock::new(Services {
        device: DeviceDescription::Recognised,
        matrix: MatrixOperands::Float32,
        attention: AttentionOperands::Input,
        cache: BuildCache::InStore,
    });
    &SERVICES
}

fn read<T>(f: impl FnOnce(&Services) -> T) -> T {
    f(&services().read().unwrap_or_else(|e| e.into_inner()))
}

fn write(f: impl FnOnce(&mut Services)) {
    f(&mut services().write().unwrap_or_else(|e| e.into_inner()))
}

/// Sets the device description; a file the package does not hold is refused by name.
///
/// ```
/// use nbxtensor::settings::host::{device_description, set_device_description, DeviceDescription};
/// set_device_description(DeviceDescription::File { vendor: "nvidia".into(), name: "h100".into() })?;
/// assert_eq!(nbxtensor::settings::host::described("NVIDIA H200")?, ("nvidia", "h100"));
/// assert!(set_device_description(DeviceDescription::File { vendor: "nvidia".into(), name: "gtx_480".into() }).is_err());
/// set_device_description(DeviceDescription::Recognised)?;
/// assert_eq!(nbxtensor::settings::host::described("NVIDIA H200")?, ("nvidia", "h200"));
/// # Ok::<(), nbxtensor::settings::SettingsError>(())
/// ```
pub fn set_device_description(description: DeviceDescription) -> Result<(), SettingsError> {
    if let DeviceDescription::File { vendor, name } = &description {
        crate::facts::device_file(vendor, name)
            .map_err(|e| SettingsError::Invalid(format!("device description: {e}")))?;
    }
    write(|s| s.device = description);
    Ok(())
}

/// The device description in force.
pub fn device_description() -> DeviceDescription {
    read(|s| s.device.clone())
}

/// The `(vendor, name)` of the device file describing a device the driver names
/// `device_name`: the application's file, or the one recognised from the name.
pub fn described(device_name: &str) -> Result<(&'static str, &'static str), SettingsError> {
    let refused = |e: crate::facts::FactsError| SettingsError::Invalid(format!("device description: {e}"));
    match device_description() {
        DeviceDescription::Recognised => crate::facts::recognise(device_name).map_err(refused),
        DeviceDescription::File { vendor, name } => crate::facts::device_names()
            .into_iter()
            .find(|(v, n)| *v == vendor && *n == name)
            .ok_or_else(|| SettingsError::Invalid(format!("device description: no file {vendor}/{name}"))),
    }
}

/// Sets how float32 products use the matrix unit.
pub fn set_matrix_operands(operands: MatrixOperands) {
    write(|s| s.matrix = operands);
}

/// How float32 products use the matrix unit now.
pub fn matrix_operands() -> MatrixOperands {
    read(|s| s.matrix)
}

/// Sets how attention multiplies its probabilities by the values.
pub fn set_attention_operands(operands: AttentionOperands) {
    write(|s| s.attention = operands);
}

/// How attention multiplies its probabilities by the values now.
pub fn attention_operands() -> AttentionOperands {
    read(|s| s.attention)
}

/// Sets where compiled GPU kernels are cached.
pub fn set_build_cache(cache: BuildCache) {
    write(|s| s.cache = cache);
}

/// Where compiled GPU kernels are cached now (not created): the set directory, or `kernels/`
/// in the proven-settings store.
///
/// ```
/// use nbxtensor::settings::host::{build_cache, set_build_cache, BuildCache};
/// set_build_cache(BuildCache::Path("/tmp/nbx-kernels".into()));
/// assert_eq!(build_cache()?, std::path::PathBuf::from("/tmp/nbx-kernels"));
/// set_build_cache(BuildCache::InStore);
/// assert!(build_cache()?.ends_with("certified/kernels"));
/// # Ok::<(), nbxtensor::settings::SettingsError>(())
/// ```
pub fn build_cache() -> Result<PathBuf, SettingsError> {
    match read(|s| s.cache.clone()) {
        BuildCache::InStore => Ok(autotune_store::directory()?.join("kernels")),
        BuildCache::Path(path) => Ok(path),
    }
}
