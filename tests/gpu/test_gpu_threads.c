/* The collective matrix of tests/coll/test_coll.c on device buffers, ranks as threads of
 * one process on one GPU (mode (a) of docs/gpu.md):
 *   test_gpu_threads -n N [--lazy] [--null-stream] [--spread] [test_coll flags: --coll, --quick, --seed, --algo]
 * The communicators come from orb_comm_init_all(comms, N, devices) with every entry the
 * current GPU (--lazy: devices NULL, so each rank binds on its first device call; --spread:
 * rank r on GPU r modulo the count, several GPUs in one process). Each rank
 * is a thread that runs test_coll.c's main on its own stream, so the ranks' kernels run side
 * by side. test_coll.c is compiled in unchanged: its rank globals become per-thread through
 * thread_ranks.h and its orb_* calls go through the staging layer (stage.h). Exits 77
 * without a CUDA device. */
#include <cuda_runtime_api.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "orbit.h"
#include "stage.h"

#include "thread_ranks.h"
#include "stage_redirect.h"
#define main test_coll_main
#include "test_coll.c"
#undef main
#include "thread_ranks_end.h"

typedef struct {
    orb_comm_t comm;
    int device;
    stage_t *stage;
    int argc;
    char **argv;
    int ret;
} rank_arg_t;

static void *rank_thread(void *p)
{
    rank_arg_t *a = p;
    tv = (rank_vars_t){.comm = a->comm};
    cudaSetDevice(a->device);
    stage_bind(a->stage);
    a->ret = test_coll_main(a->argc, a->argv);
    return NULL;
}

int main(int argc, char **argv)
{
    if (stage_skip_without_device())
        return 77;
    int n = 2, lazy = 0, null_stream = 0, spread = 0, nargs = 0;
    char **args = calloc((size_t)argc + 1, sizeof *args);
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "-n") && i + 1 < argc)
            n = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--lazy"))
            lazy = 1;
        else if (!strcmp(argv[i], "--null-stream"))
            null_stream = 1;
        else if (!strcmp(argv[i], "--spread")) /* rank r on GPU r mod count: one process, several GPUs */
            spread = 1;
        else if (!strcmp(argv[i], "--algo") && i + 1 < argc)
            setenv("ORBIT_ALGO", argv[++i], 1); /* here, before any thread reads the environment */
        else
            args[nargs++] = argv[i];
    }
    if (n < 1 || n > 16) {
        fprintf(stderr, "usage: test_gpu_threads -n N (1..16) [--lazy] [--null-stream] [--spread] [test_coll flags]\n");
        return 2;
    }
    int dev = 0, ndev = 1;
    cudaGetDevice(&dev);
    if (spread && (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev < 1))
        ndev = 1;
    orb_comm_t *comms = calloc((size_t)n, sizeof *comms);
    int *devices = calloc((size_t)n, sizeof *devices);
    rank_arg_t *ra = calloc((size_t)n, sizeof *ra);
    pthread_t *th = calloc((size_t)n, sizeof *th);
    if (!comms || !devices || !ra || !th)
        return 1;
    char err[256];
    /* all device memory before any kernel: nothing below waits for another rank's work */
    for (int r = 0; r < n; r++) {
        devices[r] = spread ? r % ndev : dev;
        cudaSetDevice(devices[r]); /* the rank's staging arena lives on its GPU */
        if (!(ra[r].stage = stage_create(stage_arena_for(n), null_stream, err, sizeof err))) {
            fprintf(stderr, "FAIL: %s\n", err);
            return 1;
        }
    }
    cudaSetDevice(dev);
    orb_status_t st = orb_comm_init_all(comms, n, lazy ? NULL : devices);
    if (st != ORB_OK) {
        fprintf(stderr, "FAIL: orb_comm_init_all(%d ranks, %s): %s: %s\n", n, lazy ? "devices NULL" : "devices",
                orb_status_name(st), orb_comm_last_error(NULL));
        return 1;
    }
    for (int r = 0; r < n; r++) {
        ra[r] = (rank_arg_t){comms[r], devices[r], ra[r].stage, nargs, args, 1};
        pthread_create(&th[r], NULL, rank_thread, &ra[r]);
    }
    int ret = 0;
    for (int r = 0; r < n; r++) {
        pthread_join(th[r], NULL);
        if (ra[r].ret != 0)
            ret = 1;
    }
    for (int r = 0; r < n; r++) {
        orb_comm_destroy(comms[r]);
        stage_destroy(ra[r].stage);
    }
    free(comms);
    free(devices);
    free(ra);
    free(th);
    free(args);
    return ret;
}
