/* The collective matrix of tests/coll/test_coll.c on device buffers, ranks as processes
 * (orbitrun -n N; mode (b) of docs/gpu.md when they share a GPU):
 *   orbitrun -n N -- test_gpu_coll [--null-stream] [test_coll flags: --coll, --algo, --quick, --seed]
 * test_coll.c is compiled in unchanged, its orb_* calls redirected to the staging layer
 * (stage.h), so the inputs, the reference and the checks are the CPU test's own. Each rank
 * uses GPU LOCAL_RANK modulo the device count. Exits 77 without a CUDA device. */
#include <cuda_runtime_api.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "orbit.h"
#include "stage.h"

#define orb_allreduce stage_allreduce
#define orb_broadcast stage_broadcast
#define orb_reduce stage_reduce
#define orb_gather stage_gather
#define orb_allgather stage_allgather
#define orb_reduce_scatter stage_reduce_scatter
#define orb_send stage_send
#define orb_recv stage_recv
#define orb_group_start stage_group_start
#define orb_group_end stage_group_end
#define main test_coll_main
#include "test_coll.c"
#undef main

/* The largest case of the matrix: (1 Mi + 3) elements of 8 bytes, times nranks for the
 * gathers, in-place spans included. */
static size_t arena_for(int n) { return (size_t)8 * ((1u << 20) + 64) * (size_t)(n > 0 ? n : 1) + (1u << 20); }

int main(int argc, char **argv)
{
    int ndev = 0;
    cudaError_t rc = cudaGetDeviceCount(&ndev);
    if (rc != cudaSuccess || ndev == 0) {
        printf("SKIP: no CUDA device: cudaGetDeviceCount returned %s\n",
               rc != cudaSuccess ? cudaGetErrorString(rc) : "0 devices");
        return 77;
    }
    int null_stream = 0, nargs = 0;
    char **args = calloc((size_t)argc + 1, sizeof *args);
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--null-stream"))
            null_stream = 1;
        else
            args[nargs++] = argv[i];
    }
    const char *lr = getenv("LOCAL_RANK"), *ws = getenv("WORLD_SIZE");
    int dev = (lr ? atoi(lr) : 0) % ndev;
    if ((rc = cudaSetDevice(dev)) != cudaSuccess) {
        fprintf(stderr, "FAIL: cudaSetDevice(%d): %s\n", dev, cudaGetErrorString(rc));
        return 1;
    }
    char err[256];
    stage_t *s = stage_create(arena_for(ws ? atoi(ws) : 1), null_stream, err, sizeof err);
    if (!s) {
        fprintf(stderr, "FAIL: %s\n", err);
        return 1;
    }
    stage_bind(s);
    int ret = test_coll_main(nargs, args);
    stage_destroy(s);
    free(args);
    return ret;
}
