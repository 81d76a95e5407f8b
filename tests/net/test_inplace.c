/* In-place calls over TCP whose pieces leave straight from the caller's buffer
 * (ORBIT_TCP_DIRECT_BYTES): 2 ranks, each a host of its own (ORBIT_HOSTID), so TCP joins them.
 *
 * In an in-place all-to-all a rank receives its partner's block where it has just posted its
 * own for that partner: when the partner came first, its pieces are waiting, the write comes
 * at once, and the executor must take its own unsent pieces back into their slots before it
 * writes (exec_cpu.c, settle_under). The ranks take turns being late (files in /dev/shm; the
 * late one also waits 50 ms so the other's first pieces are in, which only makes that case
 * likely: the verdict does not depend on it). The in-place all-reduce (ring or exchange) never
 * writes where a piece waits, and must come out exact all the same.
 *
 * Every element depends on the rank, the position and the round; each rank checks its own
 * output against values it computes itself and exits 1 on its own failures. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/take_turns.h"
#include "orbit.h"

static int rank, nranks;
static int passed, failed;

static void check(int ok, const char *what, const char *detail)
{
    if (ok)
        passed++;
    else {
        failed++;
        fprintf(stderr, "FAIL rank %d: %s: %s\n", rank, what, detail);
    }
}

/* What rank r holds at position i before round k: below 2^29, so a sum of two stays exact. */
static int32_t value(int r, size_t i, int k) { return (int32_t)(((i * 2654435761u) ^ ((size_t)r << 27) ^ ((size_t)k << 20)) & 0x1fffffff); }

/* The rank that comes second takes its turn only after the first has gone in. */
static int take_turn(int late, const char *what)
{
    if (rank != late) {
        turn_mark("inplace", what);
        return 1;
    }
    if (!turn_wait("inplace", what, rank))
        return 0;
    usleep(50000);
    return 1;
}

int main(void)
{
    const char *r = getenv("RANK");
    char host[32];
    snprintf(host, sizeof host, "inplace-h%s", r ? r : "?");
    setenv("ORBIT_HOSTID", host, 1); /* each rank a host of its own: TCP between them */
    setenv("ORBIT_TCP_DIRECT_BYTES", "65536", 0);
    orb_comm_t c;
    orb_status_t st = orb_comm_init_env(&c);
    if (st != ORB_OK) {
        fprintf(stderr, "init failed: %s: %s\n", orb_status_name(st), orb_comm_last_error(NULL));
        return 1;
    }
    orb_comm_rank(c, &rank);
    orb_comm_size(c, &nranks);
    if (nranks != 2) {
        fprintf(stderr, "FAIL rank %d: needs 2 ranks, has %d\n", rank, nranks);
        return 1;
    }
    /* a block of 4 MiB and one that ends in a piece of its own; a 16 MiB all-reduce */
    const size_t blocks[] = {(size_t)1 << 20, ((size_t)1 << 20) + 3};
    const size_t ar_count = (size_t)4 << 20;
    const size_t elems = ar_count > 2 * blocks[1] ? ar_count : 2 * blocks[1];
    int32_t *buf = malloc(elems * sizeof *buf);
    if (!buf) {
        fprintf(stderr, "FAIL rank %d: no memory\n", rank);
        return 1;
    }
    char what[128], detail[512];
    for (int k = 0; k < 4; k++) {
        const int late = k % 2;
        for (int b = 0; b < 2; b++) {
            const size_t cnt = blocks[b];
            for (size_t i = 0; i < 2 * cnt; i++)
                buf[i] = value(rank, i, k);
            snprintf(what, sizeof what, "a2a-%d-%d", k, b);
            if (!take_turn(late, what))
                return 1;
            st = orb_alltoall(buf, buf, cnt, ORB_INT32, c, NULL);
            /* block j now holds what rank j had in its block for this rank */
            size_t bad = 0, first = 0;
            for (int j = 0; j < 2; j++)
                for (size_t i = 0; i < cnt; i++)
                    if (buf[(size_t)j * cnt + i] != value(j, (size_t)rank * cnt + i, k) && bad++ == 0)
                        first = (size_t)j * cnt + i;
            snprintf(detail, sizeof detail, "%s (%s); %zu of %zu elements wrong, the first at %zu: %d, want %d",
                     orb_status_name(st), st == ORB_OK ? "" : orb_comm_last_error(c), bad, 2 * cnt, first,
                     bad ? buf[first] : 0, bad ? value((int)(first / cnt), (size_t)rank * cnt + first % cnt, k) : 0);
            snprintf(what, sizeof what, "in-place alltoall, block %zu, round %d (rank %d late)", cnt, k, late);
            check(st == ORB_OK && bad == 0, what, detail);
        }
        for (size_t i = 0; i < ar_count; i++)
            buf[i] = value(rank, i, k);
        snprintf(what, sizeof what, "ar-%d", k);
        if (!take_turn(late, what))
            return 1;
        st = orb_allreduce(buf, buf, ar_count, ORB_INT32, ORB_SUM, c, NULL);
        size_t bad = 0, first = 0;
        for (size_t i = 0; i < ar_count; i++)
            if (buf[i] != value(0, i, k) + value(1, i, k) && bad++ == 0)
                first = i;
        snprintf(detail, sizeof detail, "%s (%s); %zu of %zu elements wrong, the first at %zu", orb_status_name(st),
                 st == ORB_OK ? "" : orb_comm_last_error(c), bad, ar_count, first);
        snprintf(what, sizeof what, "in-place allreduce, round %d (rank %d late)", k, late);
        check(st == ORB_OK && bad == 0, what, detail);
    }
    free(buf);
    orb_comm_destroy(c);
    printf("rank %d: %d passed, %d failed\n", rank, passed, failed);
    if (passed + failed != 12) {
        fprintf(stderr, "FAIL rank %d: %d checks ran, 12 expected\n", rank, passed + failed);
        return 1;
    }
    return failed ? 1 : 0;
}
