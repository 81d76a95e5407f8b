/* broadcast_bench: the root's buffer lands on every rank. */
#include "harness.h"
#include "layout.h"
#include "pattern.h"

/* Each link carries the buffer once (a pipelined chain or tree). */
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
    (void)rank;
    return bench_pattern_input(BENCH_OP_NONE, root, nranks, j);
}

static const bench_coll_t broadcast = {
    .name = "broadcast",
    .kind = BENCH_BROADCAST,
    .size_means = "the buffer",
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
    return bench_main(argc, argv, &broadcast);
}
