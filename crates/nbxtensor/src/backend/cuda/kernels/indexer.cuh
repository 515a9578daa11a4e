// Operands of one launch addressed over a common shape (the Rust side's `Indexer`): placed
// before binary.cu, compare.cu, select.cu, cast.cu, copy.cu and gather.cu.
// Dims are listed innermost first and merged where every operand allows (most launches
// address one or two dims); the outermost dim takes the quotient left, so it needs no
// division; the arithmetic is 32-bit when every row-major index fits.

#define NBX_OPERANDS 3
struct Indexer {
    int ndim;                                 // 1 ..= NBX_MAX_DIMS
    i64 shape[NBX_MAX_DIMS];                  // innermost first
    i64 strides[NBX_OPERANDS][NBX_MAX_DIMS];  // in elements, innermost first; 0 on a broadcast dim
    i64 offset[NBX_OPERANDS];                 // in elements
};

// The element offsets of the first N operands at row-major index `r`; `coord` receives the
// coordinate along dim `axis` (innermost-first numbering; -1 for none).
template <int N, typename I>
__device__ __forceinline__ void nbx_offsets_in(const Indexer& ix, I r, i64 (&off)[N], int axis, i64& coord) {
#pragma unroll
    for (int k = 0; k < N; ++k) off[k] = ix.offset[k];
#pragma unroll 1  // (unrolling doubles the compile time for little)
    for (int d = 0; d < NBX_MAX_DIMS; ++d) {
        I c = r;
        if (d < ix.ndim - 1) {
            I s = (I)ix.shape[d];
            I q = r / s;
            c = r - q * s;
            r = q;
        }
        if (d == axis) coord = (i64)c;
#pragma unroll
        for (int k = 0; k < N; ++k) off[k] += (i64)c * ix.strides[k][d];
        if (d == ix.ndim - 1) break;
    }
}

// The element offsets of the first N operands at row-major index `i`; `narrow`: i < 2^32.
template <int N>
__device__ __forceinline__ void nbx_offsets(const Indexer& ix, i64 i, bool narrow, i64 (&off)[N]) {
    i64 unused;
    if (narrow)
        nbx_offsets_in<N, unsigned int>(ix, (unsigned int)i, off, -1, unused);
    else
        nbx_offsets_in<N, i64>(ix, i, off, -1, unused);
}

// The raw 16-byte word of `V` elements of `T`, and the V/16-byte word of their flags.
template <int BYTES> struct nbx_word;
template <> struct nbx_word<1> { typedef unsigned char T; };
template <> struct nbx_word<2> { typedef unsigned short T; };
template <> struct nbx_word<4> { typedef unsigned int T; };
template <> struct nbx_word<8> { typedef uint2 T; };
template <> struct nbx_word<16> { typedef uint4 T; };

// The first index of this thread and the grid's stride, for grid-stride loops.
__device__ __forceinline__ i64 nbx_first() { return (i64)blockIdx.x * blockDim.x + threadIdx.x; }
__device__ __forceinline__ i64 nbx_stride() { return (i64)gridDim.x * blockDim.x; }

// Whether every address is 16-byte aligned.
__device__ __forceinline__ bool nbx_aligned(const void* a, const void* b, const void* c) {
    return ((((unsigned long long)a) | ((unsigned long long)b) | ((unsigned long long)c)) & 15) == 0;
}
