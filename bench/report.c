#include "report.h"

#include "orbit.h"

void bench_report_header(FILE *f, const bench_opts_t *o, const bench_coll_t *coll, int nranks,
                         const bench_rank_info_t *ranks)
{
    char iters[16] = "auto", warmup[16] = "auto";
    if (o->iters > 0)
        snprintf(iters, sizeof(iters), "%d", o->iters);
    if (o->warmup >= 0)
        snprintf(warmup, sizeof(warmup), "%d", o->warmup);

    fprintf(f, "# orbit %s_bench: backend %s  algo %s  nranks %d  device %s\n", coll->name,
            bench_backend_name(o->backend), o->algo ? o->algo : "auto", nranks,
            o->device == BENCH_DEVICE_GPU ? "gpu" : "cpu");
    fprintf(f, "# minBytes %zu maxBytes %zu step: %zu(factor) warmup iters: %s iters: %s "
               "validation: %d\n",
            o->min_bytes, o->max_bytes, o->factor, warmup, iters, o->check);
    fprintf(f, "#\n# Using devices\n");
    for (int r = 0; r < nranks; r++)
        fprintf(f, "#  Rank %2d Pid %7d on %10s device %s\n", ranks[r].rank, ranks[r].pid,
                ranks[r].host, ranks[r].device);
    fprintf(f, "#\n");
    /* Labels centred over their four columns. */
    fprintf(f, "#%*s%s%*s%s\n", 63, "", "out-of-place", 27, "", "in-place");
    fprintf(f, "# %10s  %12s  %8s  %6s  %6s  %9s  %7s  %7s  %6s  %9s  %7s  %7s  %6s\n", "size",
            "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw",
            "busbw", "#wrong");
    fprintf(f, "# %10s  %12s  %8s  %6s  %6s  %9s  %7s  %7s  %6s  %9s  %7s  %7s  %6s\n", "(B)",
            "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)",
            "");
    fflush(f);
}

void bench_report_skip(FILE *f, const bench_counts_t *c, size_t bytes, int nranks)
{
    (void)c;
    fprintf(f, "# %zu B skipped: less than one element per rank with %d ranks\n", bytes, nranks);
}

/* Enough digits for small times, no fake precision for large ones. */
static void fmt_time(char *out, size_t len, double us)
{
    if (us < 1e4)
        snprintf(out, len, "%.2f", us);
    else if (us < 1e6)
        snprintf(out, len, "%.1f", us);
    else
        snprintf(out, len, "%.0f", us);
}

void bench_report_row(FILE *f, const bench_opts_t *o, const bench_coll_t *coll,
                      const bench_counts_t *c, const bench_result_t res[2])
{
    fprintf(f, "  %10zu  %12zu  %8s  %6s  %6d", c->bytes, c->count, orb_dtype_name(o->dtype),
            coll->uses_op ? orb_op_name(o->op) : "none", coll->uses_root ? o->root : -1);
    for (int p = 0; p < 2; p++) {
        if (!res[p].ran) {
            fprintf(f, "  %9s  %7s  %7s  %6s", "N/A", "N/A", "N/A", "N/A");
            continue;
        }
        char t[32], w[32];
        fmt_time(t, sizeof(t), res[p].time_us);
        if (res[p].wrong < 0)
            snprintf(w, sizeof(w), "N/A");
        else
            snprintf(w, sizeof(w), "%lld", res[p].wrong);
        fprintf(f, "  %9s  %7.2f  %7.2f  %6s", t, res[p].algbw, res[p].busbw, w);
    }
    fprintf(f, "\n");
    fflush(f);
}

void bench_report_json(FILE *f, const bench_opts_t *o, const bench_coll_t *coll, int nranks,
                       const bench_counts_t *c, const bench_result_t *res, int inplace,
                       int iters)
{
    char wrong[32];
    if (res->wrong < 0)
        snprintf(wrong, sizeof(wrong), "null");
    else
        snprintf(wrong, sizeof(wrong), "%lld", res->wrong);
    fprintf(f,
            "{\"coll\": \"%s\", \"size\": %zu, \"count\": %zu, \"dtype\": \"%s\", \"op\": \"%s\", "
            "\"root\": %d, \"backend\": \"%s\", \"algo\": \"%s\", \"device\": \"%s\", "
            "\"nranks\": %d, \"inplace\": %s, \"iters\": %d, \"time_us\": %.3f, "
            "\"algbw\": %.6f, \"busbw\": %.6f, \"wrong\": %s}\n",
            coll->name, c->bytes, c->count, orb_dtype_name(o->dtype),
            coll->uses_op ? orb_op_name(o->op) : "none", coll->uses_root ? o->root : -1,
            bench_backend_name(o->backend), o->algo ? o->algo : "auto",
            o->device == BENCH_DEVICE_GPU ? "gpu" : "cpu", nranks, inplace ? "true" : "false",
            iters, res->time_us, res->algbw, res->busbw, wrong);
    fflush(f);
}

void bench_report_footer(FILE *f, long long wrong, double avg_busbw, int checked)
{
    (void)checked;
    fprintf(f, "# Out of bounds values : %lld %s\n", wrong, wrong ? "FAILED" : "OK");
    fprintf(f, "# Avg bus bandwidth    : %g \n", avg_busbw);
    fprintf(f, "#\n");
    fflush(f);
}
