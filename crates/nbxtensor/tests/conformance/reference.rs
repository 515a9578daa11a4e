//! Float64 references, written here and nowhere in the library: the element codecs of every
//! dtype (the binary float formats rounded to nearest-even from float64 by this file's own
//! arithmetic), integer wrapping, erf/erfc, and the comparison of a result with a reference
//! under a stated tolerance.
//!
//! Tolerances ([`Tol`]) are counted in ulps of the type a kernel computes in (float32 for
//! float32, float16 and bfloat16; float64 for float64) at the reference value, plus an
//! absolute term where the op cancels; a result stored in a narrower dtype than it was
//! computed in is also allowed that dtype's rounding (half an ulp of the stored dtype). An
//! exact tolerance asks for the reference rounded once to the dtype, bit for bit (NaN for NaN).

use nbxtensor::DType;

/// One element, as the reference holds it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Elem {
    /// A real float (any float dtype).
    F(f64),
    /// An integer (any integer dtype), its value.
    I(i128),
    /// A bool.
    B(bool),
    /// A complex number, real and imaginary parts.
    C(f64, f64),
}

impl Elem {
    /// The value as float64 (bool as 0/1; complex: its real part).
    pub fn f(self) -> f64 {
        match self {
            Elem::F(v) => v,
            Elem::I(v) => v as f64,
            Elem::B(b) => f64::from(u8::from(b)),
            Elem::C(re, _) => re,
        }
    }

    /// The integer value (panics on another kind: a test's own mistake).
    pub fn i(self) -> i128 {
        match self {
            Elem::I(v) => v,
            Elem::B(b) => i128::from(b),
            other => panic!("not an integer element: {other:?}"),
        }
    }

    /// The truth value (bool elements; nonzero for the others).
    pub fn b(self) -> bool {
        match self {
            Elem::B(b) => b,
            Elem::I(v) => v != 0,
            Elem::F(v) => v != 0.0,
            Elem::C(re, im) => re != 0.0 || im != 0.0,
        }
    }
}

/// A binary floating-point format: stored mantissa bits, exponent bits, whether the
/// all-ones exponent means infinity/NaN (IEEE) or the format has no infinity (float8_e4m3fn:
/// only the all-ones pattern is NaN), and its largest finite value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Format {
    /// Stored mantissa bits.
    pub mantissa: i32,
    /// Exponent bits.
    pub exponent: i32,
    /// Whether it has infinities.
    pub inf: bool,
    /// The largest finite value.
    pub max: f64,
}

/// float32: IEEE binary32.
pub const F32: Format = Format { mantissa: 23, exponent: 8, inf: true, max: f32::MAX as f64 };
/// float64: IEEE binary64.
pub const F64: Format = Format { mantissa: 52, exponent: 11, inf: true, max: f64::MAX };
/// float16: IEEE binary16.
pub const F16: Format = Format { mantissa: 10, exponent: 5, inf: true, max: 65504.0 };
/// bfloat16: 8 exponent bits, 7 mantissa bits.
pub const BF16: Format = Format { mantissa: 7, exponent: 8, inf: true, max: 3.389_531_389_251_535_5e38 };
/// float8_e4m3fn (no infinity; S.1111.111 is NaN; the largest finite value 448).
pub const E4M3: Format = Format { mantissa: 3, exponent: 4, inf: false, max: 448.0 };
/// float8_e5m2 (IEEE-like).
pub const E5M2: Format = Format { mantissa: 2, exponent: 5, inf: true, max: 57344.0 };

/// The format of a float dtype (complex dtypes: of their parts); `None` for the others.
pub fn format(dtype: DType) -> Option<Format> {
    Some(match dtype {
        DType::Float32 | DType::Complex64 => F32,
        DType::Float64 | DType::Complex128 => F64,
        DType::Float16 => F16,
        DType::Bfloat16 => BF16,
        DType::Float8E4m3fn => E4M3,
        DType::Float8E5m2 => E5M2,
        _ => return None,
    })
}

/// The float format `dtype` is computed in by the arithmetic kernels: float32 for float32,
/// float16, bfloat16 and complex64's parts; float64 for float64 and complex128's parts.
pub fn compute_format(dtype: DType) -> Format {
    if matches!(dtype, DType::Float64 | DType::Complex128) {
        F64
    } else {
        F32
    }
}

/// 2^e as float64 (any e a float64 holds, subnormals included).
pub fn pow2(e: i32) -> f64 {
    if e >= -1022 {
        f64::from_bits(((e + 1023) as u64) << 52)
    } else {
        f64::from_bits(1u64 << (e + 1074))
    }
}

/// The exponent of |v| (floor of log2), for a finite nonzero v.
fn exponent_of(v: f64) -> i32 {
    let bits = v.abs().to_bits();
    let field = (bits >> 52) as i32;
    if field == 0 {
        // subnormal float64: 2^-1074 · mantissa
        -1074 + (63 - (bits & ((1 << 52) - 1)).leading_zeros() as i32)
    } else {
        field - 1023
    }
}

impl Format {
    /// The exponent bias.
    pub fn bias(self) -> i32 {
        (1 << (self.exponent - 1)) - 1
    }

    /// The smallest normal exponent.
    pub fn emin(self) -> i32 {
        1 - self.bias()
    }

    /// Machine epsilon, 2^-mantissa.
    pub fn eps(self) -> f64 {
        pow2(-self.mantissa)
    }

    /// The spacing of the format's values at |v| (the smallest subnormal's below the normals).
    pub fn ulp(self, v: f64) -> f64 {
        let a = v.abs();
        if a == 0.0 || !a.is_finite() {
            return pow2(self.emin() - self.mantissa);
        }
        pow2(exponent_of(a).max(self.emin()) - self.mantissa)
    }

    /// `v` rounded to the format, to nearest with ties to even; past the largest finite value
    /// infinity (NaN where the format has none); NaN stays NaN.
    pub fn round(self, v: f64) -> f64 {
        if v.is_nan() || v == 0.0 {
            return v;
        }
        if v.is_infinite() {
            return if self.inf { v } else { f64::NAN };
        }
        if self == F64 {
            return v;
        }
        let q = self.ulp(v);
        let r = (v.abs() / q).round_ties_even() * q;
        if r > self.max {
            return if self.inf { f64::INFINITY.copysign(v) } else { f64::NAN };
        }
        r.copysign(v)
    }

    /// The bit pattern of `v` (a value of the format: rounded first); NaN keeps its sign.
    pub fn encode(self, v: f64) -> u64 {
        if self == F64 {
            return v.to_bits();
        }
        if self == F32 {
            return u64::from((v as f32).to_bits());
        }
        let v = self.round(v);
        let sign = u64::from(v.is_sign_negative()) << (self.mantissa + self.exponent);
        let all_ones = (1u64 << self.exponent) - 1;
        if v.is_nan() {
            let quiet = if self.inf {
                (all_ones << self.mantissa) | (1 << (self.mantissa - 1))
            } else {
                (all_ones << self.mantissa) | ((1 << self.mantissa) - 1)
            };
            return sign | quiet;
        }
        if v.is_infinite() {
            return sign | (all_ones << self.mantissa);
        }
        let a = v.abs();
        if a == 0.0 {
            return sign;
        }
        let e = exponent_of(a);
        if e < self.emin() {
            let mantissa = (a / pow2(self.emin() - self.mantissa)) as u64;
            return sign | mantissa;
        }
        let field = (e + self.bias()) as u64;
        let mantissa = ((a / pow2(e) - 1.0) * pow2(self.mantissa)) as u64;
        sign | (field << self.mantissa) | mantissa
    }

    /// The value of a bit pattern.
    pub fn decode(self, bits: u64) -> f64 {
        if self == F64 {
            return f64::from_bits(bits);
        }
        if self == F32 {
            return f64::from(f32::from_bits(bits as u32));
        }
        let negative = (bits >> (self.mantissa + self.exponent)) & 1 == 1;
        let field = ((bits >> self.mantissa) & ((1 << self.exponent) - 1)) as i32;
        let mantissa = bits & ((1 << self.mantissa) - 1);
        let all_ones = (1 << self.exponent) - 1;
        let magnitude = if field == all_ones && self.inf {
            if mantissa == 0 {
                f64::INFINITY
            } else {
                f64::NAN
            }
        } else if field == all_ones && mantissa == (1 << self.mantissa) - 1 {
            f64::NAN
        } else if field == 0 {
            mantissa as f64 * pow2(self.emin() - self.mantissa)
        } else {
            (1.0 + mantissa as f64 * pow2(-self.mantissa)) * pow2(field - self.bias())
        };
        if negative {
            -magnitude
        } else {
            magnitude
        }
    }
}

/// The value range of an integer dtype.
pub fn int_range(dtype: DType) -> Option<(i128, i128)> {
    Some(match dtype {
        DType::Int8 => (i8::MIN.into(), i8::MAX.into()),
        DType::Int16 => (i16::MIN.into(), i16::MAX.into()),
        DType::Int32 => (i32::MIN.into(), i32::MAX.into()),
        DType::Int64 => (i64::MIN.into(), i64::MAX.into()),
        DType::Uint8 => (0, u8::MAX.into()),
        DType::Uint16 => (0, u16::MAX.into()),
        DType::Uint32 => (0, u32::MAX.into()),
        DType::Uint64 => (0, u64::MAX.into()),
        _ => return None,
    })
}

/// Whether `dtype` is one of the integers.
pub fn is_int(dtype: DType) -> bool {
    int_range(dtype).is_some()
}

/// Whether `dtype` is a signed integer.
pub fn is_signed(dtype: DType) -> bool {
    int_range(dtype).is_some_and(|(low, _)| low < 0)
}

/// Whether `dtype` is a real float.
pub fn is_real(dtype: DType) -> bool {
    matches!(
        dtype,
        DType::Float32 | DType::Float64 | DType::Float16 | DType::Bfloat16 | DType::Float8E4m3fn | DType::Float8E5m2
    )
}

/// Whether `dtype` is complex.
pub fn is_complex(dtype: DType) -> bool {
    matches!(dtype, DType::Complex64 | DType::Complex128)
}

/// The bytes of one element of `dtype`.
pub fn width(dtype: DType) -> usize {
    match dtype {
        DType::Bool | DType::Int8 | DType::Uint8 | DType::Float8E4m3fn | DType::Float8E5m2 => 1,
        DType::Int16 | DType::Uint16 | DType::Float16 | DType::Bfloat16 => 2,
        DType::Int32 | DType::Uint32 | DType::Float32 => 4,
        DType::Int64 | DType::Uint64 | DType::Float64 | DType::Complex64 => 8,
        DType::Complex128 => 16,
        other => panic!("{other} has no per-element width"),
    }
}

/// `v` wrapped into `dtype`'s range (two's complement, as numpy and Rust's `as`).
pub fn wrap(dtype: DType, v: i128) -> i128 {
    let bits = 8 * width(dtype) as u32;
    let masked = (v as u128) & (u128::MAX >> (128 - bits));
    if is_signed(dtype) && masked >> (bits - 1) == 1 {
        (masked as i128) - (1i128 << bits)
    } else {
        masked as i128
    }
}

/// The little-endian bytes of `values` as elements of `dtype` (floats rounded to it first).
pub fn encode(dtype: DType, values: &[Elem]) -> Vec<u8> {
    let w = width(dtype);
    let mut out = Vec::with_capacity(values.len() * w);
    for &v in values {
        match (v, dtype) {
            (Elem::B(b), DType::Bool) => out.push(u8::from(b)),
            (Elem::I(i), _) if is_int(dtype) => out.extend_from_slice(&(wrap(dtype, i) as u128).to_le_bytes()[..w]),
            (Elem::F(x), _) if is_real(dtype) => {
                out.extend_from_slice(&format(dtype).unwrap().encode(x).to_le_bytes()[..w])
            }
            (Elem::C(re, im), _) if is_complex(dtype) => {
                let part = format(dtype).unwrap();
                out.extend_from_slice(&part.encode(re).to_le_bytes()[..w / 2]);
                out.extend_from_slice(&part.encode(im).to_le_bytes()[..w / 2]);
            }
            (v, d) => panic!("cannot store {v:?} as {d}"),
        }
    }
    out
}

/// The elements of `dtype` in little-endian `bytes`.
pub fn decode(dtype: DType, bytes: &[u8]) -> Vec<Elem> {
    let w = width(dtype);
    assert_eq!(bytes.len() % w, 0, "{} bytes are not whole {dtype} elements", bytes.len());
    bytes
        .chunks_exact(w)
        .map(|chunk| {
            let word = |b: &[u8]| {
                let mut buf = [0u8; 16];
                buf[..b.len()].copy_from_slice(b);
                u128::from_le_bytes(buf)
            };
            if dtype == DType::Bool {
                Elem::B(chunk[0] != 0)
            } else if is_int(dtype) {
                Elem::I(wrap(dtype, word(chunk) as i128))
            } else if is_real(dtype) {
                Elem::F(format(dtype).unwrap().decode(word(chunk) as u64))
            } else {
                let part = format(dtype).unwrap();
                let (re, im) = chunk.split_at(w / 2);
                Elem::C(part.decode(word(re) as u64), part.decode(word(im) as u64))
            }
        })
        .collect()
}

/// A tolerance: `ulps` of the compute type at the reference, plus `abs`; `zeros` asks for the
/// sign of a zero result to match (IEEE-defined results).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Tol {
    /// Ulps of the compute type (float32 or float64) at the reference value.
    pub ulps: f64,
    /// An absolute allowance.
    pub abs: f64,
    /// Whether the sign of a zero is compared.
    pub zeros: bool,
}

impl Tol {
    /// The reference rounded once to the dtype, bit for bit (zeros signed).
    pub const EXACT: Tol = Tol { ulps: 0.0, abs: 0.0, zeros: true };
    /// As [`Tol::EXACT`], a zero of either sign accepted.
    pub const EXACT_VALUE: Tol = Tol { ulps: 0.0, abs: 0.0, zeros: false };

    /// `ulps` of the compute type.
    pub const fn ulps(ulps: f64) -> Tol {
        Tol { ulps, abs: 0.0, zeros: false }
    }

    /// `ulps` of the compute type plus an absolute `abs`.
    pub const fn with_abs(ulps: f64, abs: f64) -> Tol {
        Tol { ulps, abs, zeros: false }
    }

    /// Whether this asks for exact results.
    pub fn is_exact(self) -> bool {
        self.ulps == 0.0 && self.abs == 0.0
    }
}

/// Whether the float result `got` (a value of `dtype`) meets `want` (float64) under `tol`.
pub fn float_ok(dtype: DType, got: f64, want: f64, tol: Tol) -> bool {
    if want.is_nan() {
        return got.is_nan();
    }
    let stored = format(dtype).expect("a float dtype");
    let rounded = stored.round(want);
    if tol.is_exact() || rounded.is_nan() {
        if rounded.is_nan() {
            return got.is_nan();
        }
        let same_zero = !tol.zeros || rounded != 0.0 || got.is_sign_negative() == rounded.is_sign_negative();
        return got == rounded && same_zero;
    }
    if got.is_nan() {
        return false;
    }
    if got.is_infinite() || want.is_infinite() {
        // an infinite reference, or a finite one whose rounding overflows, is met by that infinity
        return got == rounded;
    }
    let compute = compute_format(dtype);
    let scale = want.abs().max(got.abs());
    let storing = if stored == compute { 0.0 } else { 0.5 * stored.ulp(scale) };
    let allowed = storing + tol.ulps * compute.ulp(want) + tol.abs;
    let same_zero = !tol.zeros || got != 0.0 || want != 0.0 || got.is_sign_negative() == want.is_sign_negative();
    (got - want).abs() <= allowed && same_zero
}

/// Whether the complex result `got` meets `want` under `tol`, its ulps counted at |want| (the
/// error of a complex function is measured by its distance to the reference, each part allowed
/// that distance): exact tolerances, and references or results with a part that is not finite,
/// compare each part as [`float_ok`] does.
pub fn complex_ok(dtype: DType, got: (f64, f64), want: (f64, f64), tol: Tol) -> bool {
    let finite = [got.0, got.1, want.0, want.1].iter().all(|v| v.is_finite());
    if tol.is_exact() || !finite {
        return float_ok(dtype, got.0, want.0, tol) && float_ok(dtype, got.1, want.1, tol);
    }
    let part = format(dtype).expect("a complex dtype");
    let magnitude = want.0.hypot(want.1);
    let allowed = tol.ulps * part.ulp(magnitude) + tol.abs;
    (got.0 - want.0).abs() <= allowed && (got.1 - want.1).abs() <= allowed
}

/// Asserts every element of `got` meets `want` (floats under `tol(i)`, the others exactly),
/// naming `what`, the element and both values.
pub fn assert_elems(what: &str, dtype: DType, got: &[Elem], want: &[Elem], tol: impl Fn(usize) -> Tol) {
    assert_elems_or(what, dtype, got, want, &[], tol)
}

/// [`assert_elems`], an element also accepted where it meets one of `alternatives` (the
/// results a device that flushes float32 subnormals may give, [`Target::flushes_subnormals`]).
///
/// [`Target::flushes_subnormals`]: crate::harness::Target::flushes_subnormals
pub fn assert_elems_or(
    what: &str,
    dtype: DType,
    got: &[Elem],
    want: &[Elem],
    alternatives: &[Vec<Elem>],
    tol: impl Fn(usize) -> Tol,
) {
    assert_eq!(got.len(), want.len(), "{what}: {} elements, the reference has {}", got.len(), want.len());
    let meets = |g: Elem, w: Elem, i: usize| match (g, w) {
        (Elem::F(g), Elem::F(w)) => float_ok(dtype, g, w, tol(i)),
        (Elem::C(gr, gi), Elem::C(wr, wi)) => complex_ok(dtype, (gr, gi), (wr, wi), tol(i)),
        (Elem::I(g), Elem::I(w)) => g == w,
        (Elem::B(g), Elem::B(w)) => g == w,
        _ => false,
    };
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        let ok = meets(g, w, i) || alternatives.iter().any(|alt| meets(g, alt[i], i));
        if alternatives.is_empty() {
            assert!(ok, "{what}: element {i}: got {g:?}, the reference is {w:?} (tolerance {:?})", tol(i));
        } else {
            let others: Vec<Elem> = alternatives.iter().map(|alt| alt[i]).collect();
            assert!(
                ok,
                "{what}: element {i}: got {g:?}, the reference is {w:?}, flushing subnormals {others:?} (tolerance {:?})",
                tol(i)
            );
        }
    }
}

/// What a device that flushes float32 subnormals may give for `reference` of `operands`: the
/// reference of the flushed operands, its result as computed (a result built from bits, as
/// nextafter's, keeps a subnormal) and flushed. Nothing where the device keeps subnormals.
pub fn flushed_alternatives(
    flushes: bool,
    operands: &[&[Elem]],
    reference: impl Fn(&[Elem]) -> Elem,
) -> Vec<Vec<Elem>> {
    if !flushes {
        return Vec::new();
    }
    let n = operands.first().map_or(0, |o| o.len());
    let computed: Vec<Elem> =
        (0..n).map(|i| reference(&operands.iter().map(|o| flush_subnormal(o[i])).collect::<Vec<_>>())).collect();
    let flushed = computed.iter().map(|&e| flush_subnormal(e)).collect();
    vec![computed, flushed]
}

/// `e` as a device that flushes float32 subnormals reads or writes it: a real float below the
/// smallest normal float32 in magnitude becomes a zero of its sign; anything else is kept.
fn flush_subnormal(e: Elem) -> Elem {
    match e {
        Elem::F(v) if v != 0.0 && v.abs() < f64::from(f32::MIN_POSITIVE) => Elem::F(0.0f64.copysign(v)),
        other => other,
    }
}

/// The condition number of `f` at `x`, |x f'(x) / f(x)| (central difference in float64; 0 where
/// x or f(x) is 0 or not finite): how much a relative error of one ulp in an argument the
/// kernel rounds on the way grows in the result.
pub fn condition(f: impl Fn(f64) -> f64, x: f64) -> f64 {
    let y = f(x);
    if x == 0.0 || y == 0.0 || !x.is_finite() || !y.is_finite() {
        return 0.0;
    }
    let h = 1e-6;
    let (up, down) = (f(x * (1.0 + h)), f(x * (1.0 - h)));
    let k = ((up - down) / (2.0 * h * y)).abs();
    if k.is_finite() {
        k
    } else {
        0.0
    }
}

/// The Gauss error function, erf, in float64 (relative error of a few ulp): the series of
/// positive terms `2/√π · e^(-x²) · Σ 2ⁿ x^(2n+1) / (1·3·…·(2n+1))` below 2.5, `1 - erfc` beyond.
pub fn erf(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    let a = x.abs();
    if a >= 2.5 {
        return (1.0 - erfc(a)).copysign(x);
    }
    let (mut term, mut sum, mut n) = (a, a, 0.0);
    while term > 1e-18 * sum {
        n += 1.0;
        term *= 2.0 * a * a / (2.0 * n + 1.0);
        sum += term;
    }
    (std::f64::consts::FRAC_2_SQRT_PI * (-a * a).exp() * sum).copysign(x)
}

/// The complementary error function, erfc, in float64 (relative error below 7e-15 over
/// [-6, 6] against mpmath, the worst near 0.6 where the continued fraction converges slowly):
/// `1 - erf` below 0.5 in magnitude, the continued fraction of Laplace (Lentz's method) for
/// x ≥ 0.5, `2 - erfc(-x)` for x ≤ -0.5.
pub fn erfc(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    if x.abs() < 0.5 {
        return 1.0 - erf(x);
    }
    if x < 0.0 {
        return 2.0 - erfc(-x);
    }
    if x > 27.3 {
        return 0.0;
    }
    // erfc(x) = exp(-x²)/√π · 1/(x + (1/2)/(x + 1/(x + (3/2)/(x + 2/(x + …)))))
    let tiny = 1e-300;
    let mut f = x;
    let (mut c, mut d) = (x, 0.0);
    for n in 1..200_000 {
        let a = n as f64 / 2.0;
        d = x + a * d;
        d = if d == 0.0 { tiny } else { d };
        c = x + a / c;
        c = if c == 0.0 { tiny } else { c };
        d = 1.0 / d;
        let delta = c * d;
        f *= delta;
        if (delta - 1.0).abs() < 1e-17 {
            break;
        }
    }
    (-x * x).exp() / (f * std::f64::consts::PI.sqrt())
}

/// Checks this file's references against tabulated values: erf and erfc (Abramowitz &
/// Stegun, Table 7.1, and their complements), the float codecs' patterns of known values and
/// their rounding of ties and overflows.
pub fn self_check() {
    for (x, want) in [
        (0.1, 0.112_462_916_018_284_9),
        (0.5, 0.520_499_877_813_046_5),
        (1.0, 0.842_700_792_949_714_9),
        (2.0, 0.995_322_265_018_952_7),
        (3.0, 0.999_977_909_503_001_4),
    ] {
        assert!((erf(x) - want).abs() < 4.5e-16, "erf({x}) = {}, tabulated {want}", erf(x));
        assert!((erf(-x) + want).abs() < 4.5e-16);
    }
    for (x, want) in [
        (0.5, 0.479_500_122_186_953_5),
        (1.0, 0.157_299_207_050_285_13),
        (2.0, 0.004_677_734_981_047_266),
        (3.0, 2.209_049_699_858_544e-5),
        (5.0, 1.537_459_794_428_034_8e-12),
        (10.0, 2.088_487_583_762_544_8e-45),
    ] {
        assert!((erfc(x) / want - 1.0).abs() < 1e-14, "erfc({x}) = {}, tabulated {want}", erfc(x));
        assert!((erfc(-x) - (2.0 - want)).abs() < 1e-15);
    }
    assert_eq!(erfc(30.0), 0.0);
    // float16: 1, its largest value, its smallest subnormal, a tie rounded to even, overflow
    assert_eq!(F16.encode(1.0), 0x3C00);
    assert_eq!(F16.encode(65504.0), 0x7BFF);
    assert_eq!(F16.encode(pow2(-24)), 0x0001);
    assert_eq!(F16.round(1.0 + pow2(-11)), 1.0);
    assert_eq!(F16.round(1.0 + 3.0 * pow2(-11)), 1.0 + pow2(-9));
    assert_eq!(F16.round(65520.0), f64::INFINITY);
    assert_eq!(F16.round(65519.0), 65504.0);
    assert_eq!(F16.decode(0xFC00), f64::NEG_INFINITY);
    assert!(F16.decode(0x7E00).is_nan());
    // bfloat16
    assert_eq!(BF16.encode(1.0), 0x3F80);
    assert_eq!(BF16.round(1.0 + pow2(-8)), 1.0);
    assert_eq!(BF16.decode(0x7F7F), BF16.max);
    // float8_e4m3fn: 448 is 0x7E, 464 ties to 448, past it NaN; float8_e5m2: 61440 ties to inf
    assert_eq!(E4M3.encode(1.0), 0x38);
    assert_eq!(E4M3.encode(448.0), 0x7E);
    assert_eq!(E4M3.round(464.0), 448.0);
    assert!(E4M3.round(465.0).is_nan());
    assert!(E4M3.round(f64::INFINITY).is_nan());
    assert_eq!(E4M3.encode(f64::NAN), 0x7F);
    assert_eq!(E4M3.decode(0x01), pow2(-9));
    assert_eq!(E5M2.encode(57344.0), 0x7B);
    assert_eq!(E5M2.round(61440.0), f64::INFINITY);
    assert_eq!(E5M2.encode(f64::NEG_INFINITY), 0xFC);
    // every pattern of the 8- and 16-bit formats decodes and encodes back (NaNs as NaN)
    for format in [F16, BF16, E4M3, E5M2] {
        let bits = 1 + format.mantissa + format.exponent;
        for pattern in 0..(1u64 << bits) {
            let v = format.decode(pattern);
            if v.is_nan() {
                assert!(format.decode(format.encode(v)).is_nan());
            } else {
                assert_eq!(format.encode(v), pattern, "{format:?}: pattern {pattern:#x} = {v}");
                assert_eq!(format.round(v), v);
            }
        }
    }
    // float32 and float64 pass through
    assert_eq!(F32.round(0.1), 0.1f32 as f64);
    assert_eq!(wrap(DType::Int8, 128), -128);
    assert_eq!(wrap(DType::Uint16, -1), 65535);
}
