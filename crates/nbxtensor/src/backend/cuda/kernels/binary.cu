// Binary ops with numpy broadcasting: y[i] = f(a[i], b[i]), y contiguous. On float32, float16
// and bfloat16 (computed in float32, but nextafter, which steps the stored bits) the float
// ops; on the integers (in the integers.cuh storage) the integer ops, wrapping as the host's;
// on bool the logical ops. Three paths:
//
//   binary_<op>_<dt>(const T* a, const T* b, T* y, i64 n)
//       a, b and y contiguous of one shape: 16-byte accesses where all three are 16-byte
//       aligned, a scalar tail.
//   binary_<op>_<dt>_rows(const T* a, const T* b, Indexer ix, T* y, i64 words, int narrow)
//       broadcast operands whose innermost dim (a multiple of a word's elements) each reads
//       in 16-byte words (stride 1, aligned rows) or as one splat value (stride 0): 16-byte
//       stores, one division per word.
//   binary_<op>_<dt>_strided(const T* a, const T* b, Indexer ix, T* y, i64 n, int narrow)
//       any layouts (a and b are operands 0 and 1 of ix), one element per thread.

#define NBX_OP_add(p, q) ((p) + (q))
#define NBX_OP_sub(p, q) ((p) - (q))
#define NBX_OP_mul(p, q) ((p) * (q))
#define NBX_OP_div(p, q) ((p) / (q))
#define NBX_OP_pow(p, q) powf(p, q)
// NaN when either is NaN; otherwise the first when it is strictly larger (smaller), as the CPU
// (an integer is never NaN)
#define NBX_OP_maximum(p, q) (((p) != (p) || (p) > (q)) ? (p) : (q))
#define NBX_OP_minimum(p, q) (((p) != (p) || (p) < (q)) ? (p) : (q))
// numpy's divmod of floats (npy_divmod): the floored quotient and the divisor-signed remainder
__device__ __forceinline__ float nbx_divmod(float a, float b, float* rem) {
    float mod = fmodf(a, b);
    if (b == 0.0f) {
        *rem = mod;
        return a / b;
    }
    float div = (a - mod) / b;
    if (mod != 0.0f) {
        if ((b < 0.0f) != (mod < 0.0f)) {
            mod += b;
            div -= 1.0f;
        }
    } else {
        mod = copysignf(0.0f, b);
    }
    float q;
    if (div != 0.0f) {
        q = floorf(div);
        if (div - q > 0.5f) q += 1.0f;
    } else {
        q = copysignf(0.0f, a / b);
    }
    *rem = mod;
    return q;
}
// the Array API's floored quotient: divmod's for finite operands; with one operand infinite,
// a / b (an infinity or a signed zero), where divmod's arithmetic gives NaN or -1
__device__ __forceinline__ float nbx_floor_divide(float a, float b) {
    if (isinf(a) != isinf(b) && !isnan(a) && !isnan(b)) return a / b;
    float r;
    return nbx_divmod(a, b, &r);
}
__device__ __forceinline__ float nbx_remainder(float a, float b) {
    float r;
    nbx_divmod(a, b, &r);
    return r;
}
// ln(e^a + e^b) without overflow (numpy's npy_logaddexp)
__device__ __forceinline__ float nbx_logaddexp(float a, float b) {
    if (a == b) return a + 0.69314718055994531f;
    float d = a - b;
    if (d > 0.0f) return a + log1pf(expf(-d));
    if (d <= 0.0f) return b + log1pf(expf(d));
    return d;
}
#define NBX_OP_remainder(p, q) nbx_remainder(p, q)
#define NBX_OP_floor_divide(p, q) nbx_floor_divide(p, q)
#define NBX_OP_atan2(p, q) atan2f(p, q)
#define NBX_OP_copysign(p, q) copysignf(p, q)
#define NBX_OP_hypot(p, q) hypotf(p, q)
#define NBX_OP_logaddexp(p, q) nbx_logaddexp(p, q)
// silu(a) · b with e = e^-|a| ≤ 1 (nothing overflows): a / (1 + e) for a ≥ 0, a·e / (1 + e) below
__device__ __forceinline__ float nbx_silu_mul(float a, float b) {
    float e = expf(-fabsf(a));
    return (a >= 0.0f ? a : a * e) / (1.0f + e) * b;
}
#define NBX_OP_silu_mul(p, q) nbx_silu_mul(p, q)

// nextafter steps the stored bits: the kernels load and store the raw elements
template <typename S>
struct NbxRaw {
    typedef typename S::T T;
    static __device__ __forceinline__ T load(T v) { return v; }
    static __device__ __forceinline__ T store(T v) { return v; }
};
__device__ __forceinline__ float nbx_nextafter(float a, float b) { return nextafterf(a, b); }
template <typename S>
__device__ __forceinline__ unsigned short nbx_nextafter16(unsigned short a, unsigned short b) {
    float x = S::load(a), y = S::load(b);
    if (x != x || y != y) return S::store(x + y);
    if (x == y) return b;
    if (x == 0.0f) return y < x ? 0x8001 : 0x0001;  // the smallest subnormal toward b
    bool away = (y > x) == ((a & 0x8000) == 0);
    return away ? (unsigned short)(a + 1) : (unsigned short)(a - 1);
}
#define NBX_NEXT_fp32(p, q) nbx_nextafter(p, q)
#define NBX_NEXT_fp16(p, q) nbx_nextafter16<F16>(p, q)
#define NBX_NEXT_bf16(p, q) nbx_nextafter16<BF16>(p, q)

// integers: two's complement wrapping
#define NBX_IOP_add(p, q) nbx_wrap_add(p, q)
#define NBX_IOP_sub(p, q) nbx_wrap_sub(p, q)
#define NBX_IOP_mul(p, q) nbx_wrap_mul(p, q)
#define NBX_IOP_maximum(p, q) NBX_OP_maximum(p, q)
#define NBX_IOP_minimum(p, q) NBX_OP_minimum(p, q)
// Python's % and // (0 for a zero divisor, as the host); the most negative value // -1 wraps
template <typename I>
__device__ __forceinline__ I nbx_int_floor_divide(I a, I b) {
    if (b == (I)0) return (I)0;
    if ((I)-1 < (I)0 && b == (I)-1) return nbx_wrap_sub((I)0, a);
    I q = a / b;
    if (a % b != (I)0 && ((a < (I)0) != (b < (I)0))) q = q - (I)1;
    return q;
}
template <typename I>
__device__ __forceinline__ I nbx_int_remainder(I a, I b) {
    if (b == (I)0) return (I)0;
    if ((I)-1 < (I)0 && b == (I)-1) return (I)0;
    I r = a % b;
    if (r != (I)0 && ((r < (I)0) != (b < (I)0))) r = r + b;
    return r;
}
// x^n wrapping; a negative exponent truncates 1 / x^-n (1 for 1, +-1 for -1, else 0)
template <typename I>
__device__ __forceinline__ I nbx_int_pow(I base, I e) {
    if (e < (I)0) {
        if (base == (I)1) return (I)1;
        if (base == (I)-1) return (e & (I)1) ? base : (I)1;
        return (I)0;
    }
    I acc = (I)1;
    while (e != (I)0) {
        if (e & (I)1) acc = nbx_wrap_mul(acc, base);
        base = nbx_wrap_mul(base, base);
        e = (I)(e >> 1);
    }
    return acc;
}
// shifts: a count past the width, or negative, shifts every bit out (the sign kept to the right)
template <typename I>
__device__ __forceinline__ I nbx_int_shl(I a, I c) {
    typedef typename nbx_wrapping<sizeof(I)>::T U;
    if (c < (I)0 || (unsigned long long)c >= 8 * sizeof(I)) return (I)0;
    return (I)((U)a << (int)c);
}
template <typename I>
__device__ __forceinline__ I nbx_int_shr(I a, I c) {
    if (c < (I)0 || (unsigned long long)c >= 8 * sizeof(I)) return a < (I)0 ? (I)-1 : (I)0;
    return (I)(a >> (int)c);
}
#define NBX_IOP_pow(p, q) nbx_int_pow(p, q)
#define NBX_IOP_remainder(p, q) nbx_int_remainder(p, q)
#define NBX_IOP_floor_divide(p, q) nbx_int_floor_divide(p, q)
#define NBX_IOP_bitwise_and(p, q) ((decltype(p))((p) & (q)))
#define NBX_IOP_bitwise_or(p, q) ((decltype(p))((p) | (q)))
#define NBX_IOP_bitwise_xor(p, q) ((decltype(p))((p) ^ (q)))
#define NBX_IOP_bitwise_left_shift(p, q) nbx_int_shl(p, q)
#define NBX_IOP_bitwise_right_shift(p, q) nbx_int_shr(p, q)
// bool (read as 0 or 1): the logical ops, and the bitwise ones on bool alike
#define NBX_BOP_logical_and(p, q) ((p) && (q))
#define NBX_BOP_logical_or(p, q) ((p) || (q))
#define NBX_BOP_logical_xor(p, q) ((p) != (q))
#define NBX_BOP_bitwise_and(p, q) ((p) && (q))
#define NBX_BOP_bitwise_or(p, q) ((p) || (q))
#define NBX_BOP_bitwise_xor(p, q) ((p) != (q))

template <typename S, typename F>
__device__ __forceinline__ void binary_contiguous(const typename S::T* a, const typename S::T* b, typename S::T* y,
                                                  i64 n, F f) {
    typedef typename S::T T;
    const int V = 16 / sizeof(T);
    i64 stride = nbx_stride(), start = nbx_first();
    i64 body = nbx_aligned(a, b, y) ? n / V * V : 0;
    for (i64 v = start; v < body / V; v += stride) {
        union { uint4 raw; T e[16 / sizeof(T)]; } p, q, out;
        p.raw = reinterpret_cast<const uint4*>(a)[v];
        q.raw = reinterpret_cast<const uint4*>(b)[v];
#pragma unroll
        for (int k = 0; k < V; ++k) out.e[k] = S::store(f(S::load(p.e[k]), S::load(q.e[k])));
        reinterpret_cast<uint4*>(y)[v] = out.raw;
    }
    for (i64 i = body + start; i < n; i += stride) y[i] = S::store(f(S::load(a[i]), S::load(b[i])));
}

// The V elements of a word of one operand: a 16-byte load, or one element repeated.
template <typename T>
__device__ __forceinline__ uint4 binary_word(const T* x, i64 off, bool splat) {
    union { uint4 raw; T e[16 / sizeof(T)]; } w;
    if (splat) {
        T s = x[off];
#pragma unroll
        for (int k = 0; k < 16 / (int)sizeof(T); ++k) w.e[k] = s;
    } else {
        w.raw = *reinterpret_cast<const uint4*>(x + off);
    }
    return w.raw;
}

template <typename S, typename F>
__device__ __forceinline__ void binary_rows(const typename S::T* a, const typename S::T* b, const Indexer& ix,
                                            typename S::T* y, i64 words, bool narrow, F f) {
    typedef typename S::T T;
    const int V = 16 / sizeof(T);
    bool a_splat = ix.strides[0][0] == 0, b_splat = ix.strides[1][0] == 0;
    for (i64 v = nbx_first(); v < words; v += nbx_stride()) {
        i64 off[2];
        nbx_offsets<2>(ix, v * V, narrow, off);
        union { uint4 raw; T e[16 / sizeof(T)]; } p, q, out;
        p.raw = binary_word(a, off[0], a_splat);
        q.raw = binary_word(b, off[1], b_splat);
#pragma unroll
        for (int k = 0; k < V; ++k) out.e[k] = S::store(f(S::load(p.e[k]), S::load(q.e[k])));
        reinterpret_cast<uint4*>(y)[v] = out.raw;
    }
}

template <typename S, typename F>
__device__ __forceinline__ void binary_strided(const typename S::T* a, const typename S::T* b, const Indexer& ix,
                                               typename S::T* y, i64 n, bool narrow, F f) {
    for (i64 i = nbx_first(); i < n; i += nbx_stride()) {
        i64 off[2];
        nbx_offsets<2>(ix, i, narrow, off);
        y[i] = S::store(f(S::load(a[off[0]]), S::load(b[off[1]])));
    }
}

// f: EXPR(p, q) on the loaded values (float32 for the floats, the integer itself otherwise).
#define NBX_BINARY(op, dt, S, EXPR)                                                                         \
    extern "C" __global__ void binary_##op##_##dt(const S::T* a, const S::T* b, S::T* y, i64 n) {          \
        nbx_await_inputs();                                                                                 \
        binary_contiguous<S>(a, b, y, n, [](auto p, auto q) { return EXPR(p, q); });                        \
    }                                                                                                       \
    extern "C" __global__ void binary_##op##_##dt##_rows(const S::T* a, const S::T* b, Indexer ix, S::T* y, \
                                                         i64 words, int narrow) {                           \
        nbx_await_inputs();                                                                                 \
        binary_rows<S>(a, b, ix, y, words, narrow, [](auto p, auto q) { return EXPR(p, q); });              \
    }                                                                                                       \
    extern "C" __global__ void binary_##op##_##dt##_strided(const S::T* a, const S::T* b, Indexer ix,       \
                                                            S::T* y, i64 n, int narrow) {                   \
        nbx_await_inputs();                                                                                 \
        binary_strided<S>(a, b, ix, y, n, narrow, [](auto p, auto q) { return EXPR(p, q); });               \
    }

// The floats and the integers are compiled apart (the Rust side defines one group per compile).
#ifdef NBX_BINARY_FLOATS
#define NBX_BINARY_ALL(op) \
    NBX_BINARY(op, fp32, F32, NBX_OP_##op) NBX_BINARY(op, fp16, F16, NBX_OP_##op) NBX_BINARY(op, bf16, BF16, NBX_OP_##op)
NBX_BINARY_ALL(add)
NBX_BINARY_ALL(sub)
NBX_BINARY_ALL(mul)
NBX_BINARY_ALL(div)
NBX_BINARY_ALL(pow)
NBX_BINARY_ALL(maximum)
NBX_BINARY_ALL(minimum)
NBX_BINARY_ALL(remainder)
NBX_BINARY_ALL(floor_divide)
NBX_BINARY_ALL(atan2)
NBX_BINARY_ALL(copysign)
NBX_BINARY_ALL(hypot)
NBX_BINARY_ALL(logaddexp)
NBX_BINARY_ALL(silu_mul)
NBX_BINARY(nextafter, fp32, F32, NBX_NEXT_fp32)
NBX_BINARY(nextafter, fp16, NbxRaw<F16>, NBX_NEXT_fp16)
NBX_BINARY(nextafter, bf16, NbxRaw<BF16>, NBX_NEXT_bf16)
#endif

#ifdef NBX_BINARY_INTEGERS
#define NBX_BINARY_INTS(op)                                                                                 \
    NBX_BINARY(op, i8, I8, NBX_IOP_##op) NBX_BINARY(op, i16, I16, NBX_IOP_##op)                             \
    NBX_BINARY(op, i32, I32, NBX_IOP_##op) NBX_BINARY(op, i64, I64, NBX_IOP_##op)                           \
    NBX_BINARY(op, u8, U8, NBX_IOP_##op) NBX_BINARY(op, u16, U16, NBX_IOP_##op)                             \
    NBX_BINARY(op, u32, U32, NBX_IOP_##op) NBX_BINARY(op, u64, U64, NBX_IOP_##op)
NBX_BINARY_INTS(add)
NBX_BINARY_INTS(sub)
NBX_BINARY_INTS(mul)
NBX_BINARY_INTS(maximum)
NBX_BINARY_INTS(minimum)
NBX_BINARY_INTS(pow)
NBX_BINARY_INTS(remainder)
NBX_BINARY_INTS(floor_divide)
NBX_BINARY_INTS(bitwise_and)
NBX_BINARY_INTS(bitwise_or)
NBX_BINARY_INTS(bitwise_xor)
NBX_BINARY_INTS(bitwise_left_shift)
NBX_BINARY_INTS(bitwise_right_shift)
#define NBX_BINARY_BOOL(op) NBX_BINARY(op, i1, NbxBool, NBX_BOP_##op)
NBX_BINARY_BOOL(logical_and)
NBX_BINARY_BOOL(logical_or)
NBX_BINARY_BOOL(logical_xor)
NBX_BINARY_BOOL(bitwise_and)
NBX_BINARY_BOOL(bitwise_or)
NBX_BINARY_BOOL(bitwise_xor)
#endif
