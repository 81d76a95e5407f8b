/* orb_copy_small (kernels/copy_small.h), every length it takes (0..ORB_COPY_SMALL_MAX) at every
 * alignment of source and destination within 8 bytes: each destination byte checked against
 * the source pattern, the 16 bytes on either side of it untouched; and a copy onto itself
 * leaves the bytes as they were. Exits 1 on the first failure, naming length and offsets. */
#include <stdio.h>
#include <string.h>

#include "kernels/copy_small.h"

enum { GUARD = 16, ROOM = GUARD + 8 + ORB_COPY_SMALL_MAX + GUARD };

static unsigned char pattern(size_t i, size_t n) { return (unsigned char)(i * 37u + n * 11u + 1u); }

int main(void)
{
    unsigned char src[ROOM], dst[ROOM];
    long cases = 0;
    for (size_t n = 0; n <= ORB_COPY_SMALL_MAX; n++)
        for (size_t so = 0; so < 8; so++)
            for (size_t doff = 0; doff < 8; doff++) {
                for (size_t i = 0; i < ROOM; i++) {
                    src[i] = pattern(i, n);
                    dst[i] = 0xA5;
                }
                unsigned char *d = dst + GUARD + doff;
                const unsigned char *s = src + GUARD + so;
                orb_copy_small(d, s, n);
                for (size_t i = 0; i < ROOM; i++) {
                    const int inside = dst + i >= d && dst + i < d + n;
                    const unsigned char want = inside ? s[dst + i - d] : 0xA5;
                    if (dst[i] != want) {
                        fprintf(stderr, "FAIL copy_small n=%zu src+%zu dst+%zu: byte %td of dst is 0x%02x, want 0x%02x (%s)\n",
                                n, so, doff, (ptrdiff_t)(dst + i - d), dst[i], want,
                                inside ? "inside the copy" : "outside it: written past the copy");
                        return 1;
                    }
                }
                cases++;
            }
    for (size_t n = 0; n <= ORB_COPY_SMALL_MAX; n++) { /* onto itself: nothing moves */
        for (size_t i = 0; i < ROOM; i++)
            src[i] = pattern(i, n);
        orb_copy_small(src + GUARD, src + GUARD, n);
        for (size_t i = 0; i < ROOM; i++)
            if (src[i] != pattern(i, n)) {
                fprintf(stderr, "FAIL copy_small n=%zu onto itself: byte %zu changed\n", n, i);
                return 1;
            }
        cases++;
    }
    printf("copy_small: %ld cases passed\n", cases);
    return 0;
}
