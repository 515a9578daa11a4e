//! Sentence-transformers' head as ops: the mean of the token states over the attention mask
//! (a batched product with the pooling weights), then L2 normalisation
//! (`x / max(‖x‖, 1e-12)`, as `torch.nn.functional.normalize`).

use nbxtensor::kernel::{AttrValue, Attrs, KernelError};
use nbxtensor::ops;
use nbxtensor::tensor::Tensor;

/// The floor of the norm a sentence vector is divided by (`F.normalize`'s `eps`).
pub const NORM_FLOOR: f32 = 1e-12;

fn op(name: &str, attrs: &Attrs, inputs: &[&Tensor]) -> Result<Tensor, KernelError> {
    Ok(ops::call(name, attrs, inputs)?.remove(0))
}

/// `[b, hidden]` unit vectors from token states `hidden` (`[b, s, hidden]`) and pooling
/// weights `pool` (`[b, 1, s]`, `1/tokens` on tokens, 0 on padding); `floor` is a `[1]`
/// float32 tensor holding [`NORM_FLOOR`].
pub fn mean_normalized(hidden: &Tensor, pool: &Tensor, floor: &Tensor) -> Result<Tensor, KernelError> {
    let mean = op("matmul", &Attrs::new(), &[pool, hidden])?; // [b, 1, h]
    let squares = op("matmul", &Attrs::new().with("transpose_b", AttrValue::Bool(true)), &[&mean, &mean])?; // [b, 1, 1]
    let norm = op("maximum", &Attrs::new(), &[&op("sqrt", &Attrs::new(), &[&squares])?, floor])?;
    let unit = op("div", &Attrs::new(), &[&mean, &norm])?;
    match *unit.shape() {
        [b, 1, h] => Ok(unit.reshape(&[b, h])?),
        ref other => Err(KernelError::Invalid(format!("pooling: expected [b, 1, hidden] means, got {other:?}"))),
    }
}
