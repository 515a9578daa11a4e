// Decoding over a KV cache (ops/spec/decode.rs's semantics, backend/cpu/decode.rs on the
// host), on float32, float16 and bfloat16, computed in float32.
//
// decode_split_<dt>_<TPK>_<RB>[_scalar](q, DecodeStrides st, k, v, length, DecodeSizes z, float scale, float* partials)
//   flash-decoding: a block per (split of z.chunk keys, cache head × row group, batch) reads
//   its keys and values once for up to RB query rows of the head's group (grouped-query heads
//   share the read). TPK threads take one key row, 8 columns each (a 16-byte load of a half
//   format); the block takes 128 / TPK rows per step, 2 steps at a time. The _scalar kernels
//   read element by element, for rows that are not 16-byte aligned: the host chooses, so
//   neither loop carries the other's path. The 4-row kernels of up to 16 threads a row are
//   held to 128 registers (4 blocks a multiprocessor). Each group of TPK threads keeps an
//   online softmax of its own keys (scores in the log2 domain: `scale` holds log2 e); the
//   groups combine in a fixed order (shuffles, then shared memory) into the split's partial
//   (max, sum, acc[dv]) of each row ([b, hq, sq, splits, 2 + dv] float32).
//   The valid length is read from `length` (int32 or int64, one value or one per batch row)
//   and clamped to 0 ..= T; a split past it writes an empty partial (max -inf).
// decode_combine_<dt>(partials, DecodeSizes z, T* out)
//   a block per (query row, 32 output columns): the splits' partials combined in a fixed order
//   (8 warps over the splits, then the warps in order); a row with no visible key is zeros.
// kv_cache_write_<dt>(cache, src, WriteStrides ns, position, WriteSizes w)
//   src [b, h, s, d] (any strides) into the contiguous cache [b, h, t, d] at rows position +
//   j; a row that would fall outside 0 .. t is skipped (never written).

#define NBX_DEC_THREADS 128
#define NBX_DEC_WARPS (NBX_DEC_THREADS / 32)
#define NBX_DEC_STEPS 2
#define NBX_COMBINE_THREADS 256
#define NBX_COMBINE_WARPS (NBX_COMBINE_THREADS / 32)
#define NBX_NEG_INF __int_as_float(0xff800000)
#define NBX_FULL 0xffffffffu

struct DecodeSizes {
    int b, hq, hk, sq, t, d, dv;
    int causal;
    int rows;        // query rows per cache head: (hq / hk) * sq
    int row_groups;  // blocks per cache head along its rows
    int splits, chunk;
    int len_stride;  // elements between the batch rows' lengths (0: one length for every row)
    int len64;       // the length is int64
};

struct DecodeStrides {
    i64 q[4];  // q: batch, head, row, column
    i64 k[3];  // the caches: batch, head, row (columns unit-stride)
    i64 v[3];
};

// 8 consecutive elements as float32.
template <typename S>
struct DecodeVec;
template <>
struct DecodeVec<F32> {
    static __device__ __forceinline__ void load(const float* p, float* o) {
        float4 a = reinterpret_cast<const float4*>(p)[0], b = reinterpret_cast<const float4*>(p)[1];
        o[0] = a.x; o[1] = a.y; o[2] = a.z; o[3] = a.w;
        o[4] = b.x; o[5] = b.y; o[6] = b.z; o[7] = b.w;
    }
};
template <>
struct DecodeVec<BF16> {
    static __device__ __forceinline__ void load(const nbx_bf16* p, float* o) {
        uint4 u = *reinterpret_cast<const uint4*>(p);
        unsigned w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            o[2 * i] = __uint_as_float(w[i] << 16);
            o[2 * i + 1] = __uint_as_float(w[i] & 0xffff0000u);
        }
    }
};
template <>
struct DecodeVec<F16> {
    static __device__ __forceinline__ void load(const nbx_f16* p, float* o) {
        uint4 u = *reinterpret_cast<const uint4*>(p);
        unsigned w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            o[2 * i] = nbx_f16_to_f32((nbx_f16)(w[i] & 0xffffu));
            o[2 * i + 1] = nbx_f16_to_f32((nbx_f16)(w[i] >> 16));
        }
    }
};

// Columns c0 .. c0 + 8 of a row of n (zeros past n): one 16-byte access (two for float32)
// when VEC (16-byte rows, n a multiple of 8), else element by element.
template <typename S, bool VEC>
__device__ __forceinline__ void decode_load(const typename S::T* row, int c0, int n, float* o) {
    if (VEC) {
        if (c0 < n) {
            DecodeVec<S>::load(row + c0, o);
        } else {
#pragma unroll
            for (int e = 0; e < 8; ++e) o[e] = 0.0f;
        }
        return;
    }
#pragma unroll
    for (int e = 0; e < 8; ++e) o[e] = c0 + e < n ? S::load(row[c0 + e]) : 0.0f;
}

__device__ __forceinline__ int decode_length(const void* length, const DecodeSizes& z, int batch) {
    i64 l = z.len64 ? reinterpret_cast<const i64*>(length)[batch * z.len_stride]
                    : (i64)reinterpret_cast<const int*>(length)[batch * z.len_stride];
    return l < 0 ? 0 : (l > z.t ? z.t : (int)l);
}

template <typename S, int TPK, int RB, bool VEC>
__device__ __forceinline__ void decode_split(const typename S::T* __restrict__ q, const DecodeStrides& st,
                                             const typename S::T* __restrict__ k,
                                             const typename S::T* __restrict__ v, const void* length,
                                             const DecodeSizes& z, float scale, float* __restrict__ partials) {
    constexpr int SLOTS = NBX_DEC_THREADS / TPK;  // key rows a block takes per step
    constexpr int WIDTH = TPK * 8;                // columns a key's threads hold
    __shared__ float sm_m[NBX_DEC_WARPS][RB], sm_l[NBX_DEC_WARPS][RB];
    __shared__ float sm_acc[NBX_DEC_WARPS][RB][WIDTH];

    const int split = blockIdx.x, kh = blockIdx.y / z.row_groups, group = blockIdx.y % z.row_groups;
    const int batch = blockIdx.z;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int sub = tid % TPK, slot = tid / TPK, c0 = sub * 8;
    const int len = decode_length(length, z, batch);
    const int heads_per_kv = z.hq / z.hk;

    int vis[RB];
    float qv[RB][8];
    int most = 0;
#pragma unroll
    for (int r = 0; r < RB; ++r) {
        int gr = group * RB + r;
        vis[r] = 0;
#pragma unroll
        for (int e = 0; e < 8; ++e) qv[r][e] = 0.0f;
        if (gr < z.rows) {
            int g = gr / z.sq, i = gr % z.sq, h = kh * heads_per_kv + g;
            int seen = z.causal ? len - z.sq + 1 + i : len;
            vis[r] = seen < 0 ? 0 : (seen > len ? len : seen);
            const typename S::T* qrow = q + batch * st.q[0] + h * st.q[1] + i * st.q[2];
#pragma unroll
            for (int e = 0; e < 8; ++e) {
                int c = c0 + e;
                qv[r][e] = c < z.d ? S::load(qrow[c * st.q[3]]) * scale : 0.0f;
            }
        }
        most = max(most, vis[r]);
    }
    const int begin = split * z.chunk;
    const int end = min(begin + z.chunk, most);
    // this thread's rows: kp and vp step SLOTS rows per key of a step
    const i64 kstep = SLOTS * st.k[2], vstep = SLOTS * st.v[2];
    const typename S::T* kp = k + batch * st.k[0] + kh * st.k[1] + (begin + slot) * st.k[2];
    const typename S::T* vp = v + batch * st.v[0] + kh * st.v[1] + (begin + slot) * st.v[2];

    float m[RB], l[RB], acc[RB][8];
#pragma unroll
    for (int r = 0; r < RB; ++r) {
        m[r] = NBX_NEG_INF;
        l[r] = 0.0f;
#pragma unroll
        for (int e = 0; e < 8; ++e) acc[r][e] = 0.0f;
    }
    // `base` is the same in every thread: the shuffles below see every lane
    for (int base = begin; base < end; base += SLOTS * NBX_DEC_STEPS) {
        float kf[NBX_DEC_STEPS][8], vf[NBX_DEC_STEPS][8];
#pragma unroll
        for (int u = 0; u < NBX_DEC_STEPS; ++u) {
            int j = base + u * SLOTS + slot;
            if (j < end) {
                decode_load<S, VEC>(kp + u * kstep, c0, z.d, kf[u]);
                decode_load<S, VEC>(vp + u * vstep, c0, z.dv, vf[u]);
            } else {
#pragma unroll
                for (int e = 0; e < 8; ++e) kf[u][e] = vf[u][e] = 0.0f;
            }
        }
        kp += NBX_DEC_STEPS * kstep;
        vp += NBX_DEC_STEPS * vstep;
        float s[NBX_DEC_STEPS][RB];
#pragma unroll
        for (int u = 0; u < NBX_DEC_STEPS; ++u)
#pragma unroll
            for (int r = 0; r < RB; ++r) {
                float dot = 0.0f;
#pragma unroll
                for (int e = 0; e < 8; ++e) dot = fmaf(qv[r][e], kf[u][e], dot);
                s[u][r] = dot;
            }
#pragma unroll
        for (int o = TPK / 2; o > 0; o >>= 1)
#pragma unroll
            for (int u = 0; u < NBX_DEC_STEPS; ++u)
#pragma unroll
                for (int r = 0; r < RB; ++r) s[u][r] += __shfl_xor_sync(NBX_FULL, s[u][r], o);
#pragma unroll
        for (int r = 0; r < RB; ++r) {
            float top = m[r];
#pragma unroll
            for (int u = 0; u < NBX_DEC_STEPS; ++u) {
                int j = base + u * SLOTS + slot;
                s[u][r] = j < vis[r] ? s[u][r] : NBX_NEG_INF;
                top = fmaxf(top, s[u][r]);
            }
            if (top > m[r]) {
                float alpha = exp2f(m[r] - top);  // 0 while m is -inf
                l[r] *= alpha;
#pragma unroll
                for (int e = 0; e < 8; ++e) acc[r][e] *= alpha;
                m[r] = top;
            }
            if (m[r] != NBX_NEG_INF) {
#pragma unroll
                for (int u = 0; u < NBX_DEC_STEPS; ++u) {
                    float p = exp2f(s[u][r] - m[r]);
                    l[r] += p;
#pragma unroll
                    for (int e = 0; e < 8; ++e) acc[r][e] = fmaf(p, vf[u][e], acc[r][e]);
                }
            }
        }
    }
    // the key groups of a warp, then the warps, in a fixed order
#pragma unroll
    for (int o = TPK; o < 32; o <<= 1)
#pragma unroll
        for (int r = 0; r < RB; ++r) {
            float om = __shfl_xor_sync(NBX_FULL, m[r], o), ol = __shfl_xor_sync(NBX_FULL, l[r], o);
            float top = fmaxf(m[r], om);
            float fa = top == NBX_NEG_INF ? 0.0f : exp2f(m[r] - top);
            float fb = top == NBX_NEG_INF ? 0.0f : exp2f(om - top);
            l[r] = l[r] * fa + ol * fb;
#pragma unroll
            for (int e = 0; e < 8; ++e) acc[r][e] = acc[r][e] * fa + __shfl_xor_sync(NBX_FULL, acc[r][e], o) * fb;
            m[r] = top;
        }
    if (lane < TPK) {
#pragma unroll
        for (int r = 0; r < RB; ++r) {
            if (lane == 0) {
                sm_m[warp][r] = m[r];
                sm_l[warp][r] = l[r];
            }
#pragma unroll
            for (int e = 0; e < 8; ++e) sm_acc[warp][r][c0 + e] = acc[r][e];
        }
    }
    __syncthreads();
    for (int idx = tid; idx < RB * WIDTH; idx += NBX_DEC_THREADS) {
        int r = idx / WIDTH, c = idx % WIDTH, gr = group * RB + r;
        if (gr >= z.rows || c >= z.dv) continue;
        float top = NBX_NEG_INF;
#pragma unroll
        for (int w = 0; w < NBX_DEC_WARPS; ++w) top = fmaxf(top, sm_m[w][r]);
        float a = 0.0f, total = 0.0f;
#pragma unroll
        for (int w = 0; w < NBX_DEC_WARPS; ++w) {
            float f = top == NBX_NEG_INF ? 0.0f : exp2f(sm_m[w][r] - top);
            a += sm_acc[w][r][c] * f;
            total += sm_l[w][r] * f;
        }
        int g = gr / z.sq, i = gr % z.sq, h = kh * heads_per_kv + g;
        i64 row = ((i64)batch * z.hq + h) * z.sq + i;
        float* p = partials + (row * z.splits + split) * (2 + z.dv);
        p[2 + c] = a;
        if (c == 0) {
            p[0] = top;
            p[1] = total;
        }
    }
}

template <typename S>
__device__ __forceinline__ void decode_combine(const float* __restrict__ partials, const DecodeSizes& z,
                                               typename S::T* __restrict__ out) {
    extern __shared__ float smem[];
    float* weight = smem;                                   // [splits]
    float* part = smem + z.splits;                          // [warps][32]
    float* red = part + NBX_COMBINE_WARPS * 32;             // [warps]
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const i64 row = blockIdx.x;
    const int c = blockIdx.y * 32 + lane, stride = 2 + z.dv;
    const float* p = partials + row * z.splits * stride;

    float top = NBX_NEG_INF;
    for (int s = tid; s < z.splits; s += NBX_COMBINE_THREADS) top = fmaxf(top, p[s * stride]);
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) top = fmaxf(top, __shfl_xor_sync(NBX_FULL, top, o));
    if (lane == 0) red[warp] = top;
    __syncthreads();
    top = NBX_NEG_INF;
#pragma unroll
    for (int w = 0; w < NBX_COMBINE_WARPS; ++w) top = fmaxf(top, red[w]);
    float sum = 0.0f;
    for (int s = tid; s < z.splits; s += NBX_COMBINE_THREADS) {
        float f = top == NBX_NEG_INF ? 0.0f : exp2f(p[s * stride] - top);
        weight[s] = f;
        sum += p[s * stride + 1] * f;
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(NBX_FULL, sum, o);
    __syncthreads();  // every warp has read red[] before it is reused
    if (lane == 0) red[warp] = sum;
    __syncthreads();
    float total = 0.0f;
#pragma unroll
    for (int w = 0; w < NBX_COMBINE_WARPS; ++w) total += red[w];
    float a = 0.0f;
    if (c < z.dv)
        for (int s = warp; s < z.splits; s += NBX_COMBINE_WARPS) a += p[s * stride + 2 + c] * weight[s];
    part[warp * 32 + lane] = a;
    __syncthreads();
    if (warp == 0 && c < z.dv) {
        float v = 0.0f;
#pragma unroll
        for (int w = 0; w < NBX_COMBINE_WARPS; ++w) v += part[w * 32 + lane];
        out[row * z.dv + c] = S::store(total > 0.0f ? v / total : 0.0f);
    }
}

struct WriteStrides {
    i64 s[4];
};

struct WriteSizes {
    int b, h, t, s, d;
    int pos_stride;  // elements between the batch rows' positions (0: one for every row)
    int pos64;       // the position is int64
};

template <typename S>
__device__ __forceinline__ void kv_cache_write(typename S::T* __restrict__ cache, const typename S::T* __restrict__ src,
                                               const WriteStrides& ns, const void* position, const WriteSizes& w) {
    const i64 n = (i64)w.b * w.h * w.s * w.d;
    for (i64 idx = (i64)blockIdx.x * blockDim.x + threadIdx.x; idx < n; idx += (i64)gridDim.x * blockDim.x) {
        i64 e = idx % w.d, rest = idx / w.d;
        i64 j = rest % w.s;
        rest /= w.s;
        i64 hh = rest % w.h, batch = rest / w.h;
        i64 at = w.pos64 ? reinterpret_cast<const i64*>(position)[batch * w.pos_stride]
                         : (i64)reinterpret_cast<const int*>(position)[batch * w.pos_stride];
        i64 row = at + j;
        if (row < 0 || row >= w.t) continue;
        cache[((batch * w.h + hh) * w.t + row) * w.d + e] =
            src[batch * ns.s[0] + hh * ns.s[1] + j * ns.s[2] + e * ns.s[3]];
    }
}

#define NBX_DECODE_SPLIT(dt, S, TPK, RB, MB)                                                                        \
    extern "C" __global__ void __launch_bounds__(NBX_DEC_THREADS, MB)                                               \
        decode_split_##dt##_##TPK##_##RB(const S::T* q, DecodeStrides st, const S::T* k, const S::T* v,             \
                                         const void* length, DecodeSizes z, float scale, float* partials) {         \
        nbx_await_inputs();                                                                                         \
        decode_split<S, TPK, RB, true>(q, st, k, v, length, z, scale, partials);                                    \
    }                                                                                                               \
    extern "C" __global__ void __launch_bounds__(NBX_DEC_THREADS, MB)                                               \
        decode_split_##dt##_##TPK##_##RB##_scalar(const S::T* q, DecodeStrides st, const S::T* k,                   \
                                                  const S::T* v, const void* length, DecodeSizes z, float scale,    \
                                                  float* partials) {                                                \
        nbx_await_inputs();                                                                                         \
        decode_split<S, TPK, RB, false>(q, st, k, v, length, z, scale, partials);                                   \
    }

#define NBX_DECODE(dt, S)                                                                                           \
    NBX_DECODE_SPLIT(dt, S, 8, 4, 4)                                                                                \
    NBX_DECODE_SPLIT(dt, S, 8, 8, 1)                                                                                \
    NBX_DECODE_SPLIT(dt, S, 16, 4, 4)                                                                               \
    NBX_DECODE_SPLIT(dt, S, 16, 8, 1)                                                                               \
    NBX_DECODE_SPLIT(dt, S, 32, 4, 1)                                                                               \
    NBX_DECODE_SPLIT(dt, S, 32, 8, 1)                                                                               \
    extern "C" __global__ void __launch_bounds__(NBX_COMBINE_THREADS)                                               \
        decode_combine_##dt(const float* partials, DecodeSizes z, S::T* out) {                                      \
        nbx_await_inputs();                                                                                         \
        decode_combine<S>(partials, z, out);                                                                        \
    }                                                                                                               \
    extern "C" __global__ void kv_cache_write_##dt(S::T* cache, const S::T* src, WriteStrides ns,                   \
                                                   const void* position, WriteSizes w) {                            \
        nbx_await_inputs();                                                                                         \
        kv_cache_write<S>(cache, src, ns, position, w);                                                             \
    }

NBX_DECODE(fp32, F32)
NBX_DECODE(fp16, F16)
NBX_DECODE(bf16, BF16)
