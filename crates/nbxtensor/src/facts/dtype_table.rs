//! The shape of `data/dtypes.yml` and the checks every entry passes.
//!
//! This file is compiled twice: by `build.rs`, which reads the table to generate the `DType`
//! enum (so a malformed table fails the build), and by the crate, which reads the same table
//! at run time. It therefore depends on nothing but `serde` and `serde-saphyr`.

use serde::Deserialize;
use std::collections::BTreeSet;

/// What a dtype holds: the class promotion and kernels reason about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// `true` or `false`, one byte.
    Bool,
    /// Two's complement signed integer.
    Int,
    /// Unsigned integer.
    Uint,
    /// Binary floating point (IEEE formats, bfloat16, fp8).
    Float,
    /// A pair of floats, real then imaginary.
    Complex,
    /// A packed quantized representation: codes plus per-group scales.
    Packed,
}

impl Kind {
    /// The kind's table spelling (`"float"`, `"uint"` …).
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Bool => "bool",
            Kind::Int => "int",
            Kind::Uint => "uint",
            Kind::Float => "float",
            Kind::Complex => "complex",
            Kind::Packed => "packed",
        }
    }
}

/// The layout of a binary floating-point format.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FloatFormat {
    /// Bits of the biased exponent.
    pub exponent_bits: u32,
    /// Bits of the stored mantissa (without the implicit leading one).
    pub mantissa_bits: u32,
    /// The largest finite value.
    pub max: f64,
    /// Whether the format encodes an infinity (fp8 e4m3fn does not).
    pub inf: bool,
}

/// How many elements share one scale.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum Group {
    /// A fixed number of consecutive elements.
    Elements(u64),
    /// One group per output channel (row); the caller says how many channels there are.
    Channel(ChannelWord),
}

/// The word `channel` in the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChannelWord {
    /// One group per output channel.
    Channel,
}

/// The layout of a packed quantized representation.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Packed {
    /// Bits of one element's code.
    pub bits: u32,
    /// Elements sharing one scale (and minimum).
    pub group: Group,
    /// Table name of the dtype a group's scale is stored in.
    pub scale: String,
    /// Table name of the dtype a group's minimum is stored in, for asymmetric formats.
    #[serde(default)]
    pub minimum: Option<String>,
    /// Table name of the dtype the codes are stored in.
    pub storage: String,
}

/// A DLPack `DLDataType` (lanes are always 1 here).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DlpackType {
    /// `DLDataTypeCode`.
    pub code: u8,
    /// Bits of one element.
    pub bits: u8,
}

/// One entry of the dtype table.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DTypeEntry {
    /// The table name.
    pub name: String,
    /// The frozen enum code.
    pub value: u8,
    /// What the dtype holds.
    pub kind: Kind,
    /// Bytes per element; `None` for packed representations.
    #[serde(default)]
    pub width: Option<u32>,
    /// The float layout, for `kind: float`.
    #[serde(default)]
    pub float: Option<FloatFormat>,
    /// The packed layout, for `kind: packed`.
    #[serde(default)]
    pub packed: Option<Packed>,
    /// The safetensors header code, if the format has one.
    pub safetensors: Option<String>,
    /// The DLPack type, if DLPack has one.
    pub dlpack: Option<DlpackType>,
    /// The spelling inside a kernel launch key.
    pub launch_key: String,
    /// Other spellings `parse_dtype` reads.
    pub aliases: Vec<String>,
    /// Where the facts come from.
    pub source: String,
}

/// Parses the table text and checks it; the error names the entry and the problem.
pub fn parse_dtype_table(text: &str) -> Result<Vec<DTypeEntry>, String> {
    let entries: Vec<DTypeEntry> =
        serde_saphyr::from_str(text).map_err(|e| format!("dtypes.yml does not parse: {e}"))?;
    check_dtype_table(&entries)?;
    Ok(entries)
}

fn check_dtype_table(entries: &[DTypeEntry]) -> Result<(), String> {
    let mut spellings = BTreeSet::new();
    let mut keys = BTreeSet::new();
    let names: BTreeSet<&str> = entries.iter().map(|e| e.name.as_str()).collect();
    for (position, entry) in entries.iter().enumerate() {
        let at = |problem: &str| format!("dtypes.yml entry '{}': {problem}", entry.name);
        if usize::from(entry.value) != position {
            return Err(at(&format!(
                "value {} is not its position {position}: values are consecutive from 0 and never renumbered",
                entry.value
            )));
        }
        for spelling in std::iter::once(&entry.name).chain(&entry.aliases) {
            if !spellings.insert(spelling.clone()) {
                return Err(at(&format!("the spelling '{spelling}' is used twice")));
            }
        }
        if !keys.insert(entry.launch_key.clone()) {
            return Err(at(&format!("launch key '{}' is used twice", entry.launch_key)));
        }
        if entry.source.trim().is_empty() {
            return Err(at("no source"));
        }
        match (entry.kind, entry.width, &entry.float, &entry.packed) {
            (Kind::Packed, None, None, Some(packed)) => {
                for part in [Some(&packed.scale), packed.minimum.as_ref(), Some(&packed.storage)].into_iter().flatten()
                {
                    if !names.contains(part.as_str()) {
                        return Err(at(&format!("names '{part}', which is not in the table")));
                    }
                }
                if !(1..=8).contains(&packed.bits) || 8 % packed.bits != 0 {
                    return Err(at("packed bits must divide a byte"));
                }
                if entry.dlpack.is_some() || entry.safetensors.is_some() {
                    return Err(at("a packed representation has no DLPack or safetensors code"));
                }
            }
            (Kind::Packed, ..) => return Err(at("kind packed needs `packed` and no `width` or `float`")),
            (Kind::Float, Some(_), Some(_), None) => {}
            (Kind::Float, ..) => return Err(at("kind float needs `width` and `float`, and no `packed`")),
            (_, Some(_), None, None) => {}
            _ => return Err(at("needs `width`, and `float` or `packed` only where its kind has them")),
        }
        if let (Some(width), Some(dl)) = (entry.width, entry.dlpack) {
            if u32::from(dl.bits) != width * 8 {
                return Err(at("DLPack bits disagree with the width"));
            }
        }
        if let (Some(width), Some(float)) = (entry.width, &entry.float) {
            if 1 + float.exponent_bits + float.mantissa_bits != width * 8 {
                return Err(at("sign, exponent and mantissa bits disagree with the width"));
            }
        }
    }
    Ok(())
}
