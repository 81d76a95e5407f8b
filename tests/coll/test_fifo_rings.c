/* A shared-memory FIFO's two rings (transport/shm/shm.h): pieces that fit a small slot go
 * through the small ring, larger ones through the large slots, and the receiver must take them
 * in the order they were sent, from whichever ring. Real processes under orbitrun, messages
 * whose sizes cross the boundary both ways (1023, 1024, 1025 bytes; a slot and 100 bytes, which
 * goes as a large piece and then a small one), the receiver 200 ms late so that the sender
 * runs ahead as far as the rings hold, and both rings lapped many times over.
 *   1. send/recv: rank 0 sends MSGS messages to the last rank, which receives them late;
 *   2. broadcast from rank 0 of the same sizes, every other rank late.
 * Every byte is checked against a value of the message's number and the byte's place, computed
 * here; each rank exits 1 on its own failures.
 *   orbitrun -n 2|3 test_fifo_rings   (with ORBIT_SHM_SMALL_SLOTS / ORBIT_SHM_SLOTS to vary)
 *   orbitrun -n 2 test_fifo_rings mismatch: rank 0 sets 64 small slots, the others 32; every
 *   rank's init must fail with ORB_ERR_MISMATCH naming the setting and both numbers. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "orbit.h"

#define MSGS 300
#define BIG (256 * 1024 + 100) /* a default slot and 100 bytes: a large piece, then a small one */

static const size_t sizes[] = {1, 8, 64, 1023, 1024, 1025, 960, 4096, BIG, 100, 262144, 3};
#define NSIZES (sizeof sizes / sizeof sizes[0])

static int rank;
static long failed;

static uint8_t value(int msg, size_t i) { return (uint8_t)(((uint32_t)msg * 2654435761u + (uint32_t)i * 40503u) >> 13); }

static size_t size_of(int msg) { return sizes[(size_t)msg % NSIZES]; }

static void fill(uint8_t *buf, int msg)
{
    for (size_t i = 0; i < size_of(msg); i++)
        buf[i] = value(msg, i);
}

static void expect(const uint8_t *buf, int msg, const char *what)
{
    const size_t n = size_of(msg);
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < n; i++)
        if (buf[i] != value(msg, i) && bad++ == 0)
            first = i;
    if (bad) {
        fprintf(stderr, "rank %d: %s: message %d of %zu bytes: %zu wrong (first at %zu: %u, expected %u)\n", rank, what,
                msg, n, bad, first, buf[first], value(msg, first));
        failed++;
    }
}

static void must(orb_status_t st, orb_comm_t comm, const char *what, int msg)
{
    if (st != ORB_OK) {
        fprintf(stderr, "rank %d: %s (message %d) failed: %s: %s\n", rank, what, msg, orb_status_name(st),
                orb_comm_last_error(comm));
        exit(1);
    }
}

static int mismatch(void)
{
    const char *r = getenv("RANK"); /* (orbitrun's) */
    rank = r ? atoi(r) : -1;
    if (rank < 0) {
        fprintf(stderr, "run under orbitrun (no RANK)\n");
        return 2;
    }
    setenv("ORBIT_SHM_SMALL_SLOTS", rank == 0 ? "64" : "32", 1);
    orb_comm_t comm;
    orb_status_t st = orb_comm_init_env(&comm);
    const char *msg = orb_comm_last_error(NULL);
    if (st == ORB_OK) {
        fprintf(stderr, "rank %d: init with another rank's ORBIT_SHM_SMALL_SLOTS succeeded\n", rank);
        orb_comm_destroy(comm);
        return 1;
    }
    /* rank 0 names the first other rank's 32 and its own 64; every other rank rank 0's and its own */
    /* (from the cards at once, on every rank: "was started with", not a peer's segment at attach) */
    const char *theirs = rank == 0 ? "and 32 small slots, rank 0 with" : "rank 0 was started with";
    const char *mine = rank == 0 ? "and 64:" : "and 32:";
    if (st != ORB_ERR_MISMATCH || !strstr(msg, "ORBIT_SHM_SMALL_SLOTS") || !strstr(msg, theirs) || !strstr(msg, mine) ||
        (rank != 0 && !strstr(msg, "and 64 small slots"))) {
        fprintf(stderr, "rank %d: init failed with %s: \"%s\"; expected ORB_ERR_MISMATCH naming "
                        "ORBIT_SHM_SMALL_SLOTS, 64 and 32\n", rank, orb_status_name(st), msg);
        return 1;
    }
    printf("rank %d: init refused: %s\n", rank, msg);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "mismatch"))
        return mismatch();
    orb_comm_t comm;
    if (orb_comm_init_env(&comm) != ORB_OK) {
        fprintf(stderr, "init failed: %s\n", orb_comm_last_error(NULL));
        return 1;
    }
    int n;
    orb_comm_rank(comm, &rank);
    orb_comm_size(comm, &n);
    if (n < 2) {
        fprintf(stderr, "run with 2 or more ranks (orbitrun -n 2)\n");
        return 2;
    }
    uint8_t *buf = malloc(BIG);
    if (!buf)
        return 1;

    /* 1. send/recv, the receiver late */
    const int last = n - 1;
    for (int m = 0; m < MSGS && rank == 0; m++) {
        fill(buf, m);
        must(orb_send(buf, size_of(m), ORB_UINT8, last, comm, NULL), comm, "orb_send", m);
    }
    if (rank == last) {
        usleep(200000);
        for (int m = 0; m < MSGS; m++) {
            memset(buf, 0xee, BIG);
            must(orb_recv(buf, size_of(m), ORB_UINT8, 0, comm, NULL), comm, "orb_recv", m);
            expect(buf, m, "send/recv");
        }
    }
    must(orb_barrier(comm), comm, "orb_barrier", 0);
    printf("rank %d: send/recv of %d messages: %s\n", rank, MSGS, failed ? "FAILED" : "ok");

    /* 2. broadcasts, every rank but the root late */
    const long before = failed;
    if (rank != 0)
        usleep(200000);
    for (int m = 0; m < MSGS; m++) {
        if (rank == 0)
            fill(buf, m);
        else
            memset(buf, 0xee, BIG);
        must(orb_broadcast(buf, buf, size_of(m), ORB_UINT8, 0, comm, NULL), comm, "orb_broadcast", m);
        expect(buf, m, "broadcast");
    }
    must(orb_barrier(comm), comm, "orb_barrier", 1);
    printf("rank %d: %d broadcasts: %s\n", rank, MSGS, failed > before ? "FAILED" : "ok");

    orb_comm_destroy(comm);
    free(buf);
    printf("rank %d: %s\n", rank, failed ? "FAILED" : "all passed");
    return failed ? 1 : 0;
}
