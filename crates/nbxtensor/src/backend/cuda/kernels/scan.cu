// Running sums and products along one axis (backend/cpu/scan.rs's semantics): floats keep
// the running value in double and round each output once; integers in 64 bits, wrapping
// (unsigned arithmetic), int64 or uint64 out.
//
// The input is addressed as lines: `lines` maps a line index l (row-major over the dims but
// the axis: l = o * inner + j) to the offset of the line's first element, the input's own
// offset included; `stride` steps along the axis. The output is contiguous
// [outer, extent + first, inner]: line l's element k is y[(o * (extent + first) + k) * inner + j].
// One thread per line walks it in order, so every output is the CPU's value.
//
// Functions: scan_<op>_<dtype>(const In* x, Layout lines, i64 stride, i64 count, i64 extent,
//                              i64 inner, int first, Out* y)
//            op: cumulative_sum, cumulative_prod; count: the number of lines; first: 1 when
//            the output starts with the identity.

template <typename S>
struct FloatRun {
    typedef typename S::T In;
    typedef typename S::T Out;
    typedef double Acc;
    static __device__ __forceinline__ Acc load(In x) { return (double)S::load(x); }
    static __device__ __forceinline__ Out finish(Acc a) { return S::store((float)a); }
};

#define NBX_INT_RUN(Name, Elem, Wide)                                                       \
    struct Name {                                                                           \
        typedef Elem In;                                                                    \
        typedef Wide Out;                                                                   \
        typedef unsigned long long Acc;                                                     \
        static __device__ __forceinline__ Acc load(In x) { return (Acc)(Wide)x; }           \
        static __device__ __forceinline__ Out finish(Acc a) { return (Out)a; }              \
    };
NBX_INT_RUN(RunI8, signed char, long long)
NBX_INT_RUN(RunI16, short, long long)
NBX_INT_RUN(RunI32, int, long long)
NBX_INT_RUN(RunI64, long long, long long)
NBX_INT_RUN(RunU8, unsigned char, unsigned long long)
NBX_INT_RUN(RunU16, unsigned short, unsigned long long)
NBX_INT_RUN(RunU32, unsigned int, unsigned long long)
NBX_INT_RUN(RunU64, unsigned long long, unsigned long long)

template <typename R, bool PROD>
__device__ __forceinline__ void scan_lines(const typename R::In* x, const Layout& lines, i64 stride, i64 count,
                                           i64 extent, i64 inner, int first, typename R::Out* y) {
    typedef typename R::Acc Acc;
    i64 step = (i64)gridDim.x * blockDim.x;
    for (i64 l = (i64)blockIdx.x * blockDim.x + threadIdx.x; l < count; l += step) {
        i64 o = l / inner, j = l % inner;
        i64 base = nbx_offset(lines, l);
        typename R::Out* out = y + o * (extent + first) * inner + j;
        Acc acc = PROD ? (Acc)1 : (Acc)0;
        if (first) out[0] = R::finish(acc);
        for (i64 k = 0; k < extent; ++k) {
            Acc v = R::load(x[base + k * stride]);
            acc = PROD ? acc * v : acc + v;
            out[(k + first) * inner] = R::finish(acc);
        }
    }
}

#define NBX_SCAN(dt, R)                                                                                        \
    extern "C" __global__ void scan_cumulative_sum_##dt(const R::In* x, Layout lines, i64 stride, i64 count,   \
                                                        i64 extent, i64 inner, int first, R::Out* y) {         \
        nbx_await_inputs();                                                                                    \
        scan_lines<R, false>(x, lines, stride, count, extent, inner, first, y);                                \
    }                                                                                                          \
    extern "C" __global__ void scan_cumulative_prod_##dt(const R::In* x, Layout lines, i64 stride, i64 count,  \
                                                         i64 extent, i64 inner, int first, R::Out* y) {        \
        nbx_await_inputs();                                                                                    \
        scan_lines<R, true>(x, lines, stride, count, extent, inner, first, y);                                 \
    }

NBX_SCAN(fp32, FloatRun<F32>)
NBX_SCAN(fp16, FloatRun<F16>)
NBX_SCAN(bf16, FloatRun<BF16>)
NBX_SCAN(i8, RunI8)
NBX_SCAN(i16, RunI16)
NBX_SCAN(i32, RunI32)
NBX_SCAN(i64, RunI64)
NBX_SCAN(u8, RunU8)
NBX_SCAN(u16, RunU16)
NBX_SCAN(u32, RunU32)
NBX_SCAN(u64, RunU64)
