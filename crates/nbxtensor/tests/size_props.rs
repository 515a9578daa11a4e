//! Huge, negative and boundary values at every edge of the tensor layer: constructors, views,
//! byte counts, copies and op calls. Nothing panics; what is accepted keeps the layout's
//! invariant (every element it reaches lies in its storage) and reports exact byte counts;
//! what is refused is an error. Run in a process of its own under a memory limit of 2 MiB, so
//! a copy the limit allows is small and a larger one is refused before it is made.

use nbxtensor::kernel::{AttrValue, Attrs};
use nbxtensor::shape::bytes::{reach, MAX_BYTES};
use nbxtensor::tensor::Tensor;
use nbxtensor::{ops, DType};
use proptest::prelude::*;

const LIMIT: u64 = 2 << 20;

/// Sets the limit, and makes the cases of the three properties take turns (the limit counts
/// every thread's memory: one case must not see another's).
fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static ONCE: std::sync::Once = std::sync::Once::new();
    static TURN: std::sync::Mutex<()> = std::sync::Mutex::new(());
    ONCE.call_once(|| nbxtensor::settings::memory_limit::set_limit(Some(LIMIT)).unwrap());
    TURN.lock().unwrap_or_else(|e| e.into_inner())
}

/// Values at the edges of 64 bits, small ones, and any.
fn edgy() -> impl Strategy<Value = i64> {
    prop_oneof![
        4 => -3i64..8,
        3 => prop::sample::select(vec![
            i64::MIN, i64::MIN + 1, -(1 << 62), -(1 << 32), -(1 << 31), -1, 0, 1, 2,
            (1 << 31) - 1, 1 << 31, 1 << 32, (1 << 62) - 1, 1 << 62, i64::MAX - 1, i64::MAX,
        ]),
        3 => prop::sample::select(vec![1i64 << 10, 1 << 16, 1 << 18, 1 << 20, 1 << 22, 1 << 30, 1 << 40, 1 << 59, 1 << 60, 1 << 61]),
        1 => any::<i64>(),
    ]
}

fn dims() -> impl Strategy<Value = Vec<i64>> {
    prop::collection::vec(edgy(), 0..5)
}

const DTYPES: [DType; 6] = [DType::Uint8, DType::Float16, DType::Float32, DType::Int64, DType::Complex128, DType::Bool];

/// A small base tensor of `dtype`: 24 elements, [2, 3, 4], contiguous.
fn base(dtype: DType) -> Tensor {
    shaped(dtype, &[2, 3, 4])
}

/// A contiguous tensor of `dtype` and `shape`, its bytes counting up.
fn shaped(dtype: DType, shape: &[i64]) -> Tensor {
    let n = shape.iter().product::<i64>() as usize * dtype.itemsize().unwrap();
    let bytes: Vec<u8> = (0..n).map(|i| (i % 7) as u8 % if dtype == DType::Bool { 2 } else { 7 }).collect();
    Tensor::from_bytes(dtype, shape, &bytes).unwrap()
}

/// The shapes the views start from: a broadcast stretches their dims of extent 1.
const BASES: [&[i64]; 5] = [&[2, 3, 4], &[1], &[1, 1], &[3, 1], &[]];

/// The invariant every tensor keeps: its elements lie in its storage, and its byte count is
/// exact or refused past the address space.
fn check_invariant(t: &Tensor) -> Result<(), TestCaseError> {
    let itemsize = t.dtype().itemsize().unwrap();
    if let Some(r) = reach(t.shape(), t.strides(), t.offset()).unwrap() {
        prop_assert!(r.fits(itemsize, t.storage().len()), "{t:?} reaches {r:?} outside {} bytes", t.storage().len());
    }
    let exact = t.numel() as i128 * itemsize as i128;
    match t.byte_len() {
        Ok(bytes) => prop_assert_eq!(bytes as i128, exact),
        Err(e) => {
            prop_assert!(exact > MAX_BYTES as i128, "{t:?}: {e}");
            prop_assert!(e.to_string().contains("more than an address space holds"));
        }
    }
    Ok(())
}

/// A copy of `t` (to_bytes, to_vec's path, contiguous, host_elements): exact when it fits
/// under the limit, refused otherwise, never a panic.
fn check_copies(t: &Tensor) -> Result<(), TestCaseError> {
    let fits = t.byte_len().is_ok_and(|b| (b as u64) < LIMIT / 4);
    match t.to_bytes() {
        Ok(bytes) => {
            prop_assert!(bytes.len() as u64 <= LIMIT);
            prop_assert_eq!(bytes.len(), t.byte_len().unwrap());
            if fits {
                // three copies at once stay under the limit
                let copy = t.contiguous().unwrap();
                prop_assert_eq!(copy.to_bytes().unwrap(), bytes.clone());
                prop_assert_eq!(&t.host_bytes().unwrap()[..], &bytes[..]);
                prop_assert_eq!(t.to_vec::<u8>().ok().map(|v| v == bytes), (t.dtype() == DType::Uint8).then_some(true));
            }
        }
        Err(e) => {
            prop_assert!(!fits, "{t:?}: a small copy was refused: {e}");
            if !t.is_contiguous() {
                prop_assert!(t.contiguous().is_err() && t.host_bytes().is_err(), "{t:?}: a copy too large was made");
            }
        }
    }
    Ok(())
}

#[derive(Debug, Clone)]
enum View {
    Narrow(i64, i64, i64),
    Expand(Vec<i64>),
    Reshape(Vec<i64>),
    Permute(Vec<i64>),
    Transpose(i64, i64),
    Select(i64, i64),
    Slice(i64, Option<i64>, Option<i64>, i64),
    Unsqueeze(i64),
    Squeeze(Option<i64>),
    /// Leading dims added by a broadcast (stride 0).
    ExpandLead(Vec<i64>),
    /// Each dim of extent 1 stretched to the next of these values (stride 0).
    Stretch(Vec<i64>),
}

fn view() -> impl Strategy<Value = View> {
    prop_oneof![
        1 => (edgy(), edgy(), edgy()).prop_map(|(d, s, l)| View::Narrow(d, s, l)),
        1 => dims().prop_map(View::Expand),
        3 => prop::collection::vec(edgy(), 1..3).prop_map(View::ExpandLead),
        3 => prop::collection::vec(edgy(), 1..4).prop_map(View::Stretch),
        2 => (0i64..4).prop_map(View::Unsqueeze),
        2 => (0i64..3, 0i64..3).prop_map(|(a, b)| View::Transpose(a, b)),
        2 => (0i64..3, 0i64..2, 0i64..3).prop_map(|(d, s, l)| View::Narrow(d, s, l)),
        1 => dims().prop_map(View::Reshape),
        1 => dims().prop_map(View::Permute),
        1 => (edgy(), edgy()).prop_map(|(a, b)| View::Transpose(a, b)),
        1 => (edgy(), edgy()).prop_map(|(d, i)| View::Select(d, i)),
        1 => (edgy(), proptest::option::of(edgy()), proptest::option::of(edgy()), edgy())
            .prop_map(|(d, a, b, s)| View::Slice(d, a, b, s)),
        1 => edgy().prop_map(View::Unsqueeze),
        1 => proptest::option::of(edgy()).prop_map(View::Squeeze),
    ]
}

fn apply(t: &Tensor, v: &View) -> Option<Tensor> {
    match v {
        View::Narrow(d, s, l) => t.narrow(*d, *s, *l),
        View::Expand(shape) => t.expand(shape),
        View::Reshape(shape) => t.reshape(shape),
        View::Permute(dims) => t.permute(dims),
        View::Transpose(a, b) => t.transpose(*a, *b),
        View::Select(d, i) => t.select(*d, *i),
        View::Slice(d, a, b, s) => t.slice(*d, *a, *b, *s),
        View::Unsqueeze(d) => t.unsqueeze(*d),
        View::Squeeze(d) => t.squeeze(*d),
        View::ExpandLead(lead) => t.expand(&[&lead[..], t.shape()].concat()),
        View::Stretch(sizes) => {
            let mut sizes = sizes.iter();
            let target: Vec<i64> =
                t.shape().iter().map(|&d| if d == 1 { *sizes.next().unwrap_or(&1) } else { d }).collect();
            t.expand(&target)
        }
    }
    .ok()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

    #[test]
    fn constructors_refuse_what_does_not_fit(shape in dims(), strides in dims(), offset in edgy(), pick in 0..DTYPES.len()) {
        let _turn = one_at_a_time();
        let dtype = DTYPES[pick];
        for made in [Tensor::zeros(dtype, &shape), Tensor::symbolic(nbxtensor::memory::Device::CPU, dtype, &shape)] {
            if let Ok(t) = made {
                check_invariant(&t)?;
                prop_assert!(t.byte_len().unwrap() as u64 <= LIMIT || t.storage().is_symbolic());
            }
        }
        let bytes = vec![0u8; 96];
        if let Ok(t) = Tensor::from_bytes(dtype, &shape, &bytes) {
            prop_assert_eq!(t.byte_len().unwrap(), 96);
        }
        // any layout over a storage of 96 bytes: accepted only when it stays inside
        let storage = std::sync::Arc::clone(base(DType::Int32).storage());
        if let Ok(t) = Tensor::from_storage(storage, dtype, &shape, &strides, offset) {
            check_invariant(&t)?;
            check_copies(&t)?;
        }
    }

    #[test]
    fn chains_of_views_keep_the_invariant_and_copy_exactly(
        pick in 0..DTYPES.len(),
        start in 0..BASES.len(),
        views in prop::collection::vec(view(), 1..5),
    ) {
        let _turn = one_at_a_time();
        let mut t = shaped(DTYPES[pick], BASES[start]);
        for v in &views {
            if let Some(next) = apply(&t, v) {
                check_invariant(&next)?;
                t = next;
            }
        }
        check_copies(&t)?;
    }

    #[test]
    fn op_calls_on_hostile_views_answer_or_refuse(
        pick in 0..3usize,
        start in 0..BASES.len(),
        views in prop::collection::vec(view(), 0..4),
        op in prop::sample::select(vec!["copy", "exp", "neg", "add", "mul", "sum", "max", "mean", "softmax", "cast", "eq", "argmax", "layer_norm", "matmul"]),
        axis in edgy(),
        keep in any::<bool>(),
    ) {
        let _turn = one_at_a_time();
        let mut t = shaped([DType::Float32, DType::Float16, DType::Int64][pick], BASES[start]);
        for v in &views {
            if let Some(next) = apply(&t, v) {
                t = next;
            }
        }
        let attrs = match op {
            "sum" | "mean" => Attrs::new().with("axes", AttrValue::Ints(vec![axis])).with("keepdim", AttrValue::Bool(keep)),
            "max" | "argmax" | "softmax" => Attrs::new().with("axis", AttrValue::Int(axis)),
            "cast" => Attrs::new().with("dtype", AttrValue::DType(DType::Float64)),
            _ => Attrs::new(),
        };
        // a product reads its inputs in place: a broadcast of 2^40 elements is 2^40 steps of
        // work, not a refusal (the time an op takes grows with its elements, by design)
        prop_assume!(op != "matmul" || t.numel() <= 1 << 20);
        let inputs: Vec<&Tensor> = match op {
            "add" | "mul" | "eq" | "matmul" => vec![&t, &t],
            _ => vec![&t],
        };
        if let Ok(outputs) = ops::call(op, &attrs, &inputs) {
            for out in &outputs {
                check_invariant(out)?;
                prop_assert!(out.is_contiguous());
                prop_assert!(out.byte_len().unwrap() as u64 <= LIMIT);
            }
        }
    }
}
