// Scaled dot-product attention, sdpa(q, k, v[, mask]) (backend/cpu/attention.rs's semantics),
// on float32, float16 and bfloat16, computed in float32: softmax(q·kᵀ·scale + mask)·v per
// (batch, query head); query head h reads key/value head h / (hq / hk); `causal`: query i
// sees keys j ≤ i + sk − sq. A row that sees no key (or only −inf scores) is zeros.
//
// Operands are read through their strides ([b, h, s, d] order, elements; the mask's are its
// strides broadcast to [b, hq, sq, sk], 0 in broadcast dims). The output is contiguous
// [b, hq, sq, dv]. Every sum runs in a fixed order: results never depend on timing.
//
// Functions:
//   attention_prefill_<dt>(q, Strides qs, k, ks, v, vs, mask, ms, Sizes z, float scale, T* out)
//     flash-attention style: a block per (16 query rows, head, batch × dv slice); tiles of 32
//     keys and values in shared memory; an online softmax per row (4 rows per warp, a lane
//     per key of the tile for the scores, 8 output columns per lane for the values; each
//     read of a key or value serves the warp's 4 rows). Dynamic shared memory:
//     4·(16·d + 32·(d + 4 if d % 4 == 0 else d + 1) + 32·min(dv, 256)) bytes.
//   attention_decode_<dt>(same operands, float* partials, int splits)
//     split-K for one query row over a long KV: a block per (split of 256 keys, head,
//     batch × dv slice) writes its partial (max, sum, acc[dv]) to `partials`
//     ([b, hq, splits, 2 + dv] float32); each warp takes 8 keys at a time.
//     Dynamic shared memory: 4·(d + 2·warps + warps·256) bytes.
//   attention_combine_<dt>(const float* partials, int splits, int dv, T* out)
//     a block per (batch, head) combines its splits in order.

#define NBX_NEG_INF __int_as_float(0xff800000)
#define NBX_FULL 0xffffffffu
// query rows per block, rows per warp, keys per tile, output columns per block (8 per lane)
#define NBX_BQ 16
#define NBX_ROWS 4
#define NBX_BK 32
#define NBX_SLICE 256
#define NBX_PER_LANE (NBX_SLICE / 32)
// keys per split of the decode kernel, and keys a warp takes at a time
#define NBX_CHUNK 256
#define NBX_KEYS 8

struct Strides {
    i64 s[4];
};

// round_p: the probabilities are rounded to the storage dtype before they weigh the values
// (settings::host's attention operands); the sums stay float32.
struct Sizes {
    int b, hq, hk, sq, sk, d, dv, causal, masked, round_p;
};

template <typename S>
__device__ __forceinline__ float attention_operand(const Sizes& z, float p) {
    return z.round_p ? S::load(S::store(p)) : p;
}

// Keys query row i sees: 0 .. visible.
__device__ __forceinline__ int attention_visible(const Sizes& z, int i) {
    if (!z.causal) return z.sk;
    int v = i + 1 + z.sk - z.sq;
    return v < 0 ? 0 : (v > z.sk ? z.sk : v);
}

__device__ __forceinline__ i64 attention_at(const Strides& st, i64 a, i64 b, i64 c, i64 d) {
    return a * st.s[0] + b * st.s[1] + c * st.s[2] + d * st.s[3];
}

__device__ __forceinline__ float attention_warp_max(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(NBX_FULL, v, o));
    return v;
}
__device__ __forceinline__ float attention_warp_sum(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(NBX_FULL, v, o);
    return v;
}

// The factor that rescales a running state of max `old` to the max `top`, and the weight of a
// score under max `top` (0 when no score is finite yet).
__device__ __forceinline__ float attention_rescale(float old, float top) {
    return top == NBX_NEG_INF ? 1.0f : expf(old - top);
}
__device__ __forceinline__ float attention_weight(float score, float top) {
    return top == NBX_NEG_INF ? 0.0f : expf(score - top);
}

// The row stride of the prefill kernel's key tile: d + 4 floats when d is a multiple of 4 (rows
// of 16-byte words; lanes' rows fall on different banks), else d + 1.
__device__ __forceinline__ int attention_key_stride(int d) { return d % 4 == 0 ? d + 4 : d + 1; }

template <typename S>
__device__ void attention_prefill(const typename S::T* q, Strides qs, const typename S::T* k, Strides ks,
                                  const typename S::T* v, Strides vs, const typename S::T* mask, Strides ms, Sizes z,
                                  float scale, typename S::T* out) {
    extern __shared__ float smem[];
    const int d = z.d;
    float* Qs = smem;                     // [BQ][d]
    float* Ks = Qs + NBX_BQ * d;                             // [BK][key stride]
    float* Vs = Ks + NBX_BK * attention_key_stride(d);       // [BK][width]
    int slices = (z.dv + NBX_SLICE - 1) / NBX_SLICE;
    int batch = blockIdx.z / slices, slice = blockIdx.z % slices;
    int h = blockIdx.y, kvh = h / (z.hq / z.hk);
    int q0 = blockIdx.x * NBX_BQ;
    int c0 = slice * NBX_SLICE, width = min(NBX_SLICE, z.dv - c0);
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;

    for (int e = threadIdx.x; e < NBX_BQ * d; e += blockDim.x) {
        int r = e / d, c = e % d, i = q0 + r;
        Qs[e] = i < z.sq ? S::load(q[attention_at(qs, batch, h, i, c)]) : 0.0f;
    }
    int last = min(q0 + NBX_BQ, z.sq) - 1;
    int keys = attention_visible(z, last);

    float m[NBX_ROWS], l[NBX_ROWS], acc[NBX_ROWS][NBX_PER_LANE];
#pragma unroll
    for (int r = 0; r < NBX_ROWS; ++r) {
        m[r] = NBX_NEG_INF;
        l[r] = 0.0f;
#pragma unroll
        for (int t = 0; t < NBX_PER_LANE; ++t) acc[r][t] = 0.0f;
    }

    const int kd = attention_key_stride(d);
    for (int t0 = 0; t0 < keys; t0 += NBX_BK) {
        __syncthreads();  // the previous tile is consumed (and Q is written, the first time)
        for (int e = threadIdx.x; e < NBX_BK * d; e += blockDim.x) {
            int j = e / d, c = e % d, key = t0 + j;
            Ks[j * kd + c] = key < z.sk ? S::load(k[attention_at(ks, batch, kvh, key, c)]) : 0.0f;
        }
        for (int e = threadIdx.x; e < NBX_BK * width; e += blockDim.x) {
            int j = e / width, c = e % width, key = t0 + j;
            Vs[e] = key < z.sk ? S::load(v[attention_at(vs, batch, kvh, key, c0 + c)]) : 0.0f;
        }
        __syncthreads();

        // the scores of the warp's rows against key t0 + lane: each read of K serves 4 rows
        float s[NBX_ROWS];
#pragma unroll
        for (int r = 0; r < NBX_ROWS; ++r) s[r] = 0.0f;
        const float* krow = Ks + lane * kd;
        const float* qrow = Qs + warp * NBX_ROWS * d;
        if (d % 4 == 0) {
            for (int c = 0; c < d; c += 4) {
                float4 kc = *reinterpret_cast<const float4*>(krow + c);
#pragma unroll
                for (int r = 0; r < NBX_ROWS; ++r) {
                    float4 qc = *reinterpret_cast<const float4*>(qrow + r * d + c);
                    s[r] += qc.x * kc.x + qc.y * kc.y + qc.z * kc.z + qc.w * kc.w;
                }
            }
        } else {
            for (int c = 0; c < d; ++c) {
                float kc = krow[c];
#pragma unroll
                for (int r = 0; r < NBX_ROWS; ++r) s[r] += qrow[r * d + c] * kc;
            }
        }
        int key = t0 + lane;
        float p[NBX_ROWS];
#pragma unroll
        for (int r = 0; r < NBX_ROWS; ++r) {
            int i = q0 + warp * NBX_ROWS + r;
            bool seen = i < z.sq && key < attention_visible(z, i);
            float score = s[r] * scale;
            if (seen && z.masked) score += S::load(mask[attention_at(ms, batch, h, i, key)]);
            score = seen ? score : NBX_NEG_INF;
            float top = fmaxf(m[r], attention_warp_max(score));
            float alpha = attention_rescale(m[r], top);
            p[r] = attention_weight(score, top);
            l[r] = l[r] * alpha + attention_warp_sum(p[r]);
#pragma unroll
            for (int t = 0; t < NBX_PER_LANE; ++t) acc[r][t] *= alpha;
            m[r] = top;
        }
        // the weighted values: each read of V serves 4 rows
        for (int j = 0; j < NBX_BK; ++j) {
            float pj[NBX_ROWS];
#pragma unroll
            for (int r = 0; r < NBX_ROWS; ++r) pj[r] = attention_operand<S>(z, __shfl_sync(NBX_FULL, p[r], j));
            const float* vrow = Vs + j * width;
#pragma unroll
            for (int t = 0; t < NBX_PER_LANE; ++t) {
                int c = lane + 32 * t;
                if (c < width) {
                    float vc = vrow[c];
#pragma unroll
                    for (int r = 0; r < NBX_ROWS; ++r) acc[r][t] += pj[r] * vc;
                }
            }
        }
    }

#pragma unroll
    for (int r = 0; r < NBX_ROWS; ++r) {
        int i = q0 + warp * NBX_ROWS + r;
        if (i >= z.sq) continue;
        typename S::T* row = out + (((i64)batch * z.hq + h) * z.sq + i) * z.dv + c0;
#pragma unroll
        for (int t = 0; t < NBX_PER_LANE; ++t) {
            int c = lane + 32 * t;
            if (c < width) row[c] = S::store(m[r] == NBX_NEG_INF ? 0.0f : acc[r][t] / l[r]);
        }
    }
}

template <typename S>
__device__ void attention_decode(const typename S::T* q, Strides qs, const typename S::T* k, Strides ks,
                                 const typename S::T* v, Strides vs, const typename S::T* mask, Strides ms, Sizes z,
                                 float scale, float* partials, int splits) {
    extern __shared__ float smem[];
    const int d = z.d, warps = blockDim.x / 32;
    float* qsh = smem;                    // [d]
    float* wm = qsh + d;                  // [warps]
    float* wl = wm + warps;               // [warps]
    float* wacc = wl + warps;             // [warps][SLICE]
    int slices = (z.dv + NBX_SLICE - 1) / NBX_SLICE;
    int batch = blockIdx.z / slices, slice = blockIdx.z % slices;
    int h = blockIdx.y, kvh = h / (z.hq / z.hk), split = blockIdx.x;
    int c0 = slice * NBX_SLICE, width = min(NBX_SLICE, z.dv - c0);
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    int begin = split * NBX_CHUNK, end = min(z.sk, begin + NBX_CHUNK);

    for (int c = threadIdx.x; c < d; c += blockDim.x) qsh[c] = S::load(q[attention_at(qs, batch, h, 0, c)]);
    __syncthreads();

    float m = NBX_NEG_INF, l = 0.0f, acc[NBX_PER_LANE];
#pragma unroll
    for (int t = 0; t < NBX_PER_LANE; ++t) acc[t] = 0.0f;
    for (int first = begin + warp * NBX_KEYS; first < end; first += warps * NBX_KEYS) {
        float s[NBX_KEYS];
#pragma unroll
        for (int n = 0; n < NBX_KEYS; ++n) s[n] = 0.0f;
        for (int c = lane; c < d; c += 32) {
            float qc = qsh[c];
#pragma unroll
            for (int n = 0; n < NBX_KEYS; ++n)
                if (first + n < end) s[n] += qc * S::load(k[attention_at(ks, batch, kvh, first + n, c)]);
        }
        float top = m;
#pragma unroll
        for (int n = 0; n < NBX_KEYS; ++n) {
            int key = first + n;
            float score = attention_warp_sum(s[n]) * scale;
            if (key < end && z.masked) score += S::load(mask[attention_at(ms, batch, h, 0, key)]);
            s[n] = key < end ? score : NBX_NEG_INF;
            top = fmaxf(top, s[n]);
        }
        float alpha = attention_rescale(m, top);
        l *= alpha;
#pragma unroll
        for (int t = 0; t < NBX_PER_LANE; ++t) acc[t] *= alpha;
#pragma unroll
        for (int n = 0; n < NBX_KEYS; ++n) {
            float p = attention_weight(s[n], top);
            l += p;
            p = attention_operand<S>(z, p);
            if (first + n < end) {
#pragma unroll
                for (int t = 0; t < NBX_PER_LANE; ++t) {
                    int c = lane + 32 * t;
                    if (c < width) acc[t] += p * S::load(v[attention_at(vs, batch, kvh, first + n, c0 + c)]);
                }
            }
        }
        m = top;
    }

    if (lane == 0) {
        wm[warp] = m;
        wl[warp] = l;
    }
#pragma unroll
    for (int t = 0; t < NBX_PER_LANE; ++t) wacc[warp * NBX_SLICE + lane + 32 * t] = acc[t];
    __syncthreads();
    float top = wm[0];
    for (int w = 1; w < warps; ++w) top = fmaxf(top, wm[w]);
    float* record = partials + (((i64)batch * z.hq + h) * splits + split) * (2 + z.dv);
    if (slice == 0 && threadIdx.x == 0) {
        float sum = 0.0f;
        for (int w = 0; w < warps; ++w) sum += wl[w] * attention_weight(wm[w], top);
        record[0] = top;
        record[1] = sum;
    }
    for (int c = threadIdx.x; c < width; c += blockDim.x) {
        float a = 0.0f;
        for (int w = 0; w < warps; ++w) a += wacc[w * NBX_SLICE + c] * attention_weight(wm[w], top);
        record[2 + c0 + c] = a;
    }
}

template <typename S>
__device__ void attention_combine(const float* partials, int splits, int dv, typename S::T* out) {
    i64 bh = blockIdx.x;
    const float* records = partials + bh * splits * (2 + dv);
    float top = NBX_NEG_INF;
    for (int p = 0; p < splits; ++p) top = fmaxf(top, records[p * (2 + dv)]);
    float sum = 0.0f;
    for (int p = 0; p < splits; ++p) sum += records[p * (2 + dv) + 1] * attention_weight(records[p * (2 + dv)], top);
    for (int c = threadIdx.x; c < dv; c += blockDim.x) {
        float a = 0.0f;
        for (int p = 0; p < splits; ++p)
            a += records[p * (2 + dv) + 2 + c] * attention_weight(records[p * (2 + dv)], top);
        out[bh * dv + c] = S::store(top == NBX_NEG_INF ? 0.0f : a / sum);
    }
}

#define NBX_ATTENTION(dt, S)                                                                                       \
    extern "C" __global__ void attention_prefill_##dt(const S::T* q, Strides qs, const S::T* k, Strides ks,        \
                                                      const S::T* v, Strides vs, const S::T* mask, Strides ms,     \
                                                      Sizes z, float scale, S::T* out) {                           \
        nbx_await_inputs();                                                                                        \
        attention_prefill<S>(q, qs, k, ks, v, vs, mask, ms, z, scale, out);                                        \
    }                                                                                                              \
    extern "C" __global__ void attention_decode_##dt(const S::T* q, Strides qs, const S::T* k, Strides ks,         \
                                                     const S::T* v, Strides vs, const S::T* mask, Strides ms,      \
                                                     Sizes z, float scale, float* partials, int splits) {          \
        nbx_await_inputs();                                                                                        \
        attention_decode<S>(q, qs, k, ks, v, vs, mask, ms, z, scale, partials, splits);                            \
    }                                                                                                              \
    extern "C" __global__ void attention_combine_##dt(const float* partials, int splits, int dv, S::T* out) {      \
        nbx_await_inputs();                                                                                        \
        attention_combine<S>(partials, splits, dv, out);                                                           \
    }

NBX_ATTENTION(fp32, F32)
NBX_ATTENTION(fp16, F16)
NBX_ATTENTION(bf16, BF16)
