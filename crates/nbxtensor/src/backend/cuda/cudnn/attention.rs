//! `sdpa` through cuDNN's fused flash attention, on float16 and bfloat16.
//!
//! The graph is the one cuDNN's engines recognise as attention: `S = Q·Kᵀ` (float32), `S·scale`,
//! then the additive mask and/or the causal mask (`row + sk − sq ≥ col`, else −∞), the softmax as
//! max, subtract, exp, sum, divide (with the log-sum-exp statistics as a virtual output, which
//! the pattern needs), the probabilities in the inputs' dtype, and `O = P·V`. The fused kernel
//! never stores S or P: it tiles keys with an online softmax, so its probabilities are rounded
//! to the inputs' dtype before they weigh the values (the `input` attention operands of
//! `settings::host`).
//!
//! A plan is built per call configuration (shapes, strides, dtype, causal, mask layout, scale)
//! at its first launch, kept in a process-wide table, and run on the device's stream, so it
//! is captured into CUDA graphs like any launch.

use super::super::launch::device_context;
use super::{handle, Descriptor};
use crate::dtype::DType;
use crate::kernel::{KernelError, Result};
use crate::memory::Device;
use crate::ops::spec::attention::AttentionShape;
use cudarc::cudnn::sys;
use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::{Arc, Mutex, OnceLock};

use sys::cudnnBackendAttributeName_t as A;
use sys::cudnnBackendAttributeType_t as T;
use sys::cudnnBackendDescriptorType_t as D;
use sys::cudnnDataType_t as Dt;
use sys::cudnnPointwiseMode_t as Pw;

/// The workspace `sdpa` declares where cuDNN serves it: a plan that asks for more is passed
/// over for the next engine cuDNN proposes (the fused attention engines of cuDNN 9 ask a few
/// hundred bytes).
pub const WORKSPACE_BYTES: u64 = 1 << 20;

/// The most plans kept; past it the table starts again empty.
const MOST_PLANS: usize = 256;

/// One tensor of a call as cuDNN reads it: 4 dims and their element strides.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Layout {
    /// Extents.
    pub dims: [i64; 4],
    /// Element strides.
    pub strides: [i64; 4],
}

/// What a plan is built for.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Call {
    /// The device.
    pub device: Device,
    /// float16 or bfloat16.
    pub dtype: DType,
    /// The sizes.
    pub shape: AttentionShape,
    /// Causal masking, aligned bottom-right.
    pub causal: bool,
    /// The scale's bits (float32).
    pub scale: u32,
    /// q, k, v, out.
    pub operands: [Layout; 4],
    /// The additive mask, as broadcast (`None`: no mask).
    pub mask: Option<Layout>,
}

/// The tensor ids of the variant pack.
const Q: i64 = 1;
const K: i64 = 2;
const V: i64 = 3;
const O: i64 = 4;
const SCALE: i64 = 5;
const MASK: i64 = 6;
const OFFSET: i64 = 7;
const NEGATIVE_INFINITY: i64 = 8;
/// The first id of the graph's virtual tensors.
const VIRTUAL: i64 = 100;

/// Values passed by value, at addresses that stay put while the plan lives.
struct Scalars {
    scale: f32,
    offset: i32,
    negative_infinity: f32,
}

/// A finalized plan and what its launches pass.
pub struct Plan {
    plan: Descriptor,
    /// The graph's descriptors, kept alive with the plan.
    _graph: Vec<Descriptor>,
    scalars: Box<Scalars>,
    /// Bytes of workspace the plan uses.
    pub workspace: u64,
    masked: bool,
    offset: bool,
    causal: bool,
}

/// A graph under construction: its descriptors and the next virtual id.
struct Builder {
    kept: Vec<Descriptor>,
    ops: Vec<Descriptor>,
    next: i64,
}

impl Builder {
    fn tensor(&mut self, uid: Option<i64>, layout: Layout, dtype: Dt, by_value: bool) -> Result<usize> {
        let uid = uid.unwrap_or_else(|| {
            self.next += 1;
            self.next
        });
        let t = Descriptor::new(D::CUDNN_BACKEND_TENSOR_DESCRIPTOR)?;
        t.enumerated(A::CUDNN_ATTR_TENSOR_DATA_TYPE, T::CUDNN_TYPE_DATA_TYPE, dtype as i32)?
            .ints(A::CUDNN_ATTR_TENSOR_DIMENSIONS, &layout.dims)?
            .ints(A::CUDNN_ATTR_TENSOR_STRIDES, &layout.strides)?
            .ints(A::CUDNN_ATTR_TENSOR_UNIQUE_ID, &[uid])?
            .ints(A::CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, &[16])?
            .boolean(A::CUDNN_ATTR_TENSOR_IS_VIRTUAL, uid >= VIRTUAL)?;
        if by_value {
            t.boolean(A::CUDNN_ATTR_TENSOR_IS_BY_VALUE, true)?;
        }
        t.finalize()?;
        self.kept.push(t);
        Ok(self.kept.len() - 1)
    }

    fn virtual_like(&mut self, layout: Layout, dtype: Dt) -> Result<usize> {
        self.tensor(None, layout, dtype, false)
    }

    /// A pointwise op `y = mode(x[, b][, t])`, computed in `precision`.
    fn pointwise(
        &mut self,
        mode: Pw,
        precision: Dt,
        axis: Option<i64>,
        x: usize,
        b: Option<usize>,
        t: Option<usize>,
        y: usize,
    ) -> Result<()> {
        let p = Descriptor::new(D::CUDNN_BACKEND_POINTWISE_DESCRIPTOR)?;
        p.enumerated(A::CUDNN_ATTR_POINTWISE_MODE, T::CUDNN_TYPE_POINTWISE_MODE, mode as i32)?.enumerated(
            A::CUDNN_ATTR_POINTWISE_MATH_PREC,
            T::CUDNN_TYPE_DATA_TYPE,
            precision as i32,
        )?;
        if let Some(axis) = axis {
            p.ints(A::CUDNN_ATTR_POINTWISE_AXIS, &[axis])?;
        }
        p.finalize()?;
        let op = Descriptor::new(D::CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR)?;
        op.descriptors(A::CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, &[&p])?
            .descriptors(A::CUDNN_ATTR_OPERATION_POINTWISE_XDESC, &[&self.kept[x]])?;
        if let Some(b) = b {
            op.descriptors(A::CUDNN_ATTR_OPERATION_POINTWISE_BDESC, &[&self.kept[b]])?;
        }
        if let Some(t) = t {
            op.descriptors(A::CUDNN_ATTR_OPERATION_POINTWISE_TDESC, &[&self.kept[t]])?;
        }
        op.descriptors(A::CUDNN_ATTR_OPERATION_POINTWISE_YDESC, &[&self.kept[y]])?.finalize()?;
        self.kept.push(p);
        self.ops.push(op);
        Ok(())
    }

    /// `c = a · b`, accumulated in float32.
    fn matmul(&mut self, a: usize, b: usize, c: usize) -> Result<()> {
        let m = Descriptor::new(D::CUDNN_BACKEND_MATMUL_DESCRIPTOR)?;
        m.enumerated(A::CUDNN_ATTR_MATMUL_COMP_TYPE, T::CUDNN_TYPE_DATA_TYPE, Dt::CUDNN_DATA_FLOAT as i32)?
            .finalize()?;
        let op = Descriptor::new(D::CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR)?;
        op.descriptors(A::CUDNN_ATTR_OPERATION_MATMUL_ADESC, &[&self.kept[a]])?
            .descriptors(A::CUDNN_ATTR_OPERATION_MATMUL_BDESC, &[&self.kept[b]])?
            .descriptors(A::CUDNN_ATTR_OPERATION_MATMUL_CDESC, &[&self.kept[c]])?
            .descriptors(A::CUDNN_ATTR_OPERATION_MATMUL_DESC, &[&m])?
            .finalize()?;
        self.kept.push(m);
        self.ops.push(op);
        Ok(())
    }

    /// `y` = the max or sum of `x` over its last dim, in float32.
    fn reduce(&mut self, operator: sys::cudnnReduceTensorOp_t, x: usize, y: usize) -> Result<()> {
        let r = Descriptor::new(D::CUDNN_BACKEND_REDUCTION_DESCRIPTOR)?;
        r.enumerated(A::CUDNN_ATTR_REDUCTION_OPERATOR, T::CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, operator as i32)?
            .enumerated(A::CUDNN_ATTR_REDUCTION_COMP_TYPE, T::CUDNN_TYPE_DATA_TYPE, Dt::CUDNN_DATA_FLOAT as i32)?
            .finalize()?;
        let op = Descriptor::new(D::CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR)?;
        op.descriptors(A::CUDNN_ATTR_OPERATION_REDUCTION_XDESC, &[&self.kept[x]])?
            .descriptors(A::CUDNN_ATTR_OPERATION_REDUCTION_YDESC, &[&self.kept[y]])?
            .descriptors(A::CUDNN_ATTR_OPERATION_REDUCTION_DESC, &[&r])?
            .finalize()?;
        self.kept.push(r);
        self.ops.push(op);
        Ok(())
    }
}

fn contiguous(dims: [i64; 4]) -> Layout {
    Layout { dims, strides: [dims[1] * dims[2] * dims[3], dims[2] * dims[3], dims[3], 1] }
}

const SCALAR: Layout = Layout { dims: [1; 4], strides: [1; 4] };

/// Builds and finalizes the plan of `call`: the first engine cuDNN's heuristics propose whose
/// plan finalizes and fits [`WORKSPACE_BYTES`]; an error lists why each was refused.
fn build(call: &Call, raw_handle: sys::cudnnHandle_t) -> Result<Plan> {
    let z = call.shape;
    let (b, hq, sq, sk) = (z.b as i64, z.hq as i64, z.sq as i64, z.sk as i64);
    let io = if call.dtype == DType::Bfloat16 { Dt::CUDNN_DATA_BFLOAT16 } else { Dt::CUDNN_DATA_HALF };
    let (f32_, i32_, boolean) = (Dt::CUDNN_DATA_FLOAT, Dt::CUDNN_DATA_INT32, Dt::CUDNN_DATA_BOOLEAN);
    let mut g = Builder { kept: Vec::new(), ops: Vec::new(), next: VIRTUAL };
    let [lq, lk, lv, lo] = call.operands;
    let q = g.tensor(Some(Q), lq, io, false)?;
    // K enters the product transposed: [b, hk, d, sk]
    let kt = Layout {
        dims: [lk.dims[0], lk.dims[1], lk.dims[3], lk.dims[2]],
        strides: [lk.strides[0], lk.strides[1], lk.strides[3], lk.strides[2]],
    };
    let k = g.tensor(Some(K), kt, io, false)?;
    let v = g.tensor(Some(V), lv, io, false)?;
    let o = g.tensor(Some(O), lo, io, false)?;
    let scores = contiguous([b, hq, sq, sk]);
    let rows = contiguous([b, hq, sq, 1]);
    let s = g.virtual_like(scores, f32_)?;
    g.matmul(q, k, s)?;
    let scale = g.tensor(Some(SCALE), SCALAR, f32_, true)?;
    let mut last = g.virtual_like(scores, f32_)?;
    g.pointwise(Pw::CUDNN_POINTWISE_MUL, f32_, None, s, Some(scale), None, last)?;
    if let Some(mask) = call.mask {
        let m = g.tensor(Some(MASK), mask, io, false)?;
        let added = g.virtual_like(scores, f32_)?;
        g.pointwise(Pw::CUDNN_POINTWISE_ADD, f32_, None, last, Some(m), None, added)?;
        last = added;
    }
    let offset = call.causal && sk != sq;
    if call.causal {
        let row = g.virtual_like(scores, i32_)?;
        g.pointwise(Pw::CUDNN_POINTWISE_GEN_INDEX, i32_, Some(2), last, None, None, row)?;
        let col = g.virtual_like(scores, i32_)?;
        g.pointwise(Pw::CUDNN_POINTWISE_GEN_INDEX, i32_, Some(3), last, None, None, col)?;
        let mut shifted = row;
        if offset {
            let by = g.tensor(Some(OFFSET), SCALAR, i32_, true)?;
            shifted = g.virtual_like(scores, i32_)?;
            g.pointwise(Pw::CUDNN_POINTWISE_ADD, i32_, None, row, Some(by), None, shifted)?;
        }
        let visible = g.virtual_like(scores, boolean)?;
        g.pointwise(Pw::CUDNN_POINTWISE_CMP_GE, boolean, None, shifted, Some(col), None, visible)?;
        let hidden = g.tensor(Some(NEGATIVE_INFINITY), SCALAR, f32_, true)?;
        let masked = g.virtual_like(scores, f32_)?;
        g.pointwise(Pw::CUDNN_POINTWISE_BINARY_SELECT, f32_, None, last, Some(hidden), Some(visible), masked)?;
        last = masked;
    }
    let max = g.virtual_like(rows, f32_)?;
    g.reduce(sys::cudnnReduceTensorOp_t::CUDNN_REDUCE_TENSOR_MAX, last, max)?;
    let centred = g.virtual_like(scores, f32_)?;
    g.pointwise(Pw::CUDNN_POINTWISE_SUB, f32_, None, last, Some(max), None, centred)?;
    let exp = g.virtual_like(scores, f32_)?;
    g.pointwise(Pw::CUDNN_POINTWISE_EXP, f32_, None, centred, None, None, exp)?;
    let sum = g.virtual_like(rows, f32_)?;
    g.reduce(sys::cudnnReduceTensorOp_t::CUDNN_REDUCE_TENSOR_ADD, exp, sum)?;
    let log = g.virtual_like(rows, f32_)?;
    g.pointwise(Pw::CUDNN_POINTWISE_LOG, f32_, None, sum, None, None, log)?;
    let stats = g.virtual_like(rows, f32_)?;
    g.pointwise(Pw::CUDNN_POINTWISE_ADD, f32_, None, max, Some(log), None, stats)?;
    let p = g.virtual_like(scores, io)?;
    g.pointwise(Pw::CUDNN_POINTWISE_DIV, f32_, None, exp, Some(sum), None, p)?;
    g.matmul(p, v, o)?;

    let graph = Descriptor::new(D::CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR)?;
    graph.handle(A::CUDNN_ATTR_OPERATIONGRAPH_HANDLE, raw_handle)?;
    graph.descriptors(A::CUDNN_ATTR_OPERATIONGRAPH_OPS, &g.ops.iter().collect::<Vec<_>>())?.finalize()?;
    let heuristics = Descriptor::new(D::CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR)?;
    heuristics
        .descriptors(A::CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, &[&graph])?
        .enumerated(
            A::CUDNN_ATTR_ENGINEHEUR_MODE,
            T::CUDNN_TYPE_HEUR_MODE,
            sys::cudnnBackendHeurMode_t::CUDNN_HEUR_MODE_A as i32,
        )?
        .finalize()?;
    let configs: Vec<Descriptor> =
        (0..8).map(|_| Descriptor::new(D::CUDNN_BACKEND_ENGINECFG_DESCRIPTOR)).collect::<Result<_>>()?;
    let proposed = heuristics.read_descriptors(A::CUDNN_ATTR_ENGINEHEUR_RESULTS, &configs)?;
    let mut refused = Vec::new();
    for config in &configs[..proposed] {
        let plan = Descriptor::new(D::CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR)?;
        plan.handle(A::CUDNN_ATTR_EXECUTION_PLAN_HANDLE, raw_handle)?
            .descriptors(A::CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, &[config])?;
        let status = plan.try_finalize();
        if status != sys::cudnnStatus_t::CUDNN_STATUS_SUCCESS {
            refused.push(format!("{status:?}"));
            continue;
        }
        let workspace = plan.int(A::CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE)?.max(0) as u64;
        if workspace > WORKSPACE_BYTES {
            refused.push(format!("asks {workspace} bytes of workspace, more than the {WORKSPACE_BYTES} declared"));
            continue;
        }
        let scale = f32::from_bits(call.scale);
        g.kept.extend([graph, heuristics]);
        g.kept.extend(g.ops.drain(..));
        return Ok(Plan {
            plan,
            _graph: g.kept,
            scalars: Box::new(Scalars { scale, offset: (sk - sq) as i32, negative_infinity: f32::NEG_INFINITY }),
            workspace,
            masked: call.mask.is_some(),
            offset,
            causal: call.causal,
        });
    }
    Err(KernelError::Device(format!(
        "sdpa: cuDNN has no plan for {:?} {} causal={} mask={}: {} engine(s) proposed{}",
        z,
        call.dtype,
        call.causal,
        call.mask.is_some(),
        proposed,
        if refused.is_empty() { String::new() } else { format!(", refused: {}", refused.join("; ")) }
    )))
}

/// The plan of `call`, built at its first use.
pub fn plan(call: &Call) -> Result<Arc<Plan>> {
    static PLANS: OnceLock<Mutex<HashMap<Call, Arc<Plan>>>> = OnceLock::new();
    let plans = PLANS.get_or_init(|| Mutex::new(HashMap::new()));
    if let Some(plan) = plans.lock().unwrap_or_else(|e| e.into_inner()).get(call) {
        return Ok(Arc::clone(plan));
    }
    let handle = handle(call.device)?;
    let built = {
        let handle = handle.lock().unwrap_or_else(|e| e.into_inner());
        Arc::new(build(call, handle.raw())?)
    };
    let mut plans = plans.lock().unwrap_or_else(|e| e.into_inner());
    if plans.len() >= MOST_PLANS {
        plans.clear();
    }
    Ok(Arc::clone(plans.entry(call.clone()).or_insert(built)))
}

/// The device addresses of one launch.
pub struct Addresses {
    /// q, k, v, out.
    pub operands: [u64; 4],
    /// The mask (0: none).
    pub mask: u64,
    /// The workspace (at least the plan's bytes).
    pub workspace: u64,
}

/// Runs `plan` on the calling thread's stream of the device (its context made current by
/// `handle`).
pub fn execute(device: Device, plan: &Plan, at: &Addresses) -> Result<()> {
    let handle = handle(device)?;
    let mut handle = handle.lock().unwrap_or_else(|e| e.into_inner());
    let context = device_context(device)?;
    let scalars: &Scalars = &plan.scalars;
    let mut uids = vec![Q, K, V, O, SCALE];
    let mut pointers: Vec<*mut c_void> = at.operands.iter().map(|&p| p as *mut c_void).collect();
    pointers.push((&scalars.scale as *const f32).cast_mut().cast());
    if plan.masked {
        uids.push(MASK);
        pointers.push(at.mask as *mut c_void);
    }
    if plan.causal {
        uids.push(NEGATIVE_INFINITY);
        pointers.push((&scalars.negative_infinity as *const f32).cast_mut().cast());
    }
    if plan.offset {
        uids.push(OFFSET);
        pointers.push((&scalars.offset as *const i32).cast_mut().cast());
    }
    let pack = Descriptor::new(D::CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR)?;
    pack.ints(A::CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, &uids)?
        .pointers(A::CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, &pointers)?
        .pointers(A::CUDNN_ATTR_VARIANT_PACK_WORKSPACE, &[at.workspace as *mut c_void])?
        .finalize()?;
    handle.on_stream(context.stream(), context.shared_stream(), |handle| {
        // SAFETY: the plan and pack are finalized; every address is live for the launch (the
        // caller's tensors and workspace, the plan's scalars); the handle is held under its lock.
        super::check(
            unsafe { sys::cudnnBackendExecute(handle.raw(), plan.plan.raw(), pack.raw()) },
            "cudnnBackendExecute",
        )
    })
}
