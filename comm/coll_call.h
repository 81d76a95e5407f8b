/* One collective call's arguments, shared by the host path (coll_api.c) and the device path
 * (coll_cuda.c): the name used in messages, the argument checks, and the signature its
 * pieces carry. */
#ifndef ORB_COMM_COLL_CALL_H
#define ORB_COMM_COLL_CALL_H

#include <stddef.h>

#include "collectives/plan.h"
#include "orbit.h"
#include "transport/transport.h"

struct orb_comm;

typedef struct {
    orb_coll_t coll;
    const void *sendbuf;
    void *recvbuf;
    size_t count;
    orb_dtype_t dtype;
    orb_op_t op;
    int root; /* or peer */
} orb_call_t;

/* "orb_allreduce", ... for messages. */
const char *orb_call_fn_name(orb_coll_t coll);

/* Check every argument of k on this rank and give the elements of sendbuf / recvbuf it may
 * touch; on failure the communicator's last error names the argument, the rank and the fix. */
orb_status_t orb_call_validate(struct orb_comm *c, const orb_call_t *k, size_t *in_count, size_t *out_count);

/* The signature every piece of k carries (a collective takes the next sequence number;
 * send and recv pair up under the sender's rank, outside the sequence), and the ring
 * neighbours of its signature handshake: rooted calls and count 0, when checks are on
 * (-1, -1 otherwise). */
void orb_call_signature(struct orb_comm *c, const orb_call_t *k, orb_slot_hdr_t *sig, int *sync_next,
                        int *sync_prev);

#endif
