// Sorting along one axis (backend/cpu/sort.rs's semantics): stable, NaN counting as the
// largest (last ascending, first descending), -0.0 equal to 0.0.
//
// One block sorts one line at a time (a grid-stride loop over the lines): the line's keys
// and positions go to shared memory, padded to a power of two P (at least 2) with positions
// at or past the extent n, which come after every element; a bitonic network sorts the
// (key, position) pairs under one strict total order (the key's order, then the position), so
// its result is the stable order whatever the network's pattern. The sorted positions then
// pick the values from the input (bit for bit) or are written as int64.
//
// The input is addressed as lines: `lines` maps a line index l (row-major over the dims but
// the axis: l = o * inner + j) to the offset of its first element, the input's own offset
// included; `stride` steps along the axis. The output is contiguous [outer, n, inner].
//
// Functions: sort_<dtype>_<asc|desc>, argsort_<dtype>_<asc|desc>(const T* x, Layout lines,
//                i64 stride, i64 count, i64 n, i64 inner, int P, void* y)
//            count: the number of lines; dynamic shared memory: P * (4 + sizeof(key)) bytes
//            (positions first, then the keys: float for the float dtypes, the integer itself).

extern __shared__ __align__(16) unsigned char nbx_sort_shared[];

template <typename S>
struct FloatKey {
    typedef typename S::T T;
    typedef float K;
    static __device__ __forceinline__ K key(T v) { return S::load(v); }
    static __device__ __forceinline__ bool is_nan(K k) { return k != k; }
};

template <typename E>
struct IntKey {
    typedef E T;
    typedef E K;
    static __device__ __forceinline__ K key(T v) { return v; }
    static __device__ __forceinline__ bool is_nan(K) { return false; }
};

// Whether (a, ia) comes strictly before (b, ib): pads (positions at or past n) after every
// element, then NaN after (ascending) or before (descending) every number, then the values,
// then the positions.
template <typename Q, bool DESC>
__device__ __forceinline__ bool before(typename Q::K a, int ia, typename Q::K b, int ib, int n) {
    if (ia >= n) return false;
    if (ib >= n) return true;
    bool an = Q::is_nan(a), bn = Q::is_nan(b);
    if (an != bn) return DESC ? an : bn;
    if (!an && a != b) return DESC ? a > b : a < b;
    return ia < ib;
}

template <typename Q, bool DESC, bool INDICES>
__device__ __forceinline__ void sort_lines(const typename Q::T* x, const Layout& lines, i64 stride, i64 count, i64 n64,
                                           i64 inner, int P, void* y) {
    typedef typename Q::K K;
    int* pos = reinterpret_cast<int*>(nbx_sort_shared);
    K* keys = reinterpret_cast<K*>(nbx_sort_shared + (size_t)P * sizeof(int));
    int n = (int)n64;
    for (i64 l = blockIdx.x; l < count; l += gridDim.x) {
        i64 o = l / inner, j = l % inner;
        i64 base = nbx_offset(lines, l);
        for (int i = threadIdx.x; i < P; i += blockDim.x) {
            pos[i] = i;
            if (i < n) keys[i] = Q::key(x[base + (i64)i * stride]);
        }
        __syncthreads();
        for (int k = 2; k <= P; k <<= 1) {
            for (int h = k >> 1; h > 0; h >>= 1) {
                for (int i = threadIdx.x; i < P; i += blockDim.x) {
                    int p = i ^ h;
                    if (p > i) {
                        K ki = keys[i], kp = keys[p];
                        int pi = pos[i], pp = pos[p];
                        // ascending within blocks of k whose bit k is clear, descending otherwise
                        bool swap = (i & k) == 0 ? before<Q, DESC>(kp, pp, ki, pi, n) : before<Q, DESC>(ki, pi, kp, pp, n);
                        if (swap) {
                            keys[i] = kp;
                            keys[p] = ki;
                            pos[i] = pp;
                            pos[p] = pi;
                        }
                    }
                }
                __syncthreads();
            }
        }
        for (int r = threadIdx.x; r < n; r += blockDim.x) {
            i64 at = (o * n64 + r) * inner + j;
            int p = pos[r];
            if (INDICES)
                reinterpret_cast<i64*>(y)[at] = p;
            else
                reinterpret_cast<typename Q::T*>(y)[at] = x[base + (i64)p * stride];
        }
        __syncthreads();  // the next line reuses the shared memory
    }
}

#define NBX_SORT_ONE(name, dt, dir, Q, DESC, INDICES)                                                            \
    extern "C" __global__ void name##_##dt##_##dir(const Q::T* x, Layout lines, i64 stride, i64 count, i64 n,    \
                                                   i64 inner, int P, void* y) {                                  \
        nbx_await_inputs();                                                                                      \
        sort_lines<Q, DESC, INDICES>(x, lines, stride, count, n, inner, P, y);                                   \
    }
#define NBX_SORT(dt, Q)                          \
    NBX_SORT_ONE(sort, dt, asc, Q, false, false) \
    NBX_SORT_ONE(sort, dt, desc, Q, true, false) \
    NBX_SORT_ONE(argsort, dt, asc, Q, false, true) \
    NBX_SORT_ONE(argsort, dt, desc, Q, true, true)

NBX_SORT(fp32, FloatKey<F32>)
NBX_SORT(fp16, FloatKey<F16>)
NBX_SORT(bf16, FloatKey<BF16>)
NBX_SORT(i8, IntKey<signed char>)
NBX_SORT(i16, IntKey<short>)
NBX_SORT(i32, IntKey<int>)
NBX_SORT(i64, IntKey<long long>)
NBX_SORT(u8, IntKey<unsigned char>)
NBX_SORT(u16, IntKey<unsigned short>)
NBX_SORT(u32, IntKey<unsigned int>)
NBX_SORT(u64, IntKey<unsigned long long>)

// searchsorted: one thread per value, a binary search of the ascending `sorted` (n elements,
// `step` apart) under the sorts' order (NaN the largest): the count of elements below the
// value, or with RIGHT not above it. `values` is addressed through its layout; y is contiguous.
//
// Functions: searchsorted_<dtype>_<left|right>(const T* sorted, i64 n, i64 step, const T* values,
//                Layout vl, i64 count, i64* y)

// Whether key a comes strictly before key b (NaN after every number, NaNs equal).
template <typename Q>
__device__ __forceinline__ bool key_below(typename Q::K a, typename Q::K b) {
    bool an = Q::is_nan(a), bn = Q::is_nan(b);
    if (an || bn) return !an && bn;
    return a < b;
}

template <typename Q, bool RIGHT>
__device__ __forceinline__ void search_values(const typename Q::T* sorted, i64 n, i64 step,
                                              const typename Q::T* values, const Layout& vl, i64 count, i64* y) {
    i64 stride = (i64)gridDim.x * blockDim.x;
    for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += stride) {
        typename Q::K v = Q::key(values[nbx_offset(vl, i)]);
        i64 lo = 0, hi = n;
        while (lo < hi) {
            i64 mid = lo + (hi - lo) / 2;
            typename Q::K e = Q::key(sorted[mid * step]);
            // left: e before v; right: e not after v
            bool before = RIGHT ? !key_below<Q>(v, e) : key_below<Q>(e, v);
            if (before)
                lo = mid + 1;
            else
                hi = mid;
        }
        y[i] = lo;
    }
}

#define NBX_SEARCH_ONE(dt, side, Q, RIGHT)                                                                   \
    extern "C" __global__ void searchsorted_##dt##_##side(const Q::T* sorted, i64 n, i64 step,              \
                                                          const Q::T* values, Layout vl, i64 count, i64* y) { \
        nbx_await_inputs();                                                                                  \
        search_values<Q, RIGHT>(sorted, n, step, values, vl, count, y);                                      \
    }
#define NBX_SEARCH(dt, Q)                  \
    NBX_SEARCH_ONE(dt, left, Q, false)     \
    NBX_SEARCH_ONE(dt, right, Q, true)

NBX_SEARCH(fp32, FloatKey<F32>)
NBX_SEARCH(fp16, FloatKey<F16>)
NBX_SEARCH(bf16, FloatKey<BF16>)
NBX_SEARCH(i8, IntKey<signed char>)
NBX_SEARCH(i16, IntKey<short>)
NBX_SEARCH(i32, IntKey<int>)
NBX_SEARCH(i64, IntKey<long long>)
NBX_SEARCH(u8, IntKey<unsigned char>)
NBX_SEARCH(u16, IntKey<unsigned short>)
NBX_SEARCH(u32, IntKey<unsigned int>)
NBX_SEARCH(u64, IntKey<unsigned long long>)
