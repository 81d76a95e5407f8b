/* CPU kernels against the independent reference of ref.c: every dtype x op x postdiv x
 * size x output count x aliasing, on every flavour this CPU runs; conversions exhaustively;
 * the F16C and portable flavours bit for bit. Exit 0 pass, 1 fail. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/reduce.h"
#include "fill.h"
#include "ref.h"

static long failures;

#define CHECK(cond, ...)                                                                      \
    do {                                                                                      \
        if (!(cond)) {                                                                        \
            if (failures++ < 20) {                                                            \
                fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                         \
                fprintf(stderr, __VA_ARGS__);                                                 \
                fputc('\n', stderr);                                                          \
            }                                                                                 \
        }                                                                                     \
    } while (0)

/* Aliasing shapes the executor may use. */
enum { AL_NONE, AL_D1_A, AL_D1_B, AL_D2_A, AL_D1_A_D2_B, AL_A_B, AL_ALL, AL_COUNT };
static const char *const alias_names[] = {"none", "d1=a", "d1=b", "d2=a", "d1=a,d2=b", "a=b", "d1=a=b"};

#define GUARD 64 /* bytes checked past the end of every output */

/* One kernel call checked element by element. first_only: orb_kernel_copy. */
static void check_case(orb_dtype_t dt, orb_op_t op, int pd, size_t n, int two, int al, int off,
                       int first_only, const char *impl)
{
    size_t sz = orb_dtype_size(dt), bytes = n * sz;
    size_t cap = bytes + GUARD + 16;
    unsigned char *ba = malloc(cap), *bb = malloc(cap), *b1 = malloc(cap), *b2 = malloc(cap);
    unsigned char *sa = malloc(cap), *sb = malloc(cap), *exp = malloc(cap);
    if (!ba || !bb || !b1 || !b2 || !sa || !sb || !exp) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    /* element-aligned but not vector-aligned when off != 0 */
    unsigned char *a = ba + off * sz, *b = bb + off * sz, *d1 = b1 + off * sz, *d2 = b2 + off * sz;
    memset(ba, 0xa5, cap);
    memset(bb, 0xa5, cap);
    memset(b1, 0xa5, cap);
    memset(b2, 0xa5, cap);
    fill(a, n, dt);
    fill(b, n, dt);
    if (al == AL_A_B || al == AL_ALL)
        b = a;
    memcpy(sa, a, bytes);
    memcpy(sb, b, bytes);
    for (size_t i = 0; i < n; i++)
        ref_reduce_elem(exp + i * sz, sa, sb, i, dt, op, pd, first_only);
    if (first_only && pd <= 1)
        memcpy(exp, sa, bytes); /* the contract: a plain memcpy, NaN payloads and all */

    unsigned char *o1 = d1, *o2 = two ? d2 : NULL;
    if (al == AL_D1_A || al == AL_D1_A_D2_B || al == AL_ALL)
        o1 = a;
    if (al == AL_D1_B)
        o1 = b;
    if (al == AL_D2_A)
        o2 = a;
    if (al == AL_D1_A_D2_B)
        o2 = b;

    if (first_only)
        orb_kernel_copy(o1, o2, a, n, dt, pd);
    else
        orb_kernel_reduce(o1, o2, a, b, n, dt, op, pd);

    unsigned char *outs[2] = {o1, o2};
    for (int k = 0; k < 2; k++) {
        unsigned char *o = outs[k];
        if (o == NULL)
            continue;
        size_t bad = 0, first_bad = 0;
        for (size_t i = 0; i < n; i++) {
            const unsigned char *g = o + i * sz, *e = exp + i * sz;
            /* float16/bfloat16 NaN results are the canonical NaN, bit for bit; float32/64
             * NaN payloads are whatever the FPU's operand order gives */
            int wide_nan = (dt == ORB_FLOAT32 || dt == ORB_FLOAT64) && ref_is_nan(e, dt);
            int ok = wide_nan ? ref_is_nan(g, dt) : memcmp(g, e, sz) == 0;
            if (!ok && bad++ == 0)
                first_bad = i;
        }
        int guard_ok = 1;
        for (size_t i = 0; i < GUARD; i++)
            guard_ok &= o[bytes + i] == 0xa5;
        CHECK(bad == 0 && guard_ok,
              "%s %s %s pd=%d n=%zu dst2=%d alias=%s off=%d out%d [%s]: %zu wrong (first %zu), "
              "guard %s", first_only ? "copy" : "reduce", orb_dtype_name(dt), orb_op_name(op), pd, n,
              two, alias_names[al], off, k + 1, impl, bad, first_bad, guard_ok ? "ok" : "overwritten");
    }
    free(ba);
    free(bb);
    free(b1);
    free(b2);
    free(sa);
    free(sb);
    free(exp);
}

static void check_matrix(const char *impl)
{
    static const size_t sizes[] = {0, 1, 7, 64, 1000, 4099};
    static const int pds[] = {0, 3};
    long cases = 0;
    for (size_t t = 0; t < NDT; t++)
        for (int op = 0; op < ORB_NUM_OPS; op++)
            for (int p = 0; p < 2; p++)
                for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
                    for (int two = 0; two < 2; two++)
                        for (int al = 0; al < AL_COUNT; al++) {
                            if (!two && (al == AL_D2_A || al == AL_D1_A_D2_B))
                                continue;
                            int off = (int)((s + (size_t)al) % 2);
                            check_case(all_dtypes[t], (orb_op_t)op, pds[p], sizes[s], two, al,
                                       off, 0, impl);
                            cases++;
                        }
    /* copy: the same sizes, in place and not */
    for (size_t t = 0; t < NDT; t++)
        for (int p = 0; p < 2; p++)
            for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
                for (int two = 0; two < 2; two++)
                    for (int al = 0; al < 4; al++) {
                        if (!two && al == AL_D2_A)
                            continue;
                        if (al == AL_D1_B)
                            continue;
                        check_case(all_dtypes[t], ORB_SUM, pds[p], sizes[s], two, al, (int)(s % 2), 1, impl);
                        cases++;
                    }
    printf("matrix [%s]: %ld cases\n", impl, cases);
}

/* Every float16 / bfloat16 pattern to float and back; every tie between neighbours and
 * its two neighbouring floats; a wide sample of other floats. */
static void check_conversions(void)
{
    long checked = 0;
    for (uint32_t i = 0; i < 65536; i++) {
        uint16_t h = (uint16_t)i;
        for (int fmt = 0; fmt < 2; fmt++) {
            double v = fmt ? ref_bf16_value(h) : ref_half_value(h);
            float f = fmt ? orb_bf16_to_float(h) : orb_half_to_float(h);
            if (isnan(v)) {
                CHECK(isnan(f) && !signbit(f) == !(h & 0x8000), "%s %04x -> NaN", fmt ? "bf16" : "half", h);
                uint16_t back = fmt ? orb_float_to_bf16(f) : orb_float_to_half(f);
                /* NaN survives the round trip, quieted, sign kept */
                uint16_t quiet = fmt ? 0x0040 : 0x0200;
                CHECK(back == (h | quiet), "%s NaN %04x round trip gives %04x", fmt ? "bf16" : "half", h, back);
            } else {
                CHECK((double)f == v && !signbit(f) == !(h & 0x8000), "%s %04x -> %a, want %a",
                      fmt ? "bf16" : "half", h, (double)f, v);
                uint16_t back = fmt ? orb_float_to_bf16(f) : orb_float_to_half(f);
                CHECK(back == h, "%s %04x round trip gives %04x", fmt ? "bf16" : "half", h, back);
            }
            checked++;
        }
    }
    /* midpoints between neighbours (exact in float32), and one float either side */
    for (int fmt = 0; fmt < 2; fmt++) {
        uint16_t top = fmt ? 0x7f80 : 0x7c00;
        for (uint16_t h = 0; h < top; h++) {
            double lo = fmt ? ref_bf16_value(h) : ref_half_value(h);
            double hi = h + 1 == top ? (fmt ? ldexp(1.0, 128) : 65536.0)
                                     : (fmt ? ref_bf16_value(h + 1) : ref_half_value(h + 1));
            float mid = (float)((lo + hi) / 2);
            if ((double)mid != (lo + hi) / 2)
                continue; /* bf16 past float's range: 2^128 side */
            for (int sgn = 0; sgn < 2; sgn++) {
                float m = sgn ? -mid : mid;
                float cand[3] = {m, nextafterf(m, 0.0f), nextafterf(m, sgn ? -INFINITY : INFINITY)};
                for (int c = 0; c < 3; c++) {
                    uint16_t want = fmt ? ref_bf16_round(cand[c]) : ref_half_round(cand[c]);
                    uint16_t got = fmt ? orb_float_to_bf16(cand[c]) : orb_float_to_half(cand[c]);
                    CHECK(got == want, "%s(%a) = %04x, want %04x", fmt ? "bf16" : "half", (double)cand[c], got, want);
                    checked++;
                }
            }
        }
    }
    /* sampled floats: every sign/exponent/top-mantissa prefix with assorted low bits */
    static const uint32_t lows[] = {0, 1, 0x0fff, 0x1000, 0x1001, 0x1fff, 0x7fff, 0x8000, 0x8001};
    for (uint32_t hi = 0; hi < (1u << 16); hi++)
        for (size_t l = 0; l < sizeof lows / sizeof lows[0]; l++) {
            uint32_t u = (hi << 16) | lows[l] | (uint32_t)(rnd() & 0x6000 & -(uint32_t)(l == 0));
            float f;
            memcpy(&f, &u, 4);
            if (isnan(f))
                continue; /* NaN patterns are covered above */
            CHECK(orb_float_to_half(f) == ref_half_round(f), "half(%08x) = %04x, want %04x", u,
                  orb_float_to_half(f), ref_half_round(f));
            CHECK(orb_float_to_bf16(f) == ref_bf16_round(f), "bf16(%08x) = %04x, want %04x", u,
                  orb_float_to_bf16(f), ref_bf16_round(f));
            checked += 2;
        }
    printf("conversions: %ld checked\n", checked);
}

/* Both flavours over every float16 / bfloat16 pattern as a, against a rotated copy as b:
 * outputs must be identical bits, NaN payloads included. */
static void check_flavours_agree(void)
{
    if (orb_kernel_half_select("f16c") != ORB_OK) {
        printf("flavours: f16c not available on this CPU, portable only\n");
        return;
    }
    enum { N = 65536 };
    uint16_t *a = malloc(N * 2), *b = malloc(N * 2), *r1 = malloc(N * 2), *r2 = malloc(N * 2);
    if (!a || !b || !r1 || !r2)
        exit(1);
    long compared = 0, differing = 0;
    for (int rot = 0; rot < 4; rot++) {
        static const unsigned shifts[] = {1, 0x3c00, 0x8000, 12345};
        for (uint32_t i = 0; i < N; i++) {
            a[i] = (uint16_t)i;
            b[i] = (uint16_t)(i + shifts[rot]);
        }
        for (int dti = 0; dti < 2; dti++) {
            orb_dtype_t dt = dti ? ORB_BFLOAT16 : ORB_FLOAT16;
            for (int op = 0; op < ORB_NUM_OPS; op++)
                for (int pd = 0; pd <= 7; pd += 7) {
                    orb_kernel_half_select("portable");
                    orb_kernel_reduce(r1, NULL, a, b, N, dt, (orb_op_t)op, pd);
                    orb_kernel_half_select("f16c");
                    orb_kernel_reduce(r2, NULL, a, b, N, dt, (orb_op_t)op, pd);
                    size_t i = 0;
                    while (i < N && r1[i] == r2[i])
                        i++;
                    differing += i != N;
                    CHECK(i == N, "%s %s pd=%d shift %u: portable %04x f16c %04x at a=%04x b=%04x",
                          orb_dtype_name(dt), orb_op_name(op), pd, shifts[rot], r1[i % N], r2[i % N],
                          a[i % N], b[i % N]);
                    compared += N;
                }
        }
    }
    orb_kernel_half_select("auto");
    printf("flavours: %ld results compared, %ld runs differ\n", compared, differing);
    free(a);
    free(b);
    free(r1);
    free(r2);
}

/* orb_kernel_copy_stream against memcpy: every alignment of dst to the 16-byte boundary its
 * streaming stores need, sizes around the 64-byte body, guards on both sides. */
static void check_stream(void)
{
    static const size_t sizes[] = {0, 1, 3, 15, 16, 17, 63, 64, 65, 127, 129, 1000, 65536 + 5};
    long cases = 0;
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++)
        for (int doff = 0; doff < 16; doff++)
            for (int soff = 0; soff < 2; soff++)
                for (int two = 0; two < 2; two++) {
                    const size_t n = sizes[k], cap = n + 2 * GUARD + 32;
                    unsigned char *src = malloc(cap), *d1 = malloc(cap), *d2 = malloc(cap);
                    if (!src || !d1 || !d2) {
                        fprintf(stderr, "out of memory\n");
                        exit(1);
                    }
                    for (size_t i = 0; i < cap; i++)
                        src[i] = (unsigned char)(i * 131 + k * 7 + 1);
                    memset(d1, 0xa5, cap);
                    memset(d2, 0xa5, cap);
                    const unsigned char *s = src + GUARD + soff;
                    unsigned char *o1 = d1 + GUARD + doff, *o2 = d2 + GUARD;
                    orb_kernel_copy_stream(o1, two ? o2 : NULL, s, n, ORB_UINT8, 0);
                    int ok = memcmp(o1, s, n) == 0 && (!two || memcmp(o2, s, n) == 0);
                    for (size_t i = 0; i < GUARD + (size_t)doff; i++) /* before dst1 */
                        ok &= d1[i] == 0xa5;
                    for (size_t i = 0; i < GUARD; i++) /* past both; all of dst2 when unused */
                        ok &= o1[n + i] == 0xa5 && o2[n + i] == 0xa5 && (two || n == 0 || o2[i % n] == 0xa5);
                    CHECK(ok, "copy_stream n=%zu dst offset %d src offset %d dst2=%d: wrong bytes or a guard "
                              "overwritten", n, doff, soff, two);
                    cases++;
                    free(src);
                    free(d1);
                    free(d2);
                }
    /* float32 with avg: the division pass (falls back to the plain kernel) */
    float a[37], o[37];
    for (int i = 0; i < 37; i++)
        a[i] = (float)(i * 3);
    orb_kernel_copy_stream(o, NULL, a, 37, ORB_FLOAT32, 3);
    int ok = 1;
    for (int i = 0; i < 37; i++)
        ok &= o[i] == (float)(i * 3) / 3.0f;
    CHECK(ok, "copy_stream float32 postdiv 3: not divided");
    printf("copy_stream: %ld cases\n", cases + 1);
}

int main(void)
{
    ref_init();
    printf("half implementation picked: %s\n", orb_kernel_half_impl());
    check_conversions();
    check_flavours_agree();
    check_stream();
    static const char *const impls[] = {"portable", "f16c"};
    for (int k = 0; k < 2; k++) {
        if (orb_kernel_half_select(impls[k]) != ORB_OK) {
            printf("matrix [%s]: not available on this CPU\n", impls[k]);
            continue;
        }
        check_matrix(impls[k]);
    }
    orb_kernel_half_select("auto");
    if (failures) {
        printf("%ld failures\n", failures);
        return 1;
    }
    printf("all passed\n");
    return 0;
}
