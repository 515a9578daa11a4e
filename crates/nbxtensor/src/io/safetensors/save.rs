//! Writing tensors: each tensor's elements in row-major order under its dtype's safetensors
//! code, serialised by the `safetensors` crate (header padded to 8 bytes, tensors ordered by
//! descending alignment, so every tensor of a file written here loads without a copy).

use super::header::METADATA_KEY;
use crate::io::{IoError, Result};
use crate::tensor::{Tensor, TensorError};
use safetensors::tensor::SafeTensorError;
use safetensors::{Dtype, View};
use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::path::Path;

/// A tensor's bytes in the form the `safetensors` crate serialises.
struct Contiguous {
    dtype: Dtype,
    shape: Vec<usize>,
    bytes: Vec<u8>,
}

impl View for &Contiguous {
    fn dtype(&self) -> Dtype {
        self.dtype
    }

    fn shape(&self) -> &[usize] {
        &self.shape
    }

    fn data(&self) -> Cow<'_, [u8]> {
        Cow::Borrowed(&self.bytes)
    }

    fn data_len(&self) -> usize {
        self.bytes.len()
    }
}

/// Writes `tensors` (any layout; their elements in row-major order) and the optional string
/// `metadata` to a safetensors file at `path`, replacing it (written beside it, then renamed,
/// so tensors still mapped from an older file keep their bytes). A dtype the format has no
/// code for (complex128, packed representations), a repeated name or the reserved name
/// `__metadata__` is refused by name before anything is written.
///
/// ```
/// use nbxtensor::io::safetensors::save;
/// use nbxtensor::tensor::Tensor;
/// use nbxtensor::DType;
/// let path = std::env::temp_dir().join(format!("nbx_save_doc_{}.safetensors", std::process::id()));
/// let z = Tensor::zeros(DType::Complex128, &[2])?;
/// let err = save(&path, &[("z", &z)], None).unwrap_err().to_string();
/// assert!(err.contains("'z'") && err.contains("complex128"));
/// # Ok::<(), nbxtensor::Error>(())
/// ```
pub fn save(
    path: impl AsRef<Path>,
    tensors: &[(&str, &Tensor)],
    metadata: Option<HashMap<String, String>>,
) -> Result<()> {
    let path = path.as_ref();
    let mut seen = HashSet::with_capacity(tensors.len());
    let mut prepared = Vec::with_capacity(tensors.len());
    for &(name, tensor) in tensors {
        if name == METADATA_KEY {
            return Err(IoError::Unsupported(format!(
                "save: '{METADATA_KEY}' is reserved for the metadata, not a tensor name"
            )));
        }
        if !seen.insert(name) {
            return Err(IoError::Unsupported(format!("save: the tensor name '{name}' is given twice")));
        }
        prepared.push((name, contiguous(name, tensor)?));
    }
    let views = prepared.iter().map(|(name, c)| (*name, c));
    safetensors::serialize_to_file(views, metadata, path).map_err(|e| match e {
        SafeTensorError::IoError(e) => IoError::os(format!("cannot write '{}'", path.display()), &e),
        other => IoError::Malformed(format!("save '{}': {other}", path.display())),
    })
}

/// The tensor's code, shape and row-major bytes; a dtype without a safetensors code is refused.
fn contiguous(name: &str, tensor: &Tensor) -> Result<Contiguous> {
    let dtype = tensor.dtype();
    let code = dtype
        .safetensors_code()
        .map_err(|e| IoError::Unsupported(format!("save: tensor '{name}' cannot be stored in safetensors: {e}")))?;
    let dtype_code: Dtype = serde_json::from_value(serde_json::Value::String(code.to_string())).map_err(|e| {
        IoError::Unsupported(format!("save: tensor '{name}': the safetensors crate has no dtype {code}: {e}"))
    })?;
    // a tensor's dims are never negative (checked when made)
    let shape = tensor.shape().iter().map(|&d| d as usize).collect();
    let bytes = tensor.to_bytes().map_err(|e: TensorError| IoError::Tensor(e))?;
    Ok(Contiguous { dtype: dtype_code, shape, bytes })
}
