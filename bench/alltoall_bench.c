/* alltoall_bench: block j of rank i's buffer lands in block i of rank j's. The size is each
 * rank's whole send buffer (= its whole receive buffer); count is one block. */
#include "harness.h"
#include "layout.h"
#include "pattern.h"

/* Each rank keeps one block of its n and sends the rest over its link. */
static double busbw_factor(int n)
{
    return (double)(n - 1) / n;
}

static size_t result_elems(const bench_counts_t *c, int rank, int root)
{
    (void)rank;
    (void)root;
    return c->recv_elems;
}

/* Block src of this rank's output is block `rank` of src's input: the source rank and
 * the offset both show in the value. */
static double expected(const bench_counts_t *c, orb_op_t op, int root, int rank, int nranks,
                       size_t j)
{
    (void)op;
    (void)root;
    int src = (int)(j / c->count);
    return bench_pattern_input(BENCH_OP_NONE, src, nranks,
                               (size_t)rank * c->count + j % c->count);
}

static const bench_coll_t alltoall = {
    .name = "alltoall",
    .kind = BENCH_ALLTOALL,
    .size_means = "each rank's whole send buffer; count is one rank's block",
    .has_inplace = 1,
    .busbw_factor = busbw_factor,
    .counts = bench_counts_exchanged,
    .place = bench_place_flat,
    .result_elems = result_elems,
    .expected = expected,
};

int main(int argc, char **argv)
{
    return bench_main(argc, argv, &alltoall);
}
