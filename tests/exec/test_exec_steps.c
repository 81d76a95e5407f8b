/* The CPU executor's reading of every step kind, with no processes: as the plan checker
 * proves plans without running them, this runs orb_exec_run on hand-built lanes and proves
 * what each step does to buffers and pieces.
 *
 * Ranks are threads; connections are FIFOs in ordinary memory (the transport below, with
 * its own orb_conn_ops_t); the communicator is an orb_exec_env_t of trivial callbacks. For
 * every kind of ORB_STEP_MAP a short chain exercises it (rank a SEND -> kind -> RECV, or
 * the kind alone for a local one), over dtypes, ops (avg through POSTOP), counts of one
 * element, odd, and several pieces, src_buf INPUT and OUTPUT, in place and at offsets,
 * 2..4 ranks, 1..2 channels, 1..3 slots, with and without the signature handshake, alone
 * and as a group of two. The expected buffers come from step.h's written definitions (the
 * table `meaning` below), never from its property bits, and from plain arithmetic; every
 * output element, the elements around the written region and the input are compared, and
 * so is every piece header the executor posts. Then the failures: a mismatched signature
 * (data and handshake), a piece of the wrong size and an unknown step kind each end in an
 * error that names both sides, not in a hang.
 *
 * Inputs are small nonzero integers, so every sum and product is exact in every dtype and
 * only avg's division rounds; the reference rounds it as reduce.h specifies (integers
 * truncate in 64 bits, float16/bfloat16 compute in float32 and round once). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "collectives/exec.h"
#include "tests/kernels/ref.h"

#define MAXR 4
#define MAXOPS 2
#define MAXPOS 8
#define GUARD_BYTES 64 /* after every slot's payload */
#define GUARD_BYTE 0x5a
#define POISON_BYTE 0xee /* a released slot's payload and header */

/* ---- what each step kind does, written from the comment in kernels/step.h ------------- */

enum { D_IN = 1, D_SRC = 2, D_REDUCE = 4, D_DST = 8, D_SEND = 16 };

static const struct {
    const char *name;
    unsigned does;
} meaning[] = {
    {"send", D_SRC | D_SEND},
    {"recv", D_IN | D_DST},
    {"recv-reduce-send", D_IN | D_SRC | D_REDUCE | D_SEND},
    {"recv-copy-send", D_IN | D_DST | D_SEND},
    {"recv-reduce-copy-send", D_IN | D_SRC | D_REDUCE | D_DST | D_SEND},
    {"recv-reduce-copy", D_IN | D_SRC | D_REDUCE | D_DST},
    {"copy", D_SRC | D_DST},
};

/* Every kind the vocabulary defines, from the map itself: a new kind is a new row here. */
static const struct {
    int id;
    const char *name;
} kinds[] = {
#define KIND_(id, name, props) {ORB_STEP_##id, name},
    ORB_STEP_MAP(KIND_)
#undef KIND_
};
#define NKINDS ((int)(sizeof kinds / sizeof kinds[0]))

static const char *kind_name(int kind)
{
    for (int k = 0; k < NKINDS; k++)
        if (kinds[k].id == kind)
            return kinds[k].name;
    return "?";
}

static unsigned does_of(int kind) /* 0: no meaning written for it */
{
    for (int k = 0; k < NKINDS; k++)
        if (kinds[k].id == kind)
            for (size_t m = 0; m < sizeof meaning / sizeof meaning[0]; m++)
                if (strcmp(meaning[m].name, kinds[k].name) == 0)
                    return meaning[m].does;
    return 0;
}

/* ---- values and the reference ----------------------------------------------------------- */

static size_t esize(orb_dtype_t t)
{
    switch (t) {
    case ORB_INT8: return 1;
    case ORB_INT32: case ORB_FLOAT32: return 4;
    case ORB_INT64: case ORB_FLOAT64: return 8;
    case ORB_FLOAT16: case ORB_BFLOAT16: return 2;
    default: return 0;
    }
}

static int is_int(orb_dtype_t t) { return t == ORB_INT8 || t == ORB_INT32 || t == ORB_INT64; }

static int64_t wrap(orb_dtype_t t, int64_t v)
{
    if (t == ORB_INT8)
        return (int8_t)(uint8_t)((uint64_t)v & 0xffu);
    if (t == ORB_INT32)
        return (int32_t)(uint32_t)((uint64_t)v & 0xffffffffu);
    return v;
}

static void enc(orb_dtype_t t, void *buf, size_t i, double v)
{
    char *p = (char *)buf + i * esize(t);
    switch (t) {
    case ORB_INT8: { int8_t x = (int8_t)v; memcpy(p, &x, 1); break; }
    case ORB_INT32: { int32_t x = (int32_t)v; memcpy(p, &x, 4); break; }
    case ORB_INT64: { int64_t x = (int64_t)v; memcpy(p, &x, 8); break; }
    case ORB_FLOAT32: { float x = (float)v; memcpy(p, &x, 4); break; }
    case ORB_FLOAT64: memcpy(p, &v, 8); break;
    case ORB_FLOAT16: { uint16_t x = ref_half_round(v); memcpy(p, &x, 2); break; }
    case ORB_BFLOAT16: { uint16_t x = ref_bf16_round(v); memcpy(p, &x, 2); break; }
    default: break;
    }
}

static double dec(orb_dtype_t t, const void *buf, size_t i)
{
    const char *p = (const char *)buf + i * esize(t);
    switch (t) {
    case ORB_INT8: { int8_t x; memcpy(&x, p, 1); return x; }
    case ORB_INT32: { int32_t x; memcpy(&x, p, 4); return x; }
    case ORB_INT64: { int64_t x; memcpy(&x, p, 8); return (double)x; }
    case ORB_FLOAT32: { float x; memcpy(&x, p, 4); return x; }
    case ORB_FLOAT64: { double x; memcpy(&x, p, 8); return x; }
    case ORB_FLOAT16: { uint16_t x; memcpy(&x, p, 2); return ref_half_value(x); }
    case ORB_BFLOAT16: { uint16_t x; memcpy(&x, p, 2); return ref_bf16_value(x); }
    default: return 0;
    }
}

enum { K_FIRST = -1 }; /* a copy: the value of a alone */

/* post(op(a, b)) in the dtype's arithmetic; div > 1 divides (avg's POSTOP). */
static double ref_apply(orb_dtype_t t, int op, double a, double b, int div)
{
    if (op == ORB_AVG)
        op = ORB_SUM;
    if (is_int(t)) {
        int64_t x = (int64_t)a, y = (int64_t)b, r = x;
        if (op == ORB_SUM)
            r = wrap(t, (int64_t)((uint64_t)x + (uint64_t)y));
        else if (op == ORB_PROD)
            r = wrap(t, (int64_t)((uint64_t)x * (uint64_t)y));
        else if (op == ORB_MIN)
            r = y < x ? y : x;
        else if (op == ORB_MAX)
            r = y > x ? y : x;
        if (div > 1)
            r /= div; /* C truncates toward zero, as reduce.h says */
        return (double)wrap(t, r);
    }
    if (t == ORB_FLOAT64) {
        double r = op == ORB_SUM ? a + b : op == ORB_PROD ? a * b : op == ORB_MIN ? (b < a ? b : a)
                 : op == ORB_MAX ? (b > a ? b : a) : a;
        return div > 1 ? r / div : r;
    }
    float x = (float)a, y = (float)b; /* float32, and float16/bfloat16 computed in float32 */
    float r = op == ORB_SUM ? x + y : op == ORB_PROD ? x * y : op == ORB_MIN ? (y < x ? y : x)
            : op == ORB_MAX ? (y > x ? y : x) : x;
    if (div > 1)
        r = r / (float)div;
    if (t == ORB_FLOAT16)
        return ref_half_value(ref_half_round(r));
    if (t == ORB_BFLOAT16)
        return ref_bf16_value(ref_bf16_round(r));
    return r;
}

/* A small nonzero integer in -4..4 for (seed, rank, position): wrong rank or offset shows. */
static double val(unsigned seed, int rank, size_t i)
{
    uint64_t h = (uint64_t)seed * 0x9e3779b97f4a7c15ull ^ ((uint64_t)rank << 40) ^ (uint64_t)i;
    h ^= h >> 31;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 29;
    int v = (int)(h % 8u) - 4;
    return v >= 0 ? v + 1 : v;
}

/* ---- the in-memory transport -------------------------------------------------------------- */

typedef struct rank_ctx rank_ctx_t;

typedef struct {
    orb_fifo_ctrl_t ctrl;
    char *slots;
    size_t stride, slot_bytes;
    uint32_t nslots;
    rank_ctx_t *from, *to;
    /* written by the sending thread only */
    orb_slot_hdr_t *log;
    size_t nlog, caplog;
    int send_held, recv_held; /* an acquired slot not yet posted / released */
    size_t send_bytes;        /* what the last send_acquire said the piece would hold */
    /* a piece may show up between any two looks of the executor: with stutter, every other
     * look at a waiting piece says "not yet" (the receiving thread's count) */
    int stutter;
    unsigned looks;
    char bad[200];            /* the first protocol violation seen */
} fifo_t;

struct rank_ctx {
    struct run *run;
    int rank;
    _Atomic uint32_t bell;
    pthread_mutex_t lock; /* the box: what peers posted to this rank */
    orb_status_t box_st;
    int box_from;
    char box_msg[600];
    /* what this rank's executor posted to others (its own thread only) */
    int nposted;
    int posted_peer[4];
    orb_status_t posted_st[4];
    char posted_msg[4][600];
};

static void ring(rank_ctx_t *r) { atomic_fetch_add_explicit(&r->bell, 1, memory_order_release); }

static void violation(fifo_t *f, const char *what)
{
    if (!f->bad[0])
        snprintf(f->bad, sizeof f->bad, "%s", what);
}

static orb_slot_hdr_t *slot_at(orb_conn_t *c) { return (orb_slot_hdr_t *)(c->slots + (c->pos % c->nslots) * c->slot_stride); }

static orb_slot_hdr_t *mem_send_acquire(orb_conn_t *c, size_t bytes)
{
    fifo_t *f = c->wake;
    uint64_t tail = atomic_load_explicit(&c->ctrl->tail, memory_order_acquire);
    if (c->pos - tail >= c->nslots)
        return NULL;
    f->send_held = 1;
    f->send_bytes = bytes;
    return slot_at(c);
}

static void mem_send_post(orb_conn_t *c)
{
    fifo_t *f = c->wake;
    orb_slot_hdr_t *h = slot_at(c);
    if (!f->send_held)
        violation(f, "send_post without send_acquire");
    f->send_held = 0;
    if (h->nbytes > f->slot_bytes)
        violation(f, "a piece larger than the slot");
    /* shared memory puts a piece in a small or a large slot by the size its acquire said */
    if (h->nbytes != f->send_bytes)
        violation(f, "a piece of another size than its send_acquire said");
    if (f->nlog == f->caplog) {
        f->caplog = f->caplog ? 2 * f->caplog : 64;
        f->log = realloc(f->log, f->caplog * sizeof *f->log);
        if (!f->log) {
            perror("realloc");
            exit(2);
        }
    }
    f->log[f->nlog++] = *h;
    atomic_store_explicit(&c->ctrl->head, ++c->pos, memory_order_release);
    ring(f->to);
}

static orb_slot_hdr_t *mem_recv_acquire(orb_conn_t *c)
{
    fifo_t *f = c->wake;
    uint64_t head = atomic_load_explicit(&c->ctrl->head, memory_order_acquire);
    if (head == c->pos || (f->stutter && f->looks++ % 2 == 0))
        return NULL;
    f->recv_held = 1;
    return slot_at(c);
}

static void mem_recv_release(orb_conn_t *c)
{
    fifo_t *f = c->wake;
    if (!f->recv_held)
        violation(f, "recv_release without recv_acquire");
    f->recv_held = 0;
    /* a slot read after its release shows as poison */
    memset(slot_at(c), POISON_BYTE, sizeof(orb_slot_hdr_t) + f->slot_bytes);
    atomic_store_explicit(&c->ctrl->tail, ++c->pos, memory_order_release);
    ring(f->from);
}

static const orb_conn_ops_t mem_conn_ops = {
    .name = "mem",
    .send_acquire = mem_send_acquire,
    .send_post = mem_send_post,
    .recv_acquire = mem_recv_acquire,
    .recv_release = mem_recv_release,
};

/* ---- one run: every rank's plans, buffers and expectations -------------------------------- */

typedef struct {
    orb_plan_t plan[MAXOPS];
    orb_exec_op_t op[MAXOPS];
    char *in[MAXOPS], *out[MAXOPS];         /* what the executor gets */
    char *in_want[MAXOPS], *out_want[MAXOPS]; /* what they must hold afterwards */
    size_t len;                             /* elements of every buffer */
    orb_status_t want_st;
    const char *want_err[3];    /* fragments err must contain */
    int want_post_peer;         /* -1: must post nothing; -2: not judged; else the peer it must post to */
    const char *want_post[3];   /* fragments of what it posts */
    orb_status_t want_box_st;   /* ORB_OK: its box must stay empty */
    const char *want_box[3];    /* fragments of what it receives in its box */
    int check_data, check_headers;
    int start_after_ms; /* the rank starts late: what its peers post is there already */
    /* results */
    orb_status_t st;
    char err[1024];
    double secs;
} job_t;

typedef struct run {
    char name[256];
    int nranks, nch, nslots, nops, stutter;
    int stream; /* senders write slots with non-temporal stores (ORBIT_SLOT_STORES=stream) */
    size_t slot_bytes;
    orb_dtype_t dtype;
    double timeout_s;
    job_t job[MAXR];
    fifo_t *fifo; /* [(from * nranks + to) * nch + ch] */
    rank_ctx_t ctx[MAXR];
    orb_conn_t send[MAXR][MAXR * ORB_MAX_CHANNELS], recv[MAXR][MAXR * ORB_MAX_CHANNELS];
    pthread_barrier_t done;
    atomic_int abort_all; /* a rank failed unexpectedly: the others stop waiting */
    atomic_int failed;    /* ranks that found a failure */
} run_t;

static fifo_t *fifo_of(run_t *r, int from, int to, int ch) { return &r->fifo[((size_t)from * (size_t)r->nranks + (size_t)to) * (size_t)r->nch + (size_t)ch]; }

/* ---- the environment's callbacks ---------------------------------------------------------- */

static uint32_t env_doorbell(void *ctx) { return atomic_load_explicit(&((rank_ctx_t *)ctx)->bell, memory_order_acquire); }

/* (the sleep below naps 20 us whatever rings: nothing to arm) */
static void env_disarm(void *ctx) { (void)ctx; }

static void env_sleep(void *ctx, uint32_t seen, double max_s)
{
    (void)max_s;
    if (env_doorbell(ctx) != seen)
        return;
    struct timespec ts = {0, 20000};
    nanosleep(&ts, NULL);
}

static orb_status_t env_check(void *ctx, const int *waiting_on, int n, char *err, size_t errlen)
{
    (void)waiting_on;
    (void)n;
    rank_ctx_t *c = ctx;
    orb_status_t st = ORB_OK;
    pthread_mutex_lock(&c->lock);
    if (c->box_st != ORB_OK) {
        st = c->box_st;
        snprintf(err, errlen, "%s", c->box_msg);
    }
    pthread_mutex_unlock(&c->lock);
    if (st == ORB_OK && atomic_load(&c->run->abort_all)) {
        snprintf(err, errlen, "rank %d: another rank of this case failed", c->rank);
        st = ORB_ERR_INTERNAL;
    }
    return st;
}

static void env_post_error(void *ctx, int peer, orb_status_t st, const char *msg)
{
    rank_ctx_t *c = ctx;
    if (c->nposted < 4) {
        c->posted_peer[c->nposted] = peer;
        c->posted_st[c->nposted] = st;
        snprintf(c->posted_msg[c->nposted], sizeof c->posted_msg[0], "%s", msg);
    }
    c->nposted++;
    if (peer < 0 || peer >= c->run->nranks)
        return;
    rank_ctx_t *p = &c->run->ctx[peer];
    pthread_mutex_lock(&p->lock);
    if (p->box_st == ORB_OK) {
        p->box_st = st;
        p->box_from = c->rank;
        snprintf(p->box_msg, sizeof p->box_msg, "%s", msg);
    }
    pthread_mutex_unlock(&p->lock);
    ring(p);
}

/* ---- judging (each rank its own) ---------------------------------------------------------- */

static int has_all(const char *s, const char *const *frags, int n)
{
    for (int i = 0; i < n; i++)
        if (frags[i] && !strstr(s, frags[i]))
            return 0;
    return 1;
}

/* Details of the first failures only (a planted bug fails thousands of cases); every
 * failure still counts. */
static atomic_int detail_lines = 60;

#define FAILF(...)                                                                               \
    do {                                                                                         \
        if (nfail++ < 6 && atomic_fetch_sub(&detail_lines, 1) > 0) {                            \
            char line_[1400];                                                                    \
            snprintf(line_, sizeof line_, __VA_ARGS__);                                          \
            fprintf(stderr, "FAIL %s: rank %d: %s\n", run->name, rank, line_);                  \
        }                                                                                        \
    } while (0)

static const char *hexdump(const char *p, size_t n, char *buf, size_t len)
{
    size_t k = 0;
    for (size_t i = 0; i < n && k + 3 < len; i++)
        k += (size_t)snprintf(buf + k, len - k, "%02x", (unsigned char)p[i]);
    return buf;
}

static int compare_buf(run_t *run, int rank, const char *what, int o, const char *got, const char *want,
                       size_t len)
{
    int nfail = 0;
    const size_t es = esize(run->dtype);
    for (size_t i = 0; i < len; i++)
        if (memcmp(got + i * es, want + i * es, es) != 0) {
            char a[40], b[40];
            FAILF("op %d: %s[%zu] = %g (0x%s), expected %g (0x%s)", o, what, i, dec(run->dtype, got, i),
                  hexdump(got + i * es, es, a, sizeof a), dec(run->dtype, want, i),
                  hexdump(want + i * es, es, b, sizeof b));
        }
    return nfail;
}

/* The headers this rank must have posted to peer on channel ch, in order; compared field by
 * field with what the transport saw. */
static int check_headers(run_t *run, int rank, int peer, int ch)
{
    int nfail = 0;
    const fifo_t *f = fifo_of(run, rank, peer, ch);
    const size_t es = esize(run->dtype), per = run->slot_bytes / es;
    size_t k = 0;
    for (int o = 0; o < run->nops; o++) {
        const orb_exec_op_t *op = &run->job[rank].op[o];
        const orb_lane_t *l = &run->job[rank].plan[o].lanes[ch];
        /* The handshake rides on lane 0's first piece when the run has this call alone and
         * that piece goes to sync_next before the lane receives anything, or right after its
         * first receive from sync_prev; else it is an empty piece of its own, ahead of the
         * data. After a receive, a run that waited ORB_EXEC_UNMERGE_S for it sends its own
         * piece instead: then the log starts with one, and the data carries no flag. */
        const orb_lane_t *l0 = &run->job[rank].plan[o].lanes[0];
        const int first_sends = ch == 0 && op->sync_next == peer && run->nops == 1 && l0->nsteps > 0 &&
                                l0->steps[0].send_peer == peer && l0->steps[0].count > 0;
        const int after_recv = first_sends && l0->steps[0].recv_peer >= 0 && l0->steps[0].recv_peer == op->sync_prev;
        const int unmerged = after_recv && k < f->nlog && f->log[k].nbytes == 0 && f->log[k].step == UINT32_MAX;
        const int merged = first_sends && (l0->steps[0].recv_peer < 0 || (after_recv && !unmerged));
        if (unmerged && run->job[rank].secs < ORB_EXEC_UNMERGE_S) /* it cannot have waited that long */
            FAILF("op %d: the handshake to rank %d went as a piece of its own after a receive, in a run of %.4f s "
                  "(< %g s)", o, peer, run->job[rank].secs, ORB_EXEC_UNMERGE_S);
        if (ch == 0 && op->sync_next == peer && !merged) { /* the handshake's empty piece */
            if (k >= f->nlog) {
                FAILF("op %d: no handshake piece to rank %d", o, peer);
                return nfail;
            }
            const orb_slot_hdr_t *h = &f->log[k++];
            if (h->nbytes != 0 || h->step != UINT32_MAX || h->sender != rank || h->seq != op->sig.seq)
                FAILF("op %d: handshake piece to rank %d: nbytes %u step %u sender %d seq %llu; expected 0, %u, %d, "
                      "%llu", o, peer, h->nbytes, h->step, h->sender, (unsigned long long)h->seq, UINT32_MAX, rank,
                      (unsigned long long)op->sig.seq);
        }
        for (size_t s = 0; s < l->nsteps; s++) {
            if (l->steps[s].send_peer != peer)
                continue;
            for (size_t done = 0; done < l->steps[s].count;) {
                size_t n = l->steps[s].count - done < per ? l->steps[s].count - done : per;
                if (k >= f->nlog) {
                    FAILF("op %d: channel %d: piece %zu to rank %d (step %zu, element %zu) never posted", o, ch, k,
                          peer, s, done);
                    return nfail;
                }
                const orb_slot_hdr_t *h = &f->log[k];
                const int first = s == 0 && done == 0;
                if (((h->flags & ORB_PIECE_SYNC) != 0) != (merged && first))
                    FAILF("op %d: channel %d: piece %zu to rank %d: the handshake flag is %s; expected %s", o, ch, k,
                          peer, (h->flags & ORB_PIECE_SYNC) ? "set" : "clear", merged && first ? "set" : "clear");
                if (h->seq != op->sig.seq || h->count != op->sig.count || h->coll != op->sig.coll ||
                    h->dtype != op->sig.dtype || h->op != op->sig.op || h->root != op->sig.root ||
                    h->nbytes != n * es || h->step != s || h->sender != rank)
                    FAILF("op %d: channel %d: piece %zu to rank %d: seq %llu count %llu coll %u dtype %u op %u root %d "
                          "nbytes %u step %u sender %d; expected %llu %llu %u %u %u %d %zu %zu %d",
                          o, ch, k, peer, (unsigned long long)h->seq, (unsigned long long)h->count, h->coll, h->dtype,
                          h->op, h->root, h->nbytes, h->step, h->sender, (unsigned long long)op->sig.seq,
                          (unsigned long long)op->sig.count, op->sig.coll, op->sig.dtype, op->sig.op, op->sig.root,
                          n * es, s, rank);
                k++;
                done += n;
            }
        }
    }
    if (k != f->nlog)
        FAILF("channel %d: %zu pieces posted to rank %d, expected %zu", ch, f->nlog, peer, k);
    return nfail;
}

static int judge(run_t *run, int rank)
{
    job_t *j = &run->job[rank];
    rank_ctx_t *c = &run->ctx[rank];
    int nfail = 0;
    if (j->st != j->want_st)
        FAILF("orb_exec_run returned %s, expected %s (after %.3f s): %s", orb_status_name(j->st),
              orb_status_name(j->want_st), j->secs, j->err);
    else if (j->want_st != ORB_OK && !has_all(j->err, j->want_err, 3))
        FAILF("the message does not name [%s | %s | %s]: %s", j->want_err[0], j->want_err[1] ? j->want_err[1] : "",
              j->want_err[2] ? j->want_err[2] : "", j->err);
    if (j->want_post_peer == -1 && c->nposted > 0)
        FAILF("posted an error to rank %d: %s", c->posted_peer[0], c->posted_msg[0]);
    if (j->want_post_peer >= 0) {
        if (c->nposted != 1)
            FAILF("posted %d errors, expected one to rank %d", c->nposted, j->want_post_peer);
        else if (c->posted_peer[0] != j->want_post_peer || c->posted_st[0] != ORB_ERR_MISMATCH ||
                 !has_all(c->posted_msg[0], j->want_post, 3))
            FAILF("posted %s to rank %d: \"%s\"; expected a mismatch to rank %d naming [%s | %s]",
                  orb_status_name(c->posted_st[0]), c->posted_peer[0], c->posted_msg[0], j->want_post_peer,
                  j->want_post[0], j->want_post[1] ? j->want_post[1] : "");
    }
    pthread_mutex_lock(&c->lock);
    if (j->want_post_peer == -2) { /* a race decides who posts and who reads its box: not judged */
    } else if (c->box_st != j->want_box_st || (j->want_box_st != ORB_OK && !has_all(c->box_msg, j->want_box, 3)))
        FAILF("its box holds %s \"%s\", expected %s naming [%s | %s]", orb_status_name(c->box_st), c->box_msg,
              orb_status_name(j->want_box_st), j->want_box[0] ? j->want_box[0] : "",
              j->want_box[1] ? j->want_box[1] : "");
    pthread_mutex_unlock(&c->lock);
    if (j->check_data)
        for (int o = 0; o < run->nops; o++) {
            nfail += compare_buf(run, rank, "out", o, j->out[o], j->out_want[o], j->len);
            nfail += compare_buf(run, rank, "in", o, j->in[o], j->in_want[o], j->len);
        }
    if (j->check_headers)
        for (int p = 0; p < run->nranks; p++)
            for (int ch = 0; ch < run->nch; ch++)
                if (p != rank)
                    nfail += check_headers(run, rank, p, ch);
    /* the FIFOs into this rank: drained, used by the rules, guards intact */
    for (int p = 0; p < run->nranks; p++)
        for (int ch = 0; ch < run->nch; ch++) {
            fifo_t *f = fifo_of(run, p, rank, ch);
            uint64_t head = atomic_load(&f->ctrl.head), tail = atomic_load(&f->ctrl.tail);
            if (j->want_st == ORB_OK && head != tail)
                FAILF("%llu pieces from rank %d on channel %d left unread", (unsigned long long)(head - tail), p, ch);
            if (f->bad[0])
                FAILF("FIFO from rank %d, channel %d: %s", p, ch, f->bad);
            for (uint32_t s = 0; s < f->nslots; s++) {
                const unsigned char *g = (const unsigned char *)f->slots + s * f->stride + sizeof(orb_slot_hdr_t) +
                                         f->slot_bytes;
                for (size_t b = 0; b < GUARD_BYTES; b++)
                    if (g[b] != GUARD_BYTE) {
                        FAILF("FIFO from rank %d, channel %d: byte %zu past slot %u's payload was written", p, ch, b,
                              s);
                        break;
                    }
            }
        }
    return nfail;
}

static void rank_main(rank_ctx_t *c)
{
    run_t *run = c->run;
    job_t *j = &run->job[c->rank];
    orb_exec_env_t env = {
        .rank = c->rank,
        .nranks = run->nranks,
        .nchannels = run->nch,
        .check_signatures = 1,
        .send = run->send[c->rank],
        .recv = run->recv[c->rank],
        .ctx = c,
        .arm = env_doorbell,
        .disarm = env_disarm,
        .sleep = env_sleep,
        .check = env_check,
        .post_error = env_post_error,
        .slot_bytes = run->slot_bytes,
        .timeout_s = run->timeout_s,
        .spin_s = 0,
        .idle_mask = 15,
        .yield_s = 50e-6,
    };
    if (j->start_after_ms > 0)
        nanosleep(&(struct timespec){0, (long)j->start_after_ms * 1000000L}, NULL);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    j->st = orb_exec_run(&env, j->op, run->nops, j->err, sizeof j->err);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    j->secs = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    if (j->st != j->want_st)
        atomic_store(&run->abort_all, 1);
    pthread_barrier_wait(&run->done); /* nothing moves after this: every rank returned */
    if (judge(run, c->rank))
        atomic_fetch_add(&run->failed, 1);
}

/* ---- setting a run up and tearing it down -------------------------------------------------- */

static void *xalloc(size_t align, size_t n)
{
    void *p = aligned_alloc(align, (n + align - 1) / align * align);
    if (!p) {
        perror("aligned_alloc");
        exit(2);
    }
    return p;
}

/* Buffers of len elements: inputs and outputs from (seed, rank, position), the wanted ones
 * copies of them (the reference then writes what the plan changes). */
static void run_buffers(run_t *run, size_t len)
{
    const size_t es = esize(run->dtype);
    for (int r = 0; r < run->nranks; r++) {
        job_t *j = &run->job[r];
        j->len = len;
        for (int o = 0; o < run->nops; o++) {
            j->in[o] = xalloc(64, len * es);
            j->out[o] = xalloc(64, len * es);
            j->in_want[o] = xalloc(64, len * es);
            j->out_want[o] = xalloc(64, len * es);
            for (size_t i = 0; i < len; i++) {
                enc(run->dtype, j->in[o], i, val(11u + 2u * (unsigned)o, r, i));
                enc(run->dtype, j->out[o], i, val(12u + 2u * (unsigned)o, r, i));
            }
            memcpy(j->in_want[o], j->in[o], len * es);
            memcpy(j->out_want[o], j->out[o], len * es);
        }
    }
}

static void run_connect(run_t *run)
{
    const int n = run->nranks, nch = run->nch;
    run->fifo = calloc((size_t)n * (size_t)n * (size_t)nch, sizeof *run->fifo);
    if (!run->fifo) {
        perror("calloc");
        exit(2);
    }
    for (int a = 0; a < n; a++)
        for (int b = 0; b < n; b++)
            for (int ch = 0; ch < nch; ch++) {
                fifo_t *f = fifo_of(run, a, b, ch);
                f->slot_bytes = run->slot_bytes;
                f->stutter = run->stutter;
                f->stride = sizeof(orb_slot_hdr_t) + run->slot_bytes + GUARD_BYTES;
                f->nslots = (uint32_t)run->nslots;
                f->slots = xalloc(64, f->stride * f->nslots);
                memset(f->slots, GUARD_BYTE, f->stride * f->nslots);
                f->from = &run->ctx[a];
                f->to = &run->ctx[b];
                orb_conn_t c = {.ops = &mem_conn_ops, .ctrl = &f->ctrl, .slots = f->slots, .slot_stride = f->stride,
                                .slot_bytes = f->slot_bytes, .nslots = f->nslots, .pos = 0, .wake = f};
                c.stores.mode = run->stream ? ORB_SLOT_STORES_STREAM : ORB_SLOT_STORES_CACHED;
                c.peer = b;
                c.channel = ch;
                run->send[a][b * nch + ch] = c;
                c.peer = a;
                run->recv[b][a * nch + ch] = c;
            }
    for (int r = 0; r < n; r++) {
        rank_ctx_t *c = &run->ctx[r];
        c->run = run;
        c->rank = r;
        atomic_init(&c->bell, 0);
        pthread_mutex_init(&c->lock, NULL);
        c->box_st = ORB_OK;
        c->nposted = 0;
    }
}

/* Rank threads live for the whole test (a thread per rank per case costs more than the case
 * under ThreadSanitizer): each waits for the next run and takes part when its rank is in it. */
static struct {
    pthread_mutex_t lock;
    pthread_cond_t go, idle;
    run_t *run; /* NULL: leave */
    unsigned gen;
    int busy;
    pthread_t th[MAXR];
} pool = {.lock = PTHREAD_MUTEX_INITIALIZER, .go = PTHREAD_COND_INITIALIZER, .idle = PTHREAD_COND_INITIALIZER};

static void *pool_main(void *arg)
{
    const int rank = (int)(intptr_t)arg;
    unsigned seen = 0;
    for (;;) {
        pthread_mutex_lock(&pool.lock);
        while (pool.gen == seen)
            pthread_cond_wait(&pool.go, &pool.lock);
        seen = pool.gen;
        run_t *run = pool.run;
        pthread_mutex_unlock(&pool.lock);
        if (run && rank < run->nranks)
            rank_main(&run->ctx[rank]);
        pthread_mutex_lock(&pool.lock);
        if (--pool.busy == 0)
            pthread_cond_signal(&pool.idle);
        pthread_mutex_unlock(&pool.lock);
        if (!run)
            return NULL;
    }
}

static void pool_start(void)
{
    for (int r = 0; r < MAXR; r++)
        if (pthread_create(&pool.th[r], NULL, pool_main, (void *)(intptr_t)r) != 0) {
            perror("pthread_create");
            exit(2);
        }
}

/* Hands run to the threads (NULL: they leave) and waits until every one is done with it. */
static void pool_hand(run_t *run)
{
    pthread_mutex_lock(&pool.lock);
    pool.run = run;
    pool.busy = MAXR;
    pool.gen++;
    pthread_cond_broadcast(&pool.go);
    while (pool.busy > 0)
        pthread_cond_wait(&pool.idle, &pool.lock);
    pthread_mutex_unlock(&pool.lock);
}

/* Runs every rank of run on its thread; 1 when every rank found its results right. */
static int run_go(run_t *run)
{
    atomic_init(&run->abort_all, 0);
    atomic_init(&run->failed, 0);
    pthread_barrier_init(&run->done, NULL, (unsigned)run->nranks);
    pool_hand(run);
    pthread_barrier_destroy(&run->done);
    return atomic_load(&run->failed) == 0;
}

static void run_free(run_t *run)
{
    for (int r = 0; r < run->nranks; r++) {
        job_t *j = &run->job[r];
        for (int o = 0; o < run->nops; o++) {
            free(j->in[o]);
            free(j->out[o]);
            free(j->in_want[o]);
            free(j->out_want[o]);
            for (int ch = 0; ch < ORB_MAX_CHANNELS; ch++)
                free(j->plan[o].lanes[ch].steps);
        }
        pthread_mutex_destroy(&run->ctx[r].lock);
    }
    for (size_t k = 0; k < (size_t)run->nranks * (size_t)run->nranks * (size_t)run->nch; k++) {
        free(run->fifo[k].slots);
        free(run->fifo[k].log);
    }
    free(run->fifo);
}

static void push(orb_plan_t *p, int ch, orb_step_t s)
{
    orb_lane_t *l = &p->lanes[ch];
    if (l->nsteps == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 8;
        l->steps = realloc(l->steps, l->cap * sizeof *l->steps);
        if (!l->steps) {
            perror("realloc");
            exit(2);
        }
    }
    l->steps[l->nsteps++] = s;
}

static void plan_init(run_t *run, int r, int o, orb_coll_t coll)
{
    orb_plan_t *p = &run->job[r].plan[o];
    memset(p, 0, sizeof *p);
    p->args.coll = coll;
    p->args.algo = ORB_ALGO_RING;
    p->args.nranks = run->nranks;
    p->args.rank = r;
    p->args.nchannels = run->nch;
    p->nlanes = run->nch;
}

static void op_init(run_t *run, int r, int o, orb_coll_t coll, uint64_t seq, size_t count, orb_op_t op, int root)
{
    job_t *j = &run->job[r];
    orb_exec_op_t *x = &j->op[o];
    memset(x, 0, sizeof *x);
    x->plan = &j->plan[o];
    x->in = j->in[o];
    x->out = j->out[o];
    x->dtype = run->dtype;
    x->op = op;
    x->postdiv = op == ORB_AVG ? run->nranks : 0;
    x->sig.seq = seq;
    x->sig.count = count;
    x->sig.coll = (uint32_t)coll;
    x->sig.dtype = (uint32_t)run->dtype;
    x->sig.op = (uint32_t)op;
    x->sig.root = root;
    x->sync_next = x->sync_prev = -1;
}

/* ---- the matrix: one step kind in a chain ----------------------------------------------------- */

typedef struct {
    int kind;
    orb_dtype_t dtype;
    orb_op_t op;
    int postop;
    size_t count;
    orb_buf_t src_buf;
    int offmode; /* 0: offsets 0; 1: offsets apart; 2: src OUTPUT in place (src_off == dst_off) */
    int nranks, nch, nslots, sync, nops, stutter, stream;
    size_t slot_bytes;
} shape_t;

typedef struct {
    int rank, kind, flags;
} pos_t;

/* The chains of channel ch: a kind that receives gets a SEND before it, one that sends a RECV
 * after it; one that does both runs on every rank between (one rank for two ranks: the chain
 * comes back to its first rank). A local kind runs alone on every rank. Ranks rotate with ch. */
static int chains(const shape_t *sh, int ch, pos_t c[][MAXPOS], int *len)
{
    const unsigned d = does_of(sh->kind);
    const int n = sh->nranks, flags = sh->postop ? ORB_STEP_POSTOP : 0;
    if (!(d & (D_IN | D_SEND))) {
        for (int r = 0; r < n; r++) {
            c[r][0] = (pos_t){r, sh->kind, flags};
            len[r] = 1;
        }
        return n;
    }
    int L = 0;
    if (d & D_IN)
        c[0][L++] = (pos_t){0, ORB_STEP_SEND, 0};
    int mid = (d & D_IN) && (d & D_SEND) && n > 3 ? n - 2 : 1;
    for (int k = 0; k < mid; k++)
        c[0][L++] = (pos_t){0, sh->kind, flags};
    if (d & D_SEND)
        c[0][L++] = (pos_t){0, ORB_STEP_RECV, 0};
    for (int p = 0; p < L; p++)
        c[0][p].rank = (p + ch) % n;
    len[0] = L;
    return 1;
}

static size_t pieces(size_t count, size_t per) { return (count + per - 1) / per; }

/* Builds the run of one shape: plans, buffers, and the wanted buffers by the reference. */
static void shape_run(const shape_t *sh, run_t *run, uint64_t seq)
{
    memset(run, 0, sizeof *run);
    const size_t cnt = sh->count, es = esize(sh->dtype), per = sh->slot_bytes / es;
    run->nranks = sh->nranks;
    run->nch = sh->nch;
    run->nops = sh->nops;
    run->stutter = sh->stutter;
    run->stream = sh->stream;
    run->dtype = sh->dtype;
    run->slot_bytes = sh->slot_bytes;
    run->nslots = sh->nslots;
    run->timeout_s = 5;
    size_t src_off = 0, dst_off = 0;
    if (sh->offmode == 1) {
        src_off = 3;
        dst_off = sh->src_buf == ORB_BUF_OUTPUT ? 3 + (size_t)sh->nch * cnt + 2 : 5;
    } else if (sh->offmode == 2) {
        src_off = dst_off = 4;
    }
    /* A rank twice on one chain finishes its first step before its second: the pieces in
     * between must fit in the FIFOs of the two hops. */
    pos_t c[MAXR][MAXPOS];
    int len[MAXR];
    int nc = chains(sh, 0, c, len);
    if (nc == 1 && len[0] == 3 && c[0][0].rank == c[0][2].rank && (size_t)run->nslots * 2 < pieces(cnt, per))
        run->nslots = (int)((pieces(cnt, per) + 1) / 2);
    snprintf(run->name, sizeof run->name,
             "%s %s %s%s count %zu src %s src_off %zu dst_off %zu, %d ranks, %d channels, %d slots of %zu bytes%s%s%s%s",
             kind_name(sh->kind), orb_dtype_name(sh->dtype), orb_op_name(sh->op), sh->postop ? " postop" : "", cnt,
             sh->src_buf == ORB_BUF_INPUT ? "input" : "output", src_off, dst_off, sh->nranks, sh->nch, run->nslots,
             sh->slot_bytes, sh->sync ? ", handshake" : "", sh->nops > 1 ? ", group of 2" : "",
             sh->stutter ? ", pieces seen late" : "", sh->stream ? ", streaming stores" : "");
    run_buffers(run, 2 * (size_t)sh->nch * cnt + 16);
    run_connect(run);
    for (int r = 0; r < run->nranks; r++) {
        job_t *j = &run->job[r];
        j->want_st = ORB_OK;
        j->want_post_peer = -1;
        j->want_box_st = ORB_OK;
        j->check_data = j->check_headers = 1;
        for (int o = 0; o < run->nops; o++) {
            plan_init(run, r, o, ORB_COLL_ALLREDUCE);
            op_init(run, r, o, ORB_COLL_ALLREDUCE, seq + (uint64_t)o, cnt * (size_t)sh->nch, sh->op, 0);
            if (sh->sync) {
                j->op[o].sync_next = (r + 1) % run->nranks;
                j->op[o].sync_prev = (r + run->nranks - 1) % run->nranks;
            }
        }
    }
    for (int ch = 0; ch < sh->nch; ch++) {
        nc = chains(sh, ch, c, len);
        for (int q = 0; q < nc; q++)
            for (int o = 0; o < run->nops; o++) {
                /* the lanes */
                for (int p = 0; p < len[q]; p++) {
                    const pos_t *x = &c[q][p];
                    const unsigned d = does_of(x->kind);
                    orb_step_t s = {.kind = (uint8_t)x->kind, .src_buf = (uint8_t)sh->src_buf, .flags = (uint8_t)x->flags,
                                    .send_peer = (d & D_SEND) ? c[q][p + 1].rank : -1,
                                    .recv_peer = (d & D_IN) ? c[q][p - 1].rank : -1,
                                    .src_off = src_off + (size_t)ch * cnt, .dst_off = dst_off + (size_t)ch * cnt,
                                    .count = cnt};
                    push(&run->job[x->rank].plan[o], ch, s);
                }
                /* the reference: element by element down the chain */
                for (size_t i = 0; i < cnt; i++) {
                    double v = 0;
                    for (int p = 0; p < len[q]; p++) {
                        const pos_t *x = &c[q][p];
                        const unsigned d = does_of(x->kind);
                        job_t *j = &run->job[x->rank];
                        const int div = (x->flags & ORB_STEP_POSTOP) && sh->op == ORB_AVG ? sh->nranks : 0;
                        double s = 0;
                        if (d & D_SRC)
                            s = dec(sh->dtype, sh->src_buf == ORB_BUF_INPUT ? j->in_want[o] : j->out_want[o],
                                    src_off + (size_t)ch * cnt + i);
                        if (d & D_REDUCE)
                            v = ref_apply(sh->dtype, sh->op, s, v, div);
                        else
                            v = ref_apply(sh->dtype, K_FIRST, (d & D_IN) ? v : s, 0, div);
                        if (d & D_DST)
                            enc(sh->dtype, j->out_want[o], dst_off + (size_t)ch * cnt + i, v);
                    }
                }
            }
    }
}

/* ---- the failures: each must end in an error naming both sides --------------------------------- */

static void small_group(run_t *run, const char *name, int nranks, size_t slot_bytes, int nslots, orb_dtype_t dtype,
                        int nops, int stutter)
{
    memset(run, 0, sizeof *run);
    snprintf(run->name, sizeof run->name, "%s", name);
    run->nranks = nranks;
    run->nch = 1;
    run->nops = nops;
    run->stutter = stutter;
    run->dtype = dtype;
    run->slot_bytes = slot_bytes;
    run->nslots = nslots;
    run->timeout_s = 5;
    run_buffers(run, 128);
    run_connect(run);
    for (int r = 0; r < nranks; r++) {
        job_t *j = &run->job[r];
        j->want_st = ORB_OK;
        j->want_post_peer = -1;
        j->want_box_st = ORB_OK;
    }
}

static void small_run(run_t *run, const char *name, int nranks, size_t slot_bytes, int nslots, orb_dtype_t dtype)
{
    small_group(run, name, nranks, slot_bytes, nslots, dtype, 1, 0);
}

static orb_step_t step_of(int kind, int send_peer, int recv_peer, size_t count)
{
    return (orb_step_t){.kind = (uint8_t)kind, .src_buf = ORB_BUF_INPUT, .send_peer = send_peer,
                        .recv_peer = recv_peer, .count = count};
}

static int passed, failed;

/* Runs a failure case and prints what each rank said. */
static void verdict(run_t *run)
{
    int ok = run_go(run);
    printf("%s %s\n", ok ? "ok  " : "FAIL", run->name);
    for (int r = 0; r < run->nranks; r++) {
        const rank_ctx_t *c = &run->ctx[r];
        if (run->job[r].st != ORB_OK)
            printf("       rank %d returned %s: %s\n", r, orb_status_name(run->job[r].st), run->job[r].err);
        if (c->nposted)
            printf("       rank %d posted to rank %d: %s\n", r, c->posted_peer[0], c->posted_msg[0]);
    }
    if (ok)
        passed++;
    else
        failed++;
    run_free(run);
    free(run);
}

/* Rank 0 sends n0 int32 elements as call #seq0 of count c0; rank 1 expects n1 as call #seq1
 * of count c1. Slots of 64 bytes: 16 elements a piece. */
static void mismatch_p2p(const char *name, uint64_t seq0, size_t c0, size_t n0, uint64_t seq1, size_t c1, size_t n1,
                         int nslots)
{
    run_t *run = malloc(sizeof *run);
    small_run(run, name, 2, 64, nslots, ORB_INT32);
    for (int r = 0; r < 2; r++) {
        plan_init(run, r, 0, ORB_COLL_ALLREDUCE);
        op_init(run, r, 0, ORB_COLL_ALLREDUCE, r ? seq1 : seq0, r ? c1 : c0, ORB_SUM, 0);
    }
    push(&run->job[0].plan[0], 0, step_of(ORB_STEP_SEND, 1, -1, n0));
    push(&run->job[1].plan[0], 0, step_of(ORB_STEP_RECV, -1, 0, n1));
    static char s0[128], s1[128], size[160];
    snprintf(s0, sizeof s0, "rank 0 called allreduce #%llu (count %zu, int32, sum)", (unsigned long long)seq0, c0);
    snprintf(s1, sizeof s1, "rank 1 called allreduce #%llu (count %zu, int32, sum)", (unsigned long long)seq1, c1);
    snprintf(size, sizeof size, "received a piece of %zu bytes from rank 0 where it expected %zu",
             4 * (n0 < 16 ? n0 : 16), 4 * (n1 < 16 ? n1 : 16));
    job_t *j0 = &run->job[0], *j1 = &run->job[1];
    const int same_sig = seq0 == seq1 && c0 == c1;
    j1->want_st = ORB_ERR_MISMATCH;
    j1->want_err[0] = same_sig ? size : s1; /* "rank 1 called X but rank 0 called Y" */
    j1->want_err[1] = same_sig ? NULL : s0;
    /* For a piece of the wrong size in one call the peer is told "rank 0 called X but rank 1
     * called X", the same call twice: only that both are named is asserted. */
    j1->want_post_peer = 0;
    j1->want_post[0] = s0;
    j1->want_post[1] = s1;
    /* Rank 0's pieces fit in its FIFO: it returns before rank 1 looks at them and finds the
     * error in its box afterwards; when they do not, its executor must return that error. */
    const int fits = (n0 + 15) / 16 <= (size_t)nslots;
    j0->want_st = fits ? ORB_OK : ORB_ERR_MISMATCH;
    j0->want_err[0] = s0;
    j0->want_err[1] = s1;
    j0->want_box_st = ORB_ERR_MISMATCH;
    j0->want_box[0] = s0;
    j0->want_box[1] = s1;
    verdict(run);
}

/* Job j must fail with a mismatch whose message names a (and b, unless NULL), its buffers
 * untouched. post_peer >= 0: it posts exactly one error, to that rank, naming the same, and its
 * box holds one naming the same; -2: who posts and what the box holds is a race, not judged. */
static void want_mismatch(job_t *j, const char *a, const char *b, int post_peer)
{
    j->want_st = ORB_ERR_MISMATCH;
    j->want_err[0] = a;
    j->want_err[1] = b;
    j->want_post_peer = post_peer;
    if (post_peer >= 0) {
        j->want_post[0] = j->want_box[0] = a;
        j->want_post[1] = j->want_box[1] = b;
        j->want_box_st = ORB_ERR_MISMATCH;
    }
    j->check_data = 1;
}

/* Two ranks disagree on the root of a broadcast: both see it in the handshake, and the plan
 * (rank 0 sends, rank 1 receives) never starts: rank 1's output stays as it was. */
static void mismatch_handshake(void)
{
    run_t *run = malloc(sizeof *run);
    small_run(run, "handshake: broadcast with root 0 on rank 0, root 1 on rank 1", 2, 64, 2, ORB_FLOAT32);
    static const char *const a = "broadcast #3 (count 4, float32, root 0)", *const b = "broadcast #3 (count 4, float32, root 1)";
    for (int r = 0; r < 2; r++) {
        job_t *j = &run->job[r];
        plan_init(run, r, 0, ORB_COLL_BROADCAST);
        op_init(run, r, 0, ORB_COLL_BROADCAST, 3, 4, ORB_SUM, r);
        j->op[0].sync_next = j->op[0].sync_prev = 1 - r;
        want_mismatch(j, a, b, 1 - r);
    }
    push(&run->job[0].plan[0], 0, step_of(ORB_STEP_SEND, 1, -1, 4));
    push(&run->job[1].plan[0], 0, step_of(ORB_STEP_RECV, -1, 0, 4));
    /* rank 1's handshake is there before rank 0 starts: rank 0's own, which rides on its data,
     * must still go out, or rank 1 would only learn of the mismatch from its box */
    run->job[0].start_after_ms = 20;
    verdict(run);
}

/* Rank 0's broadcast sends its data with its handshake riding on it; rank 1 called a count-0
 * all-reduce, which takes nothing from rank 0. Rank 1 starts 20 ms late, so the piece is in
 * before it looks: it must name the disagreement, not count a piece that no lane of its call
 * takes as the handshake and return (its FIFO would keep the piece for a later call). */
static void mismatch_merged_untaken(void)
{
    run_t *run = malloc(sizeof *run);
    small_run(run, "handshake: a broadcast's data reaches a count-0 all-reduce that takes nothing from it", 2, 64, 2,
              ORB_FLOAT32);
    static const char *const a = "rank 0 called broadcast #3 (count 4, float32, root 0)",
                      *const b = "rank 1 called allreduce #3 (count 0, float32, sum)";
    plan_init(run, 0, 0, ORB_COLL_BROADCAST);
    op_init(run, 0, 0, ORB_COLL_BROADCAST, 3, 4, ORB_SUM, 0);
    push(&run->job[0].plan[0], 0, step_of(ORB_STEP_SEND, 1, -1, 4));
    plan_init(run, 1, 0, ORB_COLL_ALLREDUCE);
    op_init(run, 1, 0, ORB_COLL_ALLREDUCE, 3, 0, ORB_SUM, 0);
    for (int r = 0; r < 2; r++) {
        job_t *j = &run->job[r];
        j->op[0].sync_next = j->op[0].sync_prev = 1 - r;
        want_mismatch(j, a, b, -2); /* both see it: who posts first is a race */
    }
    run->job[1].start_after_ms = 20;
    verdict(run);
}

/* Three ranks each call a broadcast whose root is its ring predecessor: every rank is a
 * chain's forwarder (receive from the previous rank, send to the next), so each handshake is
 * to ride on a piece sent after a receive that never comes. After ORB_EXEC_UNMERGE_S they go
 * as pieces of their own, and every rank names the disagreement, well before the timeout (a
 * run that kept waiting would end in ORB_ERR_TIMEOUT after 5 s). Who sees it first is a race:
 * each rank's message names its own call, the posts and boxes are not judged. */
static void mismatch_all_forwarders(void)
{
    run_t *run = malloc(sizeof *run);
    small_run(run, "handshake: 3 ranks, each a forwarder of a broadcast rooted at its predecessor", 3, 64, 2,
              ORB_FLOAT32);
    static char mine[3][96];
    for (int r = 0; r < 3; r++) {
        job_t *j = &run->job[r];
        const int prev = (r + 2) % 3, next = (r + 1) % 3;
        plan_init(run, r, 0, ORB_COLL_BROADCAST);
        op_init(run, r, 0, ORB_COLL_BROADCAST, 3, 4, ORB_SUM, prev);
        j->op[0].sync_next = next;
        j->op[0].sync_prev = prev;
        push(&j->plan[0], 0, step_of(ORB_STEP_RECV_COPY_SEND, next, prev, 4));
        snprintf(mine[r], sizeof mine[r], "rank %d called broadcast #3 (count 4, float32, root %d)", r, prev);
        want_mismatch(j, mine[r], NULL, -2);
    }
    verdict(run);
}

/* A group of two calls: a broadcast, whose neighbour's handshake piece is in before rank 0
 * starts but is seen late (every other look says "not yet"), then a call without a handshake
 * that receives from that neighbour. The second call must wait for the first one's handshake
 * to be taken, not take that piece as its data. */
static void group_handshake_seen_late(void)
{
    run_t *run = malloc(sizeof *run);
    small_group(run, "group: a broadcast's handshake piece seen late, then a receive from the same rank", 2, 64, 4,
                ORB_FLOAT32, 2, 1);
    for (int r = 0; r < 2; r++) {
        job_t *j = &run->job[r];
        plan_init(run, r, 0, ORB_COLL_BROADCAST);
        op_init(run, r, 0, ORB_COLL_BROADCAST, 3, 4, ORB_SUM, 0);
        j->op[0].sync_next = j->op[0].sync_prev = 1 - r;
        plan_init(run, r, 1, ORB_COLL_ALLREDUCE);
        op_init(run, r, 1, ORB_COLL_ALLREDUCE, 4, 4, ORB_SUM, 0);
        j->check_data = 1;
    }
    push(&run->job[0].plan[0], 0, step_of(ORB_STEP_SEND, 1, -1, 4));
    push(&run->job[1].plan[0], 0, step_of(ORB_STEP_RECV, -1, 0, 4));
    push(&run->job[1].plan[1], 0, step_of(ORB_STEP_SEND, 0, -1, 4));
    push(&run->job[0].plan[1], 0, step_of(ORB_STEP_RECV, -1, 1, 4));
    memcpy(run->job[1].out_want[0], run->job[0].in[0], 4 * sizeof(float));
    memcpy(run->job[0].out_want[1], run->job[1].in[1], 4 * sizeof(float));
    run->job[0].start_after_ms = 20; /* rank 1's handshake and data are in first */
    verdict(run);
}

/* A step kind past the vocabulary is refused, not guessed at. */
static void unknown_kind(void)
{
    run_t *run = malloc(sizeof *run);
    small_run(run, "a step of unknown kind", 2, 64, 1, ORB_INT32);
    static char want[64];
    snprintf(want, sizeof want, "plan step of unknown kind %d", ORB_NUM_STEP_KINDS);
    for (int r = 0; r < 2; r++) {
        plan_init(run, r, 0, ORB_COLL_ALLREDUCE);
        op_init(run, r, 0, ORB_COLL_ALLREDUCE, 1, 4, ORB_SUM, 0);
    }
    push(&run->job[0].plan[0], 0, step_of(ORB_NUM_STEP_KINDS, 1, -1, 4));
    run->job[0].want_st = ORB_ERR_INTERNAL;
    run->job[0].want_err[0] = want;
    run->job[0].check_data = 1;
    verdict(run);
}

/* ---- main ------------------------------------------------------------------------------------- */

int main(int argc, char **argv)
{
    int verbose = argc > 1 && strcmp(argv[1], "-v") == 0;
    ref_init();
    pool_start();
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);

    /* every kind of the vocabulary must have a meaning here, and the names must agree */
    if (NKINDS != ORB_NUM_STEP_KINDS) {
        fprintf(stderr, "FAIL ORB_STEP_MAP has %d rows but ORB_NUM_STEP_KINDS is %d\n", NKINDS, ORB_NUM_STEP_KINDS);
        failed++;
    }
    for (int k = 0; k < NKINDS; k++) {
        if (!does_of(kinds[k].id)) {
            fprintf(stderr, "FAIL step kind \"%s\" (%d) has no case: write what it does in meaning[]\n",
                    kinds[k].name, kinds[k].id);
            failed++;
        }
        if (kinds[k].id != k || strcmp(orb_step_kind_name((orb_step_kind_t)k), kinds[k].name) != 0) {
            fprintf(stderr, "FAIL step kind %d: orb_step_kind_name gives \"%s\", the map \"%s\"\n", k,
                    orb_step_kind_name((orb_step_kind_t)k), kinds[k].name);
            failed++;
        }
    }

    static const orb_dtype_t dtypes[] = {ORB_INT32, ORB_FLOAT32, ORB_FLOAT16, ORB_BFLOAT16, ORB_INT8, ORB_FLOAT64};
    static const orb_op_t ops[] = {ORB_SUM, ORB_PROD, ORB_MAX, ORB_MIN, ORB_AVG};
    const int ndt = (int)(sizeof dtypes / sizeof dtypes[0]), nop = (int)(sizeof ops / sizeof ops[0]);
    const int per_kind = ndt * nop * 2 * 4 * 2;
    int ran[ORB_NUM_STEP_KINDS + 1] = {0}, kind_failed[ORB_NUM_STEP_KINDS + 1] = {0};
    unsigned idx = 0;
    int timeouts = 0;
    run_t *run = malloc(sizeof *run);
    if (!run)
        return 2;
    for (int k = 0; k < NKINDS && timeouts < 3; k++) {
        if (!does_of(kinds[k].id))
            continue;
        for (int dt = 0; dt < ndt; dt++)
            for (int op = 0; op < nop; op++)
                for (int postop = 0; postop < 2; postop++)
                    for (int ci = 0; ci < 4; ci++)
                        for (int sb = 0; sb < 2 && timeouts < 3; sb++, idx++) {
                            shape_t sh = {.kind = kinds[k].id, .dtype = dtypes[dt], .op = ops[op], .postop = postop,
                                          .src_buf = sb ? ORB_BUF_OUTPUT : ORB_BUF_INPUT};
                            /* the other axes turn with the case number: all their combinations
                             * within each kind's cases */
                            sh.nranks = 2 + (int)(idx % 3);
                            sh.nch = 1 + (int)(idx / 3 % 2);
                            sh.nslots = 1 + (int)(idx / 6 % 3);
                            sh.slot_bytes = idx / 18 % 2 ? 256 : 64;
                            sh.offmode = (int)(idx / 36 % 3);
                            if (sh.offmode == 2 && sh.src_buf == ORB_BUF_INPUT)
                                sh.offmode = 1;
                            sh.sync = (int)(idx / 108 % 2);
                            sh.nops = 1 + (int)(idx / 216 % 2);
                            sh.stutter = (int)(idx / 432 % 2);
                            /* pieces written past the caches (slot_stores.h): each count
                             * of each kind, dtype and op meets both ways */
                            sh.stream = (int)((idx / 2 + idx / 8) % 2);
                            const size_t per = sh.slot_bytes / esize(sh.dtype);
                            const size_t counts[4] = {1, 7, 2 * per, 3 * per + 5};
                            sh.count = counts[ci];
                            shape_run(&sh, run, 1000u + 2u * idx);
                            int ok = run_go(run);
                            for (int r = 0; r < run->nranks; r++)
                                timeouts += run->job[r].st == ORB_ERR_TIMEOUT;
                            if (ok)
                                passed++;
                            else {
                                failed++;
                                kind_failed[k]++;
                            }
                            if (verbose)
                                printf("%s %s\n", ok ? "ok  " : "FAIL", run->name);
                            run_free(run);
                            ran[k]++;
                        }
        printf("%s %-22s %d cases, %d failed\n", ran[k] == per_kind && !kind_failed[k] ? "ok  " : "FAIL",
               kinds[k].name, ran[k], kind_failed[k]);
        if (ran[k] != per_kind) {
            fprintf(stderr, "FAIL %s: %d of %d cases ran%s\n", kinds[k].name, ran[k], per_kind,
                    timeouts >= 3 ? " (stopped after 3 timeouts)" : "");
            failed++;
        }
    }
    free(run);

    mismatch_p2p("mismatch: call #7 sent, #8 expected, the sender done", 7, 5, 5, 8, 5, 5, 4);
    mismatch_p2p("mismatch: call #7 sent, #8 expected, the sender blocked", 7, 100, 100, 8, 100, 100, 1);
    mismatch_p2p("mismatch: count 5 sent, count 6 expected", 7, 5, 5, 7, 6, 6, 4);
    mismatch_p2p("mismatch: the same call, a piece of 5 elements where 6 were expected", 9, 5, 5, 9, 5, 6, 4);
    mismatch_handshake();
    mismatch_all_forwarders();
    mismatch_merged_untaken();
    group_handshake_seen_late();
    unknown_kind();
    pool_hand(NULL);
    for (int r = 0; r < MAXR; r++)
        pthread_join(pool.th[r], NULL);

    clock_gettime(CLOCK_MONOTONIC, &t1);
    printf("%.2f s\n", (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec));
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
