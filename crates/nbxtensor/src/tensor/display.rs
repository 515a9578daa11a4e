//! A tensor's values as text, as numpy prints an array: nested brackets, one width for every
//! element shown, and past [`SUMMARY_ELEMENTS`] elements a summary of the first and last
//! [`EDGE_ITEMS`] entries of each long dim around `...`.
//!
//! ```
//! use nbxtensor::Tensor;
//! let t = Tensor::from_vec(vec![1.5f32, -2.0, 3.25, 4.0], &[2, 2])?;
//! assert_eq!(t.to_string(), "Tensor([[ 1.5 , -2.  ],\n        [ 3.25,  4.  ]], dtype=float32)");
//! // each float in the shortest decimal of its own dtype, as numpy prints it
//! let tenth = Tensor::from_vec(vec![0.1f32, 1.0 / 3.0], &[2])?;
//! assert_eq!(tenth.to_string(), "Tensor([0.1       , 0.33333334], dtype=float32)");
//! let big = Tensor::from_vec((0..2000).map(|v| v as i32).collect(), &[2000])?;
//! assert_eq!(big.to_string(), "Tensor([   0,    1,    2, ..., 1997, 1998, 1999], dtype=int32)");
//! let empty = Tensor::zeros(nbxtensor::DType::Float32, &[1, 0])?.expand(&[1 << 62, 0])?;
//! assert_eq!(empty.to_string(), "Tensor([], shape=(4611686018427387904, 0), dtype=float32)");
//! # Ok::<(), nbxtensor::Error>(())
//! ```

use super::Tensor;
use crate::dtype::DType;
use crate::facts::Kind;
use crate::memory::Device;
use std::fmt;

/// Tensors of more elements than this print a summary.
pub const SUMMARY_ELEMENTS: i64 = 1000;
/// Entries kept at each end of a summarized dim.
pub const EDGE_ITEMS: i64 = 3;

/// The shortest decimal that reads back as the same value of `dtype` (as numpy prints a
/// float32 `0.1` as `0.1`, not as the float64 it widens to, `0.10000000149011612`).
fn shortest(v: f64, dtype: DType) -> f64 {
    let same = |c: f64| match dtype {
        DType::Float32 | DType::Complex64 => c as f32 == v as f32,
        DType::Float16 => half::f16::from_f64(c) == half::f16::from_f64(v),
        DType::Bfloat16 => half::bf16::from_f64(c) == half::bf16::from_f64(v),
        _ => c == v,
    };
    if !v.is_finite() {
        return v;
    }
    (0..17).filter_map(|digits| format!("{v:.digits$e}").parse::<f64>().ok()).find(|&c| same(c)).unwrap_or(v)
}

/// One element as text, before padding.
fn texts(t: &Tensor) -> crate::Result<Vec<String>> {
    let dtype = t.dtype();
    let float = |v: f64| -> String {
        let v = shortest(v, dtype);
        if v.is_nan() {
            "nan".into()
        } else if v.is_infinite() {
            (if v > 0.0 { "inf" } else { "-inf" }).into()
        } else if v == v.trunc() && v.abs() < 1e16 {
            format!("{v:.0}.")
        } else {
            format!("{v}")
        }
    };
    Ok(match t.dtype().kind() {
        Kind::Bool => t.to_bytes()?.into_iter().map(|b| (if b != 0 { "True" } else { "False" }).to_string()).collect(),
        Kind::Int => t.cast(DType::Int64)?.to_vec::<i64>()?.iter().map(i64::to_string).collect(),
        Kind::Uint => t.cast(DType::Uint64)?.to_vec::<u64>()?.iter().map(u64::to_string).collect(),
        Kind::Float => t.cast(DType::Float64)?.to_vec::<f64>()?.into_iter().map(float).collect(),
        Kind::Complex => {
            // complex128 bytes: each element its real then its imaginary float64
            let values = t.cast(DType::Complex128)?.contiguous()?.to_bytes()?;
            values
                .chunks_exact(16)
                .map(|c| {
                    let re = f64::from_le_bytes(c[..8].try_into().expect("8 bytes"));
                    let im = f64::from_le_bytes(c[8..].try_into().expect("8 bytes"));
                    format!("{}{}{}j", float(re), if im < 0.0 || im.is_sign_negative() { "" } else { "+" }, float(im))
                })
                .collect()
        }
        Kind::Packed => {
            return Err(crate::tensor::TensorError::Invalid("a packed dtype has no per-element values".into()).into())
        }
    })
}

/// The tensor summarized for printing (each long dim cut to its edges), on the host, and which
/// dims were cut.
fn summarized(t: &Tensor) -> crate::Result<(Tensor, Vec<bool>)> {
    let mut t = t.to(Device::CPU)?;
    let mut cut = vec![false; t.ndim()];
    if t.numel() <= SUMMARY_ELEMENTS {
        return Ok((t, cut));
    }
    for (axis, cut) in cut.iter_mut().enumerate() {
        let size = t.shape()[axis];
        if size > 2 * EDGE_ITEMS {
            let (head, tail) =
                (t.narrow(axis as i64, 0, EDGE_ITEMS)?, t.narrow(axis as i64, size - EDGE_ITEMS, EDGE_ITEMS)?);
            t = Tensor::concat(&[&head, &tail], axis as i64)?;
            *cut = true;
        }
    }
    Ok((t, cut))
}

/// Writes the nested rows of `shape` from `values` (row-major), `indent` columns in.
fn nest(out: &mut String, values: &[String], shape: &[i64], cut: &[bool], indent: usize) {
    let Some(&size) = shape.first() else {
        out.push_str(&values[0]);
        return;
    };
    let inner: usize = shape[1..].iter().product::<i64>() as usize;
    out.push('[');
    for i in 0..size as usize {
        if i > 0 {
            out.push(',');
            if shape.len() > 1 {
                out.push_str(&"\n".repeat(shape.len() - 1));
                out.push_str(&" ".repeat(indent + 1));
            } else {
                out.push(' ');
            }
        }
        if cut[0] && i == EDGE_ITEMS as usize {
            out.push_str("...,");
            if shape.len() > 1 {
                out.push('\n');
                out.push_str(&" ".repeat(indent + 1));
            } else {
                out.push(' ');
            }
        }
        nest(out, &values[i * inner..(i + 1) * inner], &shape[1..], &cut[1..], indent + 1);
    }
    out.push(']');
}

impl fmt::Display for Tensor {
    /// numpy's layout of the values, then the dtype (and the device, off the host).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let device = if self.device() == Device::CPU { String::new() } else { format!(", device={}", self.device()) };
        if self.storage().is_symbolic() {
            return write!(f, "Tensor(<traced>, shape={:?}, dtype={}{device})", self.shape(), self.dtype());
        }
        if self.numel() == 0 {
            // as numpy writes an empty array: its shape, unless it is (0,) (however long its
            // other dims: a broadcast of 2^62 empty rows is one line, not 2^62 brackets)
            let shape = match self.shape() {
                [0] => String::new(),
                [d] => format!(", shape=({d},)"),
                dims => format!(", shape=({})", dims.iter().map(i64::to_string).collect::<Vec<_>>().join(", ")),
            };
            return write!(f, "Tensor([]{shape}, dtype={}{device})", self.dtype());
        }
        let rendered = summarized(self).and_then(|(t, cut)| {
            let values = texts(&t)?;
            Ok((t, cut, values))
        });
        let (t, cut, values) = match rendered {
            Ok(parts) => parts,
            Err(e) => {
                return write!(f, "Tensor(<unreadable: {e}>, shape={:?}, dtype={}{device})", self.shape(), self.dtype())
            }
        };
        let width = values.iter().map(|v| v.chars().count()).max().unwrap_or(0);
        // floats align on their point, as numpy pads the fraction; other kinds to the right
        let padded: Vec<String> = if self.dtype().is_float() {
            let point = |v: &str| v.find('.').unwrap_or(v.len());
            let left = values.iter().map(|v| point(v)).max().unwrap_or(0);
            let right = values.iter().map(|v| v.len() - point(v)).max().unwrap_or(0);
            values
                .iter()
                .map(|v| format!("{}{v}{}", " ".repeat(left - point(v)), " ".repeat(right - (v.len() - point(v)))))
                .collect()
        } else {
            values.iter().map(|v| format!("{v:>width$}")).collect()
        };
        let mut body = String::new();
        nest(&mut body, &padded, t.shape(), &cut, "Tensor(".len());
        write!(f, "Tensor({body}, dtype={}{device})", self.dtype())
    }
}
