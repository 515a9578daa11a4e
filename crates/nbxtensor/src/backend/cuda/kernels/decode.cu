// Decoding over a KV cache (ops/spec/decode.rs's semantics, backend/cpu/decode.rs on the
// host), on float32, float16 and bfloat16, computed in float32.
//
// decode_split_<dt>_<TPK>_<RB>[_scalar](q, DecodeStrides st, k, v, length, DecodeSizes z, float scale, float* partials)
//   flash-decoding: a block per (split of z.chunk keys, cache head × row group, batch) reads
//   its keys and values once for up to RB query rows of the head's group (grouped-query heads
//   share the read). TPK threads take one key row, 8 columns each (a 16-byte load of a half
//   format); the block takes 128 / TPK rows per step, 2 steps at a time, the next 2 steps'
//   rows loaded while the last are computed. The _scalar kernels read element by element
//   (a step's rows when it begins), for rows that are not 16-byte aligned: the host chooses,
//   so neither loop carries the other's path. The 4-row kernels of up to 16 threads a row are
//   held to 128 registers (4 blocks a multiprocessor). Each group of TPK threads keeps an
//   online softmax of its own keys (scores in the log2 domain: `scale` holds log2 e); the
//   groups combine in a fixed order (shuffles, then shared memory) into the split's partial
//   (max, sum, acc[dv]) of each row ([b, hq, sq, splits, 2 + dv] float32).
//   The valid length is read from `length` (int32 or int64, one value or one per batch row)
//   and clamped to 0 ..= T; a split past it writes an empty partial (max -inf).
// decode_mma_<dt>_<D>_<RB>(the same parameters)
//   the split on the tensor cores, for float16/bfloat16 caches of head dim D = d = dv (64 or
//   128) with 16-byte aligned rows, up to RB (8 or 16) query rows a block (below).
//   Before it awaits its inputs, the first rows of its split's keys and values are prefetched
//   into L2 (decode_prefetch).
// decode_combine_<dt>(partials, DecodeSizes z, T* out)
//   a block per (query row, 32 output columns): the splits' partials combined in a fixed order
//   (8 warps over the splits, each rescaling to its running max, then the warps in order); a row
//   with no visible key is zeros.
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

// 8 consecutive elements of a row: `Raw` as loaded (one 16-byte access, two for float32, when
// VEC: 16-byte rows, n a multiple of 8; else element by element, already widened), `fetch`
// issues the load (zeros past n), `widen` gives them as float32. A loop fetches its next rows
// before it computes on the last ones, so the loads of a block stay in flight meanwhile.
template <typename S, bool VEC>
struct DecodeRow {
    struct Raw {
        float f[8];
    };
    static __device__ __forceinline__ Raw fetch(const typename S::T* row, int c0, int n) {
        Raw r;
#pragma unroll
        for (int e = 0; e < 8; ++e) r.f[e] = c0 + e < n ? S::load(row[c0 + e]) : 0.0f;
        return r;
    }
    static __device__ __forceinline__ void widen(const Raw& r, float* o) {
#pragma unroll
        for (int e = 0; e < 8; ++e) o[e] = r.f[e];
    }
};
template <>
struct DecodeRow<F32, true> {
    struct Raw {
        float4 a, b;
    };
    static __device__ __forceinline__ Raw fetch(const float* row, int c0, int n) {
        Raw r;
        if (c0 < n) {
            r.a = reinterpret_cast<const float4*>(row + c0)[0];
            r.b = reinterpret_cast<const float4*>(row + c0)[1];
        } else {
            r.a = r.b = float4{0.0f, 0.0f, 0.0f, 0.0f};
        }
        return r;
    }
    static __device__ __forceinline__ void widen(const Raw& r, float* o) {
        o[0] = r.a.x; o[1] = r.a.y; o[2] = r.a.z; o[3] = r.a.w;
        o[4] = r.b.x; o[5] = r.b.y; o[6] = r.b.z; o[7] = r.b.w;
    }
};
// float16 and bfloat16: one 16-byte access (the zero pattern is 0.0 in both)
template <typename S>
struct DecodeHalfRow {
    typedef uint4 Raw;
    static __device__ __forceinline__ Raw fetch(const typename S::T* row, int c0, int n) {
        return c0 < n ? *reinterpret_cast<const uint4*>(row + c0) : uint4{0u, 0u, 0u, 0u};
    }
};
template <>
struct DecodeRow<BF16, true> : DecodeHalfRow<BF16> {
    static __device__ __forceinline__ void widen(const Raw& u, float* o) {
        unsigned w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            o[2 * i] = __uint_as_float(w[i] << 16);
            o[2 * i + 1] = __uint_as_float(w[i] & 0xffff0000u);
        }
    }
};
// (the hardware's conversion: a NaN's payload is not kept, and attention's sums would not keep
// it either)
template <>
struct DecodeRow<F16, true> : DecodeHalfRow<F16> {
    static __device__ __forceinline__ void widen(const Raw& u, float* o) {
        unsigned w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            unsigned short lo = (unsigned short)(w[i] & 0xffffu), hi = (unsigned short)(w[i] >> 16);
            asm("cvt.f32.f16 %0, %1;" : "=f"(o[2 * i]) : "h"(lo));
            asm("cvt.f32.f16 %0, %1;" : "=f"(o[2 * i + 1]) : "h"(hi));
        }
    }
};

__device__ __forceinline__ int decode_length(const void* length, const DecodeSizes& z, int batch) {
    i64 l = z.len64 ? reinterpret_cast<const i64*>(length)[batch * z.len_stride]
                    : (i64)reinterpret_cast<const int*>(length)[batch * z.len_stride];
    return l < 0 ? 0 : (l > z.t ? z.t : (int)l);
}

// The keys query position i (of z.sq) sees of a cache of `len` valid rows (causal: the
// queries are its last sq rows).
__device__ __forceinline__ int decode_visible(const DecodeSizes& z, int len, int i) {
    int seen = z.causal ? len - z.sq + 1 + i : len;
    return seen < 0 ? 0 : (seen > len ? len : seen);
}

// The query head of row gr of cache head kh's group (the rows are the group's heads × sq, its
// position gr % sq).
__device__ __forceinline__ int decode_head(const DecodeSizes& z, int kh, int gr) {
    return kh * (z.hq / z.hk) + gr / z.sq;
}

// The warps' states of each row of a split block (max, sum, WIDTH values of which the first dv
// count), combined in a fixed order into the split's partial: (max, sum, values) of each row.
template <int RB, int WIDTH, int WARPS>
__device__ __forceinline__ void decode_write_partial(const float (&sm_m)[WARPS][RB], const float (&sm_l)[WARPS][RB],
                                                     const float (&sm_acc)[WARPS][RB][WIDTH], const DecodeSizes& z,
                                                     int group, int kh, int batch, int split,
                                                     float* __restrict__ partials) {
    for (int idx = threadIdx.x; idx < RB * WIDTH; idx += blockDim.x) {
        int r = idx / WIDTH, c = idx % WIDTH, gr = group * RB + r;
        if (gr >= z.rows || c >= z.dv) continue;
        float top = NBX_NEG_INF;
#pragma unroll
        for (int w = 0; w < WARPS; ++w) top = fmaxf(top, sm_m[w][r]);
        float a = 0.0f, total = 0.0f;
#pragma unroll
        for (int w = 0; w < WARPS; ++w) {
            float f = top == NBX_NEG_INF ? 0.0f : exp2f(sm_m[w][r] - top);
            a += sm_acc[w][r][c] * f;
            total += sm_l[w][r] * f;
        }
        i64 row = ((i64)batch * z.hq + decode_head(z, kh, gr)) * z.sq + gr % z.sq;
        float* p = partials + (row * z.splits + split) * (2 + z.dv);
        p[2 + c] = a;
        if (c == 0) {
            p[0] = top;
            p[1] = total;
        }
    }
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
            int i = gr % z.sq;
            vis[r] = decode_visible(z, len, i);
            const typename S::T* qrow = q + batch * st.q[0] + decode_head(z, kh, gr) * st.q[1] + i * st.q[2];
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
    typedef DecodeRow<S, VEC> Row;
    typename Row::Raw kr[NBX_DEC_STEPS], vr[NBX_DEC_STEPS];
    // the rows of the steps from `at` (zeros past the split's end), then the pointers past them
    auto fetch = [&](int at) {
#pragma unroll
        for (int u = 0; u < NBX_DEC_STEPS; ++u) {
            bool inside = at + u * SLOTS + slot < end;
            kr[u] = Row::fetch(kp + u * kstep, inside ? c0 : z.d, z.d);
            vr[u] = Row::fetch(vp + u * vstep, inside ? c0 : z.dv, z.dv);
        }
        kp += NBX_DEC_STEPS * kstep;
        vp += NBX_DEC_STEPS * vstep;
    };
    // 16-byte rows: the next steps' rows are fetched before the last ones are computed;
    // element by element (widened as loaded, twice the registers) at the top of each step
    if (VEC) fetch(begin);
    // `base` is the same in every thread: the shuffles below see every lane
    for (int base = begin; base < end; base += SLOTS * NBX_DEC_STEPS) {
        if (!VEC) fetch(base);
        float kf[NBX_DEC_STEPS][8], vf[NBX_DEC_STEPS][8];
#pragma unroll
        for (int u = 0; u < NBX_DEC_STEPS; ++u) {
            Row::widen(kr[u], kf[u]);
            Row::widen(vr[u], vf[u]);
        }
        if (VEC && base + SLOTS * NBX_DEC_STEPS < end) fetch(base + SLOTS * NBX_DEC_STEPS);
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
    decode_write_partial<RB, WIDTH, NBX_DEC_WARPS>(sm_m, sm_l, sm_acc, z, group, kh, batch, split, partials);
}

// The split on the tensor cores (float16/bfloat16 caches of head dim D = d = dv, 64 or 128,
// 16-byte rows): 4 warps, warp w over the split's tiles of 16 keys w, w + 4, ...; the block's
// query rows (RB: 8 or 16) are the A rows of mma.sync m16n8k16. The scores S = Q·Kᵀ and the
// weighted values P·V are products accumulated in float32, P given to the second as two pairs
// of the cache's type (its rounding and the rest), which keeps float32's accuracy. A lane loads
// its 16-byte chunks of keys and values straight into its fragments, in the order that makes
// them its own slots:
//   Q·Kᵀ: key n-tile i holds keys 8i + g; the lane loads dims 32c + 8t .. + 7 of its key, and
//     step 2c + h takes its words 2h (slots 2t, 2t+1) and 2h + 1 (slots 2t+8, 2t+9) — the depth
//     of the product permuted alike for Q, which is loaded once in that order.
//   P·V: the scores' accumulators are P's A fragment as they stand (keys 2t, 2t+1 of n-tile 0
//     at slots 2t, 2t+1, of n-tile 1 at 2t+8, 2t+9); the lane loads keys 2t, 2t+1, 2t+8, 2t+9
//     at dims 64c + 8g .. + 7, and output n-tile j takes column 64 (j / 8) + 8g + j % 8 of
//     them, a pair of keys built by one byte permutation. So the accumulator of n-tile j,
//     slot 2t + e holds column 64 (j / 8) + 8 (2t + e) + j % 8.
// The next tile's keys and values are in flight while one is computed. Masks, the online
// softmax (log2 domain) and the warps' combination into the split's partial are decode_split's.
#define NBX_DEC_MMA_WARPS 4
#define NBX_DEC_MMA_TILE 16

template <int D>
struct DecodeTile {
    uint4 k[2][D / 32];  // keys g and 8 + g, dims 32c + 8t ..
    uint4 v[4][D / 64];  // keys 2t, 2t + 1, 2t + 8, 2t + 9, dims 64c + 8g ..
};

template <typename S, int D, int RB>
__device__ __forceinline__ void decode_mma(const typename S::T* __restrict__ q, const DecodeStrides& st,
                                           const typename S::T* __restrict__ k,
                                           const typename S::T* __restrict__ v, const void* length,
                                           const DecodeSizes& z, float scale, float* __restrict__ partials) {
    constexpr int WARPS = NBX_DEC_MMA_WARPS, KC = D / 32, VC = D / 64, NT = D / 8, HALVES = RB / 8;
    typedef typename S::T T;
    __shared__ float sm_m[WARPS][RB], sm_l[WARPS][RB];
    __shared__ float sm_acc[WARPS][RB][D + 4];  // 4 more: the lanes' stores spread over the banks

    const int split = blockIdx.x, kh = blockIdx.y / z.row_groups, group = blockIdx.y % z.row_groups;
    const int batch = blockIdx.z;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
    const int len = decode_length(length, z, batch);

    // every row's visible keys (the block's most bounds its loop), the lane's rows g and g + 8,
    // and Q's A fragments in the permuted depth
    int most = 0, vis[2] = {0, 0};
    unsigned int qa[D / 16][4];
#pragma unroll
    for (int r = 0; r < RB; ++r) {
        int gr = group * RB + r;
        int seen = gr < z.rows ? decode_visible(z, len, gr % z.sq) : 0;
        most = max(most, seen);
        if (r == g) vis[0] = seen;
        if (r == g + 8) vis[1] = seen;
    }
#pragma unroll
    for (int s = 0; s < D / 16; ++s)
#pragma unroll
        for (int e = 0; e < 4; ++e) qa[s][e] = 0u;
#pragma unroll
    for (int half = 0; half < HALVES; ++half) {
        int gr = group * RB + g + 8 * half;
        if (gr >= z.rows) continue;
        const T* qrow = q + batch * st.q[0] + decode_head(z, kh, gr) * st.q[1] + (gr % z.sq) * st.q[2];
#pragma unroll
        for (int c = 0; c < KC; ++c)
#pragma unroll
            for (int hh = 0; hh < 2; ++hh)
#pragma unroll
                for (int j = 0; j < 2; ++j) {
                    int col = 32 * c + 8 * t + 4 * hh + 2 * j;
                    unsigned int lo = qrow[col * st.q[3]], hi = qrow[(col + 1) * st.q[3]];
                    qa[2 * c + hh][half + 2 * j] = lo | (hi << 16);
                }
    }

    const int begin = split * z.chunk, end = min(begin + z.chunk, most);
    const T* kbase = k + batch * st.k[0] + kh * st.k[1];
    const T* vbase = v + batch * st.v[0] + kh * st.v[1];
    const uint4 none = {0u, 0u, 0u, 0u};
    const int stride = NBX_DEC_MMA_TILE * WARPS;  // keys between a warp's tiles
    typedef DecodeTile<D> Tile;
    auto fetch_keys = [&](Tile& f, int t0) {
#pragma unroll
        for (int n = 0; n < 2; ++n) {
            int j = t0 + 8 * n + g;
            const uint4* row = reinterpret_cast<const uint4*>(kbase + (i64)j * st.k[2]) + t;
#pragma unroll
            for (int c = 0; c < KC; ++c) f.k[n][c] = j < end ? stream_load(row + 4 * c) : none;
        }
    };
    auto fetch_values = [&](Tile& f, int t0) {
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            int j = t0 + 2 * t + (i & 1) + 8 * (i >> 1);
            const uint4* row = reinterpret_cast<const uint4*>(vbase + (i64)j * st.v[2]) + g;
#pragma unroll
            for (int c = 0; c < VC; ++c) f.v[i][c] = j < end ? stream_load(row + 8 * c) : none;
        }
    };

    float o[NT][4], m[2] = {NBX_NEG_INF, NBX_NEG_INF}, l[2] = {0.0f, 0.0f};
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) o[j][e] = 0.0f;
    const int limit[2] = {min(vis[0], end), min(vis[1], end)};
    // the tile's keys, then (the next tile's values sent for meanwhile) its values
    auto compute = [&](Tile& f, int t0, Tile& next) {
        float s[2][4];
#pragma unroll
        for (int n = 0; n < 2; ++n)
#pragma unroll
            for (int e = 0; e < 4; ++e) s[n][e] = 0.0f;
#pragma unroll
        for (int c = 0; c < KC; ++c)
#pragma unroll
            for (int hh = 0; hh < 2; ++hh)
#pragma unroll
                for (int n = 0; n < 2; ++n)
                    Mma<S>::mma(s[n], qa[2 * c + hh], word_of(f.k[n][c], 2 * hh), word_of(f.k[n][c], 2 * hh + 1));
        fetch_values(next, t0 + stride);  // zeros past the end: every register written
        // rows g (slots 0, 1) and g + 8 (slots 2, 3): masks, the running max over the row's four
        // lanes, the rescaled sums and values, the weights
#pragma unroll
        for (int half = 0; half < 2; ++half) {
            if (half >= HALVES) {
#pragma unroll
                for (int n = 0; n < 2; ++n) s[n][2] = s[n][3] = 0.0f;
                continue;
            }
            float top = m[half];
#pragma unroll
            for (int n = 0; n < 2; ++n)
#pragma unroll
                for (int e = 0; e < 2; ++e) {
                    float x = t0 + 8 * n + 2 * t + e < limit[half] ? s[n][2 * half + e] * scale : NBX_NEG_INF;
                    s[n][2 * half + e] = x;
                    top = fmaxf(top, x);
                }
            top = fmaxf(top, __shfl_xor_sync(NBX_FULL, top, 1));
            top = fmaxf(top, __shfl_xor_sync(NBX_FULL, top, 2));
            float alpha = top == NBX_NEG_INF ? 1.0f : exp2f(m[half] - top);  // 0 while m is -inf
            m[half] = top;
            float sum = 0.0f;
#pragma unroll
            for (int n = 0; n < 2; ++n)
#pragma unroll
                for (int e = 0; e < 2; ++e) {
                    float p = top == NBX_NEG_INF ? 0.0f : exp2f(s[n][2 * half + e] - top);
                    s[n][2 * half + e] = p;
                    sum += p;
                }
            l[half] = l[half] * alpha + sum;
#pragma unroll
            for (int j = 0; j < NT; ++j) {
                o[j][2 * half] *= alpha;
                o[j][2 * half + 1] *= alpha;
            }
        }
        // P as the sum of two pairs, its rounding and the rounding of what that left out: the
        // weights keep about twice the type's bits (float32's accuracy, as on the CUDA cores)
        unsigned int pa[4], pr[4];
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            if ((i & 1) >= HALVES) {  // rows g + 8 of an 8-row block: none
                pa[i] = pr[i] = 0u;
                continue;
            }
            float lo = s[i >> 1][2 * (i & 1)], hi = s[i >> 1][2 * (i & 1) + 1];
            pa[i] = Mma<S>::pair(lo, hi);
            pr[i] = Mma<S>::pair(lo - Mma<S>::low(pa[i]), hi - Mma<S>::high(pa[i]));
        }
#pragma unroll
        for (int j = 0; j < NT; ++j) {
            const int c = j / 8, w = (j % 8) / 2;
            const unsigned int sel = (j & 1) ? 0x7632u : 0x5410u;
            unsigned int b0 = __byte_perm(word_of(f.v[0][c], w), word_of(f.v[1][c], w), sel);
            unsigned int b1 = __byte_perm(word_of(f.v[2][c], w), word_of(f.v[3][c], w), sel);
            Mma<S>::mma(o[j], pa, b0, b1);
            Mma<S>::mma(o[j], pr, b0, b1);
        }
    };

    // two tiles in registers: the next one's keys in flight while this one's are scored, its
    // values while this one's are weighed (the keys' registers free by then)
    Tile ta, tb;
    int t0 = begin + NBX_DEC_MMA_TILE * warp;
    if (t0 < end) {
        fetch_keys(ta, t0);
        fetch_values(ta, t0);
    }
    while (t0 < end) {
        fetch_keys(tb, t0 + stride);
        compute(ta, t0, tb);
        t0 += stride;
        if (t0 >= end) break;
        fetch_keys(ta, t0 + stride);
        compute(tb, t0, ta);
        t0 += stride;
    }

    // a row's four lanes hold parts of its sum; the warps' states into shared memory
#pragma unroll
    for (int half = 0; half < HALVES; ++half) {
        l[half] += __shfl_xor_sync(NBX_FULL, l[half], 1);
        l[half] += __shfl_xor_sync(NBX_FULL, l[half], 2);
        if (t == 0) {
            sm_m[warp][g + 8 * half] = m[half];
            sm_l[warp][g + 8 * half] = l[half];
        }
#pragma unroll
        for (int j = 0; j < NT; ++j)
#pragma unroll
            for (int e = 0; e < 2; ++e)
                sm_acc[warp][g + 8 * half][64 * (j / 8) + 8 * (2 * t + e) + j % 8] = o[j][2 * half + e];
    }
    __syncthreads();
    decode_write_partial<RB, D + 4, WARPS>(sm_m, sm_l, sm_acc, z, group, kh, batch, split, partials);
}

// Folds the partial (max m, sum l, value v) into the running (top, sum, a), both rescaled to the
// larger max (exp2 of the partials' base-2 logits); an empty partial (m = -inf) adds nothing.
__device__ __forceinline__ void decode_fold(float& top, float& sum, float& a, float m, float l, float v) {
    if (m == NBX_NEG_INF) return;
    const float next = fmaxf(top, m);
    const float keep = top == NBX_NEG_INF ? 0.0f : exp2f(top - next), take = exp2f(m - next);
    sum = sum * keep + l * take;
    a = a * keep + v * take;
    top = next;
}

// Warp w folds splits w, w + warps, … in order, reading each split's max, sum and value at once
// (nothing waits on another split's), then warp 0 folds the warps in order: one round of reads.
template <typename S>
__device__ __forceinline__ void decode_combine(const float* __restrict__ partials, const DecodeSizes& z,
                                               typename S::T* __restrict__ out) {
    __shared__ float tops[NBX_COMBINE_WARPS], sums[NBX_COMBINE_WARPS], values[NBX_COMBINE_WARPS][32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const i64 row = blockIdx.x;
    const int c = blockIdx.y * 32 + lane, stride = 2 + z.dv;
    const bool column = c < z.dv;
    const float* p = partials + row * z.splits * stride;

    float top = NBX_NEG_INF, sum = 0.0f, a = 0.0f;
#pragma unroll 4
    for (int s = warp; s < z.splits; s += NBX_COMBINE_WARPS) {
        const float* q = p + (i64)s * stride;
        decode_fold(top, sum, a, q[0], q[1], column ? q[2 + c] : 0.0f);
    }
    if (lane == 0) {
        tops[warp] = top;
        sums[warp] = sum;
    }
    values[warp][lane] = a;
    __syncthreads();
    if (warp == 0) {
        top = NBX_NEG_INF, sum = 0.0f, a = 0.0f;
#pragma unroll
        for (int w = 0; w < NBX_COMBINE_WARPS; ++w) decode_fold(top, sum, a, tops[w], sums[w], values[w][lane]);
        if (column) out[row * z.dv + c] = S::store(sum > 0.0f ? a / sum : 0.0f);
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

// The keys and values a split block prefetches into L2 before it awaits its inputs.
#define NBX_DEC_PREFETCH_ROWS 64

// The first NBX_DEC_PREFETCH_ROWS rows of the block's split of keys and values (rows of D
// 16-bit elements, contiguous in the head) into L2 by one thread, while the previous kernel
// finishes (compute capability 9.0 on). A hint only: L2 is coherent, so the loads after the
// wait see every write; the length it reads may be the one before the previous op's write.
template <typename S, int D>
__device__ __forceinline__ void decode_prefetch(const typename S::T* k, const typename S::T* v,
                                                const DecodeStrides& st, const void* length, const DecodeSizes& z) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    if (threadIdx.x != 0) return;
    const int batch = blockIdx.z, kh = blockIdx.y / z.row_groups, begin = blockIdx.x * z.chunk;
    const int rows = min(min(z.chunk, decode_length(length, z, batch) - begin), NBX_DEC_PREFETCH_ROWS);
    if (rows <= 0) return;
    const unsigned int bytes = (unsigned int)(rows * D * sizeof(typename S::T));
    // the rows of one cache (strides: batch, head, row), where they are contiguous
    auto prefetch = [&](const typename S::T* cache, const i64* stride) {
        if (stride[2] != D) return;
        const typename S::T* first = cache + batch * stride[0] + kh * stride[1] + (i64)begin * D;
        asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(first), "r"(bytes) : "memory");
    };
    prefetch(k, st.k);
    prefetch(v, st.v);
#endif
}

#define NBX_DECODE_MMA(dt, S, D, RB)                                                                                \
    extern "C" __global__ void __launch_bounds__(NBX_DEC_MMA_WARPS * 32, 2)                                         \
        decode_mma_##dt##_##D##_##RB(const S::T* q, DecodeStrides st, const S::T* k, const S::T* v,                 \
                                     const void* length, DecodeSizes z, float scale, float* partials) {             \
        decode_prefetch<S, D>(k, v, st, length, z);                                                                 \
        nbx_await_inputs();                                                                                         \
        decode_mma<S, D, RB>(q, st, k, v, length, z, scale, partials);                                              \
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
NBX_DECODE_MMA(fp16, F16, 64, 8)
NBX_DECODE_MMA(fp16, F16, 64, 16)
NBX_DECODE_MMA(fp16, F16, 128, 8)
NBX_DECODE_MMA(fp16, F16, 128, 16)
NBX_DECODE_MMA(bf16, BF16, 64, 8)
NBX_DECODE_MMA(bf16, BF16, 64, 16)
NBX_DECODE_MMA(bf16, BF16, 128, 8)
NBX_DECODE_MMA(bf16, BF16, 128, 16)
