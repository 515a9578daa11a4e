// Rotary position embedding, rope(x, cos, sin) (backend/cpu/rope.rs's semantics), on float32,
// float16 and bfloat16, computed in float32. x is [..., seq, head_dim], viewed as rows of
// head_dim at position row % seq; cos and sin are [seq, head_dim / 2], each with its own
// strides (c_row, c_col and s_row, s_col). Each pair (x1, x2) becomes (x1·c − x2·s, x2·c + x1·s):
//   half-split: pairs (i, i + head_dim/2);   interleaved: pairs (2i, 2i + 1).
// Each thread reads the elements it writes before writing them (the output may be x itself).
//
// Functions (grid-stride):
//   rope_<dt>[_interleaved]_vec(const T* x, const T* cos, i64 c_row, const T* sin, i64 s_row,
//                               T* y, i64 rows, i64 seq, i64 dim)
//     contiguous, 16-byte aligned x, y, cos and sin rows (c_col = s_col = 1), head_dim/2 (half-split)
//     or head_dim (interleaved) a multiple of V = 16 / sizeof(T): a thread rotates V pairs
//     (16-byte accesses) or V/2 pairs (16 bytes of x, 8 of cos and sin), two such units a step.
//   rope_<dt>[_interleaved](const T* x, Layout lx, const T* cos, i64 c_row, i64 c_col,
//                           const T* sin, i64 s_row, i64 s_col, T* y, i64 rows, i64 seq, i64 dim)
//     any layout of x: a thread per pair.

// q, r = a / b, a % b (in 32 bits where both fit: the index arithmetic of every element).
__device__ __forceinline__ void rope_divmod(i64 a, i64 b, i64& q, i64& r) {
    if (((unsigned long long)(a | b) >> 32) == 0) {
        unsigned int q32 = (unsigned int)a / (unsigned int)b;
        q = q32;
        r = a - (i64)q32 * b;
    } else {
        q = a / b;
        r = a - q * b;
    }
}

// N elements at p as loaded (16 bytes, or 8 when N is half of a 16-byte vector), read as
// float32 where used: the raw words take half the registers of a 16-bit unit's floats.
template <int BYTES> struct RopeWord;
template <> struct RopeWord<8> { typedef uint2 T; };
template <> struct RopeWord<16> { typedef uint4 T; };
template <typename S, int N>
struct RopeWords {
    typedef typename S::T T;
    typedef typename RopeWord<N * sizeof(T)>::T Word;
    union {
        Word word;
        T e[N];
    } raw;
    __device__ __forceinline__ void load(const T* p) { raw.word = *reinterpret_cast<const Word*>(p); }
    __device__ __forceinline__ float operator[](int k) const { return S::load(raw.e[k]); }
};
template <typename S, int V>
__device__ __forceinline__ void rope_store(typename S::T* p, const float* in) {
    union { uint4 raw; typename S::T e[V]; } u;
#pragma unroll
    for (int k = 0; k < V; ++k) u.e[k] = S::store(in[k]);
    __stwb(reinterpret_cast<uint4*>(p), u.raw);  // one 16-byte store (a plain one may be split)
}

// Each thread takes ROPE_UNROLL units a step, a grid stride apart (every access of a warp
// stays adjacent), all loaded before any is computed: more bytes in flight a thread.
#define ROPE_UNROLL 2

template <typename S>
__device__ void rope_half_vec(const typename S::T* x, const typename S::T* cos, i64 c_row, const typename S::T* sin,
                              i64 s_row, typename S::T* y, i64 rows, i64 seq, i64 dim) {
    const int V = 16 / sizeof(typename S::T);
    i64 half = dim / 2, per_row = half / V, units = rows * per_row;
    i64 stride = (i64)gridDim.x * blockDim.x;
    for (i64 first = (i64)blockIdx.x * blockDim.x + threadIdx.x; first < units; first += ROPE_UNROLL * stride) {
        RopeWords<S, V> a[ROPE_UNROLL], b[ROPE_UNROLL], c[ROPE_UNROLL], s[ROPE_UNROLL];
        i64 at[ROPE_UNROLL];
#pragma unroll
        for (int u = 0; u < ROPE_UNROLL; ++u) {
            i64 t = first + u * stride;
            if (t >= units) break;
            i64 row, i, lap, pos;
            rope_divmod(t, per_row, row, i);
            rope_divmod(row, seq, lap, pos);
            i *= V;
            at[u] = row * dim + i;
            a[u].load(x + at[u]);
            b[u].load(x + at[u] + half);
            c[u].load(cos + pos * c_row + i);
            s[u].load(sin + pos * s_row + i);
        }
#pragma unroll
        for (int u = 0; u < ROPE_UNROLL; ++u) {
            if (first + u * stride >= units) break;
            float first_half[V], second_half[V];
#pragma unroll
            for (int k = 0; k < V; ++k) {
                float x1 = a[u][k], x2 = b[u][k];
                first_half[k] = x1 * c[u][k] - x2 * s[u][k];
                second_half[k] = x2 * c[u][k] + x1 * s[u][k];
            }
            rope_store<S, V>(y + at[u], first_half);
            rope_store<S, V>(y + at[u] + half, second_half);
        }
    }
}

template <typename S>
__device__ void rope_interleaved_vec(const typename S::T* x, const typename S::T* cos, i64 c_row,
                                     const typename S::T* sin, i64 s_row, typename S::T* y, i64 rows, i64 seq, i64 dim) {
    const int V = 16 / sizeof(typename S::T);
    i64 per_row = dim / V, units = rows * per_row;
    i64 stride = (i64)gridDim.x * blockDim.x;
    for (i64 first = (i64)blockIdx.x * blockDim.x + threadIdx.x; first < units; first += ROPE_UNROLL * stride) {
        RopeWords<S, V> v[ROPE_UNROLL];
        RopeWords<S, V / 2> c[ROPE_UNROLL], s[ROPE_UNROLL];
        i64 at[ROPE_UNROLL];
#pragma unroll
        for (int u = 0; u < ROPE_UNROLL; ++u) {
            i64 t = first + u * stride;
            if (t >= units) break;
            i64 row, j, lap, pos;
            rope_divmod(t, per_row, row, j);
            rope_divmod(row, seq, lap, pos);
            j *= V;
            at[u] = row * dim + j;
            v[u].load(x + at[u]);
            c[u].load(cos + pos * c_row + j / 2);
            s[u].load(sin + pos * s_row + j / 2);
        }
#pragma unroll
        for (int u = 0; u < ROPE_UNROLL; ++u) {
            if (first + u * stride >= units) break;
            float out[V];
#pragma unroll
            for (int k = 0; k < V / 2; ++k) {
                float x1 = v[u][2 * k], x2 = v[u][2 * k + 1];
                out[2 * k] = x1 * c[u][k] - x2 * s[u][k];
                out[2 * k + 1] = x2 * c[u][k] + x1 * s[u][k];
            }
            rope_store<S, V>(y + at[u], out);
        }
    }
}

template <typename S, bool INTERLEAVED>
__device__ void rope_strided(const typename S::T* x, const Layout& lx, const typename S::T* cos, i64 c_row,
                             i64 c_col, const typename S::T* sin, i64 s_row, i64 s_col, typename S::T* y, i64 rows, i64 seq,
                             i64 dim) {
    i64 half = dim / 2, units = rows * half;
    i64 stride = (i64)gridDim.x * blockDim.x;
    for (i64 t = (i64)blockIdx.x * blockDim.x + threadIdx.x; t < units; t += stride) {
        i64 row, i, lap, pos;
        rope_divmod(t, half, row, i);
        rope_divmod(row, seq, lap, pos);
        i64 ia = row * dim + (INTERLEAVED ? 2 * i : i), ib = row * dim + (INTERLEAVED ? 2 * i + 1 : i + half);
        float x1 = S::load(x[nbx_offset(lx, ia)]), x2 = S::load(x[nbx_offset(lx, ib)]);
        float c = S::load(cos[pos * c_row + i * c_col]), s = S::load(sin[pos * s_row + i * s_col]);
        y[ia] = S::store(x1 * c - x2 * s);
        y[ib] = S::store(x2 * c + x1 * s);
    }
}

#define NBX_ROPE(dt, S)                                                                                       \
    extern "C" __global__ void rope_##dt##_vec(const S::T* x, const S::T* cos, i64 c_row, const S::T* sin,    \
                                               i64 s_row, S::T* y, i64 rows, i64 seq, i64 dim) {              \
        nbx_await_inputs();                                                                                   \
        rope_half_vec<S>(x, cos, c_row, sin, s_row, y, rows, seq, dim);                                       \
    }                                                                                                         \
    extern "C" __global__ void rope_##dt##_interleaved_vec(const S::T* x, const S::T* cos, i64 c_row,         \
                                                           const S::T* sin, i64 s_row, S::T* y, i64 rows,     \
                                                           i64 seq, i64 dim) {                                \
        nbx_await_inputs();                                                                                   \
        rope_interleaved_vec<S>(x, cos, c_row, sin, s_row, y, rows, seq, dim);                                \
    }                                                                                                         \
    extern "C" __global__ void rope_##dt(const S::T* x, Layout lx, const S::T* cos, i64 c_row, i64 c_col,     \
                                         const S::T* sin, i64 s_row, i64 s_col, S::T* y, i64 rows, i64 seq,  \
                                         i64 dim) {                                                           \
        nbx_await_inputs();                                                                                   \
        rope_strided<S, false>(x, lx, cos, c_row, c_col, sin, s_row, s_col, y, rows, seq, dim);               \
    }                                                                                                         \
    extern "C" __global__ void rope_##dt##_interleaved(const S::T* x, Layout lx, const S::T* cos, i64 c_row,  \
                                                       i64 c_col, const S::T* sin, i64 s_row, i64 s_col,      \
                                                       S::T* y, i64 rows, i64 seq, i64 dim) {                 \
        nbx_await_inputs();                                                                                   \
        rope_strided<S, true>(x, lx, cos, c_row, c_col, sin, s_row, s_col, y, rows, seq, dim);                \
    }

NBX_ROPE(fp32, F32)
NBX_ROPE(fp16, F16)
NBX_ROPE(bf16, BF16)
