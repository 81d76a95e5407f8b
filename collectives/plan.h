/* Plans: what an algorithm turns one collective call into.
 *
 * An algorithm never moves bytes. For one call it produces, for one rank, one lane of
 * steps per channel. Executors (CPU today, CUDA later) run the lanes; the plan checker
 * simulates every rank's lanes symbolically. Both follow the semantics below exactly.
 *
 * Buffers. A rank has an input buffer (the user's sendbuf) and an output buffer (the
 * user's recvbuf). Offsets and counts are in elements of the call's dtype.
 *
 * Steps: kernels/step.h defines them and their exact meaning, for plans and executors alike.
 *
 * Transport. Every (sender, receiver, channel) triple is one FIFO of nslots slots of
 * slot_elems elements each. An executor moves a step's count elements in pieces of at most
 * slot_elems, in order; the matching step on the peer has the same count, so both cut it the
 * same way. A piece that needs both a full incoming slot and a free outgoing slot waits for
 * both. Steps of one lane run in order; lanes (channels) of a rank progress independently.
 * Plans must be deadlock-free under that model for any nslots >= 1.
 */
#ifndef ORB_COLLECTIVES_PLAN_H
#define ORB_COLLECTIVES_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/step.h"
#include "orbit.h"

/* What a collective is. */
#define ORB_COLL_ROOTED 0x1u  /* has a root rank */
#define ORB_COLL_P2P 0x2u     /* has a peer instead (send, recv) */
#define ORB_COLL_REDUCES 0x4u /* an op applies */
#define ORB_COLL_VECTOR 0x8u  /* per-peer counts and displacements (orb_plan_args_t.vec) */

/* X(ID, name, properties): every collective, once, in the order of its value. The public
 * function is "orb_" name. */
#define ORB_COLL_MAP(X)                                        \
    X(ALLREDUCE, "allreduce", ORB_COLL_REDUCES)                \
    X(BROADCAST, "broadcast", ORB_COLL_ROOTED)                 \
    X(REDUCE, "reduce", ORB_COLL_ROOTED | ORB_COLL_REDUCES)    \
    X(GATHER, "gather", ORB_COLL_ROOTED)                       \
    X(ALLGATHER, "allgather", 0)                               \
    X(REDUCE_SCATTER, "reduce_scatter", ORB_COLL_REDUCES)      \
    X(SEND, "send", ORB_COLL_P2P)                              \
    X(RECV, "recv", ORB_COLL_P2P)                              \
    X(BARRIER, "barrier", 0)                                   \
    X(ALLTOALL, "alltoall", 0)                                 \
    X(ALLTOALLV, "alltoallv", ORB_COLL_VECTOR)                 \
    X(SCATTER, "scatter", ORB_COLL_ROOTED)                     \
    X(COMM_SPLIT, "comm_split", 0)

typedef enum {
#define ORB_COLL_ENUM_(id, name, props) ORB_COLL_##id,
    ORB_COLL_MAP(ORB_COLL_ENUM_)
#undef ORB_COLL_ENUM_
        ORB_NUM_COLLS
} orb_coll_t;

/* The properties of c; 0 for a value that is no collective. */
static inline unsigned orb_coll_props(orb_coll_t c)
{
#define ORB_COLL_PROPS_(id, name, props) c == ORB_COLL_##id ? (unsigned)(props):
    return ORB_COLL_MAP(ORB_COLL_PROPS_) 0u;
#undef ORB_COLL_PROPS_
}
/* The collective whose plan, buffer sizes and costs a call has. orb_comm_split agrees on its
 * groups with an all-gather over the parent that keeps an identity of its own, so that a rank
 * calling something else meets a mismatch that names the split; everything else is itself. */
static inline orb_coll_t orb_coll_planned_as(orb_coll_t c)
{
    return c == ORB_COLL_COMM_SPLIT ? ORB_COLL_ALLGATHER : c;
}
static inline int orb_coll_rooted(orb_coll_t c) { return (orb_coll_props(c) & ORB_COLL_ROOTED) != 0; }
static inline int orb_coll_p2p(orb_coll_t c) { return (orb_coll_props(c) & ORB_COLL_P2P) != 0; }
static inline int orb_coll_reduces(orb_coll_t c) { return (orb_coll_props(c) & ORB_COLL_REDUCES) != 0; }
static inline int orb_coll_vector(orb_coll_t c) { return (orb_coll_props(c) & ORB_COLL_VECTOR) != 0; }

typedef enum {
    ORB_ALGO_RING = 0, /* ring, or a pipelined chain along the ring for rooted collectives */
    ORB_ALGO_TREE,     /* double binary tree (allreduce), binary tree (broadcast, reduce) */
    ORB_ALGO_DIRECT,   /* point to point: send/recv, gather/scatter straight from/to the root,
                        * all-to-all as pairwise exchange */
    ORB_ALGO_HIER,     /* two-level all-reduce: rings inside each host, rings across hosts */
    ORB_ALGO_BRUCK,    /* all-to-all in ceil(log2 n) rounds of packed blocks (small blocks) */
    ORB_ALGO_ORDERED,  /* reductions folded in rank order, bitwise reproducible (ordered.c) */
    ORB_ALGO_DOUBLING, /* all-reduce in log2 n rounds of pairwise exchanges (small calls) */
    ORB_NUM_ALGOS
} orb_algo_t;

typedef struct {
    orb_step_t *steps;
    size_t nsteps;
    size_t cap;
} orb_lane_t;

/* What an algorithm needs to build a plan for one rank. */
typedef struct {
    orb_coll_t coll;
    orb_algo_t algo;
    int nranks;
    int rank;
    int root;  /* rooted collectives; the peer for SEND/RECV */
    size_t count; /* the count the user passed (sendcount, recvcount, ...) */
    orb_op_t op;  /* reduction collectives; ORB_SUM otherwise */
    size_t chunk_elems; /* pipeline chunk (>= 1): no step carries more than this */
    int nchannels;      /* 1..ORB_MAX_CHANNELS; data is split across channels */
    const int *ring;    /* ring order: ring[i] is the rank at position i (NULL: 0..n-1) */
    /* Host map, read only by ORB_ALGO_HIER: the ranks of a host are those with equal
     * host_of[rank], in 0..nhosts-1. HIER needs nhosts > 1 and the same number of ranks on
     * every host (ORB_ERR_UNSUPPORTED otherwise: on one host the ring is the right plan).
     * Like ring, the map must outlive the plan. NULL / nhosts <= 1: one host. */
    int nhosts;
    const int *host_of;
    /* ORB_COLL_VECTOR collectives (alltoallv): this rank's sendcounts, sdispls, recvcounts and
     * rdispls, nranks each, one after the other (4 * nranks elements); count is unused. Like
     * ring, it must outlive the plan. */
    const size_t *vec;
} orb_plan_args_t;

typedef struct {
    orb_plan_args_t args;
    size_t in_count;  /* elements of this rank's input the plan may read */
    size_t out_count; /* elements of this rank's output the plan may write */
    size_t scratch_count; /* elements of workspace (ORB_BUF_SCRATCH) the executor supplies */
    int nlanes;       /* == args.nchannels */
    orb_lane_t lanes[ORB_MAX_CHANNELS];
    unsigned moves;   /* ORB_PLAN_*: whether any step sends or receives (and lane 0's), set by orb_plan_build */
} orb_plan_t;

#define ORB_PLAN_SENDS 1u
#define ORB_PLAN_RECVS 2u
#define ORB_PLAN_LANE0_SENDS 4u
#define ORB_PLAN_LANE0_RECVS 8u

/* Builds the plan of args->rank. The plan owns its step arrays: orb_plan_free. */
orb_status_t orb_plan_build(orb_plan_t *plan, const orb_plan_args_t *args);
void orb_plan_free(orb_plan_t *plan);

/* Input and output sizes (elements) a collective uses on one rank. Vector collectives take
 * theirs from orb_plan_vec_sizes. */
void orb_plan_buffer_sizes(orb_coll_t coll, int nranks, int rank, int root, size_t count,
                           size_t *in_count, size_t *out_count);
/* The input and output an alltoallv's vectors (layout of orb_plan_args_t.vec) reach: the end
 * of the furthest block. ORB_ERR_INVALID_ARG when a displacement plus its count overflows. */
orb_status_t orb_plan_vec_sizes(int nranks, const size_t *vec, size_t *in_count, size_t *out_count);

/* Which algorithms implement which collective (ORB_ERR_UNSUPPORTED otherwise). HIER also
 * needs a host map that orb_plan_ranks_per_host accepts. */
int orb_plan_algo_supported(orb_coll_t coll, orb_algo_t algo);

/* Ranks per host of a host map (see orb_plan_args_t) in *per_host: ORB_OK when nhosts > 1
 * and every host holds the same number of ranks, ORB_ERR_UNSUPPORTED when the map is absent,
 * has one host or hosts of different sizes, ORB_ERR_INVALID_ARG when a host index is outside
 * 0..nhosts-1. */
orb_status_t orb_plan_ranks_per_host(int nranks, int nhosts, const int *host_of, int *per_host);

/* Non-roots of reduce and gather have no output of their own. A plan that needs room there
 * (a tree node combining two children, a chain rank forwarding others' blocks) sets
 * out_count > 0 on such a rank; the executor then gives it out_count elements of scratch in
 * place of the user's recvbuf. Everywhere else the output is the user's recvbuf. */
static inline int orb_plan_out_is_scratch(const orb_plan_t *plan)
{
    const orb_plan_args_t *a = &plan->args;
    return (a->coll == ORB_COLL_REDUCE || a->coll == ORB_COLL_GATHER) && a->rank != a->root &&
           plan->out_count > 0;
}

/* Fewest slots per FIFO with which the plans of (coll, algo) are deadlock-free when every
 * step fits in one slot (chunk_elems <= slot_elems, as the tuner ensures). A ring's ranks
 * each put a step in the FIFO to the next rank before any of them receives, and a fused
 * recv-and-send step needs a free outgoing slot: with one slot the cycle is full and
 * stuck. In general a ring needs one slot more than the pieces of a step. The hierarchical
 * all-reduce runs three rings in sequence, so it needs what a ring needs. The exchanges (the
 * direct all-reduce of two ranks, recursive doubling's rounds, all-to-all's pairs) send before they receive on both sides
 * of a pair: a two-rank cycle, the same; so do Bruck's rounds, along a cycle of positions. Chains, trees and the other direct plans have no
 * such cycle and need one slot whatever the slot size. */
static inline int orb_plan_min_slots(orb_coll_t coll, orb_algo_t algo)
{
    coll = orb_coll_planned_as(coll);
    int cyclic = (algo == ORB_ALGO_RING &&
                  (coll == ORB_COLL_ALLREDUCE || coll == ORB_COLL_BARRIER || coll == ORB_COLL_ALLGATHER ||
                   coll == ORB_COLL_REDUCE_SCATTER)) ||
                 ((algo == ORB_ALGO_HIER || algo == ORB_ALGO_DIRECT) && coll == ORB_COLL_ALLREDUCE) ||
                 algo == ORB_ALGO_DOUBLING || algo == ORB_ALGO_BRUCK ||
                 coll == ORB_COLL_ALLTOALL || coll == ORB_COLL_ALLTOALLV;
    return cyclic ? 2 : 1;
}

const char *orb_coll_name(orb_coll_t coll);    /* "allreduce" */
const char *orb_coll_fn_name(orb_coll_t coll); /* "orb_allreduce", for messages */
const char *orb_algo_name(orb_algo_t algo);

/* Helpers for algorithm files. */
orb_status_t orb_lane_push(orb_lane_t *lane, const orb_step_t *step);

#endif
