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
//   quant_mma_<dt>_m<MT>_w<WARPS>_d<DEPTH>(const T* x, i64 m, i64 k, const uchar* packed,
//                         const half* scales, i64 sc_row, i64 sc_col, const half* minima, i64 mn_row,
//                         i64 mn_col, i64 n, int group, T* out, int early)
//     float16 and bfloat16 x, 4-bit codes, any rows, on the tensor cores (mma.sync m16n8k16):
//     a block computes 16·MT rows × 32 columns; its WARPS warps split the depth in spans of 128
//     (a span lies in one group: group a multiple of 128), a lane streaming 16 bytes of codes
//     of each of its 4 columns a span, with their scales and minima, the next DEPTH spans' in
//     flight. Codes stay under the exponent of 128 (bfloat16) or 1024 (float16), one logic op
//     a pair of them, and the tensor cores sum x·(base + code) and Σx; a span adds
//     scale·Σ x·(base + code) + (minimum − base·scale)·Σ x. The depth inside a span is
//     permuted alike for x and the codes, so a lane's 16 bytes feed its own fragments. The
//     warps' sums meet in shared memory in a fixed order. x contiguous with 16-byte aligned
//     rows, packed contiguous and 16-byte aligned. `early`: the previous op
//     cannot have written the codes, so the first span's are read before the inputs are awaited.
//   quant_few_<dt>_r<ROWS>_w<WARPS>(the arguments of quant_mma)
//     float16 and bfloat16 x, 4-bit codes, up to 16 rows, on the tensor cores with the roles
//     turned: the codes are A (16 output columns a product), ROWS (8 or 16) rows of x are B (8
//     a product), so no product is spent on rows x does not have and a lane's scales and minima
//     are those of the columns whose codes it reads. A block: 32 columns × ROWS rows, WARPS
//     warps splitting the depth in spans of 128 as quant_mma's do, the next span's codes (and
//     at 8 rows its x) in flight. The codes stay under the exponent of 128 or 1024 (one logic op
//     a pair of them, no subtraction): that base times Σ x leaves with the minimum. Scale and
//     minimum offsets in 32 bits (the launch checks).
//   quant_wg_<dt>_s<STAGES>(the arguments of quant_mma up to out, float* partials, int early,
//                           TmaMap x_map, TmaMap code_map)
//     float16 and bfloat16 x, 4-bit codes, Hopper only (compiled for sm_90a, absent elsewhere):
//     the product on warpgroup tensor-core instructions (wgmma). A block computes 64 rows × 128
//     columns over the depth spans of its part, blockIdx.z of gridDim.z: one part writes out,
//     more write their float32 sums to partials ([parts][tiles][64][128], tiles in the grid's
//     y-major order), which quant_wg_fold adds. The blocks are independent (no clusters), so
//     any part count fills the multiprocessors a block each.
//     A fifth warp loads: per span of 128, x's 64 × 128 (two boxes of x_map: x [m, k] as 16-bit
//     elements, 64 × 64 boxes, 128-byte swizzle) and the codes' 128 × 64 bytes (a box of
//     code_map: packed [n, k / 2] bytes, 128 × 64 boxes, 64-byte swizzle) by the tensor memory
//     accelerator into a ring of STAGES (rows past x's and columns past W's arrive as zeros),
//     counted on the slot's barrier, and the scales and minima STAGES − 2 spans behind through
//     registers (the steps unrolled STAGES − 2 at a time, so that a load is read only when it is
//     that old). The warpgroup turns each column's codes into 16-bit (base + code) values of the
//     B operand, whose 8 extra rows of ones give Σx, and runs 8 asynchronous m64n136k16 products
//     a span (the next span's codes converted meanwhile), then folds scale·Σ x·(base + code) +
//     (minimum − base·scale)·Σ x. `early`: the first spans' codes are prefetched into L2 before
//     the inputs are awaited. Needs WG_SHARED(STAGES) bytes of dynamic shared memory (checked),
//     x contiguous with 16-byte aligned rows, packed contiguous (quant.rs encodes both maps).
//   quant_wg_fold_<dt>(const float* partials, int parts, i64 m, i64 n, T* out)
//     out = quant_wg's parts' sums (parts ≤ WG_MAX_PARTS, 8) added in part order (the same bits
//     whatever ran first), 4 columns of a tile's row a thread, its parts' loads all in flight.
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

// The base the tensor-core paths put 4-bit codes under: a pair (v & 0x000F000F) | BITS is the
// pair (VALUE + code, VALUE + code'), exact in S's 16-bit type.
template <typename S>
struct QuantBase;
template <>
struct QuantBase<BF16> {
    static constexpr unsigned int BITS = 0x43004300u;  // the pair (128, 128)
    static constexpr float VALUE = 128.0f;
};
template <>
struct QuantBase<F16> {
    static constexpr unsigned int BITS = 0x64006400u;  // the pair (1024, 1024)
    static constexpr float VALUE = 1024.0f;
};

// (v & mask) | base in one instruction (the compiler splits it in two when both are constants).
__device__ __forceinline__ unsigned int quant_and_or(unsigned int v, unsigned int mask, unsigned int base) {
    unsigned int r;
    asm("lop3.b32 %0, %1, %2, %3, 0xEA;" : "=r"(r) : "r"(v), "r"(mask), "r"(base));
    return r;
}

// One float16 value (bits) as float32 (scales and minima: a NaN stays a NaN, payload aside).
__device__ __forceinline__ float quant_f16_bits(unsigned int bits) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"((unsigned short)bits));
    return f;
}

// A column's scale and minimum (float16 bits, the minimum in the high half) as the float32 scale
// and the shift that takes the base off with the minimum: minimum − base·scale.
template <typename S>
__device__ __forceinline__ void quant_affine(unsigned int affine, float& scale, float& shift) {
    scale = quant_f16_bits(affine & 0xffffu);
    shift = quant_f16_bits(affine >> 16) - QuantBase<S>::VALUE * scale;
}

// The tensor-core path. Its span: 4 lanes × 32 codes, the depth of one pass.
#define NBX_MMA_SPAN 128
#define NBX_MMA_TILES 4  // output tiles of 8 columns a warp (32 columns a block)

// One 16-bit value read through the read-only path.
__device__ __forceinline__ unsigned int quant_load_u16(const unsigned short* p) {
    unsigned short v;
    asm volatile("ld.global.nc.u16 %0, [%1];" : "=h"(v) : "l"(p));
    return v;
}

// A warp's stream of weights, DEPTH spans in flight: of each span, 16 bytes of codes of each of
// its block's NBX_MMA_TILES · 8 columns a lane (lane t of group g: column 8j + g, the span's
// chunk t), and the scale and minimum (float16 bits, minimum in the high half) of its columns
// 8j + 2t and 8j + 2t + 1 in the fragment layout of the outputs. Slot d holds the span the
// warp takes d steps from now.
template <int DEPTH>
struct QuantWeightStream {
    const uint4* rows[NBX_MMA_TILES];
    const unsigned short *scales, *minima;
    i64 sc_row, sc_col, mn_row, mn_col, spans, col0, n;
    int group;
    uint4 codes[DEPTH][NBX_MMA_TILES];
    unsigned int affine[DEPTH][NBX_MMA_TILES][2];

    __device__ __forceinline__ QuantWeightStream(const uchar* packed, i64 k, i64 n_, const unsigned short* scales_,
                                                 i64 sc_row_, i64 sc_col_, const unsigned short* minima_,
                                                 i64 mn_row_, i64 mn_col_, int group_)
        : scales(scales_), minima(minima_), sc_row(sc_row_), sc_col(sc_col_), mn_row(mn_row_), mn_col(mn_col_),
          spans(k / NBX_MMA_SPAN), col0((i64)blockIdx.x * (NBX_MMA_TILES * 8)), n(n_), group(group_) {
        int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
#pragma unroll
        for (int j = 0; j < NBX_MMA_TILES; ++j) {
            i64 col = col0 + 8 * j + g < n ? col0 + 8 * j + g : n - 1;  // past the end: the last, unwritten
            rows[j] = reinterpret_cast<const uint4*>(packed + col * (k / 2)) + t;
        }
    }
    // Loads the weights of `span` into slot d (nothing past the last span).
    __device__ __forceinline__ void fetch(int d, i64 span) {
        if (span >= spans) return;
        int t = threadIdx.x % 4;
        i64 grp = span * NBX_MMA_SPAN / group;
#pragma unroll
        for (int j = 0; j < NBX_MMA_TILES; ++j) {
            codes[d][j] = stream_load(rows[j] + span * 4);
#pragma unroll
            for (int e = 0; e < 2; ++e) {
                i64 col = col0 + 8 * j + 2 * t + e < n ? col0 + 8 * j + 2 * t + e : n - 1;
                affine[d][j][e] = quant_load_u16(scales + col * sc_row + grp * sc_col) |
                                  quant_load_u16(minima + col * mn_row + grp * mn_col) << 16;
            }
        }
    }
};

// In the fragment layout of tensor_cores.cuh, step 2q + h of a span gives slot 2t (+1) the
// lane's chunk element 8q + 2h (+4) and slot 2t+8 (+9) element 8q + 2h + 1 (+5): the nibbles
// (v >> 8h) and (v >> 8h + 4) of the codes' word q, and the pairs of x built by one byte
// permutation each. A warp takes the spans warp, warp + WARPS, …; their sums meet in shared
// memory, at most 4 warps' at a time, in a fixed order.
template <typename S, int MT, int WARPS, int DEPTH>
__device__ void quant_mma(const typename S::T* x, i64 m, i64 k, QuantWeightStream<DEPTH>& stream, i64 n,
                          typename S::T* out) {
    const int NT = NBX_MMA_TILES;
    const int SLOTS = WARPS < 4 ? WARPS : 4;            // warps' partial sums in shared memory at once
    const int ITEMS = MT * NT * 4 / WARPS;              // output values a thread sums
    static_assert(ITEMS * WARPS == MT * NT * 4, "the block's outputs split evenly over its threads");
    __shared__ float partial[SLOTS][MT * NT * 4][32];
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
    i64 col0 = (i64)blockIdx.x * (NT * 8), row0 = (i64)blockIdx.y * (MT * 16);
    const i64 spans = stream.spans;

    float acc[MT][NT][4];
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int j = 0; j < NT; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;

    for (i64 first = warp; first < spans; first += WARPS * DEPTH) {
#pragma unroll
        for (int d = 0; d < DEPTH; ++d) {
            const i64 span = first + d * WARPS;
            if (span >= spans) break;
            uint4 codes[NT];
            float scale[NT][2], shift[NT][2];
#pragma unroll
            for (int j = 0; j < NT; ++j) {
                codes[j] = stream.codes[d][j];
#pragma unroll
                for (int e = 0; e < 2; ++e) quant_affine<S>(stream.affine[d][j][e], scale[j][e], shift[j][e]);
            }
            stream.fetch(d, span + WARPS * DEPTH);
            // B of step 2q + h: the nibbles (v >> 8h) and (v >> 8h + 4) of the codes' word q,
            // converted once a span for all the row tiles
            unsigned int b[NT][8][2];
#pragma unroll
            for (int j = 0; j < NT; ++j)
#pragma unroll
                for (int q = 0; q < 4; ++q)
#pragma unroll
                    for (int h = 0; h < 2; ++h)
#pragma unroll
                        for (int half = 0; half < 2; ++half)
                            b[j][2 * q + h][half] =
                                quant_and_or(word_of(codes[j], q) >> (8 * h + 4 * half), 0x000F000Fu, QuantBase<S>::BITS);
#pragma unroll
            for (int i = 0; i < MT; ++i) {
                if (row0 + 16 * i >= m) break;
                // rows past x's last read the last (their sums are never stored)
                i64 r_low = min(row0 + 16 * i + g, m - 1), r_high = min(row0 + 16 * i + g + 8, m - 1);
                uint4 xl[4], xh[4];
                const uint4* pl = reinterpret_cast<const uint4*>(x + r_low * k + span * NBX_MMA_SPAN + t * 32);
                const uint4* ph = reinterpret_cast<const uint4*>(x + r_high * k + span * NBX_MMA_SPAN + t * 32);
#pragma unroll
                for (int q = 0; q < 4; ++q) {
                    xl[q] = pl[q];
                    xh[q] = ph[q];
                }
                float dot[NT][4], xsum[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
                for (int j = 0; j < NT; ++j)
#pragma unroll
                    for (int e = 0; e < 4; ++e) dot[j][e] = 0.0f;
#pragma unroll
                for (int q = 0; q < 4; ++q)
#pragma unroll
                    for (int h = 0; h < 2; ++h) {
                        unsigned int lo_l = word_of(xl[q], h), hi_l = word_of(xl[q], h + 2);
                        unsigned int lo_h = word_of(xh[q], h), hi_h = word_of(xh[q], h + 2);
                        unsigned int a[4] = {__byte_perm(lo_l, hi_l, 0x5410), __byte_perm(lo_h, hi_h, 0x5410),
                                             __byte_perm(lo_l, hi_l, 0x7632), __byte_perm(lo_h, hi_h, 0x7632)};
#pragma unroll
                        for (int j = 0; j < NT; ++j) Mma<S>::mma(dot[j], a, b[j][2 * q + h][0], b[j][2 * q + h][1]);
                        Mma<S>::mma(xsum, a, Mma<S>::ONES, Mma<S>::ONES);
                    }
#pragma unroll
                for (int j = 0; j < NT; ++j)
#pragma unroll
                    for (int e = 0; e < 4; ++e)
                        acc[i][j][e] = fmaf(scale[j][e & 1], dot[j][e], fmaf(shift[j][e & 1], xsum[e], acc[i][j][e]));
            }
        }
    }
    // the warps' sums, SLOTS warps at a time, each thread adding ITEMS outputs in warp order
    float total[ITEMS];
#pragma unroll
    for (int s = 0; s < ITEMS; ++s) total[s] = 0.0f;
#pragma unroll
    for (int base = 0; base < WARPS; base += SLOTS) {
        if (warp >= base && warp < base + SLOTS) {
#pragma unroll
            for (int i = 0; i < MT; ++i)
#pragma unroll
                for (int j = 0; j < NT; ++j)
#pragma unroll
                    for (int e = 0; e < 4; ++e) partial[warp - base][(i * NT + j) * 4 + e][lane] = acc[i][j][e];
        }
        __syncthreads();
#pragma unroll
        for (int s = 0; s < ITEMS; ++s) {
            int slot = threadIdx.x + s * WARPS * 32, idx = slot / 32, from = slot % 32;
#pragma unroll
            for (int w = 0; w < SLOTS; ++w) total[s] += partial[w][idx][from];
        }
        __syncthreads();
    }
#pragma unroll
    for (int s = 0; s < ITEMS; ++s) {
        int slot = threadIdx.x + s * WARPS * 32, idx = slot / 32, from = slot % 32;
        int i = idx / (NT * 4), j = (idx / 4) % NT, e = idx % 4;
        i64 row = row0 + 16 * i + from / 4 + (e >= 2 ? 8 : 0);
        i64 col = col0 + 8 * j + 2 * (from % 4) + (e & 1);
        if (row < m && col < n) out[row * n + col] = S::store(total[s]);
    }
}

// The few-rows tensor-core path: the codes are the A operand (16 output columns × 16 depth a
// product, twice B's 8 × 16), x the B operand (8 rows a product), so a block of up to 8 or 16
// rows wastes no product on rows it does not have. A lane's four 16-byte chunks of codes are its
// A rows' (columns 8i + g of the block, i = 0…3: tile i / 2, row g + 8·(i % 2)), and their scale
// and minimum are the lane's own output columns' too (C's rows are A's), so a lane reads one
// scale and one minimum a column and span. The codes sit under the exponent of 128 (bfloat16)
// or 1024 (float16), that base left in the sum (Σ x·(base + code) = Σ x·code + base·Σ x) and
// taken off with the minimum: scale·Σ x·(base + code) + (minimum − base·scale)·Σ x.

// A warp's stream for the few-rows path: of each span, lane (g, t)'s chunk t of the codes of
// the block's columns 8i + g, with their scales and minima (float16 bits, minimum high): the
// span the warp takes next.
template <int TILES>
struct QuantColumnStream {
    const uint4* rows[2 * TILES];
    const unsigned short *scales, *minima;
    unsigned int sc_at[2 * TILES], mn_at[2 * TILES];  // the columns' first scale and minimum (under 2^31)
    unsigned int sc_col, mn_col;
    i64 spans;
    int group;
    uint4 codes[2 * TILES];
    unsigned int affine[2 * TILES];

    __device__ __forceinline__ QuantColumnStream(const uchar* packed, i64 k, i64 n, const unsigned short* scales_,
                                                 i64 sc_row, i64 sc_col_, const unsigned short* minima_, i64 mn_row,
                                                 i64 mn_col_, int group_)
        : scales(scales_), minima(minima_), sc_col((unsigned int)sc_col_), mn_col((unsigned int)mn_col_),
          spans(k / NBX_MMA_SPAN), group(group_) {
        int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
        i64 col0 = (i64)blockIdx.x * (16 * TILES);
#pragma unroll
        for (int i = 0; i < 2 * TILES; ++i) {
            i64 col = col0 + 8 * i + g < n ? col0 + 8 * i + g : n - 1;  // past the end: the last, unwritten
            rows[i] = reinterpret_cast<const uint4*>(packed + col * (k / 2)) + t;
            sc_at[i] = (unsigned int)(col * sc_row);
            mn_at[i] = (unsigned int)(col * mn_row);
        }
    }
    // Loads the weights of `span` (nothing past the last span).
    __device__ __forceinline__ void fetch(i64 span) {
        if (span >= spans) return;
        unsigned int grp = group == NBX_MMA_SPAN ? (unsigned int)span : (unsigned int)(span * NBX_MMA_SPAN / group);
        unsigned int sc = grp * sc_col, mn = grp * mn_col;
#pragma unroll
        for (int i = 0; i < 2 * TILES; ++i) {
            codes[i] = stream_load(rows[i] + span * 4);
            affine[i] = quant_load_u16(scales + (sc_at[i] + sc)) | quant_load_u16(minima + (mn_at[i] + mn)) << 16;
        }
    }
};

// The block's 32 columns × ROWS rows (blockIdx.y picks them), its WARPS warps taking the spans
// warp, warp + WARPS, … (the next one's codes in flight); a span's step 2q + h gives A's slots
// 2t (+1) the chunk's elements 8q + 2h (+4) and slots 2t + 8 (+9) elements 8q + 2h + 1 (+5), x's
// B the same elements (one byte permutation a pair). The warps' sums meet in shared memory in
// warp order.
template <typename S, int ROWS, int TILES, int WARPS>
__device__ void quant_few(const typename S::T* x, i64 m, i64 k, QuantColumnStream<TILES>& stream, i64 n,
                          typename S::T* out) {
    const int RT = ROWS / 8;            // x's 8-row tiles
    const int VALUES = TILES * RT * 4;  // output values a lane holds
    __shared__ float partial[WARPS][VALUES][32];
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
    i64 col0 = (i64)blockIdx.x * (16 * TILES), row0 = (i64)blockIdx.y * ROWS;
    const i64 spans = stream.spans;
    const uint4 none = {0u, 0u, 0u, 0u};
    const unsigned int ones[4] = {Mma<S>::ONES, Mma<S>::ONES, Mma<S>::ONES, Mma<S>::ONES};
    const unsigned int base = QuantBase<S>::BITS, mask = 0x000F000Fu;

    float acc[TILES][RT][4] = {};

    // x of a span, the lane's rows (zeros past x's rows or past the last span)
    auto load_x = [&](i64 span, uint4 (&into)[RT][4]) {
#pragma unroll
        for (int r = 0; r < RT; ++r) {
            i64 row = row0 + 8 * r + g;
            const uint4* p = reinterpret_cast<const uint4*>(x + row * k + span * NBX_MMA_SPAN + t * 32);
#pragma unroll
            for (int q = 0; q < 4; ++q) into[r][q] = row < m && span < spans ? p[q] : none;
        }
    };
    // 8 rows: the next span's x in flight too (16 registers; 16 rows have none to spare)
    constexpr bool AHEAD = RT == 1;
    uint4 x_next[AHEAD ? RT : 1][4];
    if constexpr (AHEAD) load_x(warp, x_next);
    for (i64 span = warp; span < spans; span += WARPS) {
        uint4 codes[2 * TILES];
        float scale[2 * TILES], shift[2 * TILES];
#pragma unroll
        for (int i = 0; i < 2 * TILES; ++i) {
            codes[i] = stream.codes[i];
            quant_affine<S>(stream.affine[i], scale[i], shift[i]);
        }
        // the next span's codes and x in flight while this one's are summed
        stream.fetch(span + WARPS);
        uint4 xs[RT][4];
        if constexpr (AHEAD) {
#pragma unroll
            for (int r = 0; r < RT; ++r)
#pragma unroll
                for (int q = 0; q < 4; ++q) xs[r][q] = x_next[r][q];
            load_x(span + WARPS, x_next);
        } else {
            load_x(span, xs);
        }
        float dot[TILES][RT][4], xsum[RT][4];
#pragma unroll
        for (int r = 0; r < RT; ++r)
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                xsum[r][e] = 0.0f;
#pragma unroll
                for (int j = 0; j < TILES; ++j) dot[j][r][e] = 0.0f;
            }
#pragma unroll
        for (int q = 0; q < 4; ++q)
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                unsigned int b[RT][2];
#pragma unroll
                for (int r = 0; r < RT; ++r) {
                    unsigned int lo = word_of(xs[r][q], h), hi = word_of(xs[r][q], h + 2);
                    b[r][0] = __byte_perm(lo, hi, 0x5410);
                    b[r][1] = __byte_perm(lo, hi, 0x7632);
                }
#pragma unroll
                for (int j = 0; j < TILES; ++j) {
                    unsigned int w0 = word_of(codes[2 * j], q) >> (8 * h);
                    unsigned int w1 = word_of(codes[2 * j + 1], q) >> (8 * h);
                    unsigned int a[4] = {quant_and_or(w0, mask, base), quant_and_or(w1, mask, base),
                                         quant_and_or(w0 >> 4, mask, base), quant_and_or(w1 >> 4, mask, base)};
#pragma unroll
                    for (int r = 0; r < RT; ++r) Mma<S>::mma(dot[j][r], a, b[r][0], b[r][1]);
                }
#pragma unroll
                for (int r = 0; r < RT; ++r) Mma<S>::mma(xsum[r], ones, b[r][0], b[r][1]);
            }
#pragma unroll
        for (int j = 0; j < TILES; ++j)
#pragma unroll
            for (int r = 0; r < RT; ++r)
#pragma unroll
                for (int e = 0; e < 4; ++e) {
                    int i = 2 * j + e / 2;
                    acc[j][r][e] += scale[i] * dot[j][r][e] + shift[i] * xsum[r][e];
                }
    }
#pragma unroll
    for (int j = 0; j < TILES; ++j)
#pragma unroll
        for (int r = 0; r < RT; ++r)
#pragma unroll
            for (int e = 0; e < 4; ++e) partial[warp][(j * RT + r) * 4 + e][lane] = acc[j][r][e];
    __syncthreads();
#pragma unroll
    for (int slot = threadIdx.x; slot < VALUES * 32; slot += WARPS * 32) {
        int idx = slot / 32, from = slot % 32;
        float total = 0.0f;
#pragma unroll
        for (int w = 0; w < WARPS; ++w) total += partial[w][idx][from];
        int j = idx / (RT * 4), r = (idx / 4) % RT, e = idx % 4;
        i64 col = col0 + 16 * j + from / 4 + 8 * (e / 2);
        i64 row = row0 + 8 * r + 2 * (from % 4) + (e & 1);
        if (row < m && col < n) out[row * n + col] = S::store(total);
    }
}

// quant_few_<dt>_r<ROWS>_w<WARPS>: as quant_mma's launch, `early` alike; 32 columns a block. Every
// warp count is held to 16 warps a multiprocessor, 128 registers (the 16-row kernels spill 32
// bytes on sm_90): for the 8-warp ones, two blocks a multiprocessor, on an H100 at 14336 × 4096,
// 1 row 22.1 → 16.5 µs, 8 rows 23.1 → 17.8, 16 rows 26.1 → 23.7 in the lab (docs/BENCHMARKS.md).
#define NBX_QUANT_FEW(dt, S, rows, warps)                                                                             \
    extern "C" __global__ void __launch_bounds__(warps * 32, 16 / warps)                                            \
        quant_few_##dt##_r##rows##_w##warps(                                                                          \
        const S::T* x, i64 m, i64 k, const uchar* packed, const unsigned short* scales, i64 sc_row, i64 sc_col,       \
        const unsigned short* minima, i64 mn_row, i64 mn_col, i64 n, int group, S::T* out, int early) {               \
        QuantColumnStream<2> stream(packed, k, n, scales, sc_row, sc_col, minima, mn_row, mn_col, group);             \
        if (early) stream.fetch(threadIdx.x / 32);                                                                    \
        nbx_await_inputs();                                                                                           \
        if (!early) stream.fetch(threadIdx.x / 32);                                                                   \
        quant_few<S, rows, 2, warps>(x, m, k, stream, n, out);                                                        \
    }
// The instantiations quant.rs launches (`FEW_WARPS`: the autotune measures them).
#define NBX_QUANT_FEWS(dt, S)        \
    NBX_QUANT_FEW(dt, S, 8, 16)      \
    NBX_QUANT_FEW(dt, S, 8, 8)       \
    NBX_QUANT_FEW(dt, S, 8, 4)       \
    NBX_QUANT_FEW(dt, S, 16, 16)     \
    NBX_QUANT_FEW(dt, S, 16, 8)      \
    NBX_QUANT_FEW(dt, S, 16, 4)
NBX_QUANT_FEWS(fp16, F16)
NBX_QUANT_FEWS(bf16, BF16)

// quant_mma_<dt>_m<MT>_w<WARPS>_d<DEPTH>: the first DEPTH spans of codes are read before the
// inputs are awaited when `early` says the previous op cannot have written them.
#define NBX_QUANT_MMA(dt, S, mt, warps, depth)                                                                        \
    extern "C" __global__ void __launch_bounds__(warps * 32) quant_mma_##dt##_m##mt##_w##warps##_d##depth(           \
        const S::T* x, i64 m, i64 k, const uchar* packed, const unsigned short* scales, i64 sc_row, i64 sc_col,       \
        const unsigned short* minima, i64 mn_row, i64 mn_col, i64 n, int group, S::T* out, int early) {               \
        QuantWeightStream<depth> stream(packed, k, n, scales, sc_row, sc_col, minima, mn_row, mn_col, group);         \
        if (early)                                                                                                    \
            for (int d = 0; d < depth; ++d) stream.fetch(d, threadIdx.x / 32 + d * warps);                            \
        nbx_await_inputs();                                                                                           \
        if (!early)                                                                                                   \
            for (int d = 0; d < depth; ++d) stream.fetch(d, threadIdx.x / 32 + d * warps);                            \
        quant_mma<S, mt, warps, depth>(x, m, k, stream, n, out);                                                      \
    }
// The instantiations quant.rs launches (`mma_warps`, `MMA_DEPTH` say which and why).
#define NBX_QUANT_MMAS(dt, S)     \
    NBX_QUANT_MMA(dt, S, 4, 4, 1) \
    NBX_QUANT_MMA(dt, S, 4, 8, 1)
NBX_QUANT_MMAS(fp16, F16)
NBX_QUANT_MMAS(bf16, BF16)

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

// The warpgroup path (quant_wg): sm_90a's wgmma, so only where NVRTC compiles for it.
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)

#define WG_ROWS 64
#define WG_COLS 128
#define WG_BROWS 136
#define WG_SPAN 128
#define WG_XTILE 8192        // 64 rows × 64 depth × 2 bytes
#define WG_XSTAGE 16384      // two depth tiles
#define WG_CSTAGE 8192       // 128 columns × 64 bytes of codes
#define WG_BTILE 17408       // 136 rows × 128 bytes
#define WG_BBUF (2 * WG_BTILE)
#define WG_TILE (WG_ROWS * WG_COLS)  // float32 sums of a block's part in the workspace
#define WG_MAX_PARTS 8               // the most parts quant.rs launches (`WG_PARTS`)
// The dynamic shared memory of quant_wg_…_s<stages>: 1 KiB of alignment; the ring of x, codes and
// scales; two B buffers; two spans' scales and shifts as float32; the ring's full and empty
// barriers (quant.rs's `wg_shared` says the same).
#define WG_SHARED(stages) \
    (1024 + (stages) * (WG_XSTAGE + WG_CSTAGE + WG_COLS * 4) + 2 * WG_BBUF + 2 * WG_COLS * 8 + 2 * (stages) * 8)

__device__ __forceinline__ unsigned int wg_smem(const void* p) {
    return (unsigned int)__cvta_generic_to_shared(p);
}

// A TMA descriptor (CUtensorMap), passed by value as a __grid_constant__ kernel parameter.
struct alignas(64) TmaMap {
    unsigned long long words[16];
};
// Box (c0, c1) of `map` into shared memory at `dst` by the tensor memory accelerator, its bytes
// counted on the barrier `bar` (elements past the tensor's ends arrive as zeros).
__device__ __forceinline__ void wg_tma_2d(unsigned int dst, const TmaMap& map, int c0, int c1, unsigned int bar) {
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];" ::"r"(dst),
        "l"(reinterpret_cast<unsigned long long>(&map)), "r"(c0), "r"(c1), "r"(bar)
        : "memory");
}
__device__ __forceinline__ void wg_fence_async() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }

// The smem matrix descriptor of a K-major operand in 128-byte swizzle atoms (8 rows × 128 bytes,
// atoms 1024 bytes apart).
__device__ __forceinline__ unsigned long long wg_desc(unsigned int addr) {
    unsigned long long d = 0;
    d |= (unsigned long long)((addr & 0x3FFFF) >> 4);
    d |= (unsigned long long)1 << 16;            // leading byte offset (unused with swizzle)
    d |= (unsigned long long)(1024 >> 4) << 32;  // stride byte offset: the next 8 rows
    d |= (unsigned long long)1 << 62;            // 128-byte swizzle
    return d;
}

__device__ __forceinline__ void wg_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wg_commit_mma() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wg_wait_mma() { asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory"); }

#define WG_D8(i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), "+f"(d[i + 6]), "+f"(d[i + 7])

template <typename S>
struct WgMma;
#define WG_MMA(S, TYPE)                                                                                              \
    template <>                                                                                                      \
    struct WgMma<S> {                                                                                                \
        static __device__ __forceinline__ void mma(float* d, unsigned long long a, unsigned long long b, int accumulate) { \
            asm volatile(                                                                                            \
                "{\n.reg .pred p;\nsetp.ne.b32 p, %70, 0;\n"                                                         \
                "wgmma.mma_async.sync.aligned.m64n136k16.f32." TYPE "." TYPE " "                                    \
                "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, "   \
                "%21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, " \
                "%41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, " \
                "%61, %62, %63, %64, %65, %66, %67}, %68, %69, p, 1, 1, 0, 0;\n}\n"                                  \
                : WG_D8(0), WG_D8(8), WG_D8(16), WG_D8(24), WG_D8(32), WG_D8(40), WG_D8(48), WG_D8(56),            \
                  "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67])                                               \
                : "l"(a), "l"(b), "r"(accumulate));                                                                  \
        }                                                                                                            \
    };
WG_MMA(BF16, "bf16")
WG_MMA(F16, "f16")

__device__ __forceinline__ void ws_init(unsigned int bar, unsigned int count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void ws_arrive(unsigned int bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}
// One arrival on `bar` that also expects `bytes` of transfers on it.
__device__ __forceinline__ void ws_arrive_expecting(unsigned int bar, unsigned int bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void ws_wait(unsigned int bar, unsigned int parity) {
    asm volatile(
        "{\n.reg .pred done;\nWS_WAIT_%=:\n"
        "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
        "@!done bra WS_WAIT_%=;\n}\n" ::"r"(bar),
        "r"(parity)
        : "memory");
}
__device__ __forceinline__ void ws_consumers_sync() { asm volatile("bar.sync 1, 128;" ::: "memory"); }

// The spans of depth this block's part takes: [first, first + count) of k / WG_SPAN, part
// blockIdx.z of gridDim.z.
__device__ __forceinline__ void wg_part_spans(i64 k, i64& first, i64& count) {
    const i64 spans = k / WG_SPAN;
    first = spans * blockIdx.z / gridDim.z;
    count = spans * (blockIdx.z + 1) / gridDim.z - first;
}

template <typename S, int STAGES>
__device__ void quant_wg(const typename S::T* x, i64 m, i64 k, const uchar* packed, const unsigned short* scales,
                         i64 sc_row, i64 sc_col, const unsigned short* minima, i64 mn_row, i64 mn_col, i64 n,
                         int group, typename S::T* out, float* partials, const TmaMap& x_map,
                         const TmaMap& code_map) {
    extern __shared__ uchar wg_raw[];
    unsigned int given;
    asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(given));
    if (given < WG_SHARED(STAGES)) __trap();  // the launch gave less than the layout below takes
    const unsigned int raw = wg_smem(wg_raw);
    const unsigned int base = (raw + 1023) & ~1023u;
    uchar* gbase = wg_raw + (base - raw);
    const unsigned int xs = base;
    const unsigned int cs = xs + STAGES * WG_XSTAGE;
    const unsigned int bs = cs + STAGES * WG_CSTAGE;
    const unsigned int ring_aff = bs + 2 * WG_BBUF;                  // [STAGES][128] u32: scale | minimum << 16
    const unsigned int conv_aff = ring_aff + STAGES * WG_COLS * 4;   // [2][128] float2: scale, shift
    const unsigned int bars = conv_aff + 2 * WG_COLS * 8;            // full[STAGES], empty[STAGES]
    float2* affc = reinterpret_cast<float2*>(gbase + (conv_aff - base));
    const unsigned int* affr = reinterpret_cast<const unsigned int*>(gbase + (ring_aff - base));
    auto full = [&](int slot) { return bars + 8 * slot; };
    auto empty = [&](int slot) { return bars + 8 * (STAGES + slot); };

    // the high byte of (base + code) in every byte: a byte permutation pairs it with codes
    constexpr unsigned int base_bytes = (QuantBase<S>::BITS >> 24) * 0x01010101u;
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
    const i64 col0 = (i64)blockIdx.x * WG_COLS, row0 = (i64)blockIdx.y * WG_ROWS;
    const int parts = gridDim.z;
    i64 first, count;
    wg_part_spans(k, first, count);

    if (tid == 0) {
        for (int i = 0; i < STAGES; ++i) {
            ws_init(full(i), 33);  // the copies' arrival and the loading warp's 32 lanes (scales)
            ws_init(empty(i), 128);
        }
    }
    if (tid < 128) {  // the rows of ones of both B buffers
        uint4 ones = make_uint4(Mma<S>::ONES, Mma<S>::ONES, Mma<S>::ONES, Mma<S>::ONES);
#pragma unroll
        for (int u = 0; u < 2; ++u) {
            int q = tid + 128 * u, buf = q / 128, kt = (q / 64) % 2, off = (q % 64) * 16;
            unsigned int at = bs + buf * WG_BBUF + kt * WG_BTILE + 16 * 1024 + off;
            asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};" ::"r"(at), "r"(ones.x), "r"(ones.y), "r"(ones.z),
                         "r"(ones.w)
                         : "memory");
        }
    }
    __syncthreads();

    if (warp == 4) {
        constexpr int LAG = STAGES - 2;
        unsigned short sc_raw[LAG][4], mn_raw[LAG][4];
        for (i64 s0 = 0; s0 < count + LAG; s0 += LAG) {
#pragma unroll
            for (int l = 0; l < LAG; ++l) {
                const i64 s = s0 + l;
                if (s < count) {
                    const int slot = (int)(s % STAGES);
                    if (s >= STAGES) ws_wait(empty(slot), (unsigned int)((s / STAGES - 1) & 1));
                    // x's two depth tiles (128-byte swizzle) and the codes (64-byte swizzle) by
                    // TMA; rows and columns past the ends arrive as zeros
                    if (lane == 0) {
                        const int d0 = (int)((first + s) * WG_SPAN);
                        ws_arrive_expecting(full(slot), WG_XSTAGE + WG_CSTAGE);
                        wg_tma_2d(xs + slot * WG_XSTAGE, x_map, d0, (int)row0, full(slot));
                        wg_tma_2d(xs + slot * WG_XSTAGE + WG_XTILE, x_map, d0 + 64, (int)row0, full(slot));
                        wg_tma_2d(cs + slot * WG_CSTAGE, code_map, d0 / 2, (int)col0, full(slot));
                    }
                }
                if (s >= LAG && s - LAG < count) {  // the scales of span s − LAG, loaded LAG steps ago
                    const int slot = (int)((s - LAG) % STAGES);
                    unsigned int v[4];
#pragma unroll
                    for (int i = 0; i < 4; ++i) v[i] = (unsigned int)sc_raw[l][i] | (unsigned int)mn_raw[l][i] << 16;
                    asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};" ::"r"(ring_aff + slot * WG_COLS * 4 + lane * 16),
                                 "r"(v[0]), "r"(v[1]), "r"(v[2]), "r"(v[3])
                                 : "memory");
                    ws_arrive(full(slot));
                }
                if (s < count) {
                    const unsigned int grp = (unsigned int)((first + s) * WG_SPAN) / (unsigned int)group;
#pragma unroll
                    for (int i = 0; i < 4; ++i) {
                        i64 c = col0 + lane * 4 + i < n ? col0 + lane * 4 + i : n - 1;
                        asm volatile("ld.global.nc.u16 %0, [%1];" : "=h"(sc_raw[l][i]) : "l"(scales + c * sc_row + grp * sc_col));
                        asm volatile("ld.global.nc.u16 %0, [%1];" : "=h"(mn_raw[l][i]) : "l"(minima + c * mn_row + grp * mn_col));
                    }
                }
            }
        }
    }

    float acc[64];
#pragma unroll
    for (int i = 0; i < 64; ++i) acc[i] = 0.0f;
    if (warp < 4) {
        // column tid's codes of span s into B buffer s % 2, its scale and shift into affc
        auto dequant = [&](i64 s) {
            const int slot = (int)(s % STAGES);
            unsigned int src = cs + slot * WG_CSTAGE + tid * 64;
            unsigned int dst = bs + (unsigned int)(s % 2) * WG_BBUF + (tid / 8) * 1024 + (tid % 8) * 128;
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                uint4 v;
                asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];"
                             : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                             : "r"(src + ((j ^ ((tid >> 1) & 3)) << 4)));
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                    unsigned int o[2][4];
#pragma unroll
                    for (int w2 = 0; w2 < 2; ++w2) {
                        unsigned int w = word_of(v, 2 * h + w2);
                        unsigned int e = w & 0x0F0F0F0Fu, od = (w >> 4) & 0x0F0F0F0Fu;
                        unsigned int z0 = __byte_perm(e, od, 0x5140), z1 = __byte_perm(e, od, 0x7362);
                        o[w2][0] = __byte_perm(z0, base_bytes, 0x4140);
                        o[w2][1] = __byte_perm(z0, base_bytes, 0x4342);
                        o[w2][2] = __byte_perm(z1, base_bytes, 0x4140);
                        o[w2][3] = __byte_perm(z1, base_bytes, 0x4342);
                    }
#pragma unroll
                    for (int w2 = 0; w2 < 2; ++w2) {
                        int chunk = 4 * j + 2 * h + w2, kt = chunk / 8, c = chunk % 8;
                        unsigned int at = dst + kt * WG_BTILE + ((c ^ (tid % 8)) << 4);
                        asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};" ::"r"(at), "r"(o[w2][0]), "r"(o[w2][1]),
                                     "r"(o[w2][2]), "r"(o[w2][3])
                                     : "memory");
                    }
                }
            }
            unsigned int af = affr[slot * WG_COLS + tid];
            float scale = quant_f16_bits(af & 0xffffu);
            affc[(s % 2) * WG_COLS + tid] = make_float2(scale, quant_f16_bits(af >> 16) - QuantBase<S>::VALUE * scale);
        };
        float d[68];
#pragma unroll
        for (int i = 0; i < 68; ++i) d[i] = 0.0f;
        if (count > 0) {
            ws_wait(full(0), 0);
            dequant(0);
        }
        wg_fence_async();
        ws_consumers_sync();
        for (i64 s = 0; s < count; ++s) {
            const int slot = (int)(s % STAGES);
            const unsigned int xa = xs + slot * WG_XSTAGE, ba = bs + (unsigned int)(s % 2) * WG_BBUF;
            wg_fence();
#pragma unroll
            for (int ks = 0; ks < 8; ++ks) {
                unsigned int kt = ks / 4, sub = ks % 4;
                WgMma<S>::mma(d, wg_desc(xa + kt * WG_XTILE + sub * 32), wg_desc(ba + kt * WG_BTILE + sub * 32), ks > 0);
            }
            wg_commit_mma();
            if (s + 1 < count) {
                ws_wait(full((int)((s + 1) % STAGES)), (unsigned int)(((s + 1) / STAGES) & 1));
                dequant(s + 1);
            }
            wg_wait_mma();
            ws_arrive(empty(slot));
            const float2* a2 = affc + (s % 2) * WG_COLS;
            float xlo = d[64], xhi = d[66];
#pragma unroll
            for (int i = 0; i < 16; ++i) {
                float4 p = *reinterpret_cast<const float4*>(a2 + 8 * i + 2 * t);
                acc[4 * i + 0] = fmaf(p.x, d[4 * i + 0], fmaf(p.y, xlo, acc[4 * i + 0]));
                acc[4 * i + 1] = fmaf(p.z, d[4 * i + 1], fmaf(p.w, xlo, acc[4 * i + 1]));
                acc[4 * i + 2] = fmaf(p.x, d[4 * i + 2], fmaf(p.y, xhi, acc[4 * i + 2]));
                acc[4 * i + 3] = fmaf(p.z, d[4 * i + 3], fmaf(p.w, xhi, acc[4 * i + 3]));
            }
            wg_fence_async();
            ws_consumers_sync();
        }
    }

    if (parts > 1) {  // this part's sums to its tile of the workspace, for quant_wg_fold
        if (warp < 4) {
            float* mine = partials + (((i64)blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x) * WG_TILE;
#pragma unroll
            for (int i = 0; i < 16; ++i) {
                int r = 16 * warp + g, c = 8 * i + 2 * t;
                *reinterpret_cast<float2*>(mine + r * WG_COLS + c) = make_float2(acc[4 * i], acc[4 * i + 1]);
                *reinterpret_cast<float2*>(mine + (r + 8) * WG_COLS + c) = make_float2(acc[4 * i + 2], acc[4 * i + 3]);
            }
        }
        return;
    }
    if (warp < 4) {  // one part: the sums straight to out, two columns a store where they align
        const bool pairs = (n & 1) == 0 && (reinterpret_cast<unsigned long long>(out) & 3) == 0;
        auto put = [&](i64 row, i64 col, float lo, float hi) {
            if (row >= m || col >= n) return;
            typename S::T* at = out + row * n + col;
            if (pairs) {
                union { typename S::T e[2]; unsigned int both; } pair;
                pair.e[0] = S::store(lo);
                pair.e[1] = S::store(hi);
                *reinterpret_cast<unsigned int*>(at) = pair.both;
            } else {
                at[0] = S::store(lo);
                if (col + 1 < n) at[1] = S::store(hi);
            }
        };
#pragma unroll
        for (int i = 0; i < 16; ++i) {
            const i64 r = row0 + 16 * warp + g, c = col0 + 8 * i + 2 * t;
            put(r, c, acc[4 * i], acc[4 * i + 1]);
            put(r + 8, c, acc[4 * i + 2], acc[4 * i + 3]);
        }
    }
}

template <typename S>
__device__ void quant_wg_fold(const float* partials, int parts, i64 m, i64 n, typename S::T* out) {
    const i64 tiles_x = (n + WG_COLS - 1) / WG_COLS, tiles = tiles_x * ((m + WG_ROWS - 1) / WG_ROWS);
    const i64 q = (i64)blockIdx.x * blockDim.x + threadIdx.x;  // 4 columns of a tile's row
    if (q >= tiles * (WG_TILE / 4)) return;
    const i64 tile = q / (WG_TILE / 4), at = (q % (WG_TILE / 4)) * 4;
    // every part's load in flight at once (parts ≤ WG_MAX_PARTS), then the sums in part order
    float4 v[WG_MAX_PARTS];
#pragma unroll
    for (int p = 0; p < WG_MAX_PARTS; ++p)
        if (p < parts) v[p] = *reinterpret_cast<const float4*>(partials + (p * tiles + tile) * WG_TILE + at);
    float4 sum = v[0];
#pragma unroll
    for (int p = 1; p < WG_MAX_PARTS; ++p) {
        if (p < parts) {
            sum.x += v[p].x;
            sum.y += v[p].y;
            sum.z += v[p].z;
            sum.w += v[p].w;
        }
    }
    const i64 row = tile / tiles_x * WG_ROWS + at / WG_COLS, col = tile % tiles_x * WG_COLS + at % WG_COLS;
    if (row >= m) return;
    float vals[4] = {sum.x, sum.y, sum.z, sum.w};
#pragma unroll
    for (int e = 0; e < 4; ++e)
        if (col + e < n) out[row * n + col + e] = S::store(vals[e]);
}

// The first STAGES spans' codes of the block's columns into L2 (by the loading warp), while the
// previous kernel finishes.
template <int STAGES>
__device__ void quant_wg_prefetch(const uchar* packed, i64 k, i64 n) {
    if (threadIdx.x / 32 != 4) return;
    const i64 col0 = (i64)blockIdx.x * WG_COLS;
    i64 first, count;
    wg_part_spans(k, first, count);
    for (int q = threadIdx.x % 32; q < STAGES * WG_COLS; q += 32) {
        const i64 s = q / WG_COLS, c = col0 + q % WG_COLS < n ? col0 + q % WG_COLS : n - 1;
        if (s < count) asm volatile("prefetch.global.L2 [%0];" ::"l"(packed + c * (k / 2) + (first + s) * 64));
    }
}

// quant_wg_<dt>_s<stages>: 4 warps converting and multiplying, a fifth loading; the codes'
// prefetch before the inputs are awaited where `early` allows.
#define NBX_QUANT_WG(dt, S, stages)                                                                                \
    extern "C" __global__ void __launch_bounds__(160, 1) quant_wg_##dt##_s##stages(                                \
        const S::T* x, i64 m, i64 k, const uchar* packed, const unsigned short* scales, i64 sc_row, i64 sc_col,    \
        const unsigned short* minima, i64 mn_row, i64 mn_col, i64 n, int group, S::T* out, float* partials,        \
        int early, const __grid_constant__ TmaMap x_map, const __grid_constant__ TmaMap code_map) {                \
        if (early) quant_wg_prefetch<stages>(packed, k, n);                                                        \
        nbx_await_inputs();                                                                                        \
        quant_wg<S, stages>(x, m, k, packed, scales, sc_row, sc_col, minima, mn_row, mn_col, n, group, out,        \
                            partials, x_map, code_map);                                                            \
    }
// The instantiations quant.rs launches (`WG_STAGES`).
NBX_QUANT_WG(bf16, BF16, 4)
NBX_QUANT_WG(fp16, F16, 4)

#define NBX_QUANT_WG_FOLD(dt, S)                                                                                   \
    extern "C" __global__ void __launch_bounds__(256)                                                              \
        quant_wg_fold_##dt(const float* partials, int parts, i64 m, i64 n, S::T* out) {                            \
        nbx_await_inputs();                                                                                        \
        quant_wg_fold<S>(partials, parts, m, n, out);                                                              \
    }
NBX_QUANT_WG_FOLD(bf16, BF16)
NBX_QUANT_WG_FOLD(fp16, F16)

#endif  // __CUDA_ARCH_FEAT_SM90_ALL
