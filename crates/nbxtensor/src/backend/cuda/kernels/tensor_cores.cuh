// The tensor cores' mma.sync m16n8k16 product on float16 and bfloat16 pairs (compute capability
// 8.0 on), accumulated in float32, and the streaming 16-byte load the kernels that feed them use.
//
// Fragment layout: lane (g, t) = (lane / 4, lane % 4) holds A's rows g and g + 8 at depth slots
// 2t, 2t+1, 2t+8, 2t+9 (a[0] = row g slots 2t, 2t+1; a[1] = row g + 8 the same; a[2] = row g
// slots 2t+8, 2t+9; a[3] = row g + 8 the same), B's column g at slots 2t, 2t+1 (b0) and 2t+8,
// 2t+9 (b1), and C's rows g (d[0], d[1]) and g + 8 (d[2], d[3]) at columns 2t, 2t+1. A pair
// holds its lower slot in its low 16 bits.

template <typename S>
struct Mma;
// Mma<S> of a storage type: its PTX type name (f16, bf16) and the bits of the pair (1.0, 1.0).
#define NBX_MMA(S, TYPE, ONE_PAIR)                                                                                   \
    template <>                                                                                                      \
    struct Mma<S> {                                                                                                  \
        /* The pair (1.0, 1.0). */                                                                                   \
        static constexpr unsigned int ONES = ONE_PAIR;                                                               \
        /* d += a · b on the tensor cores. */                                                                       \
        static __device__ __forceinline__ void mma(float* d, const unsigned int* a, unsigned int b0, unsigned int b1) { \
            asm("mma.sync.aligned.m16n8k16.row.col.f32." TYPE "." TYPE ".f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, " \
                "{%0,%1,%2,%3};"                                                                                     \
                : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])                                                     \
                : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));                                     \
        }                                                                                                            \
        /* Two float32 values rounded to the nearest pair (lo in the low half). */                                   \
        static __device__ __forceinline__ unsigned int pair(float lo, float hi) {                                    \
            unsigned int r;                                                                                          \
            asm("cvt.rn." TYPE "x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));                                    \
            return r;                                                                                                \
        }                                                                                                            \
        /* a · b + c on pairs, each rounded once. */                                                                 \
        static __device__ __forceinline__ unsigned int fma(unsigned int a, unsigned int b, unsigned int c) {         \
            unsigned int r;                                                                                          \
            asm("fma.rn." TYPE "x2 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(c));                              \
            return r;                                                                                                \
        }                                                                                                            \
        /* The low and high values of a pair as float32. */                                                          \
        static __device__ __forceinline__ float low(unsigned int p) { return S::load((S::T)(p & 0xffffu)); }         \
        static __device__ __forceinline__ float high(unsigned int p) { return S::load((S::T)(p >> 16)); }            \
    };
NBX_MMA(F16, "f16", 0x3C003C00u)
NBX_MMA(BF16, "bf16", 0x3F803F80u)

// 16 bytes read once: through the read-only path, not kept in L1.
__device__ __forceinline__ uint4 stream_load(const uint4* p) {
    uint4 v;
    asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p));
    return v;
}

// Word i (0 to 3) of 16 bytes.
__device__ __forceinline__ unsigned int word_of(const uint4& v, int i) {
    return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w;
}
