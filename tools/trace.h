/* orbit-trace: the records of ORBIT_TRACE files as read, the matches across ranks, and the
 * entry points of each output (Chrome JSON, summary, PNG timeline). */
#ifndef ORBIT_TOOLS_TRACE_H
#define ORBIT_TOOLS_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* qsort, but an empty array may be NULL (qsort's pointer must not be, even for n == 0). */
static inline void trace_sort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
    if (n)
        qsort(base, n, size, cmp);
}

#define TRACE_WORD 32 /* longest word field (coll, dtype, algo, status, ...) */

typedef struct {
    int64_t id, seq, count, bytes, t0, t1;
    int root, nchannels;
    char coll[TRACE_WORD], dtype[TRACE_WORD], op[TRACE_WORD], algo[TRACE_WORD];
    char proto[TRACE_WORD], transports[64], status[TRACE_WORD];
    size_t step_first, step_n; /* its steps in the rank's sorted step array */
} trace_call_t;

typedef struct {
    int64_t id, bytes, t0, t1, wait, move, reduce;
    int channel, index, send_peer, recv_peer;
    char kind[TRACE_WORD];
} trace_step_t;

/* One file: one rank of one communicator. */
typedef struct {
    char *path;
    char comm[17], host[256]; /* a fully qualified name fits */
    int rank, nranks;
    long pid;
    int64_t offset_ns, error_ns, calls_dropped, steps_dropped;
    bool truncated;
    trace_call_t *calls; /* sorted by id */
    size_t ncalls;
    trace_step_t *steps; /* sorted by (id, channel, index) */
    size_t nsteps;
    int nchannels; /* 1 + the highest channel of its steps */
} trace_rank_t;

/* A call of one rank: rank = index into set->ranks, idx = index into its calls (or steps). */
typedef struct {
    int rank;
    size_t idx;
} trace_ref_t;

/* The calls of one operation across ranks: a collective by (comm, seq), or a send/recv pair. */
typedef struct {
    const char *coll, *comm;
    int64_t seq, bytes, t0, t1; /* t0 = min start, t1 = max end over its members */
    int nranks;                 /* the communicator's size */
    size_t first, n;            /* members: set->members[first .. first+n), by rank */
} trace_group_t;

typedef struct {
    trace_ref_t from, to; /* sender's and receiver's steps */
} trace_flow_t;

typedef struct {
    char comm[17];
    int rank;
} trace_missing_t;

typedef struct {
    trace_rank_t *ranks; /* sorted by (comm, rank) */
    size_t nranks;
    trace_group_t *groups;
    size_t ngroups;
    trace_ref_t *members;
    size_t nmembers;
    trace_flow_t *flows;
    size_t nflows;
    trace_missing_t *missing;
    size_t nmissing;
    size_t ncomms;
    int64_t t_min, t_max; /* over every call and step */
} trace_set_t;

/* trace_read.c: every orbit-*.trace of dir into set->ranks. Returns 0, or -1 after printing why
 * (no such dir, no trace file). Problems inside a file are warnings and do not fail. */
int trace_dir_read(const char *dir, trace_set_t *set);
void trace_set_free(trace_set_t *set);

/* trace_match.c: groups, send/recv pairs, step flows, missing ranks, time range. */
int trace_set_match(trace_set_t *set);
bool trace_is_p2p(const char *coll);

/* trace_chrome.c: the Chrome trace ("traceEvents") JSON. Returns 0 or -1 after printing why. */
int trace_chrome_write(const trace_set_t *set, const char *path);

/* trace_summary.c: the summary as text on out, and as JSON into json_path when not NULL. */
int trace_summary_write(const trace_set_t *set, FILE *out, const char *json_path);

/* trace_plot.c: the timeline picture. Returns 0 or -1 after printing why. */
int trace_plot_write(const trace_set_t *set, const char *path);

/* trace_png.c: an RGB 8-bit PNG of w x h pixels (rows top down, 3 bytes a pixel), stored
 * (uncompressed) deflate blocks. Returns 0 or -1 after printing why. */
int trace_png_write(const char *path, const uint8_t *rgb, int w, int h);

/* trace_font.c: the 5x7 glyph of c: 5 columns left to right, bit 0 the top row; a box for
 * characters outside printable ASCII. */
const uint8_t *trace_font_glyph(char c);

/* trace_json.c: a JSON string literal of s on f. */
void trace_json_str(FILE *f, const char *s);

#endif
