//! Accurate float32 functions for WGSL kernels, computed in float64 arithmetic (WGSL's own
//! exp, log and the like are allowed several ulps and more near their edges; float64 has only
//! the arithmetic, so the functions are built of it): each lands within an ulp of the true
//! value. They need the adapter's `shader-f64`; a kernel using them on an adapter without it is
//! refused by name ([`Gpu::require_f64`]).

use super::gpu::Gpu;
use crate::kernel::{KernelError, Result};

/// `exp_f32(x)`: e^x to within an ulp (range reduction by ln 2 in float64, a Taylor polynomial of
/// degree 12 on |r| ≤ ln 2 / 2, the power of two applied in float64 and rounded once).
pub const EXP: &str = r#"
fn exp_f64(v: f64) -> f64 {
    let x = clamp(v, -1100.0, 1100.0);
    let k = floor(x * 1.4426950408889634 + 0.5);
    let r = x - k * 0.6931471805599453 - k * 2.3190468138462996e-17;
    var p: f64 = 2.08767569878681e-9;
    p = p * r + 2.505210838544172e-8;
    p = p * r + 2.755731922398589e-7;
    p = p * r + 2.7557319223985893e-6;
    p = p * r + 2.48015873015873e-5;
    p = p * r + 1.984126984126984e-4;
    p = p * r + 1.388888888888889e-3;
    p = p * r + 8.333333333333333e-3;
    p = p * r + 4.1666666666666664e-2;
    p = p * r + 1.6666666666666666e-1;
    p = p * r + 0.5;
    p = p * r + 1.0;
    p = p * r + 1.0;
    return ldexp(p, i32(k));
}
fn exp_f32(x: f32) -> f32 {
    if ((bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u) { return x; }
    if (x > 88.8) { return bitcast<f32>(0x7f800000u); }
    if (x < -104.0) { return 0.0; }
    return f32(exp_f64(f64(x)));
}
"#;

/// `log_f64(x)` (x > 0 finite): the exponent by `frexp`, the significand's logarithm as
/// `2·atanh((m − 1)/(m + 1))` on m in [√½, √2).
pub const LOG: &str = r#"
// x = m · 2^e with m in [0.5, 1), for x in (1e-60, 1e90): float32's frexp on a scaled copy
// (float64's frexp is not offered everywhere), corrected where its rounding crossed a power of 2
fn frexp_f64(x: f64) -> vec2<f64> {
    var y = x;
    var e = 0;
    if (y > 1e30) {
        y = y * 2.938735877055719e-39;
        e = 128;
    } else if (y < 1e-30) {
        y = y * 3.402823669209385e38;
        e = -128;
    }
    let f = frexp(f32(y)).exp;
    var m = ldexp(y, -f);
    e = e + f;
    if (m >= 1.0) {
        m = m * 0.5;
        e = e + 1;
    }
    if (m < 0.5) {
        m = m * 2.0;
        e = e - 1;
    }
    return vec2<f64>(m, f64(e));
}
fn log_f64(x: f64) -> f64 {
    let parts = frexp_f64(x);
    var m = parts.x;
    var e = parts.y;
    if (m < 0.7071067811865476) {
        m = m * 2.0;
        e = e - 1.0;
    }
    let s = (m - 1.0) / (m + 1.0);
    let s2 = s * s;
    var t: f64 = 1.0 / 23.0;
    t = t * s2 + 1.0 / 21.0;
    t = t * s2 + 1.0 / 19.0;
    t = t * s2 + 1.0 / 17.0;
    t = t * s2 + 1.0 / 15.0;
    t = t * s2 + 1.0 / 13.0;
    t = t * s2 + 1.0 / 11.0;
    t = t * s2 + 1.0 / 9.0;
    t = t * s2 + 1.0 / 7.0;
    t = t * s2 + 1.0 / 5.0;
    t = t * s2 + 1.0 / 3.0;
    t = t * s2 + 1.0;
    return e * 0.6931471805599453 + e * 2.3190468138462996e-17 + 2.0 * s * t;
}
// ln(1 + x) for x > -1, accurate near 0
fn log1p_f64(x: f64) -> f64 {
    if (abs(x) < 0.0009765625) {
        return x * (1.0 - x * (0.5 - x * (1.0 / 3.0 - x * 0.25)));
    }
    return log_f64(1.0 + x);
}
// e^x - 1, accurate near 0
fn expm1_f64(x: f64) -> f64 {
    if (abs(x) < 0.25) {
        var t: f64 = 1.0 / 3628800.0;
        t = t * x + 1.0 / 362880.0;
        t = t * x + 1.0 / 40320.0;
        t = t * x + 1.0 / 5040.0;
        t = t * x + 1.0 / 720.0;
        t = t * x + 1.0 / 120.0;
        t = t * x + 1.0 / 24.0;
        t = t * x + 1.0 / 6.0;
        t = t * x + 0.5;
        t = t * x + 1.0;
        return t * x;
    }
    return exp_f64(x) - 1.0;
}
"#;

/// `erf_f64(z)` and `erfc_f64(z)` for z ≥ 0: the Taylor series up to 3, the continued fraction
/// (evaluated backward) beyond, each to about 1e-14.
pub const ERF: &str = r#"
fn erf_series(z: f64) -> f64 {
    let z2 = z * z;
    var term = z;
    var sum = z;
    for (var n = 1; n < 60; n++) {
        term = -term * z2 / f64(n);
        sum = sum + term / f64(2 * n + 1);
    }
    return sum * 1.1283791670955126;
}
fn erfc_f64(z: f64) -> f64 {
    if (z <= 3.0) {
        return 1.0 - erf_series(z);
    }
    var t = z;
    for (var k = 60; k >= 1; k--) {
        t = z + f64(k) * 0.5 / t;
    }
    return exp_f64(-z * z) * 0.5641895835477563 / t;
}
fn erf_f64(z: f64) -> f64 {
    if (z <= 3.0) {
        return erf_series(z);
    }
    return 1.0 - erfc_f64(z);
}
"#;

impl Gpu {
    /// Refuses `op` on an adapter without `shader-f64`, which its kernel computes in.
    pub(super) fn require_f64(&self, op: &str) -> Result<()> {
        if self.facts.shader_f64 {
            return Ok(());
        }
        Err(KernelError::Invalid(format!(
            "{op}: the wgpu kernel computes in float64 arithmetic, which the adapter {} of {} does not offer (shader-f64)",
            self.facts.name,
            self.label()
        )))
    }
}
