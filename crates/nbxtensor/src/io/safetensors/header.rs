//! The safetensors header: an 8-byte little-endian length, that many bytes of JSON (an object
//! of tensor entries and an optional `__metadata__` object of strings), then the data section.
//! Every field is checked here, before any tensor is made; the `safetensors` crate's own
//! parser then reads the same JSON as the format's reference.

use crate::dtype::DType;
use crate::io::{IoError, Result};
use crate::shape;
use serde_json::{Map, Value};
use std::collections::HashMap;

/// Bytes of the little-endian header length that opens every file.
pub const LENGTH_BYTES: usize = std::mem::size_of::<u64>();

/// The key of the header that holds the file's metadata rather than a tensor.
pub const METADATA_KEY: &str = "__metadata__";

/// One tensor of the header: its dtype, shape and byte range in the data section.
#[derive(Debug, Clone, PartialEq)]
pub struct TensorEntry {
    /// The tensor's name (the header key).
    pub name: String,
    /// The dtype, through the dtype table.
    pub dtype: DType,
    /// The extents (row-major, little-endian elements).
    pub shape: Vec<i64>,
    /// The first byte, counted from the start of the data section.
    pub begin: u64,
    /// One past the last byte, counted from the start of the data section.
    pub end: u64,
}

/// A checked header: its tensors in file order (by data offset, then name) and its metadata.
#[derive(Debug, Clone, PartialEq)]
pub struct Header {
    /// The length of the JSON text, as the file's first 8 bytes give it.
    pub json_len: u64,
    /// The tensors, in the order of their bytes in the file (names break ties between empty
    /// tensors at one offset).
    pub tensors: Vec<TensorEntry>,
    /// The `__metadata__` object, when the file has one.
    pub metadata: Option<HashMap<String, String>>,
}

impl Header {
    /// Where the data section starts, in bytes from the start of the file.
    pub fn data_start(&self) -> u64 {
        LENGTH_BYTES as u64 + self.json_len
    }

    /// The size of the data section (the tensors cover it exactly).
    pub fn data_len(&self) -> u64 {
        self.tensors.last().map_or(0, |t| t.end)
    }

    /// The entry of the tensor `name`.
    pub fn get(&self, name: &str) -> Option<&TensorEntry> {
        self.tensors.iter().find(|t| t.name == name)
    }
}

/// Parses and checks the header of a whole safetensors file held in `file` (header length,
/// JSON, every tensor entry, full coverage of the data section). Tensor data is not read.
///
/// ```
/// use nbxtensor::io::safetensors::parse_header;
/// use nbxtensor::DType;
/// let json = br#"{"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}"#;
/// let mut file = (json.len() as u64).to_le_bytes().to_vec();
/// file.extend_from_slice(json);
/// file.extend_from_slice(&[0; 8]);
/// let header = parse_header(&file)?;
/// assert_eq!((header.tensors[0].dtype, header.tensors[0].shape.clone()), (DType::Float32, vec![2]));
/// file.pop(); // one byte short
/// assert!(parse_header(&file).unwrap_err().to_string().contains("past the data section"));
/// # Ok::<(), nbxtensor::io::IoError>(())
/// ```
pub fn parse_header(file: &[u8]) -> Result<Header> {
    let file_len = file.len() as u64;
    let json_len = json_length(file.get(..LENGTH_BYTES), file_len)?;
    let json = &file[LENGTH_BYTES..LENGTH_BYTES + json_len];
    parse_json(json, file_len - LENGTH_BYTES as u64 - json_len as u64)
}

/// The JSON length given by the first 8 bytes `prefix` of a file of `file_len` bytes; refused
/// when the file is shorter than 8 bytes or the length runs past the file.
pub(crate) fn json_length(prefix: Option<&[u8]>, file_len: u64) -> Result<usize> {
    let Some(Ok(prefix)) = prefix.map(<[u8; LENGTH_BYTES]>::try_from) else {
        return Err(IoError::Malformed(format!(
            "the file has {file_len} bytes, fewer than the {LENGTH_BYTES} of the header length: truncated"
        )));
    };
    let json_len = u64::from_le_bytes(prefix);
    let room = file_len - LENGTH_BYTES as u64;
    if json_len > room {
        return Err(IoError::Malformed(format!(
            "the header length {json_len} runs past the file: only {room} bytes follow the length"
        )));
    }
    usize::try_from(json_len).map_err(|_| IoError::Malformed(format!("the header length {json_len} is too large")))
}

/// Parses and checks the header's JSON text, for a data section of `data_len` bytes.
pub(crate) fn parse_json(json: &[u8], data_len: u64) -> Result<Header> {
    let malformed = |what: String| IoError::Malformed(format!("safetensors header: {what}"));
    let text = std::str::from_utf8(json).map_err(|e| malformed(format!("not UTF-8 text: {e}")))?;
    let value: Value = serde_json::from_str(text).map_err(|e| malformed(format!("not JSON: {e}")))?;
    if !value.is_object() {
        return Err(malformed(format!("not a JSON object but {}", kind_of(&value))));
    }
    // JSON lets a key repeat (the last one wins when read into a map): a header whose tensor
    // entries disagree with themselves is refused, naming the key
    let Keys(keys, metadata_keys) = serde_json::from_str(text).map_err(|e| malformed(format!("not JSON: {e}")))?;
    let mut seen = std::collections::HashSet::with_capacity(keys.len());
    if let Some(repeated) = keys.iter().find(|k| !seen.insert(k.as_str())) {
        return Err(malformed(format!("the key '{repeated}' appears more than once")));
    }
    // the same inside the metadata: which of two values is meant cannot be known
    let mut seen = std::collections::HashSet::with_capacity(metadata_keys.len());
    if let Some(repeated) = metadata_keys.iter().find(|k| !seen.insert(k.as_str())) {
        return Err(malformed(format!("the metadata key '{repeated}' appears more than once")));
    }
    let mut metadata = None;
    let mut tensors = Vec::with_capacity(keys.len());
    for (name, entry) in value.as_object().into_iter().flatten() {
        if name == METADATA_KEY {
            metadata = Some(metadata_of(entry).map_err(malformed)?);
        } else {
            tensors.push(tensor_entry(name, entry).map_err(|e| malformed(format!("tensor '{name}': {e}")))?);
        }
    }
    tensors.sort_by(|a, b| (a.begin, a.end, &a.name).cmp(&(b.begin, b.end, &b.name)));
    check_coverage(&tensors, data_len).map_err(malformed)?;
    // the format's reference parser reads the same text: a refusal there is a refusal here
    serde_json::from_str::<safetensors::tensor::Metadata>(text)
        .map_err(|e| malformed(format!("refused by the safetensors crate: {e}")))?;
    Ok(Header { json_len: json.len() as u64, tensors, metadata })
}

/// The keys of a JSON object, in order, repeats kept (their values skipped), and the keys of
/// its `__metadata__` object the same way (empty when it is not an object).
struct Keys(Vec<String>, Vec<String>);

/// The keys of a JSON value when it is an object, repeats kept; nothing for any other value.
struct ObjectKeys(Vec<String>);

impl<'de> serde::Deserialize<'de> for ObjectKeys {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> std::result::Result<ObjectKeys, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = ObjectKeys;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON value")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> std::result::Result<ObjectKeys, A::Error> {
                let mut keys = Vec::new();
                while let Some((key, _)) = map.next_entry::<String, serde::de::IgnoredAny>()? {
                    keys.push(key);
                }
                Ok(ObjectKeys(keys))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<ObjectKeys, A::Error> {
                while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
                Ok(ObjectKeys(Vec::new()))
            }
            fn visit_bool<E>(self, _: bool) -> std::result::Result<ObjectKeys, E> {
                Ok(ObjectKeys(Vec::new()))
            }
            fn visit_i64<E>(self, _: i64) -> std::result::Result<ObjectKeys, E> {
                Ok(ObjectKeys(Vec::new()))
            }
            fn visit_u64<E>(self, _: u64) -> std::result::Result<ObjectKeys, E> {
                Ok(ObjectKeys(Vec::new()))
            }
            fn visit_f64<E>(self, _: f64) -> std::result::Result<ObjectKeys, E> {
                Ok(ObjectKeys(Vec::new()))
            }
            fn visit_str<E>(self, _: &str) -> std::result::Result<ObjectKeys, E> {
                Ok(ObjectKeys(Vec::new()))
            }
            fn visit_unit<E>(self) -> std::result::Result<ObjectKeys, E> {
                Ok(ObjectKeys(Vec::new()))
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}

impl<'de> serde::Deserialize<'de> for Keys {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> std::result::Result<Keys, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = Keys;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> std::result::Result<Keys, A::Error> {
                let (mut keys, mut metadata_keys) = (Vec::new(), Vec::new());
                while let Some(key) = map.next_key::<String>()? {
                    if key == METADATA_KEY {
                        metadata_keys.extend(map.next_value::<ObjectKeys>()?.0);
                    } else {
                        map.next_value::<serde::de::IgnoredAny>()?;
                    }
                    keys.push(key);
                }
                Ok(Keys(keys, metadata_keys))
            }
        }
        deserializer.deserialize_map(Visitor)
    }
}

/// The name of a JSON value's kind, for messages.
fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The `__metadata__` object: strings only.
fn metadata_of(value: &Value) -> Result<HashMap<String, String>, String> {
    let Value::Object(object) = value else {
        return Err(format!("'{METADATA_KEY}' is {}, not an object of strings", kind_of(value)));
    };
    object
        .iter()
        .map(|(key, v)| match v {
            Value::String(s) => Ok((key.clone(), s.clone())),
            other => Err(format!("'{METADATA_KEY}' key '{key}' holds {}, not a string", kind_of(other))),
        })
        .collect()
}

/// A field of a tensor entry.
fn field<'a>(entry: &'a Map<String, Value>, key: &str) -> Result<&'a Value, String> {
    entry.get(key).ok_or_else(|| format!("no '{key}' field"))
}

/// A non-negative integer of the header (a dim or an offset) as u64.
fn whole(value: &Value, what: &str) -> Result<u64, String> {
    match value.as_u64() {
        Some(n) => Ok(n),
        None if value.as_i64().is_some() => Err(format!("{what} {value} is negative")),
        None if value.is_number() => Err(format!("{what} {value} is not an integer that fits 64 bits")),
        None => Err(format!("{what} is {}, not an integer", kind_of(value))),
    }
}

/// One tensor entry, checked on its own: an object with a dtype code of the table, a shape of
/// non-negative dims, and data offsets `[begin, end]` spanning exactly the shape's bytes.
fn tensor_entry(name: &str, value: &Value) -> Result<TensorEntry, String> {
    let Value::Object(entry) = value else {
        return Err(format!("the entry is {}, not an object", kind_of(value)));
    };
    let dtype = match field(entry, "dtype")? {
        Value::String(code) => DType::from_safetensors(code).map_err(|e| e.to_string())?,
        other => return Err(format!("dtype is {}, not a string", kind_of(other))),
    };
    let Value::Array(dims) = field(entry, "shape")? else {
        return Err(format!("shape is {}, not an array", kind_of(field(entry, "shape")?)));
    };
    let shape = dims
        .iter()
        .map(|d| {
            let dim = whole(d, "dim")?;
            i64::try_from(dim).map_err(|_| format!("dim {dim} is too large"))
        })
        .collect::<Result<Vec<i64>, String>>()?;
    let numel = shape::numel(&shape).map_err(|e| e.to_string())? as u64;
    let itemsize = dtype.itemsize().map_err(|e| e.to_string())? as u64;
    let bytes =
        numel.checked_mul(itemsize).ok_or_else(|| format!("shape {shape:?} of {dtype} overflows 64 bits of bytes"))?;
    let offsets = match field(entry, "data_offsets")? {
        Value::Array(pair) if pair.len() == 2 => pair,
        other => return Err(format!("data_offsets is {other}, not a pair [begin, end]")),
    };
    let (begin, end) = (whole(&offsets[0], "data offset")?, whole(&offsets[1], "data offset")?);
    if begin > end {
        return Err(format!("data_offsets [{begin}, {end}] are reversed"));
    }
    if end - begin != bytes {
        return Err(format!(
            "shape {shape:?} of {dtype} takes {bytes} bytes, but data_offsets [{begin}, {end}] span {}",
            end - begin
        ));
    }
    Ok(TensorEntry { name: name.to_string(), dtype, shape, begin, end })
}

/// The tensors, in file order, must tile the data section: each starting where the one before
/// ends, the first at 0, the last at the end.
fn check_coverage(tensors: &[TensorEntry], data_len: u64) -> Result<(), String> {
    let mut covered = 0u64;
    let mut previous: Option<&str> = None;
    for t in tensors {
        let (name, begin, end) = (&t.name, t.begin, t.end);
        if end > data_len {
            return Err(format!(
                "tensor '{name}' ends at byte {end}, past the data section of {data_len} bytes (truncated?)"
            ));
        }
        if begin < covered {
            let before = previous.unwrap_or("");
            return Err(format!(
                "tensor '{name}' (bytes {begin}..{end}) overlaps tensor '{before}', which ends at byte {covered}"
            ));
        }
        if begin > covered {
            return Err(format!("bytes {covered}..{begin} of the data section belong to no tensor (before '{name}')"));
        }
        covered = end;
        previous = Some(name);
    }
    if covered != data_len {
        return Err(format!(
            "the data section has {data_len} bytes but the tensors cover only {covered}: the format requires full coverage"
        ));
    }
    Ok(())
}
