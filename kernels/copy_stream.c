/* A copy whose first destination bypasses the caches (non-temporal stores): for a call
 * larger than the last-level cache its output is evicted before anyone reads it, so
 * reading each line in before writing it (what an ordinary store does) only costs memory
 * bandwidth. The second destination, the next peer's slot, is read soon: ordinary stores. */
#include <stdint.h>
#include <string.h>

#include "core/dtype.h"
#include "reduce.h"

#if defined(__x86_64__) || defined(__i386__)
#include <emmintrin.h> /* SSE2: every x86-64 has it */

void orb_kernel_copy_stream(void *dst1, void *dst2, const void *src, size_t n, orb_dtype_t dtype, int postdiv)
{
    if (n == 0 || (unsigned)dtype >= ORB_NUM_DTYPES)
        return;
    if (postdiv > 1 || dst1 == src) { /* a division pass, or nothing to write to dst1 */
        orb_kernel_copy(dst1, dst2, src, n, dtype, postdiv);
        return;
    }
    const size_t bytes = n * orb_dtype_bytes(dtype);
    char *d = dst1;
    const char *s = src;
    size_t head = (16 - ((uintptr_t)d & 15)) & 15; /* streaming stores need 16-byte alignment */
    if (head > bytes)
        head = bytes;
    memcpy(d, s, head);
    size_t left = bytes - head, k = left / 64;
    d += head;
    s += head;
    for (size_t i = 0; i < k; i++, d += 64, s += 64) {
        __m128i x0 = _mm_loadu_si128((const __m128i *)s), x1 = _mm_loadu_si128((const __m128i *)(s + 16));
        __m128i x2 = _mm_loadu_si128((const __m128i *)(s + 32)), x3 = _mm_loadu_si128((const __m128i *)(s + 48));
        _mm_stream_si128((__m128i *)d, x0);
        _mm_stream_si128((__m128i *)(d + 16), x1);
        _mm_stream_si128((__m128i *)(d + 32), x2);
        _mm_stream_si128((__m128i *)(d + 48), x3);
    }
    memcpy(d, s, left - 64 * k);
    /* streaming stores are weakly ordered: visible to every core before the call returns
     * and before the slot they came from is released to its sender */
    _mm_sfence();
    if (dst2 != NULL && dst2 != src && dst2 != dst1)
        memcpy(dst2, src, bytes);
}

#else

void orb_kernel_copy_stream(void *dst1, void *dst2, const void *src, size_t n, orb_dtype_t dtype, int postdiv)
{
    orb_kernel_copy(dst1, dst2, src, n, dtype, postdiv);
}

#endif
