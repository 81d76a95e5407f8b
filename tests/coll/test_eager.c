/* The eager path (collectives/exec.h, orb_exec_eager): sends and receives of at most
 * ORBIT_EAGER_BYTES go as one piece straight through the transport, and whatever that path
 * cannot finish (a full FIFO, a peer that is late, a piece it does not expect) goes on through
 * the general executor. Real processes under orbitrun; every byte is checked against a value of
 * the round, the sender and the byte's place, computed here; each rank exits 1 on its own
 * failures.
 *   orbitrun -n N test_eager          1. ring shifts of sizes across the eager limit (1 B-4 KiB,
 *                                        uint8, int32, float64), grouped and not, two messages
 *                                        to a peer in one group, a receiver 30 ms late now and
 *                                        then;
 *                                     2. groups of eager sends beside an all-reduce;
 *                                     3. groups of 32 calls with eager ones where the group
 *                                        stops borrowing the plan cache's plans;
 *                                     4. 150 sends from rank 0 to rank 1, alone or each in a
 *                                        group, before it receives any (the FIFO's small ring
 *                                        holds 64);
 *   ... test_eager half               the same with ORBIT_EAGER_BYTES=0 on odd ranks: the eager
 *                                     piece is the one the plan sends, so the two paths meet;
 *   ... test_eager tcp                the same with rank r on pretend host r % 2 (ORBIT_HOSTID):
 *                                     neighbours over TCP;
 *   ... test_eager mismatch           pairs (0, 1), (2, 3): a grouped send of tag 5 against a
 *                                     grouped recv of tag 6, then of 4 against 3 elements,
 *                                     then tags 5 and 6 without groups: the receiver fails with
 *                                     ORB_ERR_MISMATCH naming both, the sender's next call too;
 *                                     with 4 ranks whichever pair finds it first tells every
 *                                     rank, and the message a rank returns must still name
 *                                     them, not only that the communicator is unusable. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "orbit.h"

#define ROUNDS 300
#define BURST 150
#define MAXB 4096

static const size_t sizes[] = {1, 8, 7, 64, 63, 65, 512, 1016, 1023, 1024, 1025, 2048, 4096, 100};
#define NSIZES (sizeof sizes / sizeof sizes[0])
#define NSMALL 10 /* the first, up to 1 KiB: a small slot's each */
static const orb_dtype_t dtypes[] = {ORB_UINT8, ORB_INT32, ORB_FLOAT64};
static const size_t esz[] = {1, 4, 8};

static int rank, nranks;
static long failed;

static uint8_t value(int round, int sender, int which, size_t i)
{
    return (uint8_t)(((uint32_t)round * 2654435761u + (uint32_t)sender * 97u + (uint32_t)which * 7919u +
                      (uint32_t)i * 40503u) >> 11);
}

static void fill(uint8_t *b, size_t n, int round, int sender, int which)
{
    for (size_t i = 0; i < n; i++)
        b[i] = value(round, sender, which, i);
}

static void expect(const uint8_t *b, size_t n, int round, int sender, int which, const char *what)
{
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < n; i++)
        if (b[i] != value(round, sender, which, i) && bad++ == 0)
            first = i;
    if (n < MAXB && b[n] != 0xee && bad++ == 0) /* nothing past the message */
        first = n;
    if (bad) {
        fprintf(stderr, "rank %d: %s: round %d, %zu bytes from rank %d: %zu wrong (first at %zu)\n", rank, what, round,
                n, sender, bad, first);
        failed++;
    }
}

static void must(orb_status_t st, orb_comm_t comm, const char *what, int round)
{
    if (st != ORB_OK) {
        fprintf(stderr, "rank %d: %s (round %d) failed: %s: %s\n", rank, what, round, orb_status_name(st),
                orb_comm_last_error(comm));
        exit(1);
    }
}

/* 1: ring shifts; every seventh round a second, smaller message to the same peer in the group */
static void ring_shifts(orb_comm_t comm, uint8_t *s1, uint8_t *s2, uint8_t *r1, uint8_t *r2)
{
    const int next = (rank + 1) % nranks, prev = (rank + nranks - 1) % nranks;
    for (int round = 0; round < ROUNDS; round++) {
        const size_t bytes = sizes[(size_t)round % NSIZES], k = (size_t)round % 3;
        const size_t count = bytes / esz[k] ? bytes / esz[k] : 1, n = count * esz[k];
        const int two = round % 7 == 3;
        /* (every other time of the same size and type as the first: the same signature, so only
         * the order tells the two apart) */
        const int same = round % 14 == 3;
        const size_t n2 = same ? n : sizes[(size_t)(round / 7) % NSIZES] / 2 + 1;
        fill(s1, n, round, rank, 0);
        fill(s2, n2, round, rank, 1);
        memset(r1, 0xee, MAXB + 1);
        memset(r2, 0xee, MAXB + 1);
        if (round % 50 == 25 && rank == (round / 50) % nranks)
            usleep(30000); /* past the eager path's spin and yield: the general one waits */
        /* every fifth round without a group: each send finds room in its FIFO and returns */
        const int grouped = round % 5 != 4;
        if (grouped)
            must(orb_group_start(), comm, "orb_group_start", round);
        must(orb_send(s1, count, dtypes[k], next, comm, NULL), comm, "orb_send", round);
        if (two)
            must(orb_send(s2, same ? count : n2, same ? dtypes[k] : ORB_UINT8, next, comm, NULL), comm,
                 "orb_send (second)", round);
        must(orb_recv(r1, count, dtypes[k], prev, comm, NULL), comm, "orb_recv", round);
        if (two)
            must(orb_recv(r2, same ? count : n2, same ? dtypes[k] : ORB_UINT8, prev, comm, NULL), comm,
                 "orb_recv (second)", round);
        if (grouped)
            must(orb_group_end(), comm, "orb_group_end", round);
        expect(r1, n, round, prev, 0, "ring shift");
        if (two)
            expect(r2, n2, round, prev, 1, "ring shift, second message");
    }
}

/* 2: eager sends and receives in one group with an all-reduce (planned with it) */
static void beside_allreduce(orb_comm_t comm, uint8_t *s1, uint8_t *r1)
{
    const int next = (rank + 1) % nranks, prev = (rank + nranks - 1) % nranks;
    for (int round = 0; round < 40; round++) {
        const size_t n = sizes[(size_t)round % NSIZES];
        int32_t in[5], out[5];
        for (int j = 0; j < 5; j++)
            in[j] = rank * 1000 + round * 10 + j;
        fill(s1, n, round, rank, 2);
        memset(r1, 0xee, MAXB + 1);
        /* (a group uses each connection in issue order: the all-reduce first or last alike on
         * every rank, so that with two ranks both ends of a FIFO agree what comes first) */
        must(orb_group_start(), comm, "orb_group_start", round);
        if (round % 2)
            must(orb_allreduce(in, out, 5, ORB_INT32, ORB_SUM, comm, NULL), comm, "orb_allreduce", round);
        must(orb_recv(r1, n, ORB_UINT8, prev, comm, NULL), comm, "orb_recv", round);
        must(orb_send(s1, n, ORB_UINT8, next, comm, NULL), comm, "orb_send", round);
        if (round % 2 == 0)
            must(orb_allreduce(in, out, 5, ORB_INT32, ORB_SUM, comm, NULL), comm, "orb_allreduce", round);
        must(orb_group_end(), comm, "orb_group_end", round);
        expect(r1, n, round, prev, 2, "beside an all-reduce");
        for (int j = 0; j < 5; j++) {
            const int32_t want = 1000 * (nranks * (nranks - 1) / 2) + nranks * (round * 10 + j);
            if (out[j] != want) {
                fprintf(stderr, "rank %d: all-reduce round %d [%d]: %d, expected %d\n", rank, round, j, out[j], want);
                failed++;
            }
        }
    }
}

/* 4: BURST sends (every other one a group of its own) of small pieces (larger ones would fill the FIFO's 8 large slots
 * first) before the receiver takes any: the small ring fills, the sends
 * after it wait in the general executor */
static void burst(orb_comm_t comm, uint8_t *s1, uint8_t *r1)
{
    if (rank == 0) {
        for (int m = 0; m < BURST; m++) {
            const size_t n = sizes[(size_t)m % NSMALL];
            fill(s1, n, m, rank, 3);
            if (m % 2)
                must(orb_group_start(), comm, "orb_group_start", m);
            must(orb_send(s1, n, ORB_UINT8, 1, comm, NULL), comm, "orb_send", m);
            if (m % 2)
                must(orb_group_end(), comm, "orb_group_end", m);
        }
    } else if (rank == 1) {
        usleep(100000);
        for (int m = 0; m < BURST; m++) {
            const size_t n = sizes[(size_t)m % NSMALL];
            memset(r1, 0xee, MAXB + 1);
            if (m % 3)
                must(orb_group_start(), comm, "orb_group_start", m);
            must(orb_recv(r1, n, ORB_UINT8, 0, comm, NULL), comm, "orb_recv", m);
            if (m % 3)
                must(orb_group_end(), comm, "orb_group_end", m);
            expect(r1, n, m, 0, 3, "burst");
        }
    }
}

/* 3: a group of 32 calls with eager ones at places 7 and 8, where the group stops borrowing
 * the plan cache's plans (coll_front.c, GROUP_BORROW: 7 with a cache of 16): the all-reduces
 * of counts 1-7 before them borrowed theirs, and the 23 shapes after them make 23 lookups,
 * enough to evict all seven, which must have been copied first */
#define BIG_GROUP 32
static void borrowed_plans(orb_comm_t comm, uint8_t *s1, uint8_t *r1)
{
    const int next = (rank + 1) % nranks, prev = (rank + nranks - 1) % nranks;
    static int32_t in[BIG_GROUP][BIG_GROUP], out[BIG_GROUP][BIG_GROUP];
    for (int round = 0; round < 3; round++) {
        fill(s1, 8, round, rank, 4);
        memset(r1, 0xee, MAXB + 1);
        must(orb_group_start(), comm, "orb_group_start", round);
        for (int c = 0; c < BIG_GROUP; c++) {
            if (c == 7)
                must(orb_send(s1, 8, ORB_UINT8, next, comm, NULL), comm, "orb_send", round);
            else if (c == 8)
                must(orb_recv(r1, 8, ORB_UINT8, prev, comm, NULL), comm, "orb_recv", round);
            else {
                for (int j = 0; j < BIG_GROUP; j++) {
                    in[c][j] = rank * 100000 + round * 1000 + c * 30 + j;
                    out[c][j] = -1; /* past c: untouched (a plan of another count would write there) */
                }
                must(orb_allreduce(in[c], out[c], (size_t)c + 1, ORB_INT32, ORB_SUM, comm, NULL), comm, "orb_allreduce",
                     round);
            }
        }
        must(orb_group_end(), comm, "orb_group_end", round);
        expect(r1, 8, round, prev, 4, "in a large group");
        for (int c = 0; c < BIG_GROUP; c++)
            for (int j = 0; c != 7 && c != 8 && j < BIG_GROUP; j++) {
                const int32_t want =
                    j > c ? -1 : 100000 * (nranks * (nranks - 1) / 2) + nranks * (round * 1000 + c * 30 + j);
                if (out[c][j] != want) {
                    fprintf(stderr, "rank %d: large group round %d, all-reduce of %d [%d]: %d, expected %d\n", rank,
                            round, c + 1, j, out[c][j], want);
                    failed++;
                    break;
                }
            }
    }
}

static int mismatch(orb_comm_t comm)
{
    float f[4] = {1, 2, 3, 4};
    int bad = 0;
    orb_comm_t c3[3] = {comm, NULL, NULL};
    for (int i = 1; i < 3; i++)
        if (orb_comm_dup(comm, &c3[i]) != ORB_OK) { /* a mismatch ends the communicator it ran on */
            fprintf(stderr, "rank %d: orb_comm_dup failed: %s\n", rank, orb_comm_last_error(comm));
            return 1;
        }
    for (int part = 0; part < 3; part++) {
        /* part 0: tags 5 and 6; part 1: 4 elements against 3; part 2: tags 5 and 6, no group */
        orb_comm_t c = c3[part];
        const int grouped = part < 2;
        const int partner = rank ^ 1; /* pairs (0, 1), (2, 3): even ranks send */
        orb_status_t st = grouped ? orb_group_start() : ORB_OK;
        if (rank % 2 == 0) {
            st = orb_send_tagged(f, 4, ORB_FLOAT32, partner, 5, c, NULL);
            if (grouped)
                st = orb_group_end();
            if (st == ORB_OK) /* the send went; the receiver's verdict comes as its posted error */
                st = orb_barrier(c);
        } else {
            st = orb_recv_tagged(f, part == 1 ? 3 : 4, ORB_FLOAT32, partner, part == 1 ? 5 : 6, c, NULL);
            if (grouped)
                st = orb_group_end();
        }
        const char *msg = orb_comm_last_error(c);
        const char *want1 = part == 1 ? "count 4" : "tag 5", *want2 = part == 1 ? "count 3" : "tag 6";
        if (st != ORB_ERR_MISMATCH || !strstr(msg, want1) || !strstr(msg, want2)) {
            fprintf(stderr, "rank %d: part %d returned %s: \"%s\"; expected ORB_ERR_MISMATCH naming \"%s\" and \"%s\"\n",
                    rank, part, orb_status_name(st), msg, want1, want2);
            bad = 1;
        } else {
            printf("rank %d: part %d: %s\n", rank, part, msg);
        }
    }
    orb_comm_destroy(c3[1]);
    orb_comm_destroy(c3[2]);
    return bad;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    const char *r = getenv("RANK"); /* (orbitrun's) */
    if (!r) {
        fprintf(stderr, "run under orbitrun (no RANK)\n");
        return 2;
    }
    if (!strcmp(mode, "half") && atoi(r) % 2)
        setenv("ORBIT_EAGER_BYTES", "0", 1);
    if (!strcmp(mode, "tcp")) /* rank r on pretend host r % 2: ring neighbours talk over TCP */
        setenv("ORBIT_HOSTID", atoi(r) % 2 ? "eager-h1" : "eager-h0", 1);
    orb_comm_t comm;
    if (orb_comm_init_env(&comm) != ORB_OK) {
        fprintf(stderr, "init failed: %s\n", orb_comm_last_error(NULL));
        return 1;
    }
    orb_comm_rank(comm, &rank);
    orb_comm_size(comm, &nranks);
    if (nranks < 2) {
        fprintf(stderr, "run with 2 or more ranks (orbitrun -n 2)\n");
        return 2;
    }
    if (!strcmp(mode, "mismatch")) {
        const int bad = nranks % 2 == 0 ? mismatch(comm) : 2;
        orb_comm_destroy(comm);
        return bad;
    }
    uint8_t *b = malloc(4 * (MAXB + 1));
    if (!b)
        return 1;
    uint8_t *s1 = b, *s2 = b + MAXB + 1, *r1 = b + 2 * (MAXB + 1), *r2 = b + 3 * (MAXB + 1);
    ring_shifts(comm, s1, s2, r1, r2);
    printf("rank %d: %d ring shifts: %s\n", rank, ROUNDS, failed ? "FAILED" : "ok");
    long before = failed;
    beside_allreduce(comm, s1, r1);
    printf("rank %d: beside an all-reduce: %s\n", rank, failed > before ? "FAILED" : "ok");
    before = failed;
    borrowed_plans(comm, s1, r1);
    printf("rank %d: in a group of %d calls: %s\n", rank, BIG_GROUP, failed > before ? "FAILED" : "ok");
    before = failed;
    burst(comm, s1, r1);
    must(orb_barrier(comm), comm, "orb_barrier", 0);
    printf("rank %d: a burst of %d sends: %s\n", rank, BURST, failed > before ? "FAILED" : "ok");
    orb_comm_destroy(comm);
    free(b);
    printf("rank %d: %s\n", rank, failed ? "FAILED" : "all passed");
    return failed ? 1 : 0;
}
