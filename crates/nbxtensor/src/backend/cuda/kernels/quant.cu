// matmul_int4(x, packed, scales, minima) (backend/cpu/quant.rs's semantics): x [M, K] (float32,
// float16 or bfloat16) times Wᵀ, W [N, K] stored as unsigned BITS-bit codes, low bits first in
// each byte, with a float16 scale and minimum per group of `group` consecutive codes of a row
// (w = code·scale + minimum); out [M, N] of x's dtype, accumulated in float32. The layout's
// facts (bits, group) come from the dtype table: BITS picks the function, `group` is a
// parameter. Every sum runs in a fixed order: results never depend on timing.
//
// Functions:
//   quant_gemv_b<BITS>_<dt>_r<ROWS>(const T* x, i64 m, i64 k, const uchar* packed,
//                           const half* scales, i64 sc_row, i64 sc_col, const half* minima,
//                           i64 mn_row, i64 mn_col, i64 n, int group, T* out)
//     few rows: weights dequantized in registers. A warp computes 4 output columns for up to
//     ROWS (1 or 8) rows (blockIdx.y picks the rows); each lane takes 16 bytes of codes of
//     each column at a time (128 / BITS codes, within one group: group a multiple of them)
//     and folds scale·Σ x·code + minimum·Σ x. x contiguous with 16-byte aligned rows; packed contiguous
//     with 16-byte aligned rows.
//   quant_gemm_b<BITS>_<dt>(const T* x, Layout x_rows, i64 x_col, i64 m, i64 k,
//                           const uchar* packed, i64 p_row, i64 p_col, const half* scales,
//                           i64 sc_row, i64 sc_col, const half* minima, i64 mn_row, i64 mn_col,
//                           i64 n, int group, T* out)
//     any rows and layouts: 64 × 64 output tiles; each step dequantizes a 32 × 64 tile of W
//     and stages 64 × 32 of x in shared memory, each thread computing 4 × 4 outputs.

typedef unsigned char uchar;

#define NBX_FULL 0xffffffffu
#define NBX_GEMV_COLS 4
#define NBX_TILE 64
#define NBX_STEP 32

// Byte `i` of `v` (a code below 256) as float32 without a conversion instruction: the byte
// placed under the exponent of 2^23 by one byte permutation, less 2^23.
__device__ __forceinline__ float quant_code(unsigned int v, int i) {
    return __uint_as_float(__byte_perm(v, 0x4B000000u, 0x7440u | (unsigned int)i)) - 8388608.0f;
}

// 8 elements of x at p (16-byte aligned) as float32.
template <typename S>
__device__ __forceinline__ void quant_load8(const typename S::T* p, float* out) {
    if constexpr (sizeof(typename S::T) == 4) {
        float4 a = reinterpret_cast<const float4*>(p)[0], b = reinterpret_cast<const float4*>(p)[1];
        out[0] = a.x; out[1] = a.y; out[2] = a.z; out[3] = a.w;
        out[4] = b.x; out[5] = b.y; out[6] = b.z; out[7] = b.w;
    } else {
        union { uint4 raw; typename S::T e[8]; } u;
        u.raw = *reinterpret_cast<const uint4*>(p);
#pragma unroll
        for (int e = 0; e < 8; ++e) out[e] = S::load(u.e[e]);
    }
}

__device__ __forceinline__ float quant_half(const unsigned short* p) { return nbx_f16_to_f32(*p); }

template <typename S, int BITS, int ROWS>
__device__ void quant_gemv(const typename S::T* x, i64 m, i64 k, const uchar* packed, const unsigned short* scales,
                           i64 sc_row, i64 sc_col, const unsigned short* minima, i64 mn_row, i64 mn_col, i64 n,
                           int group, typename S::T* out) {
    static_assert(BITS == 4, "the register path decodes 4-bit codes, two to a byte");
    const int CODES = 128 / BITS;  // codes in 16 bytes
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    i64 col0 = ((i64)blockIdx.x * (blockDim.x / 32) + warp) * NBX_GEMV_COLS;
    i64 row0 = (i64)blockIdx.y * ROWS;
    i64 row_bytes = k * BITS / 8;
    float acc[ROWS][NBX_GEMV_COLS];
#pragma unroll
    for (int r = 0; r < ROWS; ++r)
#pragma unroll
        for (int c = 0; c < NBX_GEMV_COLS; ++c) acc[r][c] = 0.0f;

    for (i64 chunk = lane; chunk * CODES < k; chunk += 32) {
        i64 k0 = chunk * CODES, g = k0 / group;
        uint4 codes[NBX_GEMV_COLS];
        float scale[NBX_GEMV_COLS], minimum[NBX_GEMV_COLS];
#pragma unroll
        for (int c = 0; c < NBX_GEMV_COLS; ++c) {
            i64 col = col0 + c < n ? col0 + c : n - 1;  // a column past the end repeats the last, unwritten
            codes[c] = reinterpret_cast<const uint4*>(packed + col * row_bytes)[chunk];
            scale[c] = quant_half(scales + col * sc_row + g * sc_col);
            minimum[c] = quant_half(minima + col * mn_row + g * mn_col);
        }
        float dot[ROWS][NBX_GEMV_COLS], xsum[ROWS];
#pragma unroll
        for (int r = 0; r < ROWS; ++r) {
            xsum[r] = 0.0f;
#pragma unroll
            for (int c = 0; c < NBX_GEMV_COLS; ++c) dot[r][c] = 0.0f;
        }
#pragma unroll
        for (int piece = 0; piece < CODES / 8; ++piece) {
            // the 8 codes of each column's word `piece`: low nibbles are the even elements
            float w[NBX_GEMV_COLS][8];
#pragma unroll
            for (int c = 0; c < NBX_GEMV_COLS; ++c) {
                unsigned int word = reinterpret_cast<const unsigned int*>(&codes[c])[piece];
                unsigned int low = word & 0x0F0F0F0Fu, high = (word >> 4) & 0x0F0F0F0Fu;
#pragma unroll
                for (int i = 0; i < 4; ++i) {
                    w[c][2 * i] = quant_code(low, i);
                    w[c][2 * i + 1] = quant_code(high, i);
                }
            }
#pragma unroll
            for (int r = 0; r < ROWS; ++r) {
                if (row0 + r < m) {
                    float xv[8];
                    quant_load8<S>(x + (row0 + r) * k + k0 + piece * 8, xv);
#pragma unroll
                    for (int e = 0; e < 8; ++e) {
                        xsum[r] += xv[e];
#pragma unroll
                        for (int c = 0; c < NBX_GEMV_COLS; ++c) dot[r][c] += xv[e] * w[c][e];
                    }
                }
            }
        }
#pragma unroll
        for (int r = 0; r < ROWS; ++r)
#pragma unroll
            for (int c = 0; c < NBX_GEMV_COLS; ++c) acc[r][c] += scale[c] * dot[r][c] + minimum[c] * xsum[r];
    }
#pragma unroll
    for (int r = 0; r < ROWS; ++r)
#pragma unroll
        for (int c = 0; c < NBX_GEMV_COLS; ++c) {
            float v = acc[r][c];
#pragma unroll
            for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(NBX_FULL, v, o);
            if (lane == 0 && row0 + r < m && col0 + c < n) out[(row0 + r) * n + col0 + c] = S::store(v);
        }
}

template <typename S, int BITS>
__device__ void quant_gemm(const typename S::T* x, const Layout& x_rows, i64 x_col, i64 m, i64 k, const uchar* packed,
                           i64 p_row, i64 p_col, const unsigned short* scales, i64 sc_row, i64 sc_col,
                           const unsigned short* minima, i64 mn_row, i64 mn_col, i64 n, int group,
                           typename S::T* out) {
    const int PER_BYTE = 8 / BITS;
    const unsigned int MASK = (1u << BITS) - 1u;
    __shared__ __align__(16) float Xs[NBX_STEP][NBX_TILE];
    __shared__ __align__(16) float Ws[NBX_STEP][NBX_TILE];
    int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
    i64 row0 = (i64)blockIdx.y * NBX_TILE, col0 = (i64)blockIdx.x * NBX_TILE;
    // each thread stages 8 values of x and 8 of W per step: one row (or column), 8 consecutive k
    int stage_line = tid / 4, stage_k = (tid % 4) * 8;
    i64 x_row = row0 + stage_line, w_col = col0 + stage_line;
    i64 x_base = x_row < m ? nbx_offset(x_rows, x_row) : 0;
    float acc[4][4] = {};
    for (i64 k0 = 0; k0 < k; k0 += NBX_STEP) {
#pragma unroll
        for (int e = 0; e < 8; ++e) {
            i64 kk = k0 + stage_k + e;
            Xs[stage_k + e][stage_line] = x_row < m && kk < k ? S::load(x[x_base + kk * x_col]) : 0.0f;
            float w = 0.0f;
            if (w_col < n && kk < k) {
                unsigned int byte = packed[w_col * p_row + (kk / PER_BYTE) * p_col];
                unsigned int code = (byte >> ((kk % PER_BYTE) * BITS)) & MASK;
                i64 g = kk / group;
                w = (float)code * quant_half(scales + w_col * sc_row + g * sc_col) +
                    quant_half(minima + w_col * mn_row + g * mn_col);
            }
            Ws[stage_k + e][stage_line] = w;
        }
        __syncthreads();
#pragma unroll 8
        for (int kk = 0; kk < NBX_STEP; ++kk) {
            float4 a = *reinterpret_cast<const float4*>(&Xs[kk][ty * 4]);
            float4 b = *reinterpret_cast<const float4*>(&Ws[kk][tx * 4]);
            float av[4] = {a.x, a.y, a.z, a.w}, bv[4] = {b.x, b.y, b.z, b.w};
#pragma unroll
            for (int i = 0; i < 4; ++i)
#pragma unroll
                for (int j = 0; j < 4; ++j) acc[i][j] += av[i] * bv[j];
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            i64 r = row0 + ty * 4 + i, c = col0 + tx * 4 + j;
            if (r < m && c < n) out[r * n + c] = S::store(acc[i][j]);
        }
}

#define NBX_QUANT_GEMV(bits, dt, S, rows)                                                                          \
    extern "C" __global__ void __launch_bounds__(128) quant_gemv_b##bits##_##dt##_r##rows(                         \
        const S::T* x, i64 m, i64 k, const uchar* packed, const unsigned short* scales, i64 sc_row, i64 sc_col,    \
        const unsigned short* minima, i64 mn_row, i64 mn_col, i64 n, int group, S::T* out) {                       \
        nbx_await_inputs();                                                                                        \
        quant_gemv<S, bits, rows>(x, m, k, packed, scales, sc_row, sc_col, minima, mn_row, mn_col, n, group, out); \
    }

#define NBX_QUANT(bits, dt, S)                                                                                     \
    NBX_QUANT_GEMV(bits, dt, S, 1)                                                                                 \
    NBX_QUANT_GEMV(bits, dt, S, 8)                                                                                 \
    extern "C" __global__ void __launch_bounds__(256)                                                              \
        quant_gemm_b##bits##_##dt(const S::T* x, Layout x_rows, i64 x_col, i64 m, i64 k, const uchar* packed,      \
                                  i64 p_row, i64 p_col, const unsigned short* scales, i64 sc_row, i64 sc_col,      \
                                  const unsigned short* minima, i64 mn_row, i64 mn_col, i64 n, int group,          \
                                  S::T* out) {                                                                     \
        nbx_await_inputs();                                                                                        \
        quant_gemm<S, bits>(x, x_rows, x_col, m, k, packed, p_row, p_col, scales, sc_row, sc_col, minima, mn_row,  \
                            mn_col, n, group, out);                                                                \
    }

NBX_QUANT(4, fp32, F32)
NBX_QUANT(4, fp16, F16)
NBX_QUANT(4, bf16, BF16)
