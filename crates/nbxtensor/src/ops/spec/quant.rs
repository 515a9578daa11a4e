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
//! - `matmul_int8(x, codes, scales[, bias], threshold = 6)`: `x [.., K]` float32 times `Wᵀ`,
//!   `W [N, K]` in the table's `int8-g64`: signed codes, a float32 scale per group of 64 along
//!   a row (`w = code·scale`), stored as `codes` in tiles of 16 weight rows × 4 codes
//!   ([`Int8Layout::codes_shape`]; K a multiple of 4) and `scales [groups, N]`; plus an optional float32
//!   `bias [N]` → `[.., N]` float32. Dynamically quantized: each element of x with a magnitude
//!   over `threshold` is an outlier and stays float32; the others of its row are quantized on
//!   the fly to unsigned 8-bit codes over their own range (which includes 0),
//!   `x ≈ (q − zero)·step`. Per group the code products are summed exactly in integers,
//!   `D = Σ q·code − zero·Σ code`, and the output is, in this float32 order,
//!   `acc = fma(D_g, scale_g, acc)` over the groups, `y = acc·step`, then
//!   `y = fma(x_j·scale, code_j, y)` over the row's outliers in order, then `y + bias`.
//!   Declared flops: `2·m·n·k` for the product, `4·m·k` for the quantization of x,
//!   `4·m·n·groups` for the groups' scaling, `m·n` for the step (and `m·n` for a bias); each
//!   backend declares its own workspace.
//! - `pack_int8(weight [N, K])` (a float dtype) → `(codes, scales)`: per group of 64 along a
//!   row, the scale `max |w| / 127` in float32 and codes rounded to nearest against it, in
//!   −127..=127, laid out as `matmul_int8` reads them; K must be a multiple of 4.
//!
//! Bits, group, code storage and scale dtype are read from the dtype table
//! (`DType::Int4G128Asym.packed()`, `DType::Int8G64.packed()`), never written here.

use super::{require_dtype, AttrDoc, OpDef, Spec, FLOATS};
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

/// The int8 layout as kernels use it: symmetric codes whose groups along a row share a float32
/// scale (bits and group read from the dtype table's `int8-g64`), stored in tiles of
/// [`Int8Layout::TILE_ROWS`] weight rows × [`Int8Layout::TILE_DEPTH`] consecutive codes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Int8Layout {
    /// The largest code magnitude (`2^(bits − 1) − 1`: symmetric codes).
    pub largest: i32,
    /// Elements of a row sharing one scale.
    pub group: usize,
}

impl Int8Layout {
    /// Weight rows in a tile of the codes (a tile is one 64-byte vector of the kernels).
    pub const TILE_ROWS: usize = 16;
    /// Consecutive codes of one weight row in a tile.
    pub const TILE_DEPTH: usize = 4;

    /// The `int8-g64` layout from the table, checked to be what the kernels serve: 8-bit int8
    /// codes, a float32 scale per group of a multiple of [`Self::TILE_DEPTH`] elements, no
    /// minimum.
    pub fn of_table(op: &str) -> Result<Int8Layout> {
        let dtype = DType::Int8G64;
        let packed = dtype.packed().map_err(|e| invalid(format!("{op}: {e}")))?;
        let named = |name: &str| DType::from_name(name).map_err(|e| invalid(format!("{op}: {e}")));
        let group = match packed.group {
            Group::Elements(size) if size > 0 && size as usize % Self::TILE_DEPTH == 0 => size as usize,
            _ => 0,
        };
        if packed.bits != 8
            || named(&packed.storage)? != DType::Int8
            || named(&packed.scale)? != DType::Float32
            || packed.minimum.is_some()
            || group == 0
        {
            return Err(invalid(format!(
                "{op}: {dtype} in the table is not 8-bit int8 codes with a float32 scale per group of a multiple of {} elements",
                Self::TILE_DEPTH
            )));
        }
        Ok(Int8Layout { largest: (1 << (packed.bits - 1)) - 1, group })
    }

    /// Groups of a row of `k` elements (the last one may be partial).
    pub fn groups(&self, k: usize) -> usize {
        k.div_ceil(self.group)
    }

    /// The codes' shape for a weight `[n, k]`: `[⌈n/16⌉, k/4, 16, 4]` — tiles of 16 weight rows
    /// × 4 consecutive codes, a panel of 16 rows' tiles along K after another, the rows past `n`
    /// zero codes. Refused (naming `op`) where `k` is not a multiple of 4: the shape then holds
    /// K exactly, so that an x of another K is refused, never multiplied.
    pub fn codes_shape(&self, op: &str, n: usize, k: usize) -> Result<[i64; 4]> {
        if k % Self::TILE_DEPTH != 0 {
            return Err(invalid(format!(
                "{op}: K = {k} is not a multiple of {} (the int8 tiles hold {} codes of a row)",
                Self::TILE_DEPTH,
                Self::TILE_DEPTH
            )));
        }
        Ok([
            n.div_ceil(Self::TILE_ROWS) as i64,
            (k / Self::TILE_DEPTH) as i64,
            Self::TILE_ROWS as i64,
            Self::TILE_DEPTH as i64,
        ])
    }
}

/// The sizes of a `matmul_int8` call: rows of x, outputs, contracted extent, groups along it,
/// whether a bias is added, the output's shape.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Int8Shape {
    /// Rows of x (every leading dim).
    pub m: usize,
    /// Output columns (rows of W).
    pub n: usize,
    /// The contracted extent.
    pub k: usize,
    /// Groups along K (`⌈k / group⌉`).
    pub groups: usize,
    /// Whether a bias row is added.
    pub bias: bool,
    /// The output's shape.
    pub out: Vec<i64>,
}

/// `matmul_int8(x, codes, scales[, bias], threshold)` on float32 x.
#[derive(Clone, Debug, PartialEq)]
pub struct MatmulInt8 {
    /// The packed layout.
    pub layout: Int8Layout,
    /// Elements of x with a magnitude above this stay float32 (the outliers).
    pub threshold: f32,
}

impl MatmulInt8 {
    /// The default `threshold` (LLM.int8()'s: activations past 6 are rare outlier features).
    pub const THRESHOLD: f32 = 6.0;

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
        let (Some(&k), &[groups, n]) = (x.shape.last(), &scales.shape[..]) else {
            return Err(invalid(format!(
                "matmul_int8: x must be [.., K] and scales [groups, N], got {:?} and {:?}",
                x.shape, scales.shape
            )));
        };
        let (k, n) = (k as usize, n as usize);
        let want = self.layout.codes_shape("matmul_int8", n, k)?;
        if groups as usize != self.layout.groups(k)
            || codes.shape != want
            || bias.is_some_and(|b| b.shape != [n as i64])
        {
            return Err(invalid(format!(
                "matmul_int8: for x {:?} and N = {n}, scales must be [{}, {n}], codes {want:?} (pack_int8's layout) and bias [{n}]; got {:?}, {:?}{}",
                x.shape,
                self.layout.groups(k),
                scales.shape,
                codes.shape,
                bias.map(|b| format!(", {:?}", b.shape)).unwrap_or_default()
            )));
        }
        let mut out = x.shape.clone();
        *out.last_mut().expect("x has a last dim") = n as i64;
        // saturating: the leading dims of an empty x (k = 0) may multiply past 64 bits
        let m = x.shape[..x.shape.len() - 1].iter().fold(1i64, |p, &d| p.saturating_mul(d)) as usize;
        Ok(Int8Shape { m, n, k, groups: groups as usize, bias: bias.is_some(), out })
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
        format!("matmul_int8:{}:{}", DType::Float32.launch_key(), DType::Int8G64.launch_key())
    }

    fn declare(&self, inputs: &[TensorMeta]) -> Result<Cost> {
        let z = self.sizes(inputs)?;
        let read = crate::kernel::total_bytes(inputs)?;
        let (m, n, k, g) = (z.m as u64, z.n as u64, z.k as u64, z.groups as u64);
        let flops = saturating_product(&[2, m, n, k])
            .saturating_add(saturating_product(&[4, m, k]))
            .saturating_add(saturating_product(&[4, m, n, g]))
            .saturating_add(saturating_product(&[1 + u64::from(z.bias), m, n]));
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
        let groups = self.layout.groups(k as usize) as i64;
        let codes = self.layout.codes_shape("pack_int8", n as usize, k as usize)?;
        let outputs = vec![TensorMeta::new(DType::Int8, &codes), TensorMeta::new(DType::Float32, &[groups, n])];
        // Per element: the magnitude's maximum, a divide, a round.
        Cost::simple(outputs, inputs[0].bytes()?, inputs[0].numel()?.saturating_mul(3))
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

fn bind_int8(name: &'static str, dtype: DType, attrs: &Attrs) -> Result<Arc<dyn Spec>> {
    let layout = Int8Layout::of_table(name)?;
    Ok(if name == "matmul_int8" {
        attrs.only(name, &["threshold"])?;
        require_dtype(name, dtype, &[DType::Float32])?;
        let threshold = attrs.float(name, "threshold", Some(f64::from(MatmulInt8::THRESHOLD)))? as f32;
        if threshold.is_nan() || threshold < 0.0 {
            return Err(invalid(format!("matmul_int8: threshold must be ≥ 0 (inf: no outliers), got {threshold}")));
        }
        Arc::new(MatmulInt8 { layout, threshold })
    } else {
        attrs.only(name, &[])?;
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
        summary:
            "x · Wᵀ (+ bias) with W in the int8-g64 layout, x quantized per row on the fly, its outliers in float32",
        inputs: &["x", "codes", "scales", "bias?"],
        attrs: &[AttrDoc {
            name: "threshold",
            meaning: "elements of x with a magnitude above it are multiplied in float32, not quantized (inf: none)",
            default: Some("6.0"),
        }],
        dtypes: |_| &[DType::Float32],
        bind: bind_int8,
        follows_policy: false,
    });
    ops.push(OpDef {
        name: "pack_int8",
        family: "quant",
        summary: "a float weight [N, K] quantized into the int8-g64 layout (tiles of 16 rows × 4 codes)",
        inputs: &["weight"],
        attrs: &[],
        dtypes: |_| &FLOATS,
        bind: bind_int8,
        follows_policy: false,
    });
}
