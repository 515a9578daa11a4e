// Unary ops: y[i] = f(x[i]). Floats (float32, float16, bfloat16) compute in float32; the
// integers (integers.cuh's storage) compute as themselves; bool reads as 0 or 1. The tests
// (isnan, isinf, isfinite, signbit) write bools. Contiguous input and output: 16-byte loads
// where both are 16-byte aligned and the output is as wide as the input, a scalar tail;
// otherwise (or for a strided input) one element per thread.
//
// Functions: unary_<op>_<dt>(const T* x, U* y, i64 n)                 contiguous
//            unary_<op>_<dt>_strided(const T* x, Layout lx, U* y, i64 n)
//            unary_clip_<dt>(const T* x, T* y, i64 n, Bounds b) and _strided (the bounds last)
// The floats, the integers and bool are compiled apart (the Rust side defines one group).

// float ops on the loaded float32 value
#define NBX_OP_neg(v) (-(v))
#define NBX_OP_abs(v) fabsf(v)
#define NBX_OP_exp(v) expf(v)
#define NBX_OP_log(v) logf(v)
#define NBX_OP_sqrt(v) sqrtf(v)
#define NBX_OP_rsqrt(v) (1.0f / sqrtf(v))
#define NBX_OP_tanh(v) tanhf(v)
#define NBX_OP_sigmoid(v) (1.0f / (1.0f + expf(-(v))))
#define NBX_OP_silu(v) ((v) / (1.0f + expf(-(v))))
#define NBX_OP_gelu(v) (0.5f * (v) * erfcf(-(v) * 0.70710678118654752f))
#define NBX_OP_gelu_tanh(v) ((v) / (1.0f + expf(-2.0f * 0.7978845608028654f * ((v) + 0.044715f * (v) * (v) * (v)))))
#define NBX_OP_relu(v) ((v) < 0.0f ? 0.0f : (v))
#define NBX_OP_sin(v) sinf(v)
#define NBX_OP_cos(v) cosf(v)
#define NBX_OP_tan(v) tanf(v)
#define NBX_OP_asin(v) asinf(v)
#define NBX_OP_acos(v) acosf(v)
#define NBX_OP_atan(v) atanf(v)
#define NBX_OP_sinh(v) sinhf(v)
#define NBX_OP_cosh(v) coshf(v)
#define NBX_OP_asinh(v) asinhf(v)
#define NBX_OP_acosh(v) acoshf(v)
#define NBX_OP_atanh(v) atanhf(v)
#define NBX_OP_expm1(v) expm1f(v)
#define NBX_OP_log1p(v) log1pf(v)
#define NBX_OP_log2(v) log2f(v)
#define NBX_OP_log10(v) log10f(v)
#define NBX_OP_reciprocal(v) (1.0f / (v))
#define NBX_OP_square(v) ((v) * (v))
// -1, 0 or 1; NaN stays NaN; both zeros give +0
#define NBX_OP_sign(v) ((v) > 0.0f ? 1.0f : ((v) < 0.0f ? -1.0f : ((v) == 0.0f ? 0.0f : (v))))
#define NBX_OP_floor(v) floorf(v)
#define NBX_OP_ceil(v) ceilf(v)
#define NBX_OP_round(v) rintf(v)
#define NBX_OP_trunc(v) truncf(v)
// tests of the loaded value (the half formats widen exactly, NaN signs and all)
#define NBX_TEST_isnan(v) ((v) != (v))
#define NBX_TEST_isinf(v) (fabsf(v) == __int_as_float(0x7f800000))
#define NBX_TEST_isfinite(v) (fabsf(v) < __int_as_float(0x7f800000))
#define NBX_TEST_signbit(v) ((__float_as_uint(v) >> 31) != 0)

template <typename S, typename D, typename F>
__device__ __forceinline__ void unary_contiguous(const typename S::T* x, typename D::T* y, i64 n, F f) {
    typedef typename S::T T;
    typedef typename D::T U;
    const int V = 16 / sizeof(T);
    i64 stride = nbx_stride(), start = nbx_first();
    bool vector = sizeof(T) == sizeof(U) && nbx_aligned(x, y, y);
    i64 body = vector ? n / V * V : 0;
    for (i64 v = start; v < body / V; v += stride) {
        union { uint4 raw; T e[16 / sizeof(T)]; } in;
        union { uint4 raw; U e[16 / sizeof(T)]; } out;
        in.raw = reinterpret_cast<const uint4*>(x)[v];
#pragma unroll
        for (int k = 0; k < V; ++k) out.e[k] = D::store(f(S::load(in.e[k])));
        reinterpret_cast<uint4*>(y)[v] = out.raw;
    }
    for (i64 i = body + start; i < n; i += stride) y[i] = D::store(f(S::load(x[i])));
}

template <typename S, typename D, typename F>
__device__ __forceinline__ void unary_strided(const typename S::T* x, Layout lx, typename D::T* y, i64 n, F f) {
    i64 stride = (i64)gridDim.x * blockDim.x;
    for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        y[i] = D::store(f(S::load(x[nbx_offset(lx, i)])));
}

// A bool output: the test's truth as 0 or 1.
struct Flag {
    typedef unsigned char T;
    static __device__ __forceinline__ unsigned char store(bool v) { return v ? 1 : 0; }
};

// clip's bounds: each side absent or a value (float for the floats, i64 for the integers).
struct Bounds {
    double low, high;
    i64 low_int, high_int;
    int has_low, has_high;
};

#define NBX_UNARY_KERNELS(name, dt, S, D, EXPR)                                                            \
    extern "C" __global__ void unary_##name##_##dt(const S::T* x, D::T* y, i64 n) {                        \
        nbx_await_inputs();                                                                                 \
        unary_contiguous<S, D>(x, y, n, [](auto v) { return EXPR(v); });                                    \
    }                                                                                                       \
    extern "C" __global__ void unary_##name##_##dt##_strided(const S::T* x, Layout lx, D::T* y, i64 n) {   \
        nbx_await_inputs();                                                                                 \
        unary_strided<S, D>(x, lx, y, n, [](auto v) { return EXPR(v); });                                   \
    }

#define NBX_CLIP_KERNELS(dt, S, LOW, HIGH)                                                                  \
    extern "C" __global__ void unary_clip_##dt(const S::T* x, S::T* y, i64 n, Bounds b) {                  \
        nbx_await_inputs();                                                                                 \
        unary_contiguous<S, S>(x, y, n, [b](auto v) {                                                       \
            if (b.has_low && v < (LOW)) v = (LOW);                                                          \
            if (b.has_high && v > (HIGH)) v = (HIGH);                                                       \
            return v;                                                                                       \
        });                                                                                                 \
    }                                                                                                       \
    extern "C" __global__ void unary_clip_##dt##_strided(const S::T* x, Layout lx, S::T* y, i64 n, Bounds b) { \
        nbx_await_inputs();                                                                                 \
        unary_strided<S, S>(x, lx, y, n, [b](auto v) {                                                      \
            if (b.has_low && v < (LOW)) v = (LOW);                                                          \
            if (b.has_high && v > (HIGH)) v = (HIGH);                                                       \
            return v;                                                                                       \
        });                                                                                                 \
    }

#ifdef NBX_UNARY_FLOATS
#define NBX_UNARY(op, dt, S) NBX_UNARY_KERNELS(op, dt, S, S, NBX_OP_##op)
#define NBX_TEST(op, dt, S) NBX_UNARY_KERNELS(op, dt, S, Flag, NBX_TEST_##op)
#define NBX_UNARY_ALL(op) NBX_UNARY(op, fp32, F32) NBX_UNARY(op, fp16, F16) NBX_UNARY(op, bf16, BF16)
#define NBX_TEST_ALL(op) NBX_TEST(op, fp32, F32) NBX_TEST(op, fp16, F16) NBX_TEST(op, bf16, BF16)
NBX_UNARY_ALL(neg)
NBX_UNARY_ALL(abs)
NBX_UNARY_ALL(exp)
NBX_UNARY_ALL(log)
NBX_UNARY_ALL(sqrt)
NBX_UNARY_ALL(rsqrt)
NBX_UNARY_ALL(tanh)
NBX_UNARY_ALL(sigmoid)
NBX_UNARY_ALL(silu)
NBX_UNARY_ALL(gelu)
NBX_UNARY_ALL(gelu_tanh)
NBX_UNARY_ALL(relu)
NBX_UNARY_ALL(sin)
NBX_UNARY_ALL(cos)
NBX_UNARY_ALL(tan)
NBX_UNARY_ALL(asin)
NBX_UNARY_ALL(acos)
NBX_UNARY_ALL(atan)
NBX_UNARY_ALL(sinh)
NBX_UNARY_ALL(cosh)
NBX_UNARY_ALL(asinh)
NBX_UNARY_ALL(acosh)
NBX_UNARY_ALL(atanh)
NBX_UNARY_ALL(expm1)
NBX_UNARY_ALL(log1p)
NBX_UNARY_ALL(log2)
NBX_UNARY_ALL(log10)
NBX_UNARY_ALL(reciprocal)
NBX_UNARY_ALL(square)
NBX_UNARY_ALL(sign)
NBX_UNARY_ALL(floor)
NBX_UNARY_ALL(ceil)
NBX_UNARY_ALL(round)
NBX_UNARY_ALL(trunc)
NBX_TEST_ALL(isnan)
NBX_TEST_ALL(isinf)
NBX_TEST_ALL(isfinite)
NBX_TEST_ALL(signbit)
// the bounds rounded to float32, as the host's compute type holds them
#define NBX_CLIP_FLOAT(dt, S) NBX_CLIP_KERNELS(dt, S, (float)b.low, (float)b.high)
NBX_CLIP_FLOAT(fp32, F32)
NBX_CLIP_FLOAT(fp16, F16)
NBX_CLIP_FLOAT(bf16, BF16)
#endif

#ifdef NBX_UNARY_INTEGERS
// integer ops: wrapping as the host's (unsigned: abs and relu are the identity)
template <typename I> __device__ __forceinline__ I nbx_int_neg(I v) { return nbx_wrap_sub((I)0, v); }
template <typename I> __device__ __forceinline__ I nbx_int_abs(I v) { return v < (I)0 ? nbx_int_neg(v) : v; }
template <typename I> __device__ __forceinline__ I nbx_int_sign(I v) { return v > (I)0 ? (I)1 : (v < (I)0 ? (I)-1 : (I)0); }
#define NBX_IOP_neg(v) nbx_int_neg(v)
#define NBX_IOP_abs(v) nbx_int_abs(v)
#define NBX_IOP_relu(v) ((v) < 0 ? (decltype(v))0 : (v))
#define NBX_IOP_square(v) nbx_wrap_mul(v, v)
#define NBX_IOP_sign(v) nbx_int_sign(v)
#define NBX_IOP_floor(v) (v)
#define NBX_IOP_ceil(v) (v)
#define NBX_IOP_round(v) (v)
#define NBX_IOP_trunc(v) (v)
#define NBX_IOP_bitwise_invert(v) ((decltype(v))~(v))
#define NBX_ITEST_isnan(v) false
#define NBX_ITEST_isinf(v) false
#define NBX_ITEST_isfinite(v) true
#define NBX_UNARY_INT(op, dt, S) NBX_UNARY_KERNELS(op, dt, S, S, NBX_IOP_##op)
#define NBX_TEST_INT(op, dt, S) NBX_UNARY_KERNELS(op, dt, S, Flag, NBX_ITEST_##op)
#define NBX_CLIP_INT(dt, S) NBX_CLIP_KERNELS(dt, S, (S::T)b.low_int, (S::T)b.high_int)
#define NBX_INTS(M, op)                                                                                     \
    M(op, i8, I8) M(op, i16, I16) M(op, i32, I32) M(op, i64, I64) M(op, u8, U8) M(op, u16, U16)             \
    M(op, u32, U32) M(op, u64, U64)
NBX_INTS(NBX_UNARY_INT, neg)
NBX_INTS(NBX_UNARY_INT, abs)
NBX_INTS(NBX_UNARY_INT, relu)
NBX_INTS(NBX_UNARY_INT, square)
NBX_INTS(NBX_UNARY_INT, sign)
NBX_INTS(NBX_UNARY_INT, floor)
NBX_INTS(NBX_UNARY_INT, ceil)
NBX_INTS(NBX_UNARY_INT, round)
NBX_INTS(NBX_UNARY_INT, trunc)
NBX_INTS(NBX_UNARY_INT, bitwise_invert)
NBX_INTS(NBX_TEST_INT, isnan)
NBX_INTS(NBX_TEST_INT, isinf)
NBX_INTS(NBX_TEST_INT, isfinite)
NBX_CLIP_INT(i8, I8)
NBX_CLIP_INT(i16, I16)
NBX_CLIP_INT(i32, I32)
NBX_CLIP_INT(i64, I64)
NBX_CLIP_INT(u8, U8)
NBX_CLIP_INT(u16, U16)
NBX_CLIP_INT(u32, U32)
NBX_CLIP_INT(u64, U64)
// bool: both ops are the logical not (any nonzero byte is true)
#define NBX_BOP_not(v) ((v) == 0)
NBX_UNARY_KERNELS(logical_not, i1, NbxBool, Flag, NBX_BOP_not)
NBX_UNARY_KERNELS(bitwise_invert, i1, NbxBool, Flag, NBX_BOP_not)
#endif
