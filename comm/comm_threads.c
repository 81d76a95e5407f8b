/* orb_comm_init_all: every rank of a communicator as a thread of this process (one per
 * device, or host ranks), as NCCL's ncclCommInitAll; how the project's tests run many ranks
 * on one GPU. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/comm_impl.h"
#include "comm/cuda_hooks.h"

typedef struct {
    orb_comm_t *slot;
    int n, rank;
    int device; /* -1: host rank */
    orb_unique_id_t id;
    orb_status_t st;
    char err[ORB_ERRMSG_BYTES];
} init_all_arg_t;

static void *init_all_thread(void *p)
{
    init_all_arg_t *a = p;
    a->st = orb_comm_init_rank(a->slot, a->n, a->id, a->rank);
    if (a->st == ORB_OK && a->device >= 0) {
        a->st = orb_cuda_comm_init_device(*a->slot, a->device, a->err, sizeof a->err);
        if (a->st != ORB_OK) {
            orb_comm_destroy(*a->slot);
            *a->slot = NULL;
        }
        return NULL;
    }
    if (a->st != ORB_OK)
        snprintf(a->err, sizeof a->err, "%s", orb_comm_last_error(NULL));
    return NULL;
}

orb_status_t orb_comm_init_all(orb_comm_t *comms, int ndev, const int *devices)
{
    if (!comms || ndev < 1 || ndev > 256) {
        orb_set_thread_error("orb_comm_init_all: need comms != NULL and ndev in 1..256 (ndev=%d)", ndev);
        return ORB_ERR_INVALID_ARG;
    }
#ifndef ORB_HAVE_CUDA
    if (devices) {
        for (int i = 0; i < ndev; i++)
            if (devices[i] >= 0) {
                orb_set_thread_error("orb_comm_init_all: devices[%d]=%d: this build of orbit has no CUDA support; "
                                     "pass devices=NULL (or -1 entries) for host ranks", i, devices[i]);
                return ORB_ERR_UNSUPPORTED;
            }
    }
#endif
    orb_unique_id_t id;
    orb_status_t st = orb_get_unique_id(&id);
    if (st != ORB_OK)
        return st;
    init_all_arg_t *args = calloc((size_t)ndev, sizeof *args);
    pthread_t *th = calloc((size_t)ndev, sizeof *th);
    if (!args || !th) {
        free(args);
        free(th);
        return ORB_ERR_NO_MEMORY;
    }
    int started = 0;
    for (; started < ndev; started++) {
        int i = started;
        args[i] = (init_all_arg_t){.slot = &comms[i], .n = ndev, .rank = i, .id = id,
                                   .device = devices ? devices[i] : -1};
        int e = pthread_create(&th[i], NULL, init_all_thread, &args[i]);
        if (e != 0) {
            /* The ranks already started wait for this one at the rendezvous and have no
             * communicator yet to abort: they fail when ORBIT_INIT_TIMEOUT runs out. */
            args[i].st = ORB_ERR_SYSTEM;
            snprintf(args[i].err, sizeof args[i].err,
                     "orb_comm_init_all: cannot start the thread of rank %d of %d: %s", i, ndev, strerror(e));
            break;
        }
    }
    st = started < ndev ? ORB_ERR_SYSTEM : ORB_OK;
    if (st != ORB_OK)
        snprintf(orb_thread_error(), ORB_ERRMSG_BYTES, "%s", args[started].err);
    for (int i = 0; i < started; i++) {
        pthread_join(th[i], NULL);
        if (args[i].st != ORB_OK && st == ORB_OK) {
            st = args[i].st;
            snprintf(orb_thread_error(), ORB_ERRMSG_BYTES, "%s", args[i].err);
        }
    }
    if (st != ORB_OK)
        for (int i = 0; i < started; i++)
            if (args[i].st == ORB_OK)
                orb_comm_destroy(comms[i]);
    free(args);
    free(th);
    return st;
}

