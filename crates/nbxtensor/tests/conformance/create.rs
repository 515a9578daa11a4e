//! The create family (`ops::spec::create`): `iota`, `start + step · i` for `i < n`.
//!
//! References: the float64 value `start + i · step` rounded once to the dtype (exactly: no
//! double rounding through float32 is allowed), the integers' exact value wrapped to the
//! dtype. The op takes no inputs: it runs on the target's device through `Tensor::iota`.

use crate::harness::{assert_refused, read, Coverage, Target};
use crate::reference::{assert_elems, format, is_int, is_real, wrap, Elem, Tol};
use nbxtensor::{DType, Tensor};

/// Whether this suite has a reference for `op` on `dtype`.
pub fn covers(op: &str, dtype: DType) -> bool {
    op == "iota" && (is_real(dtype) || is_int(dtype))
}

/// iota on every dtype of the table: counts 0, 1 and past a pool piece, float terms whose
/// values are not representable (each rounded once), integer terms that wrap, a negative count
/// and float terms of an integer iota refused by name.
pub fn iota_values(target: &Target) {
    let mut coverage = Coverage::new(target, "create", "values");
    for (op, dtype) in target.entries("create") {
        assert!(covers(op, dtype), "{}: the suite has no reference", target.what(op, dtype, "values"));
        for n in [0i64, 1, 37, 70_001] {
            let what = target.what(op, dtype, &format!("n = {n}"));
            let out = if is_int(dtype) {
                let (start, step) = (-7i64, 13i64);
                let out = Tensor::iota(n, start, step, dtype, target.device).unwrap_or_else(|e| panic!("{what}: {e}"));
                let want: Vec<Elem> = (0..n)
                    .map(|i| Elem::I(wrap(dtype, i128::from(start) + i128::from(i) * i128::from(step))))
                    .collect();
                assert_elems(&what, dtype, &read(&out), &want, |_| Tol::EXACT);
                out
            } else {
                let (start, step) = (-3.25, 0.1 + 2f64.powi(-40));
                let out = Tensor::iota(n, start, step, dtype, target.device).unwrap_or_else(|e| panic!("{what}: {e}"));
                let stored = format(dtype).expect("a float dtype");
                let want: Vec<Elem> = (0..n).map(|i| Elem::F(stored.round(start + i as f64 * step))).collect();
                assert_elems(&what, dtype, &read(&out), &want, |_| Tol::EXACT);
                out
            };
            assert_eq!((out.dtype(), out.shape(), out.device()), (dtype, &[n][..], target.device), "{what}");
        }
        assert_refused(
            &target.what(op, dtype, "a negative count"),
            Tensor::iota(-1, 0, 1, dtype, target.device),
            &["iota", "negative"],
        );
        if is_int(dtype) {
            assert_refused(
                &target.what(op, dtype, "a float start"),
                Tensor::iota(2, 0.5, 1, dtype, target.device),
                &["iota", dtype.name(), "integer start"],
            );
        }
        coverage.saw(op, dtype);
    }
    coverage.assert_complete();
}
