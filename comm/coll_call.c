/* One collective call's arguments: names, checks, signature (coll_call.h). */
#include "comm/coll_call.h"

#include <stdint.h>

#include "comm/comm_impl.h"

static int overlap(const void *a, size_t alen, const void *b, size_t blen)
{
    const char *x = a, *y = b;
    return alen && blen && x < y + blen && y < x + alen;
}

orb_status_t orb_call_validate(struct orb_comm *c, const orb_call_t *k, size_t *in_count, size_t *out_count)
{
    const char *fn = orb_coll_fn_name(k->coll);
    const int r = c->rank;
    if ((unsigned)k->coll >= ORB_NUM_COLLS)
        return orb_comm_fail(c, ORB_ERR_INVALID_ARG, "%s: rank %d: coll=%d is not a collective", fn, r, (int)k->coll);
    if ((unsigned)k->dtype >= ORB_NUM_DTYPES)
        return orb_comm_fail(c, ORB_ERR_INVALID_ARG, "%s: rank %d: dtype=%d is not an orb_dtype_t (ORB_INT8..ORB_FLOAT64)",
                             fn, r, (int)k->dtype);
    if ((unsigned)k->op >= ORB_NUM_OPS)
        return orb_comm_fail(c, ORB_ERR_INVALID_ARG, "%s: rank %d: op=%d is not an orb_op_t (ORB_SUM..ORB_AVG)", fn, r,
                             (int)k->op);
    const int rooted = orb_coll_rooted(k->coll), p2p = orb_coll_p2p(k->coll);
    if ((rooted || p2p) && (k->root < 0 || k->root >= c->nranks))
        return orb_comm_fail(c, ORB_ERR_INVALID_ARG, "%s: rank %d: %s=%d is out of range 0..%d", fn, r,
                             p2p ? "peer" : "root", k->root, c->nranks - 1);
    if (p2p && k->root == r)
        return orb_comm_fail(c, ORB_ERR_INVALID_ARG, "%s: rank %d: peer=%d is this rank itself; copy locally instead",
                             fn, r, k->root);
    size_t in_n = 0, out_n = 0;
    if (k->coll != ORB_COLL_BARRIER) /* a barrier touches no user memory */
        orb_plan_buffer_sizes(k->coll, c->nranks, r, k->root, k->count, &in_n, &out_n);
    *in_count = in_n;
    *out_count = out_n;
    size_t esz = orb_dtype_size(k->dtype);
    size_t maxn = in_n > out_n ? in_n : out_n;
    const orb_coll_t shape = orb_coll_planned_as(k->coll);
    size_t mult = (shape == ORB_COLL_GATHER || shape == ORB_COLL_ALLGATHER || shape == ORB_COLL_REDUCE_SCATTER)
                      ? (size_t)c->nranks
                      : 1;
    if (k->count > SIZE_MAX / esz / mult || maxn > SIZE_MAX / esz)
        return orb_comm_fail(c, ORB_ERR_INVALID_ARG, "%s: rank %d: count=%zu of %s overflows the address space", fn, r,
                             k->count, orb_dtype_name(k->dtype));
    if (in_n && !k->sendbuf)
        return orb_comm_fail(c, ORB_ERR_INVALID_ARG, "%s: rank %d: %s is NULL but count=%zu", fn, r,
                             k->coll == ORB_COLL_SEND ? "buf" : "sendbuf", k->count);
    if (out_n && !k->recvbuf)
        return orb_comm_fail(c, ORB_ERR_INVALID_ARG, "%s: rank %d: %s is NULL but count=%zu%s", fn, r,
                             k->coll == ORB_COLL_RECV ? "buf" : "recvbuf", k->count,
                             rooted ? " (this rank is the root)" : "");
    const char *in = k->sendbuf, *out = k->recvbuf;
    int inplace_ok;
    switch (shape) {
    case ORB_COLL_GATHER:
    case ORB_COLL_ALLGATHER: /* in place: sendbuf is this rank's slot of recvbuf */
        inplace_ok = out && in == out + (size_t)r * k->count * esz;
        break;
    case ORB_COLL_REDUCE_SCATTER: /* in place: recvbuf is this rank's block of sendbuf */
        inplace_ok = out && out == in + (size_t)r * k->count * esz;
        break;
    default:
        inplace_ok = in == out;
    }
    if (!inplace_ok && overlap(in, in_n * esz, out, out_n * esz))
        return orb_comm_fail(c, ORB_ERR_INVALID_ARG, "%s: rank %d: sendbuf and recvbuf overlap without being the "
                                                     "in-place layout; use separate buffers or the in-place form",
                             fn, r);
    return ORB_OK;
}

void orb_call_signature(struct orb_comm *c, const orb_call_t *k, orb_slot_hdr_t *sig, int *sync_next,
                        int *sync_prev)
{
    const int p2p = orb_coll_p2p(k->coll);
    *sig = (orb_slot_hdr_t){0}; /* the whole header travels: no byte of it undefined */
    *sync_next = *sync_prev = -1;
    if (c->check_signatures && c->nranks > 1 && !p2p && (orb_coll_rooted(k->coll) || k->count == 0)) {
        *sync_next = c->ring_next;
        *sync_prev = c->ring_prev;
    }
    sig->count = k->count;
    sig->dtype = (uint32_t)k->dtype;
    sig->op = (uint32_t)k->op;
    if (p2p) { /* not collective: no shared sequence; send and recv both carry the sender */
        sig->coll = ORB_COLL_SEND;
        sig->seq = 0;
        sig->root = k->coll == ORB_COLL_SEND ? c->rank : k->root;
    } else {
        sig->coll = (uint32_t)k->coll;
        sig->seq = ++c->seq;
        sig->root = k->root;
    }
}
