// linear for a few rows: y[M, n] = x[M, k] · w[n, k]ᵀ (+ bias[n]) on float16 and bfloat16,
// float32 accumulation, for M rows of x (a decode step's products; instantiated for M = 1, where
// it was measured faster than cuBLASLt: gemv.rs), where the weight's bytes
// are the whole cost. One warp per output column j: its lanes stream w's row j in 16-byte chunks
// (4 in flight a lane, read once, not kept in L1), each chunk against the same chunk of every
// row of x (L1-resident), then a butterfly sum; the order of additions depends on k only.
//
// Functions: gemv_<dt>_<M>(const T* x, const T* w, const T* bias, T* y, i64 n, i64 k)
//   x and w contiguous and 16-byte aligned, k a multiple of 8, bias null or [n] contiguous;
//   blocks of GEMV_WARPS warps, one column each.

#define GEMV_WARPS 4
#define GEMV_UNROLL 4

__device__ __forceinline__ uint4 gemv_stream_load(const uint4* p) {
    uint4 v;
    asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p));
    return v;
}

// The dot product of two 16-byte chunks of 8 elements, added to acc.
template <typename S>
__device__ __forceinline__ float gemv_dot8(uint4 a, uint4 b, float acc) {
    const typename S::T* pa = reinterpret_cast<const typename S::T*>(&a);
    const typename S::T* pb = reinterpret_cast<const typename S::T*>(&b);
#pragma unroll
    for (int e = 0; e < 8; ++e) acc = fmaf(S::load(pa[e]), S::load(pb[e]), acc);
    return acc;
}

template <typename S, int M>
__device__ void gemv_rows(const typename S::T* x, const typename S::T* w, const typename S::T* bias,
                          typename S::T* y, i64 n, i64 k) {
    int lane = threadIdx.x % 32;
    i64 j = (i64)blockIdx.x * GEMV_WARPS + threadIdx.x / 32;
    if (j >= n) return;
    const uint4* row = reinterpret_cast<const uint4*>(w + j * k);
    const uint4* xs = reinterpret_cast<const uint4*>(x);
    i64 chunks = k / 8;
    float acc[M];
#pragma unroll
    for (int m = 0; m < M; ++m) acc[m] = 0.0f;
    i64 c = lane;
    for (; c + 32 * (GEMV_UNROLL - 1) < chunks; c += 32 * GEMV_UNROLL) {
        uint4 wv[GEMV_UNROLL];
#pragma unroll
        for (int u = 0; u < GEMV_UNROLL; ++u) wv[u] = gemv_stream_load(row + c + 32 * u);
#pragma unroll
        for (int u = 0; u < GEMV_UNROLL; ++u)
#pragma unroll
            for (int m = 0; m < M; ++m) acc[m] = gemv_dot8<S>(wv[u], xs[m * chunks + c + 32 * u], acc[m]);
    }
    for (; c < chunks; c += 32) {
        uint4 wv = gemv_stream_load(row + c);
#pragma unroll
        for (int m = 0; m < M; ++m) acc[m] = gemv_dot8<S>(wv, xs[m * chunks + c], acc[m]);
    }
#pragma unroll
    for (int m = 0; m < M; ++m) {
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) acc[m] += __shfl_xor_sync(0xffffffffu, acc[m], o);
    }
    if (lane == 0) {
        float b = bias ? S::load(bias[j]) : 0.0f;
#pragma unroll
        for (int m = 0; m < M; ++m) y[m * n + j] = S::store(acc[m] + b);
    }
}

#define NBX_GEMV(dt, S, M)                                                                                    \
    extern "C" __global__ void __launch_bounds__(GEMV_WARPS * 32)                                            \
        gemv_##dt##_##M(const S::T* x, const S::T* w, const S::T* bias, S::T* y, i64 n, i64 k) {              \
        gemv_rows<S, M>(x, w, bias, y, n, k);                                                                 \
    }
NBX_GEMV(fp16, F16, 1)
NBX_GEMV(bf16, BF16, 1)
