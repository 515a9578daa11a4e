//! Op calls built from bytes: a random op of the catalogue (`ops::spec::catalogue`: every op
//! the library defines), random attributes (mostly the op's own, sometimes another op's or an
//! unknown name, of every kind of value), one to four inputs of random dtypes (the whole
//! table), shapes and contents, each seen through a chain of random views (narrow, expand to
//! huge broadcasts, permute, transpose, select, reshape, unsqueeze, squeeze, a dtype view).
//! Run under a memory limit of 64 MiB, so an output or a gather the limit refuses is refused,
//! not made.
//!
//! The target fails on any panic of the library, and on an accepted call whose outputs break
//! the layout invariant (contiguous, inside their storage, byte counts exact) or differ from
//! the shapes and dtypes the kernel declared.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nbxtensor::backend::{cpu::cpu, Backend};
use nbxtensor::kernel::{AttrValue, Attrs};
use nbxtensor::ops::spec::catalogue;
use nbxtensor::tensor::Tensor;
use nbxtensor::{ops, DType};

/// Attribute names besides the ops' own: an unknown one, and a misspelling.
const OTHER_ATTRS: [&str; 2] = ["other", "axiss"];

/// Reads fields off the input, zeros once it runs out.
struct Fields<'a>(&'a [u8]);

impl Fields<'_> {
    fn u8(&mut self) -> u8 {
        match self.0.split_first() {
            Some((&b, rest)) => {
                self.0 = rest;
                b
            }
            None => 0,
        }
    }
    fn i64(&mut self) -> i64 {
        i64::from_le_bytes(std::array::from_fn(|_| self.u8()))
    }
    /// A small value mostly; an edge of 64 bits or a large power of two sometimes.
    fn value(&mut self) -> i64 {
        match self.u8() % 10 {
            0 => self.i64(),
            1 => [i64::MIN, i64::MAX, 1 << 62, 1 << 40, 1 << 31, -(1 << 31), 1 << 20, -1][self.u8() as usize % 8],
            _ => i64::from(self.u8() % 8) - 2,
        }
    }
    fn dtype(&mut self) -> DType {
        DType::ALL[self.u8() as usize % DType::ALL.len()]
    }
}

/// A contiguous tensor of up to 4 dims of extent 0..=4, its bytes from the input.
fn tensor(f: &mut Fields<'_>) -> Option<Tensor> {
    let dtype = f.dtype();
    let shape: Vec<i64> = (0..f.u8() % 5).map(|_| i64::from(f.u8() % 5)).collect();
    let n = shape.iter().product::<i64>() as usize * dtype.itemsize().ok()?;
    let mut bytes: Vec<u8> = (0..n).map(|_| f.u8()).collect();
    if dtype == DType::Bool {
        bytes.iter_mut().for_each(|b| *b &= 1);
    }
    Tensor::from_bytes(dtype, &shape, &bytes).ok()
}

/// One random view of `t` (refusals keep `t`).
fn view(f: &mut Fields<'_>, t: Tensor) -> Tensor {
    let next = match f.u8() % 10 {
        0 => t.narrow(f.value(), f.value(), f.value()),
        1 => {
            let lead: Vec<i64> = (0..f.u8() % 3).map(|_| f.value()).collect();
            t.expand(&[&lead[..], t.shape()].concat())
        }
        2 => {
            let target: Vec<i64> = t.shape().iter().map(|&d| if d == 1 { f.value() } else { d }).collect();
            t.expand(&target)
        }
        3 => {
            let mut order: Vec<i64> = (0..t.ndim() as i64).collect();
            let by = if order.is_empty() { 0 } else { f.u8() as usize % order.len() };
            order.rotate_left(by);
            t.permute(&order)
        }
        4 => t.transpose(f.value(), f.value()),
        5 => t.select(f.value(), f.value()),
        6 => {
            let shape: Vec<i64> = (0..f.u8() % 4).map(|_| f.value()).collect();
            t.reshape(&shape)
        }
        7 => t.unsqueeze(f.value()),
        8 => t.squeeze(if f.u8() % 2 == 0 { None } else { Some(f.value()) }),
        _ => {
            let d = f.dtype();
            t.view_dtype(d)
        }
    };
    next.unwrap_or(t)
}

fn attr(f: &mut Fields<'_>) -> AttrValue {
    match f.u8() % 6 {
        0 => AttrValue::Bool(f.u8() % 2 == 0),
        1 => AttrValue::Int(f.value()),
        2 => AttrValue::Float([0.0, -1.0, 1e-5, f64::NAN, f64::INFINITY, 1e300, -0.0, 0.125][f.u8() as usize % 8]),
        3 => AttrValue::Ints((0..f.u8() % 4).map(|_| f.value()).collect()),
        _ => AttrValue::DType(f.dtype()),
    }
}

/// Every tensor keeps its layout inside its storage, and counts its bytes exactly.
fn check(t: &Tensor) {
    let itemsize = t.dtype().itemsize().unwrap();
    if let Some(r) = nbxtensor::shape::bytes::reach(t.shape(), t.strides(), t.offset()).unwrap() {
        assert!(r.fits(itemsize, t.storage().len()), "{t:?} reaches {r:?} outside {} bytes", t.storage().len());
    }
    assert_eq!(t.byte_len().unwrap(), t.numel() as usize * itemsize);
}

fuzz_target!(|input: &[u8]| {
    static LIMIT: std::sync::Once = std::sync::Once::new();
    LIMIT.call_once(|| nbxtensor::settings::memory_limit::set_limit(Some(64 << 20)).unwrap());
    let mut f = Fields(input);
    let ops_defined = catalogue();
    let def = &ops_defined[f.u8() as usize % ops_defined.len()];
    let op = def.name;
    let mut attrs = Attrs::new();
    for _ in 0..f.u8() % 3 {
        let name = match f.u8() % 8 {
            0 => OTHER_ATTRS[f.u8() as usize % OTHER_ATTRS.len()],
            1 => {
                let another = &ops_defined[f.u8() as usize % ops_defined.len()];
                match another.attrs {
                    [] => OTHER_ATTRS[0],
                    own => own[f.u8() as usize % own.len()].name,
                }
            }
            _ => match def.attrs {
                [] => OTHER_ATTRS[0],
                own => own[f.u8() as usize % own.len()].name,
            },
        };
        attrs = attrs.with(name, attr(&mut f));
    }
    let mut inputs = Vec::new();
    for _ in 0..1 + f.u8() % 4 {
        let Some(mut t) = tensor(&mut f) else { return };
        for _ in 0..f.u8() % 4 {
            t = view(&mut f, t);
        }
        inputs.push(t);
    }
    // a product reads its inputs in place: the time of a product of huge broadcasts grows with
    // their elements (work, not a fault); the target keeps products small
    if matches!(op, "matmul" | "linear" | "linear_packed" | "matmul_int4" | "sdpa")
        && inputs.iter().any(|t| t.numel() > 1 << 16)
    {
        return;
    }
    if std::env::var_os("NBX_FUZZ_PRINT").is_some() {
        // the call an input makes (to write a crash up as a test)
        eprintln!("op_call: {op} {attrs:?}");
        for t in &inputs {
            eprintln!("  {:?} shape {:?} strides {:?} offset {}", t.dtype(), t.shape(), t.strides(), t.offset());
        }
    }
    let refs: Vec<&Tensor> = inputs.iter().collect();
    let metas: Vec<_> = inputs.iter().map(|t| nbxtensor::kernel::TensorMeta::new(t.dtype(), t.shape())).collect();
    if let Ok(outputs) = ops::call(op, &attrs, &refs) {
        for out in &outputs {
            check(out);
            assert!(out.is_contiguous(), "{op}: an output is not contiguous");
        }
        // the outputs are the declared ones
        let kernel = cpu().launches().bind(op, inputs[0].dtype(), &attrs).unwrap();
        let declared = kernel.declare(&metas).unwrap().outputs;
        assert_eq!(declared.len(), outputs.len());
        for (meta, out) in declared.iter().zip(&outputs) {
            assert_eq!((meta.dtype, &meta.shape[..]), (out.dtype(), out.shape()), "{op}");
        }
    }
});
