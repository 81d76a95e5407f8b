/* Tuner: picks the algorithm, pipeline chunk and channel count of one call from an
 * alpha-beta model (time = steps * alpha + bytes on the critical path / beta), with
 * ORBIT_ALGO and ORBIT_CHUNK_BYTES as overrides. docs/algorithms.md has the formulas. */
#ifndef ORB_COLLECTIVES_TUNER_H
#define ORB_COLLECTIVES_TUNER_H

#include <stddef.h>

#include "plan.h"
#include "transport/endpoint.h"

/* orb_link_cost_t (alpha, beta of one link class) comes from the transports (endpoint.h). */

typedef struct {
    orb_algo_t algo;
    size_t chunk_elems; /* 1 .. slot_bytes / elem_size */
    int nchannels;      /* 1 .. max_channels */
    double predicted_us;
    char reason[160];   /* one line: what won and why, or which override applied */
} orb_tuner_choice_t;

/* What a link costs when the caller names none: shared memory's, as its transport offers it
 * (orb_shm_transport.link). */
orb_link_cost_t orb_tuner_shm_link(void);

/* Ranks spread over several hosts: what the hierarchical all-reduce (ORB_ALGO_HIER) needs
 * to be considered, and what the flat algorithms pay once they cross hosts. */
typedef struct {
    int nhosts;            /* hosts the ranks span; <= 1: one host, as orb_tuner_choose */
    const int *host_of;    /* host of each rank, as in orb_plan_args_t; HIER: as many on each */
    orb_link_cost_t inter; /* one connection between ranks of two hosts */
    int nics;              /* independent inter-host links of a host, shared by its ranks (< 1: 1) */
} orb_tuner_hosts_t;

/* A send or recv of at most this many bytes, or a rooted call of two ranks (broadcast, scatter,
 * gather, reduce) whose block is, one chunk or less, is one piece on one channel whatever
 * the model says (its largest chunk): the eager path (exec.h) moves exactly that piece. */
#define ORB_TUNER_ONE_PIECE 1024

/* ORBIT_ALGO's text s as an algorithm (orb_algo_t): -1 when unset or empty, -2 when it names none. */
int orb_tuner_forced_algo(const char *s);

/* Choice for one call. count is the call's count (per-rank block for gather, allgather and
 * reduce_scatter); link is the slowest link class the algorithm crosses (NULL: shared
 * memory defaults); slot_bytes is the executor's slot payload, which bounds the chunk;
 * max_channels is how many channels the connections have (1..ORB_MAX_CHANNELS). Only
 * algorithms with a plan for coll are considered. */
orb_status_t orb_tuner_choose(orb_coll_t coll, size_t count, size_t elem_size, int nranks,
                              const orb_link_cost_t *link, size_t slot_bytes, int max_channels,
                              orb_tuner_choice_t *out);

/* orb_tuner_choose for ranks on several hosts: intra is the slowest link inside a host (NULL:
 * shared memory defaults), hosts the host map and the inter-host link (NULL or nhosts <= 1:
 * exactly orb_tuner_choose(..., intra, ...)). The flat algorithms are costed on the slowest
 * of the two classes (the larger alpha, the smaller beta): a flat ring crossing hosts runs
 * at the pace of its slowest hop. ORB_ALGO_HIER is considered, for allreduce, only when
 * the hosts hold the same number of ranks; ORBIT_ALGO=hier applies only then. A host index
 * outside 0..nhosts-1 is ORB_ERR_INVALID_ARG. */
orb_status_t orb_tuner_choose_hosts(orb_coll_t coll, size_t count, size_t elem_size, int nranks,
                                    const orb_link_cost_t *intra, const orb_tuner_hosts_t *hosts,
                                    size_t slot_bytes, int max_channels, orb_tuner_choice_t *out);

/* orb_tuner_choose_hosts for a communicator whose deterministic mode is on or off. On,
 * all-reduce, reduce and reduce-scatter get ORB_ALGO_ORDERED (rank-order folding, the only
 * plan whose bits do not depend on the configuration); ORBIT_ALGO naming another algorithm
 * is ignored for them, said once per process at ORBIT_DEBUG=INFO and in the reason. Off:
 * exactly orb_tuner_choose_hosts, which takes ORDERED only when ORBIT_ALGO=ordered.
 * nslots: the slots of a FIFO (0: unknown). With it and the link's l2_bytes, the plans that
 * pass data on through a rank (ring, chain, tree, hier, ordered, doubling) take chunks of at
 * most l2_bytes / nslots (not below 256 bytes), so that what a FIFO holds ahead of its
 * receiver stays in the cache (ranks on one host only); ORBIT_CHUNK_BYTES is taken as it is. */
orb_status_t orb_tuner_choose_det(orb_coll_t coll, size_t count, size_t elem_size, int nranks,
                                  const orb_link_cost_t *intra, const orb_tuner_hosts_t *hosts, size_t slot_bytes,
                                  int nslots, int max_channels, int deterministic, orb_tuner_choice_t *out);

/* The model's time (us) for one configuration; a negative value when algo has no plan for
 * coll (ORB_ALGO_HIER never has one here: it needs the hosts). Exposed for tests and for
 * bench/ to print predicted next to measured. */
double orb_tuner_predict(orb_coll_t coll, orb_algo_t algo, size_t count, size_t elem_size, int nranks,
                         const orb_link_cost_t *link, size_t chunk_elems, int nchannels);

/* The same with hosts, as orb_tuner_choose_hosts costs it; negative for HIER when the
 * hosts are absent or uneven. */
double orb_tuner_predict_hosts(orb_coll_t coll, orb_algo_t algo, size_t count, size_t elem_size, int nranks,
                               const orb_link_cost_t *intra, const orb_tuner_hosts_t *hosts, size_t chunk_elems,
                               int nchannels);

/* The cost formula of (coll, algo) as text, for ORBIT_DEBUG=INFO lines and the docs. */
const char *orb_tuner_formula(orb_coll_t coll, orb_algo_t algo);

#endif
