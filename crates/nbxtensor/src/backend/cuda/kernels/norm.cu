// layer_norm(x, weight, bias), rms_norm(x, weight), add_rms_norm(x, residual, weight) and
// add_layer_norm(x, residual, weight, bias) over the last dim (backend/cpu/norm.rs's
// semantics), on float32, float16 and bfloat16, computed in float32:
//   layer_norm: (x - mean) / sqrt(var + eps) * weight + bias   (the biased variance)
//   rms_norm:   x / sqrt(mean(x²) + eps) * weight
//   add_rms_norm: sum = x + residual rounded to the dtype (stored: the first output), then
//               rms_norm of those rounded sums (the second), in rms_norm's pattern exactly, so
//               the two outputs are bit for bit add's and rms_norm's
//   add_layer_norm: the same sum, then layer_norm of it in layer_norm's pattern exactly
// The statistics are exact two-pass ones (the mean first, then the squares about it), each a
// reduction in a fixed pattern (butterflies, then warps in order): results never depend on
// timing.
//
// Functions (op: layer_norm, rms_norm, add_rms_norm or add_layer_norm; only the layer norms
// read b, only the add_ ops read r and write sum: the others are passed null there):
//   norm_<op>_<dt>_<CH>[_vec](const T* x, const T* r, const T* w, const T* b, T* sum, T* y,
//                             i64 rows, i64 n, float eps, int group, int early)
//     contiguous rows (and weights) held in registers, one pass over memory: `group` threads
//     per row (32 up to 512), CH chunks each (16 bytes with _vec, else one element; at most 32
//     elements a thread); a weight of at most 32 bytes a thread is loaded first, before the
//     inputs are awaited when `early`.
//   norm_<op>_<dt>_looped(const T* x, Layout rows_at, i64 x_stride, const T* r, Layout r_rows_at,
//                         i64 r_stride, const T* w, i64 w_stride, const T* b, i64 b_stride,
//                         T* sum, T* y, i64 rows, i64 n, float eps, int group)
//     any layout and length: `rows_at` addresses each row's first element, x_stride steps
//     along it; the statistics read the row from memory again for each pass (the add_ ops'
//     passes read the sums they wrote, each thread the elements it wrote itself).

// The sum over the `group` threads of a row (whole warps; every thread of the block calls
// it); `scratch` holds a float per warp of the block. Every thread gets the same value.
__device__ __forceinline__ float norm_group_sum(float v, int group, float* scratch) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if (group <= 32) return v;
    int first = (threadIdx.x / group) * (group / 32);
    if (threadIdx.x % 32 == 0) scratch[threadIdx.x / 32] = v;
    __syncthreads();
    float r = scratch[first];
    for (int w = 1; w < group / 32; ++w) r += scratch[first + w];
    __syncthreads();
    return r;
}

// The weight's chunks of a thread, held from the kernel's start where they take at most 32
// bytes (HOLDS), so that their load can come before the inputs are awaited; else loaded where
// they are used.
template <typename S, int V, int CH>
struct NormWeight {
    static constexpr bool HOLDS = CH * V * sizeof(typename S::T) <= 32;
    RowChunk<S, V> c[HOLDS ? CH : 1];

    __device__ __forceinline__ void load(const typename S::T* w, i64 n, int group) {
        if constexpr (HOLDS) {
            int lane = threadIdx.x % group;
#pragma unroll
            for (int k = 0; k < CH; ++k) {
                i64 at = ((i64)k * group + lane) * V;
                if (at < n) c[k].load(w + at);
            }
        }
    }
    // Chunk k of the thread (at element `at` of the row).
    __device__ __forceinline__ RowChunk<S, V> get(const typename S::T* w, int k, i64 at) const {
        if constexpr (HOLDS) return c[k];
        RowChunk<S, V> loaded;
        loaded.load(w + at);
        return loaded;
    }
};

template <typename S, int V, int CH, bool LAYER, bool ADD>
__device__ void norm_rows(const typename S::T* x, const typename S::T* r, const typename S::T* w,
                          const NormWeight<S, V, CH>& held, const typename S::T* b, typename S::T* sum_out,
                          typename S::T* y, i64 rows, i64 n, float eps, int group) {
    __shared__ float scratch[32];
    int lane = threadIdx.x % group;
    i64 row = (i64)blockIdx.x * (blockDim.x / group) + threadIdx.x / group;
    bool active = row < rows;
    i64 base = active ? row * n : 0;
    RowChunk<S, V> v[CH];
    float sum = 0.0f;
#pragma unroll
    for (int c = 0; c < CH; ++c) {
        i64 at = ((i64)c * group + lane) * V;
        if (active && at < n) {
            v[c].load(x + base + at);
            if (ADD) {
                // the sum rounded to the dtype, held as its stored bits (what rms_norm would load)
                RowChunk<S, V> residual;
                residual.load(r + base + at);
#pragma unroll
                for (int k = 0; k < V; ++k) v[c].put(k, v[c].get(k) + residual.get(k));
                if constexpr (V == 1) {
                    sum_out[base + at] = v[c].raw.e[0];
                } else {
                    __stwb(reinterpret_cast<uint4*>(sum_out + base + at), v[c].raw.word);
                }
            }
            if (LAYER)
#pragma unroll
                for (int k = 0; k < V; ++k) sum += v[c].get(k);
        }
    }
    float mean = LAYER ? norm_group_sum(sum, group, scratch) / (float)n : 0.0f;
    float squares = 0.0f;
#pragma unroll
    for (int c = 0; c < CH; ++c) {
        i64 at = ((i64)c * group + lane) * V;
        if (active && at < n) {
#pragma unroll
            for (int k = 0; k < V; ++k) {
                float d = LAYER ? v[c].get(k) - mean : v[c].get(k);
                squares += d * d;
            }
        }
    }
    float scale = 1.0f / sqrtf(norm_group_sum(squares, group, scratch) / (float)n + eps);
#pragma unroll
    for (int c = 0; c < CH; ++c) {
        i64 at = ((i64)c * group + lane) * V;
        if (active && at < n) {
            RowChunk<S, V> weight = held.get(w, c, at), bias;
            if (LAYER) bias.load(b + at);
            float out[V];
#pragma unroll
            for (int k = 0; k < V; ++k) {
                float d = LAYER ? v[c].get(k) - mean : v[c].get(k);
                out[k] = d * scale * weight.get(k) + (LAYER ? bias.get(k) : 0.0f);
            }
            row_store<S, V>(y + base + at, out);
        }
    }
}

template <typename S, bool LAYER, bool ADD>
__device__ void norm_looped(const typename S::T* x, const Layout& rows_at, i64 x_stride, const typename S::T* r,
                            const Layout& r_rows_at, i64 r_stride, const typename S::T* w, i64 w_stride,
                            const typename S::T* b, i64 b_stride, typename S::T* sum_out, typename S::T* y, i64 rows,
                            i64 n, float eps, int group) {
    __shared__ float scratch[32];
    int lane = threadIdx.x % group;
    i64 row = (i64)blockIdx.x * (blockDim.x / group) + threadIdx.x / group;
    bool active = row < rows;
    i64 base = active ? nbx_offset(rows_at, row) : 0;
    if (ADD) {
        // the rounded sums written first; the passes below read them back (each thread its own)
        if (active) {
            i64 r_base = nbx_offset(r_rows_at, row);
            for (i64 i = lane; i < n; i += group)
                sum_out[row * n + i] = S::store(S::load(x[base + i * x_stride]) + S::load(r[r_base + i * r_stride]));
        }
        x = sum_out;
        base = active ? row * n : 0;
        x_stride = 1;
    }
    float mean = 0.0f;
    if (LAYER) {
        float sum = 0.0f;
        if (active)
            for (i64 i = lane; i < n; i += group) sum += S::load(x[base + i * x_stride]);
        mean = norm_group_sum(sum, group, scratch) / (float)n;
    }
    float squares = 0.0f;
    if (active)
        for (i64 i = lane; i < n; i += group) {
            float d = S::load(x[base + i * x_stride]) - mean;
            squares += d * d;
        }
    float scale = 1.0f / sqrtf(norm_group_sum(squares, group, scratch) / (float)n + eps);
    if (active)
        for (i64 i = lane; i < n; i += group) {
            float value = (S::load(x[base + i * x_stride]) - mean) * scale * S::load(w[i * w_stride]);
            if (LAYER) value += S::load(b[i * b_stride]);
            y[row * n + i] = S::store(value);
        }
}

// One one-pass kernel: CH chunks a thread, of 16 bytes (VEC = _vec) or of one element.
// `early`: the previous op cannot have written w (recent.rs), so a held weight is loaded before
// the inputs are awaited.
#define NBX_NORM_ROWS(op, LAYER, ADD, dt, S, CH, VEC, BOUND)                                                  \
    extern "C" __global__ void BOUND norm_##op##_##dt##_##CH##VEC(const S::T* x, const S::T* r, const S::T* w, \
                                                                 const S::T* b, S::T* sum, S::T* y, i64 rows,  \
                                                                 i64 n, float eps, int group, int early) {     \
        NormWeight<S, NBX_CHUNK##VEC(S), CH> held;                                                            \
        if (early) held.load(w, n, group);                                                                     \
        nbx_await_inputs();                                                                                    \
        if (!early) held.load(w, n, group);                                                                    \
        norm_rows<S, NBX_CHUNK##VEC(S), CH, LAYER, ADD>(x, r, w, held, b, sum, y, rows, n, eps, group);        \
    }

// The kernels of an op and dtype: the one-pass kernels of 1 to 8 one-element chunks a thread
// and of 16-byte chunks up to 32 elements a thread (VECS: NBX_VECS_4 for 4 elements a chunk,
// 1 to 8 chunks; NBX_VECS_8 for 8 elements a chunk, 1 to 4), and the looped kernel.
#define NBX_NORM(op, LAYER, ADD, dt, S, VECS)                                                                 \
    NBX_NORM_ROWS(op, LAYER, ADD, dt, S, 1, , NBX_ROW_BOUND)                                                  \
    NBX_NORM_ROWS(op, LAYER, ADD, dt, S, 2, , NBX_ROW_BOUND)                                                  \
    NBX_NORM_ROWS(op, LAYER, ADD, dt, S, 4, , NBX_ROW_BOUND)                                                  \
    NBX_NORM_ROWS(op, LAYER, ADD, dt, S, 8, , NBX_ROW_BOUND)                                                  \
    VECS(NBX_NORM_ROWS, op, LAYER, ADD, dt, S)                                                                \
    extern "C" __global__ void norm_##op##_##dt##_looped(                                                     \
        const S::T* x, Layout rows_at, i64 x_stride, const S::T* r, Layout r_rows_at, i64 r_stride,           \
        const S::T* w, i64 w_stride, const S::T* b, i64 b_stride, S::T* sum, S::T* y, i64 rows, i64 n,        \
        float eps, int group) {                                                                               \
        nbx_await_inputs();                                                                                   \
        norm_looped<S, LAYER, ADD>(x, rows_at, x_stride, r, r_rows_at, r_stride, w, w_stride, b, b_stride,    \
                                   sum, y, rows, n, eps, group);                                              \
    }

#define NBX_VECS_4(M, op, LAYER, ADD, dt, S)                                                                  \
    M(op, LAYER, ADD, dt, S, 1, _vec, NBX_ROW_BOUND) M(op, LAYER, ADD, dt, S, 2, _vec, NBX_ROW_BOUND)         \
    M(op, LAYER, ADD, dt, S, 4, _vec, NBX_ROW_BOUND) M(op, LAYER, ADD, dt, S, 8, _vec, NBX_ROW_BOUND)
#define NBX_VECS_8(M, op, LAYER, ADD, dt, S)                                                                  \
    M(op, LAYER, ADD, dt, S, 1, _vec, NBX_ROW_BOUND) M(op, LAYER, ADD, dt, S, 2, _vec, NBX_ROW_BOUND)         \
    M(op, LAYER, ADD, dt, S, 4, _vec, NBX_ROW_BOUND_16BIT_4_##op)

// The register bound of the one-pass kernels: blocks of up to 512 threads; the 16-bit kernels
// of four 16-byte chunks a thread (rows of 4096) are held to what they fit without spilling
// (rms_norm 40 registers, layer_norm 48), so that 12 (10) blocks of 128 are in flight on a
// multiprocessor, not 8; the add_ ops hold the residual's chunk and the sum's address besides
// (add_rms_norm 48, add_layer_norm 56).
#define NBX_ROW_BOUND __launch_bounds__(512)
#define NBX_ROW_BOUND_16BIT_4_rms_norm __maxnreg__(40)
#define NBX_ROW_BOUND_16BIT_4_layer_norm __maxnreg__(48)
#define NBX_ROW_BOUND_16BIT_4_add_rms_norm __maxnreg__(48)
#define NBX_ROW_BOUND_16BIT_4_add_layer_norm __maxnreg__(56)

NBX_NORM(layer_norm, true, false, fp32, F32, NBX_VECS_4)
NBX_NORM(layer_norm, true, false, fp16, F16, NBX_VECS_8)
NBX_NORM(layer_norm, true, false, bf16, BF16, NBX_VECS_8)
NBX_NORM(rms_norm, false, false, fp32, F32, NBX_VECS_4)
NBX_NORM(rms_norm, false, false, fp16, F16, NBX_VECS_8)
NBX_NORM(rms_norm, false, false, bf16, BF16, NBX_VECS_8)
NBX_NORM(add_rms_norm, false, true, fp32, F32, NBX_VECS_4)
NBX_NORM(add_rms_norm, false, true, fp16, F16, NBX_VECS_8)
NBX_NORM(add_rms_norm, false, true, bf16, BF16, NBX_VECS_8)
NBX_NORM(add_layer_norm, true, true, fp32, F32, NBX_VECS_4)
NBX_NORM(add_layer_norm, true, true, fp16, F16, NBX_VECS_8)
NBX_NORM(add_layer_norm, true, true, bf16, BF16, NBX_VECS_8)
