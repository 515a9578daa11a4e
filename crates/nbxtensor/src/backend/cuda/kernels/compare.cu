// Comparisons with numpy broadcasting: y[i] = a[i] op b[i], a bool (0 or 1). Floats (float32,
// float16, bfloat16) compare as float32, which holds the half formats exactly (NaN is unequal
// to everything); integers as themselves; bools as 0 < 1 (integers.cuh's storage). Two paths:
//
//   compare_<op>_<dt>(const T* a, const T* b, unsigned char* y, i64 n)
//       a, b and y contiguous of one shape: two 16-byte loads and one store of as many flags
//       per thread where all three are 16-byte aligned, a scalar tail.
//   compare_<op>_<dt>_strided(const T* a, const T* b, Indexer ix, unsigned char* y, i64 n, int narrow)
//       any layouts (a and b are operands 0 and 1 of ix), one element per thread.

#define NBX_CMP_eq(p, q) ((p) == (q))
#define NBX_CMP_ne(p, q) ((p) != (q))
#define NBX_CMP_lt(p, q) ((p) < (q))
#define NBX_CMP_le(p, q) ((p) <= (q))
#define NBX_CMP_gt(p, q) ((p) > (q))
#define NBX_CMP_ge(p, q) ((p) >= (q))

template <typename S, typename F>
__device__ __forceinline__ void compare_contiguous(const typename S::T* a, const typename S::T* b, unsigned char* y,
                                                   i64 n, F f) {
    typedef typename S::T T;
    const int V = 16 / sizeof(T);
    typedef typename nbx_word<16 / sizeof(T)>::T Flags;
    i64 stride = nbx_stride(), start = nbx_first();
    i64 body = nbx_aligned(a, b, y) ? n / V * V : 0;
    for (i64 v = start; v < body / V; v += stride) {
        union { uint4 raw; T e[16 / sizeof(T)]; } p, q;
        union { Flags raw; unsigned char e[16 / sizeof(T)]; } out;
        p.raw = reinterpret_cast<const uint4*>(a)[v];
        q.raw = reinterpret_cast<const uint4*>(b)[v];
#pragma unroll
        for (int k = 0; k < V; ++k) out.e[k] = f(S::load(p.e[k]), S::load(q.e[k])) ? 1 : 0;
        reinterpret_cast<Flags*>(y)[v] = out.raw;
    }
    for (i64 i = body + start; i < n; i += stride) y[i] = f(S::load(a[i]), S::load(b[i])) ? 1 : 0;
}

template <typename S, typename F>
__device__ __forceinline__ void compare_strided(const typename S::T* a, const typename S::T* b, const Indexer& ix,
                                                unsigned char* y, i64 n, bool narrow, F f) {
    for (i64 i = nbx_first(); i < n; i += nbx_stride()) {
        i64 off[2];
        nbx_offsets<2>(ix, i, narrow, off);
        y[i] = f(S::load(a[off[0]]), S::load(b[off[1]])) ? 1 : 0;
    }
}

#define NBX_COMPARE(op, dt, S)                                                                                  \
    extern "C" __global__ void compare_##op##_##dt(const S::T* a, const S::T* b, unsigned char* y, i64 n) {     \
        nbx_await_inputs();                                                                                   \
        compare_contiguous<S>(a, b, y, n, [](auto p, auto q) { return NBX_CMP_##op(p, q); });                 \
    }                                                                                                           \
    extern "C" __global__ void compare_##op##_##dt##_strided(const S::T* a, const S::T* b, Indexer ix,          \
                                                             unsigned char* y, i64 n, int narrow) {             \
        nbx_await_inputs();                                                                                   \
        compare_strided<S>(a, b, ix, y, n, narrow, [](auto p, auto q) { return NBX_CMP_##op(p, q); });        \
    }

// The floats and the integers with bool are compiled apart (the Rust side defines one group
// per compile).
#ifdef NBX_COMPARE_FLOATS
#define NBX_COMPARE_ALL(op) NBX_COMPARE(op, fp32, F32) NBX_COMPARE(op, fp16, F16) NBX_COMPARE(op, bf16, BF16)
NBX_COMPARE_ALL(eq)
NBX_COMPARE_ALL(ne)
NBX_COMPARE_ALL(lt)
NBX_COMPARE_ALL(le)
NBX_COMPARE_ALL(gt)
NBX_COMPARE_ALL(ge)
#endif

#ifdef NBX_COMPARE_INTEGERS
#define NBX_COMPARE_INTS(op)                                                                                \
    NBX_COMPARE(op, i8, I8) NBX_COMPARE(op, i16, I16) NBX_COMPARE(op, i32, I32) NBX_COMPARE(op, i64, I64)    \
    NBX_COMPARE(op, u8, U8) NBX_COMPARE(op, u16, U16) NBX_COMPARE(op, u32, U32) NBX_COMPARE(op, u64, U64)    \
    NBX_COMPARE(op, i1, NbxBool)
NBX_COMPARE_INTS(eq)
NBX_COMPARE_INTS(ne)
NBX_COMPARE_INTS(lt)
NBX_COMPARE_INTS(le)
NBX_COMPARE_INTS(gt)
NBX_COMPARE_INTS(ge)
#endif
