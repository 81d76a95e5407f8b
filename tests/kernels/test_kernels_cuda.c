/* CUDA kernels against the reference of ref.c: the CPU test's matrix (dtype x op x postdiv
 * x size x outputs x aliasing), with device buffers. Skips (77) without a CUDA device. */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fill.h"
#include "kernels/reduce_cuda.h"
#include "ref.h"

static long failures;

#define CUDA_OK(call)                                                                         \
    do {                                                                                      \
        cudaError_t e_ = (call);                                                              \
        if (e_ != cudaSuccess) {                                                              \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
            exit(1);                                                                          \
        }                                                                                     \
    } while (0)

enum { AL_NONE, AL_D1_A, AL_D1_B, AL_D2_A, AL_D1_A_D2_B, AL_A_B, AL_ALL, AL_COUNT };
static const char *const alias_names[] = {"none", "d1=a", "d1=b", "d2=a", "d1=a,d2=b", "a=b", "d1=a=b"};

#define GUARD 64

/* Device buffers are cudaMalloc'd (256-byte aligned); off shifts them by one element so the
 * scalar head and the unaligned fallback run too. */
/* Inputs and expected results depend on (dtype, op, postdiv, n, offset, a=b, copy) only, not on
 * the outputs or the other aliasings: keep the last few, since the fill and the reference
 * were most of this test's time on the CPU emulator (about 110 s for the 1 Mi-element cases). */
typedef struct {
    int valid;
    orb_dtype_t dt;
    orb_op_t op;
    int pd, off, same_ab, first_only;
    size_t n, cap;
    unsigned char *ha, *hb, *exp;
} inputs_t;

static inputs_t cache[4];
static int cache_next;

static const inputs_t *inputs_for(orb_dtype_t dt, orb_op_t op, int pd, size_t n, int off, int same_ab,
                                  int first_only, size_t cap)
{
    for (int i = 0; i < 4; i++) {
        inputs_t *c = &cache[i];
        if (c->valid && c->dt == dt && c->op == op && c->pd == pd && c->n == n && c->off == off &&
            c->same_ab == same_ab && c->first_only == first_only && c->cap == cap)
            return c;
    }
    inputs_t *c = &cache[cache_next];
    cache_next = (cache_next + 1) % 4;
    free(c->ha);
    free(c->hb);
    free(c->exp);
    *c = (inputs_t){1, dt, op, pd, off, same_ab, first_only, n, cap, malloc(cap), malloc(cap), malloc(cap)};
    if (!c->ha || !c->hb || !c->exp)
        exit(1);
    size_t sz = orb_dtype_size(dt), bytes = n * sz;
    memset(c->ha, 0xa5, cap);
    memset(c->hb, 0xa5, cap);
    fill(c->ha + off * sz, n, dt);
    fill(c->hb + off * sz, n, dt);
    const unsigned char *ra = c->ha + off * sz, *rb = same_ab ? ra : c->hb + off * sz;
    for (size_t i = 0; i < n; i++)
        ref_reduce_elem(c->exp + i * sz, ra, rb, i, dt, op, pd, first_only);
    if (first_only && pd <= 1)
        memcpy(c->exp, ra, bytes);
    return c;
}

/* Device buffers live for the whole run (grown when a case needs more): every case writes
 * all of them before it launches. */
static unsigned char *dev_buf[4];
static size_t dev_cap;

static void check_case(orb_dtype_t dt, orb_op_t op, int pd, size_t n, int two, int al, int off,
                       int first_only)
{
    size_t sz = orb_dtype_size(dt), bytes = n * sz, cap = bytes + GUARD + 16;
    int same_ab = al == AL_A_B || al == AL_ALL;
    const inputs_t *in = inputs_for(dt, op, pd, n, off, same_ab, first_only, cap);
    const unsigned char *ha = in->ha, *hb = in->hb, *exp = in->exp;
    unsigned char *got = malloc(cap);
    if (!got)
        exit(1);
    if (cap > dev_cap) {
        for (int i = 0; i < 4; i++) {
            if (dev_buf[i])
                CUDA_OK(cudaFree(dev_buf[i]));
            CUDA_OK(cudaMalloc((void **)&dev_buf[i], cap));
        }
        dev_cap = cap;
    }
    unsigned char *ga = dev_buf[0], *gb = dev_buf[1], *g1 = dev_buf[2], *g2 = dev_buf[3];
    CUDA_OK(cudaMemcpy(ga, ha, cap, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(gb, hb, cap, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemset(g1, 0xa5, cap));
    CUDA_OK(cudaMemset(g2, 0xa5, cap));

    unsigned char *a = ga + off * sz, *b = same_ab ? a : gb + off * sz;
    unsigned char *o1 = g1 + off * sz, *o2 = two ? g2 + off * sz : NULL;
    if (al == AL_D1_A || al == AL_D1_A_D2_B || al == AL_ALL)
        o1 = a;
    if (al == AL_D1_B)
        o1 = b;
    if (al == AL_D2_A)
        o2 = a;
    if (al == AL_D1_A_D2_B)
        o2 = b;
    orb_status_t st = first_only ? orb_cuda_copy(o1, o2, a, n, dt, pd, NULL)
                                 : orb_cuda_reduce(o1, o2, a, b, n, dt, op, pd, NULL);
    CUDA_OK(cudaDeviceSynchronize());
    if (st != ORB_OK) {
        fprintf(stderr, "FAIL: launch returned %s\n", orb_status_name(st));
        failures++;
    }
    unsigned char *outs[2] = {o1, o2};
    for (int k = 0; k < 2; k++) {
        if (outs[k] == NULL)
            continue;
        CUDA_OK(cudaMemcpy(got, outs[k], bytes + GUARD, cudaMemcpyDeviceToHost));
        size_t bad = 0, first_bad = 0;
        for (size_t i = 0; i < n; i++) {
            const unsigned char *g = got + i * sz, *e = exp + i * sz;
            int wide_nan = (dt == ORB_FLOAT32 || dt == ORB_FLOAT64) && ref_is_nan(e, dt);
            int ok = wide_nan ? ref_is_nan(g, dt) : memcmp(g, e, sz) == 0;
            if (!ok && bad++ == 0)
                first_bad = i;
        }
        int guard_ok = 1;
        for (size_t i = 0; i < GUARD; i++)
            guard_ok &= got[bytes + i] == 0xa5;
        if (bad || !guard_ok) {
            if (failures++ < 20)
                fprintf(stderr, "FAIL %s %s %s pd=%d n=%zu dst2=%d alias=%s off=%d out%d: %zu wrong "
                        "(first %zu), guard %s\n", first_only ? "copy" : "reduce", orb_dtype_name(dt),
                        orb_op_name(op), pd, n, two, alias_names[al], off, k + 1, bad, first_bad,
                        guard_ok ? "ok" : "overwritten");
        }
    }
    free(got);
}

int main(void)
{
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
        printf("SKIP: no CUDA device\n");
        return 77;
    }
    ref_init();
    /* The CPU test's sizes plus one that fills the widest grid the kernels launch (4 blocks of
     * 512 threads per SM, each thread 4 16-byte packs: kernels/reduce_cuda.cu, ORB_CUDA_UNROLL)
     * twice over with 8-byte elements, so the grid-stride loop goes round, and a ragged tail.
     * From the device's SM count: the emulator's stage sets 2 (ORBIT_CUDA_EMU_SMS, meson.build). */
    int sms = 0;
    if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0) != cudaSuccess || sms < 1)
        sms = 1;
    const size_t big = 2 * (size_t)sms * 4 * 512 * 4 * 16 / 8 + 5;
    const size_t sizes[] = {0, 1, 7, 64, 1000, 4099, big};
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
                            check_case(all_dtypes[t], (orb_op_t)op, pds[p], sizes[s], two, al,
                                       (int)((s + (size_t)al) % 2), 0);
                            cases++;
                        }
    for (size_t t = 0; t < NDT; t++)
        for (int p = 0; p < 2; p++)
            for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
                for (int two = 0; two < 2; two++)
                    for (int al = 0; al < 4; al++) {
                        if ((!two && al == AL_D2_A) || al == AL_D1_B)
                            continue;
                        check_case(all_dtypes[t], ORB_SUM, pds[p], sizes[s], two, al, (int)(s % 2), 1);
                        cases++;
                    }
    /* argument checks need no device work */
    if (orb_cuda_reduce(NULL, NULL, NULL, NULL, 1, ORB_FLOAT32, ORB_SUM, 0, NULL) != ORB_ERR_INVALID_ARG ||
        orb_cuda_reduce(NULL, NULL, NULL, NULL, 0, ORB_NUM_DTYPES, ORB_SUM, 0, NULL) != ORB_ERR_INVALID_ARG) {
        fprintf(stderr, "FAIL: bad arguments accepted\n");
        failures++;
    }
    printf("cuda matrix: %ld cases, %ld failures\n", cases, failures);
    return failures ? 1 : 0;
}
