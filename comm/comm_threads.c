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
    char err[ORB_ERRMSG_BYTES]; /* why this rank failed; orb_comm_init_all puts its name before it */
} init_all_arg_t;

static void *init_all_thread(void *p)
{
    init_all_arg_t *a = p;
    a->st = orb_comm_init_rank(a->slot, a->n, a->id, a->rank);
    if (a->st == ORB_OK && a->device >= 0) {
        char why[ORB_ERRMSG_BYTES] = "";
        a->st = orb_cuda_comm_init_device(*a->slot, a->device, why, sizeof why);
        if (a->st != ORB_OK) {
            snprintf(a->err, sizeof a->err, "rank %d: devices[%d]=%d: %.*s; pass a device that exists, or -1 for "
                     "a host rank", a->rank, a->rank, a->device, ORB_ERRMSG_BYTES - 160,
                     why[0] ? why : orb_strerror(a->st));
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
    if (!comms) {
        orb_set_thread_error("orb_comm_init_all: comms (the output array) is NULL; pass room for ndev communicators");
        return ORB_ERR_INVALID_ARG;
    }
    if (ndev < 1 || ndev > 256) {
        orb_set_thread_error("orb_comm_init_all: ndev=%d is out of range 1..256", ndev);
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
    if (st != ORB_OK) {
        char why[ORB_ERRMSG_BYTES];
        snprintf(why, sizeof why, "%s", orb_thread_error());
        orb_set_thread_error("orb_comm_init_all: %s", why);
        return st;
    }
    init_all_arg_t *args = calloc((size_t)ndev, sizeof *args);
    pthread_t *th = calloc((size_t)ndev, sizeof *th);
    if (!args || !th) {
        free(args);
        free(th);
        orb_set_thread_error("orb_comm_init_all: out of memory for the threads of %d ranks; free memory", ndev);
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
            snprintf(args[i].err, sizeof args[i].err, "cannot start the thread of rank %d of %d: %s", i, ndev,
                     strerror(e));
            break;
        }
    }
    st = started < ndev ? ORB_ERR_SYSTEM : ORB_OK;
    /* The first failure's text, behind this function's name (not logged again: the rank's
     * thread logged it). */
    if (st != ORB_OK)
        snprintf(orb_thread_error(), ORB_ERRMSG_BYTES, "orb_comm_init_all: %.*s", ORB_ERRMSG_BYTES - 32,
                 args[started].err);
    for (int i = 0; i < started; i++) {
        pthread_join(th[i], NULL);
        if (args[i].st != ORB_OK && st == ORB_OK) {
            st = args[i].st;
            snprintf(orb_thread_error(), ORB_ERRMSG_BYTES, "orb_comm_init_all: %.*s", ORB_ERRMSG_BYTES - 32,
                     args[i].err);
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

