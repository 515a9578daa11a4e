// linear for a few rows: y[M, n] = x[M, k] · w[n, k]ᵀ (+ bias[n]) on float16 and bfloat16,
// float32 accumulation, for M rows of x (a decode step's products; instantiated for M = 1, where
// it was measured faster than cuBLASLt: gemv.rs), where the weight's bytes
// are the whole cost. One warp per output column j: its lanes stream w's row j in 16-byte chunks
// (4 in flight a lane, read once, not kept in L1; the first 4 before the inputs are awaited
// when the host says the previous op cannot have written w: recent.rs),
// each chunk against the same chunk of every row of x (L1-resident), then a butterfly sum; the
// order of additions depends on k only.
//
// Functions: gemv_<dt>_<M>(const T* x, const T* w, const T* bias, T* y, i64 n, i64 k, int early)
//   x and w contiguous and 16-byte aligned, k a multiple of 8, bias null or [n] contiguous;
//   blocks of GEMV_WARPS warps, one column each.

#define GEMV_WARPS 4
#define GEMV_UNROLL 4

// The dot product of two 16-byte chunks of 8 elements, added to acc.
template <typename S>
__device__ __forceinline__ float gemv_dot8(uint4 a, uint4 b, float acc) {
    const typename S::T* pa = reinterpret_cast<const typename S::T*>(&a);
    const typename S::T* pb = reinterpret_cast<const typename S::T*>(&b);
#pragma unroll
    for (int e = 0; e < 8; ++e) acc = fmaf(S::load(pa[e]), S::load(pb[e]), acc);
    return acc;
}

// One warp's stream of w's row j, with the next GEMV_UNROLL chunks of its lane in registers
// (`whole`: all of them exist; the rest of the row is read one chunk at a time).
template <typename S>
struct GemvStream {
    const uint4* row;
    i64 j, chunks, c;
    bool whole;
    uint4 wv[GEMV_UNROLL];

    __device__ __forceinline__ GemvStream(const typename S::T* w, i64 n, i64 k) {
        j = (i64)blockIdx.x * GEMV_WARPS + threadIdx.x / 32;
        row = reinterpret_cast<const uint4*>(w + j * k);
        chunks = k / 8;
        c = threadIdx.x % 32;
        whole = j < n;
    }
    // Loads the next GEMV_UNROLL chunks, where the row holds them all.
    __device__ __forceinline__ void next() {
        whole = whole && c + 32 * (GEMV_UNROLL - 1) < chunks;
        if (whole) {
#pragma unroll
            for (int u = 0; u < GEMV_UNROLL; ++u) wv[u] = stream_load(row + c + 32 * u);
        }
    }
};

template <typename S, int M>
__device__ __forceinline__ void gemv_rows(const typename S::T* x, GemvStream<S>& s, const typename S::T* bias,
                                          typename S::T* y, i64 n) {
    if (s.j >= n) return;
    const uint4* xs = reinterpret_cast<const uint4*>(x);
    float acc[M];
#pragma unroll
    for (int m = 0; m < M; ++m) acc[m] = 0.0f;
    while (s.whole) {
#pragma unroll
        for (int u = 0; u < GEMV_UNROLL; ++u)
#pragma unroll
            for (int m = 0; m < M; ++m) acc[m] = gemv_dot8<S>(s.wv[u], xs[m * s.chunks + s.c + 32 * u], acc[m]);
        s.c += 32 * GEMV_UNROLL;
        s.next();
    }
    for (; s.c < s.chunks; s.c += 32) {
        uint4 wv = stream_load(s.row + s.c);
#pragma unroll
        for (int m = 0; m < M; ++m) acc[m] = gemv_dot8<S>(wv, xs[m * s.chunks + s.c], acc[m]);
    }
#pragma unroll
    for (int m = 0; m < M; ++m) {
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) acc[m] += __shfl_xor_sync(0xffffffffu, acc[m], o);
    }
    if (threadIdx.x % 32 == 0) {
        float b = bias ? S::load(bias[s.j]) : 0.0f;
#pragma unroll
        for (int m = 0; m < M; ++m) y[m * n + s.j] = S::store(acc[m] + b);
    }
}

// `early`: the previous op cannot have written w, so its first chunks are loaded before the
// inputs are awaited and, under a programmatic launch, the weight stream starts while the
// previous kernel ends.
#define NBX_GEMV(dt, S, M)                                                                                    \
    extern "C" __global__ void __launch_bounds__(GEMV_WARPS * 32)                                            \
        gemv_##dt##_##M(const S::T* x, const S::T* w, const S::T* bias, S::T* y, i64 n, i64 k, int early) {   \
        GemvStream<S> stream(w, n, k);                                                                        \
        if (early) stream.next();                                                                             \
        nbx_await_inputs();                                                                                   \
        if (!early) stream.next();                                                                            \
        gemv_rows<S, M>(x, stream, bias, y, n);                                                               \
    }
NBX_GEMV(fp16, F16, 1)
NBX_GEMV(bf16, BF16, 1)
