// Reductions along axes (backend/cpu/reduce.rs's semantics): sum, prod, mean, max, min,
// argmax, argmin, all, any. Floats: sum, prod and mean accumulate in float64 and round once;
// max and min propagate NaN; argmax (argmin) is the first maximum (minimum), a NaN counting as
// either. Integers: sum and prod wrap in 64 bits (int64 or uint64 out); max, min, argmax and
// argmin compare exactly. all and any read every dtype (bool too) as truth, nonzero being
// true (NaN too), and write bool bytes.
//
// The input is addressed as [outputs, reduced]: `kept` maps an output index to the offset of
// its first element (the input's own offset included), `red` maps a reduced index to the
// offset from there. Every output folds its elements in a fixed pattern of threads, then
// combines the partials in a fixed order: results never depend on timing.
//
// Functions: reduce_<op>_<dtype>_rows(const In* x, Layout kept, Layout red, i64 outputs,
//                                      i64 count, Out* y, int group)
//              `group` threads (32, or the whole block) per output; thread t folds elements
//              t, t + group, ...; partials combine by warp shuffles, then by warps in order.
//            reduce_<op>_<dtype>_cols(same, no group)
//              blocks of 32 × 8 threads: 32 consecutive outputs (coalesced when the kept
//              innermost stride is 1), 8 lanes over the reduced elements, combined in order.
//            reduce_<op>_<dtype>_split(const In* x, Layout kept, Layout red, i64 count,
//                                       i64 chunk, int splits, unsigned char* partials)
//              few outputs of many elements, first pass: block (s, o) folds elements
//              [s·chunk, (s + 1)·chunk) of output o into the 16-byte slot o·splits + s.
//            reduce_<op>_<dtype>_finish(const unsigned char* partials, i64 outputs, i64 count,
//                                        int splits, Out* y)
//              second pass: a thread per output combines its slots in order.

#define NBX_INF __int_as_float(0x7f800000)

// ---- folds: init, fold one element (its index among the reduced), combine two partials,
// ---- shuffle a partial, finish.

template <typename S>
struct FloatSum {
    typedef typename S::T In;
    typedef typename S::T Out;
    typedef double Acc;
    static __device__ __forceinline__ Acc init() { return 0.0; }
    static __device__ __forceinline__ Acc fold(Acc a, In x, i64) { return a + (double)S::load(x); }
    static __device__ __forceinline__ Acc combine(Acc a, Acc b) { return a + b; }
    static __device__ __forceinline__ Acc down(Acc a, int delta) { return __shfl_down_sync(0xffffffffu, a, delta); }
    static __device__ __forceinline__ Out finish(Acc a, i64) { return S::store((float)a); }
};

template <typename S>
struct FloatProd {
    typedef typename S::T In;
    typedef typename S::T Out;
    typedef double Acc;
    static __device__ __forceinline__ Acc init() { return 1.0; }
    static __device__ __forceinline__ Acc fold(Acc a, In x, i64) { return a * (double)S::load(x); }
    static __device__ __forceinline__ Acc combine(Acc a, Acc b) { return a * b; }
    static __device__ __forceinline__ Acc down(Acc a, int delta) { return __shfl_down_sync(0xffffffffu, a, delta); }
    static __device__ __forceinline__ Out finish(Acc a, i64) { return S::store((float)a); }
};

template <typename S>
struct FloatMean : FloatSum<S> {
    typedef typename S::T Out;
    static __device__ __forceinline__ Out finish(double a, i64 count) { return S::store((float)(a / (double)count)); }
};

// max (MAX = true) or min; a NaN wins over any number.
template <typename S, bool MAX>
struct FloatExtreme {
    typedef typename S::T In;
    typedef typename S::T Out;
    typedef float Acc;
    static __device__ __forceinline__ Acc init() { return MAX ? -NBX_INF : NBX_INF; }
    static __device__ __forceinline__ Acc combine(Acc a, Acc b) {
        bool better = MAX ? b > a : b < a;
        return (a != a || !(b != b || better)) ? a : b;
    }
    static __device__ __forceinline__ Acc fold(Acc a, In x, i64) { return combine(a, S::load(x)); }
    static __device__ __forceinline__ Acc down(Acc a, int delta) { return __shfl_down_sync(0xffffffffu, a, delta); }
    static __device__ __forceinline__ Out finish(Acc a, i64) { return S::store(a); }
};

// A value and its index: the larger (MAX) or the smaller wins, a NaN wins over any number,
// and of two equal values (or two NaNs) the smaller index wins, so the partials combine to the
// first maximum (minimum) whatever their order.
template <typename V>
struct Best {
    V value;
    i64 index;
};

template <typename V>
__device__ __forceinline__ bool is_nan_of(V v) { return v != v; }

template <bool MAX, typename V>
__device__ __forceinline__ Best<V> better_of(Best<V> a, Best<V> b) {
    bool an = is_nan_of(a.value), bn = is_nan_of(b.value);
    if (an != bn) return an ? a : b;
    if (!an && a.value != b.value) return (MAX ? b.value > a.value : b.value < a.value) ? b : a;
    return b.index < a.index ? b : a;
}

template <typename S, bool MAX>
struct FloatArg {
    typedef typename S::T In;
    typedef i64 Out;
    typedef Best<float> Acc;
    static __device__ __forceinline__ Acc init() { return Acc{MAX ? -NBX_INF : NBX_INF, 0}; }
    static __device__ __forceinline__ Acc fold(Acc a, In x, i64 index) {
        float v = S::load(x);
        // the CPU's fold: a NaN held stays; a later element replaces only a worse extreme
        bool better = MAX ? v > a.value : v < a.value;
        return (a.value != a.value || !(v != v || better)) ? a : Acc{v, index};
    }
    static __device__ __forceinline__ Acc combine(Acc a, Acc b) { return better_of<MAX>(a, b); }
    static __device__ __forceinline__ Acc down(Acc a, int delta) {
        return Acc{__shfl_down_sync(0xffffffffu, a.value, delta), __shfl_down_sync(0xffffffffu, a.index, delta)};
    }
    static __device__ __forceinline__ Out finish(Acc a, i64) { return a.index; }
};

// Integer storage: the element, the 64-bit type it is compared and summed in, its range.
#define NBX_INT_TYPE(Name, Elem, Wide, Lo, Hi)          \
    struct Name {                                       \
        typedef Elem T;                                 \
        typedef Wide W;                                 \
        static __device__ __forceinline__ W lo() { return (W)(Lo); } \
        static __device__ __forceinline__ W hi() { return (W)(Hi); } \
    };
NBX_INT_TYPE(I8, signed char, long long, -128, 127)
NBX_INT_TYPE(I16, short, long long, -32768, 32767)
NBX_INT_TYPE(I32, int, long long, -2147483647 - 1, 2147483647)
NBX_INT_TYPE(I64, long long, long long, -9223372036854775807LL - 1, 9223372036854775807LL)
NBX_INT_TYPE(U8, unsigned char, unsigned long long, 0, 255)
NBX_INT_TYPE(U16, unsigned short, unsigned long long, 0, 65535)
NBX_INT_TYPE(U32, unsigned int, unsigned long long, 0, 4294967295ULL)
NBX_INT_TYPE(U64, unsigned long long, unsigned long long, 0, 18446744073709551615ULL)

// The wrapping product in 64 bits (as unsigned arithmetic: the low 64 bits of a product are
// the same for signed and unsigned operands).
template <typename I>
struct IntProd {
    typedef typename I::T In;
    typedef typename I::W Out;
    typedef unsigned long long Acc;
    static __device__ __forceinline__ Acc init() { return 1ULL; }
    static __device__ __forceinline__ Acc fold(Acc a, In x, i64) { return a * (Acc)(typename I::W)x; }
    static __device__ __forceinline__ Acc combine(Acc a, Acc b) { return a * b; }
    static __device__ __forceinline__ Acc down(Acc a, int delta) { return __shfl_down_sync(0xffffffffu, a, delta); }
    static __device__ __forceinline__ Out finish(Acc a, i64) { return (Out)a; }
};

// The wrapping sum in 64 bits (as unsigned arithmetic, whose wrap is defined).
template <typename I>
struct IntSum {
    typedef typename I::T In;
    typedef typename I::W Out;
    typedef unsigned long long Acc;
    static __device__ __forceinline__ Acc init() { return 0ULL; }
    static __device__ __forceinline__ Acc fold(Acc a, In x, i64) { return a + (Acc)(typename I::W)x; }
    static __device__ __forceinline__ Acc combine(Acc a, Acc b) { return a + b; }
    static __device__ __forceinline__ Acc down(Acc a, int delta) { return __shfl_down_sync(0xffffffffu, a, delta); }
    static __device__ __forceinline__ Out finish(Acc a, i64) { return (Out)a; }
};

template <typename I, bool MAX>
struct IntExtreme {
    typedef typename I::T In;
    typedef typename I::T Out;
    typedef typename I::W Acc;
    static __device__ __forceinline__ Acc init() { return MAX ? I::lo() : I::hi(); }
    static __device__ __forceinline__ Acc combine(Acc a, Acc b) { return MAX ? (b > a ? b : a) : (b < a ? b : a); }
    static __device__ __forceinline__ Acc fold(Acc a, In x, i64) { return combine(a, (Acc)x); }
    static __device__ __forceinline__ Acc down(Acc a, int delta) { return __shfl_down_sync(0xffffffffu, a, delta); }
    static __device__ __forceinline__ Out finish(Acc a, i64) { return (Out)a; }
};

template <typename I, bool MAX>
struct IntArg {
    typedef typename I::T In;
    typedef i64 Out;
    typedef Best<typename I::W> Acc;
    static __device__ __forceinline__ Acc init() { return Acc{MAX ? I::lo() : I::hi(), 0}; }
    static __device__ __forceinline__ Acc fold(Acc a, In x, i64 index) {
        typename I::W v = (typename I::W)x;
        return (MAX ? v > a.value : v < a.value) ? Acc{v, index} : a;
    }
    static __device__ __forceinline__ Acc combine(Acc a, Acc b) { return better_of<MAX>(a, b); }
    static __device__ __forceinline__ Acc down(Acc a, int delta) {
        return Acc{__shfl_down_sync(0xffffffffu, a.value, delta), __shfl_down_sync(0xffffffffu, a.index, delta)};
    }
    static __device__ __forceinline__ Out finish(Acc a, i64) { return a.index; }
};

// Truth of an element: a float (through its load: NaN is true), an integer or a bool byte.
template <typename S>
struct FloatTruth {
    typedef typename S::T T;
    static __device__ __forceinline__ int truthy(T x) { return S::load(x) != 0.0f; }
};
template <typename I>
struct IntTruth {
    typedef typename I::T T;
    static __device__ __forceinline__ int truthy(T x) { return x != 0; }
};
struct BoolByte {
    typedef unsigned char T;
};

// all (ALL) or any: 1 or 0, written as a bool byte.
template <typename L, bool ALL>
struct Truth {
    typedef typename L::T In;
    typedef unsigned char Out;
    typedef int Acc;
    static __device__ __forceinline__ Acc init() { return ALL ? 1 : 0; }
    static __device__ __forceinline__ Acc combine(Acc a, Acc b) { return ALL ? (a & b) : (a | b); }
    static __device__ __forceinline__ Acc fold(Acc a, In x, i64) { return combine(a, L::truthy(x)); }
    static __device__ __forceinline__ Acc down(Acc a, int delta) { return __shfl_down_sync(0xffffffffu, a, delta); }
    static __device__ __forceinline__ Out finish(Acc a, i64) { return (Out)a; }
};

// ---- the two loops

// Partials of one warp, combined into lane 0 (lane l takes lane l + delta's, in a fixed tree).
template <typename F>
__device__ __forceinline__ typename F::Acc warp_combine(typename F::Acc a) {
#pragma unroll
    for (int delta = 16; delta > 0; delta >>= 1) a = F::combine(a, F::down(a, delta));
    return a;
}

template <typename F>
__device__ void reduce_rows(const typename F::In* x, const Layout& kept, const Layout& red, i64 outputs, i64 count,
                            typename F::Out* y, int group) {
    typedef typename F::Acc Acc;
    __shared__ Acc partial[32];
    int per_block = blockDim.x / group;
    int g = threadIdx.x / group, lane = threadIdx.x % group;
    i64 o = (i64)blockIdx.x * per_block + g;
    Acc acc = F::init();
    if (o < outputs) {
        i64 base = nbx_offset(kept, o);
#pragma unroll 4
        for (i64 r = lane; r < count; r += group) acc = F::fold(acc, x[base + nbx_offset(red, r)], r);
    }
    acc = warp_combine<F>(acc);
    if (group > 32) {
        int warp = threadIdx.x / 32;
        if (threadIdx.x % 32 == 0) partial[warp] = acc;
        __syncthreads();
        if (lane == 0) {
            int first = g * (group / 32);
            acc = partial[first];
            for (int w = 1; w < group / 32; ++w) acc = F::combine(acc, partial[first + w]);
        }
    }
    if (o < outputs && lane == 0) y[o] = F::finish(acc, count);
}

#define NBX_COLS 32
#define NBX_COL_LANES 8

template <typename F>
__device__ void reduce_cols(const typename F::In* x, const Layout& kept, const Layout& red, i64 outputs, i64 count,
                            typename F::Out* y) {
    typedef typename F::Acc Acc;
    __shared__ Acc partial[NBX_COL_LANES][NBX_COLS];
    i64 o = (i64)blockIdx.x * NBX_COLS + threadIdx.x;
    Acc acc = F::init();
    if (o < outputs) {
        i64 base = nbx_offset(kept, o);
        for (i64 r = threadIdx.y; r < count; r += NBX_COL_LANES) acc = F::fold(acc, x[base + nbx_offset(red, r)], r);
    }
    partial[threadIdx.y][threadIdx.x] = acc;
    __syncthreads();
    if (threadIdx.y == 0 && o < outputs) {
        for (int l = 1; l < NBX_COL_LANES; ++l) acc = F::combine(acc, partial[l][threadIdx.x]);
        y[o] = F::finish(acc, count);
    }
}

// The bytes of a partial's slot (the largest Acc: a value and an index).
#define NBX_SLOT 16

template <typename F>
__device__ void reduce_split(const typename F::In* x, const Layout& kept, const Layout& red, i64 count, i64 chunk,
                             int splits, unsigned char* partials) {
    typedef typename F::Acc Acc;
    static_assert(sizeof(Acc) <= NBX_SLOT, "a partial fits its slot");
    __shared__ Acc partial[32];
    i64 o = blockIdx.y, begin = (i64)blockIdx.x * chunk;
    i64 end = begin + chunk < count ? begin + chunk : count;
    i64 base = nbx_offset(kept, o);
    Acc acc = F::init();
#pragma unroll 4
    for (i64 r = begin + threadIdx.x; r < end; r += blockDim.x) acc = F::fold(acc, x[base + nbx_offset(red, r)], r);
    acc = warp_combine<F>(acc);
    if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = acc;
    __syncthreads();
    if (threadIdx.x == 0) {
        for (int w = 1; w < (int)(blockDim.x / 32); ++w) acc = F::combine(acc, partial[w]);
        *reinterpret_cast<Acc*>(partials + (o * splits + blockIdx.x) * NBX_SLOT) = acc;
    }
}

template <typename F>
__device__ void reduce_finish(const unsigned char* partials, i64 outputs, i64 count, int splits,
                              typename F::Out* y) {
    typedef typename F::Acc Acc;
    i64 o = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (o >= outputs) return;
    const unsigned char* slots = partials + o * splits * NBX_SLOT;
    Acc acc = *reinterpret_cast<const Acc*>(slots);
    for (int s = 1; s < splits; ++s) acc = F::combine(acc, *reinterpret_cast<const Acc*>(slots + s * NBX_SLOT));
    y[o] = F::finish(acc, count);
}

#define NBX_REDUCE(op, dt)                                                                                        \
    extern "C" __global__ void reduce_##op##_##dt##_rows(const op##_##dt::In* x, Layout kept, Layout red,         \
                                                         i64 outputs, i64 count, op##_##dt::Out* y, int group) { \
        nbx_await_inputs();                                                                                     \
        reduce_rows<op##_##dt>(x, kept, red, outputs, count, y, group);                                         \
    }                                                                                                           \
    extern "C" __global__ void reduce_##op##_##dt##_cols(const op##_##dt::In* x, Layout kept, Layout red,         \
                                                         i64 outputs, i64 count, op##_##dt::Out* y) {            \
        nbx_await_inputs();                                                                                     \
        reduce_cols<op##_##dt>(x, kept, red, outputs, count, y);                                                \
    }                                                                                                           \
    extern "C" __global__ void reduce_##op##_##dt##_split(const op##_##dt::In* x, Layout kept, Layout red,        \
                                                          i64 count, i64 chunk, int splits,                      \
                                                          unsigned char* partials) {                             \
        nbx_await_inputs();                                                                                     \
        reduce_split<op##_##dt>(x, kept, red, count, chunk, splits, partials);                                  \
    }                                                                                                           \
    extern "C" __global__ void reduce_##op##_##dt##_finish(const unsigned char* partials, i64 outputs, i64 count, \
                                                           int splits, op##_##dt::Out* y) {                      \
        nbx_await_inputs();                                                                                     \
        reduce_finish<op##_##dt>(partials, outputs, count, splits, y);                                          \
    }

#define NBX_REDUCE_FLOAT(dt, S)                     \
    typedef FloatSum<S> sum_##dt;                   \
    typedef FloatProd<S> prod_##dt;                 \
    typedef FloatMean<S> mean_##dt;                 \
    typedef FloatExtreme<S, true> max_##dt;         \
    typedef FloatExtreme<S, false> min_##dt;        \
    typedef FloatArg<S, true> argmax_##dt;          \
    typedef FloatArg<S, false> argmin_##dt;         \
    typedef Truth<FloatTruth<S>, true> all_##dt;    \
    typedef Truth<FloatTruth<S>, false> any_##dt;   \
    NBX_REDUCE(sum, dt)                             \
    NBX_REDUCE(prod, dt)                            \
    NBX_REDUCE(mean, dt)                            \
    NBX_REDUCE(max, dt)                             \
    NBX_REDUCE(min, dt)                             \
    NBX_REDUCE(argmax, dt)                          \
    NBX_REDUCE(argmin, dt)                          \
    NBX_REDUCE(all, dt)                             \
    NBX_REDUCE(any, dt)

#define NBX_REDUCE_INT(dt, I)                       \
    typedef IntSum<I> sum_##dt;                     \
    typedef IntProd<I> prod_##dt;                   \
    typedef IntExtreme<I, true> max_##dt;           \
    typedef IntExtreme<I, false> min_##dt;          \
    typedef IntArg<I, true> argmax_##dt;            \
    typedef IntArg<I, false> argmin_##dt;           \
    typedef Truth<IntTruth<I>, true> all_##dt;      \
    typedef Truth<IntTruth<I>, false> any_##dt;     \
    NBX_REDUCE(sum, dt)                             \
    NBX_REDUCE(prod, dt)                            \
    NBX_REDUCE(max, dt)                             \
    NBX_REDUCE(min, dt)                             \
    NBX_REDUCE(argmax, dt)                          \
    NBX_REDUCE(argmin, dt)                          \
    NBX_REDUCE(all, dt)                             \
    NBX_REDUCE(any, dt)

NBX_REDUCE_FLOAT(fp32, F32)
NBX_REDUCE_FLOAT(fp16, F16)
NBX_REDUCE_FLOAT(bf16, BF16)
NBX_REDUCE_INT(i8, I8)
NBX_REDUCE_INT(i16, I16)
NBX_REDUCE_INT(i32, I32)
NBX_REDUCE_INT(i64, I64)
NBX_REDUCE_INT(u8, U8)
NBX_REDUCE_INT(u16, U16)
NBX_REDUCE_INT(u32, U32)
NBX_REDUCE_INT(u64, U64)
typedef Truth<IntTruth<BoolByte>, true> all_i1;
typedef Truth<IntTruth<BoolByte>, false> any_i1;
NBX_REDUCE(all, i1)
NBX_REDUCE(any, i1)
