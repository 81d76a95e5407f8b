/* reduce_scatter_bench: rank r ends with block r of the reduction of all ranks' buffers.
 * The size is each rank's whole input; count is each rank's output block. */
#include "harness.h"
#include "layout.h"
#include "pattern.h"

/* A ring passes (n-1)/n of the input through each link. */
static double busbw_factor(int n)
{
    return (double)(n - 1) / n;
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
    (void)root;
    return bench_pattern_reduced(op, nranks, (size_t)rank * c->count + j);
}

static const bench_coll_t reduce_scatter = {
    .name = "reduce_scatter",
    .kind = BENCH_REDUCE_SCATTER,
    .size_means = "each rank's whole input; count is each rank's output block",
    .uses_op = 1,
    .has_inplace = 1,
    .busbw_factor = busbw_factor,
    .counts = bench_counts_scattered,
    .place = bench_place_scattered,
    .result_elems = result_elems,
    .expected = expected,
};

int main(int argc, char **argv)
{
    return bench_main(argc, argv, &reduce_scatter);
}
