//! A batch of tokenized texts as the program's inputs: ids padded to the longest, the
//! additive attention mask and the mean-pooling weights.

use crate::error::Result;
use nbxtensor::tensor::Tensor;

/// What the attention mask adds to the score of a padding key: far below any real score, so
/// its softmax weight is exactly 0 in float32 (as BERT's -10000).
pub const PADDING_SCORE: f32 = -1.0e4;

/// A batch of `b` texts padded to `s` tokens: the program's three inputs.
pub struct SentenceBatch {
    /// Token ids, `[b, s]` int64, padding id 0 past each text's end.
    pub ids: Tensor,
    /// The additive attention mask, `[b, 1, 1, s]` float32: 0 for a token, [`PADDING_SCORE`]
    /// for padding.
    pub mask: Tensor,
    /// Mean-pooling weights, `[b, 1, s]` float32: `1 / tokens` for a token, 0 for padding.
    pub pool: Tensor,
}

impl SentenceBatch {
    /// Pads `texts` (each a non-empty list of ids) to `seq` tokens, at least the longest of
    /// them (`seq` 0: exactly the longest).
    pub fn new(texts: &[&[i64]], seq: usize) -> Result<SentenceBatch> {
        let b = texts.len();
        let s = texts.iter().map(|t| t.len()).max().unwrap_or(0).max(seq);
        let (mut ids, mut mask, mut pool) = (vec![0i64; b * s], vec![PADDING_SCORE; b * s], vec![0.0f32; b * s]);
        for (row, text) in texts.iter().enumerate() {
            let weight = 1.0 / text.len() as f32;
            for (col, &id) in text.iter().enumerate() {
                ids[row * s + col] = id;
                mask[row * s + col] = 0.0;
                pool[row * s + col] = weight;
            }
        }
        let (b, s) = (b as i64, s as i64);
        Ok(SentenceBatch {
            ids: Tensor::from_vec(ids, &[b, s])?,
            mask: Tensor::from_vec(mask, &[b, 1, 1, s])?,
            pool: Tensor::from_vec(pool, &[b, 1, s])?,
        })
    }

    /// Zeros of the shapes of a `batch` × `seq` batch: what a program is traced and priced on.
    pub fn zeros(batch: usize, seq: usize) -> Result<SentenceBatch> {
        let (b, s) = (batch as i64, seq as i64);
        Ok(SentenceBatch {
            ids: Tensor::zeros(nbxtensor::DType::Int64, &[b, s])?,
            mask: Tensor::zeros(nbxtensor::DType::Float32, &[b, 1, 1, s])?,
            pool: Tensor::zeros(nbxtensor::DType::Float32, &[b, 1, s])?,
        })
    }

    /// `(batch, seq)`.
    pub fn shape(&self) -> (usize, usize) {
        (self.ids.shape()[0] as usize, self.ids.shape()[1] as usize)
    }

    /// The three inputs in the program's order.
    pub fn inputs(&self) -> [&Tensor; 3] {
        [&self.ids, &self.mask, &self.pool]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pads_to_the_longest_with_masks_that_mark_the_padding() {
        let batch = SentenceBatch::new(&[&[101, 7, 102], &[101, 102]], 0).unwrap();
        assert_eq!(batch.shape(), (2, 3));
        assert_eq!(batch.ids.to_vec::<i64>().unwrap(), [101, 7, 102, 101, 102, 0]);
        assert_eq!(batch.mask.to_vec::<f32>().unwrap(), [0.0, 0.0, 0.0, 0.0, 0.0, PADDING_SCORE]);
        assert_eq!(batch.pool.to_vec::<f32>().unwrap(), [1.0 / 3.0, 1.0 / 3.0, 1.0 / 3.0, 0.5, 0.5, 0.0]);
        let longer = SentenceBatch::new(&[&[101, 102]], 4).unwrap();
        assert_eq!(longer.shape(), (1, 4));
        assert_eq!(longer.pool.to_vec::<f32>().unwrap(), [0.5, 0.5, 0.0, 0.0]);
    }
}
