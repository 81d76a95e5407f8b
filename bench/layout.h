/* Buffer layouts shared by several collectives: counts per size and where in-place
 * puts each buffer (nccl-tests' conventions, see docs/bench.md). */
#ifndef BENCH_LAYOUT_H
#define BENCH_LAYOUT_H

#include "harness.h"

/* Same count in and out: allreduce, broadcast, reduce, sendrecv. */
int bench_counts_flat(size_t bytes, size_t elem_size, int nranks, bench_counts_t *c);
/* size = whole output, count = per-rank input: gather, allgather. */
int bench_counts_gathered(size_t bytes, size_t elem_size, int nranks, bench_counts_t *c);
/* size = whole input, count = per-rank output: reduce_scatter, scatter. */
int bench_counts_scattered(size_t bytes, size_t elem_size, int nranks, bench_counts_t *c);
/* size = whole input = whole output, count = one block of n: alltoall. */
int bench_counts_exchanged(size_t bytes, size_t elem_size, int nranks, bench_counts_t *c);

/* In-place: sendbuf == recvbuf. */
void bench_place_flat(bench_call_t *call, void *sendbuf, void *recvbuf, size_t elem_size,
                      int rank, int inplace);
/* In-place: sendbuf is rank's slot of recvbuf. */
void bench_place_gathered(bench_call_t *call, void *sendbuf, void *recvbuf, size_t elem_size,
                          int rank, int inplace);
/* In-place: recvbuf is rank's slot of sendbuf. */
void bench_place_scattered(bench_call_t *call, void *sendbuf, void *recvbuf, size_t elem_size,
                           int rank, int inplace);

#endif
