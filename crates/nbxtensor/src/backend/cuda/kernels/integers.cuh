// Integer and bool storage for the elementwise sources (the prelude's F32/F16/BF16 are the
// floats'): an integer computes as itself; a bool reads as 0 or 1 (any nonzero byte is true).
// Placed before unary.cu, binary.cu and compare.cu.

template <typename I>
struct NbxInt {
    typedef I T;
    static __device__ __forceinline__ I load(I v) { return v; }
    static __device__ __forceinline__ I store(I v) { return v; }
};
struct NbxBool {
    typedef unsigned char T;
    static __device__ __forceinline__ int load(T v) { return v != 0 ? 1 : 0; }
    static __device__ __forceinline__ T store(int v) { return v != 0 ? 1 : 0; }
};

// The unsigned type an integer's wrapping arithmetic runs in: at least 32 bits, so that no
// operand is promoted to a signed int that could overflow.
template <int BYTES> struct nbx_wrapping { typedef unsigned int T; };
template <> struct nbx_wrapping<8> { typedef unsigned long long T; };

// p + q, p - q, p * q modulo 2^bits (two's complement), as the CPU's wrapping_add/sub/mul.
template <typename I>
__device__ __forceinline__ I nbx_wrap_add(I p, I q) {
    typedef typename nbx_wrapping<sizeof(I)>::T U;
    return (I)((U)p + (U)q);
}
template <typename I>
__device__ __forceinline__ I nbx_wrap_sub(I p, I q) {
    typedef typename nbx_wrapping<sizeof(I)>::T U;
    return (I)((U)p - (U)q);
}
template <typename I>
__device__ __forceinline__ I nbx_wrap_mul(I p, I q) {
    typedef typename nbx_wrapping<sizeof(I)>::T U;
    return (I)((U)p * (U)q);
}

typedef NbxInt<signed char> I8;
typedef NbxInt<short> I16;
typedef NbxInt<int> I32;
typedef NbxInt<long long> I64;
typedef NbxInt<unsigned char> U8;
typedef NbxInt<unsigned short> U16;
typedef NbxInt<unsigned int> U32;
typedef NbxInt<unsigned long long> U64;
