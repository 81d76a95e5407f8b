/* One collective call's arguments: names, checks, signature (coll_call.h). */
#include "comm/coll_call.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "comm/comm_impl.h"
#include "core/dtype.h"

/* alltoallv's vectors: present, each block inside the address space, its own block the same
 * size both ways; packed into c->vec. */
static orb_status_t validate_vectors(struct orb_comm *c, orb_call_t *k, size_t *in_n, size_t *out_n)
{
    const char *fn = orb_coll_fn_name(k->coll);
    const int r = c->rank;
    const size_t n = (size_t)c->nranks;
    const size_t *v[4] = {k->sendcounts, k->sdispls, k->recvcounts, k->rdispls};
    static const char *const names[4] = {"sendcounts", "sdispls", "recvcounts", "rdispls"};
    for (int i = 0; i < 4; i++)
        if (!v[i])
            return orb_comm_fail(c, ORB_ERR_INVALID_ARG, "%s: rank %d: %s is NULL; pass %zu counts or displacements "
                                                         "(one per rank, in elements)", fn, r, names[i], n);
    if (!c->vec && !(c->vec = malloc(4 * n * sizeof *c->vec)))
        return orb_comm_fail(c, ORB_ERR_NO_MEMORY, "%s: rank %d: no memory for the vectors", fn, r);
    size_t maxc = 0;
    for (int i = 0; i < 4; i++)
        memcpy(c->vec + (size_t)i * n, v[i], n * sizeof *c->vec);
    const size_t esz = orb_dtype_bytes(k->dtype);
    for (size_t j = 0; j < n; j++)
        for (int dir = 0; dir < 2; dir++) {
            const size_t cnt = c->vec[(size_t)(2 * dir) * n + j], dsp = c->vec[(size_t)(2 * dir + 1) * n + j];
            if (cnt > SIZE_MAX / esz || dsp > SIZE_MAX / esz - cnt)
                return orb_comm_fail(c, ORB_ERR_INVALID_ARG,
                                     "%s: rank %d: %s[%zu]=%zu + %s[%zu]=%zu elements of %s overflow the address space",
                                     fn, r, names[2 * dir], j, cnt, names[2 * dir + 1], j, dsp,
                                     orb_dtype_name(k->dtype));
            maxc = cnt > maxc ? cnt : maxc;
        }
    if (c->vec[(size_t)r] != c->vec[2 * n + (size_t)r])
        return orb_comm_fail(c, ORB_ERR_INVALID_ARG, "%s: rank %d: sendcounts[%d]=%zu but recvcounts[%d]=%zu: the "
                                                     "block a rank sends itself must be as large as the one it expects",
                             fn, r, r, c->vec[(size_t)r], r, c->vec[2 * n + (size_t)r]);
    orb_plan_vec_sizes(c->nranks, c->vec, in_n, out_n); /* cannot overflow: checked above */
    k->count = maxc;
    return ORB_OK;
}

orb_status_t orb_call_validate(struct orb_comm *c, orb_call_t *k, size_t *in_count, size_t *out_count)
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
    if (orb_coll_vector(k->coll)) {
        orb_status_t st = validate_vectors(c, k, &in_n, &out_n);
        if (st != ORB_OK)
            return st;
    } else if (k->coll != ORB_COLL_BARRIER) { /* a barrier touches no user memory */
        orb_plan_buffer_sizes(k->coll, c->nranks, r, k->root, k->count, &in_n, &out_n);
    }
    *in_count = in_n;
    *out_count = out_n;
    size_t esz = orb_dtype_bytes(k->dtype);
    size_t maxn = in_n > out_n ? in_n : out_n;
    const orb_coll_t shape = orb_coll_planned_as(k->coll);
    size_t mult = (shape == ORB_COLL_GATHER || shape == ORB_COLL_ALLGATHER || shape == ORB_COLL_REDUCE_SCATTER ||
                   shape == ORB_COLL_ALLTOALL || shape == ORB_COLL_SCATTER)
                      ? (size_t)c->nranks
                      : 1;
    size_t total; /* no division: this is every call's path, and a 64-bit divide is slow */
    if (__builtin_mul_overflow(k->count, esz, &total) || __builtin_mul_overflow(total, mult, &total) ||
        __builtin_mul_overflow(maxn, esz, &total))
        return orb_comm_fail(c, ORB_ERR_INVALID_ARG, "%s: rank %d: count=%zu of %s overflows the address space", fn, r,
                             k->count, orb_dtype_name(k->dtype));
    const int vector = orb_coll_vector(k->coll);
    if (in_n && !k->sendbuf)
        return orb_comm_fail(c, ORB_ERR_INVALID_ARG, "%s: rank %d: %s is NULL but %s=%zu%s", fn, r,
                             k->coll == ORB_COLL_SEND ? "buf" : "sendbuf",
                             vector ? "the blocks reach element" : "count", vector ? in_n : k->count,
                             k->coll == ORB_COLL_SCATTER ? " (this rank is the root)" : "");
    if (out_n && !k->recvbuf)
        return orb_comm_fail(c, ORB_ERR_INVALID_ARG, "%s: rank %d: %s is NULL but %s=%zu%s", fn, r,
                             k->coll == ORB_COLL_RECV ? "buf" : "recvbuf",
                             vector ? "the blocks reach element" : "count", vector ? out_n : k->count,
                             rooted && k->coll != ORB_COLL_SCATTER ? " (this rank is the root)" : "");
    const char *in = k->sendbuf, *out = k->recvbuf;
    int inplace_ok;
    switch (shape) {
    case ORB_COLL_GATHER:
    case ORB_COLL_ALLGATHER: /* in place: sendbuf is this rank's slot of recvbuf */
        inplace_ok = out && in == out + (size_t)r * k->count * esz;
        break;
    case ORB_COLL_REDUCE_SCATTER: /* in place: recvbuf is this rank's block of sendbuf */
    case ORB_COLL_SCATTER:        /* (on the root; elsewhere sendbuf is not read) */
        inplace_ok = out && out == in + (size_t)r * k->count * esz;
        break;
    case ORB_COLL_ALLTOALLV:
        inplace_ok = 0;
        if (in && in == out && in_n && out_n)
            return orb_comm_fail(c, ORB_ERR_INVALID_ARG, "%s: rank %d: sendbuf == recvbuf, but alltoallv has no "
                                                         "in-place form; use separate buffers", fn, r);
        break;
    default:
        inplace_ok = in == out;
    }
    if (!inplace_ok && orb_ranges_overlap(in, in_n * esz, out, out_n * esz))
        return orb_comm_fail(c, ORB_ERR_INVALID_ARG, "%s: rank %d: sendbuf and recvbuf overlap without being the "
                                                     "in-place layout; use separate buffers or the in-place form",
                             fn, r);
    return ORB_OK;
}

void orb_call_signature(struct orb_comm *c, const orb_call_t *k, orb_slot_hdr_t *sig, int *sync_next,
                        int *sync_prev)
{
    const int p2p = orb_coll_p2p(k->coll);
    *sync_next = *sync_prev = -1;
    if (c->check_signatures && c->nranks > 1 && !p2p && (orb_coll_rooted(k->coll) || k->count == 0)) {
        *sync_next = c->ring_next;
        *sync_prev = c->ring_prev;
    }
    if (p2p) {
        orb_call_signature_p2p(c->rank, k, sig);
        return;
    }
    orb_call_signature_coll(c, k, sig);
    if (orb_coll_vector(k->coll))
        sig->count = 0; /* the pairs' counts differ: checked on their own */
}
