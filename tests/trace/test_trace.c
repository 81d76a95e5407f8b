/* Jobs for the tracer's tests (check_trace.py runs them under orbitrun and checks what they
 * leave in DIR). Each rank checks only its own calls' results; what the traces say is judged
 * by the checker, from the files, against what this program is known to do.
 *
 *   test_trace known DIR      a fixed sequence of calls (ORBIT_TRACE=DIR set by the checker);
 *                             rank 2 sleeps DELAY_MS before allreduce #2 and #4 and broadcast #1
 *   test_trace startstop DIR  orb_comm_trace_start/stop around part of the calls, steps on
 *   test_trace many DIR       the world and 3 dups at once, interleaved
 *   test_trace overflow DIR   more calls than the ring holds (ORBIT_TRACE_CALLS=16)
 *   test_trace mismatch DIR   rank 1 calls allreduce with another count after 3 good calls
 *   test_trace kill DIR       the last rank SIGKILLs itself after 3 good calls
 */
#define _POSIX_C_SOURCE 200809L
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "orbit.h"

#define DELAY_MS 40
#define FAIL(...)                                                                                          \
    do {                                                                                                   \
        fprintf(stderr, "test_trace: rank %d: ", rank);                                                    \
        fprintf(stderr, __VA_ARGS__);                                                                      \
        fprintf(stderr, "\n");                                                                             \
        exit(1);                                                                                           \
    } while (0)
#define CHECK(call)                                                                                        \
    do {                                                                                                   \
        orb_status_t st_ = (call);                                                                         \
        if (st_ != ORB_OK)                                                                                 \
            FAIL("%s: %s: %s", #call, orb_status_name(st_), orb_comm_last_error(comm));                  \
    } while (0)

static int rank, nranks;

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* An all-reduce whose result this rank checks against the sum it computes itself. */
static void allreduce_checked(orb_comm_t comm, size_t count)
{
    float *b = malloc(count * sizeof *b);
    for (size_t i = 0; i < count; i++)
        b[i] = (float)(rank + 1) + (float)(i % 7);
    CHECK(orb_allreduce(b, b, count, ORB_FLOAT32, ORB_SUM, comm, NULL));
    const float want_base = (float)(nranks * (nranks + 1) / 2);
    for (size_t i = 0; i < count; i++)
        if (b[i] != want_base + (float)nranks * (float)(i % 7))
            FAIL("allreduce of %zu: element %zu is %g, expected %g", count, i, b[i],
                 want_base + (float)nranks * (float)(i % 7));
    free(b);
}

static void broadcast_checked(orb_comm_t comm, size_t bytes, int root)
{
    unsigned char *b = calloc(bytes, 1);
    for (size_t i = 0; i < bytes; i++)
        b[i] = rank == root ? (unsigned char)(i * 31 + 7) : 0;
    CHECK(orb_broadcast(b, b, bytes, ORB_UINT8, root, comm, NULL));
    for (size_t i = 0; i < bytes; i++)
        if (b[i] != (unsigned char)(i * 31 + 7))
            FAIL("broadcast of %zu bytes from %d: byte %zu is %u", bytes, root, i, b[i]);
    free(b);
}

static void allgather_checked(orb_comm_t comm, size_t count)
{
    int *in = malloc(count * sizeof *in), *out = malloc(count * (size_t)nranks * sizeof *out);
    for (size_t i = 0; i < count; i++)
        in[i] = rank * 1000 + (int)i;
    CHECK(orb_allgather(in, out, count, ORB_INT32, comm, NULL));
    for (int r = 0; r < nranks; r++)
        for (size_t i = 0; i < count; i++)
            if (out[(size_t)r * count + i] != r * 1000 + (int)i)
                FAIL("allgather: block %d element %zu is %d", r, i, out[(size_t)r * count + i]);
    free(in);
    free(out);
}

/* The sequence check_trace.py expects: allreduce 1024 floats x5 (rank 2 late before #2 and
 * #4), broadcast 4096 bytes from root 1 x3 (late before #1), allgather 256 int32 x2. */
static void known(orb_comm_t comm)
{
    for (int i = 1; i <= 5; i++) {
        if (rank == 2 && (i == 2 || i == 4))
            sleep_ms(DELAY_MS);
        allreduce_checked(comm, 1024);
    }
    for (int i = 1; i <= 3; i++) {
        if (rank == 2 && i == 1)
            sleep_ms(DELAY_MS);
        broadcast_checked(comm, 4096, 1);
    }
    for (int i = 0; i < 2; i++)
        allgather_checked(comm, 256);
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: test_trace known|startstop|many|overflow|mismatch|kill DIR\n");
        return 2;
    }
    const char *mode = argv[1], *dir = argv[2];
    orb_comm_t comm = NULL;
    orb_status_t st = orb_comm_init_env(&comm);
    if (st != ORB_OK) {
        fprintf(stderr, "test_trace: init: %s: %s\n", orb_status_name(st), orb_comm_last_error(NULL));
        return 1;
    }
    orb_comm_rank(comm, &rank);
    orb_comm_size(comm, &nranks);

    if (!strcmp(mode, "known")) {
        known(comm);
    } else if (!strcmp(mode, "startstop")) {
        for (int i = 0; i < 3; i++)
            allreduce_checked(comm, 64); /* not traced */
        CHECK(orb_comm_trace_start(comm, dir, 1));
        for (int i = 0; i < 4; i++)
            broadcast_checked(comm, 100000, 0); /* traced with steps: several pieces */
        CHECK(orb_comm_trace_stop(comm));
        /* stopping twice, starting twice: refused with a message, the comm still works */
        st = orb_comm_trace_stop(comm);
        if (st != ORB_ERR_INVALID_ARG || !strstr(orb_comm_last_error(comm), "not traced"))
            FAIL("a second orb_comm_trace_stop returned %s (%s)", orb_status_name(st), orb_comm_last_error(comm));
        for (int i = 0; i < 2; i++)
            allreduce_checked(comm, 64); /* not traced */
    } else if (!strcmp(mode, "many")) {
        orb_comm_t dup[3];
        for (int d = 0; d < 3; d++)
            CHECK(orb_comm_dup(comm, &dup[d]));
        for (int round = 0; round < 4; round++)
            for (int d = 0; d < 3; d++) {
                allreduce_checked(dup[d], (size_t)(16 << d));
                if (d == 1)
                    broadcast_checked(comm, 64, round % nranks);
            }
        for (int d = 0; d < 3; d++)
            CHECK(orb_comm_destroy(dup[d]));
    } else if (!strcmp(mode, "overflow")) {
        for (int i = 0; i < 100; i++)
            allreduce_checked(comm, 8);
    } else if (!strcmp(mode, "mismatch") || !strcmp(mode, "kill")) {
        for (int i = 0; i < 3; i++)
            allreduce_checked(comm, 32);
        if (!strcmp(mode, "kill") && rank == nranks - 1)
            raise(SIGKILL);
        float b[200] = {0};
        size_t count = !strcmp(mode, "mismatch") && rank == 1 ? 200 : 100;
        st = orb_allreduce(b, b, count, ORB_FLOAT32, ORB_SUM, comm, NULL);
        orb_status_t want = !strcmp(mode, "kill") ? ORB_ERR_PEER_LOST : ORB_ERR_MISMATCH;
        if (st != want)
            FAIL("the faulty allreduce returned %s, expected %s (%s)", orb_status_name(st), orb_status_name(want),
                 orb_comm_last_error(comm));
        orb_comm_destroy(comm);
        return 0;
    } else {
        fprintf(stderr, "test_trace: unknown mode %s\n", mode);
        return 2;
    }
    CHECK(orb_comm_destroy(comm));
    return 0;
}
