/* The front end of every collective, host and device buffers alike: a call is checked (the
 * handle, every argument), planned (the plan cache, comm_plan.c) and signed (its sequence
 * number) once, here, then run by the host executor (coll_host.c) or the device executor
 * (coll_cuda.c), or queued inside orb_group_start/end in one queue for both. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/coll_call.h"
#include "comm/coll_cuda.h"
#include "comm/comm_impl.h"
#include "comm/comm_trace.h"
#include "core/dtype.h"
#include "core/log.h"

/* FNV-1a over the vectors' bytes: plans are cached per vector set, compared in full on a hit. */
static uint64_t vec_hash(const size_t *v, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    const unsigned char *b = (const unsigned char *)v;
    for (size_t i = 0; i < n * sizeof *v; i++)
        h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

/* The plan and the signature: what either executor needs. */
static orb_status_t plan_and_sign(orb_prepared_t *p)
{
    struct orb_comm *c = p->comm;
    const orb_call_t *k = &p->a;
    /* a barrier moves one byte, whatever dtype it names */
    const size_t esz = k->coll == ORB_COLL_BARRIER ? 1 : orb_dtype_bytes(k->dtype);
    p->key = (orb_call_key_t){k->coll, k->count, esz, k->root, k->op, NULL, 0,
                              c->deterministic && orb_coll_reduces(k->coll), p->device};
    if (orb_coll_vector(k->coll)) { /* validated and packed in c->vec */
        p->key.vec = c->vec;
        p->key.vhash = vec_hash(c->vec, 4 * (size_t)c->nranks);
    }
    const orb_plan_cache_entry_t *entry;
    char why[ORB_ERRMSG_BYTES / 2];
    why[0] = 0; /* not = "": that would clear all of it on every call */
    orb_status_t st = orb_comm_plan(c, &p->key, &entry, why, sizeof why);
    if (st != ORB_OK)
        return orb_comm_fail(c, st, "%s: rank %d: no algorithm for this call: %s", orb_coll_fn_name(k->coll),
                             c->rank, why);
    p->plan = &entry->plan;
    orb_call_signature(c, k, &p->sig, &p->sync_next, &p->sync_prev);
    ORB_INFO("%s #%llu count %zu %s%s: %s, chunk %zu elements, %d channel%s, predicted %.1f us (%s)",
             orb_coll_fn_name(k->coll),
             (unsigned long long)c->seq, k->count, orb_dtype_name(k->dtype), p->device ? " on the device" : "",
             orb_algo_name(p->plan->args.algo), p->plan->args.chunk_elems, p->plan->nlanes,
             p->plan->nlanes > 1 ? "s" : "", entry->predicted_us, entry->reason);
    return ORB_OK;
}

/* ---- alltoallv's pairs ---------------------------------------------------------------- */

_Static_assert(sizeof(size_t) == sizeof(uint64_t), "the vectors travel as uint64");

/* With signature checks on, every pair of an alltoallv first trades what each side will send
 * and expects (an all-to-all of two numbers): a pair that disagrees would otherwise cut its
 * blocks differently, or wait for a block that never comes. Both ranks of such a pair see it,
 * name each other and the counts, and tell every other rank, which fails instead of waiting
 * for them. Host memory and the host executor, whatever the call's buffers. */
static orb_status_t check_vectors(struct orb_comm *c, const orb_call_t *k)
{
    const size_t n = (size_t)c->nranks;
    if (!c->check_signatures || n == 1)
        return ORB_OK;
    if (!c->vec_peer && !(c->vec_peer = malloc(4 * n * sizeof *c->vec_peer)))
        return orb_comm_fail(c, ORB_ERR_NO_MEMORY, "orb_alltoallv: rank %d: no memory to check the counts", c->rank);
    size_t *mine = c->vec_peer, *theirs = c->vec_peer + 2 * n;
    for (size_t j = 0; j < n; j++) {
        mine[2 * j] = k->sendcounts[j];
        mine[2 * j + 1] = k->recvcounts[j];
    }
    orb_prepared_t p = {.comm = c, .a = {.coll = ORB_COLL_ALLTOALL, .sendbuf = mine, .recvbuf = theirs, .count = 2,
                              .dtype = ORB_UINT64, .op = ORB_SUM},
                        .in = mine, .out = theirs, .in_count = 2 * n, .out_count = 2 * n};
    const orb_prepared_t *pp = &p;
    orb_status_t st = plan_and_sign(&p);
    if (st == ORB_OK)
        st = orb_host_run(c, &pp, 1);
    if (st != ORB_OK)
        return st;
    for (size_t j = 0; j < n; j++) {
        const size_t they_send = theirs[2 * j], they_expect = theirs[2 * j + 1];
        if (they_send == k->recvcounts[j] && they_expect == k->sendcounts[j])
            continue;
        char msg[ORB_ERRMSG_BYTES / 2];
        if (they_send != k->recvcounts[j])
            snprintf(msg, sizeof msg,
                     "orb_alltoallv: rank %d has recvcounts[%zu]=%zu but rank %zu has sendcounts[%d]=%zu: "
                     "rank i's sendcounts[j] must equal rank j's recvcounts[i] on every pair",
                     c->rank, j, k->recvcounts[j], j, c->rank, they_send);
        else
            snprintf(msg, sizeof msg,
                     "orb_alltoallv: rank %d has sendcounts[%zu]=%zu but rank %zu has recvcounts[%d]=%zu: "
                     "rank i's sendcounts[j] must equal rank j's recvcounts[i] on every pair",
                     c->rank, j, k->sendcounts[j], j, c->rank, they_expect);
        for (int q = 0; q < c->nranks; q++) /* the others would wait for this rank's blocks */
            if (q != c->rank && c->env.post_error)
                c->env.post_error(c->env.ctx, q, ORB_ERR_MISMATCH, msg);
        c->broken = ORB_ERR_MISMATCH;
        return orb_comm_fail(c, ORB_ERR_MISMATCH, "%s", msg);
    }
    return ORB_OK;
}

/* ---- groups ------------------------------------------------------------------------- */

typedef struct {
    orb_prepared_t p;
    const orb_plan_t *borrowed; /* the cache's plan it runs (see GROUP_BORROW), or NULL: its copy */
    orb_plan_t plan;            /* owned copy: the cache may evict while the group is open */
    orb_trace_mark_t mark;
    int eager; /* no plan yet: the eager path's to run (eager_call), planned only if it leaves it */
} queued_t;

/* (Not a pointer to its own copy: the queue moves when it grows.) */
static const orb_plan_t *plan_of(const queued_t *q) { return q->eager ? NULL : q->borrowed ? q->borrowed : &q->plan; }

/* The cache evicts its least recently used shape, and a group's calls are its most recently
 * used: while a group has made fewer lookups on a communicator than the cache has entries,
 * none of its plans can go. A call makes at most two (an alltoallv's count check is the
 * other), so the first GROUP_BORROW host calls of a group run the cache's plans as they are
 * (a grouped send and recv copied theirs on every call: some 270 instructions); the call that
 * would reach the limit first copies those, and it and every later call copies its own. */
enum { GROUP_BORROW = ORB_PLAN_CACHE / 2 - 1 };

/* A thread's groups, in one thread-local object: a thread-local read in a shared library is a
 * call to __tls_get_addr, so a function takes the object's address once (group_state). */
typedef struct {
    int depth;
    queued_t *q; /* the open group's calls */
    int n, cap;
    int nborrowed; /* of its calls, those that run the cache's plan */
    /* The last group's queue, kept with its plans' step arrays for the next group: a grouped
     * send and recv (every ring shift) would otherwise allocate and free on every call. Freed
     * when the thread exits (a key's destructor; the main thread's stays reachable to the end). */
    queued_t *spare;
    int spare_cap;
    int armed; /* the key's destructor will free the spare at thread exit (set once a thread) */
} group_tls_t;
static _Thread_local group_tls_t group_tls;

/* Not inlined on purpose: gcc recomputes a thread-local address where it is used rather than
 * keep it (a grouped send made four __tls_get_addr calls), but keeps a call's result. */
__attribute__((noinline)) static group_tls_t *group_state(void) { return &group_tls; }
/* Threads with a group open, process-wide: while none is, a call needs no look at its own
 * thread's groups. */
static _Atomic int groups_open;
static pthread_key_t spare_key;
static int spare_key_ok;
static pthread_once_t spare_once = PTHREAD_ONCE_INIT;

static void queue_free(queued_t *q, int cap)
{
    for (int i = 0; i < cap; i++)
        orb_plan_free(&q[i].plan);
    free(q);
}

static void spare_release(void *unused)
{
    (void)unused;
    group_tls_t *g = group_state();
    queue_free(g->spare, g->spare_cap);
    g->spare = NULL;
    g->spare_cap = 0;
    g->armed = 0; /* the key's value is NULL now: a later spare arms it again */
}

static void spare_key_create(void)
{
    spare_key_ok = pthread_key_create(&spare_key, spare_release) == 0; /* else no spares are kept */
}

int orb_group_open(void) { return group_state()->depth > 0; }

orb_status_t orb_group_start(void)
{
    if (group_state()->depth++ == 0)
        atomic_fetch_add_explicit(&groups_open, 1, memory_order_relaxed);
    return ORB_OK;
}

/* A copy the group owns (the cache may evict its plan while the group is open), in the step
 * arrays dst already has where they are large enough. */
static orb_status_t plan_copy(orb_plan_t *dst, const orb_plan_t *src)
{
    orb_lane_t keep[ORB_MAX_CHANNELS];
    memcpy(keep, dst->lanes, sizeof keep);
    *dst = *src;
    memcpy(dst->lanes, keep, sizeof keep);
    for (int ch = 0; ch < ORB_MAX_CHANNELS; ch++) {
        orb_lane_t *l = &dst->lanes[ch];
        const size_t n = ch < src->nlanes ? src->lanes[ch].nsteps : 0;
        l->nsteps = 0;
        if (n > l->cap) {
            orb_step_t *s = realloc(l->steps, n * sizeof *s);
            if (!s)
                return ORB_ERR_NO_MEMORY;
            l->steps = s;
            l->cap = n;
        }
        if (n)
            memcpy(l->steps, src->lanes[ch].steps, n * sizeof *l->steps);
        l->nsteps = n;
    }
    return ORB_OK;
}

/* The queue's next slot, for a call to be prepared in place (a prepared call is some 330
 * bytes: copying one into the queue was 40 instructions of every grouped call). */
static orb_status_t queue_slot(group_tls_t *g, struct orb_comm *c, orb_coll_t coll)
{
    if (!g->q && g->spare) { /* the last group's queue, step arrays and all */
        g->q = g->spare;
        g->cap = g->spare_cap;
        g->spare = NULL;
        g->spare_cap = 0;
    }
    if (g->n == g->cap) {
        int ncap = g->cap ? 2 * g->cap : 16;
        queued_t *q = realloc(g->q, sizeof *q * (size_t)ncap);
        if (!q)
            return orb_comm_fail(c, ORB_ERR_NO_MEMORY, "%s: rank %d: no memory to queue a call of the group",
                                 orb_coll_fn_name(coll), c->rank);
        memset(q + g->cap, 0, sizeof *q * (size_t)(ncap - g->cap)); /* no step arrays yet */
        g->q = q;
        g->cap = ncap;
    }
    return ORB_OK;
}

/* Every call of q[0..n) that runs the cache's plan gets its own copy: lookups to come may
 * evict it. */
static orb_status_t unborrow(queued_t *q, int n)
{
    for (int i = 0; i < n; i++)
        if (q[i].borrowed) {
            if (plan_copy(&q[i].plan, q[i].borrowed) != ORB_OK)
                return ORB_ERR_NO_MEMORY;
            q[i].borrowed = NULL;
            q[i].p.plan = &q[i].plan;
        }
    return ORB_OK;
}

/* Call p, checked and prepared in the queue's next slot (queue_slot), joins the group. */
static orb_status_t enqueue(group_tls_t *g, orb_prepared_t *p)
{
    struct orb_comm *c = p->comm;
    /* before this call's lookup (eager calls, which make none, may have taken the place
     * where the count reached the limit) */
    if (g->n >= GROUP_BORROW && g->nborrowed) {
        if (unborrow(g->q, g->n) != ORB_OK)
            return orb_comm_fail(c, ORB_ERR_NO_MEMORY, "%s: rank %d: no memory to queue a call of the group",
                                 orb_coll_fn_name(p->a.coll), c->rank);
        g->nborrowed = 0;
    }
    orb_status_t st = plan_and_sign(p);
    if (st != ORB_OK)
        return st;
    queued_t *q = &g->q[g->n];
    q->eager = 0;
    /* device calls keep copying, as before: that path cannot be measured without a GPU here */
    q->borrowed = g->n < GROUP_BORROW && !p->device ? p->plan : NULL;
    if (!q->borrowed && plan_copy(&q->plan, p->plan) != ORB_OK)
        return orb_comm_fail(c, ORB_ERR_NO_MEMORY, "%s: rank %d: no memory to queue a call of the group",
                             orb_coll_fn_name(p->a.coll), c->rank);
    g->nborrowed += q->borrowed != NULL;
    g->n++;
    return ORB_OK;
}

/* ---- the eager path ----------------------------------------------------------------- */

enum { EAGER_GROUP_MAX = 16 }; /* calls of a group the eager path runs together, at most */

/* A send or recv small enough to go as one piece straight through the transport
 * (collectives/exec.h, orb_exec_eager): host memory, at most c->eager_bytes (ORBIT_EAGER_BYTES,
 * never more than the plan's one piece holds: comm_health.c), and no tracer, whose records
 * follow the plan's steps. So too a rooted call of two ranks whose pieces vouch
 * (c->eager_colls), alone: in a group, no call vouches (run_ops_n). */
static int eager_call(const struct orb_comm *c, const orb_prepared_t *p, int grouped)
{
    const orb_call_t *k = &p->a;
    return ((c->eager_colls >> k->coll) & 1u) && (!grouped || k->coll == ORB_COLL_SEND || k->coll == ORB_COLL_RECV) &&
           k->count * orb_dtype_bytes(k->dtype) <= c->eager_bytes && k->count && !p->device && !c->tracer;
}

/* A rooted call's one piece (exec.h): the root sends its peer's block (broadcast: all of it;
 * scatter) or receives it (gather; reduce: folded into its own), and moves its own block. */
static void eager_rooted_op(const orb_prepared_t *p, orb_eager_op_t *e)
{
    const orb_call_t *k = &p->a;
    const size_t bytes = k->count * orb_dtype_bytes(k->dtype);
    const int rank = p->comm->rank, peer = 1 - rank; /* (two ranks) */
    const int root = k->root == rank;
    const char *in = p->in;
    char *out = p->out;
    e->peer = peer;
    e->bytes = (uint32_t)bytes;
    e->sig = &p->sig;
    e->done = 0;
    e->reduces = 0;
    e->mine = e->own = NULL;
    /* (offsets only into the buffers a rank has: a non-root's may be NULL) */
    e->src = in;
    e->dst = out;
    switch (k->coll) {
    case ORB_COLL_BROADCAST: /* the root's output gets its input, as everyone's */
        e->sends = root;
        if (root) {
            e->mine = in;
            e->own = out;
        }
        break;
    case ORB_COLL_SCATTER:
        e->sends = root;
        if (root) {
            e->src = in + (size_t)peer * bytes;
            e->mine = in + (size_t)rank * bytes;
            e->own = out;
        }
        break;
    case ORB_COLL_GATHER:
        e->sends = !root;
        if (root) {
            e->dst = out + (size_t)peer * bytes;
            e->mine = in;
            e->own = out + (size_t)rank * bytes;
        }
        break;
    default: /* ORB_COLL_REDUCE: the root's output is op(its input, the peer's) */
        e->sends = !root;
        e->reduces = root;
        e->mine = root ? in : NULL;
        e->dtype = k->dtype;
        e->op = orb_call_elem_op(k->op);
        e->postdiv = orb_call_postdiv(k->op, p->comm->nranks);
        e->count = k->count;
        break;
    }
    e->vouch = e->sends ? ORB_VOUCH_TRUSTED : ORB_VOUCH_CHECKS;
}

static inline void eager_op(const orb_prepared_t *p, orb_eager_op_t *e)
{
    const orb_call_t *k = &p->a;
    e->peer = k->root;
    e->sends = k->coll == ORB_COLL_SEND;
    e->src = k->sendbuf;
    e->dst = k->recvbuf;
    e->bytes = (uint32_t)(k->count * orb_dtype_bytes(k->dtype));
    e->sig = &p->sig;
    e->vouch = ORB_VOUCH_NONE;
    e->done = 0;
}

/* An eager send or recv's signature, no plan (yet). */
static void eager_sign(struct orb_comm *c, orb_prepared_t *p)
{
    orb_call_signature_p2p(c->rank, &p->a, &p->sig);
    p->sync_next = p->sync_prev = -1;
    p->plan = NULL;
    ORB_INFO("%s count %zu %s, peer %d: eager, one piece (at most %zu bytes: ORBIT_EAGER_BYTES)",
             orb_coll_fn_name(p->a.coll), p->a.count, orb_dtype_name(p->a.dtype), p->a.root, c->eager_bytes);
}

/* A rooted call's: it takes the next number (two ranks, checks on: c->eager_colls). */
static void eager_sign_rooted(struct orb_comm *c, orb_prepared_t *p)
{
    orb_call_signature_coll(c, &p->a, &p->sig);
    p->sync_next = c->ring_next;
    p->sync_prev = c->ring_prev;
    p->plan = NULL;
    ORB_INFO("%s #%llu count %zu %s, root %d: eager, one piece (at most %zu bytes: ORBIT_EAGER_BYTES)",
             orb_coll_fn_name(p->a.coll), (unsigned long long)c->seq, p->a.count, orb_dtype_name(p->a.dtype),
             p->a.root, c->eager_bytes);
}

/* Planned after the eager path left it, signed already: a rooted call is signed again to the
 * number it took (one caller of the plan cache's lookup, which the compiler then inlines). */
static orb_status_t eager_replan(orb_prepared_t *p)
{
    const int rooted = !orb_coll_p2p(p->a.coll);
    p->comm->seq -= rooted;
    orb_status_t st = plan_and_sign(p);
    if (st != ORB_OK)
        p->comm->seq += rooted; /* (not signed: the lookup failed) */
    return st;
}

/* Signed, no plan: the eager path runs it at orb_group_end, or plans it then (eager_plan). */
static orb_status_t enqueue_eager(group_tls_t *g, orb_prepared_t *p)
{
    eager_sign(p->comm, p);
    queued_t *q = &g->q[g->n];
    q->eager = 1;
    q->borrowed = NULL;
    g->n++;
    return ORB_OK;
}

/* A call alone on the eager path, then the general one for what that leaves. (Its own copy
 * of the single call's tail below: folded into one, a send alone took 680 instructions, not
 * 630, 2026-11-30.) */
static orb_status_t eager_alone(struct orb_comm *c, orb_prepared_t *p)
{
    orb_eager_op_t e;
    if (p->a.coll == ORB_COLL_SEND || p->a.coll == ORB_COLL_RECV) {
        eager_sign(c, p);
        eager_op(p, &e);
    } else {
        eager_sign_rooted(c, p);
        eager_rooted_op(p, &e);
    }
    orb_trace_mark_t m;
    orb_comm_trace_begin(c, p, 0, &m, orb_trace_ticks());
    int left;
    orb_status_t st = orb_host_eager(c, &e, 1, &left);
    if (st == ORB_OK && left) {
        const orb_prepared_t *pp = p;
        st = eager_replan(p);
        if (st == ORB_OK)
            st = orb_host_run(c, &pp, 1);
    }
    orb_comm_trace_end(c, &m, st, m.flight || m.trace ? orb_trace_ticks() : 0);
    if (st != ORB_OK)
        orb_comm_trace_failed(c, st);
    return st;
}

/* A queued eager call the eager path left: planned now, into the group's own copy (the run's
 * lookups could evict a plan it borrowed). */
static orb_status_t eager_plan(queued_t *q)
{
    orb_status_t st = eager_replan(&q->p);
    if (st != ORB_OK)
        return st;
    if (plan_copy(&q->plan, q->p.plan) != ORB_OK)
        return orb_comm_fail(q->p.comm, ORB_ERR_NO_MEMORY, "%s: rank %d: no memory to queue a call of the group",
                             orb_coll_fn_name(q->p.a.coll), q->p.comm->rank);
    q->eager = 0;
    q->p.plan = &q->plan;
    return ORB_OK;
}

/* The queued calls of the first communicator not yet taken among those with device flag
 * `device`, in queue order, into mine (pointers into the queue); marks them taken. Returns how
 * many (0: none left). Each call's plan is set already (run_group's first loop). */
static int take_next_comm(queued_t *q, int n, char *taken, int device, const orb_prepared_t **mine)
{
    struct orb_comm *c = NULL;
    int m = 0;
    for (int i = 0; i < n; i++) {
        if (taken[i] || q[i].p.device != device || (c && q[i].p.comm != c))
            continue;
        c = q[i].p.comm;
        taken[i] = 1;
        mine[m++] = &q[i].p;
    }
    return m;
}

/* A group's neager eager calls (of its n): where they are all of it, on one communicator, the
 * eager path runs them (a send and a recv: every ring shift); what it leaves, and eager calls
 * beside others, are planned now for the general path. Marks taken those done, *ndone of them. */
static orb_status_t eager_group(queued_t *q, int n, int neager, char *taken, int *ndone)
{
    orb_status_t st = ORB_OK;
    struct orb_comm *c = q[0].p.comm;
    int one = neager == n && n <= EAGER_GROUP_MAX && !c->tracer; /* (one may have started since) */
    for (int i = 1; one && i < n; i++)
        one = q[i].p.comm == c;
    if (one) {
        orb_eager_op_t e[EAGER_GROUP_MAX];
        int left;
        for (int i = 0; i < n; i++)
            eager_op(&q[i].p, &e[i]);
        st = orb_host_eager(c, e, n, &left);
        for (int i = 0; i < n; i++)
            if (e[i].done) {
                taken[i] = 1;
                ++*ndone;
            }
    }
    if (st == ORB_OK && *ndone < n && unborrow(q, n) != ORB_OK) { /* lookups to come */
        orb_set_thread_error("orb_group_end: no memory to run the %d calls of the group", n);
        return ORB_ERR_NO_MEMORY;
    }
    for (int i = 0; i < n && st == ORB_OK; i++)
        if (q[i].eager && !taken[i])
            st = eager_plan(&q[i]);
    return st;
}

/* Device calls first: every communicator's device setup side by side, then one launch per
 * communicator in first-use order, none waiting for another; NULL-stream launches are waited
 * for after all are out. Then the host calls, one run per communicator. */
static orb_status_t run_group(queued_t *q, int n)
{
    /* Small groups (a send and a recv) keep their bookkeeping on the stack: this is the
     * latency path of every grouped point-to-point call. */
    enum { SMALL = 16 };
    orb_prepared_t mine_s[SMALL]; /* device calls: admit and stage change their copies */
    const orb_prepared_t *which_s[SMALL];
    struct orb_comm *pending_s[SMALL];
    char taken_s[SMALL] = {0};
    const int small = n <= SMALL;
    orb_prepared_t *mine = small ? mine_s : malloc(sizeof *mine * (size_t)n);
    const orb_prepared_t **which = small ? which_s : malloc(sizeof *which * (size_t)n);
    struct orb_comm **pending = small ? pending_s : malloc(sizeof *pending * (size_t)n);
    char *taken = small ? taken_s : calloc((size_t)n, 1);
    if (!mine || !which || !pending || !taken) {
        if (!small) {
            free(mine);
            free(which);
            free(pending);
            free(taken);
        }
        orb_set_thread_error("orb_group_end: no memory to run the %d calls of the group", n);
        return ORB_ERR_NO_MEMORY;
    }
    orb_status_t st = ORB_OK;
    int nd = 0, npending = 0;
    const int64_t t0 = orb_trace_ticks();
    int neager = 0;
    for (int i = 0; i < n; i++) { /* the group's calls start together */
        q[i].p.plan = plan_of(&q[i]);
        orb_comm_trace_begin(q[i].p.comm, &q[i].p, 1, &q[i].mark, t0);
        neager += q[i].eager;
    }
    int ndone = 0;
    if (neager && ((st = eager_group(q, n, neager, taken, &ndone)) != ORB_OK || ndone == n))
        goto out;
    for (int i = 0; i < n; i++)
        if (q[i].p.device) {
            mine[nd] = q[i].p;
            mine[nd].plan = plan_of(&q[i]);
            nd++;
        }
    if (nd) {
        st = orb_cuda_admit(mine, nd);
        for (int i = 0, j = 0; i < n; i++) /* the device views admit found */
            if (q[i].p.device) {
                q[i].p.in = mine[j].in;
                q[i].p.out = mine[j].out;
                j++;
            }
    }
    /* Every communicator staged before any fires: staging allocates, and an allocation waits
     * for the device, so it must not come after a kernel that waits for a later launch. */
    orb_cuda_staged_t *staged_s[SMALL], **staged = small ? staged_s : calloc((size_t)n, sizeof *staged);
    int nstaged = 0;
    if (!staged && st == ORB_OK) {
        orb_set_thread_error("orb_group_end: no memory to run the %d calls of the group", n);
        st = ORB_ERR_NO_MEMORY;
    }
    for (int m, left = nd; st == ORB_OK && left > 0 && (m = take_next_comm(q, n, taken, 1, which)) > 0; left -= m) {
        for (int j = 0; j < m; j++)
            mine[j] = *which[j];
        orb_cuda_staged_t *g;
        st = orb_cuda_stage(mine[0].comm, mine, m, &g);
        if (st == ORB_OK && g)
            staged[nstaged++] = g;
    }
    for (int i = 0; i < nstaged; i++) {
        if (st != ORB_OK) { /* one failed: fire none, so no kernel waits for a peer that never comes */
            orb_cuda_drop(staged[i]);
            continue;
        }
        struct orb_comm *c = orb_cuda_staged_comm(staged[i]);
        int wait = 0;
        st = orb_cuda_fire(staged[i], 1, &wait);
        if (wait)
            pending[npending++] = c;
    }
    if (!small)
        free(staged);
    for (int i = 0; i < npending; i++) {
        orb_status_t s = orb_cuda_finish(pending[i], "orb_group_end");
        if (st == ORB_OK)
            st = s;
    }
    /* (counted down: a scan that finds nothing left was a third of a grouped send and recv's
     * bookkeeping here) */
    for (int m, left = n - nd - ndone; left > 0 && (m = take_next_comm(q, n, taken, 0, which)) > 0; left -= m) {
        orb_status_t s = orb_host_run(which[0]->comm, which, m);
        if (st == ORB_OK)
            st = s;
    }
out:
    if (!small) {
        free(mine);
        free(which);
        free(pending);
        free(taken);
    }
    return st;
}

orb_status_t orb_group_end(void)
{
    group_tls_t *g = group_state();
    if (g->depth == 0) {
        orb_set_thread_error("orb_group_end: no matching orb_group_start on this thread");
        return ORB_ERR_INVALID_ARG;
    }
    if (--g->depth > 0)
        return ORB_OK;
    atomic_fetch_sub_explicit(&groups_open, 1, memory_order_relaxed);
    queued_t *q = g->q;
    int n = g->n, cap = g->cap;
    g->q = NULL; /* whatever runs the group starts from an empty queue */
    g->n = g->cap = g->nborrowed = 0;
    orb_status_t st = n ? run_group(q, n) : ORB_OK;
    const int64_t t1 = n ? orb_trace_ticks() : 0;
    for (int i = 0; i < n; i++) /* one verdict for the whole group, one end */
        orb_comm_trace_end(q[i].p.comm, &q[i].mark, st, t1);
    for (int i = 0; st != ORB_OK && i < n; i++)
        orb_comm_trace_failed(q[i].p.comm, st);
    for (int i = 0; i < n; i++) /* the next group's plans will live at these addresses */
        if (!q[i].borrowed)
            orb_comm_trace_plan_gone(q[i].p.comm, &q[i].plan);
    if (!g->armed && q) { /* the destructor frees whatever spare the thread holds then */
        pthread_once(&spare_once, spare_key_create);
        g->armed = spare_key_ok && pthread_setspecific(spare_key, g) == 0;
    }
    if (!g->spare && q && g->armed) {
        g->spare = q;
        g->spare_cap = cap;
    } else {
        queue_free(q, cap);
    }
    return st;
}

/* ---- one call ----------------------------------------------------------------------- */

orb_status_t orb_coll_enter(orb_comm_t comm, const orb_call_t *k, orb_stream_t stream)
{
    orb_status_t st = orb_comm_check_handle(comm, orb_coll_fn_name(k->coll));
    if (st != ORB_OK)
        return st;
    /* A grouped call is prepared in its queue slot, which the group keeps while the call
     * checks; a call that fails a check leaves it to the next (the group's count moves only
     * in enqueue). A grouped device call's device checks wait for orb_group_end. */
    group_tls_t *g = NULL;
    orb_prepared_t one, *p = &one;
    if (atomic_load_explicit(&groups_open, memory_order_relaxed)) {
        g = group_state();
        if (g->depth == 0)
            g = NULL;
        else if ((st = queue_slot(g, comm, k->coll)) != ORB_OK)
            return st;
        else
            p = &g->q[g->n].p;
    }
    /* Filled field by field as the call goes (not zeroed first: this is every call's path). */
    p->comm = comm;
    p->a = *k;
    p->stream = stream;
    p->in = k->sendbuf;
    p->out = k->recvbuf;
    p->device = stream || orb_cuda_any_device_ptr(k->sendbuf, k->recvbuf);
    st = orb_call_validate(comm, &p->a, &p->in_count, &p->out_count);
    if (st != ORB_OK)
        return st;
    if (orb_coll_vector(k->coll) && (st = check_vectors(comm, &p->a)) != ORB_OK)
        return st;
    if (eager_call(comm, p, g != NULL))
        return g ? enqueue_eager(g, p) : eager_alone(comm, p);
    if (g)
        return enqueue(g, p);
    /* The device's own checks (and its setup on first use) before the call takes its sequence
     * number: a call refused on one rank leaves that rank's sequence where its peers' is. */
    if (p->device && (st = orb_cuda_admit(p, 1)) != ORB_OK)
        return st;
    if ((st = plan_and_sign(p)) != ORB_OK)
        return st;
    orb_trace_mark_t m;
    orb_comm_trace_begin(comm, p, 0, &m, orb_trace_ticks());
    const orb_prepared_t *pp = p;
    st = p->device ? orb_cuda_launch(comm, p, 1, 0, NULL) : orb_host_run(comm, &pp, 1);
    orb_comm_trace_end(comm, &m, st, m.flight || m.trace ? orb_trace_ticks() : 0);
    if (st != ORB_OK)
        orb_comm_trace_failed(comm, st);
    return st;
}
