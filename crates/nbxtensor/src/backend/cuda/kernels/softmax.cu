// softmax and log_softmax along one axis (backend/cpu/softmax.rs's semantics), on float32,
// float16 and bfloat16, computed in float32. Stable: the axis' maximum (NaN ignored, as the
// CPU's) is subtracted before exp; a row holding a NaN or +inf, or only -inf, is NaN, as on
// the CPU. Reductions combine in a fixed pattern (butterflies of commutative steps, then warps
// in order): results never depend on timing.
//
// Functions:
//   softmax_rows_<dt>_<CH>[_vec](const T* x, T* y, i64 rows, i64 n, int group, int log)
//     contiguous rows of n elements, one pass: `group` threads per row (32 up to the whole
//     block, at most 512 threads) hold it in registers, CH chunks each (a chunk: 16 bytes with _vec, else one
//     element), read once, written once.
//   softmax_looped_<dt>(const T* x, Layout others, i64 axis_stride, i64 n, i64 inner,
//                       i64 rows, T* y, int group, int log)
//     any layout and length: `group` threads per row; an online (max, sum) pass, then a
//     writing pass. `others` addresses the first element of each row (the dims other than
//     the axis); the output is contiguous [outer, n, inner].
//   softmax_columns_<dt>(same, no group)
//     one thread per row, for rows whose neighbours are adjacent in memory (an inner axis).

#define NBX_NEG_INF __int_as_float(0xff800000)
#define NBX_POS_INF __int_as_float(0x7f800000)
#define NBX_NAN __int_as_float(0x7fffffff)

// Butterflies: every lane ends with the same value (each step adds the same two values).
__device__ __forceinline__ float softmax_warp_max(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}
__device__ __forceinline__ float softmax_warp_sum(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// The max (MAX) or sum over the `group` threads of a row (whole warps; the block's threads
// all call it); `scratch` holds a float per warp of the block.
template <bool MAX>
__device__ __forceinline__ float softmax_group(float v, int group, float* scratch) {
    v = MAX ? softmax_warp_max(v) : softmax_warp_sum(v);
    if (group <= 32) return v;
    int first = (threadIdx.x / group) * (group / 32);
    if (threadIdx.x % 32 == 0) scratch[threadIdx.x / 32] = v;
    __syncthreads();
    float r = scratch[first];
    for (int w = 1; w < group / 32; ++w) r = MAX ? fmaxf(r, scratch[first + w]) : r + scratch[first + w];
    __syncthreads();
    return r;
}

// exp(x - m) as float32 (a float32 row: expf) or on the way to a 16-bit result (the
// multiprocessor's exp2 of the scaled difference: a few float32 ulp, far below a 16-bit ulp).
// Either way the row's maximum gives exactly 1.
template <typename S>
__device__ __forceinline__ float softmax_exp(float x, float m) {
    if constexpr (sizeof(typename S::T) == 4) {
        return expf(x - m);
    } else {
        return row_exp2_approx((x - m) * 1.4426950408889634f);
    }
}

// A float32 row keeps each exp in place of its input (no more registers); a 16-bit row
// computes it again when writing (its 16-bit chunks cannot hold it). A row whose sum is a
// number has no NaN to write: its 16-bit values are converted two at a time; a NaN row takes
// the per-element conversion (the host's NaN pattern).
template <typename S, int V, int CH>
__device__ void softmax_rows(const typename S::T* x, typename S::T* y, i64 rows, i64 n, int group, int log) {
    constexpr bool KEEP = sizeof(typename S::T) == 4;
    __shared__ float scratch[32];
    int lane = threadIdx.x % group;
    i64 row = (i64)blockIdx.x * (blockDim.x / group) + threadIdx.x / group;
    bool active = row < rows;
    i64 base = active ? row * n : 0;
    RowChunk<S, V> v[CH];
    float m = NBX_NEG_INF;
#pragma unroll
    for (int c = 0; c < CH; ++c) {
        i64 at = ((i64)c * group + lane) * V;
        if (active && at < n) {
            v[c].load(x + base + at);
            m = fmaxf(m, row_chunk_max(v[c]));
        }
    }
    m = softmax_group<true>(m, group, scratch);
    float s = 0.0f;
#pragma unroll
    for (int c = 0; c < CH; ++c) {
        i64 at = ((i64)c * group + lane) * V;
        if (active && at < n) {
#pragma unroll
            for (int k = 0; k < V; ++k) {
                float e = softmax_exp<S>(v[c].get(k), m);
                s += e;
                if (KEEP && !log) v[c].put(k, e);
            }
        }
    }
    s = softmax_group<false>(s, group, scratch);
    float scale = 1.0f / s, shift = logf(s);
    bool numbers = s == s;
#pragma unroll
    for (int c = 0; c < CH; ++c) {
        i64 at = ((i64)c * group + lane) * V;
        if (active && at < n) {
            float out[V];
#pragma unroll
            for (int k = 0; k < V; ++k) {
                float value = v[c].get(k);
                out[k] = log ? (value - m) - shift : (KEEP ? value : softmax_exp<S>(value, m)) * scale;
            }
            if (numbers)
                row_store_numbers<S, V>(y + base + at, out);
            else
                row_store<S, V>(y + base + at, out);
        }
    }
}

// The running (max, sum of exp(x - max)) after one more element, as the CPU's two passes
// would give it: a NaN or +inf makes the sum NaN; -inf elements add nothing.
__device__ __forceinline__ void softmax_online(float& m, float& s, float v) {
    if (v > m) {
        s = s * expf(m - v) + (v == NBX_POS_INF ? NBX_NAN : 1.0f);
        m = v;
    } else if (v != v) {
        s = NBX_NAN;
    } else if (m != NBX_NEG_INF) {
        s += expf(v - m);
    }
}

// Two running (max, sum) pairs as one (commutative, bit for bit).
__device__ __forceinline__ void softmax_merge(float& m, float& s, float m2, float s2) {
    float top = fmaxf(m, m2);
    s = top == NBX_NEG_INF ? s + s2 : s * expf(m - top) + s2 * expf(m2 - top);
    m = top;
}

template <typename S>
__device__ __forceinline__ void softmax_write(typename S::T* y, float v, float m, float s, int log) {
    *y = S::store(log ? v - m - logf(s) : expf(v - m) / s);
}

template <typename S>
__device__ void softmax_looped(const typename S::T* x, const Layout& others, i64 axis_stride, i64 n, i64 inner,
                               i64 rows, typename S::T* y, int group, int log) {
    __shared__ float scratch_m[32], scratch_s[32];
    int lane = threadIdx.x % group;
    i64 row = (i64)blockIdx.x * (blockDim.x / group) + threadIdx.x / group;
    bool active = row < rows;
    i64 base = active ? nbx_offset(others, row) : 0;
    i64 out = (row / inner) * n * inner + row % inner;
    float m = NBX_NEG_INF, s = 0.0f;
    if (active)
        for (i64 r = lane; r < n; r += group) softmax_online(m, s, S::load(x[base + r * axis_stride]));
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        float m2 = __shfl_xor_sync(0xffffffffu, m, o), s2 = __shfl_xor_sync(0xffffffffu, s, o);
        softmax_merge(m, s, m2, s2);
    }
    if (group > 32) {
        int first = (threadIdx.x / group) * (group / 32);
        if (threadIdx.x % 32 == 0) {
            scratch_m[threadIdx.x / 32] = m;
            scratch_s[threadIdx.x / 32] = s;
        }
        __syncthreads();
        m = scratch_m[first];
        s = scratch_s[first];
        for (int w = 1; w < group / 32; ++w) softmax_merge(m, s, scratch_m[first + w], scratch_s[first + w]);
    }
    if (active)
        for (i64 r = lane; r < n; r += group)
            softmax_write<S>(y + out + r * inner, S::load(x[base + r * axis_stride]), m, s, log);
}

template <typename S>
__device__ void softmax_columns(const typename S::T* x, const Layout& others, i64 axis_stride, i64 n, i64 inner,
                                i64 rows, typename S::T* y, int log) {
    i64 row = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) return;
    i64 base = nbx_offset(others, row);
    i64 out = (row / inner) * n * inner + row % inner;
    float m = NBX_NEG_INF, s = 0.0f;
    for (i64 r = 0; r < n; ++r) softmax_online(m, s, S::load(x[base + r * axis_stride]));
    for (i64 r = 0; r < n; ++r) softmax_write<S>(y + out + r * inner, S::load(x[base + r * axis_stride]), m, s, log);
}

// One one-pass kernel: CH chunks a thread, of 16 bytes (VEC = _vec) or of one element.
#define NBX_SOFTMAX_ROWS(dt, S, CH, VEC, BOUND)                                                               \
    extern "C" __global__ void BOUND softmax_rows_##dt##_##CH##VEC(                                           \
        const S::T* x, S::T* y, i64 rows, i64 n, int group, int log) {                                       \
        nbx_await_inputs();                                                                                  \
        softmax_rows<S, NBX_CHUNK##VEC(S), CH>(x, y, rows, n, group, log);                                   \
    }

// The kernels of a dtype: the one-pass kernels of 1 to 8 one-element chunks a thread and of
// 16-byte chunks up to 32 elements a thread (VECS: NBX_VECS_4 for 4 elements a chunk, 1 to 8
// chunks; NBX_VECS_8 for 8 elements a chunk, 1 to 4), the looped and the column kernel.
#define NBX_SOFTMAX(dt, S, VECS)                                                                                \
    NBX_SOFTMAX_ROWS(dt, S, 1, , NBX_ROW_BOUND)                                                                 \
    NBX_SOFTMAX_ROWS(dt, S, 2, , NBX_ROW_BOUND)                                                                 \
    NBX_SOFTMAX_ROWS(dt, S, 4, , NBX_ROW_BOUND)                                                                 \
    NBX_SOFTMAX_ROWS(dt, S, 8, , NBX_ROW_BOUND)                                                                 \
    VECS(NBX_SOFTMAX_ROWS, dt, S)                                                                               \
    extern "C" __global__ void softmax_looped_##dt(const S::T* x, Layout others, i64 axis_stride, i64 n,        \
                                                   i64 inner, i64 rows, S::T* y, int group, int log) {          \
        nbx_await_inputs();                                                                                    \
        softmax_looped<S>(x, others, axis_stride, n, inner, rows, y, group, log);                              \
    }                                                                                                           \
    extern "C" __global__ void softmax_columns_##dt(const S::T* x, Layout others, i64 axis_stride, i64 n,       \
                                                    i64 inner, i64 rows, S::T* y, int log) {                    \
        nbx_await_inputs();                                                                                    \
        softmax_columns<S>(x, others, axis_stride, n, inner, rows, y, log);                                    \
    }

#define NBX_VECS_4(M, dt, S) \
    M(dt, S, 1, _vec, NBX_ROW_BOUND) M(dt, S, 2, _vec, NBX_ROW_BOUND) M(dt, S, 4, _vec, NBX_ROW_BOUND) M(dt, S, 8, _vec, NBX_ROW_BOUND)
#define NBX_VECS_8(M, dt, S) \
    M(dt, S, 1, _vec, NBX_ROW_BOUND) M(dt, S, 2, _vec, NBX_ROW_BOUND) M(dt, S, 4, _vec, NBX_ROW_BOUND_16BIT_4)

// The register bound of the one-pass kernels: blocks of up to 512 threads; the 16-bit kernel of
// four 16-byte chunks a thread (rows of 4096) is held to 40 registers, which it fits without
// spilling, so that 12 blocks of 128 (12 rows) are in flight on a multiprocessor, not 8.
#define NBX_ROW_BOUND __launch_bounds__(512)
#define NBX_ROW_BOUND_16BIT_4 __maxnreg__(40)

NBX_SOFTMAX(fp32, F32, NBX_VECS_4)
NBX_SOFTMAX(fp16, F16, NBX_VECS_8)
NBX_SOFTMAX(bf16, BF16, NBX_VECS_8)
