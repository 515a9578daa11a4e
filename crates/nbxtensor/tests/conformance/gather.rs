//! The gather family (`ops::spec::gather`): embedding, index_select and concat, byte for byte
//! on every dtype with a per-element width (random bytes as elements, so NaN payloads must
//! survive), every index checked: a negative or too large one is refused naming the op and
//! the index.

use crate::cases::{self, Draw};
use crate::harness::{assert_refused, assert_replay_matches, read_bytes, Coverage, Layout, Target, LAYOUTS};
use crate::reference::{encode, width, Elem};
use nbxtensor::kernel::{AttrValue, Attrs};
use nbxtensor::{DType, Tensor};

/// Every dtype with a per-element width.
fn sized() -> Vec<DType> {
    crate::cast::sized()
}

/// Whether this suite has a reference for `op` on `dtype`.
pub fn covers(op: &str, dtype: DType) -> bool {
    match op {
        "embedding" => matches!(dtype, DType::Int32 | DType::Int64),
        "index_select" | "concat" => sized().contains(&dtype),
        _ => false,
    }
}

/// `n` random elements of `dtype` as raw bytes (bool as 0 or 1).
fn raw(draw: &mut Draw, dtype: DType, n: usize) -> Vec<Vec<u8>> {
    (0..n)
        .map(|_| {
            let mut bytes: Vec<u8> = (0..width(dtype)).map(|_| draw.bits() as u8).collect();
            if dtype == DType::Bool {
                bytes[0] &= 1;
            }
            bytes
        })
        .collect()
}

fn index_tensor(target: &Target, dtype: DType, shape: &[i64], values: &[i64]) -> Tensor {
    let elems: Vec<Elem> = values.iter().map(|&v| Elem::I(i128::from(v))).collect();
    target.tensor(dtype, shape, &elems)
}

fn axis(value: i64) -> Attrs {
    Attrs::new().with("axis", AttrValue::Int(value))
}

/// embedding: indices of every index dtype and several shapes (0-d and empty included) into
/// tables of every dtype, contiguous or not; out-of-range indices refused.
pub fn embedding_values(target: &Target) {
    let mut coverage = Coverage::new(target, "gather", "embedding").only("embedding");
    let mut draw = Draw::new(40);
    let (v, d) = (7i64, 5i64);
    for (op, index_dtype) in target.entries("gather") {
        if op != "embedding" {
            continue;
        }
        for table_dtype in sized() {
            for layout in [Layout::Contiguous, Layout::Transposed, Layout::Strided] {
                let (table, rows) = target.view_raw(
                    table_dtype,
                    &[v, d],
                    layout,
                    &raw(&mut draw, table_dtype, (v * d) as usize),
                    &vec![0x5A; width(table_dtype)],
                );
                for shape in [&[5i64][..], &[2, 3], &[], &[0], &[3, 0]] {
                    let n = cases::numel(shape);
                    let indices: Vec<i64> =
                        (0..n).map(|i| if i == 0 { v - 1 } else { draw.int(0, v as i128 - 1) as i64 }).collect();
                    let (it, logical) = if shape.len() == 2 && n > 0 {
                        let elems: Vec<Elem> = indices.iter().map(|&x| Elem::I(i128::from(x))).collect();
                        let (t, l) = target.view(index_dtype, shape, Layout::Transposed, &elems, Elem::I(0));
                        (t, l.iter().map(|e| e.i() as i64).collect::<Vec<_>>())
                    } else {
                        (index_tensor(target, index_dtype, shape, &indices), indices.clone())
                    };
                    let what =
                        target.what(op, index_dtype, &format!("{table_dtype} table ({layout:?}), indices {shape:?}"));
                    let out = target.run1(op, index_dtype, &Attrs::new(), &[&it, &table]);
                    let mut want_shape = shape.to_vec();
                    want_shape.push(d);
                    assert_eq!(
                        (out.dtype(), out.shape()),
                        (table_dtype, &want_shape[..]),
                        "{what}: output dtype and shape"
                    );
                    let want: Vec<u8> =
                        logical.iter().flat_map(|&i| rows[(i * d) as usize..((i + 1) * d) as usize].concat()).collect();
                    assert_eq!(read_bytes(&out), want, "{what}: bytes differ");
                }
            }
        }
        let table =
            Tensor::from_bytes(DType::Float32, &[v, d], &encode(DType::Float32, &vec![Elem::F(1.0); (v * d) as usize]))
                .unwrap()
                .to(target.device)
                .unwrap();
        for bad in [-1, v, 1 << 40] {
            if index_dtype == DType::Int32 && bad > i64::from(i32::MAX) {
                continue;
            }
            let it = index_tensor(target, index_dtype, &[3], &[0, bad, 1]);
            let what = target.what(op, index_dtype, &format!("index {bad}"));
            assert_refused(
                &what,
                target.run(op, index_dtype, &Attrs::new(), &[&it, &table]),
                &["embedding", &bad.to_string()],
            );
        }
        coverage.saw(op, index_dtype);
    }
    coverage.assert_complete();
}

/// index_select along every axis (negative included) of inputs of every dtype and layout,
/// with indices of both index dtypes (repeats, one, none); out-of-range indices refused.
pub fn index_select_values(target: &Target) {
    let mut coverage = Coverage::new(target, "gather", "index_select").only("index_select");
    let mut draw = Draw::new(41);
    let shape = [4i64, 5, 3];
    for (op, dtype) in target.entries("gather") {
        if op != "index_select" {
            continue;
        }
        for layout in LAYOUTS {
            let (x, logical) =
                target.view_raw(dtype, &shape, layout, &raw(&mut draw, dtype, 60), &vec![0xC3; width(dtype)]);
            for ax in [0i64, 1, 2, -1, -3] {
                let a = ax.rem_euclid(3) as usize;
                for index_dtype in [DType::Int32, DType::Int64] {
                    for count in [6usize, 1, 0] {
                        let indices: Vec<i64> = (0..count)
                            .map(|i| if i == 0 { shape[a] - 1 } else { draw.int(0, shape[a] as i128 - 1) as i64 })
                            .collect();
                        let it = index_tensor(target, index_dtype, &[count as i64], &indices);
                        let what = target.what(
                            op,
                            dtype,
                            &format!("{layout:?} input, axis {ax}, {count} {index_dtype} indices"),
                        );
                        let out = target.run1(op, dtype, &axis(ax), &[&x, &it]);
                        let mut want_shape = shape.to_vec();
                        want_shape[a] = count as i64;
                        assert_eq!(
                            (out.dtype(), out.shape()),
                            (dtype, &want_shape[..]),
                            "{what}: output dtype and shape"
                        );
                        let mut want = Vec::new();
                        for i in 0..cases::numel(&want_shape) {
                            // the output's multi-index, with the selected axis mapped through the indices
                            let (mut rest, mut at, mut stride) = (i, 0usize, 1usize);
                            for dim in (0..3).rev() {
                                let e = want_shape[dim] as usize;
                                let mut k = rest % e;
                                rest /= e;
                                if dim == a {
                                    k = indices[k] as usize;
                                }
                                at += k * stride;
                                stride *= shape[dim] as usize;
                            }
                            want.extend_from_slice(&logical[at]);
                        }
                        assert_eq!(read_bytes(&out), want, "{what}: bytes differ");
                    }
                }
            }
        }
        let x =
            Tensor::from_bytes(dtype, &shape, &raw(&mut draw, dtype, 60).concat()).unwrap().to(target.device).unwrap();
        for bad in [-1i64, 4] {
            let it = index_tensor(target, DType::Int64, &[2], &[0, bad]);
            let what = target.what(op, dtype, &format!("index {bad}"));
            assert_refused(&what, target.run(op, dtype, &axis(0), &[&x, &it]), &["index_select", &bad.to_string()]);
        }
        coverage.saw(op, dtype);
    }
    coverage.assert_complete();
}

/// concat along each axis of inputs of every dtype: several inputs (one empty along the axis,
/// one non-contiguous), a single input, all empty.
pub fn concat_values(target: &Target) {
    let mut coverage = Coverage::new(target, "gather", "concat").only("concat");
    let mut draw = Draw::new(42);
    for (op, dtype) in target.entries("gather") {
        if op != "concat" {
            continue;
        }
        // (input shapes, axis)
        let cases: [(&[&[i64]], i64); 5] = [
            (&[&[2, 3], &[1, 3], &[0, 3], &[4, 3]], 0),
            (&[&[2, 1], &[2, 4], &[2, 2]], 1),
            (&[&[3, 2, 2], &[3, 1, 2]], -2),
            (&[&[5]], 0),
            (&[&[0, 2], &[0, 2]], 0),
        ];
        for (shapes, ax) in cases {
            let nd = shapes[0].len();
            let a = ax.rem_euclid(nd as i64) as usize;
            let mut inputs = Vec::new();
            let mut logicals = Vec::new();
            for (k, s) in shapes.iter().enumerate() {
                let layout = if k == 1 && nd >= 2 {
                    Layout::Transposed
                } else if k == 2 {
                    Layout::Strided
                } else {
                    Layout::Contiguous
                };
                let (t, l) = if cases::numel(s) == 0 {
                    let t = Tensor::from_bytes(dtype, s, &[]).unwrap().to(target.device).unwrap();
                    (t, Vec::new())
                } else {
                    target.view_raw(
                        dtype,
                        s,
                        layout,
                        &raw(&mut draw, dtype, cases::numel(s)),
                        &vec![0x3C; width(dtype)],
                    )
                };
                inputs.push(t);
                logicals.push(l);
            }
            let refs: Vec<&Tensor> = inputs.iter().collect();
            let what = target.what(op, dtype, &format!("{shapes:?} along {ax}"));
            let out = target.run1(op, dtype, &axis(ax), &refs);
            let mut want_shape = shapes[0].to_vec();
            want_shape[a] = shapes.iter().map(|s| s[a]).sum();
            assert_eq!((out.dtype(), out.shape()), (dtype, &want_shape[..]), "{what}: output dtype and shape");
            // row-major: the blocks before the axis, then each input's slab in turn
            let outer: usize = want_shape[..a].iter().product::<i64>() as usize;
            let mut want = Vec::new();
            for o in 0..outer {
                for (s, l) in shapes.iter().zip(&logicals) {
                    let slab: usize = s[a..].iter().product::<i64>() as usize;
                    for e in &l[o * slab..(o + 1) * slab] {
                        want.extend_from_slice(e);
                    }
                }
            }
            assert_eq!(read_bytes(&out), want, "{what}: bytes differ");
        }
        coverage.saw(op, dtype);
    }
    coverage.assert_complete();
}

/// Programs of embedding, index_select and concat captured and replayed on fresh inputs:
/// byte-equal to eager runs.
pub fn gather_capture_replay(target: &Target) {
    let mut coverage = Coverage::new(target, "gather", "capture/replay");
    let mut draw = Draw::new(43);
    for (op, dtype) in target.entries("gather") {
        let what = target.what(op, dtype, "capture/replay");
        match op {
            "embedding" => {
                let table = Tensor::from_bytes(DType::Bfloat16, &[9, 4], &raw(&mut draw, DType::Bfloat16, 36).concat())
                    .unwrap()
                    .to(target.device)
                    .unwrap();
                let mut inputs = || {
                    [index_tensor(target, dtype, &[2, 3], &(0..6).map(|_| draw.int(0, 8) as i64).collect::<Vec<_>>())]
                };
                let (first, fresh) = (inputs(), inputs());
                let model = |t: &[Tensor]| target.run(op, dtype, &Attrs::new(), &[&t[0], &table]);
                assert_replay_matches(&what, &first, &fresh, &model);
            }
            "index_select" => {
                let indices = index_tensor(target, DType::Int32, &[4], &[2, 0, 2, 1]);
                let mut inputs = || {
                    [Tensor::from_bytes(dtype, &[3, 5], &raw(&mut draw, dtype, 15).concat())
                        .unwrap()
                        .to(target.device)
                        .unwrap()]
                };
                let (first, fresh) = (inputs(), inputs());
                let model = |t: &[Tensor]| target.run(op, dtype, &axis(0), &[&t[0].transpose(0, 1)?, &indices]);
                assert_replay_matches(&what, &first, &fresh, &model);
            }
            _ => {
                let mut inputs = || {
                    [
                        Tensor::from_bytes(dtype, &[2, 3], &raw(&mut draw, dtype, 6).concat())
                            .unwrap()
                            .to(target.device)
                            .unwrap(),
                        Tensor::from_bytes(dtype, &[3, 3], &raw(&mut draw, dtype, 9).concat())
                            .unwrap()
                            .to(target.device)
                            .unwrap(),
                    ]
                };
                let (first, fresh) = (inputs(), inputs());
                let model = |t: &[Tensor]| target.run(op, dtype, &axis(0), &[&t[0], &t[1].transpose(0, 1)?]);
                assert_replay_matches(&what, &first, &fresh, &model);
            }
        }
        coverage.saw(op, dtype);
    }
    coverage.assert_complete();
}
