#include "backend.h"

const bench_backend_ops_t *bench_backend_select(bench_backend_kind_t kind, const char **why)
{
    *why = NULL;
    switch (kind) {
    case BENCH_BACKEND_CUSTOM: return &bench_backend_custom;
    case BENCH_BACKEND_MPI:
#ifdef BENCH_HAVE_MPI
        return &bench_backend_mpi;
#else
        *why = "not built with MPI (libopenmpi-dev was not found when meson ran)";
        return NULL;
#endif
    case BENCH_BACKEND_NCCL:
#ifdef BENCH_HAVE_NCCL
        return &bench_backend_nccl;
#else
        *why = "not built with NCCL/CUDA (meson found no nccl_dep)";
        return NULL;
#endif
    }
    *why = "unknown backend";
    return NULL;
}
