//! Views: new layouts over the same storage, never a copy.

use super::{Result, Tensor, TensorError};
use crate::shape;

impl Tensor {
    /// `dim` as an index, negatives counting from the end (`rank` dims, or `rank + 1` places
    /// for an insertion).
    fn axis(&self, dim: i64, places: usize, op: &str) -> Result<usize> {
        let resolved = if dim < 0 { dim + places as i64 } else { dim };
        if resolved < 0 || resolved >= places as i64 {
            return Err(TensorError::Invalid(format!(
                "{op}: dim {dim} is out of range for a tensor of {} dims",
                self.ndim()
            )));
        }
        Ok(resolved as usize)
    }

    fn with_layout(&self, shape: Vec<i64>, strides: Vec<i64>, offset: i64) -> Tensor {
        Tensor { storage: self.storage.clone(), dtype: self.dtype, shape, strides, offset }
    }

    /// Elements `start..start + length` of `dim` (step 1).
    pub fn narrow(&self, dim: i64, start: i64, length: i64) -> Result<Tensor> {
        let axis = self.axis(dim, self.ndim(), "narrow")?;
        let size = self.shape[axis];
        if start < 0 || length < 0 || start.checked_add(length).is_none_or(|end| end > size) {
            return Err(TensorError::Invalid(format!(
                "narrow: {start}..{start}+{length} is outside dim {dim} of size {size}"
            )));
        }
        let mut shape = self.shape.clone();
        shape[axis] = length;
        let offset = if length == 0 { self.offset } else { self.offset + start * self.strides[axis] };
        Ok(self.with_layout(shape, self.strides.clone(), offset))
    }

    /// The slice `start:stop:step` of `dim` with numpy's clamping, a view: a step other than 1
    /// multiplies the dim's stride (a negative step walks the dim backward, as numpy's views).
    pub fn slice(&self, dim: i64, start: Option<i64>, stop: Option<i64>, step: i64) -> Result<Tensor> {
        let axis = self.axis(dim, self.ndim(), "slice")?;
        let (first, count) = shape::slice_steps(start, stop, step, self.shape[axis])?;
        let (mut shape, mut strides) = (self.shape.clone(), self.strides.clone());
        shape[axis] = count;
        // with two elements or more, |step| < size, so the product stays inside the storage
        if count > 1 {
            strides[axis] *= step;
        }
        let offset = if count == 0 { self.offset } else { self.offset + first * self.strides[axis] };
        Ok(self.with_layout(shape, strides, offset))
    }

    /// The sub-tensor at `index` of `dim` (the dim is removed); negatives count from the end.
    pub fn select(&self, dim: i64, index: i64) -> Result<Tensor> {
        let axis = self.axis(dim, self.ndim(), "select")?;
        let size = self.shape[axis];
        let resolved = if index < 0 { index + size } else { index };
        if resolved < 0 || resolved >= size {
            return Err(TensorError::Invalid(format!("index {index} is out of range for dim {dim} of size {size}")));
        }
        let (mut shape, mut strides) = (self.shape.clone(), self.strides.clone());
        shape.remove(axis);
        strides.remove(axis);
        Ok(self.with_layout(shape, strides, self.offset + resolved * self.strides[axis]))
    }

    /// The same elements in `new_shape` (one `-1` inferred), as a view; refused with "copy
    /// first" where the layout has no such view (ATen's rule).
    pub fn reshape(&self, new_shape: &[i64]) -> Result<Tensor> {
        match shape::view_strides(&self.shape, &self.strides, new_shape)? {
            Some(strides) => {
                let shape = shape::infer_shape(new_shape, self.numel())?;
                Ok(self.with_layout(shape, strides, self.offset))
            }
            None => Err(TensorError::CopyFirst(format!(
                "reshape {:?} -> {new_shape:?}: the strides {:?} have no view of that shape; copy first (contiguous())",
                self.shape, self.strides
            ))),
        }
    }

    /// The dims in a new order (`dims` a permutation of `0..ndim`, negatives allowed).
    pub fn permute(&self, dims: &[i64]) -> Result<Tensor> {
        if dims.len() != self.ndim() {
            return Err(TensorError::Invalid(format!(
                "permute: {dims:?} names {} dims of a tensor of {}",
                dims.len(),
                self.ndim()
            )));
        }
        let mut seen = vec![false; self.ndim()];
        let (mut shape, mut strides) = (Vec::with_capacity(dims.len()), Vec::with_capacity(dims.len()));
        for &dim in dims {
            let axis = self.axis(dim, self.ndim(), "permute")?;
            if std::mem::replace(&mut seen[axis], true) {
                return Err(TensorError::Invalid(format!("permute: {dims:?} names dim {axis} twice")));
            }
            shape.push(self.shape[axis]);
            strides.push(self.strides[axis]);
        }
        Ok(self.with_layout(shape, strides, self.offset))
    }

    /// Dims `a` and `b` swapped.
    pub fn transpose(&self, a: i64, b: i64) -> Result<Tensor> {
        let (a, b) = (self.axis(a, self.ndim(), "transpose")?, self.axis(b, self.ndim(), "transpose")?);
        let mut order: Vec<i64> = (0..self.ndim() as i64).collect();
        order.swap(a, b);
        self.permute(&order)
    }

    /// The tensor broadcast to `shape` (stride 0 on stretched and added dims), without a copy.
    pub fn expand(&self, target: &[i64]) -> Result<Tensor> {
        let strides = shape::broadcast_strides(&self.shape, &self.strides, target)?;
        Ok(self.with_layout(target.to_vec(), strides, self.offset))
    }

    /// Dims of extent 1 removed: `dim` alone (refused unless its extent is 1), or all of them.
    pub fn squeeze(&self, dim: Option<i64>) -> Result<Tensor> {
        let keep: Vec<usize> = match dim {
            Some(dim) => {
                let axis = self.axis(dim, self.ndim(), "squeeze")?;
                if self.shape[axis] != 1 {
                    return Err(TensorError::Invalid(format!(
                        "squeeze: dim {dim} has extent {}, not 1",
                        self.shape[axis]
                    )));
                }
                (0..self.ndim()).filter(|&i| i != axis).collect()
            }
            None => (0..self.ndim()).filter(|&i| self.shape[i] != 1).collect(),
        };
        Ok(self.with_layout(
            keep.iter().map(|&i| self.shape[i]).collect(),
            keep.iter().map(|&i| self.strides[i]).collect(),
            self.offset,
        ))
    }

    /// A dim of extent 1 inserted at `dim` (`0..=ndim`, negatives counting from the end).
    pub fn unsqueeze(&self, dim: i64) -> Result<Tensor> {
        let axis = self.axis(dim, self.ndim() + 1, "unsqueeze")?;
        let stride = if axis < self.ndim() {
            self.shape[axis].checked_mul(self.strides[axis]).ok_or_else(|| {
                TensorError::Invalid(format!(
                    "unsqueeze: the stride of the new dim ({} × {}) overflows 64 bits",
                    self.shape[axis], self.strides[axis]
                ))
            })?
        } else {
            1
        };
        let (mut shape, mut strides) = (self.shape.clone(), self.strides.clone());
        shape.insert(axis, 1);
        strides.insert(axis, stride);
        Ok(self.with_layout(shape, strides, self.offset))
    }

    /// The same bytes read as `dtype`, which must have the same width (bfloat16 as uint16,
    /// float32 as int32 …): a view.
    pub fn view_dtype(&self, dtype: crate::dtype::DType) -> Result<Tensor> {
        if dtype.itemsize()? != self.dtype.itemsize()? {
            return Err(TensorError::Invalid(format!(
                "view_dtype: {} elements are {} bytes, {} elements {}: only dtypes of one width share a view",
                self.dtype,
                self.dtype.itemsize()?,
                dtype,
                dtype.itemsize()?
            )));
        }
        Ok(Tensor {
            storage: self.storage.clone(),
            dtype,
            shape: self.shape.clone(),
            strides: self.strides.clone(),
            offset: self.offset,
        })
    }
}
