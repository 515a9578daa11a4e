//! The device description files (`data/devices/<vendor>/<name>.yml`), compiled into the crate
//! and parsed once, and the readers over them.
//!
//! `build.rs` walks the directory, checks every file (so reading them here cannot fail) and
//! indexes them; adding a device is adding a file (see `docs/DEVICES.md`). The host CPU is not a
//! file: it is measured at run time ([`host_cpu`](super::host_cpu)) and read here under the
//! vendor `cpu`, name `host`.

use super::device_file::{parse_device_file, DeviceFile, FactValue};
use super::error::{FactsError, Result};
use super::host_cpu::host_cpu;
use std::sync::OnceLock;

include!(concat!(env!("OUT_DIR"), "/device_files.rs"));

/// The vendor under which [`device_description`] reads the host CPU.
pub const HOST_CPU_VENDOR: &str = "cpu";
/// The name under which [`device_description`] reads the host CPU.
pub const HOST_CPU_NAME: &str = "host";

/// One parsed device file.
struct Entry {
    vendor: &'static str,
    name: &'static str,
    file: DeviceFile,
    facts: FactValue,
}

fn registry() -> &'static [Entry] {
    static FILES: OnceLock<Vec<Entry>> = OnceLock::new();
    FILES.get_or_init(|| {
        DEVICE_FILES
            .iter()
            .map(|&(vendor, name, text)| {
                let (file, facts) = parse_device_file(vendor, name, text)
                    .expect("device files were validated by build.rs when this crate was compiled");
                Entry { vendor, name, file, facts }
            })
            .collect()
    })
}

fn file_vendors() -> Vec<&'static str> {
    let mut vendors: Vec<&'static str> = registry().iter().map(|e| e.vendor).collect();
    vendors.dedup();
    vendors
}

fn entry(vendor: &str, name: &str) -> Result<&'static Entry> {
    if !file_vendors().contains(&vendor) {
        return Err(FactsError::UnknownVendor { vendor: vendor.to_owned(), known: file_vendors().join(", ") });
    }
    registry().iter().find(|e| e.vendor == vendor && e.name == name).ok_or_else(|| FactsError::UnknownDevice {
        vendor: vendor.to_owned(),
        name: name.to_owned(),
        known: registry().iter().filter(|e| e.vendor == vendor).map(|e| e.name).collect::<Vec<_>>().join(", "),
    })
}

/// The typed description of one device, by vendor and file name.
///
/// ```
/// use nbxtensor::facts::device_file;
///
/// let h200 = device_file("nvidia", "h200")?;
/// assert_eq!(h200.compute_capability, "sm_90");
/// assert_eq!(h200.compute.warp_size, 32);
/// assert!(device_file("nvidia", "gtx_480").is_err());   // the error lists nvidia's devices
/// # Ok::<(), nbxtensor::facts::FactsError>(())
/// ```
pub fn device_file(vendor: &str, name: &str) -> Result<&'static DeviceFile> {
    entry(vendor, name).map(|e| &e.file)
}

/// One device file as generic data: every key the file writes, nothing added.
pub fn device_facts(vendor: &str, name: &str) -> Result<&'static FactValue> {
    entry(vendor, name).map(|e| &e.facts)
}

/// One fact of a device file by its dotted path (`memory.l2_cache_bytes`,
/// `peak.matrix.float16`); a fact the file does not hold is an error, never a default.
///
/// ```
/// use nbxtensor::facts::{fact, FactValue};
///
/// assert_eq!(fact("apple", "apple_m4_pro", "memory.max_shared_memory_per_block")?, &FactValue::Int(32768));
/// assert!(fact("apple", "apple_m4_pro", "memory.registers_per_thread").is_err());  // Apple publishes none
/// # Ok::<(), nbxtensor::facts::FactsError>(())
/// ```
pub fn fact(vendor: &str, name: &str, path: &str) -> Result<&'static FactValue> {
    let e = entry(vendor, name)?;
    path.split('.')
        .try_fold(&e.facts, |value, key| value.get(key))
        .ok_or_else(|| FactsError::MissingFact { device: format!("{}/{}", e.vendor, e.name), fact: path.to_owned() })
}

/// A device's description as generic data: a device file, or for (`cpu`, `host`) the host CPU
/// measured now ([`HostCpu::to_facts`](super::HostCpu::to_facts)). A fresh value each call.
pub fn device_description(vendor: &str, name: &str) -> Result<FactValue> {
    if vendor == HOST_CPU_VENDOR {
        return match name {
            HOST_CPU_NAME => Ok(host_cpu().to_facts()),
            _ => Err(FactsError::UnknownDevice {
                vendor: vendor.to_owned(),
                name: name.to_owned(),
                known: HOST_CPU_NAME.to_owned(),
            }),
        };
    }
    if !file_vendors().contains(&vendor) {
        return Err(FactsError::UnknownVendor { vendor: vendor.to_owned(), known: vendors().join(", ") });
    }
    device_facts(vendor, name).cloned()
}

/// Whether a device's memory is the host's (Apple silicon, the host CPU itself), so a
/// tensor moves between them without a copy.
///
/// ```
/// use nbxtensor::facts::shares_host_memory;
/// assert!(shares_host_memory("apple", "apple_m4_pro")?);
/// assert!(!shares_host_memory("nvidia", "h200")?);
/// assert!(shares_host_memory("cpu", "host")?);
/// # Ok::<(), nbxtensor::facts::FactsError>(())
/// ```
pub fn shares_host_memory(vendor: &str, name: &str) -> Result<bool> {
    host_or_file(vendor, name, |file| file.shares_host_memory)
}

/// Whether a device's kernels compute float64 (Apple GPUs do not; a store there holds
/// float32 in its place).
pub fn computes_float64(vendor: &str, name: &str) -> Result<bool> {
    host_or_file(vendor, name, |file| file.computes_float64)
}

/// A fact of a device file, or `true` for the host CPU (its own memory, native float64).
fn host_or_file(vendor: &str, name: &str, read: impl Fn(&DeviceFile) -> bool) -> Result<bool> {
    if vendor == HOST_CPU_VENDOR {
        return device_description(vendor, name).map(|_| true);
    }
    device_file(vendor, name).map(read)
}

/// The vendors [`device_description`] reads: those with device files, and `cpu`.
pub fn vendors() -> Vec<&'static str> {
    let mut all = file_vendors();
    all.push(HOST_CPU_VENDOR);
    all.sort_unstable();
    all
}

/// The device names of one vendor, sorted (`["host"]` for `cpu`).
///
/// ```
/// let nvidia = nbxtensor::facts::devices("nvidia")?;
/// assert!(nvidia.contains(&"h100") && nvidia.contains(&"tesla_v100"));
/// # Ok::<(), nbxtensor::facts::FactsError>(())
/// ```
pub fn devices(vendor: &str) -> Result<Vec<&'static str>> {
    if vendor == HOST_CPU_VENDOR {
        return Ok(vec![HOST_CPU_NAME]);
    }
    if !file_vendors().contains(&vendor) {
        return Err(FactsError::UnknownVendor { vendor: vendor.to_owned(), known: vendors().join(", ") });
    }
    Ok(registry().iter().filter(|e| e.vendor == vendor).map(|e| e.name).collect())
}

/// Every `(vendor, name)` that has a device file, sorted.
pub fn device_names() -> Vec<(&'static str, &'static str)> {
    registry().iter().map(|e| (e.vendor, e.name)).collect()
}

/// The key (compute capability) of the device a driver names: the file whose `names` hold
/// `device_name` after trimming and case folding; a key itself is also accepted.
///
/// ```
/// use nbxtensor::facts::arch_string;
///
/// assert_eq!(arch_string("NVIDIA H100 80GB HBM3")?, "sm_90");
/// assert_eq!(arch_string("  apple m4 pro ")?, "apple-m4-pro");
/// assert_eq!(arch_string("sm_80")?, "sm_80");
/// assert!(arch_string("Voodoo2").is_err());   // the error lists the known devices
/// # Ok::<(), nbxtensor::facts::FactsError>(())
/// ```
pub fn arch_string(device_name: &str) -> Result<String> {
    let (vendor, name) = recognise(device_name)?;
    Ok(entry(vendor, name)?.file.compute_capability.clone())
}

/// The `(vendor, name)` of the device file that recognises `device_name` (a driver's name,
/// trimmed and case-folded, or a key); refused listing the known names.
///
/// ```
/// use nbxtensor::facts::recognise;
/// assert_eq!(recognise("NVIDIA H200")?, ("nvidia", "h200"));
/// # Ok::<(), nbxtensor::facts::FactsError>(())
/// ```
pub fn recognise(device_name: &str) -> Result<(&'static str, &'static str)> {
    let wanted = device_name.trim().to_lowercase();
    registry()
        .iter()
        .find(|e| e.file.names.iter().any(|n| n.trim().to_lowercase() == wanted) || e.file.compute_capability == wanted)
        .map(|e| (e.vendor, e.name))
        .ok_or_else(|| FactsError::UnrecognisedName {
            name: device_name.to_owned(),
            known: registry()
                .iter()
                .flat_map(|e| e.file.names.iter().map(move |n| format!("{n} ({})", e.file.compute_capability)))
                .collect::<Vec<_>>()
                .join(", "),
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn every_file_parses_and_is_indexed() {
        assert_eq!(registry().len(), DEVICE_FILES.len());
        assert!(DEVICE_FILES.len() >= 6 + 16, "six NVIDIA files and the sixteen M-series chips");
        assert_eq!(file_vendors(), ["apple", "nvidia"]);
    }

    #[test]
    fn names_are_unique_across_files() {
        let mut seen = BTreeSet::new();
        for e in registry() {
            for n in &e.file.names {
                assert!(seen.insert(n.trim().to_lowercase()), "'{n}' recognises two files");
            }
        }
    }

    /// Reference: NVIDIA's "CUDA GPUs — Compute Capability" list (developer.nvidia.com/cuda-gpus):
    /// V100 7.0, A100 8.0, L4 8.9, GeForce RTX 4090 8.9, H100 9.0, H200 9.0.
    #[test]
    fn nvidia_keys_match_their_sm_family() {
        let reference = [
            ("tesla_v100", "sm_70"),
            ("a100", "sm_80"),
            ("l4", "sm_89"),
            ("rtx_4090", "sm_89"),
            ("h100", "sm_90"),
            ("h200", "sm_90"),
        ];
        assert_eq!(devices("nvidia").unwrap().len(), reference.len());
        for (name, sm) in reference {
            let file = device_file("nvidia", name).unwrap();
            assert_eq!(file.compute_capability, sm, "{name}");
            for n in &file.names {
                assert_eq!(arch_string(n).unwrap(), sm, "{n}");
            }
            // PTX ISA: bf16 and tf32 mma need sm_80, fp8 (e4m3/e5m2) mma needs sm_89.
            let takes = |d: &str| file.compute.matrix_unit.dtypes.iter().any(|x| x == d);
            let number: u32 = sm[3..].parse().unwrap();
            assert_eq!(takes("bfloat16"), number >= 80, "{name}");
            assert_eq!(takes("float8_e4m3fn"), number >= 89, "{name}");
            assert_eq!(file.compute.warp_size, 32);
            assert!(!file.shares_host_memory && file.computes_float64);
        }
    }

    /// Reference: Metal Feature Set Tables (32 KB of threadgroup memory, no double) and Apple's
    /// unified memory: every Apple chip shares the host's memory and computes no float64.
    #[test]
    fn apple_chips_share_host_memory_and_have_no_float64() {
        let chips = devices("apple").unwrap();
        for family in ["m1", "m2", "m3", "m4"] {
            for tier in ["", "_pro", "_max"] {
                assert!(chips.contains(&format!("apple_{family}{tier}").as_str()), "{family}{tier}");
            }
        }
        for name in chips {
            let file = device_file("apple", name).unwrap();
            assert!(file.shares_host_memory && !file.computes_float64, "{name}");
            assert_eq!(file.memory.max_shared_memory_per_block, 32 * 1024, "{name}");
            assert!(!file.peak.vector.contains_key("float64") && !file.peak.matrix.contains_key("float64"));
            assert_eq!(arch_string(&file.names[0]).unwrap(), name.replace('_', "-"));
        }
    }

    #[test]
    fn unknown_vendor_and_device_list_what_exists() {
        let vendor = device_file("amd", "mi300x").unwrap_err().to_string();
        assert!(vendor.contains("'amd'") && vendor.contains("apple") && vendor.contains("nvidia"), "{vendor}");
        let device = device_file("nvidia", "b200").unwrap_err().to_string();
        assert!(device.contains("'b200'") && device.contains("h200") && device.contains("a100"), "{device}");
        let name = arch_string("NVIDIA B200").unwrap_err().to_string();
        assert!(name.contains("NVIDIA H200 (sm_90)") && name.contains("Apple M4 Pro (apple-m4-pro)"), "{name}");
        let missing = fact("nvidia", "h200", "memory.l2_cache_bytes").unwrap_err().to_string();
        assert!(missing.contains("nvidia/h200") && missing.contains("memory.l2_cache_bytes"), "{missing}");
    }

    #[test]
    fn the_host_reads_under_cpu_host() {
        assert_eq!(devices("cpu").unwrap(), ["host"]);
        assert!(vendors().contains(&"cpu"));
        let host = device_description("cpu", "host").unwrap();
        assert!(matches!(host.get("logical_cores"), Some(FactValue::Int(n)) if *n >= 1));
        assert!(device_description("cpu", "gpu").is_err());
    }

    #[test]
    fn the_generic_data_agrees_with_the_typed_fields() {
        for e in registry() {
            assert_eq!(e.facts.get("compute_capability"), Some(&FactValue::Str(e.file.compute_capability.clone())));
            let warp = fact(e.vendor, e.name, "compute.warp_size").unwrap();
            assert_eq!(warp, &FactValue::Int(i64::from(e.file.compute.warp_size)));
        }
    }
}
