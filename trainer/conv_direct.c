/* Direct convolution on padded planes, AVX2 + FMA (conv_direct.h). A tile is 4 output
 * channels x 24 consecutive outputs of the WIDE layout (3 vectors): 12 accumulators, and for
 * each (input channel, ki, kj) 3 unaligned loads, 4 broadcasts and 12 FMAs. Input slices are
 * read straight from the padded planes (output f reads plane offset f + ki * wp + kj), so
 * nothing is copied into a column matrix and nothing is packed: im2col + SGEMM spent about a
 * third of its time on those copies for ResNet's 16- and 32-channel layers. */
#include "conv_direct.h"

#include <string.h>

#define TILE 24 /* outputs per tile: 3 vectors of 8 */
#define COB 4   /* output channels per tile */

#if defined(__x86_64__) && defined(__GNUC__) && !defined(ORB_TRAIN_NO_CLONES)
#include <immintrin.h>
#define HAVE_DIRECT 1
#else
#define HAVE_DIRECT 0
#endif

int orb_train_conv_direct_usable(int k, int co, size_t P)
{
#if HAVE_DIRECT
    /* 1x1 convolutions are plain GEMMs already; fewer than 4 tiles of outputs (7x7 planes)
     * lose more to the overlapping last tile than the copies cost */
    if (k < 3 || co % COB != 0 || P < 4 * TILE)
        return 0;
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
    (void)k, (void)co, (void)P;
    return 0;
#endif
}

void orb_train_conv_direct_pack(const float *w, float *wr, int co, int ci, int k)
{
    const size_t kk = (size_t)k * k;
    for (int o = 0; o < co; o++)
        for (int c = 0; c < ci; c++)
            for (size_t t = 0; t < kk; t++)
                wr[(((size_t)(o / COB) * ci + (size_t)c) * kk + t) * COB + (size_t)(o % COB)] =
                    w[((size_t)o * ci + (size_t)c) * kk + t];
}

#if HAVE_DIRECT
__attribute__((target("avx2,fma"))) static void direct_avx2(const float *wr, const float *in, int ci, int co, int k,
                                                             int hp, int wp, size_t P, float *out, size_t ld)
{
    const size_t plane = (size_t)hp * wp, kk = (size_t)k * k;
    for (size_t f0 = 0; f0 < P; f0 += TILE) {
        /* the last tile ends at P, recomputing a few outputs of the one before (same sums in
         * the same order: the same bits) rather than reading or writing past the image */
        const size_t f = f0 + TILE <= P ? f0 : P - TILE;
        for (int cb = 0; cb < co / COB; cb++) {
            __m256 a00 = _mm256_setzero_ps(), a01 = a00, a02 = a00, a10 = a00, a11 = a00, a12 = a00;
            __m256 a20 = a00, a21 = a00, a22 = a00, a30 = a00, a31 = a00, a32 = a00;
            const float *w = wr + (size_t)cb * ci * kk * COB;
            for (int c = 0; c < ci; c++) {
                const float *ip = in + (size_t)c * plane + f;
                for (int ki = 0; ki < k; ki++)
                    for (int kj = 0; kj < k; kj++, w += COB) {
                        const float *q = ip + (size_t)ki * wp + (size_t)kj;
                        const __m256 x0 = _mm256_loadu_ps(q), x1 = _mm256_loadu_ps(q + 8), x2 = _mm256_loadu_ps(q + 16);
                        const __m256 w0 = _mm256_broadcast_ss(w), w1 = _mm256_broadcast_ss(w + 1);
                        a00 = _mm256_fmadd_ps(w0, x0, a00);
                        a01 = _mm256_fmadd_ps(w0, x1, a01);
                        a02 = _mm256_fmadd_ps(w0, x2, a02);
                        a10 = _mm256_fmadd_ps(w1, x0, a10);
                        a11 = _mm256_fmadd_ps(w1, x1, a11);
                        a12 = _mm256_fmadd_ps(w1, x2, a12);
                        const __m256 w2 = _mm256_broadcast_ss(w + 2), w3 = _mm256_broadcast_ss(w + 3);
                        a20 = _mm256_fmadd_ps(w2, x0, a20);
                        a21 = _mm256_fmadd_ps(w2, x1, a21);
                        a22 = _mm256_fmadd_ps(w2, x2, a22);
                        a30 = _mm256_fmadd_ps(w3, x0, a30);
                        a31 = _mm256_fmadd_ps(w3, x1, a31);
                        a32 = _mm256_fmadd_ps(w3, x2, a32);
                    }
            }
            float *o = out + (size_t)cb * COB * ld + f;
            _mm256_storeu_ps(o, a00), _mm256_storeu_ps(o + 8, a01), _mm256_storeu_ps(o + 16, a02);
            o += ld;
            _mm256_storeu_ps(o, a10), _mm256_storeu_ps(o + 8, a11), _mm256_storeu_ps(o + 16, a12);
            o += ld;
            _mm256_storeu_ps(o, a20), _mm256_storeu_ps(o + 8, a21), _mm256_storeu_ps(o + 16, a22);
            o += ld;
            _mm256_storeu_ps(o, a30), _mm256_storeu_ps(o + 8, a31), _mm256_storeu_ps(o + 16, a32);
        }
    }
}
#endif

#if HAVE_DIRECT
/* 8 lanes added in a fixed order */
__attribute__((target("avx2,fma"))) static float hsum(__m256 v)
{
    float l[8], s = 0.0f;
    _mm256_storeu_ps(l, v);
    for (int i = 0; i < 8; i++)
        s += l[i];
    return s;
}

/* Four output channels x the three taps of one kernel row: 12 dot products over every output
 * of the group, the same 7 loads per 12 FMAs as the forward tile. */
__attribute__((target("avx2,fma"))) static void dw_avx2(const float *g, size_t ld, const float *in, size_t pimg, int gn,
                                                         int ci, int co, int hp, int wp, size_t P, float *dw,
                                                         int accumulate)
{
    const size_t plane = (size_t)hp * wp, P8 = P / 8 * 8;
    for (int o = 0; o < co; o += COB)
        for (int c = 0; c < ci; c++)
            for (int ki = 0; ki < 3; ki++) {
                __m256 a[COB][3];
                for (int i = 0; i < COB; i++)
                    a[i][0] = a[i][1] = a[i][2] = _mm256_setzero_ps();
                float t[COB][3] = {{0}};
                for (int j = 0; j < gn; j++) {
                    const float *x = in + (size_t)j * pimg + (size_t)c * plane + (size_t)ki * wp;
                    const float *g0 = g + (size_t)o * ld + (size_t)j * P;
                    size_t f = 0;
                    for (; f < P8; f += 8) {
                        const __m256 x0 = _mm256_loadu_ps(x + f), x1 = _mm256_loadu_ps(x + f + 1),
                                     x2 = _mm256_loadu_ps(x + f + 2);
                        for (int i = 0; i < COB; i++) {
                            const __m256 gv = _mm256_loadu_ps(g0 + (size_t)i * ld + f);
                            a[i][0] = _mm256_fmadd_ps(gv, x0, a[i][0]);
                            a[i][1] = _mm256_fmadd_ps(gv, x1, a[i][1]);
                            a[i][2] = _mm256_fmadd_ps(gv, x2, a[i][2]);
                        }
                    }
                    for (; f < P; f++)
                        for (int i = 0; i < COB; i++)
                            for (int kj = 0; kj < 3; kj++)
                                t[i][kj] += g0[(size_t)i * ld + f] * x[f + (size_t)kj];
                }
                for (int i = 0; i < COB; i++)
                    for (int kj = 0; kj < 3; kj++) {
                        float *d = dw + (((size_t)(o + i) * ci + (size_t)c) * 3 + (size_t)ki) * 3 + (size_t)kj;
                        const float v = hsum(a[i][kj]) + t[i][kj];
                        *d = accumulate ? *d + v : v;
                    }
            }
}
#endif

int orb_train_conv_direct_dw_usable(int k, int co, size_t P)
{
    return k == 3 && orb_train_conv_direct_usable(k, co, P);
}

void orb_train_conv_direct_dw(const float *g, size_t ld, const float *in, size_t pimg, int gn, int ci, int co, int hp,
                              int wp, size_t P, float *dw, int accumulate)
{
#if HAVE_DIRECT
    dw_avx2(g, ld, in, pimg, gn, ci, co, hp, wp, P, dw, accumulate);
#else
    (void)g, (void)ld, (void)in, (void)pimg, (void)gn, (void)ci, (void)co, (void)hp, (void)wp, (void)P, (void)dw;
    (void)accumulate;
#endif
}

void orb_train_conv_direct(const float *wr, const float *in, int ci, int co, int k, int hp, int wp, size_t P,
                           float *out, size_t ld)
{
#if HAVE_DIRECT
    direct_avx2(wr, in, ci, co, k, hp, wp, P, out, ld);
#else
    (void)wr, (void)in, (void)ci, (void)co, (void)k, (void)hp, (void)wp, (void)P, (void)out, (void)ld;
#endif
}
