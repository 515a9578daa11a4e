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
