/* Plan checker: proves a collective's plans right by running every rank's plan together,
 * symbolically, in one process.
 *
 * Each element holds the set of ranks whose inputs it sums (a 64-bit mask, so at most 64
 * ranks), the element index it belongs to and whether the final transform (POSTOP) was
 * applied. Every (sender, receiver, channel) is a FIFO of nslots pieces of at most
 * slot_elems elements, steps are cut into pieces exactly as plan.h says, lanes progress
 * independently and a piece that receives and sends waits for both. The check fails when
 *  - a plan's in_count/out_count, or what orb_plan_buffer_sizes says, differs from the
 *    buffer sizes the checker derives from the collective's definition on its own (count,
 *    nranks, root: e.g. all-gather output count*nranks, gather output only at the root);
 *  - a step is malformed: unknown kind, a peer outside the communicator or itself, an
 *    offset outside in_count/out_count, more than chunk_elems elements;
 *  - a reduction combines different elements, overlapping rank sets or finished values, a
 *    POSTOP lands on a partial or finished value, or a step reads output never written;
 *  - in ORB_ALGO_ORDERED plans, a reduction does anything but add rank k's own input to the
 *    fold of ranks 0..k-1 (so (x0 + x1) + x2 passes and x0 + (x1 + x2) does not);
 *  - the ranks deadlock (the report names the stuck lanes and what each waits for);
 *  - a piece's size differs from what the receiver expects, or a FIFO is not empty at the
 *    end (a send nobody received);
 *  - any output element differs from the collective's definition.
 * Each FIFO has one writer lane and one reader lane, so a piece that can move stays able to
 * move until its own lane moves it: the outcome, deadlock included, does not depend on the
 * order in which lanes run, and one run proves the plans for every interleaving. */
#ifndef ORB_COLLECTIVES_PLAN_CHECK_H
#define ORB_COLLECTIVES_PLAN_CHECK_H

#include "plan.h"

#define ORB_PLAN_CHECK_MAX_RANKS 64

typedef struct {
    size_t nslots;     /* slots per FIFO, >= 1 */
    size_t slot_elems; /* elements per slot, >= 1 */
    /* Alias each rank's buffers the way the in-place call does: input == output (allreduce,
     * broadcast and reduce at the root, alltoall), input = own slot of output (allgather,
     * gather at the root), output = own block of input (reduce_scatter, scatter at the root). */
    int inplace;
    /* alltoallv: vecs[r] is rank r's vector (orb_plan_args_t.vec); orb_plan_check puts it in
     * each rank's arguments. Unused by the other collectives. */
    const size_t *const *vecs;
} orb_plan_check_opts_t;

/* Builds the plan of every rank from tmpl (its rank field is replaced) and checks them.
 * For send and recv the pair is tmpl->rank and tmpl->root: the sender runs ORB_COLL_SEND
 * and the receiver ORB_COLL_RECV; the other ranks take no part. ORB_OK when the plans are
 * right; ORB_ERR_INTERNAL with the reason in err when they are not; ORB_ERR_UNSUPPORTED
 * beyond ORB_PLAN_CHECK_MAX_RANKS; a plan build failure is returned as is. */
orb_status_t orb_plan_check(const orb_plan_args_t *tmpl, const orb_plan_check_opts_t *opts, char *err,
                            size_t errlen);

/* Checks given plans (plans[r] is rank r's). A plan with nlanes == 0 takes no part (the
 * ranks outside a send/recv pair). Tests use it to check plans they corrupted. */
orb_status_t orb_plan_check_plans(const orb_plan_t *plans, int nranks, const orb_plan_check_opts_t *opts,
                                  char *err, size_t errlen);

#endif
