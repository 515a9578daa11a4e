//! Matrix products on float32, float16 and bfloat16 (float32 accumulation); `matmul` also on
//! float64 and the integers (computed in the dtype, integers wrapping), where a backend
//! serves them (the CPU's; the GPU's launch table has no entry for them, a named error):
//!
//! - `matmul(a, b)`, attributes `transpose_a`, `transpose_b` (bools, default false): numpy's
//!   matmul — 2-d products, batch dims broadcast, a 1-d left operand is a row vector and a
//!   1-d right operand a column vector, their unit dim dropped from the output (a transpose
//!   attribute on a 1-d operand is refused);
//! - `linear(x, weight[, bias])`: `x · weightᵀ + bias` with `weight` `[out, in]`, the
//!   optional `bias` `[out]` a third input, any leading dims on `x`;
//! - `pack_linear(weight)`: a float32 weight `[N, K]` laid out for `linear_packed`, in panels
//!   of [`PANEL`] output columns: `[⌈N / PANEL⌉, K, PANEL]`, element `(p, k, j)` holding
//!   `weight[p·PANEL + j, k]` (zero past row N-1). A constant weight is packed once, at load,
//!   instead of by every product;
//! - `linear_packed(x, panels[, bias], features = N)`: `linear(x, weight, bias)` on float32
//!   with the weight as `pack_linear` laid it out; `features` is N, which the panels round up.
//!   Each output element is `bias + Σ_k x·w` summed in the order of k.
//!
//! Declared flops: `2·m·n·k` per matrix of the batch (plus `m·n` for a bias), each complex
//! operation counting [`super::COMPLEX_OPS`] (a plain row loop on the host). The spec
//! declares no workspace; a backend that needs one (widened half operands on the CPU,
//! cuBLASLt's on CUDA) declares it through its workspace hook.

use super::{require_dtype, AttrDoc, OpDef, Spec, ARITHMETIC, FLOATS};
use crate::dtype::DType;
use crate::kernel::{saturating_product, Attrs, Cost, KernelError, Result, TensorMeta};
use crate::shape;
use std::sync::Arc;

/// The shapes of one product: the batch dims, `m × k` by `k × n`, the output's shape, and
/// whether a bias is added.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProductShape {
    /// The output's batch dims (broadcast).
    pub batch: Vec<i64>,
    /// Rows of the left factor and of the output.
    pub m: i64,
    /// Columns of the right factor and of the output.
    pub n: i64,
    /// The contracted extent.
    pub k: i64,
    /// The output's shape (vector dims dropped).
    pub out: Vec<i64>,
    /// Whether a bias row is added (linear with three inputs).
    pub bias: bool,
}

impl ProductShape {
    /// The number of matrices in the batch (saturating: the batch of an empty output may
    /// multiply past 64 bits; 0 when a batch dim is 0).
    pub fn count(&self) -> i64 {
        if self.batch.contains(&0) {
            return 0;
        }
        self.batch.iter().fold(1i64, |p, &d| p.saturating_mul(d))
    }
}

/// `matmul` or `linear` on one dtype.
#[derive(Clone, Debug, PartialEq)]
pub struct Product {
    /// `"matmul"` or `"linear"`.
    pub op: &'static str,
    /// The operands' dtype.
    pub dtype: DType,
    /// The left operand is read transposed in its last two dims.
    pub transpose_a: bool,
    /// The right operand is read transposed in its last two dims (linear: always).
    pub transpose_b: bool,
    /// linear: the right operand is `weight [out, in]`, optionally followed by a bias.
    pub linear: bool,
}

/// The rows, columns and batch dims of an operand of `shape` as the left or right factor.
fn factor(shape: &[i64], left: bool, transposed: bool) -> (i64, i64, &[i64], bool) {
    let nd = shape.len();
    if nd == 1 {
        return if left { (1, shape[0], &[], true) } else { (shape[0], 1, &[], true) };
    }
    let (rows, cols) = (shape[nd - 2], shape[nd - 1]);
    let (rows, cols) = if transposed { (cols, rows) } else { (rows, cols) };
    (rows, cols, &shape[..nd - 2], false)
}

impl Product {
    /// `matmul` of `dtype` (a float or an integer dtype).
    pub fn matmul(dtype: DType, transpose_a: bool, transpose_b: bool) -> Result<Product> {
        require_dtype("matmul", dtype, &ARITHMETIC)?;
        Ok(Product { op: "matmul", dtype, transpose_a, transpose_b, linear: false })
    }

    /// `linear` of `dtype`.
    pub fn linear(dtype: DType) -> Result<Product> {
        require_dtype("linear", dtype, &FLOATS)?;
        Ok(Product { op: "linear", dtype, transpose_a: false, transpose_b: true, linear: true })
    }

    /// The shapes of a call on `inputs`; refused naming the op and the operands.
    pub fn shapes(&self, inputs: &[TensorMeta]) -> Result<ProductShape> {
        let op = self.op;
        let counts: &[usize] = if self.linear { &[2, 3] } else { &[2] };
        if !counts.contains(&inputs.len()) {
            return Err(KernelError::Invalid(format!(
                "{op}: takes {} inputs, got {}",
                if self.linear { "2 or 3" } else { "2" },
                inputs.len()
            )));
        }
        if let Some(other) = inputs.iter().find(|m| m.dtype != self.dtype) {
            return Err(KernelError::Invalid(format!(
                "{op}: operands must share one dtype, got {} and {}",
                self.dtype, other.dtype
            )));
        }
        let (a, b) = (&inputs[0], &inputs[1]);
        if a.shape.is_empty() || b.shape.is_empty() {
            return Err(KernelError::Invalid(format!(
                "{op}: operands must have at least one dim, got {:?} and {:?}",
                a.shape, b.shape
            )));
        }
        if self.linear && b.shape.len() != 2 {
            return Err(KernelError::Invalid(format!("{op}: weight must be 2-d [out, in], got {:?}", b.shape)));
        }
        for (meta, transposed, name) in [(a, self.transpose_a, "transpose_a"), (b, self.transpose_b, "transpose_b")] {
            if transposed && meta.shape.len() == 1 {
                return Err(KernelError::Invalid(format!(
                    "{op}: {name} on a 1-d operand {:?} (a vector has no transpose)",
                    meta.shape
                )));
            }
        }
        let (m, ka, batch_a, a_vector) = factor(&a.shape, true, self.transpose_a);
        let (kb, n, batch_b, b_vector) = factor(&b.shape, false, self.transpose_b);
        if ka != kb {
            return Err(KernelError::Invalid(format!(
                "{op}: contracted dims differ: {:?} and {:?} ({ka} vs {kb})",
                a.shape, b.shape
            )));
        }
        let batch = shape::broadcast_shapes(&[batch_a, batch_b]).map_err(|_| {
            KernelError::Invalid(format!("{op}: batch dims of {:?} and {:?} do not broadcast", a.shape, b.shape))
        })?;
        let bias = inputs.len() == 3;
        if bias && inputs[2].shape != [n] {
            return Err(KernelError::Invalid(format!(
                "{op}: bias must be [{n}] for weight {:?}, got {:?}",
                b.shape, inputs[2].shape
            )));
        }
        let mut out = batch.clone();
        if !a_vector {
            out.push(m);
        }
        if !b_vector {
            out.push(n);
        }
        Ok(ProductShape { batch, m, n, k: ka, out, bias })
    }
}

impl Spec for Product {
    fn op(&self) -> &'static str {
        self.op
    }

    fn dtype(&self) -> DType {
        self.dtype
    }

    fn key(&self) -> String {
        let mut key = format!("{}:{}", self.op, self.dtype.launch_key());
        if self.transpose_a {
            key.push_str(":ta");
        }
        if self.transpose_b && !self.linear {
            key.push_str(":tb");
        }
        key
    }

    fn declare(&self, inputs: &[TensorMeta]) -> Result<Cost> {
        let shapes = self.shapes(inputs)?;
        let out = TensorMeta::new(self.dtype, &shapes.out);
        let count = shapes.count() as u64;
        let (m, n, k) = (shapes.m as u64, shapes.n as u64, shapes.k as u64);
        // saturating: broadcast operands are read in place, their products may count past 64 bits
        let bias_flops = if shapes.bias { saturating_product(&[count, m, n]) } else { 0 };
        let flops = super::flops_of(self.dtype, saturating_product(&[count, 2, m, n, k]), 1).saturating_add(bias_flops);
        let read = crate::kernel::total_bytes(inputs)?;
        Cost::simple(vec![out], read, flops)
    }

    fn uses_matrix_unit(&self) -> bool {
        true
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// Output columns per panel of `pack_linear`'s layout (three 16-lane vectors).
pub const PANEL: usize = 48;

fn invalid(message: String) -> KernelError {
    KernelError::Invalid(message)
}

/// `pack_linear(weight)` on float32.
#[derive(Clone, Debug, PartialEq)]
pub struct PackLinear;

impl PackLinear {
    /// `(n, k)` of a valid weight.
    pub fn sizes(&self, inputs: &[TensorMeta]) -> Result<(usize, usize)> {
        let [weight] = inputs else {
            return Err(invalid(format!("pack_linear: takes 1 input (weight), got {}", inputs.len())));
        };
        let (&[n, k], DType::Float32) = (&weight.shape[..], weight.dtype) else {
            return Err(invalid(format!(
                "pack_linear: wants a float32 weight [N, K], got {} {:?}",
                weight.dtype, weight.shape
            )));
        };
        Ok((n as usize, k as usize))
    }
}

impl Spec for PackLinear {
    fn op(&self) -> &'static str {
        "pack_linear"
    }

    fn dtype(&self) -> DType {
        DType::Float32
    }

    fn key(&self) -> String {
        format!("pack_linear:{}", DType::Float32.launch_key())
    }

    fn declare(&self, inputs: &[TensorMeta]) -> Result<Cost> {
        let (n, k) = self.sizes(inputs)?;
        let out = TensorMeta::new(DType::Float32, &[n.div_ceil(PANEL) as i64, k as i64, PANEL as i64]);
        Cost::simple(vec![out], inputs[0].bytes()?, 0)
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// The sizes of a `linear_packed` call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PackedShape {
    /// Rows of x (every leading dim).
    pub m: usize,
    /// Output columns (`features`).
    pub n: usize,
    /// The contracted extent.
    pub k: usize,
    /// Whether a bias row is added.
    pub bias: bool,
    /// The output's shape.
    pub out: Vec<i64>,
}

/// `linear_packed(x, panels[, bias], features)` on float32.
#[derive(Clone, Debug, PartialEq)]
pub struct LinearPacked {
    /// Output columns, N.
    pub features: usize,
}

impl LinearPacked {
    /// The sizes of a call on `inputs`; refused naming the operands that do not fit.
    pub fn sizes(&self, inputs: &[TensorMeta]) -> Result<PackedShape> {
        let (x, panels, bias) = match inputs {
            [x, panels] => (x, panels, None),
            [x, panels, bias] => (x, panels, Some(bias)),
            _ => {
                return Err(invalid(format!(
                    "linear_packed: takes 2 or 3 inputs (x, panels[, bias]), got {}",
                    inputs.len()
                )))
            }
        };
        let dtypes_ok = [Some(x), Some(panels), bias].into_iter().flatten().all(|t| t.dtype == DType::Float32);
        if !dtypes_ok {
            return Err(invalid(format!(
                "linear_packed: wants x, panels (and bias) float32, got {}, {}{}",
                x.dtype,
                panels.dtype,
                bias.map(|b| format!(", {}", b.dtype)).unwrap_or_default()
            )));
        }
        let n = self.features;
        let Some(&k) = x.shape.last() else {
            return Err(invalid("linear_packed: x must have at least one dim [.., K], got a scalar".into()));
        };
        let want = [n.div_ceil(PANEL) as i64, k, PANEL as i64];
        if panels.shape != want || bias.is_some_and(|b| b.shape != [n as i64]) {
            return Err(invalid(format!(
                "linear_packed: for x {:?} and features = {n}, panels must be {want:?} (pack_linear's layout) and bias [{n}]; got {:?}{}",
                x.shape,
                panels.shape,
                bias.map(|b| format!(", {:?}", b.shape)).unwrap_or_default()
            )));
        }
        let mut out = x.shape.clone();
        *out.last_mut().expect("x has a last dim") = n as i64;
        // saturating: the leading dims of an empty x (k = 0) may multiply past 64 bits
        let m = x.shape[..x.shape.len() - 1].iter().fold(1i64, |p, &d| p.saturating_mul(d)) as usize;
        Ok(PackedShape { m, n, k: k as usize, bias: bias.is_some(), out })
    }
}

impl Spec for LinearPacked {
    fn op(&self) -> &'static str {
        "linear_packed"
    }

    fn dtype(&self) -> DType {
        DType::Float32
    }

    fn key(&self) -> String {
        format!("linear_packed:{}", DType::Float32.launch_key())
    }

    fn declare(&self, inputs: &[TensorMeta]) -> Result<Cost> {
        let z = self.sizes(inputs)?;
        let (m, n, k) = (z.m as u64, z.n as u64, z.k as u64);
        let flops =
            saturating_product(&[2, m, n, k]).saturating_add(if z.bias { saturating_product(&[m, n]) } else { 0 });
        Cost::simple(vec![TensorMeta::new(DType::Float32, &z.out)], crate::kernel::total_bytes(inputs)?, flops)
    }

    fn uses_matrix_unit(&self) -> bool {
        true
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

fn bind_packed(name: &'static str, dtype: DType, attrs: &Attrs) -> Result<Arc<dyn Spec>> {
    require_dtype(name, dtype, &[DType::Float32])?;
    if name == "pack_linear" {
        attrs.only(name, &[])?;
        return Ok(Arc::new(PackLinear));
    }
    attrs.only(name, &["features"])?;
    let features = attrs.int(name, "features", None)?;
    let features = usize::try_from(features)
        .map_err(|_| invalid(format!("linear_packed: features must be ≥ 0, got {features}")))?;
    Ok(Arc::new(LinearPacked { features }))
}

fn bind_matmul(_: &'static str, dtype: DType, attrs: &Attrs) -> Result<Arc<dyn Spec>> {
    attrs.only("matmul", &["transpose_a", "transpose_b"])?;
    let transpose_a = attrs.bool("matmul", "transpose_a", Some(false))?;
    let transpose_b = attrs.bool("matmul", "transpose_b", Some(false))?;
    Ok(Arc::new(Product::matmul(dtype, transpose_a, transpose_b)?))
}

fn bind_linear(_: &'static str, dtype: DType, attrs: &Attrs) -> Result<Arc<dyn Spec>> {
    attrs.only("linear", &[])?;
    Ok(Arc::new(Product::linear(dtype)?))
}

/// The matrix products' entries in the catalogue.
pub(super) fn define(ops: &mut Vec<OpDef>) {
    const TRANSPOSES: &[AttrDoc] = &[
        AttrDoc { name: "transpose_a", meaning: "a read transposed in its last two dims", default: Some("false") },
        AttrDoc { name: "transpose_b", meaning: "b read transposed in its last two dims", default: Some("false") },
    ];
    ops.push(OpDef {
        name: "matmul",
        family: "matmul",
        summary: "numpy's matmul (batch dims broadcast)",
        inputs: &["a", "b"],
        attrs: TRANSPOSES,
        dtypes: |_| &ARITHMETIC,
        bind: bind_matmul,
        follows_policy: true,
    });
    ops.push(OpDef {
        name: "linear",
        family: "matmul",
        summary: "x · weightᵀ + bias",
        inputs: &["x", "weight", "bias?"],
        attrs: &[],
        dtypes: |_| &FLOATS,
        bind: bind_linear,
        follows_policy: true,
    });
    ops.push(OpDef {
        name: "pack_linear",
        family: "matmul",
        summary: "a float32 weight [N, K] laid out in panels of output columns for linear_packed",
        inputs: &["weight"],
        attrs: &[],
        dtypes: |_| &[DType::Float32],
        bind: bind_packed,
        follows_policy: false,
    });
    ops.push(OpDef {
        name: "linear_packed",
        family: "matmul",
        summary: "x · weightᵀ + bias with the weight as pack_linear laid it out",
        inputs: &["x", "panels", "bias?"],
        attrs: &[AttrDoc { name: "features", meaning: "N, the weight's rows (output columns)", default: None }],
        dtypes: |_| &[DType::Float32],
        bind: bind_packed,
        follows_policy: false,
    });
}
