// sample(logits, position): one token a row, every step as ops/spec/sample.rs defines it (the
// host's kernel is backend/cpu/sample.rs), so both give the same token bit for bit. A block of
// 1024 threads per row: the largest scaled logit, the top-k edge by radix selection over the
// order-preserving keys (4 digits of 8 bits, counts), the fixed-point weights into the
// workspace, the top-p edge by radix selection over the weights (4 digits of 11 bits, masses),
// then the drawn target found by a scan over contiguous chunks. Every sum is of integers, so
// the atomics' order never shows in the result.
//
// Functions: sample_<dtype>(const T* logits, const void* position, SampleParams p,
//                           unsigned long long* weights, long long* out)
//              grid (rows), block (1024); logits contiguous rows of p.vocab; position an int32
//              (p.pos64 = 0) or int64; weights rows × vocab; out one int64 a row (-1 for a row
//              without a finite logit).

#define NBX_SAMPLE_THREADS 1024
#define NBX_SAMPLE_WARPS (NBX_SAMPLE_THREADS / 32)
#define NBX_BINS 2048
#define NBX_FULL 0xffffffffu

// The constants and attributes of a call (the host's `SampleParams`).
struct SampleParams {
    float exp[12];               // ops::spec::sample::EXP
    float inverse_temperature;   // Sample::inverse_temperature
    int top_k;                   // 0: off
    unsigned int top_p;          // the 32-bit fraction, when use_top_p
    int use_top_p;
    int pos64;
    int weight_bits;             // WEIGHT_BITS
    unsigned long long seed;
    i64 vocab;
};

__device__ __forceinline__ float nbx_scaled_logit(float x, float inverse) {
    float z = __fmul_rn(x, inverse);
    return z != z ? __int_as_float(0xff800000) : z;
}

__device__ __forceinline__ unsigned int nbx_key(float z) {
    unsigned int b = __float_as_uint(z);
    return (b >> 31) ? ~b : (b | 0x80000000u);
}

// e^x · 2^bits rounded down, for x <= 0 (sample::weight: the same products and fused adds)
__device__ __forceinline__ unsigned long long nbx_weight(float x, const SampleParams& p) {
    if (!(x >= p.exp[3])) return 0ull;
    float n = rintf(__fmul_rn(x, p.exp[0]));
    float r = __fmaf_rn(-n, p.exp[2], __fmaf_rn(-n, p.exp[1], x));
    float q = p.exp[4];
#pragma unroll
    for (int i = 5; i < 12; ++i) q = __fmaf_rn(q, r, p.exp[i]);
    float scale = __uint_as_float((unsigned int)((int)n + p.weight_bits + 127) << 23);
    return __float2ull_rz(__fmul_rn(q, scale));
}

// floor(w · total / 2^32), exactly (sample::scaled)
__device__ __forceinline__ unsigned long long nbx_scaled(unsigned int w, unsigned long long total) {
    return (unsigned long long)w * (total >> 32) + (((unsigned long long)w * (total & 0xffffffffull)) >> 32);
}

__device__ __forceinline__ unsigned long long nbx_block_sum(unsigned long long v, unsigned long long* red) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(NBX_FULL, v, o);
    __syncthreads();
    if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = v;
    __syncthreads();
    unsigned long long total = 0;
    for (int w = 0; w < NBX_SAMPLE_WARPS; ++w) total += red[w];
    return total;
}

// Thread 0, after a digit's histogram: the highest bin where the mass above plus the bin's
// reaches `want` (the host's `select`); moves `above` and the prefix and mask on.
__device__ __forceinline__ void nbx_pick(const unsigned long long* bins, int count, int shift, unsigned long long want,
                                         unsigned long long* above, unsigned long long* prefix,
                                         unsigned long long* mask) {
    unsigned long long chosen = 0;
    for (int bin = count - 1; bin >= 0; --bin) {
        if (*above + bins[bin] >= want) {
            chosen = (unsigned long long)bin;
            break;
        }
        *above += bins[bin];
    }
    *prefix |= chosen << shift;
    *mask |= (unsigned long long)(count - 1) << shift;
}

template <typename S>
__device__ void sample_row(const typename S::T* x, const void* position, const SampleParams& p,
                           unsigned long long* w, long long* out) {
    __shared__ unsigned long long bins[NBX_BINS];
    __shared__ unsigned long long red[NBX_SAMPLE_WARPS];
    __shared__ float top;
    __shared__ unsigned long long state[3];  // above, prefix, mask of a radix selection
    const int t = threadIdx.x;
    const i64 V = p.vocab;
    const float inv = p.inverse_temperature;

    // 1. the largest scaled logit (NaN counted as -inf)
    float m = __int_as_float(0xff800000);
    for (i64 j = t; j < V; j += NBX_SAMPLE_THREADS) m = fmaxf(m, nbx_scaled_logit(S::load(x[j]), inv));
    for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_down_sync(NBX_FULL, m, o));
    if ((t & 31) == 0) bins[t >> 5] = __float_as_uint(m);
    __syncthreads();
    if (t == 0) {
        float best = __int_as_float(0xff800000);
        for (int i = 0; i < NBX_SAMPLE_WARPS; ++i) best = fmaxf(best, __uint_as_float((unsigned int)bins[i]));
        top = best;
    }
    __syncthreads();
    m = top;
    if (m == __int_as_float(0xff800000)) {
        if (t == 0) *out = -1;
        return;
    }
    if (m == __int_as_float(0x7f800000)) {  // the first +inf
        unsigned long long first = (unsigned long long)V;
        for (i64 j = t; j < V; j += NBX_SAMPLE_THREADS)
            if (nbx_scaled_logit(S::load(x[j]), inv) == m && (unsigned long long)j < first) first = j;
        for (int o = 16; o > 0; o >>= 1) first = min(first, __shfl_down_sync(NBX_FULL, first, o));
        __syncthreads();
        if ((t & 31) == 0) red[t >> 5] = first;
        __syncthreads();
        if (t == 0) {
            for (int i = 0; i < NBX_SAMPLE_WARPS; ++i) first = min(first, red[i]);
            *out = (long long)first;
        }
        return;
    }

    // 2. the top-k edge: the k-th largest key
    unsigned int edge = 0;
    if (p.top_k > 0) {
        if (t == 0) state[0] = state[1] = state[2] = 0;
        for (int digit = 3; digit >= 0; --digit) {
            const int shift = 8 * digit;
            for (int i = t; i < 256; i += NBX_SAMPLE_THREADS) bins[i] = 0;
            __syncthreads();
            const unsigned long long prefix = state[1], mask = state[2];
            for (i64 j = t; j < V; j += NBX_SAMPLE_THREADS) {
                unsigned int k = nbx_key(nbx_scaled_logit(S::load(x[j]), inv));
                if ((k & mask) == prefix) atomicAdd(&bins[(k >> shift) & 255], 1ull);
            }
            __syncthreads();
            if (t == 0) nbx_pick(bins, 256, shift, (unsigned long long)p.top_k, &state[0], &state[1], &state[2]);
            __syncthreads();
        }
        edge = (unsigned int)state[1];
    }

    // 3. the weights of the kept logits
    unsigned long long mine = 0;
    for (i64 j = t; j < V; j += NBX_SAMPLE_THREADS) {
        float z = nbx_scaled_logit(S::load(x[j]), inv);
        unsigned long long weight = nbx_key(z) >= edge ? nbx_weight(__fsub_rn(z, m), p) : 0ull;
        w[j] = weight;
        mine += weight;
    }

    // 4. the top-p edge: the lightest weight kept
    unsigned long long lightest = 0;
    if (p.use_top_p) {
        unsigned long long total = nbx_block_sum(mine, red);
        unsigned long long limit = nbx_scaled(p.top_p, total);
        if (limit < 1) limit = 1;
        __syncthreads();
        if (t == 0) state[0] = state[1] = state[2] = 0;
        for (int digit = 3; digit >= 0; --digit) {
            const int shift = 11 * digit;
            for (int i = t; i < NBX_BINS; i += NBX_SAMPLE_THREADS) bins[i] = 0;
            __syncthreads();
            const unsigned long long prefix = state[1], mask = state[2];
            for (i64 j = t; j < V; j += NBX_SAMPLE_THREADS) {
                unsigned long long v = w[j];
                if ((v & mask) == prefix) atomicAdd(&bins[(v >> shift) & (NBX_BINS - 1)], v);
            }
            __syncthreads();
            if (t == 0) nbx_pick(bins, NBX_BINS, shift, limit, &state[0], &state[1], &state[2]);
            __syncthreads();
        }
        lightest = state[1];
    }

    // 5. the draw: the first index whose running sum of kept weights passes the target
    const i64 chunk = (V + NBX_SAMPLE_THREADS - 1) / NBX_SAMPLE_THREADS;
    const i64 begin = min((i64)t * chunk, V), end = min(begin + chunk, V);
    unsigned long long sum = 0;
    for (i64 j = begin; j < end; ++j) sum += w[j] >= lightest ? w[j] : 0ull;
    unsigned long long scan = sum;  // inclusive scan over the block
    for (int o = 1; o < 32; o <<= 1) {
        unsigned long long v = __shfl_up_sync(NBX_FULL, scan, o);
        if ((t & 31) >= o) scan += v;
    }
    __syncthreads();
    if ((t & 31) == 31) red[t >> 5] = scan;
    __syncthreads();
    unsigned long long base = scan - sum, total = 0;
    for (int i = 0; i < NBX_SAMPLE_WARPS; ++i) {
        if (i < (t >> 5)) base += red[i];
        total += red[i];
    }
    const i64 word = p.pos64 ? *(const long long*)position : (i64)(*(const int*)position);
    const unsigned int drawn = philox_word(p.seed, (unsigned long long)blockIdx.x, (unsigned long long)word);
    const unsigned long long target = nbx_scaled(drawn, total);
    if (base <= target && target < base + sum) {
        unsigned long long running = base;
        for (i64 j = begin; j < end; ++j) {
            running += w[j] >= lightest ? w[j] : 0ull;
            if (running > target) {
                *out = (long long)j;
                break;
            }
        }
    }
}

#define NBX_SAMPLE(dt, S)                                                                                          \
    extern "C" __global__ void __launch_bounds__(NBX_SAMPLE_THREADS)                                               \
        sample_##dt(const S::T* logits, const void* position, SampleParams p, unsigned long long* weights,           \
                    long long* out) {                                                                              \
        nbx_await_inputs();                                                                                        \
        const i64 row = blockIdx.x;                                                                                \
        sample_row<S>(logits + row * p.vocab, position, p, weights + row * p.vocab, out + row);                   \
    }

NBX_SAMPLE(fp32, F32)
NBX_SAMPLE(fp16, F16)
NBX_SAMPLE(bf16, BF16)
