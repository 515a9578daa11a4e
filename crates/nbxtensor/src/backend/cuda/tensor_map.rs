//! Descriptors of the tensor memory accelerator (TMA, compute capability 9.0 on): how a kernel's
//! bulk copies see a 2-D tensor in device memory. Encoded on the host (`cuTensorMapEncodeTiled`)
//! and passed by value as a `__grid_constant__` kernel parameter ([`Args::tensor_map`]), so a
//! launch recorded into a graph keeps its descriptor.

use super::memory::check;
use super::Args;
use crate::kernel::KernelError;
use cudarc::driver::sys;

/// How a box's rows land in shared memory: 16-byte chunks permuted within 64 or 128 bytes
/// (the layouts `wgmma` descriptors and bank-conflict-free reads expect).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Swizzle {
    /// Chunk bits 4–5 of an address XORed with its bits 7–8.
    Bytes64,
    /// Chunk bits 4–6 of an address XORed with its bits 7–9.
    Bytes128,
}

impl Swizzle {
    fn bytes(self) -> u64 {
        match self {
            Swizzle::Bytes64 => 64,
            Swizzle::Bytes128 => 128,
        }
    }

    fn encoded(self) -> sys::CUtensorMapSwizzle {
        match self {
            Swizzle::Bytes64 => sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_64B,
            Swizzle::Bytes128 => sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_128B,
        }
    }
}

/// A 2-D tensor as TMA copies read it: `rows` rows of `row_elements` elements, boxes of
/// `box_rows` × `box_elements`; elements past the ends read as zeros.
#[derive(Clone, Copy)]
pub struct TensorMap(sys::CUtensorMap);

/// The most elements a TMA box takes along a dimension.
const BOX_MOST: u32 = 256;

impl TensorMap {
    /// The map of `rows` rows of `row_elements` elements of `element_bytes` (1 or 2) bytes at
    /// device `address`, rows `row_bytes` apart, copied in boxes of `boxed` = [elements, rows]
    /// that land in shared memory with `swizzle` (a box row of at most the swizzle's bytes).
    /// Refused, naming the rule, where TMA cannot read the tensor so: an address or row pitch
    /// not a multiple of 16 bytes, a box over 256 or wider than the swizzle.
    pub fn tiled_2d(
        what: &str,
        address: u64,
        element_bytes: u64,
        row_elements: u64,
        rows: u64,
        row_bytes: u64,
        boxed: [u32; 2],
        swizzle: Swizzle,
    ) -> Result<TensorMap, KernelError> {
        let refuse = |why: String| Err(KernelError::Invalid(format!("{what}: a TMA descriptor {why}")));
        let data_type = match element_bytes {
            1 => sys::CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_UINT8,
            2 => sys::CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_UINT16,
            other => return refuse(format!("takes 1- or 2-byte elements, not {other}")),
        };
        if address % 16 != 0 || row_bytes % 16 != 0 {
            return refuse(format!(
                "needs a 16-byte aligned address and row pitch (address {address:#x}, pitch {row_bytes} bytes)"
            ));
        }
        if row_elements == 0 || rows == 0 || row_elements >= 1 << 32 || rows >= 1 << 32 {
            return refuse(format!("takes 1 to 2^32 − 1 elements a dimension, not {row_elements} × {rows}"));
        }
        if boxed.iter().any(|&b| b == 0 || b > BOX_MOST) || u64::from(boxed[0]) * element_bytes > swizzle.bytes() {
            return refuse(format!(
                "box {} × {} does not fit: at most {BOX_MOST} a dimension and {} bytes a box row",
                boxed[0],
                boxed[1],
                swizzle.bytes()
            ));
        }
        let dims = [row_elements, rows];
        let pitches = [row_bytes];
        let unit = [1u32, 1];
        // SAFETY: an all-zero CUtensorMap is plain data, overwritten by the encoding below.
        let mut map: sys::CUtensorMap = unsafe { std::mem::zeroed() };
        // SAFETY: every array has the rank's length (the pitches one less); the address is not
        // dereferenced on the host.
        let result = unsafe {
            sys::cuTensorMapEncodeTiled(
                &mut map,
                data_type,
                2,
                address as *mut std::ffi::c_void,
                dims.as_ptr(),
                pitches.as_ptr(),
                boxed.as_ptr(),
                unit.as_ptr(),
                sys::CUtensorMapInterleave::CU_TENSOR_MAP_INTERLEAVE_NONE,
                swizzle.encoded(),
                sys::CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                sys::CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
            )
        };
        check(result, "cuTensorMapEncodeTiled").map_err(|e| KernelError::Device(format!("{what}: {e}")))?;
        Ok(TensorMap(map))
    }
}

impl Args {
    /// A TMA descriptor passed by value (the kernel's `const __grid_constant__` parameter).
    pub fn tensor_map(&mut self, map: &TensorMap) -> &mut Args {
        self.value(&map.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptors_tma_cannot_read_are_refused_by_name() {
        let map = |address, element_bytes, row_bytes, boxed, swizzle| {
            TensorMap::tiled_2d("matmul_int4", address, element_bytes, 4096, 64, row_bytes, boxed, swizzle)
                .err()
                .map(|e| e.to_string())
        };
        let unaligned = map(0x1008, 2, 8192, [64, 64], Swizzle::Bytes128).unwrap();
        assert!(unaligned.contains("16-byte aligned") && unaligned.contains("0x1008"), "{unaligned}");
        let pitch = map(0x1000, 2, 8200, [64, 64], Swizzle::Bytes128).unwrap();
        assert!(pitch.contains("pitch 8200"), "{pitch}");
        let wide = map(0x1000, 2, 8192, [128, 64], Swizzle::Bytes128).unwrap();
        assert!(wide.contains("box 128 × 64") && wide.contains("128 bytes a box row"), "{wide}");
        let tall = map(0x1000, 1, 4096, [64, 512], Swizzle::Bytes64).unwrap();
        assert!(tall.contains("box 64 × 512"), "{tall}");
        let element = map(0x1000, 4, 16384, [16, 64], Swizzle::Bytes64).unwrap();
        assert!(element.contains("1- or 2-byte elements, not 4"), "{element}");
    }
}
