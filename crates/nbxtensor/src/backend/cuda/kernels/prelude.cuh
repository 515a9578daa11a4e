// The prelude every nbxtensor CUDA source is compiled after (no system header is needed).
// Storage types: float32 as float, float16 and bfloat16 as their 16-bit patterns; values are
// loaded into float32, computed, and stored back rounded to nearest even.

typedef unsigned short nbx_f16;
typedef unsigned short nbx_bf16;
typedef long long i64;

__device__ __forceinline__ float nbx_bf16_to_f32(nbx_bf16 b) { return __uint_as_float(((unsigned int)b) << 16); }
__device__ __forceinline__ nbx_bf16 nbx_f32_to_bf16(float f) {
    if (f != f) return 0x7FC0;  // every NaN, as the host's conversion writes it
    unsigned short r;
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(r) : "f"(f));
    return r;
}
__device__ __forceinline__ float nbx_f16_to_f32(nbx_f16 h) {
    if ((h & 0x7C00) == 0x7C00 && (h & 0x03FF) != 0)  // NaN: the payload moves up, quiet bit set, as
        // the host widens it (the hardware's conversion writes one canonical NaN)
        return __uint_as_float(((unsigned int)(h & 0x8000) << 16) | 0x7FC00000u | ((unsigned int)(h & 0x03FF) << 13));
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
}
__device__ __forceinline__ nbx_f16 nbx_f32_to_f16(float f) {
    if (f != f) {  // NaN: sign, the payload's top bits, quiet bit set, as the host writes it
        unsigned int b = __float_as_uint(f);
        return (nbx_f16)(((b >> 16) & 0x8000u) | 0x7E00u | ((b & 0x007FFFFFu) >> 13));
    }
    unsigned short r;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(r) : "f"(f));
    return r;
}

// Programmatic dependent launch (compute capability 9.0 on; launch.rs says when the host asks
// for it): a kernel may start while the one before it on the stream still runs, so every kernel
// calls this before it touches global memory. It waits until the previous kernel has finished
// and its writes are visible, then lets the next kernel start launching (its blocks take free
// multiprocessors and wait here in turn). Without a programmatic launch it returns at once.
__device__ __forceinline__ void nbx_await_inputs() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// Load/store of one element of a storage type as float32.
struct F32 {
    typedef float T;
    static __device__ __forceinline__ float load(T v) { return v; }
    static __device__ __forceinline__ T store(float v) { return v; }
};
struct F16 {
    typedef nbx_f16 T;
    static __device__ __forceinline__ float load(T v) { return nbx_f16_to_f32(v); }
    static __device__ __forceinline__ T store(float v) { return nbx_f32_to_f16(v); }
};
struct BF16 {
    typedef nbx_bf16 T;
    static __device__ __forceinline__ float load(T v) { return nbx_bf16_to_f32(v); }
    static __device__ __forceinline__ T store(float v) { return nbx_f32_to_bf16(v); }
};

// Strided addressing of up to NBX_MAX_DIMS dims (shapes and strides in elements).
#define NBX_MAX_DIMS 8
struct Layout {
    int ndim;
    i64 shape[NBX_MAX_DIMS];
    i64 strides[NBX_MAX_DIMS];
    i64 offset;
};

// The element offset of row-major index `i` under a layout (the one offset helper of every
// source): the outermost dim takes the quotient left, so it needs no division.
__device__ __forceinline__ i64 nbx_offset(const Layout& l, i64 i) {
    i64 off = l.offset;
    for (int d = l.ndim - 1; d > 0; --d) {
        i64 s = l.shape[d];
        off += (i % s) * l.strides[d];
        i /= s;
    }
    if (l.ndim > 0) off += i * l.strides[0];
    return off;
}
