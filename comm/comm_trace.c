/* The tracer and the flight recorder of a communicator (comm_trace.h), and the public
 * orb_comm_trace_start/stop. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "comm/comm_trace.h"
#include "comm/cuda_hooks.h"
#include "core/dtype.h"
#include "core/log.h"
#include "core/param.h"

struct orb_comm_tracer {
    char dir[PATH_MAX - 64];
    orb_trace_ring_t calls; /* of orb_trace_call_t */
    orb_trace_steps_t steps;
    int steps_on;
    uint64_t kernel_dropped; /* device lanes not recorded (cuda_trace.c) */
    orb_trace_clock_t clock;
    const orb_plan_t *last_plan; /* the plan whose transports were worked out last, and them: */
    uint8_t last_transports;     /* a run of calls of one shape looks them up once */
};

/* ---- names --------------------------------------------------------------------------- */

/* The communicator's name in file names: the first 8 bytes of its id's secret, which every
 * rank of it shares and no other communicator has. */
static void comm_tag(const struct orb_comm *c, char out[17])
{
    for (int i = 0; i < 8; i++)
        snprintf(out + 2 * i, 3, "%02x", c->bs.secret[i]);
}

/* nccl-tests' "size" of a call, what algbw and busbw are computed from. */
static uint64_t call_bytes(const struct orb_comm *c, const orb_prepared_t *p)
{
    const orb_call_t *k = &p->a;
    const uint64_t esz = orb_dtype_bytes(k->dtype), n = (uint64_t)c->nranks;
    switch (k->coll) {
    case ORB_COLL_BARRIER:
        return 0;
    case ORB_COLL_ALLGATHER:
    case ORB_COLL_REDUCE_SCATTER:
    case ORB_COLL_GATHER:
    case ORB_COLL_SCATTER:
    case ORB_COLL_ALLTOALL:
        return k->count * esz * n;
    case ORB_COLL_ALLTOALLV: {
        uint64_t sum = 0;
        for (int j = 0; j < c->nranks && k->sendcounts; j++)
            sum += k->sendcounts[j];
        return sum * esz;
    }
    default:
        return k->count * esz;
    }
}

/* Bit t: orb_transports[t] connects this rank to a peer of the plan. */
static uint8_t plan_transports(const struct orb_comm *c, const orb_plan_t *plan)
{
    uint8_t mask = 0;
    for (int ch = 0; ch < plan->nlanes; ch++)
        for (size_t i = 0; i < plan->lanes[ch].nsteps; i++) {
            const orb_step_t *s = &plan->lanes[ch].steps[i];
            const unsigned props = orb_step_props(s->kind);
            if ((props & ORB_STEP_SENDS) && s->send_peer != c->rank && c->tp_of[s->send_peer] >= 0)
                mask |= (uint8_t)(1u << c->tp_of[s->send_peer]);
            if ((props & ORB_STEP_RECVS) && s->recv_peer != c->rank && c->tp_of[s->recv_peer] >= 0)
                mask |= (uint8_t)(1u << c->tp_of[s->recv_peer]);
        }
    return mask;
}

static void transports_text(uint8_t mask, char *buf, size_t len)
{
    size_t at = 0;
    buf[0] = 0;
    for (int t = 0; orb_transports[t] && t < 8; t++)
        if (mask & (1u << t))
            at += (size_t)snprintf(buf + at, at < len ? len - at : 0, "%s%s", at ? "," : "", orb_transports[t]->name);
    if (!at)
        snprintf(buf, len, "-");
}

/* The step kind as one token ("recv_reduce_send"). */
static void kind_text(int kind, char *buf, size_t len)
{
    snprintf(buf, len, "%s", kind == ORB_TRACE_STEP_KERNEL ? "kernel" : orb_step_kind_name((orb_step_kind_t)kind));
    for (char *q = buf; *q; q++)
        if (*q == '-')
            *q = '_';
}

/* ---- recording ------------------------------------------------------------------------ */

/* Every field of r, written where it lives: a record built on the stack and copied into the
 * flight ring was a tenth of what recording a small call costs. */
static inline void call_record(orb_trace_call_t *r, const orb_prepared_t *p, uint64_t id, int group, int64_t now)
{
    const orb_call_t *k = &p->a;
    *r = (orb_trace_call_t){
        .id = id, .seq = orb_coll_p2p(k->coll) ? -1 : (int64_t)p->sig.seq, .t_start = now,
        .count = k->count, .coll = (int32_t)k->coll, .dtype = (int32_t)k->dtype,
        .op = orb_coll_reduces(k->coll) ? (int32_t)k->op : -1,
        .root = (orb_coll_rooted(k->coll) || orb_coll_p2p(k->coll)) ? k->root : -1,
        /* no plan: an eager call (coll_front.c), the one piece on one channel its plan would move */
        .algo = (int16_t)(p->plan ? p->plan->args.algo : ORB_ALGO_DIRECT),
        .nchannels = (int16_t)(p->plan ? p->plan->nlanes : 1), .device = (uint8_t)p->device,
        .group = (uint8_t)(group != 0),
    };
}

void orb_comm_trace_begin(struct orb_comm *c, orb_prepared_t *p, int group, orb_trace_mark_t *m, int64_t now)
{
    m->flight = m->trace = NULL;
    m->id = p->trace_id = ++c->trace_next_id;
    if (c->flight.cap)
        call_record(m->flight = orb_trace_ring_push(&c->flight), p, m->id, group, now);
    if (c->tracer) {
        struct orb_comm_tracer *t = c->tracer;
        orb_trace_call_t *r = m->trace = orb_trace_ring_push(&t->calls);
        call_record(r, p, m->id, group, now);
        r->bytes = call_bytes(c, p);
        if (!p->plan) { /* an eager send/recv (coll_front.c): its peer's transport */
            const int tp = c->tp_of[p->a.root];
            r->transports = tp >= 0 ? (uint8_t)(1u << tp) : 0;
            return;
        }
        if (p->plan != t->last_plan) {
            t->last_transports = plan_transports(c, p->plan);
            t->last_plan = p->plan;
        }
        r->transports = t->last_transports;
    }
}

void orb_comm_trace_plan_gone(struct orb_comm *c, const orb_plan_t *plan)
{
    if (c->tracer && c->tracer->last_plan == plan)
        c->tracer->last_plan = NULL;
}

void orb_comm_trace_end(struct orb_comm *c, orb_trace_mark_t *m, orb_status_t st, int64_t now)
{
    (void)c;
    /* a group of more calls than the ring holds may have overwritten the record */
    if (m->flight && m->flight->id == m->id) {
        m->flight->t_end = now;
        m->flight->status = st;
        m->flight->ended = 1;
    }
    if (m->trace && m->trace->id == m->id) {
        m->trace->t_end = now;
        m->trace->status = st;
        m->trace->ended = 1;
    }
}

void orb_comm_trace_exec(struct orb_comm *c, int n)
{
    struct orb_comm_tracer *t = c->tracer;
    if (!t || !t->steps_on)
        return;
    orb_trace_steps_t *s = &t->steps;
    if ((size_t)n > s->time_ops) { /* grows once to the largest group seen */
        void *p = realloc(s->time, (size_t)n * ORB_TRACE_MAX_CHANNELS * sizeof *s->time);
        if (!p) {
            ORB_WARN("rank %d: no memory to trace the steps of a group of %d calls: steps no longer traced", c->rank,
                     n);
            t->steps_on = 0;
            c->env.trace = NULL;
            return;
        }
        s->time = p;
        s->time_ops = (size_t)n;
    }
    /* a call that failed mid-step left its timing behind */
    memset(s->time, 0, (size_t)n * ORB_TRACE_MAX_CHANNELS * sizeof *s->time);
    c->env.trace = s;
}

int orb_comm_trace_steps_on(const struct orb_comm *c) { return c->tracer && c->tracer->steps_on; }

void orb_comm_trace_kernel(struct orb_comm *c, uint64_t id, int channel, uint64_t bytes, int64_t t_start_ns,
                           int64_t t_end_ns)
{
    struct orb_comm_tracer *t = c->tracer;
    if (!t || !t->steps.ring.cap)
        return;
    *(orb_trace_step_t *)orb_trace_ring_push(&t->steps.ring) = (orb_trace_step_t){
        .id = id, .t_start = t_start_ns, .t_end = t_end_ns, .bytes = bytes, .index = -1, .send_peer = -1,
        .recv_peer = -1, .channel = (int16_t)channel, .kind = ORB_TRACE_STEP_KERNEL};
}

void orb_comm_trace_kernel_dropped(struct orb_comm *c, uint64_t n)
{
    if (c->tracer)
        c->tracer->kernel_dropped += n;
}

/* ---- writing --------------------------------------------------------------------------- */

/* wait: for the device launches still running, whose steps are read first (never on an
 * error or at exit, where a launch may never end). */
static int write_trace(struct orb_comm *c, const char *why, int wait)
{
    orb_cuda_trace_flush(c, wait);
    struct orb_comm_tracer *t = c->tracer;
    char tag[17], path[PATH_MAX], tmp[PATH_MAX + 8];
    comm_tag(c, tag);
    snprintf(path, sizeof path, "%s/orbit-%s-r%d.trace", t->dir, tag, c->rank);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f) {
        ORB_WARN("rank %d: cannot write the trace to %s (%s): check that ORBIT_TRACE names a writable directory",
                 c->rank, tmp, strerror(errno));
        return -1;
    }
    orb_trace_clock_finish(&t->clock);
    char host[64] = "";
    gethostname(host, sizeof host - 1);
    for (char *q = host; *q; q++)
        if (*q == ' ')
            *q = '_';
    const orb_trace_ring_t *calls = &t->calls, *steps = &t->steps.ring;
    fprintf(f, "orbit-trace 1\nrank %d nranks %d comm %s host %s pid %d\n", c->rank, c->nranks, tag,
            host[0] ? host : "-", (int)getpid());
    fprintf(f, "clock offset_ns %" PRId64 " error_ns %" PRId64 "\n", c->clock_offset_ns, c->clock_err_ns);
    fprintf(f, "dropped %" PRIu64 " %" PRIu64 "\n", orb_trace_ring_dropped(calls),
            (steps->cap ? orb_trace_ring_dropped(steps) : 0) + t->kernel_dropped);
#define NS(ticks) (orb_trace_clock_ns(&t->clock, (ticks)) + c->clock_offset_ns)
    for (size_t i = 0; i < orb_trace_ring_held(calls); i++) {
        const orb_trace_call_t *r = orb_trace_ring_at(calls, i);
        char tps[64];
        transports_text(r->transports, tps, sizeof tps);
        const int64_t t0 = NS(r->t_start);
        fprintf(f, "call %" PRIu64 " %" PRId64 " %s %" PRIu64 " %s %s %d %" PRIu64 " %s %s %d %s %" PRId64 " %" PRId64 " %s\n",
                r->id, r->seq, orb_coll_name((orb_coll_t)r->coll), r->count, orb_dtype_name((orb_dtype_t)r->dtype),
                r->op >= 0 ? orb_op_name((orb_op_t)r->op) : "-", r->root, r->bytes,
                orb_algo_name((orb_algo_t)r->algo), r->device ? "device" : "host", r->nchannels, tps, t0,
                r->ended ? NS(r->t_end) : t0, !r->ended ? "RUNNING" : r->status == ORB_OK ? "OK" : orb_status_name((orb_status_t)r->status));
    }
    for (size_t i = 0; steps->cap && i < orb_trace_ring_held(steps); i++) {
        const orb_trace_step_t *r = orb_trace_ring_at(steps, i);
        char kind[32];
        kind_text(r->kind, kind, sizeof kind);
        if (r->kind == ORB_TRACE_STEP_KERNEL) { /* already ns; the kernel does not split its time */
            fprintf(f, "step %" PRIu64 " %d -1 %s -1 -1 %" PRIu64 " %" PRId64 " %" PRId64 " 0 0 0\n", r->id,
                    r->channel, kind, r->bytes, r->t_start + c->clock_offset_ns, r->t_end + c->clock_offset_ns);
            continue;
        }
        const int64_t t0 = NS(r->t_start), t1 = NS(r->t_end);
        const int64_t mv = NS(r->t_start + r->move) - t0, rd = NS(r->t_start + r->reduce) - t0;
        const int64_t wait = t1 - t0 - mv - rd;
        fprintf(f, "step %" PRIu64 " %d %d %s %d %d %" PRIu64 " %" PRId64 " %" PRId64 " %" PRId64 " %" PRId64 " %" PRId64 "\n",
                r->id, r->channel, r->index, kind, r->send_peer, r->recv_peer, r->bytes, t0, t1, wait > 0 ? wait : 0,
                mv, rd);
    }
#undef NS
    fprintf(f, "end\n");
    int bad = ferror(f);
    bad |= fclose(f) != 0;
    if (bad || rename(tmp, path) != 0) {
        ORB_WARN("rank %d: writing the trace to %s failed (%s)", c->rank, path, strerror(errno));
        unlink(tmp);
        return -1;
    }
    ORB_INFO("rank %d: trace of %zu calls written to %s (%s)", c->rank, orb_trace_ring_held(calls), path, why);
    return 0;
}

static void tracer_free(struct orb_comm *c)
{
    struct orb_comm_tracer *t = c->tracer;
    if (!t)
        return;
    c->env.trace = NULL;
    orb_trace_ring_free(&t->calls);
    orb_trace_ring_free(&t->steps.ring);
    free(t->steps.time);
    free(t);
    c->tracer = NULL;
}

/* Every communicator still tracing when the process exits writes its trace. */
static void write_at_exit_one(struct orb_comm *c)
{
    if (c->tracer)
        write_trace(c, "at exit", 0);
}

static void write_at_exit(void) { orb_comm_live_each(write_at_exit_one); }

static void register_exit(void) { atexit(write_at_exit); }

static orb_status_t tracer_start(struct orb_comm *c, const char *dir, int steps, char *err, size_t errlen)
{
    struct stat sb;
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
        snprintf(err, errlen, "cannot create the trace directory %s (%s): name a writable directory", dir,
                 strerror(errno));
        return ORB_ERR_INVALID_ARG;
    }
    if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode) || access(dir, W_OK) != 0) {
        snprintf(err, errlen, "the trace directory %s is not a writable directory", dir);
        return ORB_ERR_INVALID_ARG;
    }
    if (strlen(dir) >= sizeof c->tracer->dir) {
        snprintf(err, errlen, "the trace directory's path is longer than %zu characters", sizeof c->tracer->dir - 1);
        return ORB_ERR_INVALID_ARG;
    }
    struct orb_comm_tracer *t = calloc(1, sizeof *t);
    size_t ncalls = (size_t)orb_param_num(ORB_PARAM_TRACE_CALLS);
    size_t nsteps = (size_t)orb_param_num(ORB_PARAM_TRACE_STEP_RECORDS);
    if (ncalls < 16)
        ncalls = 16;
    if (nsteps < 16)
        nsteps = 16;
    if (!t || orb_trace_ring_init(&t->calls, sizeof(orb_trace_call_t), ncalls) != 0 ||
        (steps && orb_trace_ring_init(&t->steps.ring, sizeof(orb_trace_step_t), nsteps) != 0)) {
        if (t) {
            orb_trace_ring_free(&t->calls);
            free(t);
        }
        snprintf(err, errlen, "no memory for the trace rings (%zu calls%s): lower ORBIT_TRACE_CALLS", ncalls,
                 steps ? ", and steps: ORBIT_TRACE_STEP_RECORDS" : "");
        return ORB_ERR_NO_MEMORY;
    }
    snprintf(t->dir, sizeof t->dir, "%s", dir);
    t->steps_on = steps != 0;
    orb_trace_clock_start(&t->clock);
    c->tracer = t;
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, register_exit);
    return ORB_OK;
}

/* ---- the flight recorder ----------------------------------------------------------------- */

static void flight_line(const struct orb_comm *c, const orb_trace_call_t *r, const orb_trace_clock_t *k,
                        int64_t now_ns, char *buf, size_t len)
{
    size_t at = (size_t)snprintf(buf, len, "#%" PRIu64 " %s", r->id, orb_coll_name((orb_coll_t)r->coll));
#define ADD(...) at += (size_t)snprintf(buf + at, at < len ? len - at : 0, __VA_ARGS__)
    if (r->seq >= 0)
        ADD(" seq %" PRId64, r->seq);
    ADD(" count %" PRIu64 " %s", r->count, orb_dtype_name((orb_dtype_t)r->dtype));
    if (r->op >= 0)
        ADD(" %s", orb_op_name((orb_op_t)r->op));
    if (r->root >= 0)
        ADD(" %s %d", orb_coll_p2p((orb_coll_t)r->coll) ? "peer" : "root", r->root);
    ADD("%s%s", r->device ? " on the device" : "", r->group ? " (in a group)" : "");
    const double started = (double)(now_ns - orb_trace_clock_ns(k, r->t_start)) * 1e-9;
    if (!r->ended)
        ADD(": running for %.3f s", started);
    else if (r->status == ORB_OK)
        ADD(": done in %.1f us, %.3f s ago", (double)(orb_trace_clock_ns(k, r->t_end) - orb_trace_clock_ns(k, r->t_start)) * 1e-3,
            (double)(now_ns - orb_trace_clock_ns(k, r->t_end)) * 1e-9);
    else
        ADD(": failed after %.3f s with %s", (double)(orb_trace_clock_ns(k, r->t_end) - orb_trace_clock_ns(k, r->t_start)) * 1e-9,
            orb_status_name((orb_status_t)r->status));
#undef ADD
    (void)c;
}

static int ends_comm(orb_status_t st)
{
    return st == ORB_ERR_TIMEOUT || st == ORB_ERR_PEER_LOST || st == ORB_ERR_MISMATCH || st == ORB_ERR_ABORTED ||
           st == ORB_ERR_PROTOCOL || st == ORB_ERR_CUDA || st == ORB_ERR_INTERNAL;
}

void orb_comm_trace_failed(struct orb_comm *c, orb_status_t st)
{
    if (!ends_comm(st) || c->flight_dumped)
        return;
    c->flight_dumped = 1;
    if (c->tracer)
        write_trace(c, "on the first error", 0);
    if (!c->flight.cap)
        return;
    orb_trace_clock_finish(&c->flight_clock);
    const int64_t now = orb_trace_mono_ns();
    const size_t held = orb_trace_ring_held(&c->flight);
    FILE *f = NULL;
    const char *dir = c->tracer ? c->tracer->dir : orb_param_str(ORB_PARAM_S_TRACE);
    char path[PATH_MAX];
    if (dir && dir[0]) {
        char tag[17];
        comm_tag(c, tag);
        snprintf(path, sizeof path, "%s/orbit-%s-r%d.flight", dir, tag, c->rank);
        if (!(f = fopen(path, "w")))
            ORB_WARN("rank %d: cannot write the flight recorder to %s (%s)", c->rank, path, strerror(errno));
    }
    char head[160], line[320];
    snprintf(head, sizeof head, "rank %d of %d: flight recorder: the last %zu of %" PRIu64
             " calls on this communicator, oldest first:", c->rank, c->nranks, held, c->flight.head);
    ORB_WARN("%s", head);
    if (f)
        fprintf(f, "%s\n", head);
    for (size_t i = 0; i < held; i++) {
        flight_line(c, orb_trace_ring_at(&c->flight, i), &c->flight_clock, now, line, sizeof line);
        ORB_WARN("  %s", line);
        if (f)
            fprintf(f, "  %s\n", line);
    }
    if (f)
        fclose(f);
}

/* ---- life cycle and the public calls ---------------------------------------------------------- */

void orb_comm_trace_setup(struct orb_comm *c)
{
    size_t nflight = (size_t)orb_param_num(ORB_PARAM_FLIGHT_CALLS);
    if (nflight > 1 << 20)
        nflight = 1 << 20;
    if (orb_trace_ring_init(&c->flight, sizeof(orb_trace_call_t), nflight) != 0) {
        ORB_WARN("rank %d: no memory for a flight recorder of %zu calls: it is off", c->rank, nflight);
        orb_trace_ring_init(&c->flight, sizeof(orb_trace_call_t), 0);
    }
    orb_trace_clock_start(&c->flight_clock);
    const char *dir = orb_param_str(ORB_PARAM_S_TRACE);
    if (dir && dir[0]) {
        char err[PATH_MAX + 128];
        orb_status_t st = tracer_start(c, dir, orb_param_num(ORB_PARAM_TRACE_STEPS) != 0, err, sizeof err);
        if (st != ORB_OK)
            ORB_WARN("rank %d: ORBIT_TRACE: %s; this communicator is not traced", c->rank, err);
        else if (c->tracer->steps_on)
            c->env.trace = &c->tracer->steps;
    }
}

void orb_comm_trace_teardown(struct orb_comm *c)
{
    if (c->tracer)
        write_trace(c, "at orb_comm_destroy", 1);
    tracer_free(c);
    orb_trace_ring_free(&c->flight);
}

orb_status_t orb_comm_trace_start(orb_comm_t comm, const char *dir, int steps)
{
    orb_status_t st = orb_comm_check_handle(comm, "orb_comm_trace_start");
    if (st != ORB_OK)
        return st;
    if (!dir || !dir[0])
        return orb_comm_fail(comm, ORB_ERR_INVALID_ARG, "orb_comm_trace_start: rank %d: dir is %s: name the directory "
                                                        "the trace goes to", comm->rank, dir ? "empty" : "NULL");
    if (comm->tracer)
        return orb_comm_fail(comm, ORB_ERR_INVALID_ARG, "orb_comm_trace_start: rank %d: this communicator is already "
                                                        "traced (into %s); call orb_comm_trace_stop first",
                             comm->rank, comm->tracer->dir);
    char err[PATH_MAX + 128];
    st = tracer_start(comm, dir, steps, err, sizeof err);
    if (st != ORB_OK)
        return orb_comm_fail(comm, st, "orb_comm_trace_start: rank %d: %s", comm->rank, err);
    if (comm->tracer->steps_on)
        comm->env.trace = &comm->tracer->steps;
    return ORB_OK;
}

orb_status_t orb_comm_trace_ncalls(orb_comm_t comm, size_t *n)
{
    orb_status_t st = orb_comm_check_handle(comm, "orb_comm_trace_ncalls");
    if (st != ORB_OK)
        return st;
    if (!n)
        return orb_comm_fail(comm, ORB_ERR_INVALID_ARG, "orb_comm_trace_ncalls: rank %d: n is NULL", comm->rank);
    *n = comm->tracer ? orb_trace_ring_held(&comm->tracer->calls) : 0;
    return ORB_OK;
}

orb_status_t orb_comm_trace_call(orb_comm_t comm, size_t i, int64_t *t_start_ns, int64_t *t_end_ns, size_t *bytes)
{
    orb_status_t st = orb_comm_check_handle(comm, "orb_comm_trace_call");
    if (st != ORB_OK)
        return st;
    const size_t held = comm->tracer ? orb_trace_ring_held(&comm->tracer->calls) : 0;
    if (i >= held)
        return orb_comm_fail(comm, ORB_ERR_INVALID_ARG, "orb_comm_trace_call: rank %d: i=%zu but the trace holds %zu "
                                                        "calls%s", comm->rank, i, held,
                             comm->tracer ? "" : " (this communicator is not traced)");
    orb_trace_clock_t *k = &comm->tracer->clock;
    orb_trace_clock_finish(k);
    const orb_trace_call_t *r = orb_trace_ring_at(&comm->tracer->calls, i);
    if (t_start_ns)
        *t_start_ns = orb_trace_clock_ns(k, r->t_start);
    if (t_end_ns)
        *t_end_ns = r->ended ? orb_trace_clock_ns(k, r->t_end) : 0;
    if (bytes)
        *bytes = (size_t)r->bytes;
    return ORB_OK;
}

orb_status_t orb_comm_trace_stop(orb_comm_t comm)
{
    orb_status_t st = orb_comm_check_handle(comm, "orb_comm_trace_stop");
    if (st != ORB_OK)
        return st;
    if (!comm->tracer)
        return orb_comm_fail(comm, ORB_ERR_INVALID_ARG, "orb_comm_trace_stop: rank %d: this communicator is not traced "
                                                        "(orb_comm_trace_start or ORBIT_TRACE start it)", comm->rank);
    int bad = write_trace(comm, "at orb_comm_trace_stop", 1);
    char dir[sizeof comm->tracer->dir];
    snprintf(dir, sizeof dir, "%s", comm->tracer->dir);
    tracer_free(comm);
    if (bad)
        return orb_comm_fail(comm, ORB_ERR_SYSTEM, "orb_comm_trace_stop: rank %d: the trace could not be written to %s "
                                                   "(see the warning above); the recording is lost", comm->rank, dir);
    return ORB_OK;
}
