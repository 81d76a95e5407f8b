/* A build without CUDA: device pointers cannot be told apart, and a stream means the caller
 * expected a device path this build does not have. */
#include "comm/coll_cuda.h"
#include "comm/comm_impl.h"

int orb_cuda_any_device_ptr(const void *a, const void *b)
{
    (void)a;
    (void)b;
    return 0;
}

orb_status_t orb_cuda_admit(orb_prepared_t *p, int n)
{
    (void)n;
    return orb_comm_fail(p->comm, ORB_ERR_UNSUPPORTED,
                         "%s: rank %d: stream is not NULL, but this build of orbit has no CUDA support and runs "
                         "host buffers only (pass NULL; the call blocks), or rebuild with -Dcuda=enabled",
                         orb_coll_fn_name(p->a.coll), p->comm->rank);
}

/* Never reached: no call is admitted. */
orb_status_t orb_cuda_launch(struct orb_comm *c, const orb_prepared_t *p, int n, int defer, int *pending)
{
    (void)p, (void)n, (void)defer, (void)pending;
    return orb_comm_fail(c, ORB_ERR_INTERNAL, "rank %d: a device launch in a build without CUDA", c->rank);
}

orb_status_t orb_cuda_stage(struct orb_comm *c, const orb_prepared_t *p, int n, orb_cuda_staged_t **out)
{
    (void)p, (void)n;
    *out = NULL;
    return orb_comm_fail(c, ORB_ERR_INTERNAL, "rank %d: a device launch in a build without CUDA", c->rank);
}

orb_status_t orb_cuda_fire(orb_cuda_staged_t *g, int defer, int *pending)
{
    (void)g, (void)defer, (void)pending;
    return ORB_OK; /* nothing can have been staged */
}

void orb_cuda_drop(orb_cuda_staged_t *g) { (void)g; }

struct orb_comm *orb_cuda_staged_comm(const orb_cuda_staged_t *g)
{
    (void)g;
    return NULL;
}

orb_status_t orb_cuda_finish(struct orb_comm *c, const char *fn)
{
    return orb_comm_fail(c, ORB_ERR_INTERNAL, "%s: rank %d: a device wait in a build without CUDA", fn, c->rank);
}
