//! The host's memory as this process sees it: `/proc/meminfo`, bounded by a cgroup memory
//! limit where one is set and smaller.

use super::SettingsError;
use std::path::Path;

/// Total, free and available bytes of host memory, and where they were read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemoryState {
    /// Bytes the process may hold in all: the machine's memory, or a smaller cgroup limit.
    pub total: u64,
    /// Bytes not in use at all.
    pub free: u64,
    /// Bytes that can be had without swapping (free plus reclaimable caches).
    pub available: u64,
    /// Where the figures come from (files read, and which bound won).
    pub source: String,
}

/// Reads the host's memory now.
///
/// ```
/// let state = nbxtensor::settings::host_memory::memory_state()?;
/// assert!(state.total > 0 && state.available <= state.total && !state.source.is_empty());
/// # Ok::<(), nbxtensor::settings::SettingsError>(())
/// ```
pub fn memory_state() -> Result<MemoryState, SettingsError> {
    let meminfo = std::fs::read_to_string("/proc/meminfo")
        .map_err(|e| SettingsError::Unreadable(format!("host memory: /proc/meminfo: {e}")))?;
    let machine = parse_meminfo(&meminfo)?;
    Ok(bound_by_cgroup(machine, read_cgroup(Path::new("/sys/fs/cgroup"))))
}

/// The machine's figures from the text of `/proc/meminfo`.
fn parse_meminfo(text: &str) -> Result<MemoryState, SettingsError> {
    let field = |name: &str| -> Result<u64, SettingsError> {
        text.lines()
            .find_map(|line| line.strip_prefix(name)?.strip_prefix(':'))
            .and_then(|rest| rest.trim().strip_suffix("kB")?.trim().parse::<u64>().ok())
            .map(|kib| kib * 1024)
            .ok_or_else(|| SettingsError::Unreadable(format!("host memory: /proc/meminfo has no readable {name} line")))
    };
    Ok(MemoryState {
        total: field("MemTotal")?,
        free: field("MemFree")?,
        available: field("MemAvailable")?,
        source: "/proc/meminfo".to_string(),
    })
}

/// A cgroup's memory limit and usage, and the files they came from.
#[derive(Clone, Debug, PartialEq, Eq)]
struct CgroupMemory {
    limit: u64,
    usage: u64,
    files: String,
}

/// Reads cgroup v2 (`memory.max`, `memory.current`) or v1 (`memory/memory.limit_in_bytes`,
/// `memory/memory.usage_in_bytes`) under `root`; `None` where no limit is set.
fn read_cgroup(root: &Path) -> Option<CgroupMemory> {
    let number = |file: &Path| std::fs::read_to_string(file).ok()?.trim().parse::<u64>().ok();
    for (limit, usage) in
        [("memory.max", "memory.current"), ("memory/memory.limit_in_bytes", "memory/memory.usage_in_bytes")]
    {
        let (limit_path, usage_path) = (root.join(limit), root.join(usage));
        // "max" (v2) does not parse: no limit
        if let (Some(limit), Some(usage)) = (number(&limit_path), number(&usage_path)) {
            return Some(CgroupMemory {
                limit,
                usage,
                files: format!("{} and {}", limit_path.display(), usage_path.display()),
            });
        }
    }
    None
}

/// The machine's figures, bounded by the cgroup's where its limit is the smaller.
fn bound_by_cgroup(machine: MemoryState, cgroup: Option<CgroupMemory>) -> MemoryState {
    match cgroup {
        Some(group) if group.limit < machine.total => {
            let left = group.limit.saturating_sub(group.usage);
            MemoryState {
                total: group.limit,
                free: machine.free.min(left),
                available: machine.available.min(left),
                source: format!("cgroup limit ({}), smaller than /proc/meminfo's total", group.files),
            }
        }
        _ => machine,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MEMINFO: &str =
        "MemTotal:       16000000 kB\nMemFree:         9000000 kB\nMemAvailable:   12000000 kB\nBuffers: 1 kB\n";

    #[test]
    fn meminfo_is_read_in_bytes() {
        let state = parse_meminfo(MEMINFO).unwrap();
        assert_eq!(
            (state.total, state.free, state.available),
            (16_000_000 * 1024, 9_000_000 * 1024, 12_000_000 * 1024)
        );
        assert!(parse_meminfo("MemTotal: 5 kB\n").unwrap_err().to_string().contains("MemFree"));
    }

    #[test]
    fn a_smaller_cgroup_limit_wins_and_a_larger_one_does_not() {
        let machine = parse_meminfo(MEMINFO).unwrap();
        let small = CgroupMemory { limit: 4 << 30, usage: 1 << 30, files: "memory.max and memory.current".into() };
        let bounded = bound_by_cgroup(machine.clone(), Some(small));
        assert_eq!((bounded.total, bounded.available, bounded.free), (4 << 30, 3 << 30, 3 << 30));
        assert!(bounded.source.contains("cgroup"));
        let large = CgroupMemory { limit: 1 << 50, usage: 0, files: String::new() };
        assert_eq!(bound_by_cgroup(machine.clone(), Some(large)), machine);
        assert_eq!(bound_by_cgroup(machine.clone(), None), machine);
    }

    #[test]
    fn cgroup_files_are_read_from_v2_then_v1() {
        let dir = std::env::temp_dir().join(format!("nbx-cgroup-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("memory")).unwrap();
        std::fs::write(dir.join("memory/memory.limit_in_bytes"), "1073741824\n").unwrap();
        std::fs::write(dir.join("memory/memory.usage_in_bytes"), "1000\n").unwrap();
        assert_eq!(read_cgroup(&dir).map(|g| (g.limit, g.usage)), Some((1 << 30, 1000)));
        std::fs::write(dir.join("memory.max"), "max\n").unwrap();
        std::fs::write(dir.join("memory.current"), "5\n").unwrap();
        assert_eq!(read_cgroup(&dir).map(|g| g.limit), Some(1 << 30), "v2 without a limit falls to v1's");
        std::fs::write(dir.join("memory.max"), "2147483648\n").unwrap();
        assert_eq!(read_cgroup(&dir).map(|g| (g.limit, g.usage)), Some((2 << 30, 5)));
        std::fs::remove_dir_all(dir).unwrap();
    }
}
