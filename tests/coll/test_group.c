/* Groups on host buffers, run as N real processes under orbitrun: eight collectives of every
 * kind between orb_group_start and orb_group_end on one communicator run together, and each
 * must give exactly what it gives alone. The non-roots of the reduces and gathers (chains and
 * trees forward partial results) each need scratch of their own for the length of the group:
 * with ring plans from 4 ranks and tree plans at 5, some rank needs it for two calls.
 * Inputs are int32 values built from (rank, call, element), so every expected output is
 * computed here exactly, independently of orbit. Each rank judges only its own outputs,
 * prints "rank R: N passed, N failed" and exits 1 on a failure of its own.
 *   orbitrun -n N test_group [ROUNDS] [LATE_MS]   (ORBIT_ALGO picks the plans, as everywhere)
 *   orbitrun -n N test_group wide                 (more shapes in one group than the plan cache holds)
 *   orbitrun -n N test_group mixed                (two communicators and a refused call in one group)
 * LATE_MS: every rank but 0 enters each group that much later, and the group is gather to the
 * last rank (rank 0 only sends: done at once, its neighbour's handshake still due) and an
 * all-reduce (it cannot end before the others come): the group must not end with the gather. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "orbit.h"

enum { ALLREDUCE, REDUCE_SUM, GATHER_0, REDUCE_MAX, GATHER_LAST, BROADCAST, ALLGATHER, REDUCE_SCATTER, NCALLS };
static const char *const names[NCALLS] = {"allreduce",   "reduce(sum)", "gather(root 0)", "reduce(max)",
                                          "gather(last)", "broadcast",  "allgather",      "reduce_scatter"};

static int nranks, rank;
static long passed, failed;

/* Rank r's input element i of call k: the rank dominates (max is the last rank's), the rest
 * varies with the element and the call; sums of 8 ranks stay far inside int32. */
static int32_t input(int r, int k, size_t i) { return (r + 1) * 1000 + (int32_t)((i * 7 + (size_t)k * 13) % 997); }

static size_t count_of(int k, int round)
{
    /* odd counts, one past a 256 KiB slot (several pieces, chunks of a chain), and one small */
    static const size_t base[NCALLS] = {1031, 70001, 333, 65537, 1, 4099, 12289, 777};
    return base[k] + (size_t)round * 3;
}

static int root_of(int k)
{
    switch (k) {
    case REDUCE_SUM:
    case REDUCE_MAX: /* both reduces to one root: a tree's inner nodes hold scratch for two */
    case GATHER_LAST:
        return nranks - 1;
    case BROADCAST:
        return 1 % nranks;
    default:
        return 0;
    }
}

/* Elements of call k's send and receive buffers on this rank. */
static void sizes(int k, size_t n, size_t *in, size_t *out)
{
    const int root = root_of(k);
    switch (k) {
    case GATHER_0:
    case GATHER_LAST:
        *in = n;
        *out = rank == root ? n * (size_t)nranks : 0;
        break;
    case ALLGATHER:
        *in = n;
        *out = n * (size_t)nranks;
        break;
    case REDUCE_SCATTER:
        *in = n * (size_t)nranks;
        *out = n;
        break;
    case REDUCE_SUM:
    case REDUCE_MAX:
        *in = n;
        *out = rank == root ? n : 0;
        break;
    default:
        *in = *out = n;
    }
}

static int32_t expected(int k, size_t n, size_t i)
{
    int32_t v = 0;
    switch (k) {
    case ALLREDUCE:
    case REDUCE_SUM:
        for (int r = 0; r < nranks; r++)
            v += input(r, k, i);
        return v;
    case REDUCE_MAX:
        return input(nranks - 1, k, i);
    case GATHER_0:
    case GATHER_LAST:
    case ALLGATHER:
        return input((int)(i / n), k, i % n);
    case BROADCAST:
        return input(root_of(k), k, i);
    case REDUCE_SCATTER:
        for (int r = 0; r < nranks; r++)
            v += input(r, k, (size_t)rank * n + i);
        return v;
    }
    return -1;
}

static void check(int round, int k, const int32_t *out, size_t out_n, size_t n)
{
    for (size_t i = 0; i < out_n; i++)
        if (out[i] != expected(k, n, i)) {
            failed++;
            fprintf(stderr, "FAIL rank %d round %d %s count %zu: element %zu is %d, want %d\n", rank, round, names[k],
                    n, i, (int)out[i], (int)expected(k, n, i));
            return;
        }
    passed++;
}

/* "wide": one group of WIDE small calls of as many shapes (all-reduces and broadcasts of
 * counts 1..WIDE, the roots taking turns), more than the communicator's plan cache holds
 * (ORB_PLAN_CACHE, 16), so the cache evicts while the group is open: every call must still run
 * its own plan. Two rounds: the second finds some shapes cached, others not. */
enum { WIDE = 40 };

static int wide_group(orb_comm_t comm)
{
    for (int round = 0; round < 2; round++) {
        int32_t *in[WIDE], *out[WIDE];
        for (int k = 0; k < WIDE; k++) {
            const size_t n = (size_t)k + 1;
            in[k] = malloc(n * sizeof(int32_t));
            out[k] = malloc((n + 1) * sizeof(int32_t));
            if (!in[k] || !out[k]) {
                fprintf(stderr, "test_group: rank %d: out of memory\n", rank);
                return 1;
            }
            for (size_t i = 0; i < n; i++)
                in[k][i] = input(rank, k + round, i);
            for (size_t i = 0; i <= n; i++)
                out[k][i] = -7;
        }
        orb_group_start();
        for (int k = 0; k < WIDE; k++)
            if (k % 2 == 0)
                orb_allreduce(in[k], out[k], (size_t)k + 1, ORB_INT32, ORB_SUM, comm, NULL);
            else
                orb_broadcast(in[k], out[k], (size_t)k + 1, ORB_INT32, (k / 2) % nranks, comm, NULL);
        orb_status_t st = orb_group_end();
        if (st != ORB_OK) {
            fprintf(stderr, "FAIL rank %d wide round %d: orb_group_end: %s: %s\n", rank, round, orb_status_name(st),
                    orb_comm_last_error(comm));
            return 1;
        }
        for (int k = 0; k < WIDE; k++) {
            const size_t n = (size_t)k + 1;
            const int root = (k / 2) % nranks;
            size_t bad = n + 1;
            for (size_t i = 0; i < n && bad > n; i++) {
                int32_t want = 0;
                for (int r = 0; r < nranks; r++)
                    want += k % 2 == 0 || r == root ? input(r, k + round, i) : 0;
                if (out[k][i] != want)
                    bad = i;
            }
            if (bad <= n || out[k][n] != -7) {
                failed++;
                fprintf(stderr, "FAIL rank %d wide round %d %s count %zu: %s\n", rank, round,
                        k % 2 == 0 ? "allreduce" : "broadcast", n,
                        bad <= n ? "an element is wrong" : "the element past the output was written");
            } else {
                passed++;
            }
            free(in[k]);
            free(out[k]);
        }
    }
    printf("rank %d: %ld passed, %ld failed\n", rank, passed, failed);
    orb_comm_destroy(comm);
    return failed || passed != 2 * WIDE ? 1 : 0;
}

/* "mixed": one group of calls on two communicators (the world and its dup), taking turns, with
 * a call that its checks refuse in the middle: the refused call returns its error at once,
 * names its argument, and leaves the group as it was; the group then runs every other call,
 * each communicator's in order. A grouped call is prepared in the group's queue (coll_front.c):
 * the refused one must not take a place there, nor spoil the next call's. */
static int mixed_group(orb_comm_t comm)
{
    orb_comm_t dup;
    orb_status_t st = orb_comm_dup(comm, &dup);
    if (st != ORB_OK) {
        fprintf(stderr, "FAIL rank %d mixed: orb_comm_dup: %s: %s\n", rank, orb_status_name(st),
                orb_comm_last_error(comm));
        return 1;
    }
    enum { M = 4, N = 37 }; /* all-reduce (world), broadcast (dup), gather (world), all-reduce (dup) */
    for (int round = 0; round < 3; round++) {
        int32_t in[M][N], out[M][N * 8 + 1]; /* a gather's output: N a rank, up to 8 ranks */
        for (int k = 0; k < M; k++) {
            for (size_t i = 0; i < N; i++)
                in[k][i] = input(rank, k + 8 * round, i);
            for (size_t i = 0; i < N * 8 + 1; i++)
                out[k][i] = -7;
        }
        const int broot = (round + 1) % nranks, groot = round % nranks;
        orb_group_start();
        orb_status_t s0 = orb_allreduce(in[0], out[0], N, ORB_INT32, ORB_SUM, comm, NULL);
        orb_status_t bad = orb_broadcast(in[1], out[1], N, ORB_INT32, nranks, dup, NULL); /* root out of range */
        char msg[512];
        snprintf(msg, sizeof msg, "%s", orb_comm_last_error(dup));
        orb_status_t s1 = orb_broadcast(in[1], out[1], N, ORB_INT32, broot, dup, NULL);
        orb_status_t s2 = orb_gather(in[2], out[2], N, ORB_INT32, groot, comm, NULL);
        orb_status_t s3 = orb_allreduce(in[3], out[3], N, ORB_INT32, ORB_SUM, dup, NULL);
        st = orb_group_end();
        if (bad != ORB_ERR_INVALID_ARG || !strstr(msg, "orb_broadcast") || !strstr(msg, "root=")) {
            failed++;
            fprintf(stderr, "FAIL rank %d mixed round %d: the refused broadcast returned %s (\"%s\"), want "
                            "ORB_ERR_INVALID_ARG naming orb_broadcast and root=\n", rank, round, orb_status_name(bad), msg);
        }
        if (s0 != ORB_OK || s1 != ORB_OK || s2 != ORB_OK || s3 != ORB_OK || st != ORB_OK) {
            fprintf(stderr, "FAIL rank %d mixed round %d: calls %s %s %s %s, orb_group_end %s: %s\n", rank, round,
                    orb_status_name(s0), orb_status_name(s1), orb_status_name(s2), orb_status_name(s3),
                    orb_status_name(st), orb_comm_last_error(comm));
            return 1;
        }
        for (int k = 0; k < M; k++) {
            const int gathered = k == 2, rooted = k == 1 || k == 2;
            const int root = k == 1 ? broot : groot;
            const size_t n_out = gathered ? (rank == root ? (size_t)N * (size_t)nranks : 0) : N;
            size_t bad_at = SIZE_MAX;
            for (size_t i = 0; i < n_out && bad_at == SIZE_MAX; i++) {
                int32_t want = 0;
                if (gathered)
                    want = input((int)(i / N), k + 8 * round, i % N);
                else
                    for (int r = 0; r < nranks; r++)
                        want += !rooted || r == root ? input(r, k + 8 * round, i) : 0;
                if (out[k][i] != want)
                    bad_at = i;
            }
            if (bad_at != SIZE_MAX || out[k][n_out] != -7) {
                failed++;
                fprintf(stderr, "FAIL rank %d mixed round %d call %d: %s\n", rank, round, k,
                        bad_at != SIZE_MAX ? "an element is wrong" : "the element past the output was written");
            } else {
                passed++;
            }
        }
    }
    printf("rank %d: %ld passed, %ld failed\n", rank, passed, failed);
    orb_comm_destroy(dup);
    orb_comm_destroy(comm);
    return failed || passed != 3 * M ? 1 : 0;
}

int main(int argc, char **argv)
{
    const int wide = argc > 1 && !strcmp(argv[1], "wide"), mixed = argc > 1 && !strcmp(argv[1], "mixed");
    const int rounds = argc > 1 && !wide && !mixed ? atoi(argv[1]) : 3, late_ms = argc > 2 ? atoi(argv[2]) : 0;
    orb_comm_t comm;
    orb_status_t st = orb_comm_init_env(&comm);
    if (st != ORB_OK) {
        fprintf(stderr, "test_group: init: %s: %s\n", orb_status_name(st), orb_comm_last_error(NULL));
        return 1;
    }
    orb_comm_rank(comm, &rank);
    orb_comm_size(comm, &nranks);
    if (wide)
        return wide_group(comm);
    if (mixed)
        return mixed_group(comm);
    for (int round = 0; round < rounds; round++) {
        int32_t *in[NCALLS], *out[NCALLS];
        size_t n[NCALLS], in_n[NCALLS], out_n[NCALLS];
        for (int k = 0; k < NCALLS; k++) {
            n[k] = count_of(k, round);
            sizes(k, n[k], &in_n[k], &out_n[k]);
            in[k] = malloc((in_n[k] + 1) * sizeof(int32_t));
            out[k] = malloc((out_n[k] + 1) * sizeof(int32_t));
            if (!in[k] || !out[k]) {
                fprintf(stderr, "test_group: rank %d: out of memory\n", rank);
                return 1;
            }
            for (size_t i = 0; i < in_n[k]; i++)
                in[k][i] = input(rank, k, i);
            for (size_t i = 0; i <= out_n[k]; i++)
                out[k][i] = -7; /* the element past the output must stay so */
        }
        if (rank != 0 && late_ms > 0)
            usleep((useconds_t)late_ms * 1000);
        orb_group_start();
        if (late_ms > 0) { /* the two calls only */
            orb_gather(in[GATHER_LAST], out[GATHER_LAST], n[GATHER_LAST], ORB_INT32, root_of(GATHER_LAST), comm, NULL);
            orb_allreduce(in[ALLREDUCE], out[ALLREDUCE], n[ALLREDUCE], ORB_INT32, ORB_SUM, comm, NULL);
        } else {
            orb_allreduce(in[ALLREDUCE], out[ALLREDUCE], n[ALLREDUCE], ORB_INT32, ORB_SUM, comm, NULL);
            orb_reduce(in[REDUCE_SUM], out[REDUCE_SUM], n[REDUCE_SUM], ORB_INT32, ORB_SUM, root_of(REDUCE_SUM), comm, NULL);
            orb_gather(in[GATHER_0], out[GATHER_0], n[GATHER_0], ORB_INT32, root_of(GATHER_0), comm, NULL);
            orb_reduce(in[REDUCE_MAX], out[REDUCE_MAX], n[REDUCE_MAX], ORB_INT32, ORB_MAX, root_of(REDUCE_MAX), comm, NULL);
            orb_gather(in[GATHER_LAST], out[GATHER_LAST], n[GATHER_LAST], ORB_INT32, root_of(GATHER_LAST), comm, NULL);
            /* broadcast's root sends its input; the others receive into out */
            orb_broadcast(in[BROADCAST], out[BROADCAST], n[BROADCAST], ORB_INT32, root_of(BROADCAST), comm, NULL);
            orb_allgather(in[ALLGATHER], out[ALLGATHER], n[ALLGATHER], ORB_INT32, comm, NULL);
            orb_reduce_scatter(in[REDUCE_SCATTER], out[REDUCE_SCATTER], n[REDUCE_SCATTER], ORB_INT32, ORB_SUM, comm, NULL);
        }
        st = orb_group_end();
        if (st != ORB_OK) {
            fprintf(stderr, "FAIL rank %d round %d: orb_group_end: %s: %s\n", rank, round, orb_status_name(st),
                    orb_comm_last_error(comm));
            return 1;
        }
        for (int k = 0; k < NCALLS; k++) {
            if (late_ms > 0 && k != GATHER_LAST && k != ALLREDUCE) {
                free(in[k]);
                free(out[k]);
                continue;
            }
            check(round, k, out[k], out_n[k], n[k]);
            if (out[k][out_n[k]] != -7) {
                failed++;
                fprintf(stderr, "FAIL rank %d round %d %s: the element past the output was written\n", rank, round,
                        names[k]);
            }
            for (size_t i = 0; i < in_n[k]; i++)
                if (in[k][i] != input(rank, k, i)) {
                    failed++;
                    fprintf(stderr, "FAIL rank %d round %d %s: the send buffer changed at %zu\n", rank, round,
                            names[k], i);
                    break;
                }
            free(in[k]);
            free(out[k]);
        }
    }
    printf("rank %d: %ld passed, %ld failed\n", rank, passed, failed);
    orb_comm_destroy(comm);
    return failed || passed != (long)rounds * (late_ms > 0 ? 2 : NCALLS) ? 1 : 0;
}
