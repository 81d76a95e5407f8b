/* Deterministic mode on device buffers: tests/coll/test_determinism.c compiled in unchanged,
 * its orb_* calls redirected to the staging layer (stage.h), so every device result is
 * compared bit for bit with the same rank-order fold as the host test's (and so the host
 * and device results are the same bits). orbitrun -n N, ORBIT_DETERMINISTIC=1. Each rank
 * uses GPU LOCAL_RANK modulo the device count. Exits 77 without a CUDA device. */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>

#include "orbit.h"
#include "stage.h"

#include "stage_redirect.h"
#define main test_determinism_main
#include "test_determinism.c"
#undef main

int main(void)
{
    if (stage_skip_without_device())
        return 77;
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
    stage_t *s = stage_create(stage_arena_for(ws ? atoi(ws) : 1), 0, err, sizeof err);
    if (!s) {
        fprintf(stderr, "FAIL: %s\n", err);
        return 1;
    }
    stage_bind(s);
    int ret = test_determinism_main();
    stage_destroy(s);
    return ret;
}
