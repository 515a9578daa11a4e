// Selection by flags (bool bytes: any nonzero byte is true) with numpy broadcasting: bit copies
// of elements of 1, 2, 4 or 8 bytes (U: the unsigned integer of that width, suffix b<width>).
//
//   where_b<w>(const unsigned char* c, const U* a, const U* b, U* y, i64 n)
//       y[i] = c[i] ? a[i] : b[i], all contiguous of one shape: 16-byte words of a, b and y
//       and a word of as many flags per thread where all are 16-byte aligned, a scalar tail.
//   where_b<w>_strided(const unsigned char* c, const U* a, const U* b, Indexer ix, U* y, i64 n, int narrow)
//       any layouts (c, a, b are operands 0, 1, 2 of ix).
//   masked_fill_b<w>(const U* x, const unsigned char* m, U* y, i64 n, unsigned long long fill)
//       y[i] = m[i] ? fill : x[i] (fill's low w bytes: the value's pattern), contiguous.
//   masked_fill_b<w>_strided(const U* x, const unsigned char* m, Indexer ix, U* y, i64 n, int narrow,
//                            unsigned long long fill)
//       any layouts (x, m are operands 0, 1 of ix).

template <typename U>
__device__ __forceinline__ void where_contiguous(const unsigned char* c, const U* a, const U* b, U* y, i64 n) {
    const int V = 16 / sizeof(U);
    typedef typename nbx_word<16 / sizeof(U)>::T Flags;
    i64 stride = nbx_stride(), start = nbx_first();
    i64 body = nbx_aligned(a, b, y) && (((unsigned long long)c) & 15) == 0 ? n / V * V : 0;
    for (i64 v = start; v < body / V; v += stride) {
        union { Flags raw; unsigned char e[16 / sizeof(U)]; } flags;
        union { uint4 raw; U e[16 / sizeof(U)]; } p, q, out;
        flags.raw = reinterpret_cast<const Flags*>(c)[v];
        p.raw = reinterpret_cast<const uint4*>(a)[v];
        q.raw = reinterpret_cast<const uint4*>(b)[v];
#pragma unroll
        for (int k = 0; k < V; ++k) out.e[k] = flags.e[k] ? p.e[k] : q.e[k];
        reinterpret_cast<uint4*>(y)[v] = out.raw;
    }
    for (i64 i = body + start; i < n; i += stride) y[i] = c[i] ? a[i] : b[i];
}

template <typename U>
__device__ __forceinline__ void where_strided(const unsigned char* c, const U* a, const U* b, const Indexer& ix,
                                              U* y, i64 n, bool narrow) {
    for (i64 i = nbx_first(); i < n; i += nbx_stride()) {
        i64 off[3];
        nbx_offsets<3>(ix, i, narrow, off);
        y[i] = c[off[0]] ? a[off[1]] : b[off[2]];
    }
}

template <typename U>
__device__ __forceinline__ void fill_contiguous(const U* x, const unsigned char* m, U* y, i64 n, U fill) {
    const int V = 16 / sizeof(U);
    typedef typename nbx_word<16 / sizeof(U)>::T Flags;
    i64 stride = nbx_stride(), start = nbx_first();
    i64 body = nbx_aligned(x, m, y) ? n / V * V : 0;
    for (i64 v = start; v < body / V; v += stride) {
        union { Flags raw; unsigned char e[16 / sizeof(U)]; } flags;
        union { uint4 raw; U e[16 / sizeof(U)]; } p, out;
        flags.raw = reinterpret_cast<const Flags*>(m)[v];
        p.raw = reinterpret_cast<const uint4*>(x)[v];
#pragma unroll
        for (int k = 0; k < V; ++k) out.e[k] = flags.e[k] ? fill : p.e[k];
        reinterpret_cast<uint4*>(y)[v] = out.raw;
    }
    for (i64 i = body + start; i < n; i += stride) y[i] = m[i] ? fill : x[i];
}

template <typename U>
__device__ __forceinline__ void fill_strided(const U* x, const unsigned char* m, const Indexer& ix, U* y, i64 n,
                                             bool narrow, U fill) {
    for (i64 i = nbx_first(); i < n; i += nbx_stride()) {
        i64 off[2];
        nbx_offsets<2>(ix, i, narrow, off);
        y[i] = m[off[1]] ? fill : x[off[0]];
    }
}

#define NBX_SELECT(w, U)                                                                                        \
    extern "C" __global__ void where_b##w(const unsigned char* c, const U* a, const U* b, U* y, i64 n) {       \
        nbx_await_inputs();                                                                                     \
        where_contiguous<U>(c, a, b, y, n);                                                                     \
    }                                                                                                           \
    extern "C" __global__ void where_b##w##_strided(const unsigned char* c, const U* a, const U* b, Indexer ix, \
                                                    U* y, i64 n, int narrow) {                                  \
        nbx_await_inputs();                                                                                     \
        where_strided<U>(c, a, b, ix, y, n, narrow);                                                            \
    }                                                                                                           \
    extern "C" __global__ void masked_fill_b##w(const U* x, const unsigned char* m, U* y, i64 n,               \
                                                unsigned long long fill) {                                      \
        nbx_await_inputs();                                                                                     \
        fill_contiguous<U>(x, m, y, n, (U)fill);                                                                \
    }                                                                                                           \
    extern "C" __global__ void masked_fill_b##w##_strided(const U* x, const unsigned char* m, Indexer ix, U* y, \
                                                          i64 n, int narrow, unsigned long long fill) {         \
        nbx_await_inputs();                                                                                     \
        fill_strided<U>(x, m, ix, y, n, narrow, (U)fill);                                                       \
    }

NBX_SELECT(1, unsigned char)
NBX_SELECT(2, unsigned short)
NBX_SELECT(4, unsigned int)
NBX_SELECT(8, unsigned long long)
