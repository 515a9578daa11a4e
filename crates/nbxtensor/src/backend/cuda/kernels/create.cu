// Tensors made from attributes alone (backend/cpu/create.rs's semantics): iota, y[i] =
// start + i * step for i < n. Floats compute each value in double as start + i * step (a
// rounded multiply, then a rounded add: never fused, as the host computes it) and round it
// once to the dtype; integers compute in 64-bit unsigned (wrapping) arithmetic and keep the
// dtype's low bits.
//
// Functions: iota_<dtype>(T* y, i64 n, double start, double step)       (fp32, fp16, bf16)
//            iota_<dtype>(T* y, i64 n, long long start, long long step) (the integers)
//            a grid-stride loop, one value a thread at a time.

// d rounded to float toward zero, its lowest bit set when that was inexact ("round to odd"):
// a float has more than two bits beyond a 16-bit format's, so rounding this float to nearest
// even in float16 or bfloat16 is the correct rounding of d itself (no double rounding).
__device__ __forceinline__ float nbx_round_odd(double d) {
    float f = __double2float_rz(d);
    if (f == f && (double)f != d) f = __uint_as_float(__float_as_uint(f) | 1u);
    return f;
}

struct IotaF32 {
    typedef float T;
    static __device__ __forceinline__ T round(double v) { return __double2float_rn(v); }
};
struct IotaF16 {
    typedef nbx_f16 T;
    static __device__ __forceinline__ T round(double v) { return nbx_f32_to_f16(nbx_round_odd(v)); }
};
struct IotaBF16 {
    typedef nbx_bf16 T;
    static __device__ __forceinline__ T round(double v) { return nbx_f32_to_bf16(nbx_round_odd(v)); }
};

template <typename R>
__device__ __forceinline__ void iota_float(typename R::T* y, i64 n, double start, double step) {
    i64 stride = (i64)gridDim.x * blockDim.x;
    for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        y[i] = R::round(__dadd_rn(start, __dmul_rn((double)i, step)));
}

template <typename T>
__device__ __forceinline__ void iota_int(T* y, i64 n, long long start, long long step) {
    typedef unsigned long long U;
    i64 stride = (i64)gridDim.x * blockDim.x;
    for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        y[i] = (T)((U)start + (U)i * (U)step);
}

#define NBX_IOTA_FLOAT(dt, R)                                                                  \
    extern "C" __global__ void iota_##dt(R::T* y, i64 n, double start, double step) {          \
        nbx_await_inputs();                                                                    \
        iota_float<R>(y, n, start, step);                                                      \
    }
#define NBX_IOTA_INT(dt, T)                                                                    \
    extern "C" __global__ void iota_##dt(T* y, i64 n, long long start, long long step) {       \
        nbx_await_inputs();                                                                    \
        iota_int<T>(y, n, start, step);                                                        \
    }

NBX_IOTA_FLOAT(fp32, IotaF32)
NBX_IOTA_FLOAT(fp16, IotaF16)
NBX_IOTA_FLOAT(bf16, IotaBF16)
NBX_IOTA_INT(i8, signed char)
NBX_IOTA_INT(i16, short)
NBX_IOTA_INT(i32, int)
NBX_IOTA_INT(i64, long long)
NBX_IOTA_INT(u8, unsigned char)
NBX_IOTA_INT(u16, unsigned short)
NBX_IOTA_INT(u32, unsigned int)
NBX_IOTA_INT(u64, unsigned long long)
