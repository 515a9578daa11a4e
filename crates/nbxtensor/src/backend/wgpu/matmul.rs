//! `matmul` and `linear` on a wgpu device (`ops::spec::matmul`) on float32, float16 and
//! bfloat16, accumulated in float32: a tiled kernel, a workgroup of 16 × 16 invocations per
//! output tile and per matrix of the batch, the factors' slices staged in workgroup memory, each
//! invocation accumulating a block in a fixed order (a replay gives the same bits). Two tiles:
//! 128 × 128 (8 × 8 an invocation, slices 8 deep) where both sides of the output fill one, else
//! 64 × 64 (4 × 4, 16 deep). Any layout of either factor is read through its strides
//! (transposes are strides); the batch dims broadcast.

use super::gpu::Gpu;
use super::register;
use super::wgsl::{self, Elem};
use crate::backend::LaunchTable;
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

fn source(e: Elem, bias: bool, tile: Tile) -> String {
    let Tile { side, depth } = tile;
    let block = side / SIDE;
    let w = e.width;
    let mut text = String::from(wgsl::COMMON);
    text += &wgsl::input(0, "a", e);
    text += &wgsl::input(1, "b", e);
    let slot = if bias {
        text += &wgsl::input(2, "c", e);
        3
    } else {
        2
    };
    text += &wgsl::output(slot, "y", e);
    text += &wgsl::params(slot + 1);
    text += &wgsl::walker("walk_batch", 2, 12);
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
fn main(@builtin(local_invocation_id) lid3: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {{
    // p: m, n, k, a's row and depth strides (bytes), b's depth and column strides, y base,
    //    a base, b base, (unused), bias base, then the batch walk of a and b
    let lid = lid3.x;
    let m = p[0];
    let n = p[1];
    let k = p[2];
    let batch = wid.z;
    let at = walk_batch(batch);
    let row0 = wid.y * {side}u;
    let col0 = wid.x * {side}u;
    let tx = lid % {SIDE}u;
    let ty = lid / {SIDE}u;
{accumulators}
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
        b_tile = side * depth / 4,
        threads = SIDE * SIDE,
    );
    text
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
    let max = u64::from(gpu.facts.max_groups);
    let groups = [u64::from(n.div_ceil(tile.side)), u64::from(m.div_ceil(tile.side)), count as u64];
    if groups.iter().any(|&g| g > max) {
        return Err(KernelError::Invalid(format!(
            "{op}: {groups:?} workgroups ({}x{} tiles, a batch of {count}) pass the adapter's {max} a dispatch dimension",
            m.div_ceil(tile.side),
            n.div_ceil(tile.side)
        )));
    }
    let kernel = format!("matmul_{}_{}{}", spec.dtype.launch_key(), tile.side, if shapes.bias { "_bias" } else { "" });
    let pipeline = gpu.pipeline(&kernel, || source(e, shapes.bias, tile))?;
    let operands: Vec<_> = bound.iter().collect();
    gpu.dispatch(&pipeline, &operands, &params, [groups[0] as u32, groups[1] as u32, groups[2] as u32])
}

/// Registers `matmul` and `linear` on float32, float16 and bfloat16.
pub fn register_all(table: &mut LaunchTable) {
    register(table, "matmul", &FLOATS, run);
    register(table, "linear", &FLOATS, run);
}
