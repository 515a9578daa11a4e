//! The host CPU, measured at run time: cores, SIMD level, caches and model name, each with
//! where it was read. A fact the machine does not expose is `None`, and its source says why.

use super::device_file::FactValue;
use std::collections::BTreeMap;

/// Where the caches are read (Linux sysfs).
pub const CACHE_DIR: &str = "/sys/devices/system/cpu/cpu0/cache";
/// Where the model name is read (Linux procfs).
pub const CPUINFO: &str = "/proc/cpuinfo";

/// One cache of the first CPU, as sysfs describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuCache {
    /// 1, 2, 3 …
    pub level: u32,
    /// `Data`, `Instruction` or `Unified`.
    pub kind: String,
    /// Bytes.
    pub size_bytes: u64,
}

/// The host CPU's facts, each with its source.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostCpu {
    /// Logical cores this process may use.
    pub logical_cores: Option<usize>,
    /// Where `logical_cores` was read, or why it is absent.
    pub logical_cores_source: String,
    /// The SIMD extensions detected, among those probed (x86-64: sse4.2, avx2, fma, avx512f;
    /// aarch64: neon).
    pub simd: Vec<&'static str>,
    /// How `simd` was probed.
    pub simd_source: String,
    /// The caches of cpu0, by sysfs index; `None` where sysfs does not describe them.
    pub caches: Option<Vec<CpuCache>>,
    /// Where `caches` was read, or why it is absent.
    pub caches_source: String,
    /// The model name; `None` where `/proc/cpuinfo` has none.
    pub model_name: Option<String>,
    /// Where `model_name` was read, or why it is absent.
    pub model_name_source: String,
}

/// Measures the host CPU now.
///
/// ```
/// let cpu = nbxtensor::facts::host_cpu();
/// assert!(cpu.logical_cores.unwrap_or(1) >= 1);
/// assert!(cpu.logical_cores_source.contains("available_parallelism"));
/// ```
pub fn host_cpu() -> HostCpu {
    let (logical_cores, logical_cores_source) = match std::thread::available_parallelism() {
        Ok(n) => (Some(n.get()), "std::thread::available_parallelism".to_owned()),
        Err(e) => (None, format!("absent: std::thread::available_parallelism failed: {e}")),
    };
    let (simd, simd_source) = simd_features();
    let (caches, caches_source) = match read_caches(std::path::Path::new(CACHE_DIR)) {
        Ok(caches) if !caches.is_empty() => (Some(caches), CACHE_DIR.to_owned()),
        Ok(_) => (None, format!("absent: {CACHE_DIR} lists no cache")),
        Err(e) => (None, format!("absent: {CACHE_DIR}: {e}")),
    };
    let (model_name, model_name_source) = match std::fs::read_to_string(CPUINFO) {
        Ok(text) => match model_name(&text) {
            Some(name) => (Some(name), CPUINFO.to_owned()),
            None => (None, format!("absent: {CPUINFO} has no model name line")),
        },
        Err(e) => (None, format!("absent: {CPUINFO}: {e}")),
    };
    HostCpu {
        logical_cores,
        logical_cores_source,
        simd,
        simd_source,
        caches,
        caches_source,
        model_name,
        model_name_source,
    }
}

#[cfg(target_arch = "x86_64")]
fn simd_features() -> (Vec<&'static str>, String) {
    let probed = [
        ("sse4.2", is_x86_feature_detected!("sse4.2")),
        ("avx2", is_x86_feature_detected!("avx2")),
        ("fma", is_x86_feature_detected!("fma")),
        ("avx512f", is_x86_feature_detected!("avx512f")),
    ];
    (probed.iter().filter(|(_, on)| *on).map(|(name, _)| *name).collect(), "cpuid (is_x86_feature_detected!)".into())
}

#[cfg(target_arch = "aarch64")]
fn simd_features() -> (Vec<&'static str>, String) {
    let neon = std::arch::is_aarch64_feature_detected!("neon");
    (if neon { vec!["neon"] } else { vec![] }, "is_aarch64_feature_detected!".into())
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
fn simd_features() -> (Vec<&'static str>, String) {
    (Vec::new(), format!("absent: no SIMD probe for {}", std::env::consts::ARCH))
}

/// The caches under a sysfs `cache` directory (`index*/{level,type,size}`), by index.
fn read_caches(dir: &std::path::Path) -> std::io::Result<Vec<CpuCache>> {
    let mut indices: Vec<_> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with("index"))
        .map(|e| e.path())
        .collect();
    indices.sort();
    let mut caches = Vec::new();
    for index in indices {
        let read = |file: &str| std::fs::read_to_string(index.join(file)).map(|s| s.trim().to_owned());
        let (Ok(level), Ok(kind), Ok(size)) = (read("level"), read("type"), read("size")) else { continue };
        if let (Ok(level), Some(size_bytes)) = (level.parse(), parse_size(&size)) {
            caches.push(CpuCache { level, kind, size_bytes });
        }
    }
    Ok(caches)
}

/// A sysfs size (`32K`, `1024K`, `8M`, `512`) in bytes.
fn parse_size(text: &str) -> Option<u64> {
    let (digits, unit) = match text.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((i, _)) => text.split_at(i),
        None => (text, ""),
    };
    let scale = match unit {
        "" => 1,
        "K" => 1 << 10,
        "M" => 1 << 20,
        "G" => 1 << 30,
        _ => return None,
    };
    digits.parse::<u64>().ok()?.checked_mul(scale)
}

/// The first `model name` (x86) or `Model` / `Hardware` (arm) line of `/proc/cpuinfo`.
fn model_name(cpuinfo: &str) -> Option<String> {
    ["model name", "Model", "Hardware"].iter().find_map(|key| {
        cpuinfo.lines().find_map(|line| {
            let (k, v) = line.split_once(':')?;
            (k.trim() == *key && !v.trim().is_empty()).then(|| v.trim().to_owned())
        })
    })
}

impl HostCpu {
    /// The facts as generic data: `vendor`, `name`, `logical_cores`, `simd`, `caches` (a list of
    /// `{level, type, size_bytes}`), `model_name`, and `source` (where each was read).
    pub fn to_facts(&self) -> FactValue {
        let text = |s: &str| FactValue::Str(s.to_owned());
        let or_null = |v: Option<FactValue>| v.unwrap_or(FactValue::Null);
        let caches = self.caches.as_ref().map(|caches| {
            FactValue::List(
                caches
                    .iter()
                    .map(|c| {
                        FactValue::Map(BTreeMap::from([
                            ("level".to_owned(), FactValue::Int(i64::from(c.level))),
                            ("type".to_owned(), text(&c.kind)),
                            ("size_bytes".to_owned(), FactValue::Int(i64::try_from(c.size_bytes).unwrap_or(i64::MAX))),
                        ]))
                    })
                    .collect(),
            )
        });
        let source = BTreeMap::from([
            ("logical_cores".to_owned(), text(&self.logical_cores_source)),
            ("simd".to_owned(), text(&self.simd_source)),
            ("caches".to_owned(), text(&self.caches_source)),
            ("model_name".to_owned(), text(&self.model_name_source)),
        ]);
        FactValue::Map(BTreeMap::from([
            ("vendor".to_owned(), text(super::devices::HOST_CPU_VENDOR)),
            ("name".to_owned(), text(super::devices::HOST_CPU_NAME)),
            (
                "logical_cores".to_owned(),
                or_null(self.logical_cores.map(|n| FactValue::Int(i64::try_from(n).unwrap_or(i64::MAX)))),
            ),
            ("simd".to_owned(), FactValue::List(self.simd.iter().map(|s| text(s)).collect())),
            ("caches".to_owned(), or_null(caches)),
            ("model_name".to_owned(), or_null(self.model_name.as_deref().map(text))),
            ("source".to_owned(), FactValue::Map(source)),
        ]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sysfs_sizes_read_in_bytes() {
        assert_eq!(parse_size("32K"), Some(32 * 1024));
        assert_eq!(parse_size("8M"), Some(8 * 1024 * 1024));
        assert_eq!(parse_size("512"), Some(512));
        assert_eq!(parse_size("12Q"), None);
        assert_eq!(parse_size(""), None);
    }

    #[test]
    fn model_name_is_the_first_model_line() {
        let x86 = "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel\t\t: 85\nmodel name\t: Intel(R) Xeon(R)\n";
        assert_eq!(model_name(x86).as_deref(), Some("Intel(R) Xeon(R)"));
        assert_eq!(model_name("processor : 0\nBogoMIPS : 50.00\n"), None);
    }

    #[test]
    fn an_absent_cache_directory_is_named_in_the_source() {
        assert!(read_caches(std::path::Path::new("/nonexistent/cache")).is_err());
        let cpu = host_cpu();
        assert_eq!(cpu.caches.is_some(), cpu.caches_source == CACHE_DIR, "{}", cpu.caches_source);
        assert_eq!(cpu.model_name.is_some(), cpu.model_name_source == CPUINFO, "{}", cpu.model_name_source);
    }

    /// Reference: the kernel's own count of the CPUs this process may run on (sched_getaffinity,
    /// as `nproc` prints it), read here through /proc/self/status `Cpus_allowed_list`.
    #[cfg(target_os = "linux")]
    #[test]
    fn logical_cores_match_the_affinity_mask() {
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        let list = status.lines().find_map(|l| l.strip_prefix("Cpus_allowed_list:")).unwrap().trim();
        let allowed: usize = list
            .split(',')
            .map(|range| match range.split_once('-') {
                Some((a, b)) => b.parse::<usize>().unwrap() - a.parse::<usize>().unwrap() + 1,
                None => 1,
            })
            .sum();
        let cores = host_cpu().logical_cores.unwrap();
        // available_parallelism also honours a cgroup CPU quota, which can only lower the count.
        assert!(cores >= 1 && cores <= allowed, "{cores} vs {allowed}");
    }
}
