/* The trainer's float32 <-> bfloat16/float16 conversions (--grad-dtype) against liborbit's
 * (kernels/half.h, written separately to the same rule: IEEE round to nearest even), on every
 * 16-bit pattern and on float32 patterns swept across all exponents, with the scale applied. */
#include <math.h>
#include <string.h>

#include "half16.h"
#include "kernels/half.h"
#include "tt_util.h"

int main(void)
{
    for (int bf16 = 0; bf16 <= 1; bf16++) {
        /* every 16-bit value: exact to float32 and back (NaNs only stay NaNs) */
        for (uint32_t h = 0; h < 65536; h++) {
            uint16_t in = (uint16_t)h, back;
            float f;
            orb_train_from16(&f, &in, 1, bf16);
            float want = bf16 ? orb_b2f(in) : orb_h2f(in);
            TT_CHECK(memcmp(&f, &want, 4) == 0 || (isnan(f) && isnan(want)), "%s 0x%04x -> %a, expected %a",
                     bf16 ? "bf16" : "fp16", h, (double)f, (double)want);
            orb_train_to16(&back, &f, 1, 1.0f, bf16);
            TT_CHECK(back == in || isnan(f), "%s 0x%04x -> %a -> 0x%04x", bf16 ? "bf16" : "fp16", h, (double)f, back);
        }
        /* float32 patterns: every 2^-12 of each exponent's mantissas, both signs; halfway cases
         * (ties) fall on this grid for both formats */
        for (uint32_t u = 0; u < 0x7f800000u; u += 0x800u) {
            for (int s = 0; s < 2; s++) {
                uint32_t bits = u | (s ? 0x80000000u : 0);
                float x;
                memcpy(&x, &bits, 4);
                uint16_t got;
                orb_train_to16(&got, &x, 1, 1.0f, bf16);
                uint16_t want = bf16 ? orb_f2b(x) : orb_f2h(x);
                TT_CHECK(got == want, "%s of %a (0x%08x): 0x%04x, expected 0x%04x", bf16 ? "bf16" : "fp16", (double)x,
                         bits, got, want);
            }
        }
        /* the scale is applied before rounding (DDP's compression hooks divide first) */
        float x = 3.0f;
        uint16_t got;
        orb_train_to16(&got, &x, 1, 0.5f, bf16);
        TT_CHECK(got == (bf16 ? orb_f2b(1.5f) : orb_f2h(1.5f)), "scale not applied");
    }
    printf("half16: float16 and bfloat16 conversions agree with liborbit's on every pattern tried\n");
    return 0;
}
