/* The Chrome trace JSON ("traceEvents"), as chrome://tracing and Perfetto load it: a process
 * per (comm, rank), thread 0 its calls, thread 1+c its steps on channel c, flow arrows from each
 * sending step to its receiving step. Viewers draw a track's X events as a stack, so each track
 * is written sorted by start (longer first on ties) and an event that overlaps its parent's end
 * is cut at that end (args.clipped_us says by how much) rather than drawn wrongly. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "trace.h"

typedef struct {
    int pid, tid;
    int64_t t0, t1;
    bool is_step;
    trace_ref_t ref;
} event_t;

static int event_cmp(const void *a, const void *b)
{
    const event_t *x = a, *y = b;
    if (x->pid != y->pid)
        return x->pid - y->pid;
    if (x->tid != y->tid)
        return x->tid - y->tid;
    if (x->t0 != y->t0)
        return x->t0 < y->t0 ? -1 : 1;
    if (x->t1 != y->t1)
        return x->t1 > y->t1 ? -1 : 1; /* the longer one encloses the other */
    if (x->is_step != y->is_step)
        return x->is_step - y->is_step;
    return (x->ref.idx > y->ref.idx) - (x->ref.idx < y->ref.idx);
}

/* Microseconds since the earliest event, exact to the nanosecond. */
static void put_us(FILE *f, int64_t ns)
{
    if (ns < 0) {
        fputc('-', f);
        ns = -ns;
    }
    fprintf(f, "%" PRId64 ".%03" PRId64, ns / 1000, ns % 1000);
}

static void put_meta(FILE *f, int pid, int tid, const char *what, const char *name, int sort)
{
    fprintf(f, ",\n{\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"name\":\"%s_name\",\"args\":{\"name\":", pid, tid, what);
    trace_json_str(f, name);
    fprintf(f, "}},\n{\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"name\":\"%s_sort_index\",\"args\":{\"sort_index\":%d}}",
            pid, tid, what, sort);
}

static void put_call(FILE *f, const trace_set_t *set, const event_t *e, int64_t clipped)
{
    const trace_call_t *c = &set->ranks[e->ref.rank].calls[e->ref.idx];
    fprintf(f, ",\n{\"ph\":\"X\",\"pid\":%d,\"tid\":0,\"cat\":\"call\",\"name\":", e->pid);
    trace_json_str(f, c->coll);
    fprintf(f, ",\"ts\":");
    put_us(f, e->t0 - set->t_min);
    fprintf(f, ",\"dur\":");
    put_us(f, e->t1 - e->t0);
    fprintf(f, ",\"args\":{\"id\":%" PRId64 ",\"seq\":%" PRId64 ",\"count\":%" PRId64 ",\"dtype\":", c->id, c->seq,
            c->count);
    trace_json_str(f, c->dtype);
    fprintf(f, ",\"op\":");
    trace_json_str(f, c->op);
    fprintf(f, ",\"root\":%d,\"bytes\":%" PRId64 ",\"algo\":", c->root, c->bytes);
    trace_json_str(f, c->algo);
    fprintf(f, ",\"proto\":");
    trace_json_str(f, c->proto);
    fprintf(f, ",\"nchannels\":%d,\"transports\":", c->nchannels);
    trace_json_str(f, c->transports);
    fprintf(f, ",\"status\":");
    trace_json_str(f, c->status);
    if (clipped) {
        fprintf(f, ",\"clipped_us\":");
        put_us(f, clipped);
    }
    fprintf(f, "}}");
}

static void put_step(FILE *f, const trace_set_t *set, const event_t *e, int64_t clipped)
{
    const trace_step_t *s = &set->ranks[e->ref.rank].steps[e->ref.idx];
    fprintf(f, ",\n{\"ph\":\"X\",\"pid\":%d,\"tid\":%d,\"cat\":\"step\",\"name\":", e->pid, e->tid);
    trace_json_str(f, s->kind);
    fprintf(f, ",\"ts\":");
    put_us(f, e->t0 - set->t_min);
    fprintf(f, ",\"dur\":");
    put_us(f, e->t1 - e->t0);
    fprintf(f, ",\"args\":{\"call_id\":%" PRId64 ",\"index\":%d,\"send_peer\":%d,\"recv_peer\":%d,\"bytes\":%" PRId64,
            s->id, s->index, s->send_peer, s->recv_peer, s->bytes);
    fprintf(f, ",\"wait_us\":");
    put_us(f, s->wait);
    fprintf(f, ",\"move_us\":");
    put_us(f, s->move);
    fprintf(f, ",\"reduce_us\":");
    put_us(f, s->reduce);
    if (clipped) {
        fprintf(f, ",\"clipped_us\":");
        put_us(f, clipped);
    }
    fprintf(f, "}}");
}

/* Writes one track's events (e[0..n) share pid and tid), cutting overlaps so they nest. */
static void put_track(FILE *f, const trace_set_t *set, event_t *e, size_t n)
{
    int64_t *stack = malloc((n ? n : 1) * sizeof(*stack)); /* open events' ends */
    size_t depth = 0;
    for (size_t i = 0; i < n; i++) {
        while (depth && stack[depth - 1] <= e[i].t0) /* ended: e[i] follows it, not inside */
            depth--;
        int64_t clipped = 0;
        if (depth && e[i].t1 > stack[depth - 1]) {
            clipped = e[i].t1 - stack[depth - 1];
            e[i].t1 = stack[depth - 1];
        }
        stack[depth++] = e[i].t1;
        if (e[i].is_step)
            put_step(f, set, &e[i], clipped);
        else
            put_call(f, set, &e[i], clipped);
    }
    free(stack);
}

static void put_flow(FILE *f, const trace_set_t *set, size_t id, trace_ref_t r, bool start)
{
    const trace_step_t *s = &set->ranks[r.rank].steps[r.idx];
    fprintf(f, ",\n{\"ph\":\"%s\",\"id\":%zu,\"cat\":\"step\",\"name\":\"data\",\"pid\":%d,\"tid\":%d,\"ts\":",
            start ? "s" : "f", id, r.rank + 1, s->channel + 1);
    put_us(f, s->t0 - set->t_min);
    fprintf(f, "%s}", start ? "" : ",\"bp\":\"e\"");
}

int trace_chrome_write(const trace_set_t *set, const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "orbit-trace: cannot write %s: %s; name a writable file with -o FILE\n", path,
                strerror(errno));
        return -1;
    }
    size_t n = 0;
    for (size_t i = 0; i < set->nranks; i++)
        n += set->ranks[i].ncalls + set->ranks[i].nsteps;
    event_t *ev = malloc((n ? n : 1) * sizeof(*ev));
    n = 0;
    fprintf(f, "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n");
    fprintf(f, "{\"ph\":\"M\",\"pid\":0,\"tid\":0,\"name\":\"process_name\",\"args\":{\"name\":\"orbit-trace\"}}");
    for (size_t i = 0; i < set->nranks; i++) {
        const trace_rank_t *r = &set->ranks[i];
        int pid = (int)i + 1;
        char name[96];
        if (set->ncomms > 1)
            snprintf(name, sizeof(name), "rank %d comm %s", r->rank, r->comm);
        else
            snprintf(name, sizeof(name), "rank %d", r->rank);
        put_meta(f, pid, 0, "process", name, pid);
        put_meta(f, pid, 0, "thread", "calls", 0);
        for (int c = 0; c < r->nchannels; c++) {
            snprintf(name, sizeof(name), "channel %d", c);
            put_meta(f, pid, c + 1, "thread", name, c + 1);
        }
        for (size_t j = 0; j < r->ncalls; j++)
            ev[n++] = (event_t){pid, 0, r->calls[j].t0, r->calls[j].t1, false, {(int)i, j}};
        for (size_t j = 0; j < r->nsteps; j++)
            ev[n++] = (event_t){pid, r->steps[j].channel + 1, r->steps[j].t0, r->steps[j].t1, true, {(int)i, j}};
    }
    trace_sort(ev, n, sizeof(*ev), event_cmp);
    for (size_t i = 0; i < n;) {
        size_t e = i;
        while (e < n && ev[e].pid == ev[i].pid && ev[e].tid == ev[i].tid)
            e++;
        put_track(f, set, ev + i, e - i);
        i = e;
    }
    for (size_t i = 0; i < set->nflows; i++) {
        put_flow(f, set, i + 1, set->flows[i].from, true);
        put_flow(f, set, i + 1, set->flows[i].to, false);
    }
    fprintf(f, "\n]}\n");
    free(ev);
    if (ferror(f) | fclose(f)) {
        fprintf(stderr, "orbit-trace: writing %s failed: %s; check the disk has room\n", path, strerror(errno));
        return -1;
    }
    return 0;
}
