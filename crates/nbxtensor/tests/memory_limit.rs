//! The memory limit, in a process of its own (the limit is process-wide, so no other test
//! may allocate while it is lowered).

use nbxtensor::memory::{host_allocator, Allocator, MemoryError};
use nbxtensor::settings::memory_limit::set_limit;
use nbxtensor::tensor::Tensor;
use nbxtensor::DType;

#[test]
fn a_request_over_the_limit_names_the_bytes_and_the_process_goes_on() {
    let host = host_allocator();
    let kept = host.alloc(100_000).unwrap();
    set_limit(Some(1 << 20)).unwrap();
    let err = host.alloc(2 << 20).map(drop).unwrap_err();
    let tensor_err = Tensor::zeros(DType::Float32, &[512, 1024]).map(drop).unwrap_err().to_string();
    set_limit(None).unwrap();
    match &err {
        MemoryError::OverLimit { asked, in_use, limit, .. } => {
            assert_eq!((*asked, *limit), (2 << 20, 1 << 20));
            assert!(*in_use >= 100_000, "the bytes in use are counted");
        }
        other => panic!("expected OverLimit, got {other}"),
    }
    assert!(err.to_string().contains("allocating 2097152 bytes"), "{err}");
    assert!(
        tensor_err.contains("allocating 2097152 bytes") && tensor_err.contains("limit of 1048576 bytes"),
        "{tensor_err}"
    );
    assert_eq!(host.alloc(2 << 20).unwrap().len(), 2 << 20, "after the limit is lifted the request succeeds");
    drop(kept);
}
