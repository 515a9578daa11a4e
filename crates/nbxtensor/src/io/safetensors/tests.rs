//! Round trips and every malformed header, each refused with a message that names it.

use super::*;
use crate::io::IoError;
use crate::tensor::Tensor;
use crate::DType;
use std::path::PathBuf;

/// A file of `json` (length-prefixed) followed by `data`.
fn file_of(json: &str, data: &[u8]) -> Vec<u8> {
    let mut file = (json.len() as u64).to_le_bytes().to_vec();
    file.extend_from_slice(json.as_bytes());
    file.extend_from_slice(data);
    file
}

/// A fresh path in the temp directory, removed when dropped.
struct TempPath(PathBuf);

impl TempPath {
    fn new(tag: &str) -> TempPath {
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        TempPath(std::env::temp_dir().join(format!("nbx_st_{tag}_{}_{n}.safetensors", std::process::id())))
    }

    fn with(tag: &str, bytes: &[u8]) -> TempPath {
        let path = TempPath::new(tag);
        std::fs::write(&path.0, bytes).unwrap();
        path
    }
}

impl Drop for TempPath {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// The malformed-header message of `file`, through parse_header, load and open alike.
fn refusal(file: &[u8]) -> String {
    let parsed = parse_header(file).unwrap_err();
    assert!(matches!(parsed, IoError::Malformed(_)), "{parsed:?}");
    let path = TempPath::with("bad", file);
    let loaded = load(&path.0).unwrap_err();
    let opened = open(&path.0).err().unwrap();
    for e in [&loaded, &opened] {
        assert!(matches!(e, IoError::Malformed(m) if m.ends_with(&parsed.to_string())), "{e:?} vs {parsed:?}");
    }
    parsed.to_string()
}

fn f32_entry(name: &str, shape: &str, offsets: &str) -> String {
    format!(r#""{name}":{{"dtype":"F32","shape":{shape},"data_offsets":{offsets}}}"#)
}

#[test]
fn truncated_before_the_length() {
    assert!(refusal(&[]).contains("fewer than the 8"));
    assert!(refusal(&[1, 0, 0]).contains("3 bytes, fewer than the 8"));
}

#[test]
fn header_length_past_the_file_or_absurd() {
    let mut file = file_of("{}", b"");
    file[..8].copy_from_slice(&3u64.to_le_bytes());
    assert!(refusal(&file).contains("header length 3 runs past the file: only 2 bytes"));
    file[..8].copy_from_slice(&u64::MAX.to_le_bytes());
    assert!(refusal(&file).contains(&format!("header length {} runs past", u64::MAX)));
}

#[test]
fn header_not_utf8_json_or_object() {
    assert!(refusal(&file_of("{\"\u{e9}\":1}", b"")[..]).contains("tensor 'é'"));
    let mut bad = file_of("{\"ab\":{}}", b"");
    bad[10] = 0xff;
    assert!(refusal(&bad).contains("not UTF-8"));
    assert!(refusal(&file_of("{\"a\":", b"")).contains("not JSON"));
    assert!(refusal(&file_of("[1, 2]", b"")).contains("not a JSON object but an array"));
    assert!(refusal(&file_of("\"x\"", b"")).contains("not a JSON object but a string"));
}

#[test]
fn repeated_keys_are_refused_by_name() {
    // found by the fuzzer: JSON keeps the last of a repeated key, the safetensors crate refused
    let json = format!(
        r#"{{{},"b":{{"data_offsets":[0,4]}},{}}}"#,
        f32_entry("b", "[1]", "[0, 4]"),
        f32_entry("b", "[1]", "[0, 4]")
    );
    assert!(refusal(&file_of(&json, &[0; 4])).contains("the key 'b' appears more than once"));
    let json = format!(r#"{{"__metadata__":{{}},"__metadata__":{{}},{}}}"#, f32_entry("w", "[1]", "[0, 4]"));
    assert!(refusal(&file_of(&json, &[0; 4])).contains("the key '__metadata__' appears more than once"));
    // a field repeated inside an entry is refused by the crate's reference parser
    let json = r#"{"w":{"dtype":"F32","dtype":"F32","shape":[1],"data_offsets":[0,4]}}"#;
    assert!(refusal(&file_of(json, &[0; 4])).contains("duplicate field `dtype`"));
    // and a key repeated inside the metadata (its value would be the last one's, silently)
    let json = format!(r#"{{"__metadata__":{{"a":"1","b":"x","a":"2"}},{}}}"#, f32_entry("w", "[1]", "[0, 4]"));
    assert!(refusal(&file_of(&json, &[0; 4])).contains("the metadata key 'a' appears more than once"));
    let json = format!(r#"{{"__metadata__":{{"a":"1","b":"2"}},{}}}"#, f32_entry("w", "[1]", "[0, 4]"));
    assert!(parse_header(&file_of(&json, &[0; 4])).unwrap().metadata.unwrap().len() == 2);
}

#[test]
fn entries_and_metadata_of_the_wrong_kind() {
    assert!(refusal(&file_of(r#"{"w":3}"#, b"")).contains("tensor 'w': the entry is a number, not an object"));
    assert!(refusal(&file_of(r#"{"w":{"shape":[],"data_offsets":[0,4]}}"#, &[0; 4])).contains("tensor 'w': no 'dtype'"));
    let meta = r#"{"__metadata__":{"k":1}}"#;
    assert!(refusal(&file_of(meta, b"")).contains("'__metadata__' key 'k' holds a number, not a string"));
    let offsets = r#"{"w":{"dtype":"U8","shape":[1],"data_offsets":[0]}}"#;
    assert!(refusal(&file_of(offsets, &[0])).contains("tensor 'w': data_offsets is [0], not a pair"));
}

#[test]
fn unknown_dtype_codes_are_named() {
    let json = |code: &str| format!(r#"{{"w":{{"dtype":"{code}","shape":[2],"data_offsets":[0,1]}}}}"#);
    assert!(refusal(&file_of(&json("F12"), &[0])).contains("tensor 'w': unknown safetensors code 'F12'"));
    // a code the crate knows but the dtype table lacks
    assert!(refusal(&file_of(&json("F4"), &[0])).contains("unknown safetensors code 'F4'"));
}

#[test]
fn negative_overflowing_and_wrong_dims() {
    let json = format!("{{{}}}", f32_entry("w", "[-2, 3]", "[0, 0]"));
    assert!(refusal(&file_of(&json, b"")).contains("tensor 'w': dim -2 is negative"));
    let json = format!("{{{}}}", f32_entry("w", "[18446744073709551616]", "[0, 0]"));
    assert!(refusal(&file_of(&json, b"")).contains("is not an integer that fits 64 bits"));
    let json = format!("{{{}}}", f32_entry("w", "[4294967296, 4294967296]", "[0, 0]"));
    assert!(refusal(&file_of(&json, b"")).starts_with("safetensors header: tensor 'w': "));
    let json = format!("{{{}}}", f32_entry("w", "[4611686018427387904]", "[0, 0]"));
    assert!(refusal(&file_of(&json, b"")).contains("overflows 64 bits of bytes"));
    let json = format!("{{{}}}", f32_entry("w", "[2, 3]", "[0, 20]"));
    assert!(refusal(&file_of(&json, &[0; 20]))
        .contains("shape [2, 3] of float32 takes 24 bytes, but data_offsets [0, 20] span 20"));
}

#[test]
fn offsets_reversed_overlapping_gapped_or_past_the_data() {
    let json = format!("{{{}}}", f32_entry("w", "[1]", "[8, 4]"));
    assert!(refusal(&file_of(&json, &[0; 8])).contains("tensor 'w': data_offsets [8, 4] are reversed"));
    let json = format!("{{{},{}}}", f32_entry("a", "[2]", "[0, 8]"), f32_entry("b", "[2]", "[4, 12]"));
    assert!(refusal(&file_of(&json, &[0; 12]))
        .contains("tensor 'b' (bytes 4..12) overlaps tensor 'a', which ends at byte 8"));
    let json = format!("{{{},{}}}", f32_entry("a", "[1]", "[0, 4]"), f32_entry("b", "[1]", "[8, 12]"));
    assert!(
        refusal(&file_of(&json, &[0; 12])).contains("bytes 4..8 of the data section belong to no tensor (before 'b')")
    );
    let json = format!("{{{}}}", f32_entry("a", "[1]", "[4, 8]"));
    assert!(refusal(&file_of(&json, &[0; 8])).contains("bytes 0..4"));
    let json = format!("{{{}}}", f32_entry("w", "[2]", "[0, 8]"));
    assert!(refusal(&file_of(&json, &[0; 7])).contains("tensor 'w' ends at byte 8, past the data section of 7 bytes"));
    assert!(refusal(&file_of(&json, &[0; 9])).contains("has 9 bytes but the tensors cover only 8"));
}

#[test]
fn header_lists_tensors_in_file_order_with_metadata() {
    let json = format!(
        r#"{{"__metadata__":{{"format":"pt"}},{},{}}}"#,
        f32_entry("z", "[1]", "[0, 4]"),
        r#""a":{"dtype":"BF16","shape":[2, 0],"data_offsets":[4, 4]}"#
    );
    let header = parse_header(&file_of(&json, &[0; 4])).unwrap();
    let names: Vec<_> = header.tensors.iter().map(|t| (t.name.as_str(), t.dtype, t.begin, t.end)).collect();
    assert_eq!(names, [("z", DType::Float32, 0, 4), ("a", DType::Bfloat16, 4, 4)]);
    assert_eq!(header.metadata.unwrap()["format"], "pt");
    assert_eq!(header.json_len, json.len() as u64);
}

#[test]
fn round_trip_every_dtype_with_a_code() {
    let path = TempPath::new("round");
    let mut originals = Vec::new();
    for dtype in DType::ALL.iter().copied().filter(|d| d.safetensors_code().is_ok()) {
        let itemsize = dtype.itemsize().unwrap();
        let bytes: Vec<u8> = (0..6 * itemsize).map(|i| (i * 7 + dtype.value() as usize) as u8).collect();
        let bytes: Vec<u8> = if dtype == DType::Bool { bytes.iter().map(|b| b & 1).collect() } else { bytes };
        originals.push((dtype.name().to_string(), Tensor::from_bytes(dtype, &[2, 3], &bytes).unwrap()));
    }
    originals.push(("scalar".into(), Tensor::from_vec(vec![2.5f64], &[]).unwrap()));
    originals.push(("empty".into(), Tensor::from_vec(Vec::<i16>::new(), &[0, 4]).unwrap()));
    let transposed = Tensor::from_vec((0..6).collect::<Vec<i32>>(), &[2, 3]).unwrap().transpose(0, 1).unwrap();
    originals.push(("transposed".into(), transposed));
    let pairs: Vec<(&str, &Tensor)> = originals.iter().map(|(n, t)| (n.as_str(), t)).collect();
    let metadata = std::collections::HashMap::from([("format".to_string(), "np".to_string())]);
    save(&path.0, &pairs, Some(metadata)).unwrap();

    let loaded = load(&path.0).unwrap();
    assert_eq!(loaded.len(), originals.len());
    for (name, original) in &originals {
        let got = loaded.iter().find(|t| &t.name == name).unwrap();
        assert_eq!(got.tensor.dtype(), original.dtype(), "{name}");
        assert_eq!(got.tensor.shape(), original.shape(), "{name}");
        assert_eq!(got.tensor.to_bytes().unwrap(), original.to_bytes().unwrap(), "{name}");
        assert!(got.zero_copy && got.tensor.is_read_only(), "{name}: files written here are aligned");
    }
    let index = open(&path.0).unwrap();
    assert_eq!(index.header().metadata.as_ref().unwrap()["format"], "np");
    assert_eq!(index.names(), loaded.iter().map(|t| t.name.as_str()).collect::<Vec<_>>());
    assert_eq!(index.load("transposed").unwrap().tensor.to_vec::<i32>().unwrap(), [0, 3, 1, 4, 2, 5]);
    assert!(matches!(index.load("nope"), Err(IoError::UnknownTensor(m)) if m.contains("'nope'")));
}

#[test]
fn aligned_tensors_are_views_of_the_file_and_misaligned_ones_copies() {
    // a 1-byte u8 tensor first puts the f32 tensor one byte past an aligned offset
    let json =
        r#"{"b":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"f":{"dtype":"F32","shape":[2],"data_offsets":[1,9]}}"#;
    let pad = " ".repeat((8 - json.len() % 8) % 8); // data section starts on a multiple of 8
    let json = format!("{json}{pad}");
    let mut data = vec![5u8];
    data.extend([1.5f32, -2.0].iter().flat_map(|x| x.to_le_bytes()));
    let path = TempPath::with("align", &file_of(&json, &data));
    let loaded = load(&path.0).unwrap();
    let (b, f) = (&loaded[0], &loaded[1]);
    assert_eq!((b.name.as_str(), b.zero_copy, b.tensor.is_read_only()), ("b", true, true));
    assert_eq!((f.name.as_str(), f.zero_copy, f.tensor.is_read_only()), ("f", false, false));
    assert_eq!(f.tensor.to_vec::<f32>().unwrap(), [1.5, -2.0]);
    // proof: a write to the file (same size, no truncation) shows through the shared map in
    // the view, not in the copy
    let mut bytes = std::fs::read(&path.0).unwrap();
    let start = 8 + json.len();
    bytes[start] = 9;
    bytes[start + 1..start + 5].copy_from_slice(&7.0f32.to_le_bytes());
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path.0)
        .and_then(|mut file| {
            use std::io::Write;
            file.write_all(&bytes)
        })
        .unwrap();
    assert_eq!(b.tensor.to_vec::<u8>().unwrap(), [9]);
    assert_eq!(f.tensor.to_vec::<f32>().unwrap(), [1.5, -2.0]);
}

#[test]
fn open_reads_no_data_and_notices_a_changed_file() {
    let path = TempPath::new("open");
    let w = Tensor::from_vec(vec![1u16, 2, 3], &[3]).unwrap();
    save(&path.0, &[("w", &w)], None).unwrap();
    let index = open(&path.0).unwrap();
    // the header alone decides what open lists; the data is read at load
    let entry = index.header().get("w").unwrap();
    assert_eq!((entry.dtype, entry.shape.clone(), entry.end - entry.begin), (DType::Uint16, vec![3], 6));
    let mut bytes = std::fs::read(&path.0).unwrap();
    bytes.push(0);
    std::fs::write(&path.0, &bytes).unwrap();
    assert!(matches!(index.load("w"), Err(IoError::Malformed(m)) if m.contains("changed since it was opened")));
}

#[test]
fn missing_files_and_refused_saves() {
    let path = TempPath::new("missing");
    for e in [load(&path.0).unwrap_err(), open(&path.0).err().unwrap()] {
        assert!(
            matches!(&e, IoError::Os { kind: std::io::ErrorKind::NotFound, message } if message.contains("cannot open"))
        );
    }
    let t = Tensor::from_vec(vec![1u8], &[1]).unwrap();
    let twice = save(&path.0, &[("t", &t), ("t", &t)], None).unwrap_err();
    assert!(twice.to_string().contains("'t' is given twice"));
    let reserved = save(&path.0, &[("__metadata__", &t)], None).unwrap_err();
    assert!(reserved.to_string().contains("reserved"));
    let packed = Tensor::zeros(DType::Uint8, &[4]).unwrap();
    assert!(save(&path.0, &[("p", &packed)], None).is_ok());
    let c128 = Tensor::zeros(DType::Complex128, &[1]).unwrap();
    let refused = save(&path.0, &[("c", &c128)], None).unwrap_err().to_string();
    assert!(refused.contains("tensor 'c'") && refused.contains("complex128"), "{refused}");
}
