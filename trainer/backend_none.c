/* A single process: every collective is the identity. */
#include "backend.h"

static orb_status_t none_init(orb_train_backend_t *be)
{
    be->rank = 0;
    be->world = 1;
    be->local_rank = 0;
    return ORB_OK;
}

static orb_status_t none_allreduce(orb_train_backend_t *be, void *buf, size_t count, orb_dtype_t dtype)
{
    (void)be, (void)buf, (void)count, (void)dtype;
    return ORB_OK;
}

static orb_status_t none_broadcast(orb_train_backend_t *be, void *buf, size_t count, orb_dtype_t dtype,
                                   int root)
{
    (void)be, (void)buf, (void)count, (void)dtype, (void)root;
    return ORB_OK;
}

static void none_destroy(orb_train_backend_t *be)
{
    (void)be;
}

const orb_train_backend_ops_t orb_train_backend_none_ops = {
    .name = "none",
    .init = none_init,
    .allreduce = none_allreduce,
    .broadcast = none_broadcast,
    .reduce = none_broadcast,
    .destroy = none_destroy,
    .abort = none_destroy,
};
