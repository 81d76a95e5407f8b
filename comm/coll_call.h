/* One collective call: its arguments, their checks, the signature its pieces carry, and the
 * call as the front end (coll_front.c) hands it to an executor, host (coll_host.c) or device
 * (coll_cuda.c). */
#ifndef ORB_COMM_COLL_CALL_H
#define ORB_COMM_COLL_CALL_H

#include <stddef.h>

#include "collectives/plan.h"
#include "comm/comm_impl.h"
#include "orbit.h"
#include "transport/transport.h"

typedef struct {
    orb_coll_t coll;
    const void *sendbuf;
    void *recvbuf;
    size_t count;
    orb_dtype_t dtype;
    orb_op_t op;
    int root; /* or peer */
    uint32_t tag; /* send / recv: checked against the peer's, carried as the signature's seq */
    /* alltoallv: the user's vectors (nranks each), read during the call only */
    const size_t *sendcounts, *sdispls, *recvcounts, *rdispls;
} orb_call_t;

/* A call the front end has checked, planned and signed, ready for an executor. */
typedef struct {
    struct orb_comm *comm;
    orb_call_t a;
    orb_stream_t stream;
    int device;                  /* device buffers or a stream: the device executor runs it */
    size_t in_count, out_count;  /* elements of sendbuf / recvbuf it touches */
    const void *in;              /* the buffers as its executor reaches them (the device */
    void *out;                   /* executor puts its views of device memory here) */
    orb_call_key_t key;
    const orb_plan_t *plan;      /* the plan cache's, or a group's own copy */
    const char *reason;          /* the tuner's word on the plan */
    double predicted_us;
    orb_slot_hdr_t sig;          /* seq, count, coll, dtype, op, root */
    int sync_next, sync_prev;    /* signature handshake neighbours, or -1 */
    uint64_t trace_id;           /* the call's id in the tracer's and flight recorder's records */
} orb_prepared_t;

/* Check every argument of k on this rank and give the elements of sendbuf / recvbuf it may
 * touch; on failure the communicator's last error names the argument, the rank and the fix.
 * An alltoallv's vectors are packed into c->vec (the layout of orb_plan_args_t.vec) and its
 * count set to the largest block, what the tuner sizes chunks by. */
orb_status_t orb_call_validate(struct orb_comm *c, orb_call_t *k, size_t *in_count, size_t *out_count);

/* alltoallv with signature checks on: every pair trades what it will send and expects, so a
 * pair that disagrees fails on both ranks (and tells the others) before any data moves. */
orb_status_t orb_call_check_vectors(struct orb_comm *c, const orb_call_t *k);

/* The signature every piece of k carries (a collective takes the next sequence number;
 * send and recv pair up under the sender's rank, outside the sequence), and the ring
 * neighbours of its signature handshake: rooted calls and count 0, when checks are on
 * (-1, -1 otherwise). */
void orb_call_signature(struct orb_comm *c, const orb_call_t *k, orb_slot_hdr_t *sig, int *sync_next,
                        int *sync_prev);

/* orb_call_signature of a send or recv (rank: this one's), inline for the eager path: not
 * collective, so no shared sequence; send and recv both carry the sender, and the tag where a
 * collective has its number. */
static inline void orb_call_signature_p2p(int rank, const orb_call_t *k, orb_slot_hdr_t *sig)
{
    *sig = (orb_slot_hdr_t){0}; /* the whole header travels: no byte of it undefined */
    sig->count = k->count;
    sig->dtype = (uint32_t)k->dtype;
    sig->op = (uint32_t)k->op;
    sig->coll = ORB_COLL_SEND;
    sig->seq = k->tag;
    sig->root = k->coll == ORB_COLL_SEND ? rank : k->root;
}

/* orb_call_signature of a collective that is not vector (coll_front.c's eager path, and
 * orb_call_signature): it takes the next sequence number. */
static inline void orb_call_signature_coll(struct orb_comm *c, const orb_call_t *k, orb_slot_hdr_t *sig)
{
    *sig = (orb_slot_hdr_t){0}; /* the whole header travels: no byte of it undefined */
    sig->count = k->count;
    sig->dtype = (uint32_t)k->dtype;
    sig->op = (uint32_t)k->op;
    sig->coll = (uint32_t)k->coll;
    sig->seq = ++c->seq;
    sig->root = k->root;
}

/* The element-wise op an executor applies for the user's op, and what each result is divided by
 * after (ORB_AVG: a sum, then / nranks; 0: nothing) */
static inline orb_op_t orb_call_elem_op(orb_op_t op) { return op == ORB_AVG ? ORB_SUM : op; }
static inline int orb_call_postdiv(orb_op_t op, int nranks) { return op == ORB_AVG ? nranks : 0; }

/* The public entry points' one way in (coll_front.c): check, plan, sign, then run the call
 * or, inside orb_group_start/end, queue it. */
orb_status_t orb_coll_enter(orb_comm_t comm, const orb_call_t *k, orb_stream_t stream);

/* Whether this thread is between orb_group_start and orb_group_end. */
int orb_group_open(void);

/* Not broken, not aborted, no error posted by a peer: the communicator may run calls (else
 * its last error says why). */
orb_status_t orb_host_usable(struct orb_comm *c);

/* The host executor (coll_host.c): run calls *p[0..n) of one communicator together (pointers:
 * a group's calls are run where they are queued, not copied). */
orb_status_t orb_host_run(struct orb_comm *c, const orb_prepared_t *const *p, int n);
/* Sends and receives of one small piece each on the eager path (collectives/exec.h,
 * orb_exec_eager): *left is how many of ops it left not done for orb_host_run (all of them
 * where handshakes are due); an unusable communicator's error as orb_host_run gives it, and a
 * mismatch fails the communicator as a run would. */
orb_status_t orb_host_eager(struct orb_comm *c, orb_eager_op_t *ops, int n, int *left);

/* Waits for the handshake pieces earlier rooted calls returned without (c->due) and checks
 * them: where no host run would, before a device call (orb_cuda_admit) and when the
 * communicator is destroyed. ORB_OK at once when none is due. */
orb_status_t orb_host_settle(struct orb_comm *c);

#endif
