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

#include "stage_redirect.h"
#define main test_coll_main
#include "test_coll.c"
#undef main

int main(int argc, char **argv)
{
    if (stage_skip_without_device())
        return 77;
    int null_stream = 0, nargs = 0;
    char **args = calloc((size_t)argc + 1, sizeof *args);
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--null-stream"))
            null_stream = 1;
        else
            args[nargs++] = argv[i];
    }
    const char *lr = getenv("LOCAL_RANK"), *ws = getenv("WORLD_SIZE");
    int ndev = 1;
    cudaGetDeviceCount(&ndev);
    int dev = (lr ? atoi(lr) : 0) % ndev;
    cudaError_t rc;
    if ((rc = cudaSetDevice(dev)) != cudaSuccess) {
        fprintf(stderr, "FAIL: cudaSetDevice(%d): %s\n", dev, cudaGetErrorString(rc));
        return 1;
    }
    char err[256];
    stage_t *s = stage_create(stage_arena_for(ws ? atoi(ws) : 1), null_stream, err, sizeof err);
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
