#include "backend.h"

#include <string.h>

#include "error.h"

orb_status_t orb_train_backend_lookup(const char *name, const orb_train_backend_ops_t **ops)
{
    if (strcmp(name, "custom") == 0 || strcmp(name, "orbit") == 0) {
        *ops = &orb_train_backend_custom_ops;
        return ORB_OK;
    }
    if (strcmp(name, "none") == 0) {
        *ops = &orb_train_backend_none_ops;
        return ORB_OK;
    }
    if (strcmp(name, "mpi") == 0) {
#ifdef ORB_TRAIN_HAVE_MPI
        *ops = &orb_train_backend_mpi_ops;
        return ORB_OK;
#else
        return orb_train_fail(ORB_ERR_UNSUPPORTED,
                              "--backend mpi: this orbit-train was built without MPI (install libopenmpi-dev and reconfigure)");
#endif
    }
    return orb_train_fail(ORB_ERR_INVALID_ARG, "unknown backend '%s' (custom, mpi, none)", name);
}
