#include "im2col.h"

#include <string.h>

/* Rows here are short (LeNet: 10 to 28 floats), too short for a memcpy call to pay off. */
static inline void copy_row(float *restrict dst, const float *restrict src, int n)
{
    int i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; j++)
            dst[i + j] = src[i + j];
    for (; i < n; i++)
        dst[i] = src[i];
}

static inline void add_row(float *restrict dst, const float *restrict src, int n)
{
    for (int i = 0; i < n; i++)
        dst[i] += src[i];
}

/* For one kernel offset (ki, kj), the output columns ox whose input ix = ox*s - pad + kj
 * falls inside [0, w): [lo, hi). */
static void valid_range(const orb_train_convgeom_t *g, int kj, int *lo, int *hi)
{
    int a = 0, b = g->ow;
    while (a < b && a * g->stride - g->pad + kj < 0)
        a++;
    while (b > a && (b - 1) * g->stride - g->pad + kj >= g->w)
        b--;
    *lo = a;
    *hi = b;
}

void orb_train_im2col(const orb_train_convgeom_t *g, const float *img, float *col, size_t ld, size_t col0)
{
    int k = g->k, s = g->stride;
    for (int c = 0; c < g->c; c++) {
        const float *plane = img + (size_t)c * g->h * g->w;
        for (int ki = 0; ki < k; ki++) {
            for (int kj = 0; kj < k; kj++) {
                float *row = col + ((size_t)(c * k + ki) * k + kj) * ld + col0;
                int lo, hi;
                valid_range(g, kj, &lo, &hi);
                for (int oy = 0; oy < g->oh; oy++) {
                    float *dst = row + (size_t)oy * g->ow;
                    int iy = oy * s - g->pad + ki;
                    if (iy < 0 || iy >= g->h || lo >= hi) {
                        memset(dst, 0, sizeof(float) * (size_t)g->ow);
                        continue;
                    }
                    /* first valid input of this row; ix = base + ox*s stays in bounds */
                    const float *src = plane + (size_t)(iy * g->w + lo * s - g->pad + kj);
                    for (int ox = 0; ox < lo; ox++)
                        dst[ox] = 0.0f;
                    if (s == 1) {
                        copy_row(dst + lo, src, hi - lo);
                    } else {
                        for (int ox = lo; ox < hi; ox++)
                            dst[ox] = src[(ox - lo) * s];
                    }
                    for (int ox = hi; ox < g->ow; ox++)
                        dst[ox] = 0.0f;
                }
            }
        }
    }
}

void orb_train_col2im(const orb_train_convgeom_t *g, const float *col, size_t ld, size_t col0, float *img)
{
    int k = g->k, s = g->stride;
    for (int c = 0; c < g->c; c++) {
        float *plane = img + (size_t)c * g->h * g->w;
        for (int ki = 0; ki < k; ki++) {
            for (int kj = 0; kj < k; kj++) {
                const float *row = col + ((size_t)(c * k + ki) * k + kj) * ld + col0;
                int lo, hi;
                valid_range(g, kj, &lo, &hi);
                for (int oy = 0; oy < g->oh; oy++) {
                    int iy = oy * s - g->pad + ki;
                    if (iy < 0 || iy >= g->h || lo >= hi)
                        continue;
                    const float *src = row + (size_t)oy * g->ow;
                    float *dst = plane + (size_t)(iy * g->w + lo * s - g->pad + kj);
                    if (s == 1) {
                        add_row(dst, src + lo, hi - lo);
                    } else {
                        for (int ox = lo; ox < hi; ox++)
                            dst[(ox - lo) * s] += src[ox];
                    }
                }
            }
        }
    }
}
