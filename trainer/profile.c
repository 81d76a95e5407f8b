#include "profile.h"

#include <stdlib.h>
#include <string.h>

#include "error.h"

#define F ORB_TRAIN_EVENT_FIELDS

/* Flattens one rank's two traces into slots of F int64, kind stored + 1 so that the zeros
 * of unused slots (and of other ranks' slots before the reduce) read as "no event". */
static void pack(int64_t *dst, const orb_train_trace_t *t)
{
    for (size_t i = 0; i < t->n; i++) {
        const orb_train_event_t *e = &t->ev[i];
        int64_t *d = dst + i * F;
        d[0] = e->t0;
        d[1] = e->dur;
        d[2] = e->bytes;
        d[3] = e->kind + 1;
        d[4] = e->step;
        d[5] = e->bucket;
    }
}

static int is_comm_kind(int64_t kind)
{
    return kind >= ORB_TRAIN_EV_ALLREDUCE;
}

static void write_chrome(FILE *f, const int64_t *all, int world, int64_t per_rank)
{
    fprintf(f, "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n");
    int first = 1;
    for (int r = 0; r < world; r++) {
        fprintf(f, "%s{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": %d, \"args\": {\"name\": \"rank %d\"}},\n"
                   "{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": %d, \"tid\": 0, \"args\": {\"name\": \"compute\"}},\n"
                   "{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": %d, \"tid\": 1, \"args\": {\"name\": \"communication\"}}",
                first ? "" : ",\n", r, r, r, r);
        first = 0;
        for (int64_t i = 0; i < per_rank; i++) {
            const int64_t *e = all + ((size_t)r * (size_t)per_rank + (size_t)i) * F;
            if (e[3] == 0)
                continue;
            int64_t kind = e[3] - 1;
            char name[64];
            if (e[5] >= 0)
                snprintf(name, sizeof name, "%s bucket %lld (%lld B)", orb_train_ev_name((orb_train_ev_kind_t)kind),
                         (long long)e[5], (long long)e[2]);
            else
                snprintf(name, sizeof name, "%s", orb_train_ev_name((orb_train_ev_kind_t)kind));
            fprintf(f, ",\n{\"name\": \"%s\", \"cat\": \"%s\", \"ph\": \"X\", \"pid\": %d, \"tid\": %d, "
                       "\"ts\": %.3f, \"dur\": %.3f, \"args\": {\"step\": %lld, \"bytes\": %lld}}",
                    name, is_comm_kind(kind) ? "comm" : "compute", r, is_comm_kind(kind) ? 1 : 0, (double)e[0] * 1e-3,
                    (double)e[1] * 1e-3, (long long)e[4], (long long)e[2]);
        }
    }
    fprintf(f, "\n]}\n");
}

typedef struct {
    int64_t bytes, count;
    double secs;
} bucket_stat_t;

static void summarise(FILE *out, const int64_t *all, int world, int64_t per_rank, const char *path,
                      orb_train_profile_summary_t *sum)
{
    fprintf(out, "Profile (%d rank%s, trace: %s)\n", world, world > 1 ? "s" : "", path);
    fprintf(out, "  rank  steps   step ms  compute ms  data ms  comm ms  exposed ms  exposed %%  reduced MB\n");
    int nb = 0;
    double least = -1;
    bucket_stat_t *bs = calloc(64, sizeof *bs);
    for (int r = 0; r < world; r++) {
        double t[ORB_TRAIN_EV_COUNT] = {0}, bytes = 0;
        int64_t steps = 0;
        for (int64_t i = 0; i < per_rank; i++) {
            const int64_t *e = all + ((size_t)r * (size_t)per_rank + (size_t)i) * F;
            if (e[3] == 0)
                continue;
            int64_t kind = e[3] - 1;
            if (kind == ORB_TRAIN_EV_ALLREDUCE && e[5] < 0)
                continue; /* loss and evaluation reductions are not gradient traffic */
            t[kind] += (double)e[1] * 1e-9;
            if (kind == ORB_TRAIN_EV_OPTIMIZER)
                steps++;
            if (kind == ORB_TRAIN_EV_ALLREDUCE) {
                bytes += (double)e[2];
                if (r == 0 && bs && e[5] < 64) {
                    bucket_stat_t *b = &bs[e[5]];
                    b->bytes = e[2];
                    b->count++;
                    b->secs += (double)e[1] * 1e-9;
                    nb = (int)e[5] + 1 > nb ? (int)e[5] + 1 : nb;
                }
            }
        }
        double compute = t[ORB_TRAIN_EV_FORWARD] + t[ORB_TRAIN_EV_BACKWARD] + t[ORB_TRAIN_EV_OPTIMIZER];
        double step = compute + t[ORB_TRAIN_EV_DATA] + t[ORB_TRAIN_EV_WAIT];
        double per = steps ? 1e3 / (double)steps : 0;
        fprintf(out, "  %4d %6lld %9.3f %11.3f %8.3f %8.3f %11.3f %9.1f%% %11.1f\n", r, (long long)steps,
                step * per, compute * per, t[ORB_TRAIN_EV_DATA] * per, t[ORB_TRAIN_EV_ALLREDUCE] * per,
                t[ORB_TRAIN_EV_WAIT] * per, step > 0 ? 100.0 * t[ORB_TRAIN_EV_WAIT] / step : 0.0, bytes / 1e6);
        double frac = step > 0 ? t[ORB_TRAIN_EV_WAIT] / step : 0.0;
        if (least < 0 || frac < least)
            least = frac;
        if (r == 0) {
            *sum = (orb_train_profile_summary_t){step, compute, t[ORB_TRAIN_EV_ALLREDUCE], t[ORB_TRAIN_EV_WAIT],
                                                 bytes, steps, 0.0};
        }
    }
    sum->least_exposed_frac = least < 0 ? 0.0 : least;
    fprintf(out, "  (per step; comm = all-reduce time on the communication thread, exposed = compute thread\n"
                 "   waiting for buckets after backward, which includes waiting for slower ranks; the rank\n"
                 "   that finishes backward last waits least: %.1f%% of its step)\n", 100.0 * sum->least_exposed_frac);
    if (nb > 0) {
        fprintf(out, "  bucket      bytes  calls   mean ms  algbw GB/s  busbw GB/s   (rank 0)\n");
        for (int b = 0; b < nb; b++) {
            if (!bs[b].count)
                continue;
            double mean = bs[b].secs / (double)bs[b].count;
            double alg = mean > 0 ? (double)bs[b].bytes / mean / 1e9 : 0;
            fprintf(out, "  %6d %10lld %6lld %9.3f %11.3f %11.3f\n", b, (long long)bs[b].bytes,
                    (long long)bs[b].count, mean * 1e3, alg, alg * 2.0 * (world - 1) / world);
        }
    }
    free(bs);
}

orb_status_t orb_train_profile_finish(orb_train_comm_t *comm, orb_train_trace_t *compute,
                                      orb_train_trace_t *commtr, const char *path, FILE *out,
                                      orb_train_profile_summary_t *sum)
{
    int rank = orb_train_comm_rank(comm), world = orb_train_comm_world(comm);
    /* The communication thread is idle between jobs here: stop it recording our own gather. */
    commtr->enabled = 0;
    compute->enabled = 0;
    /* every rank's event count: an all-reduced sum of one-hot slots (a gather in effect) */
    int64_t *counts = calloc((size_t)world, sizeof *counts);
    if (!counts)
        return orb_train_fail(ORB_ERR_NO_MEMORY, "profile: out of memory");
    counts[rank] = (int64_t)(compute->n + commtr->n);
    orb_train_job_t job = {.kind = ORB_TRAIN_JOB_ALLREDUCE, .buf = counts, .count = (size_t)world,
                           .dtype = ORB_INT64, .bucket = -1};
    orb_status_t st = orb_train_comm_run(comm, &job);
    int64_t per_rank = 0;
    for (int r = 0; r < world && st == ORB_OK; r++)
        per_rank = counts[r] > per_rank ? counts[r] : per_rank;
    free(counts);
    if (st != ORB_OK)
        return st;
    size_t total = (size_t)world * (size_t)per_rank * F;
    int64_t *all = calloc(total ? total : 1, sizeof *all);
    if (!all)
        return orb_train_fail(ORB_ERR_NO_MEMORY, "profile: cannot allocate %zu events", total / F);
    int64_t *mine = all + (size_t)rank * (size_t)per_rank * F;
    pack(mine, compute);
    pack(mine + compute->n * F, commtr);
    job = (orb_train_job_t){.kind = ORB_TRAIN_JOB_REDUCE, .buf = all, .count = total, .dtype = ORB_INT64,
                            .root = 0, .bucket = -1};
    st = world > 1 ? orb_train_comm_run(comm, &job) : ORB_OK;
    if (st == ORB_OK && rank == 0) {
        FILE *f = fopen(path, "w");
        if (!f) {
            st = orb_train_fail(ORB_ERR_SYSTEM, "--profile %s: cannot create the file", path);
        } else {
            write_chrome(f, all, world, per_rank);
            if (fclose(f) != 0)
                st = orb_train_fail(ORB_ERR_SYSTEM, "--profile %s: write failed", path);
        }
        if (st == ORB_OK)
            summarise(out, all, world, per_rank, path, sum);
    }
    free(all);
    return st;
}
