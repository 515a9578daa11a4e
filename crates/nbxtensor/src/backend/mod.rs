//! The backend layer: every device behind one trait ([`Backend`]: memory, alignment, copies,
//! synchronisation, DLPack identity, capture and replay, peak rates) and one launch table per
//! backend ([`LaunchTable`]: (op, dtype) → a launch of the op's spec). A missing entry is an
//! error naming the op, the dtype and the backend; the table can be printed.
//!
//! This file is the device registry: the one place above the backends' own folders that
//! names them. What a backend provides, and how to add one, is `docs/BACKENDS.md`.

pub mod cpu;
pub mod cuda;
mod device;
mod launches;
mod peaks;
pub mod wgpu;

pub use device::{Backend, Block, DeviceBlock, Graph};
pub use launches::{LaunchTable, Launcher};
pub use peaks::Peaks;

use crate::memory::{Device, DeviceKind};

/// The backend of `device`. A GPU's backend exists without the GPU (a dry run traces and
/// prices programs anywhere); its memory and launches say why when the device is absent.
pub fn of(device: Device) -> &'static dyn Backend {
    match device.kind {
        DeviceKind::Cpu => cpu::cpu(),
        DeviceKind::Cuda => cuda::cuda_backend(device.index),
        DeviceKind::Vulkan => wgpu::wgpu_backend(wgpu::Api::Vulkan, device.index),
        DeviceKind::Metal => wgpu::wgpu_backend(wgpu::Api::Metal, device.index),
    }
}

/// The launch tables of every backend kind this build has, by backend name.
pub fn tables() -> Vec<&'static LaunchTable> {
    vec![cpu::cpu().launches(), cuda::cuda_backend(0).launches(), wgpu::launches()]
}

/// The device whose memory a DLPack producer describes by `(device_type, device_id)`; a type
/// no backend serves is refused naming it.
pub fn device_of_dlpack(device_type: i32, device_id: i32) -> Result<Device, String> {
    if device_type == crate::tensor::dlpack::KDL_CPU {
        return Ok(Device::CPU);
    }
    cuda::device_of_dlpack(device_type, device_id).or_else(|| wgpu::device_of_dlpack(device_type, device_id)).unwrap_or_else(|| {
        Err(format!(
            "DLPack device type {device_type} (id {device_id}) is not served by this build: host memory and the GPU backends' memory are"
        ))
    })
}
