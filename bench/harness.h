/* The shared benchmark harness: each *_bench.c describes one collective in a
 * bench_coll_t and hands it to bench_main, which parses the flags, brings up the
 * backend, sweeps the sizes, times, checks and prints the nccl-tests table. */
#ifndef BENCH_HARNESS_H
#define BENCH_HARNESS_H

#include <stddef.h>

#include "orbit.h"

typedef enum {
    BENCH_ALLREDUCE,
    BENCH_BROADCAST,
    BENCH_REDUCE,
    BENCH_GATHER,
    BENCH_ALLGATHER,
    BENCH_REDUCE_SCATTER,
    BENCH_SENDRECV,
    BENCH_ALLTOALL,
    BENCH_SCATTER,
} bench_coll_kind_t;

/* One collective call as a backend sees it. */
typedef struct {
    bench_coll_kind_t kind;
    const void *sendbuf;
    void *recvbuf;
    size_t count; /* the count argument of the call (per rank or per block for gather-like calls) */
    orb_dtype_t dtype;
    orb_op_t op;
    int root;
    int inplace;
    void *stream;       /* cudaStream_t for device buffers, NULL for host buffers */
    const void *result; /* set by a backend whose in-place result is not at recvbuf */
} bench_call_t;

/* Element counts for one row of the table. */
typedef struct {
    size_t bytes;      /* the size column: what algbw divides by */
    size_t count;      /* the count argument, also the count column */
    size_t send_elems; /* elements each rank's sendbuf holds */
    size_t recv_elems; /* elements each rank's recvbuf holds */
} bench_counts_t;

typedef struct {
    const char *name; /* "allreduce": the program is <name>_bench */
    bench_coll_kind_t kind;
    const char *size_means; /* for --help: what the size column measures */
    int uses_op;
    int uses_root;
    int has_inplace;
    int min_ranks; /* 0 means 1 */
    /* busbw / algbw, as nccl-tests defines it, so numbers compare across rank counts. */
    double (*busbw_factor)(int nranks);
    /* Counts for a requested size; 0 when the size holds less than one element per rank. */
    int (*counts)(size_t bytes, size_t elem_size, int nranks, bench_counts_t *c);
    /* Points call->sendbuf/recvbuf into the two allocations for this placement. */
    void (*place)(bench_call_t *call, void *sendbuf, void *recvbuf, size_t elem_size,
                  int rank, int inplace);
    /* How many result elements rank checks, and the value element j must hold. */
    size_t (*result_elems)(const bench_counts_t *c, int rank, int root);
    double (*expected)(const bench_counts_t *c, orb_op_t op, int root, int rank,
                       int nranks, size_t j);
} bench_coll_t;

int bench_main(int argc, char **argv, const bench_coll_t *coll);

#endif
