// Casts between float32, float16, bfloat16, the integers and bool, element for element as the
// CPU kernel converts (cpu/cast.rs):
// - a float (half formats widened exactly) to an integer truncates toward zero, saturates at
//   the integer's ends, and gives 0 for NaN (Rust `as`);
// - an integer to an integer wraps (two's complement truncation);
// - to float32: rounded once to nearest even; to float16 and bfloat16: through float32, rounded
//   to nearest even; NaN patterns as the CPU writes them (float16 keeps the payload's top bits
//   and sets the quiet bit, bfloat16 writes 0x7FC0);
// - to bool: value != 0 (NaN is true); from bool: 0 or 1 (any nonzero byte is true).
//
//   cast_<from>_<to>(const S* x, D* y, i64 n)
//       x and y contiguous: where both are 16-byte aligned, vectors of 16 bytes of the wider
//       side (and as many elements of the narrower), four in flight a thread; a scalar tail.
//   cast_<from>_<to>_strided(const S* x, Indexer ix, D* y, i64 n, int narrow)
//       x of any layout (operand 0 of ix).

// What a cast reads: a float, a signed integer, an unsigned integer or a flag.
struct nbx_flag {
    bool on;
};

// Sources: the stored type and the value read from it.
struct FromF32 {
    typedef float T;
    static __device__ __forceinline__ float load(T v) { return v; }
};
struct FromF16 {
    typedef nbx_f16 T;
    static __device__ __forceinline__ float load(T h) { return nbx_f16_to_f32(h); }
};
struct FromBF16 {
    typedef nbx_bf16 T;
    static __device__ __forceinline__ float load(T b) { return nbx_bf16_to_f32(b); }
};
template <typename I>
struct FromSigned {
    typedef I T;
    static __device__ __forceinline__ long long load(T v) { return (long long)v; }
};
template <typename I>
struct FromUnsigned {
    typedef I T;
    static __device__ __forceinline__ unsigned long long load(T v) { return (unsigned long long)v; }
};
struct FromBool {
    typedef unsigned char T;
    static __device__ __forceinline__ nbx_flag load(T v) { return nbx_flag{v != 0}; }
};

// Destinations: the stored type made from each kind of value.
struct ToF32 {
    typedef float T;
    static __device__ __forceinline__ T from(float f) { return f; }
    static __device__ __forceinline__ T from(long long x) { return (float)x; }
    static __device__ __forceinline__ T from(unsigned long long x) { return (float)x; }
    static __device__ __forceinline__ T from(nbx_flag b) { return b.on ? 1.0f : 0.0f; }
};
struct ToF16 {
    typedef nbx_f16 T;
    static __device__ __forceinline__ T from(float f) { return nbx_f32_to_f16(f); }
    static __device__ __forceinline__ T from(long long x) { return from((float)x); }
    static __device__ __forceinline__ T from(unsigned long long x) { return from((float)x); }
    static __device__ __forceinline__ T from(nbx_flag b) { return from(b.on ? 1.0f : 0.0f); }
};
struct ToBF16 {
    typedef nbx_bf16 T;
    static __device__ __forceinline__ T from(float f) { return nbx_f32_to_bf16(f); }
    static __device__ __forceinline__ T from(long long x) { return from((float)x); }
    static __device__ __forceinline__ T from(unsigned long long x) { return from((float)x); }
    static __device__ __forceinline__ T from(nbx_flag b) { return from(b.on ? 1.0f : 0.0f); }
};
template <typename I, bool SIGNED>
struct ToInt {
    typedef I T;
    static constexpr int BITS = 8 * sizeof(I);
    static __device__ __forceinline__ T from(float f) {
        // the first float past each end of the range (powers of two, exact)
        const float half_span = (float)(1ull << (BITS - 1));
        const float top = SIGNED ? half_span : 2.0f * half_span;
        const float bottom = SIGNED ? -half_span : 0.0f;
        if (f != f) return (T)0;
        if (f >= top) return SIGNED ? (T)((1ull << (BITS - 1)) - 1) : (T)~0ull;
        if (f <= bottom) return SIGNED ? (T)(1ull << (BITS - 1)) : (T)0;
        return SIGNED ? (T)(long long)f : (T)(unsigned long long)f;  // toward zero, in range
    }
    static __device__ __forceinline__ T from(long long x) { return (T)(unsigned long long)x; }
    static __device__ __forceinline__ T from(unsigned long long x) { return (T)x; }
    static __device__ __forceinline__ T from(nbx_flag b) { return (T)(b.on ? 1 : 0); }
};
struct ToBool {
    typedef unsigned char T;
    static __device__ __forceinline__ T from(float f) { return f != 0.0f ? 1 : 0; }
    static __device__ __forceinline__ T from(long long x) { return x != 0 ? 1 : 0; }
    static __device__ __forceinline__ T from(unsigned long long x) { return x != 0 ? 1 : 0; }
    static __device__ __forceinline__ T from(nbx_flag b) { return b.on ? 1 : 0; }
};

// A word of N bytes (N = 1, 2, 4, 8 or 16): what one access of a thread moves.
template <int N> struct CastWord;
template <> struct CastWord<1> { typedef unsigned char T; };
template <> struct CastWord<2> { typedef unsigned short T; };
template <> struct CastWord<4> { typedef unsigned int T; };
template <> struct CastWord<8> { typedef uint2 T; };
template <> struct CastWord<16> { typedef uint4 T; };

// V elements: one word of the wider side (16 bytes), V · sizeof(narrower) bytes of the other,
// so that both sides' accesses are whole, adjacent words across a warp.
template <typename S, typename D>
struct CastVector {
    typedef typename S::T TS;
    typedef typename D::T TD;
    static constexpr int V = 16 / (sizeof(TS) > sizeof(TD) ? sizeof(TS) : sizeof(TD));
    typedef typename CastWord<V * sizeof(TS)>::T In;
    typedef typename CastWord<V * sizeof(TD)>::T Out;
    static __device__ __forceinline__ Out convert(In word) {
        union { In raw; TS e[V]; } in;
        union { Out raw; TD e[V]; } out;
        in.raw = word;
#pragma unroll
        for (int k = 0; k < V; ++k) out.e[k] = D::from(S::load(in.e[k]));
        return out.raw;
    }
};

// UNROLL independent vectors a thread per step (each a grid stride apart, so that every
// access of a warp stays adjacent): loads issued together keep enough bytes in flight.
#define NBX_CAST_UNROLL 4

template <typename S, typename D>
__device__ __forceinline__ void cast_contiguous(const typename S::T* x, typename D::T* y, i64 n) {
    typedef CastVector<S, D> C;
    constexpr int V = C::V;
    i64 stride = nbx_stride(), start = nbx_first();
    i64 body = nbx_aligned(x, y, y) ? n / V * V : 0;
    const typename C::In* in = reinterpret_cast<const typename C::In*>(x);
    typename C::Out* out = reinterpret_cast<typename C::Out*>(y);
    i64 vectors = body / V, v = start;
    for (; v + (NBX_CAST_UNROLL - 1) * stride < vectors; v += NBX_CAST_UNROLL * stride) {
        typename C::In word[NBX_CAST_UNROLL];
#pragma unroll
        for (int u = 0; u < NBX_CAST_UNROLL; ++u) word[u] = in[v + u * stride];
#pragma unroll
        for (int u = 0; u < NBX_CAST_UNROLL; ++u) out[v + u * stride] = C::convert(word[u]);
    }
    for (; v < vectors; v += stride) out[v] = C::convert(in[v]);
    for (i64 i = body + start; i < n; i += stride) y[i] = D::from(S::load(x[i]));
}

template <typename S, typename D>
__device__ __forceinline__ void cast_strided(const typename S::T* x, const Indexer& ix, typename D::T* y, i64 n,
                                             bool narrow) {
    for (i64 i = nbx_first(); i < n; i += nbx_stride()) {
        i64 off[1];
        nbx_offsets<1>(ix, i, narrow, off);
        y[i] = D::from(S::load(x[off[0]]));
    }
}

#define NBX_CAST(from, S, to, D)                                                                            \
    extern "C" __global__ void cast_##from##_##to(const S::T* x, D::T* y, i64 n) {                          \
        nbx_await_inputs();                                                                                 \
        cast_contiguous<S, D>(x, y, n);                                                                     \
    }                                                                                                       \
    extern "C" __global__ void cast_##from##_##to##_strided(const S::T* x, Indexer ix, D::T* y, i64 n,      \
                                                            int narrow) {                                   \
        nbx_await_inputs();                                                                                 \
        cast_strided<S, D>(x, ix, y, n, narrow);                                                            \
    }

typedef FromSigned<signed char> FromI8;
typedef FromSigned<short> FromI16;
typedef FromSigned<int> FromI32;
typedef FromSigned<long long> FromI64;
typedef FromUnsigned<unsigned char> FromU8;
typedef FromUnsigned<unsigned short> FromU16;
typedef FromUnsigned<unsigned int> FromU32;
typedef FromUnsigned<unsigned long long> FromU64;
typedef ToInt<signed char, true> ToI8;
typedef ToInt<short, true> ToI16;
typedef ToInt<int, true> ToI32;
typedef ToInt<long long, true> ToI64;
typedef ToInt<unsigned char, false> ToU8;
typedef ToInt<unsigned short, false> ToU16;
typedef ToInt<unsigned int, false> ToU32;
typedef ToInt<unsigned long long, false> ToU64;

#define NBX_CAST_FROM(from, S)    \
    NBX_CAST(from, S, fp32, ToF32)  \
    NBX_CAST(from, S, fp16, ToF16)  \
    NBX_CAST(from, S, bf16, ToBF16) \
    NBX_CAST(from, S, i8, ToI8)     \
    NBX_CAST(from, S, i16, ToI16)   \
    NBX_CAST(from, S, i32, ToI32)   \
    NBX_CAST(from, S, i64, ToI64)   \
    NBX_CAST(from, S, u8, ToU8)     \
    NBX_CAST(from, S, u16, ToU16)   \
    NBX_CAST(from, S, u32, ToU32)   \
    NBX_CAST(from, S, u64, ToU64)   \
    NBX_CAST(from, S, i1, ToBool)

// Each source group is compiled on its own (the Rust side defines one group per compile), so
// that a first cast compiles a quarter of the pairs.
#ifdef NBX_CAST_FROM_FLOATS
NBX_CAST_FROM(fp32, FromF32)
NBX_CAST_FROM(fp16, FromF16)
NBX_CAST_FROM(bf16, FromBF16)
#endif
#ifdef NBX_CAST_FROM_SIGNED
NBX_CAST_FROM(i8, FromI8)
NBX_CAST_FROM(i16, FromI16)
NBX_CAST_FROM(i32, FromI32)
NBX_CAST_FROM(i64, FromI64)
#endif
#ifdef NBX_CAST_FROM_UNSIGNED
NBX_CAST_FROM(u8, FromU8)
NBX_CAST_FROM(u16, FromU16)
NBX_CAST_FROM(u32, FromU32)
NBX_CAST_FROM(u64, FromU64)
#endif
#ifdef NBX_CAST_FROM_BOOL
NBX_CAST_FROM(i1, FromBool)
#endif
