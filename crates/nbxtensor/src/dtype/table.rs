//! Readers of the dtype table: names, aliases, widths, kinds and the codes of other formats.

use super::{DType, DTypeError, Result};
use crate::facts::{self, DTypeEntry, DlpackType, FloatFormat, Group, Kind, Packed};

/// Appended to an unknown-name error when the name is an alias: where aliases are read.
pub const ALIAS_HINT: &str = "parse_dtype reads aliases";

impl DType {
    /// This dtype's entry of the table.
    ///
    /// ```
    /// use nbxtensor::DType;
    /// assert_eq!(DType::Complex64.entry().safetensors.as_deref(), Some("C64"));
    /// ```
    pub fn entry(self) -> &'static DTypeEntry {
        &facts::dtype_table()[self as usize]
    }

    /// The table name (`"bfloat16"`, `"int4-g128-asym"` …).
    pub fn name(self) -> &'static str {
        &self.entry().name
    }

    /// The frozen code (the enum discriminant).
    pub fn value(self) -> u8 {
        self as u8
    }

    /// The dtype whose code is `value`.
    ///
    /// ```
    /// use nbxtensor::DType;
    /// assert_eq!(DType::from_value(1)?, DType::Bfloat16);
    /// assert!(DType::from_value(200).is_err());
    /// # Ok::<(), nbxtensor::dtype::DTypeError>(())
    /// ```
    pub fn from_value(value: u8) -> Result<DType> {
        DType::ALL
            .get(usize::from(value))
            .copied()
            .ok_or_else(|| DTypeError::UnknownCode { format: "NBXDtype", code: value.to_string() })
    }

    /// The dtype of a table name; aliases are refused (see [`DType::parse`]).
    ///
    /// ```
    /// use nbxtensor::DType;
    /// assert_eq!(DType::from_name("float16")?, DType::Float16);
    /// let err = DType::from_name("half").unwrap_err().to_string();
    /// assert!(err.contains("unknown dtype 'half'") && err.contains("float16"));
    /// # Ok::<(), nbxtensor::dtype::DTypeError>(())
    /// ```
    pub fn from_name(name: &str) -> Result<DType> {
        if let Some(dtype) = DType::ALL.iter().copied().find(|d| d.name() == name) {
            return Ok(dtype);
        }
        let hint = match DType::ALL.iter().find(|d| d.entry().aliases.iter().any(|a| a == name)) {
            Some(d) => format!(": an alias of '{}' ({ALIAS_HINT})", d.name()),
            None => String::new(),
        };
        Err(DTypeError::Unknown { name: name.to_string(), hint })
    }

    /// The dtype of a table name or of one of its aliases (torch and numpy spellings).
    ///
    /// ```
    /// use nbxtensor::DType;
    /// assert_eq!(DType::parse("torch.float16")?, DType::Float16);
    /// assert_eq!(DType::parse("bfloat16")?, DType::Bfloat16);
    /// assert!(DType::parse("fp8_unknown").is_err());
    /// # Ok::<(), nbxtensor::dtype::DTypeError>(())
    /// ```
    pub fn parse(spelling: &str) -> Result<DType> {
        DType::ALL
            .iter()
            .copied()
            .find(|d| d.name() == spelling || d.entry().aliases.iter().any(|a| a == spelling))
            .ok_or_else(|| DTypeError::Unknown { name: spelling.to_string(), hint: String::new() })
    }

    /// What the dtype holds.
    pub fn kind(self) -> Kind {
        self.entry().kind
    }

    /// Whether the dtype is a float (binary floating point, fp8 included).
    pub fn is_float(self) -> bool {
        self.kind() == Kind::Float
    }

    /// Bytes per element; refused for packed representations.
    ///
    /// ```
    /// use nbxtensor::DType;
    /// assert_eq!(DType::Complex64.itemsize()?, 8);
    /// assert!(DType::Int4G128Asym.itemsize().is_err());
    /// # Ok::<(), nbxtensor::dtype::DTypeError>(())
    /// ```
    pub fn itemsize(self) -> Result<usize> {
        DType::WIDTHS[self as usize].map(|w| w as usize).ok_or(DTypeError::Packed { dtype: self.name() })
    }

    /// Bits per element (a packed representation's code bits).
    pub fn bits(self) -> u32 {
        match (self.entry().width, &self.entry().packed) {
            (Some(width), _) => width * 8,
            (None, Some(packed)) => packed.bits,
            (None, None) => unreachable!("build.rs checks every entry has a width or a packed layout"),
        }
    }

    /// The float layout (exponent and mantissa bits, largest finite value, infinity).
    pub fn float_format(self) -> Result<&'static FloatFormat> {
        self.entry().float.as_ref().ok_or(DTypeError::MissingFact { dtype: self.name(), fact: "float format" })
    }

    /// The packed layout of a quantized representation.
    pub fn packed(self) -> Result<&'static Packed> {
        self.entry().packed.as_ref().ok_or(DTypeError::MissingFact { dtype: self.name(), fact: "packed layout" })
    }

    /// The dtype of a safetensors header code (`"BF16"` → bfloat16).
    pub fn from_safetensors(code: &str) -> Result<DType> {
        DType::ALL
            .iter()
            .copied()
            .find(|d| d.entry().safetensors.as_deref() == Some(code))
            .ok_or_else(|| DTypeError::UnknownCode { format: "safetensors", code: code.to_string() })
    }

    /// The safetensors header code; refused when the format has none.
    pub fn safetensors_code(self) -> Result<&'static str> {
        self.entry()
            .safetensors
            .as_deref()
            .ok_or(DTypeError::MissingFact { dtype: self.name(), fact: "safetensors code" })
    }

    /// The dtype of a launch-key spelling (`"fp16"` → float16).
    pub fn from_launch_key(key: &str) -> Result<DType> {
        DType::ALL
            .iter()
            .copied()
            .find(|d| d.entry().launch_key == key)
            .ok_or_else(|| DTypeError::UnknownCode { format: "launch key", code: key.to_string() })
    }

    /// The spelling inside a kernel launch key.
    pub fn launch_key(self) -> &'static str {
        &self.entry().launch_key
    }

    /// The DLPack type; refused when DLPack has none.
    pub fn dlpack(self) -> Result<DlpackType> {
        self.entry().dlpack.ok_or(DTypeError::MissingFact { dtype: self.name(), fact: "DLPack code" })
    }

    /// The dtype of a DLPack `(code, bits, lanes)`; lanes other than 1 are refused.
    pub fn from_dlpack(code: u8, bits: u8, lanes: u16) -> Result<DType> {
        let wanted = DlpackType { code, bits };
        DType::ALL.iter().copied().find(|d| lanes == 1 && d.entry().dlpack == Some(wanted)).ok_or_else(|| {
            DTypeError::UnknownCode { format: "DLPack", code: format!("(code {code}, bits {bits}, lanes {lanes})") }
        })
    }

    /// The dtype a store holds this dtype in: float64 becomes float32 where the store (a device)
    /// does not hold float64; a packed representation is stored in its container dtype.
    ///
    /// ```
    /// use nbxtensor::DType;
    /// assert_eq!(DType::Float64.storage_dtype(false)?, DType::Float32);
    /// assert_eq!(DType::Float64.storage_dtype(true)?, DType::Float64);
    /// assert_eq!(DType::Int4G128Sym.storage_dtype(true)?, DType::Uint8);
    /// # Ok::<(), nbxtensor::dtype::DTypeError>(())
    /// ```
    pub fn storage_dtype(self, stores_fp64: bool) -> Result<DType> {
        match self {
            DType::Float64 if !stores_fp64 => Ok(DType::Float32),
            DType::Complex128 if !stores_fp64 => Ok(DType::Complex64),
            _ => match &self.entry().packed {
                Some(packed) => DType::from_name(&packed.storage),
                None => Ok(self),
            },
        }
    }

    /// Bytes that `numel` elements take in this representation: the codes, then one scale (and
    /// minimum) per group. A per-channel format needs the number of `channels`.
    ///
    /// ```
    /// use nbxtensor::DType;
    /// // 256 four-bit codes, and a float16 scale and minimum for each of the two groups
    /// assert_eq!(DType::Int4G128Asym.representation_bytes(256, None)?, 128 + 2 * (2 + 2));
    /// assert_eq!(DType::Float32.representation_bytes(10, None)?, 40);
    /// assert_eq!(DType::Int8PerChannel.representation_bytes(64, Some(4))?, 64 + 4 * 4);
    /// # Ok::<(), nbxtensor::dtype::DTypeError>(())
    /// ```
    pub fn representation_bytes(self, numel: u64, channels: Option<u64>) -> Result<u64> {
        let overflow =
            || DTypeError::Invalid(format!("{numel} elements of '{}' overflow 64-bit byte counts", self.name()));
        let Some(packed) = &self.entry().packed else {
            if channels.is_some() {
                return Err(DTypeError::Invalid(format!(
                    "'{}' is not per-channel: channels does not apply",
                    self.name()
                )));
            }
            return numel.checked_mul(self.itemsize()? as u64).ok_or_else(overflow);
        };
        let groups = match (&packed.group, channels) {
            (Group::Elements(size), None) => numel.div_ceil(*size),
            (Group::Elements(_), Some(_)) => {
                return Err(DTypeError::Invalid(format!("'{}' has fixed groups: channels does not apply", self.name())))
            }
            (Group::Channel(_), Some(0)) if numel > 0 => {
                return Err(DTypeError::Invalid(format!(
                    "'{}': {numel} elements cannot be spread over 0 channels",
                    self.name()
                )))
            }
            (Group::Channel(_), Some(c)) if c > 0 && numel % c != 0 => {
                return Err(DTypeError::Invalid(format!(
                    "'{}': {numel} elements do not divide into {c} channels",
                    self.name()
                )))
            }
            (Group::Channel(_), Some(c)) => c,
            (Group::Channel(_), None) => {
                return Err(DTypeError::Invalid(format!(
                    "'{}' has one scale per channel: say how many channels",
                    self.name()
                )))
            }
        };
        let code_bytes = numel.checked_mul(u64::from(packed.bits)).ok_or_else(overflow)?.div_ceil(8);
        let mut per_group = DType::from_name(&packed.scale)?.itemsize()? as u64;
        if let Some(minimum) = &packed.minimum {
            per_group += DType::from_name(minimum)?.itemsize()? as u64;
        }
        groups.checked_mul(per_group).and_then(|g| g.checked_add(code_bytes)).ok_or_else(overflow)
    }
}

impl std::fmt::Display for DType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for DType {
    type Err = DTypeError;
    fn from_str(spelling: &str) -> Result<DType> {
        DType::parse(spelling)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_enum_value_is_its_table_position() {
        for (i, dtype) in DType::ALL.iter().enumerate() {
            assert_eq!(dtype.value() as usize, i);
            assert_eq!(DType::from_value(dtype.value()).unwrap(), *dtype);
        }
        assert_eq!(DType::Bfloat16.value(), 1, "the spec freezes bfloat16 at 1");
    }

    #[test]
    fn codes_round_trip_through_every_format() {
        for dtype in DType::ALL {
            assert_eq!(DType::from_name(dtype.name()).unwrap(), dtype);
            assert_eq!(DType::from_launch_key(dtype.launch_key()).unwrap(), dtype);
            if let Ok(code) = dtype.safetensors_code() {
                assert_eq!(DType::from_safetensors(code).unwrap(), dtype);
            }
            if let Ok(dl) = dtype.dlpack() {
                assert_eq!(DType::from_dlpack(dl.code, dl.bits, 1).unwrap(), dtype);
                assert!(DType::from_dlpack(dl.code, dl.bits, 2).is_err());
            }
            for alias in &dtype.entry().aliases {
                assert_eq!(DType::parse(alias).unwrap(), dtype);
            }
        }
    }

    #[test]
    fn packed_widths_are_refused_and_missing_facts_named() {
        let err = DType::Int4G128Asym.itemsize().unwrap_err().to_string();
        assert!(err.contains("int4-g128-asym") && err.contains("representation_bytes"), "{err}");
        let err = DType::Complex128.safetensors_code().unwrap_err().to_string();
        assert_eq!(err, "dtype 'complex128' has no safetensors code in the dtype table");
        assert!(DType::from_safetensors("F12").unwrap_err().to_string().contains("'F12'"));
    }

    #[test]
    fn representation_bytes_count_partial_groups_and_refuse_misuse() {
        assert_eq!(DType::Int4G128Sym.representation_bytes(256, None).unwrap(), 128 + 2 * 2);
        // 129 elements: 65 bytes of codes (the last nibble padded), two groups
        assert_eq!(DType::Int4G128Asym.representation_bytes(129, None).unwrap(), 65 + 2 * 4);
        assert_eq!(DType::Int4G128Asym.representation_bytes(0, None).unwrap(), 0);
        assert!(DType::Int8PerChannel.representation_bytes(64, None).is_err());
        assert!(DType::Int8PerChannel.representation_bytes(63, Some(4)).is_err());
        assert!(DType::Int4G128Asym.representation_bytes(64, Some(4)).is_err());
        assert!(DType::Float64.representation_bytes(u64::MAX, None).is_err());
    }
}
