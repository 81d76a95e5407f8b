/* The algorithm builders plan.c dispatches to. Each fills plan->lanes for plan->args.rank. */
#ifndef ORB_COLLECTIVES_ALGOS_H
#define ORB_COLLECTIVES_ALGOS_H

#include "plan.h"

/* Ring position helpers shared by the algorithm files. */
static inline int orb_ring_rank(const orb_plan_args_t *a, int pos)
{
    pos %= a->nranks;
    if (pos < 0)
        pos += a->nranks;
    return a->ring ? a->ring[pos] : pos;
}
int orb_ring_pos(const orb_plan_args_t *a, int rank);

/* Split [0, count) into nparts nearly equal contiguous ranges; range i is [*beg, *end). */
static inline void orb_split(size_t count, int nparts, int i, size_t *beg, size_t *end)
{
    size_t q = count / (size_t)nparts, r = count % (size_t)nparts;
    size_t ui = (size_t)i;
    *beg = ui * q + (ui < r ? ui : r);
    *end = *beg + q + (ui < r ? 1 : 0);
}

orb_status_t orb_ring_allreduce(orb_plan_t *plan);

#endif
