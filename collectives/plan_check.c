/* Symbolic simulation of every rank's plan: see plan_check.h for what is proven. */
#include "plan_check.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One element: the sum over the ranks in mask of element idx; mask 0 = never written. */
typedef struct {
    uint64_t mask;
    uint32_t idx; /* checks are limited to 2^32 elements: 16-byte values keep big runs fast */
    uint32_t post;
} val_t;

typedef struct {
    val_t *data;  /* nslots * slot_elems */
    size_t *len;  /* elements in each slot */
    size_t head;  /* oldest full slot */
    size_t used;  /* full slots */
    size_t moved; /* pieces ever pushed, for reports */
} fifo_t;

typedef struct {
    val_t *mem; /* input and output, aliased when in place, then the plan's scratch */
    size_t in_base, out_base, scratch_base;
} rank_mem_t;

typedef struct {
    size_t step; /* index of the running step */
    size_t done; /* elements of it already moved */
    int queued;
} lane_state_t;

typedef struct {
    const orb_plan_t *plans;
    int n;
    orb_plan_check_opts_t o;
    uint64_t full;
    int ordered; /* ORB_ALGO_ORDERED plans: every reduction must extend a rank-order fold */
    fifo_t **fifos; /* [(sender * n + receiver) * ORB_MAX_CHANNELS + channel], made on first use */
    rank_mem_t *mem;
    lane_state_t *lanes; /* [rank * ORB_MAX_CHANNELS + channel] */
    int *queue;          /* lanes that may be able to move, as rank * ORB_MAX_CHANNELS + channel */
    size_t qhead, qlen;
    val_t *out; /* one piece: a step's values when it reduces or finishes them */
    char *err;
    size_t errlen;
    orb_status_t st;
} check_t;

static orb_status_t fail(check_t *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static orb_status_t fail(check_t *x, const char *fmt, ...)
{
    if (x->st == ORB_OK && x->err && x->errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(x->err, x->errlen, fmt, ap);
        va_end(ap);
    }
    if (x->st == ORB_OK)
        x->st = ORB_ERR_INTERNAL;
    return x->st;
}

static orb_status_t no_memory(check_t *x)
{
    if (x->st == ORB_OK) {
        if (x->err && x->errlen)
            snprintf(x->err, x->errlen, "plan check: out of memory");
        x->st = ORB_ERR_NO_MEMORY;
    }
    return x->st;
}

/* What a step does, as the executors read it (kernels/step.h). */
static int kind_sends(int k) { return (orb_step_props(k) & ORB_STEP_SENDS) != 0; }
static int kind_recvs(int k) { return (orb_step_props(k) & ORB_STEP_RECVS) != 0; }
static int kind_reduces(int k) { return (orb_step_props(k) & ORB_STEP_REDUCES) != 0; }
static int kind_reads_src(int k) { return (orb_step_props(k) & ORB_STEP_READS_SRC) != 0; }
static int kind_writes_dst(int k) { return (orb_step_props(k) & ORB_STEP_WRITES_DST) != 0; }

static const char *buf_name(int b)
{
    return b == ORB_BUF_INPUT ? "input" : b == ORB_BUF_OUTPUT ? "output" : "scratch";
}

/* Where a step writes: the output, or the scratch with ORB_STEP_DST_SCRATCH. */
static int dst_buf(const orb_step_t *s) { return (s->flags & ORB_STEP_DST_SCRATCH) ? ORB_BUF_SCRATCH : ORB_BUF_OUTPUT; }

static size_t buf_size(const orb_plan_t *p, int b)
{
    return b == ORB_BUF_INPUT ? p->in_count : b == ORB_BUF_OUTPUT ? p->out_count : p->scratch_count;
}

/* "rank 3 lane 1 step 7 (recv-reduce-send of 4: input[40] + from 2 -> 5)" */
static const char *where(const check_t *x, int r, int c, size_t i, char *buf, size_t len)
{
    const orb_step_t *s = &x->plans[r].lanes[c].steps[i];
    int k = s->kind;
    int o = snprintf(buf, len, "rank %d lane %d step %zu (%s of %zu:", r, c, i, orb_step_kind_name(k), s->count);
    if (o >= 0 && (size_t)o < len && kind_reads_src(k))
        o += snprintf(buf + o, len - (size_t)o, " %s[%zu]", buf_name(s->src_buf), s->src_off);
    if (o >= 0 && (size_t)o < len && kind_recvs(k))
        o += snprintf(buf + o, len - (size_t)o, " from %d", s->recv_peer);
    if (o >= 0 && (size_t)o < len && kind_writes_dst(k))
        o += snprintf(buf + o, len - (size_t)o, " -> %s[%zu]", buf_name(dst_buf(s)), s->dst_off);
    if (o >= 0 && (size_t)o < len && kind_sends(k))
        o += snprintf(buf + o, len - (size_t)o, " -> rank %d", s->send_peer);
    if (o >= 0 && (size_t)o < len)
        snprintf(buf + o, len - (size_t)o, "%s)", (s->flags & ORB_STEP_POSTOP) ? " postop" : "");
    return buf;
}

/* "{ranks 0,2 element 7 postop}" */
static const char *val_text(val_t v, char *buf, size_t len)
{
    if (!v.mask) {
        snprintf(buf, len, "{never written}");
        return buf;
    }
    int o = snprintf(buf, len, "{ranks ");
    int listed = 0;
    for (int r = 0; r < 64 && o >= 0 && (size_t)o < len; r++)
        if (v.mask >> r & 1) {
            if (listed == 6) {
                o += snprintf(buf + o, len - (size_t)o, ",...(%d)", __builtin_popcountll(v.mask));
                break;
            }
            o += snprintf(buf + o, len - (size_t)o, "%s%d", listed++ ? "," : "", r);
        }
    if (o >= 0 && (size_t)o < len)
        snprintf(buf + o, len - (size_t)o, " element %u%s}", (unsigned)v.idx, v.post ? " postop" : "");
    return buf;
}

/* ---- static checks ------------------------------------------------------------------ */

static int range_ok(size_t off, size_t count, size_t size) { return off <= size && count <= size - off; }

static orb_status_t check_step(check_t *x, int r, int c, size_t i)
{
    const orb_plan_t *p = &x->plans[r];
    const orb_step_t *s = &p->lanes[c].steps[i];
    char w[256];
    if (s->kind >= ORB_NUM_STEP_KINDS)
        return fail(x, "rank %d lane %d step %zu: unknown kind %d", r, c, i, s->kind);
    if (s->flags & ~(ORB_STEP_POSTOP | ORB_STEP_DST_SCRATCH))
        return fail(x, "%s: unknown flags 0x%x", where(x, r, c, i, w, sizeof w), s->flags);
    if (s->count > p->args.chunk_elems)
        return fail(x, "%s: carries more than chunk_elems = %zu", where(x, r, c, i, w, sizeof w),
                    p->args.chunk_elems);
    if (kind_reads_src(s->kind)) {
        if (s->src_buf != ORB_BUF_INPUT && s->src_buf != ORB_BUF_OUTPUT && s->src_buf != ORB_BUF_SCRATCH)
            return fail(x, "%s: unknown src_buf %d", where(x, r, c, i, w, sizeof w), s->src_buf);
        size_t size = buf_size(p, s->src_buf);
        if (!range_ok(s->src_off, s->count, size))
            return fail(x, "%s: reads past the end of its %s (%zu elements)", where(x, r, c, i, w, sizeof w),
                        buf_name(s->src_buf), size);
    }
    if (kind_writes_dst(s->kind) && !range_ok(s->dst_off, s->count, buf_size(p, dst_buf(s))))
        return fail(x, "%s: writes past the end of its %s (%zu elements)", where(x, r, c, i, w, sizeof w),
                    buf_name(dst_buf(s)), buf_size(p, dst_buf(s)));
    if (kind_sends(s->kind) && (s->send_peer < 0 || s->send_peer >= x->n || s->send_peer == r ||
                                x->plans[s->send_peer].nlanes == 0))
        return fail(x, "%s: sends to rank %d, which is not a peer in this call", where(x, r, c, i, w, sizeof w),
                    s->send_peer);
    if (kind_recvs(s->kind) && (s->recv_peer < 0 || s->recv_peer >= x->n || s->recv_peer == r ||
                                x->plans[s->recv_peer].nlanes == 0))
        return fail(x, "%s: receives from rank %d, which is not a peer in this call",
                    where(x, r, c, i, w, sizeof w), s->recv_peer);
    return ORB_OK;
}

/* The elements of input and output one rank of the call has, from the collective's
 * definition (plan.h, docs/algorithms.md), on purpose not from orb_plan_buffer_sizes: count
 * is the user's count, the per-rank block for gather, allgather and reduce_scatter; only
 * the root of broadcast has an input, only the root of reduce and gather an output (a
 * non-root's scratch is allowed separately); barrier is a 1-element all-reduce. 0: unknown
 * collective. */
/* alltoallv: the end of the furthest block each way (empty blocks reach nowhere). */
static int vec_sizes(const orb_plan_args_t *a, size_t *in, size_t *out)
{
    const size_t n = (size_t)a->nranks;
    if (!a->vec)
        return 0;
    *in = *out = 0;
    for (size_t j = 0; j < n; j++) {
        size_t send_end = a->vec[j] ? a->vec[n + j] + a->vec[j] : 0;
        size_t recv_end = a->vec[2 * n + j] ? a->vec[3 * n + j] + a->vec[2 * n + j] : 0;
        *in = send_end > *in ? send_end : *in;
        *out = recv_end > *out ? recv_end : *out;
    }
    return 1;
}

static int call_sizes(const orb_plan_args_t *a, size_t *in, size_t *out)
{
    const size_t cnt = a->count, all = a->count * (size_t)a->nranks;
    const int root = a->rank == a->root;
    switch (orb_coll_planned_as(a->coll)) {
    case ORB_COLL_ALLREDUCE:      *in = cnt;              *out = cnt;              return 1;
    case ORB_COLL_BROADCAST:      *in = root ? cnt : 0;   *out = cnt;              return 1;
    case ORB_COLL_REDUCE:         *in = cnt;              *out = root ? cnt : 0;   return 1;
    case ORB_COLL_GATHER:         *in = cnt;              *out = root ? all : 0;   return 1;
    case ORB_COLL_ALLGATHER:      *in = cnt;              *out = all;              return 1;
    case ORB_COLL_REDUCE_SCATTER: *in = all;              *out = cnt;              return 1;
    case ORB_COLL_SEND:           *in = cnt;              *out = 0;                return 1;
    case ORB_COLL_RECV:           *in = 0;                *out = cnt;              return 1;
    case ORB_COLL_BARRIER:        *in = 1;                *out = 1;                return 1;
    case ORB_COLL_ALLTOALL:       *in = all;              *out = all;              return 1;
    case ORB_COLL_SCATTER:        *in = root ? all : 0;   *out = cnt;              return 1;
    case ORB_COLL_ALLTOALLV:      return vec_sizes(a, in, out);
    default:                                                                       return 0;
    }
}

static orb_status_t check_plan_shape(check_t *x, int r)
{
    const orb_plan_t *p = &x->plans[r];
    if (p->nlanes == 0)
        return ORB_OK;
    const orb_plan_args_t *a = &p->args;
    if (a->nranks != x->n || a->rank != r)
        return fail(x, "plan %d says rank %d of %d, expected rank %d of %d", r, a->rank, a->nranks, r, x->n);
    if (p->in_count > UINT32_MAX || p->out_count > UINT32_MAX)
        return fail(x, "rank %d: buffers of more than 2^32 elements are beyond the checker", r);
    if (p->nlanes != a->nchannels || p->nlanes < 1 || p->nlanes > ORB_MAX_CHANNELS)
        return fail(x, "rank %d: %d lanes for %d channels", r, p->nlanes, a->nchannels);
    size_t in, out, lib_in, lib_out;
    if (!call_sizes(a, &in, &out))
        return fail(x, "rank %d: unknown collective %d", r, (int)a->coll);
    /* the library's own answer must agree with the definition: the executor sizes the
     * user's buffers with it, so a wrong one would hide a plan that runs out of range */
    if (orb_coll_vector(a->coll)) {
        if (orb_plan_vec_sizes(a->nranks, a->vec, &lib_in, &lib_out) != ORB_OK)
            return fail(x, "rank %d: orb_plan_vec_sizes refuses the vectors", r);
    } else {
        orb_plan_buffer_sizes(a->coll, a->nranks, a->rank, a->root, a->count, &lib_in, &lib_out);
    }
    if (lib_in != in || lib_out != out)
        return fail(x, "rank %d: orb_plan_buffer_sizes says input %zu, output %zu elements; the %s call has %zu, %zu",
                    r, lib_in, lib_out, orb_coll_name(a->coll), in, out);
    if (p->in_count != in)
        return fail(x, "rank %d: plan input of %zu elements, the call has %zu", r, p->in_count, in);
    if (p->out_count != out && !orb_plan_out_is_scratch(p))
        return fail(x, "rank %d: plan output of %zu elements, the call has %zu", r, p->out_count, out);
    for (int c = 0; c < p->nlanes; c++)
        for (size_t i = 0; i < p->lanes[c].nsteps; i++)
            if (check_step(x, r, c, i) != ORB_OK)
                return x->st;
    return ORB_OK;
}

/* ---- memory ----------------------------------------------------------------------- */

static void layout(const orb_plan_t *p, int inplace, size_t *mem_n, size_t *in_base, size_t *out_base)
{
    const orb_plan_args_t *a = &p->args;
    const size_t in = p->in_count, out = p->out_count, own = (size_t)a->rank * a->count;
    *in_base = 0;
    *out_base = in;
    *mem_n = in + out;
    if (!inplace || orb_plan_out_is_scratch(p))
        return;
    switch (orb_coll_planned_as(a->coll)) {
    case ORB_COLL_ALLREDUCE:
    case ORB_COLL_BARRIER:
    case ORB_COLL_BROADCAST:
    case ORB_COLL_REDUCE:
        *out_base = 0;
        *mem_n = in > out ? in : out;
        break;
    case ORB_COLL_ALLGATHER:
    case ORB_COLL_GATHER:
        if (in <= a->count && own + in <= out) {
            *out_base = 0;
            *in_base = own;
            *mem_n = out;
        }
        break;
    case ORB_COLL_REDUCE_SCATTER:
        if (own + out <= in) {
            *out_base = own;
            *mem_n = in;
        }
        break;
    case ORB_COLL_ALLTOALL:
        *out_base = 0;
        *mem_n = in > out ? in : out;
        break;
    case ORB_COLL_SCATTER: /* the root's output is its own block of the input */
        if (in && own + out <= in) {
            *out_base = own;
            *mem_n = in;
        }
        break;
    default:
        break;
    }
}

static orb_status_t setup_memory(check_t *x)
{
    for (int r = 0; r < x->n; r++) {
        const orb_plan_t *p = &x->plans[r];
        size_t n, ib, ob;
        layout(p, x->o.inplace, &n, &ib, &ob);
        x->mem[r].scratch_base = n;
        n += p->scratch_count;
        x->mem[r].mem = calloc(n ? n : 1, sizeof(val_t));
        if (!x->mem[r].mem)
            return no_memory(x);
        x->mem[r].in_base = ib;
        x->mem[r].out_base = ob;
        for (size_t i = 0; i < p->in_count; i++)
            x->mem[r].mem[ib + i] = (val_t){1ull << r, (uint32_t)i, 0};
    }
    return ORB_OK;
}

static fifo_t *fifo_get(check_t *x, int from, int to, int c)
{
    fifo_t **slot = &x->fifos[((size_t)from * (size_t)x->n + (size_t)to) * ORB_MAX_CHANNELS + (size_t)c];
    if (*slot)
        return *slot;
    fifo_t *f = calloc(1, sizeof *f);
    if (f) {
        f->data = malloc(x->o.nslots * x->o.slot_elems * sizeof(val_t));
        f->len = malloc(x->o.nslots * sizeof(size_t));
        if (!f->data || !f->len) {
            free(f->data);
            free(f->len);
            free(f);
            f = NULL;
        }
    }
    if (!f)
        no_memory(x);
    *slot = f;
    return f;
}

/* ---- simulation ------------------------------------------------------------------- */

static void wake(check_t *x, int r, int c)
{
    lane_state_t *l = &x->lanes[r * ORB_MAX_CHANNELS + c];
    if (l->queued || c >= x->plans[r].nlanes)
        return;
    l->queued = 1;
    size_t cap = (size_t)x->n * ORB_MAX_CHANNELS;
    x->queue[(x->qhead + x->qlen++) % cap] = r * ORB_MAX_CHANNELS + c;
}

/* Does op(acc, one) extend a rank-order fold? acc must be ranks 0..k-1 and one rank k
 * alone. A set alone says nothing of its shape, but a value that only ever grew this way
 * is the left fold x0, op(x0, x1), op(op(x0, x1), x2), ...: any other bracketing, such as
 * op(x0, op(x1, x2)), combines a set that is not a prefix on the way. */
static int in_rank_order(uint64_t acc, uint64_t one)
{
    return (acc & (acc + 1)) == 0 && one == acc + 1;
}

static orb_status_t reduce_val(check_t *x, int r, int c, size_t i, val_t a, val_t b, val_t *res)
{
    char w[256], ta[128], tb[128];
    if (a.idx != b.idx || (a.mask & b.mask) || a.post || b.post)
        return fail(x, "%s: reduces %s with %s (%s)", where(x, r, c, i, w, sizeof w), val_text(a, ta, sizeof ta),
                    val_text(b, tb, sizeof tb),
                    a.idx != b.idx ? "different elements"
                    : (a.mask & b.mask) ? "a rank counted twice"
                                        : "a value already final");
    if (x->ordered && !in_rank_order(a.mask, b.mask) && !in_rank_order(b.mask, a.mask))
        return fail(x, "%s: adds %s to %s out of rank order (a deterministic plan computes "
                       "op(op(op(x0, x1), x2)...) and nothing else)",
                    where(x, r, c, i, w, sizeof w), val_text(b, tb, sizeof tb), val_text(a, ta, sizeof ta));
    *res = (val_t){a.mask | b.mask, a.idx, 0};
    return ORB_OK;
}

/* Moves one piece of lane (r, c). 1: moved, 0: blocked or finished, <0: error. */
static int lane_move(check_t *x, int r, int c)
{
    const orb_plan_t *p = &x->plans[r];
    const orb_lane_t *lane = &p->lanes[c];
    lane_state_t *ls = &x->lanes[r * ORB_MAX_CHANNELS + c];
    if (ls->step >= lane->nsteps)
        return 0;
    const size_t i = ls->step;
    const orb_step_t *s = &lane->steps[i];
    const int k = s->kind;
    if (s->count == 0) {
        ls->step++;
        return 1;
    }
    const size_t len = (s->count - ls->done < x->o.slot_elems) ? s->count - ls->done : x->o.slot_elems;
    fifo_t *fin = NULL, *fout = NULL;
    if (kind_recvs(k)) {
        if (!(fin = fifo_get(x, s->recv_peer, r, c)))
            return x->st;
        if (fin->used == 0)
            return 0;
    }
    if (kind_sends(k)) {
        if (!(fout = fifo_get(x, r, s->send_peer, c)))
            return x->st;
        if (fout->used == x->o.nslots)
            return 0;
    }
    char w[256], t[128];
    /* values are read where they lie (the sender's slot, the rank's memory): the slot stays
     * intact until this lane pushes again, and nothing below writes before the last read */
    const val_t *in = NULL, *src = NULL;
    if (fin) {
        if (fin->len[fin->head] != len)
            return fail(x, "%s: expects a piece of %zu elements from rank %d, which sent %zu",
                        where(x, r, c, i, w, sizeof w), len, s->recv_peer, fin->len[fin->head]);
        in = fin->data + fin->head * x->o.slot_elems;
        fin->head = (fin->head + 1) % x->o.nslots;
        fin->used--;
        wake(x, s->recv_peer, c);
    }
    if (kind_reads_src(k)) {
        size_t base = (s->src_buf == ORB_BUF_INPUT    ? x->mem[r].in_base
                       : s->src_buf == ORB_BUF_OUTPUT ? x->mem[r].out_base
                                                      : x->mem[r].scratch_base) +
                      s->src_off + ls->done;
        src = x->mem[r].mem + base;
        for (size_t e = 0; e < len; e++)
            if (!src[e].mask)
                return fail(x, "%s: reads %s[%zu] before anything wrote it", where(x, r, c, i, w, sizeof w),
                            buf_name(s->src_buf), s->src_off + ls->done + e);
    }
    /* a step that neither reduces nor finishes a value passes its input on as it is */
    const val_t *vals = src ? src : in;
    if (kind_reduces(k) || (s->flags & ORB_STEP_POSTOP)) {
        for (size_t e = 0; e < len; e++) {
            val_t v;
            if (kind_reduces(k)) {
                if (reduce_val(x, r, c, i, src[e], in[e], &v) != ORB_OK)
                    return x->st;
            } else {
                v = vals[e];
            }
            if (s->flags & ORB_STEP_POSTOP) {
                if (v.post || v.mask != x->full)
                    return fail(x, "%s: POSTOP on %s, which is %s", where(x, r, c, i, w, sizeof w),
                                val_text(v, t, sizeof t), v.post ? "already final" : "a partial reduction");
                v.post = 1;
            }
            x->out[e] = v;
        }
        vals = x->out;
    }
    if (fout) { /* before the write below, which may overlap the values' source */
        size_t slot = (fout->head + fout->used) % x->o.nslots;
        memcpy(fout->data + slot * x->o.slot_elems, vals, len * sizeof(val_t));
        fout->len[slot] = len;
        fout->used++;
        fout->moved++;
        wake(x, s->send_peer, c);
    }
    if (kind_writes_dst(k))
        memmove(x->mem[r].mem + (dst_buf(s) == ORB_BUF_SCRATCH ? x->mem[r].scratch_base : x->mem[r].out_base) +
                    s->dst_off + ls->done,
                vals, len * sizeof(val_t));
    ls->done += len;
    if (ls->done == s->count) {
        ls->step++;
        ls->done = 0;
    }
    return 1;
}

static orb_status_t simulate(check_t *x)
{
    for (int r = 0; r < x->n; r++)
        for (int c = 0; c < x->plans[r].nlanes; c++)
            wake(x, r, c);
    const size_t cap = (size_t)x->n * ORB_MAX_CHANNELS;
    while (x->qlen) {
        int id = x->queue[x->qhead];
        x->qhead = (x->qhead + 1) % cap;
        x->qlen--;
        x->lanes[id].queued = 0;
        int moved;
        while ((moved = lane_move(x, id / ORB_MAX_CHANNELS, id % ORB_MAX_CHANNELS)) > 0)
            ;
        if (moved < 0)
            return x->st;
    }
    return ORB_OK;
}

/* ---- verdict ---------------------------------------------------------------------- */

static orb_status_t report_deadlock(check_t *x)
{
    char msg[1024], w[256];
    int stuck = 0, o = 0;
    for (int r = 0; r < x->n; r++)
        for (int c = 0; c < x->plans[r].nlanes; c++) {
            const lane_state_t *ls = &x->lanes[r * ORB_MAX_CHANNELS + c];
            const orb_lane_t *lane = &x->plans[r].lanes[c];
            if (ls->step >= lane->nsteps)
                continue;
            if (stuck++ >= 4 || o < 0 || (size_t)o >= sizeof msg)
                continue;
            const orb_step_t *s = &lane->steps[ls->step];
            fifo_t *fin = kind_recvs(s->kind) ? fifo_get(x, s->recv_peer, r, c) : NULL;
            if (x->st != ORB_OK)
                return x->st;
            o += snprintf(msg + o, sizeof msg - (size_t)o, "; %s of %zu, %zu elements done, waits for %s",
                          where(x, r, c, ls->step, w, sizeof w), lane->nsteps, ls->done,
                          (fin && fin->used == 0) ? "data" : "a free slot");
        }
    if (!stuck)
        return ORB_OK;
    return fail(x, "deadlock: %d lane(s) stuck%s%s", stuck, msg, stuck > 4 ? "; ..." : "");
}

static orb_status_t report_leftovers(check_t *x)
{
    const size_t nf = (size_t)x->n * (size_t)x->n * ORB_MAX_CHANNELS;
    for (size_t f = 0; f < nf; f++) {
        const fifo_t *q = x->fifos[f];
        if (q && q->used) {
            size_t c = f % ORB_MAX_CHANNELS, pair = f / ORB_MAX_CHANNELS;
            return fail(x, "rank %zu sent %zu piece(s) to rank %zu on channel %zu that were never received",
                        pair / (size_t)x->n, q->used, pair % (size_t)x->n, c);
        }
    }
    return ORB_OK;
}

/* What element j of rank r's output must hold; 0 when the rank has no output to check. */
static int expected(const check_t *x, int r, size_t j, val_t *want)
{
    const orb_plan_t *p = &x->plans[r];
    const orb_plan_args_t *a = &p->args;
    const size_t cnt = a->count;
    if (orb_plan_out_is_scratch(p))
        return 0;
    switch (orb_coll_planned_as(a->coll)) {
    case ORB_COLL_ALLREDUCE:
    case ORB_COLL_BARRIER:
    case ORB_COLL_REDUCE:
        *want = (val_t){x->full, (uint32_t)j, 1};
        return 1;
    case ORB_COLL_REDUCE_SCATTER:
        *want = (val_t){x->full, (uint32_t)((size_t)r * cnt + j), 1};
        return 1;
    case ORB_COLL_BROADCAST:
    case ORB_COLL_RECV:
        *want = (val_t){1ull << a->root, (uint32_t)j, 0};
        return 1;
    case ORB_COLL_GATHER:
    case ORB_COLL_ALLGATHER:
        *want = (val_t){1ull << (j / cnt), (uint32_t)(j % cnt), 0};
        return 1;
    case ORB_COLL_SCATTER:
        *want = (val_t){1ull << a->root, (uint32_t)((size_t)r * cnt + j), 0};
        return 1;
    case ORB_COLL_ALLTOALL: /* block q came from rank q's block r */
        *want = (val_t){1ull << (j / cnt), (uint32_t)((size_t)r * cnt + j % cnt), 0};
        return 1;
    case ORB_COLL_ALLTOALLV: { /* the block of q that covers j, from q's block for r; gaps unwritten */
        const size_t n = (size_t)x->n;
        *want = (val_t){0, 0, 0};
        for (size_t q = 0; q < n; q++) {
            const size_t rc = a->vec[2 * n + q], rd = a->vec[3 * n + q];
            if (j >= rd && j - rd < rc) {
                const size_t *qv = x->plans[q].args.vec; /* sender q's sdispls[r] */
                *want = (val_t){1ull << q, (uint32_t)(qv[n + (size_t)r] + (j - rd)), 0};
                break;
            }
        }
        return 1;
    }
    default:
        return 0;
    }
}

static orb_status_t check_outputs(check_t *x)
{
    char tg[128], tw[128];
    for (int r = 0; r < x->n; r++) {
        const orb_plan_t *p = &x->plans[r];
        if (p->nlanes == 0)
            continue;
        for (size_t j = 0; j < p->out_count; j++) {
            val_t want, got = x->mem[r].mem[x->mem[r].out_base + j];
            if (!expected(x, r, j, &want))
                break;
            if (got.mask != want.mask || got.idx != want.idx || got.post != want.post)
                return fail(x, "rank %d output[%zu] holds %s, should hold %s", r, j, val_text(got, tg, sizeof tg),
                            val_text(want, tw, sizeof tw));
        }
    }
    return ORB_OK;
}

static void check_free(check_t *x)
{
    if (x->fifos) {
        const size_t nf = (size_t)x->n * (size_t)x->n * ORB_MAX_CHANNELS;
        for (size_t f = 0; f < nf; f++)
            if (x->fifos[f]) {
                free(x->fifos[f]->data);
                free(x->fifos[f]->len);
                free(x->fifos[f]);
            }
    }
    if (x->mem)
        for (int r = 0; r < x->n; r++)
            free(x->mem[r].mem);
    free(x->fifos);
    free(x->mem);
    free(x->lanes);
    free(x->queue);
    free(x->out);
}

orb_status_t orb_plan_check_plans(const orb_plan_t *plans, int nranks, const orb_plan_check_opts_t *opts,
                                  char *err, size_t errlen)
{
    check_t x = {.plans = plans, .n = nranks, .err = err, .errlen = errlen};
    if (err && errlen)
        err[0] = '\0';
    if (!opts || opts->nslots < 1 || opts->slot_elems < 1 || nranks < 1) {
        if (err && errlen)
            snprintf(err, errlen, "plan check: needs nranks, nslots and slot_elems >= 1");
        return ORB_ERR_INVALID_ARG;
    }
    if (nranks > ORB_PLAN_CHECK_MAX_RANKS) {
        if (err && errlen)
            snprintf(err, errlen, "plan check: %d ranks, at most %d fit its 64-bit rank sets", nranks,
                     ORB_PLAN_CHECK_MAX_RANKS);
        return ORB_ERR_UNSUPPORTED;
    }
    x.o = *opts;
    x.full = nranks == 64 ? ~0ull : (1ull << nranks) - 1;
    for (int r = 0; r < nranks; r++)
        x.ordered |= plans[r].nlanes > 0 && plans[r].args.algo == ORB_ALGO_ORDERED;
    const size_t nlanes = (size_t)nranks * ORB_MAX_CHANNELS;
    x.fifos = calloc(nlanes * (size_t)nranks, sizeof *x.fifos);
    x.mem = calloc((size_t)nranks, sizeof *x.mem);
    x.lanes = calloc(nlanes, sizeof *x.lanes);
    x.queue = calloc(nlanes, sizeof *x.queue);
    x.out = malloc(opts->slot_elems * sizeof(val_t));
    if (!x.fifos || !x.mem || !x.lanes || !x.queue || !x.out)
        no_memory(&x);
    for (int r = 0; r < nranks && x.st == ORB_OK; r++)
        check_plan_shape(&x, r);
    if (x.st == ORB_OK)
        setup_memory(&x);
    if (x.st == ORB_OK)
        simulate(&x);
    if (x.st == ORB_OK)
        report_deadlock(&x);
    if (x.st == ORB_OK)
        report_leftovers(&x);
    if (x.st == ORB_OK)
        check_outputs(&x);
    orb_status_t st = x.st;
    check_free(&x);
    return st;
}

orb_status_t orb_plan_check(const orb_plan_args_t *tmpl, const orb_plan_check_opts_t *opts, char *err,
                            size_t errlen)
{
    const int n = tmpl->nranks;
    if (err && errlen)
        err[0] = '\0';
    if (n < 1 || n > ORB_PLAN_CHECK_MAX_RANKS)
        return orb_plan_check_plans(NULL, n, opts, err, errlen);
    orb_plan_t *plans = calloc((size_t)n, sizeof *plans);
    if (!plans)
        return ORB_ERR_NO_MEMORY;
    const int p2p = tmpl->coll == ORB_COLL_SEND || tmpl->coll == ORB_COLL_RECV;
    const int sender = tmpl->coll == ORB_COLL_SEND ? tmpl->rank : tmpl->root;
    const int receiver = tmpl->coll == ORB_COLL_SEND ? tmpl->root : tmpl->rank;
    orb_status_t st = ORB_OK;
    for (int r = 0; r < n && st == ORB_OK; r++) {
        orb_plan_args_t a = *tmpl;
        a.rank = r;
        if (orb_coll_vector(a.coll))
            a.vec = opts->vecs ? opts->vecs[r] : NULL;
        if (p2p) {
            if (r != sender && r != receiver)
                continue;
            a.coll = r == sender ? ORB_COLL_SEND : ORB_COLL_RECV;
            a.root = r == sender ? receiver : sender;
        }
        st = orb_plan_build(&plans[r], &a);
        if (st != ORB_OK && err && errlen)
            snprintf(err, errlen, "building the %s %s plan of rank %d of %d: %s", orb_algo_name(a.algo),
                     orb_coll_name(a.coll), r, n, orb_strerror(st));
    }
    if (st == ORB_OK)
        st = orb_plan_check_plans(plans, n, opts, err, errlen);
    for (int r = 0; r < n; r++)
        orb_plan_free(&plans[r]);
    free(plans);
    return st;
}
