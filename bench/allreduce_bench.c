/* allreduce_bench: every rank ends with the reduction of all ranks' buffers. */
#include "harness.h"
#include "layout.h"
#include "pattern.h"

/* A ring moves 2(n-1)/n of the buffer through each link (nccl-tests' busbw). */
static double busbw_factor(int n)
{
    return 2.0 * (n - 1) / n;
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
    (void)root;
    (void)rank;
    return bench_pattern_reduced(op, nranks, j);
}

static const bench_coll_t allreduce = {
    .name = "allreduce",
    .kind = BENCH_ALLREDUCE,
    .size_means = "each rank's buffer",
    .uses_op = 1,
    .has_inplace = 1,
    .busbw_factor = busbw_factor,
    .counts = bench_counts_flat,
    .place = bench_place_flat,
    .result_elems = result_elems,
    .expected = expected,
};

int main(int argc, char **argv)
{
    return bench_main(argc, argv, &allreduce);
}
