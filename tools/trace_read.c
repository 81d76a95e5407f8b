/* Reading ORBIT_TRACE files: one text file per (comm, rank), a record a line. A damaged file
 * is read as far as it goes: a profile of a job that died is the one most worth reading. */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "trace.h"

#define MAX_TOKENS 20

static int parse_i64(const char *s, int64_t *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end)
        return -1;
    *out = v;
    return 0;
}

static int parse_int(const char *s, int *out)
{
    int64_t v;
    if (parse_i64(s, &v) || v < INT32_MIN || v > INT32_MAX)
        return -1;
    *out = (int)v;
    return 0;
}

static int copy_word(char *dst, size_t size, const char *src)
{
    size_t n = strlen(src);
    if (n >= size)
        return -1;
    memcpy(dst, src, n + 1);
    return 0;
}

static int parse_call(char **t, trace_call_t *c)
{
    memset(c, 0, sizeof(*c));
    return parse_i64(t[1], &c->id) || parse_i64(t[2], &c->seq) || copy_word(c->coll, sizeof(c->coll), t[3]) ||
           parse_i64(t[4], &c->count) || copy_word(c->dtype, sizeof(c->dtype), t[5]) ||
           copy_word(c->op, sizeof(c->op), t[6]) || parse_int(t[7], &c->root) || parse_i64(t[8], &c->bytes) ||
           copy_word(c->algo, sizeof(c->algo), t[9]) || copy_word(c->proto, sizeof(c->proto), t[10]) ||
           parse_int(t[11], &c->nchannels) || copy_word(c->transports, sizeof(c->transports), t[12]) ||
           parse_i64(t[13], &c->t0) || parse_i64(t[14], &c->t1) || copy_word(c->status, sizeof(c->status), t[15])
               ? -1
               : 0;
}

static int parse_step(char **t, trace_step_t *s)
{
    memset(s, 0, sizeof(*s));
    return parse_i64(t[1], &s->id) || parse_int(t[2], &s->channel) || parse_int(t[3], &s->index) ||
           copy_word(s->kind, sizeof(s->kind), t[4]) || parse_int(t[5], &s->send_peer) ||
           parse_int(t[6], &s->recv_peer) || parse_i64(t[7], &s->bytes) || parse_i64(t[8], &s->t0) ||
           parse_i64(t[9], &s->t1) || parse_i64(t[10], &s->wait) || parse_i64(t[11], &s->move) ||
           parse_i64(t[12], &s->reduce) || s->channel < 0 || s->channel > 4095
               ? -1
               : 0;
}

static int parse_header(char **t, trace_rank_t *r)
{
    int64_t pid;
    if (strcmp(t[0], "rank") || strcmp(t[2], "nranks") || strcmp(t[4], "comm") || strcmp(t[6], "host") ||
        strcmp(t[8], "pid"))
        return -1;
    if (parse_int(t[1], &r->rank) || parse_int(t[3], &r->nranks) || strlen(t[5]) != 16 ||
        strspn(t[5], "0123456789abcdefABCDEF") != 16 ||
        copy_word(r->comm, sizeof(r->comm), t[5]) || copy_word(r->host, sizeof(r->host), t[7]) ||
        parse_i64(t[9], &pid) || r->rank < 0 || r->nranks <= r->rank)
        return -1;
    r->pid = (long)pid;
    return 0;
}

static void *grow(void *p, size_t *cap, size_t n, size_t elem)
{
    if (n < *cap)
        return p;
    size_t c = *cap ? *cap * 2 : 64;
    void *q = realloc(p, c * elem);
    if (!q) {
        fprintf(stderr, "orbit-trace: out of memory\n");
        exit(1);
    }
    *cap = c;
    return q;
}

static int call_cmp(const void *a, const void *b)
{
    const trace_call_t *x = a, *y = b;
    return (x->id > y->id) - (x->id < y->id);
}

static int step_cmp(const void *a, const void *b)
{
    const trace_step_t *x = a, *y = b;
    if (x->id != y->id)
        return (x->id > y->id) - (x->id < y->id);
    if (x->channel != y->channel)
        return x->channel - y->channel;
    if (x->index != y->index)
        return x->index - y->index;
    return (x->t0 > y->t0) - (x->t0 < y->t0);
}

/* Records the file holds; returns -1 when it is not a trace at all (then it is left out). */
static int read_file(const char *path, trace_rank_t *r)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "orbit-trace: %s: %s; skipping it\n", path, strerror(errno));
        return -1;
    }
    char *line = NULL;
    size_t linecap = 0, ccap = 0, scap = 0;
    long lineno = 0;
    bool ended = false, header = false, warned_unknown = false;
    ssize_t len;
    while ((len = getline(&line, &linecap, f)) >= 0) {
        lineno++;
        char *tok[MAX_TOKENS + 1], *save = NULL;
        int nt = 0;
        for (char *p = strtok_r(line, " \t\r\n", &save); p; p = strtok_r(NULL, " \t\r\n", &save))
            if (nt <= MAX_TOKENS)
                tok[nt++] = p;
        if (nt == 0)
            continue;
        if (lineno == 1) {
            if (nt != 2 || strcmp(tok[0], "orbit-trace") || strcmp(tok[1], "1")) {
                fprintf(stderr,
                        "orbit-trace: %s:1: not an orbit trace of version 1 (first line must be "
                        "'orbit-trace 1'); skipping the file\n",
                        path);
                free(line);
                fclose(f);
                return -1;
            }
            continue;
        }
        if (ended) {
            fprintf(stderr, "orbit-trace: %s:%ld: records after 'end' ignored\n", path, lineno);
            break;
        }
        const char *what = tok[0];
        int want = -1;
        bool ok = false;
        if (!strcmp(what, "rank")) {
            want = 10;
            ok = nt == want && !parse_header(tok, r);
            header = header || ok;
        } else if (!strcmp(what, "clock")) {
            want = 5;
            ok = nt == want && !strcmp(tok[1], "offset_ns") && !strcmp(tok[3], "error_ns") &&
                 !parse_i64(tok[2], &r->offset_ns) && !parse_i64(tok[4], &r->error_ns);
        } else if (!strcmp(what, "dropped")) {
            want = 3;
            ok = nt == want && !parse_i64(tok[1], &r->calls_dropped) && !parse_i64(tok[2], &r->steps_dropped);
        } else if (!strcmp(what, "call")) {
            want = 16;
            r->calls = grow(r->calls, &ccap, r->ncalls, sizeof(*r->calls));
            ok = nt == want && !parse_call(tok, &r->calls[r->ncalls]);
            r->ncalls += ok;
        } else if (!strcmp(what, "step")) {
            want = 13;
            r->steps = grow(r->steps, &scap, r->nsteps, sizeof(*r->steps));
            ok = nt == want && !parse_step(tok, &r->steps[r->nsteps]);
            r->nsteps += ok;
        } else if (!strcmp(what, "end")) {
            want = 1;
            ok = ended = nt == 1;
        } else {
            if (!warned_unknown)
                fprintf(stderr,
                        "orbit-trace: warning: %s:%ld: unknown record '%s' skipped (a newer writer?); "
                        "further unknown records of this file are skipped silently\n",
                        path, lineno, what);
            warned_unknown = true;
            continue;
        }
        if (!ok)
            fprintf(stderr,
                    "orbit-trace: error: %s:%ld: malformed '%s' record (%d fields, %d expected, or a "
                    "field that is not a number where one must be); line skipped\n",
                    path, lineno, what, nt > MAX_TOKENS ? MAX_TOKENS : nt, want);
    }
    free(line);
    fclose(f);
    if (lineno == 0) {
        fprintf(stderr, "orbit-trace: %s: empty file; skipping it\n", path);
        return -1;
    }
    if (!header) {
        fprintf(stderr, "orbit-trace: %s: no valid 'rank ... nranks ... comm ...' line; skipping the file\n",
                path);
        return -1;
    }
    if (!ended) {
        r->truncated = true;
        fprintf(stderr,
                "orbit-trace: warning: %s ends without 'end' (the process died while writing?); "
                "using the %zu calls and %zu steps it holds\n",
                path, r->ncalls, r->nsteps);
    }
    trace_sort(r->calls, r->ncalls, sizeof(*r->calls), call_cmp);
    trace_sort(r->steps, r->nsteps, sizeof(*r->steps), step_cmp);
    for (size_t i = 0; i < r->nsteps; i++)
        if (r->steps[i].channel + 1 > r->nchannels)
            r->nchannels = r->steps[i].channel + 1;
    return 0;
}

static bool is_trace_name(const char *n)
{
    size_t len = strlen(n);
    return len > 12 && !strncmp(n, "orbit-", 6) && !strcmp(n + len - 6, ".trace");
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int rank_cmp(const void *a, const void *b)
{
    const trace_rank_t *x = a, *y = b;
    int c = strcmp(x->comm, y->comm);
    return c ? c : x->rank - y->rank;
}

int trace_dir_read(const char *dir, trace_set_t *set)
{
    memset(set, 0, sizeof(*set));
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr,
                "orbit-trace: cannot open directory %s: %s; give the directory that ORBIT_TRACE named "
                "when the job ran\n",
                dir, strerror(errno));
        return -1;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!is_trace_name(e->d_name))
            continue;
        names = grow(names, &cap, n, sizeof(*names));
        names[n] = strdup(e->d_name);
        if (!names[n++]) {
            fprintf(stderr, "orbit-trace: out of memory\n");
            exit(1);
        }
    }
    closedir(d);
    trace_sort(names, n, sizeof(*names), name_cmp);
    set->ranks = calloc(n ? n : 1, sizeof(*set->ranks));
    for (size_t i = 0; i < n; i++) {
        trace_rank_t *r = &set->ranks[set->nranks];
        size_t plen = strlen(dir) + strlen(names[i]) + 2;
        r->path = malloc(plen);
        snprintf(r->path, plen, "%s/%s", dir, names[i]);
        free(names[i]);
        if (read_file(r->path, r) == 0) {
            set->nranks++;
        } else {
            free(r->path);
            free(r->calls);
            free(r->steps);
            memset(r, 0, sizeof(*r));
        }
    }
    free(names);
    if (set->nranks == 0) {
        fprintf(stderr,
                "orbit-trace: no readable orbit-*.trace file in %s; run the job with ORBIT_TRACE=%s "
                "(and ORBIT_TRACE_STEPS=1 for per-step detail)\n",
                dir, dir);
        return -1;
    }
    trace_sort(set->ranks, set->nranks, sizeof(*set->ranks), rank_cmp);
    /* Two files claiming one (comm, rank): keep the first, so every track is one process. */
    size_t k = 0;
    for (size_t i = 0; i < set->nranks; i++) {
        if (k && !rank_cmp(&set->ranks[k - 1], &set->ranks[i])) {
            fprintf(stderr, "orbit-trace: warning: %s and %s are both rank %d of comm %s; ignoring the second\n",
                    set->ranks[k - 1].path, set->ranks[i].path, set->ranks[i].rank, set->ranks[i].comm);
            free(set->ranks[i].path);
            free(set->ranks[i].calls);
            free(set->ranks[i].steps);
            continue;
        }
        set->ranks[k++] = set->ranks[i];
    }
    set->nranks = k;
    return 0;
}

void trace_set_free(trace_set_t *set)
{
    for (size_t i = 0; i < set->nranks; i++) {
        free(set->ranks[i].path);
        free(set->ranks[i].calls);
        free(set->ranks[i].steps);
    }
    free(set->ranks);
    free(set->groups);
    free(set->members);
    free(set->flows);
    free(set->missing);
    memset(set, 0, sizeof(*set));
}
