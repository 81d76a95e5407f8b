/* scatter_bench: block i of the root's buffer lands in rank i's. The size is the root's
 * whole input (as gather's is its whole output); count is what each rank receives. */
#include "harness.h"
#include "layout.h"
#include "pattern.h"

/* The root's link carries all but its own block. */
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

/* Every rank holds its own pattern in its send buffer; only the root's may arrive. */
static double expected(const bench_counts_t *c, orb_op_t op, int root, int rank, int nranks,
                       size_t j)
{
    (void)op;
    return bench_pattern_input(BENCH_OP_NONE, root, nranks, (size_t)rank * c->count + j);
}

static const bench_coll_t scatter = {
    .name = "scatter",
    .kind = BENCH_SCATTER,
    .size_means = "the root's whole input; count is what each rank receives",
    .uses_root = 1,
    .has_inplace = 1,
    .busbw_factor = busbw_factor,
    .counts = bench_counts_scattered,
    .place = bench_place_scattered,
    .result_elems = result_elems,
    .expected = expected,
};

int main(int argc, char **argv)
{
    return bench_main(argc, argv, &scatter);
}
