// Gathers along one dim (embedding, index_select), as bit patterns: y[i] (row-major, contiguous)
// takes x at operand 0's offset of i plus idx[c] * axis_stride, where c is i's coordinate along
// dim `axis` of ix (operand 0's stride there is 0) and idx[c] is read through the indices'
// own indexer `ii`. An index outside [0, bound) is never read through: its units are written as
// zero bytes and the flag word takes max(flag, positions - c) (positions: the extent of `axis`),
// so that the host, reading the flag after the launch, names the first bad position. The
// flag's result does not depend on the order the threads run in.
//
//   gather_<unit>_<idx>(const U* x, Indexer ix, int axis, i64 axis_stride, const I* idx, Indexer ii,
//                       i64 bound, U* y, i64 n, int narrow, unsigned long long* flag)
//       unit: b1, b2, b4, b8, b16 (two 8-byte halves) or w16 (uint4, 16-byte aligned words);
//       idx: i32 or i64.

struct nbx_b16 {
    unsigned long long lo, hi;
};

template <typename U, typename I>
__device__ __forceinline__ void gather_units(const U* x, const Indexer& ix, int axis, i64 axis_stride, const I* idx,
                                             const Indexer& ii, i64 bound, U* y, i64 n, bool narrow,
                                             unsigned long long* flag) {
    for (i64 i = nbx_first(); i < n; i += nbx_stride()) {
        i64 off[1], at[1], c = 0, unused;
        if (narrow)
            nbx_offsets_in<1, unsigned int>(ix, (unsigned int)i, off, axis, c);
        else
            nbx_offsets_in<1, i64>(ix, i, off, axis, c);
        // c < positions <= n: the indices' arithmetic is narrow when the output's is
        if (narrow)
            nbx_offsets_in<1, unsigned int>(ii, (unsigned int)c, at, -1, unused);
        else
            nbx_offsets_in<1, i64>(ii, c, at, -1, unused);
        i64 index = (i64)idx[at[0]];
        if (index < 0 || index >= bound) {
            atomicMax(flag, (unsigned long long)(ix.shape[axis] - c));
            y[i] = U();
        } else {
            y[i] = x[off[0] + index * axis_stride];
        }
    }
}

#define NBX_GATHER(unit, U, it, I)                                                                           \
    extern "C" __global__ void gather_##unit##_##it(const U* x, Indexer ix, int axis, i64 axis_stride,      \
                                                    const I* idx, Indexer ii, i64 bound, U* y, i64 n,        \
                                                    int narrow, unsigned long long* flag) {                  \
        nbx_await_inputs();                                                                                  \
        gather_units<U, I>(x, ix, axis, axis_stride, idx, ii, bound, y, n, narrow, flag);                    \
    }

#define NBX_GATHER_UNIT(unit, U) NBX_GATHER(unit, U, i32, int) NBX_GATHER(unit, U, i64, long long)

NBX_GATHER_UNIT(b1, unsigned char)
NBX_GATHER_UNIT(b2, unsigned short)
NBX_GATHER_UNIT(b4, unsigned int)
NBX_GATHER_UNIT(b8, unsigned long long)
NBX_GATHER_UNIT(b16, nbx_b16)
NBX_GATHER_UNIT(w16, uint4)
