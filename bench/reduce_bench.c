/* reduce_bench: the root ends with the reduction of all ranks' buffers. */
#include "harness.h"
#include "layout.h"
#include "pattern.h"

/* Each link carries the buffer once, reduced on the way. */
static double busbw_factor(int n)
{
    (void)n;
    return 1.0;
}

/* Only the root's output is defined. */
static size_t result_elems(const bench_counts_t *c, int rank, int root)
{
    return rank == root ? c->count : 0;
}

static double expected(const bench_counts_t *c, orb_op_t op, int root, int rank, int nranks,
                       size_t j)
{
    (void)c;
    (void)root;
    (void)rank;
    return bench_pattern_reduced(op, nranks, j);
}

static const bench_coll_t reduce = {
    .name = "reduce",
    .kind = BENCH_REDUCE,
    .size_means = "each rank's buffer",
    .uses_op = 1,
    .uses_root = 1,
    .has_inplace = 1,
    .busbw_factor = busbw_factor,
    .counts = bench_counts_flat,
    .place = bench_place_flat,
    .result_elems = result_elems,
    .expected = expected,
};

int main(int argc, char **argv)
{
    return bench_main(argc, argv, &reduce);
}
