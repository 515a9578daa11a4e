// Binary ops with numpy broadcasting: y[i] = f(a[i], b[i]), y contiguous. On float32, float16
// and bfloat16 (computed in float32) every op; on the integers (in the integers.cuh storage)
// add, sub and mul wrapping around, maximum and minimum. Three paths:
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
// integers: two's complement wrapping
#define NBX_IOP_add(p, q) nbx_wrap_add(p, q)
#define NBX_IOP_sub(p, q) nbx_wrap_sub(p, q)
#define NBX_IOP_mul(p, q) nbx_wrap_mul(p, q)
#define NBX_IOP_maximum(p, q) NBX_OP_maximum(p, q)
#define NBX_IOP_minimum(p, q) NBX_OP_minimum(p, q)

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
        binary_contiguous<S>(a, b, y, n, [](auto p, auto q) { return EXPR(p, q); });                        \
    }                                                                                                       \
    extern "C" __global__ void binary_##op##_##dt##_rows(const S::T* a, const S::T* b, Indexer ix, S::T* y, \
                                                         i64 words, int narrow) {                           \
        binary_rows<S>(a, b, ix, y, words, narrow, [](auto p, auto q) { return EXPR(p, q); });              \
    }                                                                                                       \
    extern "C" __global__ void binary_##op##_##dt##_strided(const S::T* a, const S::T* b, Indexer ix,       \
                                                            S::T* y, i64 n, int narrow) {                   \
        binary_strided<S>(a, b, ix, y, n, narrow, [](auto p, auto q) { return EXPR(p, q); });               \
    }

// The floats and the integers are compiled apart (the Rust side defines one group per compile).
#ifdef NBX_BINARY_FLOATS
#define NBX_BINARY_ALL(op) \
    NBX_BINARY(op, f32, F32, NBX_OP_##op) NBX_BINARY(op, f16, F16, NBX_OP_##op) NBX_BINARY(op, bf16, BF16, NBX_OP_##op)
NBX_BINARY_ALL(add)
NBX_BINARY_ALL(sub)
NBX_BINARY_ALL(mul)
NBX_BINARY_ALL(div)
NBX_BINARY_ALL(pow)
NBX_BINARY_ALL(maximum)
NBX_BINARY_ALL(minimum)
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
#endif
