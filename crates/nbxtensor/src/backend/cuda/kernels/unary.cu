// Unary ops on float32, float16 and bfloat16 (computed in float32): y[i] = f(x[i]).
// Contiguous input and output: 16-byte accesses where both are 16-byte aligned, a scalar tail;
// otherwise (or for a strided input) one element per thread.
//
// Functions: unary_<op>_<dtype>(const T* x, T* y, i64 n)            contiguous
//            unary_<op>_<dtype>_strided(const T* x, Layout lx, T* y, i64 n)

#define NBX_OP_neg(v) (-(v))
#define NBX_OP_abs(v) fabsf(v)
#define NBX_OP_exp(v) expf(v)
#define NBX_OP_log(v) logf(v)
#define NBX_OP_sqrt(v) sqrtf(v)
#define NBX_OP_rsqrt(v) (1.0f / sqrtf(v))
#define NBX_OP_tanh(v) tanhf(v)
#define NBX_OP_sigmoid(v) (1.0f / (1.0f + expf(-(v))))
#define NBX_OP_silu(v) ((v) / (1.0f + expf(-(v))))
#define NBX_OP_gelu(v) (0.5f * (v) * erfcf(-(v) * 0.70710678118654752f))
#define NBX_OP_gelu_tanh(v) ((v) / (1.0f + expf(-2.0f * 0.7978845608028654f * ((v) + 0.044715f * (v) * (v) * (v)))))
#define NBX_OP_relu(v) ((v) < 0.0f ? 0.0f : (v))

template <typename S, typename F>
__device__ __forceinline__ void unary_contiguous(const typename S::T* x, typename S::T* y, i64 n, F f) {
    typedef typename S::T T;
    const int V = 16 / sizeof(T);
    i64 stride = (i64)gridDim.x * blockDim.x;
    i64 start = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    bool aligned = ((((unsigned long long)x) | ((unsigned long long)y)) & 15) == 0;
    i64 body = aligned ? n / V * V : 0;
    for (i64 v = start; v < body / V; v += stride) {
        union { uint4 raw; T e[16 / sizeof(T)]; } in, out;
        in.raw = reinterpret_cast<const uint4*>(x)[v];
#pragma unroll
        for (int k = 0; k < V; ++k) out.e[k] = S::store(f(S::load(in.e[k])));
        reinterpret_cast<uint4*>(y)[v] = out.raw;
    }
    for (i64 i = body + start; i < n; i += stride) y[i] = S::store(f(S::load(x[i])));
}

template <typename S, typename F>
__device__ __forceinline__ void unary_strided(const typename S::T* x, Layout lx, typename S::T* y, i64 n, F f) {
    i64 stride = (i64)gridDim.x * blockDim.x;
    for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        y[i] = S::store(f(S::load(x[nbx_offset(lx, i)])));
}

#define NBX_UNARY(op, dt, S)                                                                             \
    extern "C" __global__ void unary_##op##_##dt(const S::T* x, S::T* y, i64 n) {                        \
        unary_contiguous<S>(x, y, n, [](float v) { return NBX_OP_##op(v); });                            \
    }                                                                                                    \
    extern "C" __global__ void unary_##op##_##dt##_strided(const S::T* x, Layout lx, S::T* y, i64 n) {   \
        unary_strided<S>(x, lx, y, n, [](float v) { return NBX_OP_##op(v); });                           \
    }

#define NBX_UNARY_ALL(op) NBX_UNARY(op, f32, F32) NBX_UNARY(op, f16, F16) NBX_UNARY(op, bf16, BF16)

NBX_UNARY_ALL(neg)
NBX_UNARY_ALL(abs)
NBX_UNARY_ALL(exp)
NBX_UNARY_ALL(log)
NBX_UNARY_ALL(sqrt)
NBX_UNARY_ALL(rsqrt)
NBX_UNARY_ALL(tanh)
NBX_UNARY_ALL(sigmoid)
NBX_UNARY_ALL(silu)
NBX_UNARY_ALL(gelu)
NBX_UNARY_ALL(gelu_tanh)
NBX_UNARY_ALL(relu)
