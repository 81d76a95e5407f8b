/* allgather_bench: every rank ends with every rank's buffer, in rank order. The size is
 * the whole output; count is what each rank sends. */
#include "harness.h"
#include "layout.h"
#include "pattern.h"

/* A ring passes (n-1)/n of the output through each link. */
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

static double expected(const bench_counts_t *c, orb_op_t op, int root, int rank, int nranks,
                       size_t j)
{
    (void)op;
    (void)root;
    (void)rank;
    return bench_pattern_input(BENCH_OP_NONE, (int)(j / c->count), nranks, j % c->count);
}

static const bench_coll_t allgather = {
    .name = "allgather",
    .kind = BENCH_ALLGATHER,
    .size_means = "the whole output; count is what each rank sends",
    .has_inplace = 1,
    .busbw_factor = busbw_factor,
    .counts = bench_counts_gathered,
    .place = bench_place_gathered,
    .result_elems = result_elems,
    .expected = expected,
};

int main(int argc, char **argv)
{
    return bench_main(argc, argv, &allgather);
}
