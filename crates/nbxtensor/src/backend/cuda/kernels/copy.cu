// Copies of elements between layouts, as bit patterns: y at operand 1's offset of row-major
// index i takes x at operand 0's offset, for every i < n (units of 1, 2, 4, 8 or 16 bytes; or
// 16-byte words where both sides' rows allow, the Rust side having counted in words).
//
//   copy_<unit>(const U* x, Indexer ix, U* y, i64 n, int narrow)
//       unit: b1, b2, b4, b8, b16 (two 8-byte halves, 8-byte aligned) or w16 (uint4, 16-byte
//       aligned words).

struct nbx_b16 {
    unsigned long long lo, hi;
};

template <typename U>
__device__ __forceinline__ void copy_units(const U* x, const Indexer& ix, U* y, i64 n, bool narrow) {
    for (i64 i = nbx_first(); i < n; i += nbx_stride()) {
        i64 off[2];
        nbx_offsets<2>(ix, i, narrow, off);
        y[off[1]] = x[off[0]];
    }
}

#define NBX_COPY(unit, U)                                                                               \
    extern "C" __global__ void copy_##unit(const U* x, Indexer ix, U* y, i64 n, int narrow) {           \
        nbx_await_inputs();                                                                             \
        copy_units<U>(x, ix, y, n, narrow);                                                             \
    }

NBX_COPY(b1, unsigned char)
NBX_COPY(b2, unsigned short)
NBX_COPY(b4, unsigned int)
NBX_COPY(b8, unsigned long long)
NBX_COPY(b16, nbx_b16)
NBX_COPY(w16, uint4)
