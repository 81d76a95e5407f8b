/* The device executor as the front end (coll_front.c) sees it: calls on device buffers or a
 * stream. Implemented in coll_cuda.c when orbit is built with CUDA, else by coll_nocuda.c,
 * which says what is missing. */
#ifndef ORB_COMM_COLL_CUDA_H
#define ORB_COMM_COLL_CUDA_H

#include "comm/coll_call.h"

/* 1 if a or b (either may be NULL) is device (or managed) memory; 0 for host memory or
 * without CUDA. Both at once: in a host-only process one look at the loader answers both. */
int orb_cuda_any_device_ptr(const void *a, const void *b);

/* Device calls p[0..n), of one communicator or several: sets the device path of every
 * communicator up that has none yet (collective; side by side when one thread drives
 * several), then checks each call's buffers against its communicator's GPU and puts the
 * pointers the kernels use in p[i].in / out. On failure the last error says why. */
orb_status_t orb_cuda_admit(orb_prepared_t *p, int n);

/* Runs admitted calls p[0..n) of communicator c as one kernel on their stream (all must
 * share one): orb_cuda_stage, then orb_cuda_fire. */
orb_status_t orb_cuda_launch(struct orb_comm *c, const orb_prepared_t *p, int n, int defer, int *pending);

/* The two halves, so that a group stages every communicator (allocations, plan uploads) before
 * any kernel of it runs: an allocation is a device-wide synchronisation, which would wait for a
 * kernel already spinning for a peer whose launch comes later in this thread. stage leaves
 * *out NULL when nothing moves. fire launches (and frees) it; a NULL stream returns when the
 * calls are done, or with defer leaves *pending set for orb_cuda_finish (fn names the call in
 * messages). A staged launch holds nothing that must be undone: orb_cuda_drop frees one that
 * will not fire. */
typedef struct orb_cuda_staged orb_cuda_staged_t;
orb_status_t orb_cuda_stage(struct orb_comm *c, const orb_prepared_t *p, int n, orb_cuda_staged_t **out);
orb_status_t orb_cuda_fire(orb_cuda_staged_t *g, int defer, int *pending);
void orb_cuda_drop(orb_cuda_staged_t *g);
struct orb_comm *orb_cuda_staged_comm(const orb_cuda_staged_t *g);
orb_status_t orb_cuda_finish(struct orb_comm *c, const char *fn);

#endif
