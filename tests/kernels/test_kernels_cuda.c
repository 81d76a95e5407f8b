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
static void check_case(orb_dtype_t dt, orb_op_t op, int pd, size_t n, int two, int al, int off,
                       int first_only)
{
    size_t sz = orb_dtype_size(dt), bytes = n * sz, cap = bytes + GUARD + 16;
    unsigned char *ha = malloc(cap), *hb = malloc(cap), *exp = malloc(cap), *got = malloc(cap);
    unsigned char *ga, *gb, *g1, *g2;
    if (!ha || !hb || !exp || !got)
        exit(1);
    CUDA_OK(cudaMalloc((void **)&ga, cap));
    CUDA_OK(cudaMalloc((void **)&gb, cap));
    CUDA_OK(cudaMalloc((void **)&g1, cap));
    CUDA_OK(cudaMalloc((void **)&g2, cap));
    memset(ha, 0xa5, cap);
    memset(hb, 0xa5, cap);
    fill(ha + off * sz, n, dt);
    fill(hb + off * sz, n, dt);
    int same_ab = al == AL_A_B || al == AL_ALL;
    const unsigned char *ra = ha + off * sz, *rb = same_ab ? ra : hb + off * sz;
    for (size_t i = 0; i < n; i++)
        ref_reduce_elem(exp + i * sz, ra, rb, i, dt, op, pd, first_only);
    if (first_only && pd <= 1)
        memcpy(exp, ra, bytes);
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
    CUDA_OK(cudaFree(ga));
    CUDA_OK(cudaFree(gb));
    CUDA_OK(cudaFree(g1));
    CUDA_OK(cudaFree(g2));
    free(ha);
    free(hb);
    free(exp);
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
    /* the CPU test's sizes plus one that fills many blocks with the unrolled loop */
    static const size_t sizes[] = {0, 1, 7, 64, 1000, 4099, 1 << 20};
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
