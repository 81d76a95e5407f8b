/* Plan building: dispatch to the algorithm files, lanes, names. */
#include "plan.h"

#include <stdlib.h>
#include <string.h>

#include "algos.h"

static const char *const coll_names[ORB_NUM_COLLS] = {
#define COLL_NAME_(id, name, props) name,
    ORB_COLL_MAP(COLL_NAME_)
#undef COLL_NAME_
};
static const char *const coll_fn_names[ORB_NUM_COLLS] = {
#define COLL_FN_NAME_(id, name, props) "orb_" name,
    ORB_COLL_MAP(COLL_FN_NAME_)
#undef COLL_FN_NAME_
};
static const char *const algo_names[ORB_NUM_ALGOS] = {"ring", "tree", "direct", "hier", "bruck", "ordered", "doubling"};

const char *orb_coll_name(orb_coll_t coll)
{
    return ((unsigned)coll < ORB_NUM_COLLS) ? coll_names[coll] : "unknown-collective";
}

const char *orb_coll_fn_name(orb_coll_t coll)
{
    return ((unsigned)coll < ORB_NUM_COLLS) ? coll_fn_names[coll] : "orb_collective";
}

const char *orb_algo_name(orb_algo_t algo)
{
    return ((unsigned)algo < ORB_NUM_ALGOS) ? algo_names[algo] : "unknown-algo";
}

orb_status_t orb_lane_push(orb_lane_t *lane, const orb_step_t *step)
{
    if (step->count == 0)
        return ORB_OK; /* empty steps are never emitted: every rank drops the same ones */
    if (lane->nsteps == lane->cap) {
        size_t ncap = lane->cap ? 2 * lane->cap : 16;
        orb_step_t *n = realloc(lane->steps, ncap * sizeof *n);
        if (!n)
            return ORB_ERR_NO_MEMORY;
        lane->steps = n;
        lane->cap = ncap;
    }
    lane->steps[lane->nsteps++] = *step;
    return ORB_OK;
}

void orb_plan_free(orb_plan_t *plan)
{
    for (int c = 0; c < ORB_MAX_CHANNELS; c++) {
        free(plan->lanes[c].steps);
        plan->lanes[c].steps = NULL;
        plan->lanes[c].nsteps = plan->lanes[c].cap = 0;
    }
}

void orb_plan_buffer_sizes(orb_coll_t coll, int nranks, int rank, int root, size_t count,
                           size_t *in_count, size_t *out_count)
{
    size_t in = count, out = count;
    switch (orb_coll_planned_as(coll)) {
    case ORB_COLL_BROADCAST:
        in = (rank == root) ? count : 0;
        break;
    case ORB_COLL_REDUCE:
        out = (rank == root) ? count : 0;
        break;
    case ORB_COLL_GATHER:
        out = (rank == root) ? count * (size_t)nranks : 0;
        break;
    case ORB_COLL_ALLGATHER:
        out = count * (size_t)nranks;
        break;
    case ORB_COLL_REDUCE_SCATTER:
        in = count * (size_t)nranks;
        break;
    case ORB_COLL_SEND:
        out = 0;
        break;
    case ORB_COLL_RECV:
        in = 0;
        break;
    case ORB_COLL_BARRIER:
        in = out = 1; /* a 1-element all-reduce on the executor's own buffer */
        break;
    case ORB_COLL_ALLTOALL:
        in = out = count * (size_t)nranks;
        break;
    case ORB_COLL_SCATTER:
        in = (rank == root) ? count * (size_t)nranks : 0;
        break;
    case ORB_COLL_ALLTOALLV:
        in = out = 0; /* from the vectors: orb_plan_vec_sizes */
        break;
    default:
        break;
    }
    *in_count = in;
    *out_count = out;
}

/* Table of builders: [coll][algo], NULL where the pair does not exist. */
typedef orb_status_t (*orb_algo_build_fn)(orb_plan_t *plan);

static orb_algo_build_fn builder(orb_coll_t coll, orb_algo_t algo)
{
    if ((unsigned)coll >= ORB_NUM_COLLS || (unsigned)algo >= ORB_NUM_ALGOS)
        return NULL;
    coll = orb_coll_planned_as(coll);
    static const orb_algo_build_fn table[ORB_NUM_COLLS][ORB_NUM_ALGOS] = {
        [ORB_COLL_ALLREDUCE] = {[ORB_ALGO_RING] = orb_ring_allreduce, [ORB_ALGO_TREE] = orb_tree_allreduce,
                                [ORB_ALGO_HIER] = orb_hier_allreduce, [ORB_ALGO_DIRECT] = orb_direct_allreduce,
                                [ORB_ALGO_ORDERED] = orb_ordered_reduce, [ORB_ALGO_DOUBLING] = orb_doubling_allreduce},
        [ORB_COLL_BROADCAST] = {[ORB_ALGO_RING] = orb_ring_broadcast, [ORB_ALGO_TREE] = orb_tree_broadcast},
        [ORB_COLL_REDUCE] = {[ORB_ALGO_RING] = orb_ring_reduce, [ORB_ALGO_TREE] = orb_tree_reduce,
                             [ORB_ALGO_ORDERED] = orb_ordered_reduce},
        [ORB_COLL_GATHER] = {[ORB_ALGO_RING] = orb_ring_gather, [ORB_ALGO_DIRECT] = orb_direct_gather},
        [ORB_COLL_ALLGATHER] = {[ORB_ALGO_RING] = orb_ring_allgather, [ORB_ALGO_BRUCK] = orb_bruck_allgather},
        [ORB_COLL_REDUCE_SCATTER] = {[ORB_ALGO_RING] = orb_ring_reduce_scatter,
                                     [ORB_ALGO_ORDERED] = orb_ordered_reduce,
                                     [ORB_ALGO_DOUBLING] = orb_doubling_reduce_scatter},
        [ORB_COLL_SEND] = {[ORB_ALGO_DIRECT] = orb_direct_send},
        [ORB_COLL_RECV] = {[ORB_ALGO_DIRECT] = orb_direct_recv},
        [ORB_COLL_BARRIER] = {[ORB_ALGO_RING] = orb_ring_allreduce, [ORB_ALGO_DOUBLING] = orb_doubling_allreduce},
        [ORB_COLL_ALLTOALL] = {[ORB_ALGO_DIRECT] = orb_direct_alltoall, [ORB_ALGO_BRUCK] = orb_bruck_alltoall,
                               [ORB_ALGO_HIER] = orb_hier_alltoall},
        [ORB_COLL_ALLTOALLV] = {[ORB_ALGO_DIRECT] = orb_direct_alltoallv},
        [ORB_COLL_SCATTER] = {[ORB_ALGO_RING] = orb_ring_scatter, [ORB_ALGO_DIRECT] = orb_direct_scatter},
    };
    return table[coll][algo];
}

int orb_plan_algo_supported(orb_coll_t coll, orb_algo_t algo) { return builder(coll, algo) != NULL; }

orb_status_t orb_plan_build(orb_plan_t *plan, const orb_plan_args_t *args)
{
    memset(plan, 0, sizeof *plan);
    if (args->nranks < 1 || args->rank < 0 || args->rank >= args->nranks || args->nchannels < 1 ||
        args->nchannels > ORB_MAX_CHANNELS || args->chunk_elems < 1)
        return ORB_ERR_INVALID_ARG;
    orb_algo_build_fn fn = builder(args->coll, args->algo);
    if (!fn)
        return ORB_ERR_UNSUPPORTED;
    plan->args = *args;
    plan->nlanes = args->nchannels;
    orb_status_t st = ORB_OK;
    if (orb_coll_vector(args->coll))
        st = args->vec ? orb_plan_vec_sizes(args->nranks, args->vec, &plan->in_count, &plan->out_count)
                       : ORB_ERR_INVALID_ARG;
    else
        orb_plan_buffer_sizes(args->coll, args->nranks, args->rank, args->root, args->count,
                              &plan->in_count, &plan->out_count);
    if (st == ORB_OK)
        st = fn(plan);
    if (st != ORB_OK) {
        orb_plan_free(plan);
        return st;
    }
    for (int ch = 0; ch < plan->nlanes; ch++) /* what the executor asks of every call (exec_cpu.c) */
        for (size_t i = 0; i < plan->lanes[ch].nsteps; i++) {
            const unsigned props = orb_step_props(plan->lanes[ch].steps[i].kind);
            plan->moves |= ((props & ORB_STEP_SENDS) ? ORB_PLAN_SENDS | (ch == 0 ? ORB_PLAN_LANE0_SENDS : 0u) : 0u) |
                           ((props & ORB_STEP_RECVS) ? ORB_PLAN_RECVS | (ch == 0 ? ORB_PLAN_LANE0_RECVS : 0u) : 0u);
        }
    return ORB_OK;
}
