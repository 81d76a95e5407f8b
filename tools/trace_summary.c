/* The summary: bandwidth per collective and size bucket (the nccl-tests way), where step time
 * went, and who made the others wait. Computed once into rows, then printed as text and JSON so
 * the two cannot disagree. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "trace.h"

static const char *const coll_order[] = {"allreduce", "broadcast", "reduce",   "allgather", "reduce_scatter",
                                         "gather",    "scatter",   "alltoall", "alltoallv", "barrier",
                                         "send",      "recv",      "comm_split"};
#define NORDER (sizeof(coll_order) / sizeof(coll_order[0]))

static int coll_rank(const char *c)
{
    for (size_t i = 0; i < NORDER; i++)
        if (!strcmp(c, coll_order[i]))
            return (int)i;
    return (int)NORDER;
}

/* nccl-tests' bus bandwidth factor; 0 where it means nothing (barrier, unknown). */
static double bus_factor(const char *c, int n)
{
    if (!strcmp(c, "allreduce"))
        return n > 0 ? 2.0 * (n - 1) / n : 0;
    if (!strcmp(c, "allgather") || !strcmp(c, "reduce_scatter") || !strcmp(c, "alltoall") ||
        !strcmp(c, "alltoallv") || !strcmp(c, "gather") || !strcmp(c, "scatter"))
        return n > 0 ? (double)(n - 1) / n : 0;
    if (!strcmp(c, "broadcast") || !strcmp(c, "reduce") || !strcmp(c, "send") || !strcmp(c, "recv"))
        return 1;
    return 0;
}

static void size_name(char *buf, size_t len, int64_t v)
{
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    int u = 0;
    while (v >= 1024 && u < 6) {
        v /= 1024;
        u++;
    }
    snprintf(buf, len, "%" PRId64 " %s", v, unit[u]);
}

/* Power-of-two bucket: [2^k, 2^(k+1)); -1 for zero bytes. */
static int bucket_of(int64_t bytes)
{
    int k = -1;
    while (bytes > 0 && k < 62) {
        bytes >>= 1;
        k++;
    }
    return k;
}

static void bucket_name(char *buf, size_t len, int k)
{
    if (k < 0) {
        snprintf(buf, len, "0 B");
        return;
    }
    char lo[24], hi[24];
    size_name(lo, sizeof(lo), (int64_t)1 << k);
    if (k >= 62)
        snprintf(hi, sizeof(hi), "more");
    else
        size_name(hi, sizeof(hi), (int64_t)1 << (k + 1));
    snprintf(buf, len, "%s-%s", lo, hi);
}

typedef struct {
    const char *coll;
    int nranks, bucket;
    int64_t bytes; /* of the first call: bandwidth uses each row's median, bytes vary in a bucket */
    int64_t *times;
    size_t n, cap;
    int64_t total, median;
    double algbw, busbw;
} row_t;

typedef struct {
    int rank; /* index into set->ranks */
    int64_t wait;
    size_t last;
} blame_t;

/* Per collective and communicator: a rank's share is of its own communicator's time. */
typedef struct {
    const char *coll, *comm;
    int64_t call_time; /* sum over ranks and calls of t_end - t_start */
    blame_t *by_rank;  /* set->nranks entries */
} straggle_t;

static int i64_cmp(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static int row_cmp(const void *a, const void *b)
{
    const row_t *x = a, *y = b;
    int c = coll_rank(x->coll) - coll_rank(y->coll);
    if (!c)
        c = strcmp(x->coll, y->coll);
    if (!c)
        c = x->nranks - y->nranks;
    return c ? c : x->bucket - y->bucket;
}

static int blame_cmp(const void *a, const void *b)
{
    const blame_t *x = a, *y = b;
    if (x->wait != y->wait)
        return x->wait > y->wait ? -1 : 1;
    return x->rank - y->rank;
}

static int straggle_cmp(const void *a, const void *b)
{
    const straggle_t *x = a, *y = b;
    int c = coll_rank(x->coll) - coll_rank(y->coll);
    if (!c)
        c = strcmp(x->coll, y->coll);
    return c ? c : strcmp(x->comm, y->comm);
}

static size_t straggle_find(const straggle_t *st, size_t n, const char *coll, const char *comm)
{
    size_t k;
    for (k = 0; k < n && (strcmp(st[k].coll, coll) || strcmp(st[k].comm, comm)); k++)
        ;
    return k;
}

static row_t *build_rows(const trace_set_t *set, size_t *nrows)
{
    row_t *rows = NULL;
    size_t n = 0, cap = 0;
    for (size_t i = 0; i < set->ngroups; i++) {
        const trace_group_t *g = &set->groups[i];
        int b = bucket_of(g->bytes);
        size_t r;
        for (r = 0; r < n; r++)
            if (!strcmp(rows[r].coll, g->coll) && rows[r].nranks == g->nranks && rows[r].bucket == b)
                break;
        if (r == n) {
            if (n == cap) {
                cap = cap ? cap * 2 : 16;
                rows = realloc(rows, cap * sizeof(*rows));
            }
            rows[n++] = (row_t){.coll = g->coll, .nranks = g->nranks, .bucket = b, .bytes = g->bytes};
        }
        row_t *row = &rows[r];
        if (row->n == row->cap) {
            row->cap = row->cap ? row->cap * 2 : 16;
            row->times = realloc(row->times, row->cap * sizeof(*row->times));
        }
        row->times[row->n++] = g->t1 - g->t0;
        row->total += g->t1 - g->t0;
    }
    for (size_t r = 0; r < n; r++) {
        row_t *row = &rows[r];
        trace_sort(row->times, row->n, sizeof(*row->times), i64_cmp);
        row->median = row->n % 2 ? row->times[row->n / 2] : (row->times[row->n / 2 - 1] + row->times[row->n / 2]) / 2;
        row->algbw = row->median > 0 ? (double)row->bytes / (double)row->median : 0; /* bytes/ns = GB/s */
        row->busbw = row->algbw * bus_factor(row->coll, row->nranks);
    }
    trace_sort(rows, n, sizeof(*rows), row_cmp);
    *nrows = n;
    return rows;
}

/* The last rank to arrive at each collective is charged the time the others spent waiting. */
static straggle_t *build_stragglers(const trace_set_t *set, size_t *nout)
{
    straggle_t *st = NULL;
    size_t n = 0;
    for (size_t i = 0; i < set->nranks; i++) {
        const trace_rank_t *r = &set->ranks[i];
        for (size_t j = 0; j < r->ncalls; j++) {
            const trace_call_t *c = &r->calls[j];
            if (trace_is_p2p(c->coll) || c->seq < 0)
                continue;
            size_t k = straggle_find(st, n, c->coll, r->comm);
            if (k == n) {
                st = realloc(st, (n + 1) * sizeof(*st));
                st[n] = (straggle_t){.coll = c->coll, .comm = r->comm, .by_rank = calloc(set->nranks, sizeof(blame_t))};
                for (size_t q = 0; q < set->nranks; q++)
                    st[n].by_rank[q].rank = (int)q;
                n++;
            }
            st[k].call_time += c->t1 - c->t0;
        }
    }
    for (size_t i = 0; i < set->ngroups; i++) {
        const trace_group_t *g = &set->groups[i];
        if (g->n < 2 || g->seq < 0 || trace_is_p2p(g->coll))
            continue;
        const trace_ref_t *m = &set->members[g->first];
        size_t last = 0;
        for (size_t k = 1; k < g->n; k++) /* members are by rank: ties stay with the lowest */
            if (set->ranks[m[k].rank].calls[m[k].idx].t0 > set->ranks[m[last].rank].calls[m[last].idx].t0)
                last = k;
        int64_t arrive = set->ranks[m[last].rank].calls[m[last].idx].t0, wait = 0;
        for (size_t k = 0; k < g->n; k++) {
            const trace_call_t *c = &set->ranks[m[k].rank].calls[m[k].idx];
            int64_t until = arrive < c->t1 ? arrive : c->t1;
            if (k != last && until > c->t0)
                wait += until - c->t0;
        }
        size_t s = straggle_find(st, n, g->coll, g->comm);
        st[s].by_rank[m[last].rank].wait += wait;
        st[s].by_rank[m[last].rank].last++;
    }
    for (size_t s = 0; s < n; s++)
        trace_sort(st[s].by_rank, set->nranks, sizeof(blame_t), blame_cmp);
    trace_sort(st, n, sizeof(*st), straggle_cmp);
    *nout = n;
    return st;
}

static double share(int64_t part, int64_t whole)
{
    return whole > 0 ? (double)part / (double)whole : 0;
}

static void rank_name(char *buf, size_t len, const trace_set_t *set, int idx)
{
    const trace_rank_t *r = &set->ranks[idx];
    if (set->ncomms > 1)
        snprintf(buf, len, "rank %d (comm %s)", r->rank, r->comm);
    else
        snprintf(buf, len, "rank %d", r->rank);
}

typedef struct {
    size_t n;
    int64_t time, wait, move, reduce;
} steps_t;

typedef struct {
    int64_t error_ns, calls_dropped, steps_dropped;
    int error_rank; /* index, -1 when no rank measured one */
} misc_t;

static void print_text(FILE *out, const trace_set_t *set, const row_t *rows, size_t nrows, const straggle_t *st,
                       size_t nst, const steps_t *sp, const misc_t *mi)
{
    char buf[64], who[64];
    size_t ncalls = 0;
    for (size_t i = 0; i < set->nranks; i++)
        ncalls += set->ranks[i].ncalls;
    fprintf(out, "orbit-trace: %zu files, %zu communicator%s, %zu calls, %.3f ms from first to last event\n\n",
            set->nranks, set->ncomms, set->ncomms == 1 ? "" : "s", ncalls, (set->t_max - set->t_min) / 1e6);
    fprintf(out, "%-15s %5s %-22s %7s %12s %12s %11s %11s\n", "collective", "ranks", "size", "calls", "total ms",
            "median ms", "algbw GB/s", "busbw GB/s");
    for (size_t i = 0; i < nrows; i++) {
        bucket_name(buf, sizeof(buf), rows[i].bucket);
        fprintf(out, "%-15s %5d %-22s %7zu %12.3f %12.3f %11.3f ", rows[i].coll, rows[i].nranks, buf, rows[i].n,
                rows[i].total / 1e6, rows[i].median / 1e6, rows[i].algbw);
        if (bus_factor(rows[i].coll, rows[i].nranks) > 0)
            fprintf(out, "%11.3f\n", rows[i].busbw);
        else
            fprintf(out, "%11s\n", "-");
    }
    if (sp->n)
        fprintf(out,
                "\nsteps: %zu, %.3f ms in all: waiting %.1f%%, moving %.1f%%, reducing %.1f%% (the rest, %.1f%%, "
                "is the executor between them)\n",
                sp->n, sp->time / 1e6, 100 * share(sp->wait, sp->time), 100 * share(sp->move, sp->time),
                100 * share(sp->reduce, sp->time),
                100 * share(sp->time - sp->wait - sp->move - sp->reduce, sp->time));
    fprintf(out, "\nstragglers (the last rank to arrive at a collective is charged the others' wait):\n");
    bool any = false;
    for (size_t s = 0; s < nst; s++)
        for (size_t k = 0; k < set->nranks; k++) {
            const blame_t *b = &st[s].by_rank[k];
            if (b->wait <= 0 || st[s].call_time <= 0)
                continue;
            rank_name(who, sizeof(who), set, b->rank);
            fprintf(out, "  %s made the others wait %.1f%% of %s time (%.3f ms over %zu call%s)\n", who,
                    100 * share(b->wait, st[s].call_time), st[s].coll, b->wait / 1e6, b->last, b->last == 1 ? "" : "s");
            any = true;
        }
    if (!any)
        fprintf(out, "  none: no collective had a rank arrive after the others\n");
    fprintf(out, "\nclock: largest offset error %.3f us", mi->error_ns / 1e3);
    if (mi->error_rank >= 0) {
        rank_name(who, sizeof(who), set, mi->error_rank);
        fprintf(out, ", on %s; waits shorter than that are noise", who);
    }
    fprintf(out, "\ndropped (trace ring full; raise the ring size): %" PRId64 " calls, %" PRId64 " steps\n",
            mi->calls_dropped, mi->steps_dropped);
    for (size_t i = 0; i < set->nmissing; i++)
        fprintf(out, "missing: comm %s rank %d wrote no trace\n", set->missing[i].comm, set->missing[i].rank);
    for (size_t i = 0; i < set->nranks; i++)
        if (set->ranks[i].truncated)
            fprintf(out, "truncated: %s ends without 'end'\n", set->ranks[i].path);
}

static int write_json(const char *path, const trace_set_t *set, const row_t *rows, size_t nrows,
                      const straggle_t *st, size_t nst, const steps_t *sp, const misc_t *mi)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "orbit-trace: cannot write %s: %s; name a writable file with --json FILE\n", path,
                strerror(errno));
        return -1;
    }
    char buf[64];
    fprintf(f, "{\"files\": %zu, \"comms\": %zu, \"span_ns\": %" PRId64 ",\n\"colls\": [", set->nranks,
            set->ncomms, set->t_max - set->t_min);
    for (size_t i = 0; i < nrows; i++) {
        bucket_name(buf, sizeof(buf), rows[i].bucket);
        fprintf(f, "%s\n  {\"coll\": ", i ? "," : "");
        trace_json_str(f, rows[i].coll);
        fprintf(f, ", \"nranks\": %d, \"bucket\": ", rows[i].nranks);
        trace_json_str(f, buf);
        fprintf(f,
                ", \"bytes\": %" PRId64 ", \"calls\": %zu, \"total_ns\": %" PRId64 ", \"median_ns\": %" PRId64
                ", \"algbw_GBps\": %.6f, \"busbw_GBps\": %.6f}",
                rows[i].bytes, rows[i].n, rows[i].total, rows[i].median, rows[i].algbw, rows[i].busbw);
    }
    fprintf(f,
            "],\n\"steps\": {\"count\": %zu, \"time_ns\": %" PRId64 ", \"wait_ns\": %" PRId64
            ", \"move_ns\": %" PRId64 ", \"reduce_ns\": %" PRId64
            ", \"wait_share\": %.6f, \"move_share\": %.6f, \"reduce_share\": %.6f},\n\"stragglers\": {",
            sp->n, sp->time, sp->wait, sp->move, sp->reduce, share(sp->wait, sp->time), share(sp->move, sp->time),
            share(sp->reduce, sp->time));
    bool first = true;
    for (size_t s = 0; s < nst; s++) {
        bool new_coll = s == 0 || strcmp(st[s].coll, st[s - 1].coll);
        if (new_coll) {
            fprintf(f, "%s\n  ", s ? "]," : "");
            trace_json_str(f, st[s].coll);
            fprintf(f, ": [");
        }
        first = first || new_coll;
        for (size_t k = 0; k < set->nranks; k++) {
            const blame_t *b = &st[s].by_rank[k];
            if (b->wait == 0 && b->last == 0)
                continue;
            fprintf(f,
                    "%s\n    {\"comm\": \"%s\", \"rank\": %d, \"wait_ns\": %" PRId64
                    ", \"share\": %.6f, \"last_calls\": %zu, \"call_time_ns\": %" PRId64 "}",
                    first ? "" : ",", set->ranks[b->rank].comm, set->ranks[b->rank].rank, b->wait,
                    share(b->wait, st[s].call_time), b->last, st[s].call_time);
            first = false;
        }
    }
    if (nst)
        fprintf(f, "]");
    fprintf(f, "},\n\"clock_error_ns_max\": %" PRId64 ", \"dropped\": {\"calls\": %" PRId64 ", \"steps\": %" PRId64
               "},\n\"missing\": [",
            mi->error_ns, mi->calls_dropped, mi->steps_dropped);
    for (size_t i = 0; i < set->nmissing; i++)
        fprintf(f, "%s{\"comm\": \"%s\", \"rank\": %d}", i ? ", " : "", set->missing[i].comm,
                set->missing[i].rank);
    fprintf(f, "],\n\"truncated\": [");
    first = true;
    for (size_t i = 0; i < set->nranks; i++)
        if (set->ranks[i].truncated) {
            fprintf(f, "%s", first ? "" : ", ");
            trace_json_str(f, set->ranks[i].path);
            first = false;
        }
    fprintf(f, "]}\n");
    if (ferror(f) | fclose(f)) {
        fprintf(stderr, "orbit-trace: writing %s failed: %s; check the disk has room\n", path, strerror(errno));
        return -1;
    }
    return 0;
}

int trace_summary_write(const trace_set_t *set, FILE *out, const char *json_path)
{
    size_t nrows, nst;
    row_t *rows = build_rows(set, &nrows);
    straggle_t *st = build_stragglers(set, &nst);
    steps_t sp = {0};
    misc_t mi = {.error_rank = -1};
    for (size_t i = 0; i < set->nranks; i++) {
        const trace_rank_t *r = &set->ranks[i];
        for (size_t j = 0; j < r->nsteps; j++) {
            sp.n++;
            sp.time += r->steps[j].t1 - r->steps[j].t0;
            sp.wait += r->steps[j].wait;
            sp.move += r->steps[j].move;
            sp.reduce += r->steps[j].reduce;
        }
        int64_t e = r->error_ns < 0 ? -r->error_ns : r->error_ns;
        if (mi.error_rank < 0 || e > mi.error_ns) {
            mi.error_ns = e;
            mi.error_rank = (int)i;
        }
        mi.calls_dropped += r->calls_dropped;
        mi.steps_dropped += r->steps_dropped;
    }
    print_text(out, set, rows, nrows, st, nst, &sp, &mi);
    int rc = json_path ? write_json(json_path, set, rows, nrows, st, nst, &sp, &mi) : 0;
    for (size_t i = 0; i < nrows; i++)
        free(rows[i].times);
    for (size_t s = 0; s < nst; s++)
        free(st[s].by_rank);
    free(rows);
    free(st);
    return rc;
}
