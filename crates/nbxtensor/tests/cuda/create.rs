//! `iota` on the GPU against the CPU backend (which rounds each float64 value once);
//! skipped, saying so, where there is no CUDA device.

use super::common::*;
use nbxtensor::memory::Device;
use nbxtensor::tensor::Tensor;
use nbxtensor::DType;

#[test]
fn iota_matches_the_cpu_bit_for_bit() {
    let Some(device) = gpu("iota_matches_the_cpu_bit_for_bit") else { return };
    // counts below one block, of several blocks, and past one grid-stride sweep
    for n in [0i64, 1, 255, 4099, 3_000_001] {
        for dtype in [DType::Float32, DType::Float16, DType::Bfloat16] {
            for (start, step) in
                [(0.0, 1.0), (-3.25, 0.1), (1e4, -7.3e-3), (1.0 + 2f64.powi(-11) + 2f64.powi(-30), 0.0)]
            {
                let gpu = Tensor::iota(n, start, step, dtype, device).unwrap();
                assert_eq!((gpu.device(), gpu.shape()), (device, &[n][..]));
                let cpu = Tensor::iota(n, start, step, dtype, Device::CPU).unwrap();
                assert_eq!(gpu.to(Device::CPU).unwrap().to_bytes().unwrap(), cpu.to_bytes().unwrap(), "{dtype} {n}");
            }
        }
        for dtype in [
            DType::Int8,
            DType::Int16,
            DType::Int32,
            DType::Int64,
            DType::Uint8,
            DType::Uint16,
            DType::Uint32,
            DType::Uint64,
        ] {
            for (start, step) in [(0i64, 1i64), (120, 3), (5, -2), (i64::MAX - 4, 1)] {
                let gpu = Tensor::iota(n, start, step, dtype, device).unwrap();
                let cpu = Tensor::iota(n, start, step, dtype, Device::CPU).unwrap();
                assert_eq!(gpu.to(Device::CPU).unwrap().to_bytes().unwrap(), cpu.to_bytes().unwrap(), "{dtype} {n}");
            }
        }
    }
    let values = values(&Tensor::iota(4, 0.5, 0.25, DType::Float32, device).unwrap());
    assert_eq!(values, vec![0.5, 0.75, 1.0, 1.25]);
}
