//! `matmul` and `linear` on a wgpu device (`ops::spec::matmul`) on float32, float16 and
//! bfloat16, accumulated in float32: a tiled kernel, a workgroup of 16 × 16 invocations per
//! output tile and per matrix of the batch, the factors' slices staged in workgroup memory, each
//! invocation accumulating a block in a fixed order (a replay gives the same bits). Two tiles:
//! 128 × 128 (8 × 8 an invocation, slices 8 deep) where both sides of the output fill one, else
//! 64 × 64 (4 × 4, 16 deep). Any layout of either factor is read through its strides
//! (transposes are strides); the batch dims broadcast.
//!
//! The vector form ([`vector_source`]): float32 factors that each lie in rows of whole 16-byte
//! vectors (one dim of unit stride, its extent and every other stride multiples of 4, starting on
//! 16 bytes) on the 128 × 128 tile read their slices a vector an invocation instead of an element
//! at a time through the byte-addressed words (2.1× on an H200 at 4096³: 0.59× cuBLAS; see
//! docs/BENCHMARKS.md).

use super::gpu::Gpu;
use super::register;
use super::wgsl::{self, Elem};
use crate::backend::LaunchTable;
use crate::dtype::DType;
use crate::kernel::{KernelError, Launch, Result, TensorMeta};
use crate::ops::spec::matmul::Product;
use crate::ops::spec::FLOATS;
use crate::shape::{broadcast_strides, walk};
use crate::tensor::Tensor;

/// Invocations along each side of a workgroup.
const SIDE: u32 = 16;

/// An output tile: its side and the depth of the factors' slices (side × depth elements of each
/// factor a step: 4 loads an invocation).
#[derive(Clone, Copy, PartialEq, Eq)]
struct Tile {
    side: u32,
    depth: u32,
}

const SMALL: Tile = Tile { side: 64, depth: 16 };
const LARGE: Tile = Tile { side: 128, depth: 8 };

/// The start of both forms' `main`: the sizes, the batch's operand bytes (`at`), the output
/// tile's first row and column, the invocation's place (tx, ty) in the 16 × 16 workgroup.
fn prologue(side: u32) -> String {
    format!(
        "    let m = p[0];\n    let n = p[1];\n    let k = p[2];\n    let batch = wid.z;\n    let at = walk_batch(batch);\n    let row0 = wid.y * {side}u;\n    let col0 = wid.x * {side}u;\n    let tx = lid % {SIDE}u;\n    let ty = lid / {SIDE}u;\n"
    )
}

/// The bindings after the two factors: the bias `c` where there is one, the output `y`, the
/// parameters and the batch walk (from word 12).
fn bias_output_params(e: Elem, bias: bool) -> String {
    let mut text = String::new();
    let slot = if bias {
        text += &wgsl::input(2, "c", e);
        3
    } else {
        2
    };
    text += &wgsl::output(slot, "y", e);
    text += &wgsl::params(slot + 1);
    text += &wgsl::walker("walk_batch", 2, 12);
    text
}

fn source(e: Elem, bias: bool, tile: Tile) -> String {
    let Tile { side, depth } = tile;
    let block = side / SIDE;
    let w = e.width;
    let mut text = String::from(wgsl::COMMON);
    text += &wgsl::input(0, "a", e);
    text += &wgsl::input(1, "b", e);
    text += &bias_output_params(e, bias);
    let add_bias = if bias { format!("v = v + ld_c(p[11] + gj * {w}u);") } else { String::new() };
    // the invocation's block in scalar registers, every product written out (no indexed array:
    // a compiler may put one in local memory)
    let cells: Vec<(u32, u32)> = (0..block).flat_map(|r| (0..block).map(move |c| (r, c))).collect();
    let accumulators: String = cells.iter().map(|(r, c)| format!("    var acc_{r}_{c} = 0.0;\n")).collect();
    let mut products = String::new();
    // the slices are staged as vec4s: an invocation's block row and column are read 16 bytes at
    // a time (a quarter of the shared-memory loads of scalars); its columns are 4 neighbours in
    // each stripe of 4·SIDE, so neighbouring invocations read neighbouring vectors (no bank
    // conflicts) and write neighbouring outputs
    for q in 0..block / 4 {
        products += &format!("            let av{q} = ta[(d * {side}u + ty * {block}u) / 4u + {q}u];\n");
        products += &format!("            let bv{q} = tb[(d * {side}u) / 4u + {q}u * {SIDE}u + tx];\n");
    }
    let lane = ["x", "y", "z", "w"];
    for r in 0..block {
        products += &format!("            let a{r} = av{}.{};\n", r / 4, lane[(r % 4) as usize]);
    }
    for c in 0..block {
        products += &format!("            let b{c} = bv{}.{};\n", c / 4, lane[(c % 4) as usize]);
    }
    for (r, c) in &cells {
        products += &format!("            acc_{r}_{c} = acc_{r}_{c} + a{r} * b{c};\n");
    }
    // the slices' elements this invocation moves: `per` of each factor, as registers
    let per = side * depth / (SIDE * SIDE);
    let load = |k0: &str| -> String {
        (0..per)
            .map(|q| {
                format!(
                    "        {{\n            let e = lid + {q}u * {threads}u;\n            let i = e / {depth}u;\n            let d = e % {depth}u;\n            ra{q} = 0.0;\n            if (row0 + i < m && {k0} + d < k) {{ ra{q} = ld_a(at[0] + (row0 + i) * p[3] + ({k0} + d) * p[4]); }}\n            let d2 = e / {side}u;\n            let j = e % {side}u;\n            rb{q} = 0.0;\n            if (col0 + j < n && {k0} + d2 < k) {{ rb{q} = ld_b(at[1] + ({k0} + d2) * p[5] + (col0 + j) * p[6]); }}\n        }}\n",
                    threads = SIDE * SIDE
                )
            })
            .collect()
    };
    let registers: String = (0..per).map(|q| format!("    var ra{q} = 0.0;\n    var rb{q} = 0.0;\n")).collect();
    let load_first = format!("{registers}{}", load("0u"));
    let load_next = load("(k0 + {depth}u)".replace("{depth}", &depth.to_string()).as_str());
    let stage: String = (0..per)
        .map(|q| {
            format!(
                "        {{\n            let e = lid + {q}u * {threads}u;\n            let at_a = (e % {depth}u) * {side}u + e / {depth}u;\n            ta[at_a / 4u][at_a % 4u] = ra{q};\n            tb[e / 4u][e % 4u] = rb{q};\n        }}\n",
                threads = SIDE * SIDE
            )
        })
        .collect();
    let stores: String = cells
        .iter()
        .map(|(r, c)| {
            let (stripe, lane) = (c / 4 * 4 * SIDE, c % 4);
            format!(
                "    {{\n        let gi = row0 + ty * {block}u + {r}u;\n        let gj = col0 + {stripe}u + tx * 4u + {lane}u;\n        if (gi < m && gj < n) {{\n            var v = acc_{r}_{c};\n            {add_bias}\n            st_y(out + (gi * n + gj) * {w}u, v);\n        }}\n    }}\n"
            )
        })
        .collect();
    text += &format!(
        r#"
var<workgroup> ta: array<vec4<f32>, {a_tile}>;
var<workgroup> tb: array<vec4<f32>, {b_tile}>;

@compute @workgroup_size({threads})
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>) {{
    // p: m, n, k, a's row and depth strides (bytes), b's depth and column strides, y base,
    //    a base, b base, (unused), bias base, then the batch walk of a and b
{prologue}{accumulators}
    // the first slices in registers; each step stores them, then reads the next slices
    // while it multiplies (the loads' latency behind the products)
{load_first}    for (var k0 = 0u; k0 < k; k0 += {depth}u) {{
{stage}        workgroupBarrier();
        if (k0 + {depth}u < k) {{
{load_next}        }}
        for (var d = 0u; d < {depth}u; d++) {{
{products}        }}
        workgroupBarrier();
    }}
    let out = p[7] + batch * m * n * {w}u;
{stores}}}
"#,
        a_tile = side * depth / 4,
        prologue = prologue(side),
        b_tile = side * depth / 4,
        threads = SIDE * SIDE,
    );
    text
}

/// Which dim of a factor has unit stride in the vector form: its depth (a row-major left factor,
/// a `linear` weight) or its side (a transposed left factor, a row-major right factor).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Rows {
    Depth,
    Side,
}

impl Rows {
    fn name(self) -> &'static str {
        match self {
            Rows::Depth => "d",
            Rows::Side => "s",
        }
    }
}

/// The vector form's tile: 128 × 128 outputs, slices 8 deep, 256 invocations of 8 × 8 each.
const VECTOR: Tile = LARGE;

/// The WGSL of the vector form on float32 (`e`): factor `x` (`a` left, `b` right) staged from vectors
/// along `rows`. Invocation `lid` moves one vector of each factor a step: along the depth (two
/// vectors a tile row: row `lid / 2`, depth `4 · (lid % 2)`, its lanes stored down the slice) or
/// along the side (slice row `lid / 32`, vector `lid % 32`, stored as it came). A vector past the
/// side is read clamped to the last one (its products are never stored); one past the depth is
/// zero on both sides, so the tail adds exact zeros. The slices hold vectors along the side:
/// `t[d · 32 + v]`; invocation (tx, ty) owns rows `4 · (ty + 16 q) + lane` and columns
/// `4 · (tx + 16 q) + lane`, q in 0..2, accumulated as vectors in a fixed order.
fn vector_source(e: Elem, bias: bool, a_rows: Rows, b_rows: Rows) -> String {
    let Tile { side, depth } = VECTOR;
    let vectors = side / 4;
    let mut text = String::from(wgsl::COMMON);
    text += "\n@group(0) @binding(0) var<storage, read_write> a: array<vec4<f32>>;\n";
    text += "@group(0) @binding(1) var<storage, read_write> b: array<vec4<f32>>;\n";
    text += &bias_output_params(e, bias);
    // factor `x`'s vector for this invocation at depth `k0`, into register `r{x}`
    let load = |x: &str, rows: Rows, extent: &str, stride: &str, k0: &str| -> String {
        let base = format!("at[{}] / 16u", if x == "a" { 0 } else { 1 });
        let origin = if x == "a" { "row0" } else { "col0" };
        match rows {
            Rows::Depth => format!(
                "        {{\n            let i = min({origin} + lid / 2u, {extent} - 1u);\n            let d = {k0} + 4u * (lid % 2u);\n            let v = {x}[{base} + i * ({stride} / 16u) + min(d, k - 4u) / 4u];\n            r{x} = select(vec4<f32>(0.0), v, d < k);\n        }}\n"
            ),
            Rows::Side => format!(
                "        {{\n            let d = {k0} + lid / {vectors}u;\n            let v = {x}[{base} + min(d, k - 1u) * ({stride} / 16u) + min({origin} / 4u + lid % {vectors}u, {extent} / 4u - 1u)];\n            r{x} = select(vec4<f32>(0.0), v, d < k);\n        }}\n"
            ),
        }
    };
    let stage = |x: &str, rows: Rows| -> String {
        match rows {
            Rows::Depth => format!(
                "        {{\n            let i = lid / 2u;\n            let d = 4u * (lid % 2u);\n            t{x}[d * {vectors}u + i / 4u][i % 4u] = r{x}.x;\n            t{x}[(d + 1u) * {vectors}u + i / 4u][i % 4u] = r{x}.y;\n            t{x}[(d + 2u) * {vectors}u + i / 4u][i % 4u] = r{x}.z;\n            t{x}[(d + 3u) * {vectors}u + i / 4u][i % 4u] = r{x}.w;\n        }}\n"
            ),
            Rows::Side => format!("        t{x}[lid] = r{x};\n"),
        }
    };
    // a's strides: p[3] between rows, p[4] along the depth; b's: p[5] along the depth, p[6]
    // between columns (bytes)
    let (a_stride, b_stride) =
        (if a_rows == Rows::Depth { "p[3]" } else { "p[4]" }, if b_rows == Rows::Depth { "p[6]" } else { "p[5]" });
    let load_all =
        |k0: &str| format!("{}{}", load("a", a_rows, "m", a_stride, k0), load("b", b_rows, "n", b_stride, k0));
    let lane = ["x", "y", "z", "w"];
    let mut products = String::new();
    for d in 0..depth {
        for q in 0..2 {
            products += &format!("            let a{d}_{q} = ta[{}u + ty + {}u];\n", d * vectors, q * SIDE);
            products += &format!("            let b{d}_{q} = tb[{}u + tx + {}u];\n", d * vectors, q * SIDE);
        }
        for r in 0..8 {
            for q in 0..2 {
                products += &format!(
                    "            acc_{r}_{q} = fma(vec4<f32>(a{d}_{}.{}), b{d}_{q}, acc_{r}_{q});\n",
                    r / 4,
                    lane[r % 4]
                );
            }
        }
    }
    let accumulators: String =
        (0..8).flat_map(|r| (0..2).map(move |q| format!("    var acc_{r}_{q} = vec4<f32>(0.0);\n"))).collect();
    let add_bias = if bias { "v = v + ld_c(p[11] + gj * 4u);" } else { "" };
    let mut stores = String::new();
    for r in 0..8u32 {
        for q in 0..2u32 {
            for l in 0..4u32 {
                stores += &format!(
                    "    {{\n        let gi = row0 + 4u * (ty + {}u) + {}u;\n        let gj = col0 + 4u * (tx + {}u) + {l}u;\n        if (gi < m && gj < n) {{\n            var v = acc_{r}_{q}.{};\n            {add_bias}\n            st_y(out + (gi * n + gj) * 4u, v);\n        }}\n    }}\n",
                    (r / 4) * SIDE,
                    r % 4,
                    q * SIDE,
                    lane[l as usize]
                );
            }
        }
    }
    text += &format!(
        r#"
var<workgroup> ta: array<vec4<f32>, {slice}>;
var<workgroup> tb: array<vec4<f32>, {slice}>;

@compute @workgroup_size({threads})
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>) {{
    // p as the scalar form's; every base and stride a multiple of 16 bytes
{prologue}{accumulators}    var ra = vec4<f32>(0.0);
    var rb = vec4<f32>(0.0);
{load_first}    for (var k0 = 0u; k0 < k; k0 += {depth}u) {{
{stage_a}{stage_b}        workgroupBarrier();
        if (k0 + {depth}u < k) {{
{load_next}        }}
{products}        workgroupBarrier();
    }}
    let out = p[7] + batch * m * n * 4u;
{stores}}}
"#,
        slice = side * depth / 4,
        prologue = prologue(side),
        threads = SIDE * SIDE,
        load_first = load_all("0u"),
        load_next = load_all(&format!("(k0 + {depth}u)")),
        stage_a = stage("a", a_rows),
        stage_b = stage("b", b_rows),
    );
    text
}

/// How factor `x` lies for the vector form, if it does: a unit stride along its depth or its
/// side, that extent a multiple of 4, the other stride a non-negative multiple of 4 elements.
fn vector_rows(depth_stride: i64, side_stride: i64, depth: i64, side: i64) -> Option<Rows> {
    let whole = |stride: i64| stride >= 0 && stride % 4 == 0;
    if depth_stride == 1 && depth % 4 == 0 && whole(side_stride) {
        Some(Rows::Depth)
    } else if side_stride == 1 && side % 4 == 0 && whole(depth_stride) {
        Some(Rows::Side)
    } else {
        None
    }
}

/// The (row, depth) strides of the left factor and the (depth, column) strides of the right,
/// in elements, and each one's batch dims and strides.
fn factor_strides(t: &Tensor, left: bool, transposed: bool) -> ((i64, i64), Vec<i64>, Vec<i64>) {
    let (shape, strides) = (t.shape(), t.strides());
    let nd = shape.len();
    if nd == 1 {
        // a vector: a row on the left, a column on the right
        return (if left { (0, strides[0]) } else { (strides[0], 0) }, vec![], vec![]);
    }
    let (outer, inner) = (strides[nd - 2], strides[nd - 1]);
    let pair = if transposed { (inner, outer) } else { (outer, inner) };
    (pair, shape[..nd - 2].to_vec(), strides[..nd - 2].to_vec())
}

fn run(gpu: &Gpu, spec: &Product, launch: Launch<'_>) -> Result<()> {
    let op = spec.op;
    let metas: Vec<TensorMeta> = launch.inputs.iter().map(|t| TensorMeta::new(t.dtype(), t.shape())).collect();
    let shapes = spec.shapes(&metas)?;
    let y = &launch.outputs[0];
    if y.numel() == 0 {
        return Ok(());
    }
    let (a, b) = (&launch.inputs[0], &launch.inputs[1]);
    let e = wgsl::elem(op, spec.dtype)?;
    let w = i64::from(e.width);
    let ((sa_m, sa_k), a_batch, a_batch_strides) = factor_strides(a, true, spec.transpose_a);
    let ((sb_k, sb_n), b_batch, b_batch_strides) = factor_strides(b, false, spec.transpose_b);
    let batch_strides = |shape: &[i64], strides: &[i64]| {
        broadcast_strides(shape, strides, &shapes.batch).map_err(|e| KernelError::Invalid(format!("{op}: {e}")))
    };
    let (a_strides, b_strides) =
        (batch_strides(&a_batch, &a_batch_strides)?, batch_strides(&b_batch, &b_batch_strides)?);
    let count = shapes.count();
    let walked = walk(&shapes.batch, &[&a_strides, &b_strides], None);
    let bound: Vec<_> = launch.inputs.iter().chain(launch.outputs).map(|t| gpu.bind(op, t)).collect::<Result<_>>()?;
    let (m, n, k) = (wgsl::count(op, shapes.m)?, wgsl::count(op, shapes.n)?, wgsl::count(op, shapes.k)?);
    let bytes = |s: i64| s.wrapping_mul(w) as u32;
    let out = &bound[bound.len() - 1];
    let bias = if shapes.bias { bound[2].base } else { 0 };
    let mut params = vec![
        m,
        n,
        k,
        bytes(sa_m),
        bytes(sa_k),
        bytes(sb_k),
        bytes(sb_n),
        out.base,
        bound[0].base,
        bound[1].base,
        0,
        bias,
    ];
    params.extend(wgsl::walk_params(op, &walked, &[(bound[0].base, e.width), (bound[1].base, e.width)])?);
    let tile = if m >= LARGE.side && n >= LARGE.side { LARGE } else { SMALL };
    // the vector form where both factors lie in whole 16-byte vectors, every batch's too
    let whole_batches = walked.strides.iter().all(|s| s.iter().all(|&v| v >= 0 && v % 4 == 0));
    let vector = match (vector_rows(sa_k, sa_m, shapes.k, shapes.m), vector_rows(sb_k, sb_n, shapes.k, shapes.n)) {
        (Some(a_rows), Some(b_rows))
            if spec.dtype == DType::Float32
                && tile == VECTOR
                && k > 0
                && whole_batches
                && bound[0].base % 16 == 0
                && bound[1].base % 16 == 0 =>
        {
            Some((a_rows, b_rows))
        }
        _ => None,
    };
    let max = u64::from(gpu.facts.max_groups);
    let groups = [u64::from(n.div_ceil(tile.side)), u64::from(m.div_ceil(tile.side)), count as u64];
    if groups.iter().any(|&g| g > max) {
        return Err(KernelError::Invalid(format!(
            "{op}: {groups:?} workgroups ({}x{} tiles, a batch of {count}) pass the adapter's {max} a dispatch dimension",
            m.div_ceil(tile.side),
            n.div_ceil(tile.side)
        )));
    }
    let with_bias = if shapes.bias { "_bias" } else { "" };
    let pipeline = match vector {
        Some((a_rows, b_rows)) => {
            let kernel = format!("matmul_fp32_v4_{}{}{with_bias}", a_rows.name(), b_rows.name());
            gpu.pipeline(&kernel, || vector_source(e, shapes.bias, a_rows, b_rows))?
        }
        None => {
            let kernel = format!("matmul_{}_{}{with_bias}", spec.dtype.launch_key(), tile.side);
            gpu.pipeline(&kernel, || source(e, shapes.bias, tile))?
        }
    };
    let operands: Vec<_> = bound.iter().collect();
    gpu.dispatch(&pipeline, &operands, &params, [groups[0] as u32, groups[1] as u32, groups[2] as u32])
}

/// Registers `matmul` and `linear` on float32, float16 and bfloat16.
pub fn register_all(table: &mut LaunchTable) {
    register(table, "matmul", &FLOATS, run);
    register(table, "linear", &FLOATS, run);
}
