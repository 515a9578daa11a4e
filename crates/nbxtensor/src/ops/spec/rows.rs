//! Row ops of transformers, on the float dtypes:
//!
//! - `softmax` and `log_softmax` along `axis` (default -1, negatives from the end): stable
//!   (the axis' maximum is subtracted first), the sum of exponentials accumulated in float64
//!   on the host;
//! - `layer_norm(x, weight, bias)` (`eps`, default 1e-5): `(x - mean) / sqrt(var + eps) · weight
//!   + bias` over the last dim, the biased variance; `rms_norm(x, weight)` (`eps`, default
//!   1e-6): `x / sqrt(mean(x²) + eps) · weight`; weight and bias have the last dim's extent and
//!   x's dtype; `add_rms_norm(x, residual, weight)` (`eps`, default 1e-6): the sum
//!   `x + residual` (of one shape, rounded to the dtype as `add` rounds it) and `rms_norm` of
//!   that rounded sum, two outputs from one pass (a decoder layer's residual add and the next
//!   norm): bit for bit what `add` then `rms_norm` give on the same backend;
//!   `add_layer_norm(x, residual, weight, bias)` (`eps`, default 1e-5): likewise the rounded
//!   sum and `layer_norm` of it (an encoder layer's residual add and its norm), bit for bit
//!   what `add` then `layer_norm` give on the same backend;
//! - `rope(x, cos, sin)` (`interleaved`, default false): the rotary position embedding of
//!   `x [..., heads, seq, head_dim]` by `cos` and `sin [seq, head_dim / 2]` of x's dtype, row
//!   `p` holding the angles of position `p`; each pair `(x1, x2)` becomes
//!   `(x1·c − x2·s, x2·c + x1·s)`, the pairs `(i, i + head_dim/2)` (GPT-NeoX, HF Llama) or, when
//!   interleaved, `(2i, 2i + 1)` (GPT-J, Meta Llama). float32, float16 and bfloat16 only.

use super::{axis_of, one_input, require_dtype, AttrDoc, OpDef, Spec, FLOATS, REALS};
use crate::dtype::DType;
use crate::kernel::{Attrs, Cost, KernelError, Result, TensorMeta};
use std::sync::Arc;

/// `softmax` or `log_softmax` along one axis.
#[derive(Clone, Debug, PartialEq)]
pub struct Softmax {
    /// log_softmax (true) or softmax.
    pub log: bool,
    /// The dtype.
    pub dtype: DType,
    /// The axis (negatives from the end).
    pub axis: i64,
}

impl Softmax {
    /// The default axis: the last.
    pub const DEFAULT_AXIS: i64 = -1;

    /// The op's name.
    pub fn name(&self) -> &'static str {
        if self.log {
            "log_softmax"
        } else {
            "softmax"
        }
    }

    /// `(A, R, B)` of `shape` around the axis: the extents before it, of it, and after it.
    pub fn split(&self, shape: &[i64]) -> Result<(usize, usize, usize)> {
        let axis = axis_of(self.name(), self.axis, shape.len()).map_err(|_| {
            KernelError::Invalid(format!("{}: axis {} is out of range for shape {shape:?}", self.name(), self.axis))
        })?;
        // an empty shape has no rows, however large its other dims (their product may pass
        // 64 bits: only the whole shape's count is bounded)
        if shape.contains(&0) {
            return Ok((0, shape[axis] as usize, 0));
        }
        let product = |dims: &[i64]| dims.iter().product::<i64>() as usize;
        Ok((product(&shape[..axis]), shape[axis] as usize, product(&shape[axis + 1..])))
    }
}

impl Spec for Softmax {
    fn op(&self) -> &'static str {
        self.name()
    }

    fn dtype(&self) -> DType {
        self.dtype
    }

    fn key(&self) -> String {
        format!("{}:{}:axis={}", self.name(), self.dtype.launch_key(), self.axis)
    }

    fn declare(&self, inputs: &[TensorMeta]) -> Result<Cost> {
        let input = one_input(self.name(), self.dtype, inputs)?;
        self.split(&input.shape)?;
        // per element: max, subtract, exp, add; then subtract, exp (or log), divide
        Cost::simple(vec![input.clone()], input.bytes()?, input.numel()?.saturating_mul(7))
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// `layer_norm`, `rms_norm`, `add_rms_norm` or `add_layer_norm` over the last dim.
#[derive(Clone, Debug, PartialEq)]
pub struct Norm {
    /// layer_norm's statistics and bias (true) or rms_norm's.
    pub layer: bool,
    /// add_rms_norm or add_layer_norm: a residual added first, the sum an output too.
    pub residual: bool,
    /// The dtype.
    pub dtype: DType,
    /// Added to the variance (or mean square) before the square root.
    pub eps: f64,
}

impl Norm {
    /// layer_norm's default eps.
    pub const LAYER_EPS: f64 = 1e-5;
    /// rms_norm's default eps.
    pub const RMS_EPS: f64 = 1e-6;

    /// A norm of `dtype`; an eps that is negative or not finite is refused.
    pub fn new(layer: bool, dtype: DType, eps: f64) -> Result<Norm> {
        Norm { layer, residual: false, dtype, eps }.checked()
    }

    /// `add_rms_norm` of `dtype`; an eps that is negative or not finite is refused.
    pub fn with_residual(dtype: DType, eps: f64) -> Result<Norm> {
        Norm { layer: false, residual: true, dtype, eps }.checked()
    }

    /// `add_layer_norm` of `dtype`; an eps that is negative or not finite is refused.
    pub fn layer_with_residual(dtype: DType, eps: f64) -> Result<Norm> {
        Norm { layer: true, residual: true, dtype, eps }.checked()
    }

    /// The norm, its dtype and eps checked, refused naming the op.
    fn checked(self) -> Result<Norm> {
        let name = self.name();
        require_dtype(name, self.dtype, &REALS)?;
        if !(self.eps >= 0.0 && self.eps.is_finite()) {
            return Err(KernelError::Invalid(format!("{name}: eps must be finite and at least 0, got {}", self.eps)));
        }
        Ok(self)
    }

    /// The op's name.
    pub fn name(&self) -> &'static str {
        match (self.layer, self.residual) {
            (true, false) => "layer_norm",
            (false, false) => "rms_norm",
            (false, true) => "add_rms_norm",
            (true, true) => "add_layer_norm",
        }
    }
}

impl Spec for Norm {
    fn op(&self) -> &'static str {
        self.name()
    }

    fn dtype(&self) -> DType {
        self.dtype
    }

    fn key(&self) -> String {
        format!("{}:{}:eps={:e}", self.name(), self.dtype.launch_key(), self.eps)
    }

    fn declare(&self, inputs: &[TensorMeta]) -> Result<Cost> {
        let name = self.name();
        let (wanted, roles) = match (self.layer, self.residual) {
            (true, false) => (3, "x, weight, bias"),
            (false, false) => (2, "x, weight"),
            (false, true) => (3, "x, residual, weight"),
            (true, true) => (4, "x, residual, weight, bias"),
        };
        if inputs.len() != wanted {
            return Err(KernelError::Invalid(format!("{name}: takes {wanted} inputs ({roles}), got {}", inputs.len())));
        }
        let x = &inputs[0];
        let Some(&n) = x.shape.last() else {
            return Err(KernelError::Invalid(format!("{name}: x is 0-d; it normalizes over its last dim")));
        };
        for (role, meta) in roles.split(", ").zip(inputs) {
            if meta.dtype != self.dtype {
                return Err(KernelError::Invalid(format!(
                    "{name}: {role} is {}, the op was bound to {}",
                    meta.dtype, self.dtype
                )));
            }
            if role == "residual" && meta.shape != x.shape {
                return Err(KernelError::Invalid(format!(
                    "{name}: residual has shape {:?}, x has {:?}: they must be equal",
                    meta.shape, x.shape
                )));
            }
            if !matches!(role, "x" | "residual") && meta.shape != [n] {
                return Err(KernelError::Invalid(format!(
                    "{name}: {role} has shape {:?}, x's last dim is {n}: it must be ({n},)",
                    meta.shape
                )));
            }
        }
        let read = crate::kernel::total_bytes(inputs)?;
        // per element: statistics (2 or 3), normalize, scale, then the shift and the
        // residual's add where they are
        let per_element = 5 + 2 * u64::from(self.layer) + 2 * u64::from(self.residual);
        let outputs = vec![x.clone(); if self.residual { 2 } else { 1 }];
        Cost::simple(outputs, read, x.numel()?.saturating_mul(per_element))
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// `rope(x, cos, sin)`.
#[derive(Clone, Debug, PartialEq)]
pub struct Rope {
    /// The dtype of x, cos and sin.
    pub dtype: DType,
    /// Pairs `(2i, 2i + 1)` (true) or `(i, i + head_dim/2)`.
    pub interleaved: bool,
}

impl Rope {
    /// `(seq, head_dim)` of a valid call; refused naming the input at fault.
    pub fn check(&self, inputs: &[TensorMeta]) -> Result<(usize, usize)> {
        let [x, cos, sin] = inputs else {
            return Err(KernelError::Invalid(format!("rope: takes 3 inputs (x, cos, sin), got {}", inputs.len())));
        };
        if x.dtype != self.dtype {
            return Err(KernelError::Invalid(format!("rope: x is {}, the op was bound to {}", x.dtype, self.dtype)));
        }
        if let Some(other) = [cos, sin].into_iter().find(|m| m.dtype != x.dtype) {
            return Err(KernelError::Invalid(format!(
                "rope: cos and sin must be {} like x, got {}",
                x.dtype, other.dtype
            )));
        }
        let nd = x.shape.len();
        if nd < 3 {
            return Err(KernelError::Invalid(format!(
                "rope: x must be [..., heads, seq, head_dim], got {:?}",
                x.shape
            )));
        }
        let (seq, dim) = (x.shape[nd - 2], x.shape[nd - 1]);
        if dim % 2 != 0 {
            return Err(KernelError::Invalid(format!("rope: head_dim {dim} of x {:?} is odd", x.shape)));
        }
        for (name, table) in [("cos", cos), ("sin", sin)] {
            if table.shape != [seq, dim / 2] {
                return Err(KernelError::Invalid(format!(
                    "rope: {name} must be [seq, head_dim/2] = [{seq}, {}] for x {:?}, got {:?}",
                    dim / 2,
                    x.shape,
                    table.shape
                )));
            }
        }
        Ok((seq as usize, dim as usize))
    }
}

impl Spec for Rope {
    fn op(&self) -> &'static str {
        "rope"
    }

    fn dtype(&self) -> DType {
        self.dtype
    }

    fn key(&self) -> String {
        format!("rope:{}{}", self.dtype.launch_key(), if self.interleaved { ":interleaved" } else { "" })
    }

    fn declare(&self, inputs: &[TensorMeta]) -> Result<Cost> {
        self.check(inputs)?;
        let read = crate::kernel::total_bytes(inputs)?;
        // 6 flops per pair: 3 per element
        let mut cost = Cost::simple(vec![inputs[0].clone()], read, inputs[0].numel()?.saturating_mul(3))?;
        cost.in_place = vec![(0, 0)];
        Ok(cost)
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

fn bind_softmax(name: &'static str, dtype: DType, attrs: &Attrs) -> Result<Arc<dyn Spec>> {
    attrs.only(name, &["axis"])?;
    require_dtype(name, dtype, &REALS)?;
    let axis = attrs.int(name, "axis", Some(Softmax::DEFAULT_AXIS))?;
    Ok(Arc::new(Softmax { log: name == "log_softmax", dtype, axis }))
}

fn bind_norm(name: &'static str, dtype: DType, attrs: &Attrs) -> Result<Arc<dyn Spec>> {
    attrs.only(name, &["eps"])?;
    let layer = matches!(name, "layer_norm" | "add_layer_norm");
    let eps = attrs.float(name, "eps", Some(if layer { Norm::LAYER_EPS } else { Norm::RMS_EPS }))?;
    match name {
        "add_rms_norm" => Ok(Arc::new(Norm::with_residual(dtype, eps)?)),
        "add_layer_norm" => Ok(Arc::new(Norm::layer_with_residual(dtype, eps)?)),
        _ => Ok(Arc::new(Norm::new(layer, dtype, eps)?)),
    }
}

fn bind_rope(_: &'static str, dtype: DType, attrs: &Attrs) -> Result<Arc<dyn Spec>> {
    attrs.only("rope", &["interleaved"])?;
    require_dtype("rope", dtype, &FLOATS)?;
    Ok(Arc::new(Rope { dtype, interleaved: attrs.bool("rope", "interleaved", Some(false))? }))
}

/// The row ops' entries in the catalogue.
pub(super) fn define(ops: &mut Vec<OpDef>) {
    const AXIS: &[AttrDoc] =
        &[AttrDoc { name: "axis", meaning: "the axis (negatives from the end)", default: Some("-1") }];
    const LAYER_EPS: &[AttrDoc] = &[AttrDoc { name: "eps", meaning: "added to the variance", default: Some("1e-5") }];
    const RMS_EPS: &[AttrDoc] = &[AttrDoc { name: "eps", meaning: "added to the mean square", default: Some("1e-6") }];
    const INTERLEAVED: &[AttrDoc] =
        &[AttrDoc { name: "interleaved", meaning: "pairs (2i, 2i+1) instead of (i, i+d/2)", default: Some("false") }];
    for (name, summary) in [
        ("softmax", "exp(x - max) / sum(exp(x - max)) along axis"),
        ("log_softmax", "x - max - log(sum(exp(x - max))) along axis"),
    ] {
        ops.push(OpDef {
            name,
            family: "rows",
            summary,
            inputs: &["x"],
            attrs: AXIS,
            dtypes: |_| &REALS,
            bind: bind_softmax,
            follows_policy: true,
        });
    }
    ops.push(OpDef {
        name: "layer_norm",
        family: "rows",
        summary: "(x - mean) / sqrt(var + eps) * weight + bias over the last dim",
        inputs: &["x", "weight", "bias"],
        attrs: LAYER_EPS,
        dtypes: |_| &REALS,
        bind: bind_norm,
        follows_policy: true,
    });
    ops.push(OpDef {
        name: "rms_norm",
        family: "rows",
        summary: "x / sqrt(mean(x²) + eps) * weight over the last dim",
        inputs: &["x", "weight"],
        attrs: RMS_EPS,
        dtypes: |_| &REALS,
        bind: bind_norm,
        follows_policy: true,
    });
    ops.push(OpDef {
        name: "add_rms_norm",
        family: "rows",
        summary: "x + residual, and rms_norm of that sum with weight over the last dim (two outputs)",
        inputs: &["x", "residual", "weight"],
        attrs: RMS_EPS,
        dtypes: |_| &REALS,
        bind: bind_norm,
        follows_policy: true,
    });
    ops.push(OpDef {
        name: "add_layer_norm",
        family: "rows",
        summary: "x + residual, and layer_norm of that sum with weight and bias over the last dim (two outputs)",
        inputs: &["x", "residual", "weight", "bias"],
        attrs: LAYER_EPS,
        dtypes: |_| &REALS,
        bind: bind_norm,
        follows_policy: true,
    });
    ops.push(OpDef {
        name: "rope",
        family: "rows",
        summary: "the rotary position embedding of x by cos and sin",
        inputs: &["x", "cos", "sin"],
        attrs: INTERLEAVED,
        dtypes: |_| &FLOATS,
        bind: bind_rope,
        follows_policy: true,
    });
}
