//! DLPack capsules built from bytes: every field of a `DLManagedTensorVersioned` (version,
//! flags, device, dtype, ndim, shape, strides or none, byte offset, data pointer) taken from
//! the input. The data pointer points into a buffer of this target (or is null), and the shape
//! and stride arrays always hold 64 entries, so a producer's memory is never lied about except
//! through the fields the import must check.
//!
//! The target fails on a panic, on a deleter not called exactly once, and on an import that
//! accepts a layout whose bytes an independent computation (in i128, from the raw fields) puts
//! outside the address space; when the accepted bytes lie inside the buffer, every element
//! read through the tensor must be the byte-for-byte element the layout names. And a capsule
//! this target knows to be valid (host memory, a known dtype, every byte inside the buffer) must
//! be accepted.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nbxtensor::tensor::dlpack::{
    import_versioned, DLDataType, DLDevice, DLManagedTensorVersioned, DLPackVersion, DLTensor, KDL_CPU,
};
use std::cell::Cell;
use std::ffi::c_void;

const BUFFER: usize = 4096;

thread_local! {
    static DELETED: Cell<u32> = const { Cell::new(0) };
}

unsafe extern "C" fn count(_: *mut DLManagedTensorVersioned) {
    DELETED.with(|d| d.set(d.get() + 1));
}

/// Reads fixed-width fields off the input, zeros once it runs out.
struct Fields<'a>(&'a [u8]);

impl Fields<'_> {
    fn take<const N: usize>(&mut self) -> [u8; N] {
        let mut out = [0u8; N];
        let n = N.min(self.0.len());
        out[..n].copy_from_slice(&self.0[..n]);
        self.0 = &self.0[n..];
        out
    }
    fn u8(&mut self) -> u8 {
        self.take::<1>()[0]
    }
    fn i64(&mut self) -> i64 {
        i64::from_le_bytes(self.take())
    }
    /// Mostly small values, sometimes any 64 bits (the edges are where bugs live).
    fn dim(&mut self) -> i64 {
        match self.u8() % 8 {
            0 => self.i64(),
            1 => [i64::MIN, i64::MAX, 1 << 62, -(1 << 62), 1 << 60, -(1 << 60), 1 << 32, -1][self.u8() as usize % 8],
            _ => i64::from(self.u8() % 9) - 2,
        }
    }
}

fuzz_target!(|input: &[u8]| {
    let mut f = Fields(input);
    let buffer: Vec<u8> = (0..BUFFER).map(|i| (i * 31 % 251) as u8).collect();
    let major = if f.u8() % 8 == 0 { u32::from(f.u8()) } else { 1 };
    let flags = u64::from(f.u8() & 3);
    let device_type = if f.u8() % 8 == 0 { i32::from(f.u8()) } else { KDL_CPU };
    let (code, bits, lanes) = match f.u8() % 6 {
        0 => (f.u8(), f.u8(), u16::from(f.u8())),
        1 => (0, 8, 1),
        2 => (2, 16, 1),
        3 => (5, 128, 1),
        4 => (1, 64, 1),
        _ => (2, 32, 1),
    };
    let ndim: i32 = match f.u8() % 8 {
        0 => i32::from_le_bytes(f.take()),
        1 => 64 + i32::from(f.u8() % 4),
        _ => i32::from(f.u8() % 5),
    };
    let mut shape = [0i64; 64];
    let mut strides = [0i64; 64];
    for i in 0..usize::try_from(ndim).unwrap_or(0).min(64) {
        shape[i] = f.dim();
        strides[i] = f.dim();
    }
    let with_strides = f.u8() % 4 != 0;
    let byte_offset = match f.u8() % 4 {
        0 => u64::from_le_bytes(f.take()),
        _ => u64::from(f.u8()) * 4,
    };
    let start = usize::from(u16::from_le_bytes(f.take())) % BUFFER;
    let data = if f.u8() % 16 == 0 { std::ptr::null_mut() } else { buffer.as_ptr().wrapping_add(start) as *mut c_void };

    let mut managed = DLManagedTensorVersioned {
        version: DLPackVersion { major, minor: 1 },
        manager_ctx: std::ptr::null_mut(),
        deleter: Some(count),
        flags,
        dl_tensor: DLTensor {
            data,
            device: DLDevice { device_type, device_id: 0 },
            ndim,
            dtype: DLDataType { code, bits, lanes },
            shape: shape.as_mut_ptr(),
            strides: if with_strides { strides.as_mut_ptr() } else { std::ptr::null_mut() },
            byte_offset,
        },
    };
    DELETED.with(|d| d.set(0));
    // SAFETY: the managed tensor, its arrays and its buffer outlive the import's tensor.
    let imported = unsafe { import_versioned(&mut managed) };

    // an independent reading of the raw fields
    let n = usize::try_from(ndim).ok().filter(|&n| n <= 64);
    let dims = n.map(|n| shape[..n].to_vec());
    let known = n.is_some() && major == 1 && device_type == KDL_CPU;
    let itemsize = nbxtensor::DType::from_dlpack(code, bits, lanes).ok().and_then(|d| d.itemsize().ok());

    match &imported {
        Ok(tensor) => {
            let dims = dims.clone().expect("an import with more than 64 dims or fewer than 0 was accepted");
            assert_eq!(tensor.shape(), &dims[..]);
            let itemsize = itemsize.expect("an import of a dtype without a width was accepted") as i128;
            if tensor.numel() > 0 {
                let first = data as usize as i128 + i128::from(byte_offset);
                let strides = tensor.strides();
                if with_strides {
                    assert_eq!(strides, &managed.dl_tensor_strides()[..dims.len()]);
                }
                let (mut low, mut high) = (first, first);
                for (&size, &stride) in dims.iter().zip(strides) {
                    let reach = i128::from(size - 1) * i128::from(stride) * itemsize;
                    if reach < 0 {
                        low += reach
                    } else {
                        high += reach
                    }
                }
                assert!(
                    low >= 0 && high + itemsize <= 1i128 << 57,
                    "an import outside the address space was accepted: {low}..{high}"
                );
                assert_eq!(tensor.data_ptr() as usize as i128, first, "the first element moved");
                let inside = buffer.as_ptr() as i128;
                // (a kDLCUDA capsule imports as a GPU tensor, whose bytes this machine may not reach)
                let on_host = tensor.device() == nbxtensor::memory::Device::CPU;
                if on_host && low >= inside && high + itemsize <= inside + BUFFER as i128 && tensor.numel() <= 1 << 16 {
                    let bytes = tensor.to_bytes().expect("a small host copy");
                    // the last element, read by hand
                    let last: Vec<i64> = dims.iter().map(|&d| d - 1).collect();
                    let at = first
                        + last.iter().zip(strides).map(|(&i, &s)| i128::from(i) * i128::from(s)).sum::<i128>()
                            * itemsize;
                    let at = (at - inside) as usize;
                    assert_eq!(&bytes[bytes.len() - itemsize as usize..], &buffer[at..at + itemsize as usize]);
                }
            }
        }
        Err(_) => {
            // a capsule known to be valid must be accepted
            if let (true, Some(dims), Some(itemsize), false) = (known, dims, itemsize, data.is_null()) {
                if !with_strides && dims.iter().all(|&d| (0..=8).contains(&d)) {
                    // in u128: 64 dims of up to 8 overflow 64 bits, as does a wild byte offset
                    let numel: u128 = dims.iter().fold(1u128, |n, &d| n.saturating_mul(d as u128)).min(1 << 64);
                    let end = start as u128 + u128::from(byte_offset) + numel * itemsize as u128;
                    if end <= BUFFER as u128 {
                        panic!("a valid contiguous capsule was refused: {:?}", imported.err());
                    }
                }
            }
        }
    }
    drop(imported);
    assert_eq!(DELETED.with(Cell::get), 1, "the deleter must run exactly once");
});

/// The strides array as given.
trait Strides {
    fn dl_tensor_strides(&self) -> Vec<i64>;
}

impl Strides for DLManagedTensorVersioned {
    fn dl_tensor_strides(&self) -> Vec<i64> {
        let n = usize::try_from(self.dl_tensor.ndim).unwrap_or(0).min(64);
        // SAFETY: the target's strides array holds 64 entries.
        unsafe { std::slice::from_raw_parts(self.dl_tensor.strides, n) }.to_vec()
    }
}
