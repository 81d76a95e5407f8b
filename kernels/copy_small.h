/* Copies of up to ORB_COPY_SMALL_MAX bytes, inline: a small call's pieces (8 B-64 B) went to
 * orb_kernel_copy and libc's memcpy, some 55 instructions a copy, four times what they move
 * (docs/perf.md, 2026-11-29 21:51). Header-only: the call itself was the cost. */
#ifndef ORB_KERNELS_COPY_SMALL_H
#define ORB_KERNELS_COPY_SMALL_H

#include <stddef.h>
#include <string.h>

#define ORB_COPY_SMALL_MAX 64

/* n bytes (w <= n <= 2w, w at most 32) as the first w and the last w: both loaded before
 * either is stored, so it holds for any two buffers. Always inlined with w a constant: fixed
 * moves, no call. */
static inline __attribute__((always_inline)) void orb_copy_ends(char *d, const char *s, size_t n, size_t w)
{
    char a[32], b[32];
    memcpy(a, s, w);
    memcpy(b, s + n - w, w);
    memcpy(d, a, w);
    memcpy(d + n - w, b, w);
}

/* n <= ORB_COPY_SMALL_MAX bytes from src to dst (apart, or the same: then nothing moves) in
 * at most four moves. */
static inline void orb_copy_small(void *dst, const void *src, size_t n)
{
    char *d = dst;
    const char *s = src;
    if (d == s)
        return;
    if (n > 32)
        orb_copy_ends(d, s, n, 32);
    else if (n >= 16)
        orb_copy_ends(d, s, n, 16);
    else if (n >= 8)
        orb_copy_ends(d, s, n, 8);
    else if (n >= 4)
        orb_copy_ends(d, s, n, 4);
    else
        for (size_t i = 0; i < n; i++)
            d[i] = s[i];
}

#endif
