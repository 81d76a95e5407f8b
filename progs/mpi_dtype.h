/* orb_dtype_t -> MPI_Datatype: the one table of the programs that run orbit's calls through
 * MPI for comparison (bench/backend_mpi.c, trainer/backend_mpi.c).
 *
 * progs/ holds what programs on the public API share (they see include/orbit.h and their
 * own folder, never liborbit's layers). Not include/: that is orbit's installed API, and
 * orbit does not depend on MPI. Not bench/ or trainer/: both have a backend.h, so neither
 * folder can be on the other's include path. */
#ifndef ORB_PROGS_MPI_DTYPE_H
#define ORB_PROGS_MPI_DTYPE_H

#include <mpi.h>

#include "orbit.h"

/* MPI has no 16-bit float type: float16 and bfloat16 move as 16-bit integers and cannot be
 * reduced. MPI_DATATYPE_NULL: no type for that use (reducing != 0) or an unknown dtype. */
static inline MPI_Datatype orb_mpi_dtype(orb_dtype_t dtype, int reducing)
{
    switch (dtype) {
    case ORB_INT8: return MPI_INT8_T;
    case ORB_UINT8: return MPI_UINT8_T;
    case ORB_INT32: return MPI_INT32_T;
    case ORB_UINT32: return MPI_UINT32_T;
    case ORB_INT64: return MPI_INT64_T;
    case ORB_UINT64: return MPI_UINT64_T;
    case ORB_FLOAT16:
    case ORB_BFLOAT16: return reducing ? MPI_DATATYPE_NULL : MPI_UINT16_T;
    case ORB_FLOAT32: return MPI_FLOAT;
    case ORB_FLOAT64: return MPI_DOUBLE;
    default: return MPI_DATATYPE_NULL;
    }
}

#endif
