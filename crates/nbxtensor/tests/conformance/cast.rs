//! The cast family (`ops::spec::cast`): `cast` between every pair of dtypes with a
//! per-element width, and `copy` of every layout. Both are exact: the reference is the
//! conversion the spec states, element by element, in this file's own arithmetic —
//! integer → integer wraps; float → integer truncates toward zero, saturates out of range, NaN
//! gives 0; → float32/float64 rounds once; float64 → float16 rounds once; integers and float64
//! → bfloat16 and the 8-bit floats go through float32 first; past the largest finite value an
//! 8-bit float becomes infinity (float8_e5m2) or NaN (float8_e4m3fn); anything → bool is
//! `!= 0` (NaN true); real → complex has imaginary part 0; complex → real is refused.
//!
//! `cast` is dispatched on its input's dtype; the table lists those. A backend may leave an
//! output dtype unserved, refusing it by name ([`KernelError::Missing`], op and backend named);
//! the CPU backend serves every pair.

use crate::cases::{self, Draw, EDGE_SHAPES};
use crate::harness::{assert_refused, assert_replay_matches, read, read_bytes, Coverage, Target, LAYOUTS};
use crate::reference::{assert_elems, format, int_range, is_complex, is_int, is_real, width, Elem, Tol};
use nbxtensor::kernel::{AttrValue, Attrs, KernelError};
use nbxtensor::{DType, Tensor};

/// Every dtype with a per-element width.
pub fn sized() -> Vec<DType> {
    DType::ALL.into_iter().filter(|d| d.itemsize().is_ok()).collect()
}

/// The cast of `x` (an element of `from`) to `to`; `None` where the spec refuses the pair.
pub fn reference(from: DType, to: DType, x: Elem) -> Option<Elem> {
    if is_complex(from) && !is_complex(to) {
        return None;
    }
    let through_f32 = |v: f64| v as f32 as f64;
    Some(match x {
        Elem::C(re, im) => {
            let part = format(to)?;
            Elem::C(part.round(re), part.round(im))
        }
        Elem::B(b) => match to {
            DType::Bool => Elem::B(b),
            _ if is_int(to) => Elem::I(i128::from(b)),
            _ if is_complex(to) => Elem::C(f64::from(u8::from(b)), 0.0),
            _ => Elem::F(f64::from(u8::from(b))),
        },
        Elem::I(v) => match to {
            DType::Bool => Elem::B(v != 0),
            _ if is_int(to) => Elem::I(crate::reference::wrap(to, v)),
            DType::Float32 | DType::Complex64 => real_or_complex(to, v as f32 as f64),
            DType::Float64 | DType::Complex128 => real_or_complex(to, v as f64),
            _ => Elem::F(format(to)?.round(v as f32 as f64)),
        },
        Elem::F(v) => match to {
            DType::Bool => Elem::B(v != 0.0),
            _ if is_int(to) => {
                let (low, high) = int_range(to)?;
                Elem::I(if v.is_nan() { 0 } else { (v.trunc() as i128).clamp(low, high) })
            }
            DType::Float32 | DType::Complex64 => real_or_complex(to, through_f32(v)),
            DType::Float64 | DType::Complex128 => real_or_complex(to, v),
            DType::Float16 => Elem::F(format(to)?.round(v)),
            _ => Elem::F(format(to)?.round(through_f32(v))),
        },
    })
}

fn real_or_complex(to: DType, v: f64) -> Elem {
    if is_complex(to) {
        Elem::C(v, 0.0)
    } else {
        Elem::F(v)
    }
}

/// Whether this suite has a reference for `op` on `dtype`.
pub fn covers(op: &str, dtype: DType) -> bool {
    matches!(op, "cast" | "copy" | "assign") && sized().contains(&dtype)
}

fn cast_attrs(to: DType) -> Attrs {
    Attrs::new().with("dtype", AttrValue::DType(to))
}

/// Casts `x` (logical elements `logical`) from `from` to `to` on `target` and checks it; a
/// pair the backend does not serve must be refused by name (never on the CPU). Returns
/// whether the pair ran.
fn check_cast(target: &Target, from: DType, to: DType, case: &str, x: &Tensor, logical: &[Elem]) -> bool {
    let what = target.what("cast", from, &format!("to {to}, {case}"));
    let result = target.run("cast", from, &cast_attrs(to), &[x]);
    // a pair the spec refuses is refused whatever the elements, none included
    let refused = is_complex(from) && !is_complex(to);
    let want = logical.iter().map(|&v| reference(from, to, v)).collect::<Option<Vec<Elem>>>();
    let Some(want) = want.filter(|_| !refused) else {
        assert_refused(&what, result, &["cast", from.name(), to.name()]);
        return false;
    };
    let out = match result {
        Ok(mut out) => out.remove(0),
        Err(KernelError::Missing { op, dtype, backend }) if target.name != "cpu" => {
            assert!(
                op == "cast" && dtype.contains(to.name()) && backend == target.name,
                "{what}: refused as {op}/{dtype}/{backend}"
            );
            return false;
        }
        Err(e) => panic!("{what}: {e}"),
    };
    assert_eq!((out.dtype(), out.shape()), (to, x.shape()), "{what}: output dtype and shape");
    assert_elems(&what, to, &read(&out), &want, |_| Tol::EXACT);
    true
}

/// Values a cast from `from` is checked on: random values in a wide range, values near every
/// integer dtype's ends and rounding ties; every bit pattern of an 8- or 16-bit float.
fn cast_inputs(draw: &mut Draw, from: DType) -> Vec<Elem> {
    let f = format(from);
    match f {
        Some(f) if is_real(from) && width(from) <= 2 => {
            let patterns = 1u64 << (8 * width(from));
            (0..patterns).map(|bits| Elem::F(f.decode(bits))).collect()
        }
        Some(_) if is_real(from) => {
            let mut v = cases::specials(from);
            let edges = [
                0.999,
                -0.999,
                127.5,
                128.0,
                -128.5,
                -129.0,
                255.5,
                256.0,
                32767.5,
                -32768.9,
                65535.9,
                65536.0,
                2147483647.0,
                2147483648.0,
                -2147483649.0,
                4294967296.0,
                9.3e18,
                -9.3e18,
                1.9e19,
                1e30,
                448.0,
                464.0,
                465.0,
                480.0,
                57344.0,
                61440.0,
                61441.0,
                65519.0,
                65520.0,
                3.3895e38,
                1.0 + 1.0 / 256.0,
            ];
            v.extend(edges.iter().flat_map(|&e| [e, -e]).map(|e| Elem::F(cases::float_input(from, e))));
            v.extend(cases::floats(draw, from, 64, -300.0, 300.0));
            v
        }
        Some(_) => {
            let parts = cases::specials(DType::Float32);
            let mut v: Vec<Elem> = parts.iter().zip(parts.iter().rev()).map(|(a, b)| Elem::C(a.f(), b.f())).collect();
            v.extend(cases::elems(draw, from, 32, -1e3, 1e3));
            v.into_iter()
                .map(|e| match e {
                    Elem::C(re, im) => Elem::C(format(from).unwrap().round(re), format(from).unwrap().round(im)),
                    other => other,
                })
                .collect()
        }
        None => {
            let mut v = cases::specials(from);
            v.extend(cases::elems(draw, from, 64, 0.0, 1.0));
            if is_int(from) {
                // the integers past float32's and float16's exact ranges, and ties of float32
                let (low, high) = int_range(from).unwrap();
                v.extend(
                    [16_777_217i128, -16_777_217, 2049, 65519, 65520, (1 << 24) + 3]
                        .into_iter()
                        .filter(|x| *x >= low && *x <= high)
                        .map(Elem::I),
                );
            }
            v
        }
    }
}

/// Every cast the table lists (every input dtype) to every output dtype, on values near every
/// boundary (all bit patterns of the 8- and 16-bit floats).
pub fn cast_every_pair(target: &Target) {
    let mut coverage = Coverage::new(target, "cast", "cast values").only("cast");
    let mut draw = Draw::new(30);
    let mut served = 0;
    for (op, from) in target.entries("cast") {
        if op != "cast" {
            continue;
        }
        let values = cast_inputs(&mut draw, from);
        let x = target.tensor(from, &[values.len() as i64], &values);
        for to in sized() {
            served += usize::from(check_cast(target, from, to, "values", &x, &values));
        }
        coverage.saw(op, from);
    }
    eprintln!("{} backend: {served} (input, output) dtype pairs of cast checked", target.name);
    coverage.assert_complete();
}

/// Casts of non-contiguous inputs (transposed, strided, stride-0) and of the edge shapes,
/// from every input dtype to every output dtype.
pub fn cast_layouts_and_edges(target: &Target) {
    let mut coverage = Coverage::new(target, "cast", "cast layouts").only("cast");
    let mut draw = Draw::new(31);
    for (op, from) in target.entries("cast") {
        if op != "cast" {
            continue;
        }
        for to in sized() {
            for layout in LAYOUTS {
                let values = cases::elems(&mut draw, from, 24, -200.0, 200.0);
                let (x, logical) = target.view(from, &[2, 3, 4], layout, &values, cases::poison(from));
                check_cast(target, from, to, &format!("{layout:?} input"), &x, &logical);
            }
            for shape in EDGE_SHAPES {
                let values = cases::elems(&mut draw, from, cases::numel(shape), -200.0, 200.0);
                let x = target.tensor(from, shape, &values);
                check_cast(target, from, to, &format!("shape {shape:?}"), &x, &values);
            }
        }
        coverage.saw(op, from);
    }
    coverage.assert_complete();
}

/// `copy` of every layout and edge shape, byte for byte (NaN payloads included): random bytes
/// as elements.
pub fn copy_every_layout(target: &Target) {
    let mut coverage = Coverage::new(target, "cast", "copy").only("copy");
    let mut draw = Draw::new(32);
    for (op, dtype) in target.entries("cast") {
        if op != "copy" {
            continue;
        }
        let w = width(dtype);
        let mut raw = |n: usize| -> Vec<Vec<u8>> {
            (0..n)
                .map(|_| {
                    let mut bytes: Vec<u8> = (0..w).map(|_| draw.bits() as u8).collect();
                    if dtype == DType::Bool {
                        bytes[0] &= 1;
                    }
                    bytes
                })
                .collect()
        };
        let poison = vec![0xA5u8; w];
        let mut cases: Vec<(String, Tensor, Vec<Vec<u8>>)> = Vec::new();
        for layout in LAYOUTS {
            for shape in [&[3i64, 4, 5][..], &[7], &[2, 1, 6]] {
                let (x, logical) = target.view_raw(dtype, shape, layout, &raw(cases::numel(shape)), &poison);
                cases.push((format!("{layout:?} {shape:?}"), x, logical));
            }
        }
        for shape in EDGE_SHAPES {
            let values = raw(cases::numel(shape));
            let x = Tensor::from_bytes(dtype, shape, &values.concat()).unwrap().to(target.device).unwrap();
            cases.push((format!("shape {shape:?}"), x, values));
        }
        for (case, x, logical) in cases {
            let what = target.what(op, dtype, &case);
            let out = target.run1(op, dtype, &Attrs::new(), &[&x]);
            assert!(out.is_contiguous(), "{what}: the copy is not contiguous");
            assert_eq!((out.dtype(), out.shape()), (dtype, x.shape()), "{what}: output dtype and shape");
            assert_eq!(read_bytes(&out), logical.concat(), "{what}: bytes differ");
        }
        coverage.saw(op, dtype);
    }
    coverage.assert_complete();
}

/// `assign` into views of every kind (the whole tensor, transposed, stepped, reversed, a
/// 0-d element) of values of every kind (the view's shape, a broadcast row, a transposed
/// value, a scalar), byte for byte against the same writes done element by element here;
/// every byte the view does not reach keeps its value. A broadcast destination and a value
/// sharing the destination's memory are refused by name.
pub fn assign_every_layout(target: &Target) {
    let mut coverage = Coverage::new(target, "cast", "assign").only("assign");
    let mut draw = Draw::new(34);
    for (op, dtype) in target.entries("cast") {
        if op != "assign" {
            continue;
        }
        let w = width(dtype);
        let mut raw = |n: usize| -> Vec<u8> {
            (0..n * w)
                .enumerate()
                .map(
                    |(i, _)| if dtype == DType::Bool && i % w == 0 { draw.bits() as u8 & 1 } else { draw.bits() as u8 },
                )
                .collect()
        };
        let put =
            |bytes: &[u8], shape: &[i64]| Tensor::from_bytes(dtype, shape, bytes).unwrap().to(target.device).unwrap();
        type View = fn(&Tensor) -> Tensor;
        let views: [(&str, View); 5] = [
            ("whole", |b| b.clone()),
            ("transposed", |b| b.transpose(0, 1).unwrap()),
            ("stepped", |b| b.slice(0, Some(1), None, 2).unwrap().slice(1, Some(0), None, 3).unwrap()),
            ("reversed", |b| b.slice(1, None, None, -1).unwrap()),
            ("one element", |b| b.select(0, 2).unwrap().select(0, 5).unwrap()),
        ];
        for (name, view_of) in views {
            for value_kind in ["same shape", "broadcast row", "transposed", "scalar"] {
                let start = raw(48);
                let base = put(&start, &[6, 8]);
                let view = view_of(&base);
                let shape = view.shape().to_vec();
                let (value, logical): (Tensor, Vec<u8>) = match value_kind {
                    "same shape" => {
                        let bytes = raw(cases::numel(&shape));
                        (put(&bytes, &shape), bytes)
                    }
                    "broadcast row" if !shape.is_empty() => {
                        let last = *shape.last().unwrap();
                        let row = raw(last as usize);
                        let tiled = (0..cases::numel(&shape))
                            .flat_map(|i| row[(i % last as usize) * w..][..w].to_vec())
                            .collect();
                        (put(&row, &[last]), tiled)
                    }
                    "transposed" if shape.len() == 2 => {
                        let bytes = raw(cases::numel(&shape));
                        let flipped = put(&bytes, &[shape[1], shape[0]]).transpose(0, 1).unwrap();
                        let logical = read_bytes(&flipped);
                        (flipped, logical)
                    }
                    _ => {
                        let one = raw(1);
                        (put(&one, &[]), one.repeat(cases::numel(&shape)))
                    }
                };
                let what = target.what(op, dtype, &format!("{name} view, {value_kind} value"));
                let out =
                    target.run(op, dtype, &Attrs::new(), &[&view, &value]).unwrap_or_else(|e| panic!("{what}: {e}"));
                assert!(out.is_empty(), "{what}: assign has no output");
                // the same writes, element by element: view index → base element
                let mut want = start.clone();
                let mut index = vec![0i64; shape.len()];
                for i in 0..cases::numel(&shape) {
                    let at =
                        (view.offset() + index.iter().zip(view.strides()).map(|(i, s)| i * s).sum::<i64>()) as usize;
                    want[at * w..][..w].copy_from_slice(&logical[i * w..][..w]);
                    for d in (0..shape.len()).rev() {
                        index[d] += 1;
                        if index[d] < shape[d] {
                            break;
                        }
                        index[d] = 0;
                    }
                }
                assert_eq!(read_bytes(&base), want, "{what}: bytes differ");
            }
        }
        let base = put(&raw(48), &[6, 8]);
        let spread = base.select(0, 0).unwrap().unsqueeze(0).unwrap().expand(&[3, 8]).unwrap();
        let value = put(&raw(24), &[3, 8]);
        let what = target.what(op, dtype, "a broadcast destination");
        assert_refused(
            &what,
            target.run(op, dtype, &Attrs::new(), &[&spread, &value]),
            &["assign", "repeats elements"],
        );
        let what = target.what(op, dtype, "a value sharing the destination's memory");
        let (rows, shifted) = (base.slice(0, Some(1), None, 1).unwrap(), base.slice(0, None, Some(5), 1).unwrap());
        assert_refused(&what, target.run(op, dtype, &Attrs::new(), &[&rows, &shifted]), &["assign", "shares"]);
        coverage.saw(op, dtype);
    }
    coverage.assert_complete();
}

/// Programs of casts (every input dtype to every output dtype the backend serves, from a
/// transposed view) and of copies, captured and replayed: byte-equal to eager runs.
pub fn cast_capture_replay(target: &Target) {
    // assign updates its destination in place: a program holds such a destination as its
    // state, not as an input (updates under capture are checked with kv_cache_write, in the
    // decode family)
    let mut coverage = Coverage::new(target, "cast", "capture/replay").only("cast").only("copy");
    let mut draw = Draw::new(33);
    for (op, from) in target.entries("cast") {
        if op == "assign" {
            continue;
        }
        let outputs: Vec<DType> = if op == "copy" { vec![from] } else { sized() };
        for to in outputs {
            if op == "cast" && reference(from, to, cases::elems(&mut draw, from, 1, 0.0, 1.0)[0]).is_none() {
                continue;
            }
            let attrs = if op == "cast" { cast_attrs(to) } else { Attrs::new() };
            let probe = target.tensor(from, &[1], &cases::elems(&mut draw, from, 1, 0.0, 1.0));
            if let Err(KernelError::Missing { .. }) = target.run(op, from, &attrs, &[&probe]) {
                assert_ne!(target.name, "cpu", "the CPU serves every cast");
                continue;
            }
            let mut input = || target.tensor(from, &[5, 6], &cases::elems(&mut draw, from, 30, -200.0, 200.0));
            let (first, fresh) = ([input()], [input()]);
            let model = |t: &[Tensor]| target.run(op, from, &attrs, &[&t[0].transpose(0, 1)?]);
            assert_replay_matches(&target.what(op, from, &format!("to {to}, capture/replay")), &first, &fresh, &model);
        }
        coverage.saw(op, from);
    }
    coverage.assert_complete();
}
