//! Promotion against the Array API standard's tables (2023.12, "Type Promotion Rules"), written
//! here as literal data, and the decisions of the module's table.

use super::*;
use DType::*;

/// The standard's mixed signed/unsigned table: (unsigned, signed, result); `None`: not defined.
const MIXED_INTEGERS: [(DType, DType, Option<DType>); 16] = [
    (Uint8, Int8, Some(Int16)),
    (Uint8, Int16, Some(Int16)),
    (Uint8, Int32, Some(Int32)),
    (Uint8, Int64, Some(Int64)),
    (Uint16, Int8, Some(Int32)),
    (Uint16, Int16, Some(Int32)),
    (Uint16, Int32, Some(Int32)),
    (Uint16, Int64, Some(Int64)),
    (Uint32, Int8, Some(Int64)),
    (Uint32, Int16, Some(Int64)),
    (Uint32, Int32, Some(Int64)),
    (Uint32, Int64, Some(Int64)),
    (Uint64, Int8, None),
    (Uint64, Int16, None),
    (Uint64, Int32, None),
    (Uint64, Int64, None),
];

/// The standard's float and complex table.
const FLOATS: [(DType, DType, DType); 10] = [
    (Float32, Float32, Float32),
    (Float32, Float64, Float64),
    (Float32, Complex64, Complex64),
    (Float32, Complex128, Complex128),
    (Float64, Float64, Float64),
    (Float64, Complex64, Complex128),
    (Float64, Complex128, Complex128),
    (Complex64, Complex64, Complex64),
    (Complex64, Complex128, Complex128),
    (Complex128, Complex128, Complex128),
];

#[test]
fn the_standards_mixed_integer_table() {
    for (u, s, want) in MIXED_INTEGERS {
        for (a, b) in [(u, s), (s, u)] {
            match want {
                Some(w) => assert_eq!(binary_result(a, b).unwrap(), w, "{a} {b}"),
                None => {
                    let err = binary_result(a, b).unwrap_err().to_string();
                    assert_eq!(err, format!("{s} and {u} have no common dtype: no signed integer holds {u}"));
                }
            }
        }
    }
}

#[test]
fn the_standards_float_table_and_same_kind_widening() {
    for (a, b, want) in FLOATS {
        assert_eq!(binary_result(a, b).unwrap(), want);
        assert_eq!(binary_result(b, a).unwrap(), want);
    }
    assert_eq!(binary_result(Int8, Int32).unwrap(), Int32);
    assert_eq!(binary_result(Uint16, Uint8).unwrap(), Uint16);
    assert_eq!(binary_result(Bool, Bool).unwrap(), Bool);
}

#[test]
fn the_decisions_where_the_standard_is_silent() {
    let decided = [
        (Int64, Float16, Float16),
        (Uint8, Float32, Float32),
        (Int32, Complex64, Complex64),
        (Bool, Int8, Int8),
        (Bool, Uint16, Uint16),
        (Bool, Bfloat16, Bfloat16),
        (Float16, Bfloat16, Float32),
        (Float16, Float64, Float64),
        (Bfloat16, Float32, Float32),
        (Float16, Complex64, Complex64),
        (Bfloat16, Complex128, Complex128),
        (Float8E4m3fn, Float16, Float16),
        (Float8E5m2, Bfloat16, Bfloat16),
        (Float8E4m3fn, Float64, Float64),
        (Float8E5m2, Int64, Float8E5m2),
    ];
    for (a, b, want) in decided {
        assert_eq!(binary_result(a, b).unwrap(), want, "{a} {b}");
        assert_eq!(binary_result(b, a).unwrap(), want, "{b} {a}");
    }
    let err = binary_result(Float8E4m3fn, Float8E5m2).unwrap_err().to_string();
    assert!(err.contains("float8_e4m3fn and float8_e5m2") && err.contains("float16, bfloat16"), "{err}");
}

#[test]
fn packed_representations_are_refused_by_name() {
    for packed in [Int4G128Asym, Int4G128Sym, Int8PerChannel, Int8G64] {
        let err = binary_result(Float16, packed).unwrap_err().to_string();
        assert!(err.contains(packed.name()) && err.contains("packed"), "{err}");
        assert!(float_math_input(packed).is_err());
        assert!(scalar_result(packed, PyScalar::Int(1)).is_err());
    }
}

#[test]
fn promoted_leaves_the_half_meeting_to_the_caller() {
    assert_eq!(promoted(&[Float16, Float32]).unwrap(), Some(Float32));
    assert_eq!(promoted(&[Float16, Bfloat16]).unwrap(), None);
    assert_eq!(promoted(&[Bfloat16, Int8, Float16]).unwrap(), None);
    assert_eq!(promoted(&[Bfloat16, Float16, Float32]).unwrap(), Some(Float32));
    assert_eq!(promoted(&[Bfloat16, Float16, Complex64]).unwrap(), Some(Complex64));
    assert_eq!(promoted(&[Int8]).unwrap(), Some(Int8));
    assert!(promoted(&[]).unwrap_err().to_string().contains("no dtypes"));
}

#[test]
fn float_math_reads_integers_as_float32() {
    for (input, want) in
        [(Bool, Float32), (Uint8, Float32), (Int64, Float32), (Float16, Float16), (Complex128, Complex128)]
    {
        assert_eq!(float_math_input(input).unwrap(), want);
    }
}

/// Every order of every triple: folds of `binary_result` that succeed agree with each other and
/// with `common_dtype`, which gives the same answer in every order.
#[test]
fn three_operands_promote_alike_in_every_order() {
    let dtypes: Vec<DType> = DType::ALL.iter().copied().filter(|d| d.kind() != Kind::Packed).collect();
    for &a in &dtypes {
        for &b in &dtypes {
            for &c in &dtypes {
                let orders = [[a, b, c], [a, c, b], [b, a, c], [b, c, a], [c, a, b], [c, b, a]];
                let common: Vec<_> = orders.iter().map(|o| common_dtype(o).ok()).collect();
                assert!(common.iter().all(|r| *r == common[0]), "{a} {b} {c}: {common:?}");
                let folds: Vec<DType> = orders
                    .iter()
                    .filter_map(|o| binary_result(o[0], o[1]).and_then(|ab| binary_result(ab, o[2])).ok())
                    .collect();
                assert!(folds.iter().all(|f| Some(*f) == common[0]), "{a} {b} {c}: {folds:?} vs {common:?}");
                assert_eq!(folds.is_empty(), common[0].is_none(), "{a} {b} {c}");
            }
        }
    }
}

#[test]
fn python_scalars_are_weak() {
    use PyScalar as S;
    let cases = [
        (Float16, S::Float(0.5), Float16),
        (Int32, S::Float(1.5), Float64),
        (Bool, S::Float(1.5), Float64),
        (Uint8, S::Bool(true), Uint8),
        (Bool, S::Bool(false), Bool),
        (Bool, S::Int(3), Int64),
        (Int16, S::Int(-32768), Int16),
        (Uint64, S::Int(u64::MAX as i128), Uint64),
        (Bfloat16, S::Int(1 << 40), Bfloat16),
        (Complex64, S::Float(2.0), Complex64),
        (Int8, S::Complex { re: 0.0, im: 1.0 }, Complex128),
        (Float16, S::Complex { re: 0.0, im: 1.0 }, Complex64),
        (Bfloat16, S::Complex { re: 0.0, im: 1.0 }, Complex64),
        (Float32, S::Complex { re: 0.0, im: 1.0 }, Complex64),
        (Float64, S::Complex { re: 0.0, im: 1.0 }, Complex128),
        (Complex128, S::Complex { re: 0.0, im: 1.0 }, Complex128),
    ];
    for (array, scalar, want) in cases {
        assert_eq!(scalar_result(array, scalar).unwrap(), want, "{array} with {scalar}");
    }
    for (array, value) in
        [(Int8, 128), (Int8, -129), (Uint8, -1), (Uint8, 256), (Int64, 1 << 63), (Uint64, 1 << 64), (Bool, 1 << 63)]
    {
        let err = scalar_result(array, S::Int(value)).unwrap_err().to_string();
        let named = if array == Bool { Int64 } else { array };
        assert!(err.starts_with(&format!("{value} does not fit {named} (")), "{err}");
    }
}
