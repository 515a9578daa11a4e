//! Products against packed 4-bit weights in the table's `int4-g128-asym` layout, and the
//! packer that makes them:
//!
//! - `matmul_int4(x, packed, scales, minima)`: `x [.., K]` (float32/float16/bfloat16) times
//!   `Wᵀ`, `W [N, K]` stored as `packed` codes `[N, K·bits/8]` (low bits first) with `scales`
//!   and `minima` `[N, K/group]` (`w = code·scale + minimum`) → `[.., N]` of x's dtype;
//!   dispatched on x's dtype. Declared flops: `2·m·n·k` for the product and `3·m·n·groups`
//!   for the scales and minima; each backend declares its own workspace.
//! - `pack_int4(weight [N, K])` (a float dtype) → `(packed, scales, minima)`: per group the
//!   minimum and `(max − min) / (2^bits − 1)` rounded to the scale dtype, codes rounded to
//!   nearest against those rounded values and clamped to the code range.
//!
//! - `matmul_int8(x, codes, scales[, bias])`: `x [.., K]` float32 times `Wᵀ`, `W [N, K]`
//!   stored as signed `codes [N, K]` with one float32 scale per row (`w = code·scale`, the
//!   table's `int8-per-channel`), plus an optional float32 `bias [N]` → `[.., N]` float32.
//!   Dynamically quantized: each row of x is quantized on the fly to unsigned 8-bit codes over
//!   its own range (which includes 0), `x ≈ (q − zero)·step`, and the products are summed
//!   exactly in 32-bit integers: `y = step·scale·(Σ q·code − zero·Σ code) + bias`. K is at
//!   most [`INT8_MAX_DEPTH`], where those sums cannot overflow. Declared flops: `2·m·n·k`
//!   for the product, `4·m·k` for the quantization of x, `3·m·n` for the scaling (and `m·n`
//!   for a bias); each backend declares its own workspace.
//! - `pack_int8(weight [N, K])` (a float dtype) → `(codes, scales)`: per row, the scale
//!   `max |w| / 127` in float32 and codes rounded to nearest against it, in −127..=127.
//!
//! Bits, group, code storage and scale dtype are read from the dtype table
//! (`DType::Int4G128Asym.packed()`, `DType::Int8PerChannel.packed()`), never written here.

use super::{require_dtype, OpDef, Spec, FLOATS};
use crate::dtype::DType;
use crate::facts::Group;
use crate::kernel::{saturating_product, Attrs, Cost, KernelError, Result, TensorMeta};
use std::sync::Arc;

fn invalid(message: String) -> KernelError {
    KernelError::Invalid(message)
}

/// The packed int4 layout as kernels use it, read from the dtype table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Int4Layout {
    /// Bits per code.
    pub bits: u32,
    /// Consecutive elements sharing a scale and a minimum.
    pub group: usize,
    /// Codes per storage byte.
    pub per_byte: usize,
}

impl Int4Layout {
    /// The `int4-g128-asym` layout from the table, checked to be what the kernels serve:
    /// uint8 codes, float16 scales and minima, a group of consecutive elements.
    pub fn of_table(op: &str) -> Result<Int4Layout> {
        let dtype = DType::Int4G128Asym;
        let packed = dtype.packed().map_err(|e| invalid(format!("{op}: {e}")))?;
        let named = |name: &str| DType::from_name(name).map_err(|e| invalid(format!("{op}: {e}")));
        let minimum = packed.minimum.as_deref().map(named).transpose()?;
        let storage = named(&packed.storage)?;
        if named(&packed.scale)? != DType::Float16 || minimum != Some(DType::Float16) || storage != DType::Uint8 {
            return Err(invalid(format!(
                "{op}: {dtype} in the table is not uint8 codes with float16 scales and minima"
            )));
        }
        let Group::Elements(group) = packed.group else {
            return Err(invalid(format!("{op}: {dtype} in the table has no fixed group size")));
        };
        let byte_bits = storage.bits();
        if packed.bits == 0 || byte_bits % packed.bits != 0 {
            return Err(invalid(format!("{op}: {} bits do not divide a {storage} byte", packed.bits)));
        }
        Ok(Int4Layout { bits: packed.bits, group: group as usize, per_byte: (byte_bits / packed.bits) as usize })
    }

    /// The largest code.
    pub fn levels(&self) -> u32 {
        (1 << self.bits) - 1
    }

    /// Code `i` of a row of packed bytes.
    #[inline(always)]
    pub fn code(&self, row: &[u8], i: usize) -> u32 {
        (u32::from(row[i / self.per_byte]) >> ((i % self.per_byte) as u32 * self.bits)) & self.levels()
    }

    /// The groups of a row of `k` elements; a `k` that is not a whole number of groups is
    /// refused naming `what`.
    pub fn groups(&self, op: &str, k: i64, what: &str) -> Result<usize> {
        if k < 0 || k as usize % self.group != 0 {
            return Err(invalid(format!("{op}: K = {k} of {what} is not a multiple of the group size {}", self.group)));
        }
        Ok(k as usize / self.group)
    }
}

/// The sizes of a `matmul_int4` call: rows of x, outputs, contracted extent, groups per row,
/// the output's shape.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Int4Shape {
    /// Rows of x (every leading dim).
    pub m: usize,
    /// Output columns (rows of W).
    pub n: usize,
    /// The contracted extent.
    pub k: usize,
    /// Groups per row of W.
    pub groups: usize,
    /// The output's shape.
    pub out: Vec<i64>,
}

/// `matmul_int4(x, packed, scales, minima)` on x's dtype.
#[derive(Clone, Debug, PartialEq)]
pub struct MatmulInt4 {
    /// x's dtype (and the output's).
    pub dtype: DType,
    /// The packed layout.
    pub layout: Int4Layout,
}

impl MatmulInt4 {
    /// The sizes of a call on `inputs`; refused naming the operands that do not fit.
    pub fn sizes(&self, inputs: &[TensorMeta]) -> Result<Int4Shape> {
        let [x, packed, scales, minima] = inputs else {
            return Err(invalid(format!(
                "matmul_int4: takes 4 inputs (x, packed, scales, minima), got {}",
                inputs.len()
            )));
        };
        if x.dtype != self.dtype
            || packed.dtype != DType::Uint8
            || scales.dtype != DType::Float16
            || minima.dtype != DType::Float16
        {
            return Err(invalid(format!(
                "matmul_int4: wants x {}, packed uint8, scales and minima float16; got {}, {}, {}, {}",
                self.dtype, x.dtype, packed.dtype, scales.dtype, minima.dtype
            )));
        }
        let (Some(&k), &[n, bytes]) = (x.shape.last(), &packed.shape[..]) else {
            return Err(invalid(format!(
                "matmul_int4: x must be [.., K] and packed [N, K/{}], got {:?} and {:?}",
                self.layout.per_byte, x.shape, packed.shape
            )));
        };
        let groups = self.layout.groups("matmul_int4", k, &format!("x {:?}", x.shape))?;
        let per_byte = self.layout.per_byte as i64;
        if bytes * per_byte != k || scales.shape != [n, groups as i64] || minima.shape != scales.shape {
            return Err(invalid(format!(
                "matmul_int4: for x {:?} packed must be [N, {}] and scales, minima [N, {groups}]; got {:?}, {:?}, {:?}",
                x.shape,
                k / per_byte,
                packed.shape,
                scales.shape,
                minima.shape
            )));
        }
        let mut out = x.shape.clone();
        *out.last_mut().expect("x has a last dim") = n;
        // saturating: the leading dims of an empty x (k = 0) may multiply past 64 bits
        let m = x.shape[..x.shape.len() - 1].iter().fold(1i64, |p, &d| p.saturating_mul(d)) as usize;
        Ok(Int4Shape { m, n: n as usize, k: k as usize, groups, out })
    }
}

impl Spec for MatmulInt4 {
    fn op(&self) -> &'static str {
        "matmul_int4"
    }

    fn dtype(&self) -> DType {
        self.dtype
    }

    fn key(&self) -> String {
        format!("matmul_int4:{}:{}", self.dtype.launch_key(), DType::Int4G128Asym.launch_key())
    }

    fn declare(&self, inputs: &[TensorMeta]) -> Result<Cost> {
        let z = self.sizes(inputs)?;
        let read = crate::kernel::total_bytes(inputs)?;
        let (m, n, k, groups) = (z.m as u64, z.n as u64, z.k as u64, z.groups as u64);
        Cost::simple(
            vec![TensorMeta::new(self.dtype, &z.out)],
            read,
            saturating_product(&[2, m, n, k]).saturating_add(saturating_product(&[3, m, n, groups])),
        )
    }

    fn uses_matrix_unit(&self) -> bool {
        true
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// `pack_int4(weight)` on the weight's dtype.
#[derive(Clone, Debug, PartialEq)]
pub struct PackInt4 {
    /// The weight's dtype.
    pub dtype: DType,
    /// The packed layout.
    pub layout: Int4Layout,
}

impl PackInt4 {
    /// `(n, k, groups)` of a valid weight.
    pub fn sizes(&self, inputs: &[TensorMeta]) -> Result<(usize, usize, usize)> {
        let [weight] = inputs else {
            return Err(invalid(format!("pack_int4: takes 1 input (weight), got {}", inputs.len())));
        };
        if weight.dtype != self.dtype {
            return Err(invalid(format!("pack_int4: weight is {}, the op was bound to {}", weight.dtype, self.dtype)));
        }
        let [n, k] = weight.shape[..] else {
            return Err(invalid(format!("pack_int4: weight must be 2-d [N, K], got {:?}", weight.shape)));
        };
        let groups = self.layout.groups("pack_int4", k, &format!("weight {:?}", weight.shape))?;
        Ok((n as usize, k as usize, groups))
    }
}

impl Spec for PackInt4 {
    fn op(&self) -> &'static str {
        "pack_int4"
    }

    fn dtype(&self) -> DType {
        self.dtype
    }

    fn key(&self) -> String {
        format!("pack_int4:{}", self.dtype.launch_key())
    }

    fn declare(&self, inputs: &[TensorMeta]) -> Result<Cost> {
        let (n, k, groups) = self.sizes(inputs)?;
        let (n, groups) = (n as i64, groups as i64);
        let outputs = vec![
            TensorMeta::new(DType::Uint8, &[n, (k / self.layout.per_byte) as i64]),
            TensorMeta::new(DType::Float16, &[n, groups]),
            TensorMeta::new(DType::Float16, &[n, groups]),
        ];
        // Per element: min, max, subtract, divide, round.
        Cost::simple(outputs, inputs[0].bytes()?, inputs[0].numel()?.saturating_mul(5))
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

fn bind(name: &'static str, dtype: DType, attrs: &Attrs) -> Result<Arc<dyn Spec>> {
    attrs.only(name, &[])?;
    require_dtype(name, dtype, &FLOATS)?;
    let layout = Int4Layout::of_table(name)?;
    Ok(match name {
        "matmul_int4" => Arc::new(MatmulInt4 { dtype, layout }),
        _ => Arc::new(PackInt4 { dtype, layout }),
    })
}

/// The deepest product `matmul_int8` takes: `K·255·128` (the largest sum of code products)
/// stays below 2³¹.
pub const INT8_MAX_DEPTH: usize = 65_536;

/// The packed int8 layout as kernels use it, read from the dtype table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Int8Layout {
    /// The largest code magnitude (`2^(bits − 1) − 1`: symmetric codes).
    pub largest: i32,
}

impl Int8Layout {
    /// The `int8-per-channel` layout from the table, checked to be what the kernels serve:
    /// 8-bit int8 codes, one float32 scale per output channel, no minimum.
    pub fn of_table(op: &str) -> Result<Int8Layout> {
        let dtype = DType::Int8PerChannel;
        let packed = dtype.packed().map_err(|e| invalid(format!("{op}: {e}")))?;
        let named = |name: &str| DType::from_name(name).map_err(|e| invalid(format!("{op}: {e}")));
        let storage = named(&packed.storage)?;
        if packed.bits != 8
            || storage != DType::Int8
            || named(&packed.scale)? != DType::Float32
            || packed.minimum.is_some()
            || !matches!(packed.group, Group::Channel(_))
        {
            return Err(invalid(format!(
                "{op}: {dtype} in the table is not 8-bit int8 codes with one float32 scale per channel"
            )));
        }
        Ok(Int8Layout { largest: (1 << (packed.bits - 1)) - 1 })
    }
}

/// The sizes of a `matmul_int8` call: rows of x, outputs, contracted extent, whether a bias is
/// added, the output's shape.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Int8Shape {
    /// Rows of x (every leading dim).
    pub m: usize,
    /// Output columns (rows of W).
    pub n: usize,
    /// The contracted extent.
    pub k: usize,
    /// Whether a bias row is added.
    pub bias: bool,
    /// The output's shape.
    pub out: Vec<i64>,
}

/// `matmul_int8(x, codes, scales[, bias])` on float32 x.
#[derive(Clone, Debug, PartialEq)]
pub struct MatmulInt8 {
    /// The packed layout.
    pub layout: Int8Layout,
}

impl MatmulInt8 {
    /// The sizes of a call on `inputs`; refused naming the operands that do not fit.
    pub fn sizes(&self, inputs: &[TensorMeta]) -> Result<Int8Shape> {
        let (x, codes, scales, bias) = match inputs {
            [x, codes, scales] => (x, codes, scales, None),
            [x, codes, scales, bias] => (x, codes, scales, Some(bias)),
            _ => {
                return Err(invalid(format!(
                    "matmul_int8: takes 3 or 4 inputs (x, codes, scales[, bias]), got {}",
                    inputs.len()
                )))
            }
        };
        if x.dtype != DType::Float32
            || codes.dtype != DType::Int8
            || scales.dtype != DType::Float32
            || bias.is_some_and(|b| b.dtype != DType::Float32)
        {
            return Err(invalid(format!(
                "matmul_int8: wants x float32, codes int8, scales (and bias) float32; got {}, {}, {}{}",
                x.dtype,
                codes.dtype,
                scales.dtype,
                bias.map(|b| format!(", {}", b.dtype)).unwrap_or_default()
            )));
        }
        let (Some(&k), &[n, depth]) = (x.shape.last(), &codes.shape[..]) else {
            return Err(invalid(format!(
                "matmul_int8: x must be [.., K] and codes [N, K], got {:?} and {:?}",
                x.shape, codes.shape
            )));
        };
        if depth != k || scales.shape != [n] || bias.is_some_and(|b| b.shape != [n]) {
            return Err(invalid(format!(
                "matmul_int8: for x {:?} codes must be [N, {k}] and scales (and bias) [N]; got {:?}, {:?}{}",
                x.shape,
                codes.shape,
                scales.shape,
                bias.map(|b| format!(", {:?}", b.shape)).unwrap_or_default()
            )));
        }
        if k as usize > INT8_MAX_DEPTH {
            return Err(invalid(format!(
                "matmul_int8: K = {k} is deeper than {INT8_MAX_DEPTH}, past which the int32 sums of code products could overflow"
            )));
        }
        let mut out = x.shape.clone();
        *out.last_mut().expect("x has a last dim") = n;
        // saturating: the leading dims of an empty x (k = 0) may multiply past 64 bits
        let m = x.shape[..x.shape.len() - 1].iter().fold(1i64, |p, &d| p.saturating_mul(d)) as usize;
        Ok(Int8Shape { m, n: n as usize, k: k as usize, bias: bias.is_some(), out })
    }
}

impl Spec for MatmulInt8 {
    fn op(&self) -> &'static str {
        "matmul_int8"
    }

    fn dtype(&self) -> DType {
        DType::Float32
    }

    fn key(&self) -> String {
        format!("matmul_int8:{}:{}", DType::Float32.launch_key(), DType::Int8PerChannel.launch_key())
    }

    fn declare(&self, inputs: &[TensorMeta]) -> Result<Cost> {
        let z = self.sizes(inputs)?;
        let read = crate::kernel::total_bytes(inputs)?;
        let (m, n, k) = (z.m as u64, z.n as u64, z.k as u64);
        let flops = saturating_product(&[2, m, n, k])
            .saturating_add(saturating_product(&[4, m, k]))
            .saturating_add(saturating_product(&[3 + u64::from(z.bias), m, n]));
        Cost::simple(vec![TensorMeta::new(DType::Float32, &z.out)], read, flops)
    }

    fn uses_matrix_unit(&self) -> bool {
        true
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// `pack_int8(weight)` on the weight's dtype.
#[derive(Clone, Debug, PartialEq)]
pub struct PackInt8 {
    /// The weight's dtype.
    pub dtype: DType,
    /// The packed layout.
    pub layout: Int8Layout,
}

impl PackInt8 {
    /// `(n, k)` of a valid weight.
    pub fn sizes(&self, inputs: &[TensorMeta]) -> Result<(usize, usize)> {
        let [weight] = inputs else {
            return Err(invalid(format!("pack_int8: takes 1 input (weight), got {}", inputs.len())));
        };
        if weight.dtype != self.dtype {
            return Err(invalid(format!("pack_int8: weight is {}, the op was bound to {}", weight.dtype, self.dtype)));
        }
        let [n, k] = weight.shape[..] else {
            return Err(invalid(format!("pack_int8: weight must be 2-d [N, K], got {:?}", weight.shape)));
        };
        Ok((n as usize, k as usize))
    }
}

impl Spec for PackInt8 {
    fn op(&self) -> &'static str {
        "pack_int8"
    }

    fn dtype(&self) -> DType {
        self.dtype
    }

    fn key(&self) -> String {
        format!("pack_int8:{}", self.dtype.launch_key())
    }

    fn declare(&self, inputs: &[TensorMeta]) -> Result<Cost> {
        let (n, k) = self.sizes(inputs)?;
        let (n, k) = (n as i64, k as i64);
        let outputs = vec![TensorMeta::new(DType::Int8, &[n, k]), TensorMeta::new(DType::Float32, &[n])];
        // Per element: the magnitude's maximum, a divide, a round.
        Cost::simple(outputs, inputs[0].bytes()?, inputs[0].numel()?.saturating_mul(3))
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

fn bind_int8(name: &'static str, dtype: DType, attrs: &Attrs) -> Result<Arc<dyn Spec>> {
    attrs.only(name, &[])?;
    let layout = Int8Layout::of_table(name)?;
    Ok(if name == "matmul_int8" {
        require_dtype(name, dtype, &[DType::Float32])?;
        Arc::new(MatmulInt8 { layout })
    } else {
        require_dtype(name, dtype, &FLOATS)?;
        Arc::new(PackInt8 { dtype, layout })
    })
}

/// The quant entries in the catalogue.
pub(super) fn define(ops: &mut Vec<OpDef>) {
    ops.push(OpDef {
        name: "matmul_int4",
        family: "quant",
        summary: "x · Wᵀ with W packed in the int4-g128-asym layout",
        inputs: &["x", "packed", "scales", "minima"],
        attrs: &[],
        dtypes: |_| &FLOATS,
        bind,
        follows_policy: false,
    });
    ops.push(OpDef {
        name: "pack_int4",
        family: "quant",
        summary: "a float weight [N, K] quantized into the int4-g128-asym layout",
        inputs: &["weight"],
        attrs: &[],
        dtypes: |_| &FLOATS,
        bind,
        follows_policy: false,
    });
    ops.push(OpDef {
        name: "matmul_int8",
        family: "quant",
        summary: "x · Wᵀ (+ bias) with W in the int8-per-channel layout, x quantized per row on the fly",
        inputs: &["x", "codes", "scales", "bias?"],
        attrs: &[],
        dtypes: |_| &[DType::Float32],
        bind: bind_int8,
        follows_policy: false,
    });
    ops.push(OpDef {
        name: "pack_int8",
        family: "quant",
        summary: "a float weight [N, K] quantized into the int8-per-channel layout",
        inputs: &["weight"],
        attrs: &[],
        dtypes: |_| &FLOATS,
        bind: bind_int8,
        follows_policy: false,
    });
}
