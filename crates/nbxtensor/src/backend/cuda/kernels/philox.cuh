// Philox4x32-10 on the GPU (placed before philox.cu and sample.cu): the same words as the CPU's
// `random::Words::fill`; philox.cu's uniform float32 draws are `draws::fill_uniform_f32`'s
// (multiplies and adds rounded one by one, never fused, as the host computes them).
// Word w of a stream is word w % 4 of block w / 4; the block's counter is (block low, block
// high, stream low, stream high), the key the seed.

__device__ __forceinline__ void philox_round(unsigned int c[4], const unsigned int k[2]) {
    unsigned int hi0 = __umulhi(0xD2511F53u, c[0]), lo0 = 0xD2511F53u * c[0];
    unsigned int hi1 = __umulhi(0xCD9E8D57u, c[2]), lo1 = 0xCD9E8D57u * c[2];
    unsigned int n0 = hi1 ^ c[1] ^ k[0], n2 = hi0 ^ c[3] ^ k[1];
    c[0] = n0; c[1] = lo1; c[2] = n2; c[3] = lo0;
}

__device__ __forceinline__ unsigned int philox_word(unsigned long long seed, unsigned long long stream,
                                                    unsigned long long word) {
    unsigned long long block = word / 4;
    unsigned int c[4] = {(unsigned int)block, (unsigned int)(block >> 32), (unsigned int)stream,
                         (unsigned int)(stream >> 32)};
    unsigned int k[2] = {(unsigned int)seed, (unsigned int)(seed >> 32)};
#pragma unroll
    for (int r = 0; r < 10; ++r) {
        philox_round(c, k);
        if (r < 9) { k[0] += 0x9E3779B9u; k[1] += 0xBB67AE85u; }
    }
    return c[word % 4];
}
