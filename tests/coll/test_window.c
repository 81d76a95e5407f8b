/* Windows (orb_mem_alloc, transport/window.h), real processes under orbitrun.
 *
 *   orbitrun -n N test_window calls     every collective from and into windows (both, the
 *                                       input only, the output only), in place and not,
 *                                       int32 / float64 / uint8, pieces under and over 4 KiB;
 *                                       then the proof that peers' windows were mapped here
 *                                       (read-only memfd:orbit-window lines in /proc/self/maps)
 *                                       unless ORBIT_WINDOWS=0, where there must be none
 *   orbitrun -n 2 test_window lifetime  the sender overwrites its window as soon as its call
 *                                       returns, the receiver comes 200 ms late
 *   orbitrun -n N test_window stale     a window freed and another allocated (the same
 *                                       address, mostly) between two sends from it: the
 *                                       receivers must read the new one, not a mapping they
 *                                       kept of the old
 *   orbitrun -n N test_window many      20 windows (more than a peer keeps mapped) in turn
 *   test_window errors                  the API's bad input, one process
 *
 * Values depend on rank and position; every rank computes what it must hold itself and exits
 * 1 on a failure of its own. (Opening a peer's /proc/<pid>/fd takes the ptrace "read" right,
 * which Yama leaves alone at every level; ranks orbitrun starts share a PID namespace.) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/check.h"
#include "orbit.h"

static int rank, nranks;
static orb_comm_t comm;

static void must(orb_status_t st, const char *what)
{
    if (st != ORB_OK) {
        fprintf(stderr, "rank %d: %s failed: %s: %s\n", rank, what, orb_status_name(st), orb_comm_last_error(comm));
        exit(1);
    }
}

/* Rank r's input element i; sums of up to 8 ranks stay exact in every dtype used. */
static double value(orb_dtype_t dt, int r, size_t i, int salt)
{
    if (dt == ORB_UINT8)
        return (double)((r * 7 + (int)(i % 23) + salt) % 31);
    return (double)((r + 1) * 100000 + (long)(i % 9973) * 3 + salt);
}

static void put(void *buf, orb_dtype_t dt, size_t i, double v)
{
    if (dt == ORB_INT32)
        ((int32_t *)buf)[i] = (int32_t)v;
    else if (dt == ORB_FLOAT64)
        ((double *)buf)[i] = v;
    else
        ((uint8_t *)buf)[i] = (uint8_t)v;
}

static double get(const void *buf, orb_dtype_t dt, size_t i)
{
    return dt == ORB_INT32 ? ((const int32_t *)buf)[i] : dt == ORB_FLOAT64 ? ((const double *)buf)[i]
                                                                          : ((const uint8_t *)buf)[i];
}

static double sum(orb_dtype_t dt, size_t i, int salt)
{
    double s = 0;
    for (int q = 0; q < nranks; q++)
        s += value(dt, q, i, salt);
    return s;
}

enum { ALLREDUCE, REDUCE_SCATTER, ALLGATHER, ALLTOALL, BROADCAST, REDUCE, GATHER, SCATTER, SENDRECV, NCOLLS };
static const char *const coll_name[NCOLLS] = {"allreduce", "reduce_scatter", "allgather", "alltoall", "broadcast",
                                              "reduce", "gather", "scatter", "sendrecv"};

/* Elements of the input and the output a rank needs for count. */
static void sizes(int coll, size_t count, size_t *in, size_t *out)
{
    const size_t n = (size_t)nranks;
    switch (coll) {
    case REDUCE_SCATTER: *in = n * count, *out = n * count; break; /* out n*count: room to run in place */
    case ALLGATHER: case GATHER: *in = count, *out = n * count; break;
    case ALLTOALL: *in = n * count, *out = n * count; break;
    case SCATTER: *in = n * count, *out = n * count; break;
    default: *in = count, *out = count;
    }
}

/* Expected element i of rank's output (NAN-free: -1 where nothing is written), its count. */
static size_t expected_count(int coll, size_t count, int root)
{
    if ((coll == REDUCE || coll == GATHER) && rank != root)
        return 0;
    return coll == ALLGATHER || coll == GATHER || coll == ALLTOALL ? (size_t)nranks * count : count;
}

static double expected(int coll, orb_dtype_t dt, size_t count, int root, size_t i, int salt)
{
    switch (coll) {
    case ALLREDUCE: case REDUCE: return sum(dt, i, salt);
    case REDUCE_SCATTER: return sum(dt, (size_t)rank * count + i, salt);
    case ALLGATHER: case GATHER: return value(dt, (int)(i / count), i % count, salt);
    case ALLTOALL: return value(dt, (int)(i / count), (size_t)rank * count + i % count, salt);
    case BROADCAST: return value(dt, root, i, salt);
    case SCATTER: return value(dt, root, (size_t)rank * count + i, salt);
    default: return value(dt, (rank + nranks - 1) % nranks, i, salt); /* SENDRECV: from the left */
    }
}

static orb_status_t run(int coll, const void *in, void *out, size_t count, orb_dtype_t dt, int root)
{
    switch (coll) {
    case ALLREDUCE: return orb_allreduce(in, out, count, dt, ORB_SUM, comm, NULL);
    case REDUCE_SCATTER: return orb_reduce_scatter(in, out, count, dt, ORB_SUM, comm, NULL);
    case ALLGATHER: return orb_allgather(in, out, count, dt, comm, NULL);
    case ALLTOALL: return orb_alltoall(in, out, count, dt, comm, NULL);
    case BROADCAST: return orb_broadcast(in, out, count, dt, root, comm, NULL);
    case REDUCE: return orb_reduce(in, out, count, dt, ORB_SUM, root, comm, NULL);
    case GATHER: return orb_gather(in, out, count, dt, root, comm, NULL);
    case SCATTER: return orb_scatter(in, out, count, dt, root, comm, NULL);
    default: {
        orb_status_t st = orb_group_start();
        if (st == ORB_OK)
            st = orb_send(in, count, dt, (rank + 1) % nranks, comm, NULL);
        if (st == ORB_OK)
            st = orb_recv(out, count, dt, (rank + nranks - 1) % nranks, comm, NULL);
        orb_status_t end = orb_group_end();
        return st != ORB_OK ? st : end;
    }
    }
}

static int in_place_ok(int coll)
{
    return coll == ALLREDUCE || coll == REDUCE_SCATTER || coll == ALLGATHER || coll == ALLTOALL || coll == BROADCAST;
}

/* One call: where = 0 both buffers in windows, 1 the input only, 2 the output only. */
static void one_call(int coll, orb_dtype_t dt, size_t count, int where, int inplace, int salt)
{
    const size_t esz = orb_dtype_size(dt);
    const int root = (int)(count % (size_t)nranks);
    size_t nin, nout;
    sizes(coll, count, &nin, &nout);
    void *win_a = NULL, *win_b = NULL, *heap = NULL;
    const size_t big = (nin > nout ? nin : nout) * esz;
    must(orb_mem_alloc(&win_a, big), "orb_mem_alloc");
    char *in, *out;
    if (inplace || where == 0) {
        must(orb_mem_alloc(&win_b, big), "orb_mem_alloc");
        in = win_a, out = win_b;
    } else {
        if (!(heap = malloc(big)))
            exit(1);
        in = where == 1 ? win_a : heap;
        out = where == 1 ? heap : win_a;
    }
    if (inplace)
        out = in;
    /* the input, where the call reads it */
    char *src = in;
    if (inplace && coll == ALLGATHER)
        src = out + (size_t)rank * count * esz;
    memset(out, 0xa5, nout * esz);
    for (size_t i = 0; i < nin && !(inplace && coll == ALLGATHER && i >= count); i++)
        put(src, dt, i, value(dt, rank, i, salt));
    const char *send = inplace ? (coll == ALLGATHER ? src : in) : in;
    char *recv = out;
    if (inplace && coll == REDUCE_SCATTER)
        recv = in + (size_t)rank * count * esz;
    must(run(coll, send, recv, count, dt, root), coll_name[coll]);
    const size_t n = expected_count(coll, count, root);
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < n; i++)
        if (get(recv, dt, i) != expected(coll, dt, count, root, i, salt) && bad++ == 0)
            first = i;
    CHECK(!bad, "rank %d: %s %s count %zu (%s, %s): %zu of %zu wrong, first at %zu: %g, expected %g", rank,
          coll_name[coll], orb_dtype_name(dt), count, inplace ? "in place" : "out of place",
          where == 0 ? "both in windows" : where == 1 ? "input in a window" : "output in a window", bad, n, first,
          n ? get(recv, dt, first) : 0.0, n ? expected(coll, dt, count, root, first, salt) : 0.0);
    must(orb_barrier(comm), "orb_barrier"); /* no window is freed while a peer may read it */
    must(orb_mem_free(win_a), "orb_mem_free");
    must(orb_mem_free(win_b), "orb_mem_free");
    free(heap);
}

/* Read-only mappings of other processes' windows in this one. */
static int peer_maps(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[512];
    int n = 0;
    while (f && fgets(line, sizeof line, f)) {
        const char *name = strstr(line, "/memfd:orbit-window");
        char perms[8] = "";
        if (name && (name[19] == ' ' || name[19] == '\n') && sscanf(line, "%*s %7s", perms) == 1 &&
            !strcmp(perms, "r--s"))
            n++;
    }
    if (f)
        fclose(f);
    return n;
}

static void calls(void)
{
    static const orb_dtype_t dts[] = {ORB_INT32, ORB_FLOAT64, ORB_UINT8};
    static const size_t counts[] = {1500, 70001, 300000};
    int salt = 0;
    for (int coll = 0; coll < NCOLLS; coll++)
        for (int d = 0; d < 3; d++)
            for (int k = 0; k < 3; k++) {
                salt++;
                one_call(coll, dts[d], counts[k], (d + k) % 3, 0, salt);
                if (in_place_ok(coll))
                    one_call(coll, dts[d], counts[k], 0, 1, salt + 1000);
            }
    const int maps = peer_maps(), off = getenv("ORBIT_WINDOWS") && !strcmp(getenv("ORBIT_WINDOWS"), "0");
    CHECK(off ? maps == 0 : maps > 0, "rank %d: %d peer windows mapped here (ORBIT_WINDOWS %s)", rank, maps,
          off ? "0: none may be" : "on: some must be, every rank received from a window");
    printf("rank %d: %d peer windows mapped\n", rank, maps);
}

#define LN (1u << 18) /* int32: 1 MiB */

static void fill(int32_t *b, int from, int what)
{
    for (size_t i = 0; i < LN; i++)
        b[i] = (int32_t)((from + 1) * 1000003 + what * 7919 + (int)(i % 65521));
}

static void expect_block(const int32_t *b, int from, int what, const char *name)
{
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < LN; i++)
        if (b[i] != (int32_t)((from + 1) * 1000003 + what * 7919 + (int)(i % 65521)) && bad++ == 0)
            first = i;
    CHECK(!bad, "rank %d: %s: %zu of %u wrong, first at %zu", rank, name, bad, LN, first);
}

static void lifetime(void)
{
    int32_t *w, *out = malloc(LN * sizeof *out);
    must(orb_mem_alloc((void **)&w, LN * sizeof *w), "orb_mem_alloc");
    if (rank == 0) {
        fill(w, 0, 1);
        must(orb_send(w, LN, ORB_INT32, 1, comm, NULL), "orb_send");
        memset(w, 0xee, LN * sizeof *w);
    } else if (rank == 1) {
        usleep(200000);
        must(orb_recv(out, LN, ORB_INT32, 0, comm, NULL), "orb_recv");
        expect_block(out, 0, 1, "recv after the sender overwrote its window");
    }
    must(orb_barrier(comm), "orb_barrier");
    if (rank == 1) {
        fill(w, 1, 2);
        must(orb_broadcast(w, w, LN, ORB_INT32, 1, comm, NULL), "orb_broadcast");
        memset(w, 0xee, LN * sizeof *w);
    } else {
        usleep(200000);
        must(orb_broadcast(NULL, out, LN, ORB_INT32, 1, comm, NULL), "orb_broadcast");
        if (rank == 0)
            expect_block(out, 1, 2, "broadcast received after the root overwrote its window");
    }
    must(orb_barrier(comm), "orb_barrier");
    must(orb_mem_free(w), "orb_mem_free");
    free(out);
}

static void stale(void)
{
    int32_t *out = malloc(LN * sizeof *out);
    void *first = NULL;
    int reused = 0;
    for (int round = 0; round < 6; round++) {
        int32_t *w;
        must(orb_mem_alloc((void **)&w, LN * sizeof *w), "orb_mem_alloc");
        reused += round && (void *)w == first;
        if (!round)
            first = w;
        fill(w, rank, 10 + round);
        /* rank 0 sends its window to every other rank straight (a ring's broadcast would have
         * only its neighbour read the window) */
        must(orb_group_start(), "orb_group_start");
        for (int r = 1; r < nranks && rank == 0; r++)
            must(orb_send(w, LN, ORB_INT32, r, comm, NULL), "orb_send");
        if (rank != 0)
            must(orb_recv(out, LN, ORB_INT32, 0, comm, NULL), "orb_recv");
        must(orb_group_end(), "orb_group_end");
        if (rank != 0) {
            char name[64];
            snprintf(name, sizeof name, "recv from rank 0's window of round %d", round);
            expect_block(out, 0, 10 + round, name);
            CHECK(peer_maps() > 0, "rank %d: round %d: no window of the root mapped here", rank, round);
        }
        must(orb_barrier(comm), "orb_barrier");
        must(orb_mem_free(w), "orb_mem_free");
        must(orb_barrier(comm), "orb_barrier");
    }
    printf("rank %d: the new window had the old one's address in %d of 5 rounds\n", rank, reused);
    free(out);
}

static void many(void)
{
    enum { W = 20 };
    int32_t *w[W], *out = malloc(LN * sizeof *out);
    for (int k = 0; k < W; k++)
        must(orb_mem_alloc((void **)&w[k], LN * sizeof *w[k]), "orb_mem_alloc");
    for (int pass = 0; pass < 2; pass++)
        for (int k = 0; k < W; k++) {
            const int root = k % nranks, what = 100 + pass * W + k;
            fill(w[k], root, what);
            must(orb_broadcast(w[k], rank == root ? w[k] : out, LN, ORB_INT32, root, comm, NULL), "orb_broadcast");
            if (rank != root) {
                char name[64];
                snprintf(name, sizeof name, "broadcast from window %d, pass %d", k, pass);
                expect_block(out, root, what, name);
            }
        }
    must(orb_barrier(comm), "orb_barrier");
    for (int k = 0; k < W; k++)
        must(orb_mem_free(w[k]), "orb_mem_free");
    free(out);
}

static void expect_error(orb_status_t got, orb_status_t want, const char *text, const char *what)
{
    const char *msg = orb_comm_last_error(NULL);
    CHECK(got == want && strstr(msg, text), "%s: got %s \"%s\", expected %s with \"%s\"", what, orb_status_name(got),
          msg, orb_status_name(want), text);
}

static void errors(void)
{
    void *p = (void *)1;
    expect_error(orb_mem_alloc(NULL, 64), ORB_ERR_INVALID_ARG, "ptr (the output pointer) is NULL", "NULL ptr");
    expect_error(orb_mem_alloc(&p, 0), ORB_ERR_INVALID_ARG, "bytes is 0", "0 bytes");
    CHECK(p == NULL, "a failed orb_mem_alloc leaves *ptr NULL, not %p", p);
    expect_error(orb_mem_alloc(&p, SIZE_MAX), ORB_ERR_INVALID_ARG, "more than any process can map", "SIZE_MAX bytes");
    int on_stack;
    expect_error(orb_mem_free(&on_stack), ORB_ERR_INVALID_ARG, "is not the start of a window", "free of a stack address");
    CHECK(orb_mem_free(NULL) == ORB_OK, "orb_mem_free(NULL) is a no-op");
    void *w[251];
    int n = 0;
    orb_status_t st = ORB_OK;
    while (n < 251 && (st = orb_mem_alloc(&w[n], 100)) == ORB_OK)
        n++;
    CHECK(n == 250, "250 windows fit, %d did", n);
    expect_error(st, ORB_ERR_NO_MEMORY, "holds 250 windows already", "the 251st window");
    char *c = w[0];
    c[0] = 1, c[99] = 2, c[4095] = 3; /* rounded up to a page, writable */
    expect_error(orb_mem_free(c + 8), ORB_ERR_INVALID_ARG, "is not the start of a window", "free inside a window");
    for (int k = 0; k < n; k++)
        CHECK(orb_mem_free(w[k]) == ORB_OK, "free of window %d: %s", k, orb_comm_last_error(NULL));
    expect_error(orb_mem_free(w[0]), ORB_ERR_INVALID_ARG, "is not the start of a window", "a second free");
    CHECK(orb_mem_alloc(&p, 1) == ORB_OK && orb_mem_free(p) == ORB_OK, "a window after all were freed: %s",
          orb_comm_last_error(NULL));
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "calls";
    if (!strcmp(mode, "errors")) {
        errors();
        printf("%s\n", failures ? "FAILED" : "all passed");
        return failures ? 1 : 0;
    }
    if (orb_comm_init_env(&comm) != ORB_OK) {
        fprintf(stderr, "init failed: %s\n", orb_comm_last_error(NULL));
        return 1;
    }
    orb_comm_rank(comm, &rank);
    orb_comm_size(comm, &nranks);
    if (!strcmp(mode, "calls"))
        calls();
    else if (!strcmp(mode, "lifetime") && nranks == 2)
        lifetime();
    else if (!strcmp(mode, "stale"))
        stale();
    else if (!strcmp(mode, "many"))
        many();
    else {
        fprintf(stderr, "usage: test_window calls|lifetime|stale|many|errors (lifetime: 2 ranks)\n");
        return 2;
    }
    orb_comm_destroy(comm);
    printf("rank %d: %s %s\n", rank, mode, failures ? "FAILED" : "passed");
    return failures ? 1 : 0;
}
