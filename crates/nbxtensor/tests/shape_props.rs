//! Properties of the shape layer, checked against brute force over element addresses.
//!
//! The view oracle: a layout `(new_shape, s)` lists the same addresses as `(shape, strides)`
//! in row-major order only if, for every new dim `d` of extent > 1, `s[d]` is the address of
//! the element whose row-major position is the contiguous stride of `d` (that element has
//! index 1 on `d` and 0 elsewhere). So the candidate strides are forced, and a view exists
//! exactly when the forced strides reproduce every address: the oracle is sound and complete.

use nbxtensor::shape::{broadcast_shapes, broadcast_strides, contiguous_strides, is_contiguous, numel, view_strides};
use proptest::prelude::*;

/// The address of every element of `(shape, strides)`, in row-major order.
fn addresses(shape: &[i64], strides: &[i64]) -> Vec<i64> {
    let mut out = vec![0i64];
    for (&extent, &stride) in shape.iter().zip(strides) {
        out = out.iter().flat_map(|&a| (0..extent).map(move |i| a + i * stride)).collect();
    }
    out
}

/// Every row-major index of `shape`.
fn indices(shape: &[i64]) -> Vec<Vec<i64>> {
    let mut out = vec![vec![]];
    for &extent in shape {
        out = out
            .iter()
            .flat_map(|prefix: &Vec<i64>| {
                (0..extent).map(move |i| {
                    let mut next = prefix.clone();
                    next.push(i);
                    next
                })
            })
            .collect();
    }
    out
}

fn dot(index: &[i64], strides: &[i64]) -> i64 {
    index.iter().zip(strides).map(|(i, s)| i * s).sum()
}

fn product(dims: &[i64]) -> i64 {
    dims.iter().product()
}

/// Strides under which `new_shape` lists the addresses of `(shape, strides)`, when any exist.
fn brute_force_view(shape: &[i64], strides: &[i64], new_shape: &[i64]) -> Option<Vec<i64>> {
    let old = addresses(shape, strides);
    if old.is_empty() {
        return Some(vec![0; new_shape.len()]);
    }
    let mut forced = vec![0i64; new_shape.len()];
    let mut position = 1i64;
    for d in (0..new_shape.len()).rev() {
        if new_shape[d] > 1 {
            forced[d] = old[position as usize];
        }
        position *= new_shape[d];
    }
    (addresses(new_shape, &forced) == old).then_some(forced)
}

/// A small layout: contiguous, permuted (a transpose), sliced (steps over a larger buffer),
/// expanded (stride 0 on some dims) or arbitrary (negative strides included).
fn layout() -> impl Strategy<Value = (Vec<i64>, Vec<i64>)> {
    prop::collection::vec(0i64..=4, 0..=4).prop_flat_map(|shape| {
        let rank = shape.len();
        (
            Just(shape),
            0u8..5,
            Just((0..rank).collect::<Vec<usize>>()).prop_shuffle(),
            prop::collection::vec(0i64..=2, rank),
            prop::collection::vec(-4i64..=8, rank),
        )
            .prop_map(|(shape, mode, perm, extra, random)| {
                let strides = match mode {
                    0 => contiguous_strides(&shape).unwrap(),
                    1 => {
                        let permuted: Vec<i64> = perm.iter().map(|&p| shape[p]).collect();
                        let permuted_strides = contiguous_strides(&permuted).unwrap();
                        let mut strides = vec![0; shape.len()];
                        for (k, &p) in perm.iter().enumerate() {
                            strides[p] = permuted_strides[k];
                        }
                        strides
                    }
                    2 => {
                        let buffer: Vec<i64> = shape.iter().zip(&extra).map(|(d, e)| d + e).collect();
                        let step = 1 + extra.first().copied().unwrap_or(0);
                        contiguous_strides(&buffer).unwrap().iter().map(|s| s * step).collect()
                    }
                    3 => contiguous_strides(&shape)
                        .unwrap()
                        .iter()
                        .zip(&extra)
                        .map(|(&s, &e)| if e == 0 { 0 } else { s })
                        .collect(),
                    _ => random,
                };
                (shape, strides)
            })
    })
}

/// A shape holding `count` elements, cut by `seeds` (1s and 0s included).
fn reshape_of(count: i64, seeds: &[u32]) -> Vec<i64> {
    let Some((&last, cuts)) = seeds.split_last() else {
        return if count == 1 { vec![] } else { vec![count] };
    };
    if count == 0 {
        let mut dims: Vec<i64> = seeds.iter().map(|s| i64::from(s % 4)).collect();
        dims[last as usize % seeds.len()] = 0;
        return dims;
    }
    let mut remaining = count;
    let mut dims = Vec::new();
    for seed in cuts {
        let divisors: Vec<i64> = (1..=remaining).filter(|d| remaining % d == 0).collect();
        let dim = divisors[*seed as usize % divisors.len()];
        dims.push(dim);
        remaining /= dim;
    }
    dims.push(remaining);
    dims
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4000))]

    #[test]
    fn view_strides_is_the_brute_force_view(
        (shape, strides) in layout(),
        seeds in prop::collection::vec(any::<u32>(), 0..=5),
    ) {
        let new_shape = reshape_of(product(&shape), &seeds);
        let got = view_strides(&shape, &strides, &new_shape).unwrap();
        let oracle = brute_force_view(&shape, &strides, &new_shape);
        prop_assert_eq!(got.is_some(), oracle.is_some(), "{:?} {:?} -> {:?}", shape, strides, new_shape);
        if let Some(new_strides) = got {
            prop_assert_eq!(new_strides.len(), new_shape.len());
            prop_assert_eq!(addresses(&new_shape, &new_strides), addresses(&shape, &strides));
        }
    }

    #[test]
    fn a_minus_one_is_inferred(
        (shape, strides) in layout(),
        seeds in prop::collection::vec(any::<u32>(), 1..=5),
        pick in any::<prop::sample::Index>(),
    ) {
        let new_shape = reshape_of(product(&shape), &seeds);
        let axis = pick.index(new_shape.len());
        let mut with_unknown = new_shape.clone();
        with_unknown[axis] = -1;
        let others: i64 = with_unknown.iter().filter(|&&d| d != -1).product();
        let got = view_strides(&shape, &strides, &with_unknown);
        if others == 0 {
            prop_assert!(got.is_err(), "{:?} of {:?} elements", with_unknown, product(&shape));
        } else {
            prop_assert_eq!(got.unwrap(), view_strides(&shape, &strides, &new_shape).unwrap());
        }
    }

    #[test]
    fn a_reshape_to_another_count_is_refused((shape, strides) in layout(), extra in 1i64..4) {
        let wrong = [product(&shape) + extra];
        prop_assert!(view_strides(&shape, &strides, &wrong).is_err());
    }

    #[test]
    fn is_contiguous_means_row_major_addresses((shape, strides) in layout()) {
        let row_major: Vec<i64> = (0..product(&shape)).collect();
        prop_assert_eq!(is_contiguous(&shape, &strides).unwrap(), addresses(&shape, &strides) == row_major);
        prop_assert_eq!(numel(&shape).unwrap(), product(&shape));
    }

    #[test]
    fn broadcast_shapes_is_the_per_dim_rule_and_commutes(
        base in prop::collection::vec(0i64..=4, 0..=4),
        picks in prop::collection::vec((0usize..=4, prop::collection::vec(0u8..4, 4)), 0..=4),
    ) {
        // Each shape: a suffix of `base`, some dims set to 1, some (rarely) to another extent.
        let shapes: Vec<Vec<i64>> = picks
            .iter()
            .map(|(len, how)| {
                let suffix = &base[base.len() - (*len).min(base.len())..];
                suffix.iter().zip(how).map(|(&d, &h)| match h { 0 => 1, 1 => d + 1, _ => d }).collect()
            })
            .collect();
        let rank = shapes.iter().map(Vec::len).max().unwrap_or(0);
        let mut oracle = Some(vec![1i64; rank]);
        for from_end in 1..=rank {
            let mut extents: Vec<i64> = shapes
                .iter()
                .filter(|s| s.len() >= from_end)
                .map(|s| s[s.len() - from_end])
                .filter(|&e| e != 1)
                .collect();
            extents.dedup();
            extents.sort_unstable();
            extents.dedup();
            match extents.as_slice() {
                [] => {}
                [one] => if let Some(o) = oracle.as_mut() { o[rank - from_end] = *one },
                _ => oracle = None,
            }
        }
        let got = broadcast_shapes(&shapes);
        prop_assert_eq!(got.clone().ok(), oracle);
        let mut reversed = shapes.clone();
        reversed.reverse();
        prop_assert_eq!(broadcast_shapes(&reversed).ok(), got.clone().ok());
        if !shapes.is_empty() {
            let mut rotated = shapes.clone();
            rotated.rotate_left(1);
            prop_assert_eq!(broadcast_shapes(&rotated).ok(), got.ok());
        }
    }

    #[test]
    fn broadcast_strides_address_the_broadcast_source(
        (shape, strides) in layout(),
        lead in prop::collection::vec(0i64..=3, 0..=2),
        stretch in prop::collection::vec(0i64..=3, 4),
    ) {
        let target: Vec<i64> = lead
            .iter()
            .copied()
            .chain(shape.iter().zip(&stretch).map(|(&d, &t)| if d == 1 { t } else { d }))
            .collect();
        let new_strides = broadcast_strides(&shape, &strides, &target).unwrap();
        for index in indices(&target) {
            let source: Vec<i64> = index[lead.len()..]
                .iter()
                .zip(&shape)
                .map(|(&i, &d)| if d == 1 { 0 } else { i })
                .collect();
            prop_assert_eq!(dot(&index, &new_strides), dot(&source, &strides));
        }
        prop_assert_eq!(broadcast_shapes(&[&shape, &target]).unwrap(), target.clone());
    }

    #[test]
    fn broadcast_strides_refuse_what_does_not_broadcast(
        (shape, strides) in layout(),
        target in prop::collection::vec(0i64..=4, 0..=5),
    ) {
        let fits = target.len() >= shape.len()
            && shape.iter().zip(&target[target.len() - shape.len()..]).all(|(&d, &t)| d == t || d == 1);
        prop_assert_eq!(broadcast_strides(&shape, &strides, &target).is_ok(), fits);
    }
}
