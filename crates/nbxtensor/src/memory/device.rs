//! Where memory lives: a device is a kind and an index.

use super::MemoryError;
use std::fmt;

/// The kinds of device a tensor may live on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DeviceKind {
    /// The host: CPU memory.
    Cpu,
    /// An NVIDIA GPU (CUDA).
    Cuda,
    /// A GPU through Vulkan (the portable backend, wgpu).
    Vulkan,
    /// An Apple GPU through Metal (the portable backend, wgpu).
    Metal,
}

impl DeviceKind {
    /// The kind's spelling (`"cpu"`, `"cuda"`, `"vulkan"`, `"metal"`).
    pub fn as_str(self) -> &'static str {
        match self {
            DeviceKind::Cpu => "cpu",
            DeviceKind::Cuda => "cuda",
            DeviceKind::Vulkan => "vulkan",
            DeviceKind::Metal => "metal",
        }
    }
}

/// A device: a kind and an index (the host is `cpu:0`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Device {
    /// What kind of device.
    pub kind: DeviceKind,
    /// Which one of its kind.
    pub index: u32,
}

impl Device {
    /// The host.
    pub const CPU: Device = Device { kind: DeviceKind::Cpu, index: 0 };

    /// Parses `"cpu"`, `"cuda"`, `"cuda:1"`, `"vulkan"`, `"metal:0"`.
    ///
    /// ```
    /// use nbxtensor::memory::{Device, DeviceKind};
    /// assert_eq!(Device::parse("cuda:1")?, Device { kind: DeviceKind::Cuda, index: 1 });
    /// assert_eq!(Device::parse("cpu")?, Device::CPU);
    /// assert_eq!(Device::parse("vulkan")?, Device { kind: DeviceKind::Vulkan, index: 0 });
    /// assert!(Device::parse("tpu").is_err());
    /// # Ok::<(), nbxtensor::memory::MemoryError>(())
    /// ```
    pub fn parse(text: &str) -> Result<Device, MemoryError> {
        let unknown = || {
            MemoryError::UnknownDevice(format!(
                "unknown device '{text}': devices are 'cpu', 'cuda', 'vulkan' or 'metal', a GPU's optionally with ':N'"
            ))
        };
        let (kind, index) = match text.split_once(':') {
            Some((kind, index)) => (kind, index.parse::<u32>().map_err(|_| unknown())?),
            None => (text, 0),
        };
        let kind = match kind {
            "cpu" => DeviceKind::Cpu,
            "cuda" => DeviceKind::Cuda,
            "vulkan" => DeviceKind::Vulkan,
            "metal" => DeviceKind::Metal,
            _ => return Err(unknown()),
        };
        if kind == DeviceKind::Cpu && index != 0 {
            return Err(unknown());
        }
        Ok(Device { kind, index })
    }
}

impl fmt::Display for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            DeviceKind::Cpu => f.write_str("cpu"),
            kind => write!(f, "{}:{}", kind.as_str(), self.index),
        }
    }
}
