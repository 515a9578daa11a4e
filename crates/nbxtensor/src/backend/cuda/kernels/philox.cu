// The Philox kernels: a stream's words, and uniform float32 draws (philox.cuh holds the
// block function).

extern "C" __global__ void philox_words(unsigned long long seed, unsigned long long stream,
                                        unsigned long long start, unsigned int* out, i64 n) {
    nbx_await_inputs();
    i64 step = (i64)gridDim.x * blockDim.x;
    for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step)
        out[i] = philox_word(seed, stream, start + (unsigned long long)i);
}

extern "C" __global__ void philox_uniform_f32(unsigned long long seed, unsigned long long stream,
                                              unsigned long long start, float low, float span,
                                              int precision, float scale, float* out, i64 n) {
    nbx_await_inputs();
    i64 step = (i64)gridDim.x * blockDim.x;
    for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
        unsigned int w = philox_word(seed, stream, start + (unsigned long long)i);
        float unit = __fmul_rn((float)(w >> (32 - precision)), scale);
        out[i] = __fadd_rn(low, __fmul_rn(span, unit));
    }
}
