//! Arbitrary bytes as a whole safetensors file: the header parser must return (never panic),
//! and whatever it accepts the `safetensors` crate's reader must accept with the same tensors.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nbxtensor::io::safetensors::parse_header;
use safetensors::SafeTensors;

fuzz_target!(|file: &[u8]| {
    let Ok(header) = parse_header(file) else { return };
    let (json_len, reference) =
        SafeTensors::read_metadata(file).expect("accepted here, refused by the safetensors crate");
    assert_eq!(json_len as u64, header.json_len);
    assert_eq!(reference.data_len() as u64, header.data_len());
    let listed = reference.tensors();
    assert_eq!(listed.len(), header.tensors.len());
    for t in &header.tensors {
        let info = listed[&t.name];
        assert_eq!(info.dtype.to_string(), t.dtype.safetensors_code().unwrap());
        assert_eq!(info.shape.iter().map(|&d| d as i64).collect::<Vec<_>>(), t.shape);
        assert_eq!((info.data_offsets.0 as u64, info.data_offsets.1 as u64), (t.begin, t.end));
    }
});
