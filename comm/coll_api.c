/* The collective entry points: validate every argument, pick the algorithm, fetch the plan,
 * run it (or queue it inside orb_group_start/end). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collectives/tuner.h"
#include "comm/comm_impl.h"
#include "comm/coll_call.h"
#include "comm/coll_cuda.h"
#include "comm/cuda_hooks.h"
#include "core/log.h"
#include "core/param.h"

/* ---- plans ------------------------------------------------------------------------- */

static int key_equal(const orb_call_key_t *a, const orb_call_key_t *b)
{
    return a->coll == b->coll && a->count == b->count && a->elem_size == b->elem_size && a->root == b->root &&
           a->op == b->op;
}

/* The tuner runs once per call shape (ORBIT_ALGO / ORBIT_CHUNK_BYTES are read then): the
 * 8-byte path is a cache hit, not a model evaluation. */
orb_status_t orb_comm_plan(struct orb_comm *c, const orb_call_key_t *key, const orb_plan_cache_entry_t **entry,
                           char *why, size_t whylen)
{
    int victim = 0;
    for (int i = 0; i < ORB_PLAN_CACHE; i++) {
        orb_plan_cache_entry_t *e = &c->cache[i];
        if (e->valid && key_equal(&e->key, key)) {
            e->used = ++c->plan_clock;
            *entry = e;
            return ORB_OK;
        }
        if (!e->valid || e->used < c->cache[victim].used)
            victim = i;
        if (!e->valid)
            break;
    }
    orb_tuner_choice_t ch;
    memset(&ch, 0, sizeof ch);
    /* Between hosts: TCP defaults until measured (docs/transports.md), one NIC per host. */
    orb_tuner_hosts_t hosts = {.nhosts = c->nhosts, .host_of = c->host_of,
                               .inter = {.alpha_us = ORB_TUNER_TCP_ALPHA_US, .beta_gbps = ORB_TUNER_TCP_BETA_GBPS},
                               .nics = 1};
    orb_status_t st = orb_tuner_choose_hosts(key->coll, key->count, key->elem_size, c->nranks, NULL, &hosts,
                                             c->slot_bytes, c->nchannels, &ch);
    if (st != ORB_OK) {
        snprintf(why, whylen, "%s", ch.reason[0] ? ch.reason : orb_strerror(st));
        return st;
    }
    orb_plan_cache_entry_t *e = &c->cache[victim];
    if (e->valid)
        orb_plan_free(&e->plan);
    e->valid = 0;
    orb_plan_args_t args = {
        .coll = key->coll, .algo = ch.algo, .nranks = c->nranks, .rank = c->rank, .root = key->root,
        .count = key->count, .op = key->op, .chunk_elems = ch.chunk_elems, .nchannels = ch.nchannels,
        .ring = c->ring, .nhosts = c->nhosts, .host_of = c->host_of,
    };
    st = orb_plan_build(&e->plan, &args);
    if (st != ORB_OK) {
        snprintf(why, whylen, "cannot build the %s plan (%s)", orb_algo_name(ch.algo), orb_strerror(st));
        return st;
    }
    e->key = *key;
    e->predicted_us = ch.predicted_us;
    snprintf(e->reason, sizeof e->reason, "%s", ch.reason);
    e->valid = 1;
    e->used = ++c->plan_clock;
    *entry = e;
    return ORB_OK;
}

/* ---- groups ------------------------------------------------------------------------- */

typedef struct {
    struct orb_comm *comm;
    orb_exec_op_t op;
    orb_plan_t plan; /* owned copy: the cache may evict while the group is open */
    void *scratch;
} queued_t;

static _Thread_local int group_depth;
static _Thread_local queued_t *group_q;
static _Thread_local int group_n, group_cap;

orb_status_t orb_group_start(void)
{
    group_depth++;
    return ORB_OK;
}

static orb_status_t run_ops(struct orb_comm *c, orb_exec_op_t *ops, int n);

orb_status_t orb_group_end(void)
{
    if (group_depth == 0) {
        orb_set_thread_error("orb_group_end: no matching orb_group_start on this thread");
        return ORB_ERR_INVALID_ARG;
    }
    if (--group_depth > 0)
        return ORB_OK;
    orb_status_t st = orb_cuda_group_end(); /* device calls of the group: one launch per communicator */
    /* Run each communicator's queued calls together, communicators in first-use order. */
    for (int i = 0; i < group_n; i++) {
        struct orb_comm *c = group_q[i].comm;
        if (!c)
            continue;
        int n = 0;
        orb_exec_op_t *ops = malloc(sizeof *ops * (size_t)group_n);
        if (!ops) {
            st = ORB_ERR_NO_MEMORY;
            break;
        }
        for (int j = i; j < group_n; j++)
            if (group_q[j].comm == c) {
                ops[n] = group_q[j].op;
                ops[n].plan = &group_q[j].plan;
                n++;
            }
        orb_status_t s = run_ops(c, ops, n);
        free(ops);
        if (s != ORB_OK && st == ORB_OK)
            st = s;
        for (int j = i; j < group_n; j++)
            if (group_q[j].comm == c)
                group_q[j].comm = NULL;
    }
    for (int i = 0; i < group_n; i++) {
        orb_plan_free(&group_q[i].plan);
        free(group_q[i].scratch);
    }
    free(group_q);
    group_q = NULL;
    group_n = group_cap = 0;
    return st;
}

static orb_status_t plan_copy(orb_plan_t *dst, const orb_plan_t *src)
{
    *dst = *src;
    for (int ch = 0; ch < ORB_MAX_CHANNELS; ch++) {
        dst->lanes[ch].steps = NULL;
        dst->lanes[ch].cap = dst->lanes[ch].nsteps = 0;
    }
    for (int ch = 0; ch < src->nlanes; ch++) {
        size_t n = src->lanes[ch].nsteps;
        if (!n)
            continue;
        dst->lanes[ch].steps = malloc(n * sizeof(orb_step_t));
        if (!dst->lanes[ch].steps) {
            orb_plan_free(dst);
            return ORB_ERR_NO_MEMORY;
        }
        memcpy(dst->lanes[ch].steps, src->lanes[ch].steps, n * sizeof(orb_step_t));
        dst->lanes[ch].nsteps = dst->lanes[ch].cap = n;
    }
    return ORB_OK;
}

/* ---- running ------------------------------------------------------------------------ */

static orb_status_t run_ops(struct orb_comm *c, orb_exec_op_t *ops, int n)
{
    if (c->broken)
        return orb_comm_fail(c, c->broken, "rank %d: the communicator is unusable after an earlier error "
                                           "(%s); destroy it and create a new one",
                             c->rank, orb_status_name(c->broken));
    if (atomic_load(&c->aborted))
        return orb_comm_fail(c, ORB_ERR_ABORTED, "rank %d: orb_comm_abort was called on this communicator", c->rank);
    char err[ORB_ERRMSG_BYTES];
    orb_status_t posted = orb_box_error(c->box, err, sizeof err); /* a peer already failed the job */
    if (posted != ORB_OK) {
        c->broken = posted;
        return orb_comm_fail(c, posted, "%s", err);
    }
    orb_status_t st = orb_exec_run(&c->env, ops, n, err, sizeof err);
    if (st != ORB_OK) {
        c->broken = st;
        if (st == ORB_ERR_PEER_LOST || st == ORB_ERR_ABORTED)
            atomic_store(&c->async_error, st);
        return orb_comm_fail(c, st, "%s", err);
    }
    return ORB_OK;
}

static orb_status_t collective(orb_comm_t comm, const orb_call_t *k, orb_stream_t stream)
{
    const char *fn = orb_call_fn_name(k->coll);
    orb_status_t st = orb_comm_check_handle(comm, fn);
    if (st != ORB_OK)
        return st;
    struct orb_comm *c = comm;
    if (stream || orb_cuda_is_device_ptr(k->sendbuf) || orb_cuda_is_device_ptr(k->recvbuf)) {
        if (group_depth > 0)
            return orb_cuda_group_add(c, (orb_coll_t)k->coll, k->sendbuf, k->recvbuf, k->count, k->dtype, k->op,
                                      k->root, stream);
        return orb_cuda_collective(c, (orb_coll_t)k->coll, k->sendbuf, k->recvbuf, k->count, k->dtype, k->op,
                                   k->root, stream);
    }
    size_t in_count, out_count;
    st = orb_call_validate(c, k, &in_count, &out_count);
    if (st != ORB_OK)
        return st;

    size_t esz = orb_dtype_size(k->dtype);
    orb_call_key_t key = {k->coll, k->count, esz, k->root, k->op};
    if (k->coll == ORB_COLL_BARRIER)
        key.elem_size = 1;
    const orb_plan_cache_entry_t *entry;
    char why[256] = "";
    st = orb_comm_plan(c, &key, &entry, why, sizeof why);
    if (st != ORB_OK)
        return orb_comm_fail(c, st, "%s: rank %d: no algorithm for this call: %s", fn, c->rank, why);
    const orb_plan_t *plan = &entry->plan;
    ORB_INFO("%s #%llu count %zu %s: %s, chunk %zu elements, %d channel%s, predicted %.1f us (%s)", fn,
             (unsigned long long)c->seq + 1, k->count, orb_dtype_name(k->dtype), orb_algo_name(plan->args.algo),
             plan->args.chunk_elems, plan->nlanes, plan->nlanes > 1 ? "s" : "", entry->predicted_us, entry->reason);

    orb_exec_op_t op = {
        .plan = plan, .in = k->sendbuf, .out = k->recvbuf, .dtype = k->dtype,
        .op = k->op == ORB_AVG ? ORB_SUM : k->op, .postdiv = k->op == ORB_AVG ? c->nranks : 0,
    };
    if (k->coll == ORB_COLL_BARRIER) {
        op.in = op.out = &c->barrier_byte; /* one byte moves; only its arrival matters */
        op.dtype = ORB_UINT8;
        op.op = ORB_MAX;
        op.postdiv = 0;
    }
    orb_call_signature(c, k, &op.sig, &op.sync_next, &op.sync_prev);

    void *scratch = NULL;
    if (orb_plan_out_is_scratch(plan)) {
        /* A non-root of reduce/gather that must hold partial results: give it room. */
        size_t need = plan->out_count * esz;
        if (group_depth > 0) {
            scratch = malloc(need);
            if (!scratch)
                return ORB_ERR_NO_MEMORY;
            op.out = scratch;
        } else {
            if (need > c->scratch_bytes) {
                void *p = realloc(c->scratch, need);
                if (!p)
                    return orb_comm_fail(c, ORB_ERR_NO_MEMORY, "%s: rank %d: no memory for %zu bytes of scratch",
                                         fn, c->rank, need);
                c->scratch = p;
                c->scratch_bytes = need;
            }
            op.out = c->scratch;
        }
    }

    if (group_depth > 0) {
        if (group_n == group_cap) {
            int ncap = group_cap ? 2 * group_cap : 16;
            queued_t *q = realloc(group_q, sizeof *q * (size_t)ncap);
            if (!q)
                return ORB_ERR_NO_MEMORY;
            group_q = q;
            group_cap = ncap;
        }
        queued_t *q = &group_q[group_n];
        q->comm = c;
        q->op = op;
        q->scratch = scratch;
        st = plan_copy(&q->plan, plan);
        if (st != ORB_OK) {
            free(scratch);
            return st;
        }
        group_n++;
        return ORB_OK;
    }
    return run_ops(c, &op, 1);
}

orb_status_t orb_allreduce(const void *sendbuf, void *recvbuf, size_t count, orb_dtype_t dtype, orb_op_t op,
                           orb_comm_t comm, orb_stream_t stream)
{
    orb_call_t k = {ORB_COLL_ALLREDUCE, sendbuf, recvbuf, count, dtype, op, 0};
    return collective(comm, &k, stream);
}

orb_status_t orb_broadcast(const void *sendbuf, void *recvbuf, size_t count, orb_dtype_t dtype, int root,
                           orb_comm_t comm, orb_stream_t stream)
{
    orb_call_t k = {ORB_COLL_BROADCAST, sendbuf, recvbuf, count, dtype, ORB_SUM, root};
    return collective(comm, &k, stream);
}

orb_status_t orb_reduce(const void *sendbuf, void *recvbuf, size_t count, orb_dtype_t dtype, orb_op_t op, int root,
                        orb_comm_t comm, orb_stream_t stream)
{
    orb_call_t k = {ORB_COLL_REDUCE, sendbuf, recvbuf, count, dtype, op, root};
    return collective(comm, &k, stream);
}

orb_status_t orb_gather(const void *sendbuf, void *recvbuf, size_t sendcount, orb_dtype_t dtype, int root,
                        orb_comm_t comm, orb_stream_t stream)
{
    orb_call_t k = {ORB_COLL_GATHER, sendbuf, recvbuf, sendcount, dtype, ORB_SUM, root};
    return collective(comm, &k, stream);
}

orb_status_t orb_allgather(const void *sendbuf, void *recvbuf, size_t sendcount, orb_dtype_t dtype, orb_comm_t comm,
                           orb_stream_t stream)
{
    orb_call_t k = {ORB_COLL_ALLGATHER, sendbuf, recvbuf, sendcount, dtype, ORB_SUM, 0};
    return collective(comm, &k, stream);
}

orb_status_t orb_reduce_scatter(const void *sendbuf, void *recvbuf, size_t recvcount, orb_dtype_t dtype, orb_op_t op,
                                orb_comm_t comm, orb_stream_t stream)
{
    orb_call_t k = {ORB_COLL_REDUCE_SCATTER, sendbuf, recvbuf, recvcount, dtype, op, 0};
    return collective(comm, &k, stream);
}

orb_status_t orb_barrier(orb_comm_t comm)
{
    orb_call_t k = {ORB_COLL_BARRIER, NULL, NULL, 1, ORB_UINT8, ORB_MAX, 0};
    return collective(comm, &k, NULL);
}

orb_status_t orb_send(const void *buf, size_t count, orb_dtype_t dtype, int peer, orb_comm_t comm,
                      orb_stream_t stream)
{
    orb_call_t k = {ORB_COLL_SEND, buf, NULL, count, dtype, ORB_SUM, peer};
    return collective(comm, &k, stream);
}

orb_status_t orb_recv(void *buf, size_t count, orb_dtype_t dtype, int peer, orb_comm_t comm, orb_stream_t stream)
{
    orb_call_t k = {ORB_COLL_RECV, NULL, buf, count, dtype, ORB_SUM, peer};
    return collective(comm, &k, stream);
}
