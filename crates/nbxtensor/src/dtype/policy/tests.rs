//! Policies: jmp parsing, immutability by construction, op classes, fill values.

use super::*;
use crate::dtype::promotion::PyScalar;
use DType::*;

#[test]
fn jmp_spellings_and_defaults() {
    let cases = [
        ("params=float32,compute=float16,output=float32", (Float32, Float16, Float32)),
        ("p=f32,c=half,o=full", (Float32, Float16, Float32)),
        ("compute=bfloat16", (Float32, Bfloat16, Bfloat16)),
        ("params=float16", (Float16, Float16, Float16)),
        ("c=bf16,o=float32", (Float32, Bfloat16, Float32)),
        (" p = float64 , c = float32 ", (Float64, Float32, Float32)),
        ("bf16", (Bfloat16, Bfloat16, Bfloat16)),
        ("f32", (Float32, Float32, Float32)),
    ];
    for (text, (p, c, o)) in cases {
        let policy = Policy::parse(text).unwrap();
        assert_eq!((policy.params(), policy.compute(), policy.output()), (p, c, o), "{text}");
        assert_eq!(Policy::parse(&policy.to_string()).unwrap(), policy);
    }
}

#[test]
fn malformed_policies_are_refused_by_name() {
    let cases = [
        ("compute=float16,colour=float32", "'colour'"),
        ("compute=float77", "'float77'"),
        ("float77", "'float77'"),
        ("compute=float16,c=float32", "compute is given twice"),
        ("compute=float16,", "is not key=dtype"),
        ("compute=int8", "'int8' is int"),
    ];
    for (text, named) in cases {
        let err = Policy::parse(text).unwrap_err().to_string();
        assert!(err.contains(named), "{text}: {err}");
    }
}

#[test]
fn replace_makes_a_new_policy() {
    let p = Policy::parse("float16").unwrap();
    let q = p.replace(PolicyField::Output, Float32).unwrap();
    assert_eq!((p.output(), q.output(), q.compute()), (Float16, Float32, Float16));
    assert!(p.replace(PolicyField::Params, Uint8).is_err());
    assert_eq!(PolicyField::from_name("compute").unwrap(), PolicyField::Compute);
    assert!(PolicyField::from_name("c").unwrap_err().to_string().contains("'c'"));
}

#[test]
fn op_classes_decide_the_compute_dtype() {
    let p = Policy::parse("params=float32,compute=bfloat16").unwrap();
    assert_eq!(p.compute_dtype("linear", &[Float32, Float32]).unwrap(), Bfloat16);
    assert_eq!(p.compute_dtype("conv2d", &[]).unwrap(), Bfloat16);
    assert_eq!(p.compute_dtype("layer_norm", &[Bfloat16]).unwrap(), Float32);
    assert_eq!(p.compute_dtype("atan2", &[Bfloat16, Float64]).unwrap(), Float64);
    assert_eq!(p.compute_dtype("atan2", &[Bfloat16, Float16]).unwrap(), Float32);
    assert_eq!(p.compute_dtype("relu", &[Float16]).unwrap(), Float16);
    assert_eq!(p.compute_dtype("add", &[Int8, Uint8]).unwrap(), Int16);
    assert!(p.compute_dtype("relu", &[]).unwrap_err().to_string().contains("'relu'"));
    assert!(p.compute_dtype("dot", &[]).is_err());
}

#[test]
fn fill_values_fit_their_dtype() {
    let f = |value, dtype| fill_value("masked_fill", value, dtype);
    let bf16_min = -Bfloat16.float_format().unwrap().max;
    assert_eq!(f(PyScalar::Float(bf16_min), Float16).unwrap(), FillValue::Float(-65504.0));
    assert_eq!(f(PyScalar::Float(bf16_min), Float32).unwrap(), FillValue::Float(bf16_min));
    assert_eq!(f(PyScalar::Float(1e300), Float32).unwrap(), FillValue::Float(f32::MAX as f64));
    assert_eq!(f(PyScalar::Float(f64::INFINITY), Float16).unwrap(), FillValue::Float(f64::INFINITY));
    assert_eq!(f(PyScalar::Float(f64::INFINITY), Float8E4m3fn).unwrap(), FillValue::Float(448.0));
    assert_eq!(f(PyScalar::Float(-1e9), Float8E5m2).unwrap(), FillValue::Float(-57344.0));
    assert!(matches!(f(PyScalar::Float(f64::NAN), Bfloat16).unwrap(), FillValue::Float(x) if x.is_nan()));
    assert_eq!(f(PyScalar::Float(-1e300), Complex64).unwrap(), FillValue::Float(-(f32::MAX as f64)));
    assert_eq!(f(PyScalar::Float(-1e10), Int32).unwrap(), FillValue::Int(i32::MIN as i128));
    assert_eq!(f(PyScalar::Float(f64::NEG_INFINITY), Uint8).unwrap(), FillValue::Int(0));
    assert_eq!(f(PyScalar::Int(1 << 70), Uint64).unwrap(), FillValue::Int(u64::MAX as i128));
    assert_eq!(f(PyScalar::Bool(true), Int8).unwrap(), FillValue::Int(1));
    assert_eq!(f(PyScalar::Int(0), Bool).unwrap(), FillValue::Bool(false));
    assert_eq!(f(PyScalar::Float(1.0), Bool).unwrap(), FillValue::Bool(true));
    for (value, dtype, named) in [
        (PyScalar::Float(0.5), Int32, "integral"),
        (PyScalar::Float(f64::NAN), Int8, "NaN"),
        (PyScalar::Int(2), Bool, "0 or 1"),
        (PyScalar::Complex { re: 1.0, im: 0.0 }, Float32, "real"),
        (PyScalar::Float(0.0), Int4G128Sym, "packed"),
    ] {
        let err = f(value, dtype).unwrap_err().to_string();
        assert!(
            err.starts_with("masked_fill: fill value") && err.contains(dtype.name()) && err.contains(named),
            "{err}"
        );
    }
}
