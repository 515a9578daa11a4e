//! The shape of a device description file (`data/devices/<vendor>/<name>.yml`) and the checks
//! every file passes.
//!
//! This file is compiled twice: by `build.rs`, which parses every device file so a malformed
//! one fails the build, and by the crate, which parses the same texts at run time. It therefore
//! depends on nothing but `serde` and `serde-saphyr`.
//!
//! A file is read two ways: into [`DeviceFile`], the typed fields every consumer in Rust uses,
//! and into [`FactValue`], the whole file as generic data (what Python receives as a dict).

use serde::de::{Deserializer, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// One device's description, as its file writes it.
///
/// Facts the vendor does not publish are absent (`None`); asking for one is an error
/// (see `nbxtensor::facts::DeviceFile::fact`), never a default.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeviceFile {
    /// The vendor; equal to the file's directory (`nvidia`, `apple`).
    pub vendor: String,
    /// The device's key: `sm_90` for NVIDIA, `apple-m4-pro` for Apple.
    pub compute_capability: String,
    /// The board or configuration the rates and sizes are of (`"SXM5 80GB"`, `"20-core GPU"`).
    pub variant: String,
    /// The Metal GPU family (Apple only): `Apple7` … `Apple10`.
    #[serde(default)]
    pub gpu_family: Option<String>,
    /// The device names that recognise this device (what the driver prints).
    pub names: Vec<String>,
    /// Whether the device computes in the host's memory (unified memory).
    pub shares_host_memory: bool,
    /// Whether the device's kernels compute float64.
    pub computes_float64: bool,
    /// Memory sizes and limits.
    pub memory: Memory,
    /// Execution limits and the matrix unit.
    pub compute: Compute,
    /// Peak rates in FLOP/s, dense (no sparsity).
    #[serde(default)]
    pub peak: Peak,
}

/// The memory block of a device file. Sizes in bytes unless the name says otherwise.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Memory {
    /// The most shared (threadgroup) memory one block may use, opt-in included.
    pub max_shared_memory_per_block: u64,
    /// The shared memory a block may use without opting in (NVIDIA's 48 KB).
    #[serde(default)]
    pub max_shared_memory_per_block_default: Option<u64>,
    /// Shared memory of one multiprocessor.
    #[serde(default)]
    pub shared_memory_per_multiprocessor: Option<u64>,
    /// 32-bit registers of one multiprocessor.
    #[serde(default)]
    pub registers_per_multiprocessor: Option<u64>,
    /// 32-bit registers one block may use.
    #[serde(default)]
    pub registers_per_block: Option<u64>,
    /// 32-bit registers one thread may use.
    #[serde(default)]
    pub registers_per_thread: Option<u64>,
    /// The L2 cache.
    #[serde(default)]
    pub l2_cache_bytes: Option<u64>,
    /// The memory sizes the device is sold with, in the vendor's (decimal) GB.
    #[serde(default)]
    pub device_memory_gb: Vec<f64>,
    /// Peak memory bandwidth of `variant`, bytes per second.
    #[serde(default)]
    pub bandwidth_bytes_per_s: Option<f64>,
}

/// The compute block of a device file.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Compute {
    /// Threads that execute in lockstep: NVIDIA's warp, Apple's simdgroup.
    pub warp_size: u32,
    /// The multiprocessor (SM, GPU core) counts the device is sold with.
    #[serde(default)]
    pub multiprocessor_counts: Vec<u32>,
    /// The most threads of one block (threadgroup).
    pub max_threads_per_block: u32,
    /// The most resident threads of one multiprocessor.
    #[serde(default)]
    pub max_threads_per_multiprocessor: Option<u32>,
    /// The most resident blocks of one multiprocessor.
    #[serde(default)]
    pub max_blocks_per_multiprocessor: Option<u32>,
    /// The largest block, per dimension (x, y, z).
    #[serde(default)]
    pub max_block_dims: Option<[u64; 3]>,
    /// The largest grid, in blocks per dimension (x, y, z).
    #[serde(default)]
    pub max_grid_dims: Option<[u64; 3]>,
    /// The matrix unit.
    pub matrix_unit: MatrixUnit,
}

/// A device's matrix unit (Tensor Core, simdgroup matrix).
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MatrixUnit {
    /// The vendor's name for it.
    pub name: String,
    /// The input dtypes it takes (dtype-table names, and `tf32`).
    pub dtypes: Vec<String>,
}

/// Peak rates in FLOP/s (dense), by dtype: of the vector ALUs and of the matrix unit.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Peak {
    /// Without the matrix unit (elementwise work).
    #[serde(default)]
    pub vector: BTreeMap<String, f64>,
    /// On the matrix unit (matrix products), with float32 accumulation where it matters.
    #[serde(default)]
    pub matrix: BTreeMap<String, f64>,
}

/// A device file as generic data: what YAML holds, nothing more.
#[derive(Clone, Debug, PartialEq)]
pub enum FactValue {
    /// `null` or an empty value.
    Null,
    /// `true` / `false`.
    Bool(bool),
    /// An integer.
    Int(i64),
    /// A float.
    Float(f64),
    /// A string.
    Str(String),
    /// A sequence.
    List(Vec<FactValue>),
    /// A mapping with string keys (sorted).
    Map(BTreeMap<String, FactValue>),
}

impl FactValue {
    /// The value at `key` of a map; `None` for a missing key or a value that is not a map.
    pub fn get(&self, key: &str) -> Option<&FactValue> {
        match self {
            FactValue::Map(map) => map.get(key),
            _ => None,
        }
    }
}

struct FactVisitor;

impl<'de> Visitor<'de> for FactVisitor {
    type Value = FactValue;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a YAML value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<FactValue, E> {
        Ok(FactValue::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<FactValue, E> {
        Ok(FactValue::Int(v))
    }
    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<FactValue, E> {
        i64::try_from(v).map(FactValue::Int).map_err(|_| E::custom(format!("integer {v} exceeds i64")))
    }
    fn visit_f64<E>(self, v: f64) -> Result<FactValue, E> {
        Ok(FactValue::Float(v))
    }
    fn visit_str<E>(self, v: &str) -> Result<FactValue, E> {
        Ok(FactValue::Str(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> Result<FactValue, E> {
        Ok(FactValue::Str(v))
    }
    fn visit_unit<E>(self) -> Result<FactValue, E> {
        Ok(FactValue::Null)
    }
    fn visit_none<E>(self) -> Result<FactValue, E> {
        Ok(FactValue::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<FactValue, D::Error> {
        FactValue::deserialize(d)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<FactValue, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(FactValue::List(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<FactValue, A::Error> {
        let mut entries = BTreeMap::new();
        while let Some((key, value)) = map.next_entry::<String, FactValue>()? {
            if entries.insert(key.clone(), value).is_some() {
                return Err(serde::de::Error::custom(format!("key '{key}' appears twice")));
            }
        }
        Ok(FactValue::Map(entries))
    }
}

impl<'de> Deserialize<'de> for FactValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(FactVisitor)
    }
}

/// The input dtypes a matrix unit or a peak may name: the float types of the dtype table that
/// devices compute in, `int8`, and `tf32` (a matrix-unit input mode, not a storage dtype).
pub const PEAK_DTYPES: [&str; 8] =
    ["float64", "float32", "tf32", "float16", "bfloat16", "float8_e4m3fn", "float8_e5m2", "int8"];

/// Parses one device file and checks it; the error names the file and the problem.
///
/// `vendor` and `name` are the file's directory and stem (`nvidia`, `h200`).
pub fn parse_device_file(vendor: &str, name: &str, text: &str) -> Result<(DeviceFile, FactValue), String> {
    let at = |problem: String| format!("data/devices/{vendor}/{name}.yml: {problem}");
    let file: DeviceFile = serde_saphyr::from_str(text).map_err(|e| at(format!("does not parse: {e}")))?;
    let facts: FactValue = serde_saphyr::from_str(text).map_err(|e| at(format!("does not parse: {e}")))?;
    check_device_file(vendor, name, &file).map_err(at)?;
    check_sources(text).map_err(at)?;
    Ok((file, facts))
}

fn check_device_file(vendor: &str, name: &str, file: &DeviceFile) -> Result<(), String> {
    if file.vendor != vendor {
        return Err(format!("vendor '{}' is not its directory '{vendor}'", file.vendor));
    }
    match vendor {
        "nvidia" => {
            let digits = file.compute_capability.strip_prefix("sm_").unwrap_or("");
            if digits.len() < 2 || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return Err(format!("compute_capability '{}' is not sm_<major><minor>", file.compute_capability));
            }
        }
        "apple" => {
            if file.compute_capability != name.replace('_', "-") {
                return Err(format!(
                    "compute_capability '{}' must be the file name with '-' for '_' ('{}')",
                    file.compute_capability,
                    name.replace('_', "-")
                ));
            }
            if file.gpu_family.is_none() {
                return Err("an Apple device names its Metal gpu_family".into());
            }
        }
        other => return Err(format!("unknown vendor directory '{other}' (nvidia, apple)")),
    }
    if file.names.is_empty() || file.names.iter().any(|n| n.trim().is_empty()) {
        return Err("needs at least one non-empty entry in `names`".into());
    }
    if file.variant.trim().is_empty() {
        return Err("`variant` is empty".into());
    }
    let known = |dtype: &String| PEAK_DTYPES.contains(&dtype.as_str());
    let all_dtypes =
        file.compute.matrix_unit.dtypes.iter().chain(file.peak.vector.keys()).chain(file.peak.matrix.keys());
    if let Some(bad) = all_dtypes.clone().find(|d| !known(d)) {
        return Err(format!("dtype '{bad}' is not one of {PEAK_DTYPES:?}"));
    }
    if let Some(bad) = file.peak.matrix.keys().find(|d| !file.compute.matrix_unit.dtypes.contains(d)) {
        return Err(format!("a matrix peak for '{bad}', which the matrix unit does not take"));
    }
    if let Some((dtype, rate)) =
        file.peak.vector.iter().chain(&file.peak.matrix).find(|(_, r)| !(r.is_finite() && **r > 0.0))
    {
        return Err(format!("peak rate {rate} for '{dtype}' is not a positive number"));
    }
    if !file.computes_float64 && (file.peak.vector.contains_key("float64") || file.peak.matrix.contains_key("float64"))
    {
        return Err("a float64 peak on a device that does not compute float64".into());
    }
    if file.memory.max_shared_memory_per_block == 0
        || file.compute.warp_size == 0
        || file.compute.max_threads_per_block == 0
    {
        return Err("a zero limit (shared memory, warp size or threads per block)".into());
    }
    Ok(())
}

/// Every value line carries a source comment (`# [tag] …`), or sits under a key line that
/// does; every `[tag]` cited is defined in the file's header (`# [tag] the document`).
/// `vendor:` is exempt: it is the file's directory, checked against it.
fn check_sources(text: &str) -> Result<(), String> {
    let mut defined = BTreeSet::new();
    let mut cited = BTreeSet::new();
    // (indent, this line or an ancestor cites a source)
    let mut stack: Vec<(usize, bool)> = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        if trimmed.is_empty() {
            continue;
        }
        let (code, comment) = match line.find(" #").or_else(|| trimmed.starts_with('#').then_some(0)) {
            Some(i) => (&line[..i], &line[i..]),
            None => (line, ""),
        };
        let tags = tags_in(comment);
        if code.trim().is_empty() {
            if let Some(first) = comment.trim_start().strip_prefix('#').map(str::trim_start) {
                if let Some(tag) = first.strip_prefix('[').and_then(|t| t.split_once(']')).map(|(t, _)| t) {
                    defined.insert(tag.to_owned());
                }
            }
            continue;
        }
        let indent = code.len() - code.trim_start().len();
        while stack.last().is_some_and(|&(i, _)| i >= indent) {
            stack.pop();
        }
        let sourced = !tags.is_empty() || stack.last().is_some_and(|&(_, s)| s);
        cited.extend(tags);
        let opens_block = code.trim_end().ends_with(':');
        let is_vendor = indent == 0 && code.starts_with("vendor:");
        if !sourced && !opens_block && !is_vendor {
            return Err(format!("line {}: '{}' cites no source (`# [tag] …`)", number + 1, code.trim()));
        }
        stack.push((indent, sourced));
    }
    if let Some(tag) = cited.difference(&defined).next() {
        return Err(format!("source tag [{tag}] is cited but not defined in the header"));
    }
    Ok(())
}

/// The `[tag]`s of a comment.
fn tags_in(comment: &str) -> Vec<String> {
    comment
        .split('[')
        .skip(1)
        .filter_map(|part| part.split_once(']').map(|(tag, _)| tag))
        .filter(|tag| !tag.is_empty() && tag.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'))
        .map(str::to_owned)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "\
# [doc] a datasheet
vendor: nvidia
compute_capability: sm_90   # [doc]
variant: \"board\"           # [doc]
names: [\"Card\"]             # [doc]
shares_host_memory: false   # [doc]
computes_float64: true      # [doc]
memory:                     # [doc]
  max_shared_memory_per_block: 1024
  bandwidth_bytes_per_s: 4.8e12
compute:
  warp_size: 32             # [doc]
  max_threads_per_block: 1024  # [doc]
  matrix_unit:              # [doc]
    name: \"unit\"
    dtypes: [float16]
";

    #[test]
    fn a_sourced_file_parses_into_both_forms() {
        let (file, facts) = parse_device_file("nvidia", "card", GOOD).unwrap();
        assert_eq!(file.memory.bandwidth_bytes_per_s, Some(4.8e12));
        assert_eq!(facts.get("memory").and_then(|m| m.get("bandwidth_bytes_per_s")), Some(&FactValue::Float(4.8e12)));
        assert_eq!(facts.get("names"), Some(&FactValue::List(vec![FactValue::Str("Card".into())])));
        assert_eq!(facts.get("computes_float64"), Some(&FactValue::Bool(true)));
    }

    #[test]
    fn a_fact_without_source_is_refused() {
        let unsourced = GOOD.replace("  warp_size: 32             # [doc]", "  warp_size: 32");
        let err = parse_device_file("nvidia", "card", &unsourced).unwrap_err();
        assert!(err.contains("warp_size: 32") && err.contains("no source"), "{err}");
        let undefined = GOOD.replace("names: [\"Card\"]             # [doc]", "names: [\"Card\"]  # [smi]");
        assert!(parse_device_file("nvidia", "card", &undefined).unwrap_err().contains("[smi]"));
    }

    #[test]
    fn malformed_files_are_refused_by_name() {
        let cases = [
            (GOOD.replace("sm_90", "ampere"), "sm_<major><minor>"),
            (GOOD.replace("warp_size", "warp_width"), "warp_width"),
            (GOOD.replace("[float16]", "[float12]"), "float12"),
            (GOOD.replace("names: [\"Card\"]", "names: []"), "names"),
        ];
        for (text, expected) in cases {
            let err = parse_device_file("nvidia", "card", &text).unwrap_err();
            assert!(err.contains("data/devices/nvidia/card.yml") && err.contains(expected), "{err}");
        }
        assert!(parse_device_file("apple", "card", GOOD).unwrap_err().contains("vendor 'nvidia'"));
    }
}
