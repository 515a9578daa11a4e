//! The CUDA C sources of the crate: each compiled after the prelude (storage types, float
//! conversions, strided layouts), by NVRTC, for the device's exact architecture.

/// The text compiled before every source (`kernels/prelude.cuh`).
pub const PRELUDE: &str = include_str!("kernels/prelude.cuh");

/// One CUDA C source of the crate (composed by `build.rs` from `build/cuda_sources.rs`).
#[derive(Debug)]
pub struct KernelSource {
    /// Its file name (names it in compile errors and the cache key).
    pub name: &'static str,
    /// Its text.
    pub text: &'static str,
    /// Its machine code for each architecture the build ships (`NBX_SHIP_CUDA`).
    pub shipped: &'static [Shipped],
}

/// A source's machine code for one architecture, compiled into the build.
#[derive(Debug)]
pub struct Shipped {
    /// The architecture (`sm_90`).
    pub arch: &'static str,
    /// The cubin, zstd-compressed.
    pub image: &'static [u8],
}

impl KernelSource {
    /// The compressed machine code the build ships for `arch`, if it ships any.
    pub fn shipped_for(&self, arch: &str) -> Option<&'static [u8]> {
        self.shipped.iter().find(|s| s.arch == arch).map(|s| s.image)
    }
}

include!(concat!(env!("OUT_DIR"), "/cuda_sources.rs"));

/// The most dims a strided layout passed to a kernel may have (`NBX_MAX_DIMS` of the prelude).
pub const MAX_DIMS: usize = 8;

/// A strided layout as the prelude's `Layout` struct (passed by value as a kernel parameter).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Layout {
    /// Dims used.
    pub ndim: i32,
    /// Extents (the first `ndim`).
    pub shape: [i64; MAX_DIMS],
    /// Strides in elements (the first `ndim`).
    pub strides: [i64; MAX_DIMS],
    /// Offset of the first element, in elements.
    pub offset: i64,
}

impl Layout {
    /// The layout of a tensor's view; refused past [`MAX_DIMS`] dims.
    pub fn of(tensor: &crate::tensor::Tensor) -> Result<Layout, crate::kernel::KernelError> {
        Layout::new(tensor.shape(), tensor.strides(), tensor.offset())
    }

    /// A layout from its parts; refused past [`MAX_DIMS`] dims.
    pub fn new(shape: &[i64], strides: &[i64], offset: i64) -> Result<Layout, crate::kernel::KernelError> {
        if shape.len() > MAX_DIMS || strides.len() != shape.len() {
            return Err(crate::kernel::KernelError::Invalid(format!(
                "a CUDA kernel takes layouts of at most {MAX_DIMS} dims; shape {shape:?}, strides {strides:?}"
            )));
        }
        let mut layout = Layout { ndim: shape.len() as i32, offset, ..Layout::default() };
        layout.shape[..shape.len()].copy_from_slice(shape);
        layout.strides[..strides.len()].copy_from_slice(strides);
        Ok(layout)
    }
}
