/* sendrecv_bench: a ring shift, each rank sends to rank+1 and receives from rank-1.
 * Out-of-place only: sending and receiving one buffer at once is a race in MPI. At least
 * two ranks: orbit does not send to itself (a local copy would be a memcpy bench). */
#include "harness.h"
#include "layout.h"
#include "pattern.h"

static double busbw_factor(int n)
{
    (void)n;
    return 1.0;
}

static size_t result_elems(const bench_counts_t *c, int rank, int root)
{
    (void)rank;
    (void)root;
    return c->count;
}

static double expected(const bench_counts_t *c, orb_op_t op, int root, int rank, int nranks,
                       size_t j)
{
    (void)c;
    (void)op;
    (void)root;
    return bench_pattern_input(BENCH_OP_NONE, (rank + nranks - 1) % nranks, nranks, j);
}

static const bench_coll_t sendrecv = {
    .name = "sendrecv",
    .kind = BENCH_SENDRECV,
    .size_means = "the buffer each rank sends",
    .min_ranks = 2,
    .busbw_factor = busbw_factor,
    .counts = bench_counts_flat,
    .place = bench_place_flat,
    .result_elems = result_elems,
    .expected = expected,
};

int main(int argc, char **argv)
{
    return bench_main(argc, argv, &sendrecv);
}
