/* CRC-32C (Castagnoli) with the SSE4.2 crc32 instruction, three streams at once, for the
 * compiled core (_framing_walk.pyx, _scan.pyx): verify-crc checks one batch of a few KiB at a
 * time, and the `crc32c` package, called per batch, runs at a third of its own speed on a long
 * buffer there (its call, and a short buffer's path). Mark Adler's method (crc32c.c, zlib
 * licence): a buffer of 3 x n bytes is three independent crc32 chains, joined by shifting a
 * chain's CRC over n zero bytes with tables made once.
 *
 * kl_crc32c_ready() says whether this CPU has the instruction; where it does not (or on
 * another architecture, or another compiler) the .pyx modules call the `crc32c` package. */
#ifndef KL_CRC32C_H
#define KL_CRC32C_H

#include <stdint.h>
#include <stddef.h>
#include <string.h>

#if (defined(__x86_64__) || defined(_M_X64)) && (defined(__GNUC__) || defined(__clang__))
#define KL_CRC32C_HW 1
#include <nmmintrin.h>

#define KL_POLY 0x82f63b78u
#define KL_LONG 8192
#define KL_SHORT 256

static uint32_t kl_long[4][256];
static uint32_t kl_short[4][256];
static int kl_ready = -1;

static uint32_t kl_gf2_times(const uint32_t *mat, uint32_t vec) {
    uint32_t sum = 0;
    while (vec) {
        if (vec & 1)
            sum ^= *mat;
        vec >>= 1;
        mat++;
    }
    return sum;
}

static void kl_gf2_square(uint32_t *square, const uint32_t *mat) {
    int n;
    for (n = 0; n < 32; n++)
        square[n] = kl_gf2_times(mat, mat[n]);
}

/* the operator that appends len zero bytes to a CRC's register */
static void kl_zeros_op(uint32_t *even, size_t len) {
    int n;
    uint32_t row = 1, odd[32];
    odd[0] = KL_POLY;          /* one zero bit */
    for (n = 1; n < 32; n++) {
        odd[n] = row;
        row <<= 1;
    }
    kl_gf2_square(even, odd);  /* two zero bits */
    kl_gf2_square(odd, even);  /* four */
    do {
        kl_gf2_square(even, odd);
        len >>= 1;
        if (len == 0)
            return;
        kl_gf2_square(odd, even);
        len >>= 1;
    } while (len);
    for (n = 0; n < 32; n++)
        even[n] = odd[n];
}

static void kl_zeros(uint32_t zeros[][256], size_t len) {
    uint32_t n, op[32];
    kl_zeros_op(op, len);
    for (n = 0; n < 256; n++) {
        zeros[0][n] = kl_gf2_times(op, n);
        zeros[1][n] = kl_gf2_times(op, n << 8);
        zeros[2][n] = kl_gf2_times(op, n << 16);
        zeros[3][n] = kl_gf2_times(op, n << 24);
    }
}

static inline uint32_t kl_shift(uint32_t zeros[][256], uint32_t crc) {
    return zeros[0][crc & 0xff] ^ zeros[1][(crc >> 8) & 0xff] ^ zeros[2][(crc >> 16) & 0xff] ^ zeros[3][crc >> 24];
}

static int kl_crc32c_ready(void) {
    if (kl_ready < 0) {
        __builtin_cpu_init();
        kl_ready = __builtin_cpu_supports("sse4.2") ? 1 : 0;
        if (kl_ready) {
            kl_zeros(kl_long, KL_LONG);
            kl_zeros(kl_short, KL_SHORT);
        }
    }
    return kl_ready;
}

static inline uint64_t kl_load64(const unsigned char *p) {
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

/* three chains over a buffer's blocks of 3 x `block` bytes, joined: the CRC register after them */
__attribute__((target("sse4.2")))
static inline uint64_t kl_streams(uint64_t crc0, const unsigned char **at, size_t *len, size_t block,
                                  uint32_t zeros[][256]) {
    const unsigned char *next = *at, *end;
    uint64_t crc1, crc2;
    while (*len >= block * 3) {
        crc1 = crc2 = 0;
        end = next + block;
        do {
            crc0 = _mm_crc32_u64(crc0, kl_load64(next));
            crc1 = _mm_crc32_u64(crc1, kl_load64(next + block));
            crc2 = _mm_crc32_u64(crc2, kl_load64(next + block * 2));
            next += 8;
        } while (next < end);
        crc0 = kl_shift(zeros, (uint32_t)crc0) ^ crc1;
        crc0 = kl_shift(zeros, (uint32_t)crc0) ^ crc2;
        next += block * 2;
        *len -= block * 3;
    }
    *at = next;
    return crc0;
}

/* the CRC-32C of buf[0:len) continued from crc (0 to start), as crc32c.crc32c(buf, crc);
 * only after kl_crc32c_ready() said 1 */
__attribute__((target("sse4.2")))
static uint32_t kl_crc32c(uint32_t crc, const unsigned char *next, size_t len) {
    uint64_t crc0 = crc ^ 0xffffffffu;
    while (len && ((uintptr_t)next & 7) != 0) {
        crc0 = _mm_crc32_u8((uint32_t)crc0, *next++);
        len--;
    }
    crc0 = kl_streams(crc0, &next, &len, KL_LONG, kl_long);
    crc0 = kl_streams(crc0, &next, &len, KL_SHORT, kl_short);
    while (len >= 8) {
        crc0 = _mm_crc32_u64(crc0, kl_load64(next));
        next += 8;
        len -= 8;
    }
    while (len) {
        crc0 = _mm_crc32_u8((uint32_t)crc0, *next++);
        len--;
    }
    return (uint32_t)crc0 ^ 0xffffffffu;
}

#else
#define KL_CRC32C_HW 0
static int kl_crc32c_ready(void) { return 0; }
static uint32_t kl_crc32c(uint32_t crc, const unsigned char *next, size_t len) { (void)next; (void)len; return crc; }
#endif

#endif
