/* The nccl-tests style table (rank 0's stdout) and the --json rows. */
#ifndef BENCH_REPORT_H
#define BENCH_REPORT_H

#include <stdio.h>

#include "harness.h"
#include "options.h"

/* One placement (out-of-place or in-place) of one size. */
typedef struct {
    int ran;
    double time_us; /* per call, max over ranks */
    double algbw, busbw; /* GB/s (1e9 bytes) */
    long long wrong; /* -1: not checked; all ranks' sum, for the table only */
    long long mine;  /* this rank's own wrong elements: its exit status comes from these */
} bench_result_t;

/* Per-rank line of the header: filled on each rank, gathered to rank 0. */
typedef struct {
    int rank;
    int pid;
    char host[64];
    char device[120];
} bench_rank_info_t;

void bench_report_header(FILE *f, const bench_opts_t *o, const bench_coll_t *coll, int nranks,
                         const bench_rank_info_t *ranks);
void bench_report_skip(FILE *f, const bench_counts_t *c, size_t bytes, int nranks);
void bench_report_row(FILE *f, const bench_opts_t *o, const bench_coll_t *coll,
                      const bench_counts_t *c, const bench_result_t res[2]);
void bench_report_json(FILE *f, const bench_opts_t *o, const bench_coll_t *coll, int nranks,
                       const bench_counts_t *c, const bench_result_t *res, int inplace,
                       int iters);
void bench_report_footer(FILE *f, long long wrong, double avg_busbw, int checked);

#endif
