/* Host buffers: prepared calls (coll_call.h) become the CPU executor's operations
 * (collectives/exec.h), with scratch for the non-roots that need it and for plans that work
 * in scratch of their own, and a failure leaves the communicator unusable. */
#include <stdint.h>
#include <stdlib.h>

#include "comm/coll_call.h"
#include "comm/comm_impl.h"
#include "comm/comm_trace.h"
#include "core/dtype.h"
#include "kernels/step.h"
#include "transport/window.h"

/* Scratch is handed out in slices of this alignment (every dtype's). */
#define SCRATCH_ALIGN 64

static size_t aligned(size_t bytes) { return (bytes + SCRATCH_ALIGN - 1) / SCRATCH_ALIGN * SCRATCH_ALIGN; }

/* Output room of a non-root that needs it, then the plan's workspace. */
static size_t out_need(const orb_prepared_t *p)
{
    return orb_plan_out_is_scratch(p->plan) ? aligned(p->plan->out_count * orb_dtype_bytes(p->a.dtype)) : 0;
}

static size_t scratch_need(const orb_prepared_t *p)
{
    return out_need(p) + aligned(p->plan->scratch_count * orb_dtype_bytes(p->a.dtype));
}

/* Does the call write its output past the caches (comm_cache.c)? From the whole cache's size,
 * or sooner (c->stream_copy_bytes, never above it) when it writes an output of its own that it
 * never reads (orb_stream_copy_span): a small call, every latency call, is told by two compares. */
static int stream_out(const struct orb_comm *c, const orb_prepared_t *p)
{
    const size_t esz = orb_dtype_bytes(p->a.dtype), ob = p->plan->out_count * esz, ib = p->plan->in_count * esz;
    if (ob < c->stream_copy_bytes && ib < c->stream_copy_bytes)
        return 0;
    return ob >= orb_comm_stream_bytes() ||
           orb_stream_copy_span(p->a.coll, p->in, ib, p->out, ob) >= c->stream_copy_bytes;
}

/* Field by field, not zeroed whole: an operation is some 450 bytes, most of them per-lane
 * progress that orb_exec_run sets for the lanes the plan has, and this is every call's path. */
static void exec_op(struct orb_comm *c, const orb_prepared_t *p, orb_exec_op_t *op)
{
    op->plan = p->plan;
    op->in = p->in;
    op->out = p->out;
    op->scratch = NULL;
    op->dtype = p->a.dtype;
    op->op = orb_call_elem_op(p->a.op);
    op->postdiv = orb_call_postdiv(p->a.op, c->nranks);
    op->sig = p->sig;
    op->sync_next = p->sync_next;
    op->sync_prev = p->sync_prev;
    op->trace_id = p->trace_id;
    op->stream_out = stream_out(c, p);
    op->addr_in = op->addr_out = 0;
    op->guard_writes = 0;
    op->sync_defer = orb_coll_rooted(p->a.coll);
    if (p->a.coll == ORB_COLL_BARRIER) {
        op->in = op->out = &c->barrier_byte; /* one byte moves; only its arrival matters */
        op->dtype = ORB_UINT8;
        op->op = ORB_MAX;
        op->postdiv = 0;
    }
}

/* Does the plan write this rank's output buffer (not scratch)? PLAN_WRITES: some step does;
 * PLAN_WRITES_ELSE: some step other than a local copy of the input onto the same bytes of the
 * output, which writes nothing (the executor skips it): an in-place broadcast's root. */
#define PLAN_WRITES 1u
#define PLAN_WRITES_ELSE 2u
static unsigned plan_writes_out(const orb_plan_t *plan, const orb_exec_op_t *op)
{
    const size_t esz = orb_dtype_bytes(op->dtype);
    unsigned w = 0;
    for (int ch = 0; ch < plan->nlanes; ch++)
        for (size_t i = 0; i < plan->lanes[ch].nsteps; i++) {
            const orb_step_t *s = &plan->lanes[ch].steps[i];
            const unsigned props = orb_step_props(s->kind);
            if (!(props & ORB_STEP_WRITES_DST) || (s->flags & ORB_STEP_DST_SCRATCH))
                continue;
            const int onto_itself = s->recv_peer < 0 && !(props & ORB_STEP_REDUCES) && op->postdiv <= 1 &&
                                    s->src_buf == ORB_BUF_INPUT && op->in && op->out &&
                                    (const char *)op->in + s->src_off * esz == (const char *)op->out + s->dst_off * esz;
            w |= PLAN_WRITES | (onto_itself ? 0u : PLAN_WRITES_ELSE);
            if (w & PLAN_WRITES_ELSE)
                return w;
        }
    return w;
}

/* Which of call k's buffers stay untouched while the group of n calls runs: its input when no
 * call's output overlaps it (its own only counts when its plan writes the output), its
 * output when it is alone and its plan writes none of it. Twice, in one pass: counting every
 * write (in, out), and with a copy onto itself writing nothing (self_in, self_out). */
static void untouched(const orb_prepared_t *const *p, const orb_exec_op_t *ops, int n, int k, size_t ib, int *in,
                      int *out, int *self_in, int *self_out)
{
    const orb_exec_op_t *op = &ops[k];
    const unsigned w = plan_writes_out(p[k]->plan, op);
    int own = 0, other = 0; /* the input overlaps this call's output, another's */
    for (int j = 0; j < n && op->in && !other; j++) {
        const size_t ob = p[j]->plan->out_count * orb_dtype_bytes(ops[j].dtype);
        if (orb_ranges_overlap(op->in, ib, ops[j].out, ob))
            *(j == k ? &own : &other) = 1;
    }
    *in = op->in && !other && !(own && (w & PLAN_WRITES));
    *self_in = op->in && !other && !(own && (w & PLAN_WRITES_ELSE));
    *out = n == 1 && op->out && !(w & PLAN_WRITES);
    *self_out = n == 1 && op->out && !(w & PLAN_WRITES_ELSE);
}

/* Which of op's buffers lie in this process's windows: 1 its input, 2 its output; a buffer
 * smaller than a piece may be never (none of its pieces could go as an address). Apart, so
 * that every call's path through addr_sources stays as short as it was (inlined, it cost the
 * 8-byte calls 20-40 instructions: the compiler then left exec_op out of line). */
static __attribute__((noinline)) unsigned windows_of(const orb_exec_op_t *op, orb_coll_t coll, size_t ib, size_t ob)
{
    if (coll == ORB_COLL_BARRIER)
        return 0;
    return (ib >= ORB_CMA_MIN_PIECE && orb_window_holds(op->in, ib) ? 1u : 0u) |
           (ob >= ORB_CMA_MIN_PIECE && orb_window_holds(op->out, ob) ? 2u : 0u);
}

/* Which of call k's buffers pieces may leave as addresses, read in place until the call ends.
 *
 * Shared-memory peers read them themselves (single copy, cma.h): only for inputs from twice
 * the L2 cache's size (smaller, copies through a slot stay in the caches) up to the
 * last-level cache's: larger, the slot path writes the output past the caches (comm_cache.c),
 * and the sender's copy into the slot runs on its own core beside the receiver's, where a
 * single-copy read would put all of it on the receiver. Never for reductions: what arrives
 * is reduced, so a read into the slot would only move the sender's copy onto the receiver's
 * core (all-reduce at 1 MiB, reduce at 1 and 4 MiB fell behind Open MPI that way); nor for
 * gather, whose root is the busy end already (2 ranks, 2 and 4 MiB: 1.15x and 1.10x slower
 * single-copy).
 *
 * Transports that send from the caller's buffer themselves (ORB_ADDR_LOCAL: tcp) take any call
 * with pieces that large: the kernel copies the piece to the wire either way, so the copy
 * into the slot is saved on the sender's own core and nothing moves elsewhere. They can also
 * take a piece back (settle: copy it into its slot while it waits), so a call alone may send
 * them even from a buffer its plan writes - the in-place all-reduce of every gradient bucket -
 * with the executor settling a lane's unsent pieces before it writes over them
 * (guard_writes). In the ring and the exchange that never happens (a region is rewritten only
 * with data that the peer made from the piece, which must have left first); in the in-place
 * all-to-all it does (a block is received where it was just sent from). */
static void addr_sources(const struct orb_comm *c, const orb_prepared_t *const *p, orb_exec_op_t *ops, int n, int k)
{
    orb_exec_op_t *op = &ops[k];
    const size_t esz = orb_dtype_bytes(op->dtype), ib = p[k]->plan->in_count * esz;
    const orb_coll_t coll = p[k]->a.coll;
    const int cma = c->cma_bytes && ib >= c->cma_bytes && ib < c->cma_upto && !orb_coll_reduces(coll) &&
                    coll != ORB_COLL_GATHER && coll != ORB_COLL_BARRIER;
    const int local = c->local_send_bytes && coll != ORB_COLL_BARRIER &&
                      (ib >= c->local_send_bytes || p[k]->plan->out_count * esz >= c->local_send_bytes);
    const unsigned kinds = (cma ? ORB_ADDR_PEER : 0u) | (local ? ORB_ADDR_LOCAL : 0u);
    /* a window's peers read it in place whatever the call: nothing moves onto the reader's
     * core that the slot would not have put there, and the sender's copy is saved */
    const size_t ob = p[k]->plan->out_count * esz;
    _Static_assert((ORB_CMA_MIN_PIECE & (ORB_CMA_MIN_PIECE - 1)) == 0, "(ib | ob) >= it: either is");
    const unsigned win = c->window_readers && (ib | ob) >= ORB_CMA_MIN_PIECE ? windows_of(op, coll, ib, ob) : 0u;
    const unsigned win_in = win & 1u ? ORB_ADDR_WINDOW : 0u, win_out = win & 2u ? ORB_ADDR_WINDOW : 0u;
    if (!kinds && !win)
        return;
    int in, out, self_in, self_out;
    untouched(p, ops, n, k, ib, &in, &out, &self_in, &self_out);
    /* windows also from an in-place broadcast's root: single-copy pieces from there took 1.3
     * and 1.8x the time of the slots at 256 KiB and 1 MiB on the Zen 4 VM (2026-12-08) */
    op->addr_in = (in ? kinds : 0u) | (self_in ? win_in : 0u);
    op->addr_out = (out ? kinds : 0u) | (self_out ? win_out : 0u);
    if (n == 1 && (kinds & ORB_ADDR_LOCAL) && ((!in && op->in) || (!out && op->out))) {
        op->addr_in |= op->in ? ORB_ADDR_LOCAL : 0u;
        op->addr_out |= op->out ? ORB_ADDR_LOCAL : 0u;
        op->guard_writes = 1;
    }
}

orb_status_t orb_host_usable(struct orb_comm *c)
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
    return ORB_OK;
}

static orb_status_t run_failed(struct orb_comm *c, orb_status_t st, const char *err)
{
    c->broken = st;
    if (st == ORB_ERR_PEER_LOST || st == ORB_ERR_ABORTED)
        atomic_store(&c->async_error, st);
    return orb_comm_fail(c, st, "%s", err);
}

orb_status_t orb_host_eager(struct orb_comm *c, orb_eager_op_t *ops, int n, int *left)
{
    *left = n;
    orb_status_t st = orb_host_usable(c); /* (its error, told once: a run would say it again, worse) */
    if (st != ORB_OK || c->due.n) /* due handshakes: the general executor takes them first */
        return st;
    char err[ORB_ERRMSG_BYTES];
    const int m = orb_exec_eager(&c->env, ops, n, err, sizeof err);
    if (m < 0)
        return run_failed(c, (orb_status_t)m, err);
    *left = m;
    return ORB_OK;
}

orb_status_t orb_host_settle(struct orb_comm *c)
{
    if (!c->due.n && !c->due.confirm_pos)
        return ORB_OK;
    orb_status_t st = orb_host_usable(c);
    if (st != ORB_OK)
        return st;
    char err[ORB_ERRMSG_BYTES];
    st = orb_exec_run(&c->env, NULL, 0, err, sizeof err);
    return st == ORB_OK ? ORB_OK : run_failed(c, st, err);
}

orb_status_t orb_host_run(struct orb_comm *c, const orb_prepared_t *const *p, int n)
{
    orb_status_t ust = orb_host_usable(c);
    if (ust != ORB_OK)
        return ust;
    char err[ORB_ERRMSG_BYTES];

    orb_exec_op_t few[4]; /* a call, or a small group's: no allocation on the latency path */
    orb_exec_op_t *ops = n <= 4 ? few : malloc(sizeof *ops * (size_t)n);
    if (!ops)
        return orb_comm_fail(c, ORB_ERR_NO_MEMORY, "orb_group_end: rank %d: no memory for the %d calls of a group",
                             c->rank, n);
    /* A non-root of reduce/gather that must hold partial results gets room of its own. */
    size_t need = 0;
    for (int i = 0; i < n; i++)
        need += scratch_need(p[i]);
    if (need > c->scratch_bytes) {
        void *s = realloc(c->scratch, need);
        if (!s) {
            if (ops != few)
                free(ops);
            return orb_comm_fail(c, ORB_ERR_NO_MEMORY, "%s: rank %d: no memory for %zu bytes of scratch",
                                 orb_coll_fn_name(p[0]->a.coll), c->rank, need);
        }
        c->scratch = s;
        c->scratch_bytes = need;
    }
    char *scratch = c->scratch;
    for (int i = 0; i < n; i++) {
        exec_op(c, p[i], &ops[i]);
        if (out_need(p[i]))
            ops[i].out = scratch;
        if (p[i]->plan->scratch_count)
            ops[i].scratch = scratch + out_need(p[i]);
        scratch += scratch_need(p[i]);
    }
    for (int i = 0; i < n; i++) /* once every call's output is known */
        addr_sources(c, p, ops, n, i);
    orb_comm_trace_exec(c, n);
    orb_status_t st = orb_exec_run(&c->env, ops, n, err, sizeof err);
    if (ops != few)
        free(ops);
    return st == ORB_OK ? ORB_OK : run_failed(c, st, err);
}
