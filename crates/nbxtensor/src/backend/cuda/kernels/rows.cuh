// What the one-pass row kernels (softmax.cu, norm.cu) share: a row held in registers as it was
// loaded, in chunks of V elements (16 bytes when V > 1, else one element), each element
// widened to float32 where it is used. Holding the stored bits instead of float32 values
// halves the registers of a 16-bit row, so that twice the rows are in flight.

// The word one chunk of N bytes is loaded as.
template <int N> struct RowWord;
template <> struct RowWord<2> { typedef unsigned short T; };
template <> struct RowWord<4> { typedef unsigned int T; };
template <> struct RowWord<16> { typedef uint4 T; };

template <typename S, int V>
struct RowChunk {
    typedef typename S::T T;
    typedef typename RowWord<V * sizeof(T)>::T Word;
    union {
        Word word;
        T e[V];
    } raw;

    // Loads the chunk at p (16-byte aligned when V > 1).
    __device__ __forceinline__ void load(const T* p) { raw.word = *reinterpret_cast<const Word*>(p); }
    // Element k as float32.
    __device__ __forceinline__ float get(int k) const { return S::load(raw.e[k]); }
    // Replaces element k by a float32 value stored exactly (a float32 row only).
    __device__ __forceinline__ void put(int k, float v) { raw.e[k] = S::store(v); }
};

// Stores V float32 values at p as one chunk (one 16-byte store when V > 1: a plain one may be
// split).
template <typename S, int V>
__device__ __forceinline__ void row_store(typename S::T* p, const float* in) {
    RowChunk<S, V> out;
#pragma unroll
    for (int k = 0; k < V; ++k) out.raw.e[k] = S::store(in[k]);
    if constexpr (V == 1) {
        *p = out.raw.e[0];
    } else {
        __stwb(reinterpret_cast<uint4*>(p), out.raw.word);
    }
}

// Elements in a chunk: 16 bytes' worth (the _vec kernels), or one.
#define NBX_CHUNK_vec(S) (16 / sizeof(S::T))
#define NBX_CHUNK(S) 1

// The larger 16-bit float of each half of two words (a NaN loses, as in fmaxf).
__device__ __forceinline__ unsigned int row_max2(const BF16*, unsigned int a, unsigned int b) {
#ifdef __CUDA_ARCH__
    unsigned int d;
    asm("max.bf16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
    return d;
#else  // host compilers (kernel checks on the CPU): the same, one half at a time
    return BF16::store(fmaxf(BF16::load(a & 0xffffu), BF16::load(b & 0xffffu))) |
           ((unsigned int)BF16::store(fmaxf(BF16::load(a >> 16), BF16::load(b >> 16))) << 16);
#endif
}
__device__ __forceinline__ unsigned int row_max2(const F16*, unsigned int a, unsigned int b) {
#ifdef __CUDA_ARCH__
    unsigned int d;
    asm("max.f16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
    return d;
#else
    return F16::store(fmaxf(F16::load(a & 0xffffu), F16::load(b & 0xffffu))) |
           ((unsigned int)F16::store(fmaxf(F16::load(a >> 16), F16::load(b >> 16))) << 16);
#endif
}

// The largest element of a chunk as float32 (NaN ignored, as fmaxf; NaN when all are): a
// 16-byte chunk of 16-bit floats compares packed pairs.
template <typename S, int V>
__device__ __forceinline__ float row_chunk_max(const RowChunk<S, V>& c) {
    if constexpr (V == 8) {
        const S* tag = nullptr;
        unsigned int m = row_max2(tag, row_max2(tag, c.raw.word.x, c.raw.word.y), row_max2(tag, c.raw.word.z, c.raw.word.w));
        return fmaxf(S::load((typename S::T)(m & 0xffffu)), S::load((typename S::T)(m >> 16)));
    } else {
        float m = c.get(0);
#pragma unroll
        for (int k = 1; k < V; ++k) m = fmaxf(m, c.get(k));
        return m;
    }
}

// Two float32 values, neither NaN, as one word of 16-bit floats (lo in the low half), rounded
// to nearest even.
__device__ __forceinline__ unsigned int row_pack2(const BF16*, float lo, float hi) {
#ifdef __CUDA_ARCH__
    unsigned int d;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(d) : "f"(hi), "f"(lo));
    return d;
#else
    return BF16::store(lo) | ((unsigned int)BF16::store(hi) << 16);
#endif
}
__device__ __forceinline__ unsigned int row_pack2(const F16*, float lo, float hi) {
#ifdef __CUDA_ARCH__
    unsigned int d;
    asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(d) : "f"(hi), "f"(lo));
    return d;
#else
    return F16::store(lo) | ((unsigned int)F16::store(hi) << 16);
#endif
}

// Stores V float32 values, none NaN, at p as one chunk: 16-bit pairs converted together.
template <typename S, int V>
__device__ __forceinline__ void row_store_numbers(typename S::T* p, const float* in) {
    if constexpr (V == 8) {
        const S* tag = nullptr;
        uint4 word;
        word.x = row_pack2(tag, in[0], in[1]);
        word.y = row_pack2(tag, in[2], in[3]);
        word.z = row_pack2(tag, in[4], in[5]);
        word.w = row_pack2(tag, in[6], in[7]);
        __stwb(reinterpret_cast<uint4*>(p), word);
    } else {
        row_store<S, V>(p, in);
    }
}

// 2^x, for results bound to 16 bits: the multiprocessor's approximation (a few float32 ulp;
// results below float32's normal range flush to 0).
__device__ __forceinline__ float row_exp2_approx(float x) {
#ifdef __CUDA_ARCH__
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
#else
    return exp2f(x);
#endif
}
