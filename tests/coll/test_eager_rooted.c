/* The eager path of two ranks' rooted calls (collectives/exec.h, orb_exec_eager): a broadcast,
 * scatter, gather or reduce of at most ORBIT_EAGER_BYTES a block, alone, goes as the one
 * vouching piece the plan would send, straight through shared memory; what the path cannot
 * finish (a full FIFO, a peer that is late) goes on through the general executor. Real
 * processes under orbitrun; every output element is checked against a value computed here
 * from the round, the rank and the element's place, bytes past an output and a non-root's
 * unused buffer must stay as they were, and an input must not change; each rank exits 1 on
 * its own failures.
 *   orbitrun -n 2 test_eager_rooted        1. the four rooted calls, both roots, 1 B-4 KiB
 *                                             blocks (across the path's limit) of uint8,
 *                                             int32, float32 and float64, sum, max and avg,
 *                                             in place and not; now and then a rank 5 ms late
 *                                             (past the path's spin and yield) or 30 ms (past
 *                                             the wait after which a receiver sends its
 *                                             handshake LATE, which the root meets later);
 *                                          2. 150 broadcasts from rank 0 before rank 1 takes
 *                                             any (the FIFO's small ring holds 64), then 150
 *                                             gathers to rank 1 the same way;
 *                                          3. a broadcast and a gather in one group (no
 *                                             call of a group vouches: none goes eager);
 *   ... test_eager_rooted half             the same with ORBIT_EAGER_BYTES=0 on rank 1: the
 *                                          eager piece is the one the plan sends, so the two
 *                                          paths meet. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "orbit.h"

#define ROUNDS 480
#define BURST 150
#define MAXB 4096 /* bytes of a block, at most */
#define GUARD 0xee

static const size_t sizes[] = {1, 8, 7, 64, 63, 520, 1016, 1023, 1024, 1025, 2048, 4096, 100};
#define NSIZES (sizeof sizes / sizeof sizes[0])
static const orb_dtype_t dtypes[] = {ORB_UINT8, ORB_INT32, ORB_FLOAT32, ORB_FLOAT64};
static const size_t esz[] = {1, 4, 4, 8};
static const orb_op_t ops[] = {ORB_SUM, ORB_MAX, ORB_AVG};
static const char *op_names[] = {"sum", "max", "avg"};
enum { BCAST, SCATTER, GATHER, REDUCE };
static const char *coll_names[] = {"broadcast", "scatter", "gather", "reduce"};

static int rank;
static long failed;

/* Element i of rank r's input block b in a round: a whole number below 100, exact in every
 * dtype, so that sums and averages are exact too */
static int value(int round, int r, int b, size_t i)
{
    return (int)(((uint32_t)round * 37u + (uint32_t)r * 53u + (uint32_t)b * 11u + (uint32_t)i * 7u) % 97u);
}

static void put(void *buf, int k, size_t i, double v)
{
    switch (k) {
    case 0: ((uint8_t *)buf)[i] = (uint8_t)v; break;
    case 1: ((int32_t *)buf)[i] = (int32_t)v; break;
    case 2: ((float *)buf)[i] = (float)v; break;
    default: ((double *)buf)[i] = v; break;
    }
}

static double get(const void *buf, int k, size_t i)
{
    switch (k) {
    case 0: return ((const uint8_t *)buf)[i];
    case 1: return ((const int32_t *)buf)[i];
    case 2: return ((const float *)buf)[i];
    default: return ((const double *)buf)[i];
    }
}

/* The reduce's result from the two inputs: avg truncates in integers (values are >= 0) */
static double reduced(int op, int k, int a, int b)
{
    if (op == 1)
        return a > b ? a : b;
    if (op == 2)
        return k < 2 ? (double)((a + b) / 2) : (a + b) / 2.0;
    return a + b;
}

static void fill_blocks(void *buf, int k, size_t count, int nblocks, int round, int r)
{
    for (int b = 0; b < nblocks; b++)
        for (size_t i = 0; i < count; i++)
            put((char *)buf + (size_t)b * count * esz[k], k, i, value(round, r, b, i));
}

static void bad(const char *what, int round, size_t i, double got, double want)
{
    fprintf(stderr, "rank %d: round %d: %s: element %zu is %g, expected %g\n", rank, round, what, i, got, want);
    failed++;
}

/* bytes [from, to) of buf still GUARD */
static void untouched(const uint8_t *buf, size_t from, size_t to, int round, const char *what)
{
    for (size_t i = from; i < to; i++)
        if (buf[i] != GUARD) {
            fprintf(stderr, "rank %d: round %d: %s: byte %zu written (%u)\n", rank, round, what, i, buf[i]);
            failed++;
            return;
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

/* One call of coll with root, count elements of dtype k (op for reduce), in place or not, on
 * buffers of 2 blocks each (+ a guard block), then every check of this rank's part */
static void one(orb_comm_t comm, int round, int coll, int root, size_t count, int k, int op, int inplace,
                uint8_t *in, uint8_t *out)
{
    const size_t bb = count * esz[k], room = 3 * (size_t)MAXB;
    const int me_root = rank == root;
    char what[128];
    snprintf(what, sizeof what, "%s root %d, count %zu of %zu-byte elements%s%s%s", coll_names[coll], root, count,
             esz[k], coll == REDUCE ? ", " : "", coll == REDUCE ? op_names[op] : "", inplace ? ", in place" : "");
    memset(in, GUARD, room);
    memset(out, GUARD, room);
    orb_status_t st;
    switch (coll) {
    case BCAST: /* in place: the root's data is in the one buffer */
        fill_blocks(in, k, count, 1, round, rank);
        st = orb_broadcast(in, inplace ? in : out, count, dtypes[k], root, comm, NULL);
        break;
    case SCATTER: /* in place (on the root): recvbuf is its own block of sendbuf */
        fill_blocks(in, k, count, 2, round, rank);
        st = orb_scatter(in, inplace && me_root ? in + (size_t)rank * bb : out, count, dtypes[k], root, comm, NULL);
        break;
    case GATHER: /* in place (on the root): sendbuf is its own block of recvbuf */
        if (inplace && me_root) {
            fill_blocks(out + (size_t)rank * bb, k, count, 1, round, rank);
            st = orb_gather(out + (size_t)rank * bb, out, count, dtypes[k], root, comm, NULL);
        } else {
            fill_blocks(in, k, count, 1, round, rank);
            st = orb_gather(in, out, count, dtypes[k], root, comm, NULL);
        }
        break;
    default:
        fill_blocks(in, k, count, 1, round, rank);
        st = orb_reduce(in, inplace && me_root ? in : out, count, dtypes[k], ops[op], root, comm, NULL);
        break;
    }
    must(st, comm, what, round);

    /* the output: where it is, how many blocks, and each element's value */
    const uint8_t *res = NULL;
    size_t nres = 0;
    switch (coll) {
    case BCAST:
        res = inplace ? in : out;
        nres = 1;
        for (size_t i = 0; i < count; i++)
            if (get(res, k, i) != value(round, root, 0, i)) {
                bad(what, round, i, get(res, k, i), value(round, root, 0, i));
                break;
            }
        break;
    case SCATTER:
        res = inplace && me_root ? in + (size_t)rank * bb : out;
        nres = 1;
        for (size_t i = 0; i < count; i++)
            if (get(res, k, i) != value(round, root, rank, i)) {
                bad(what, round, i, get(res, k, i), value(round, root, rank, i));
                break;
            }
        break;
    case GATHER:
        if (!me_root)
            break;
        res = out;
        nres = 2;
        for (size_t j = 0; j < 2 * count; j++) /* block q from rank q */
            if (get(res, k, j) != value(round, (int)(j / count), 0, j % count)) {
                bad(what, round, j, get(res, k, j), value(round, (int)(j / count), 0, j % count));
                break;
            }
        break;
    default:
        if (!me_root)
            break;
        res = inplace ? in : out;
        nres = 1;
        for (size_t i = 0; i < count; i++) {
            const double want = reduced(op, k, value(round, 0, 0, i), value(round, 1, 0, i));
            if (get(res, k, i) != want) {
                bad(what, round, i, get(res, k, i), want);
                break;
            }
        }
        break;
    }
    /* nothing written past the output or the input, nor into a buffer the call has no
     * output in; the input as it was, but where the output took its place */
    const size_t in_used = coll == GATHER && inplace && me_root ? 0 : coll == SCATTER ? 2 * bb : bb;
    const uint8_t *res_base = res == NULL ? NULL : res >= in && res < in + room ? in : out;
    size_t in_end = in_used;
    if (res && res_base == in && (size_t)(res - in) + nres * bb > in_end)
        in_end = (size_t)(res - in) + nres * bb;
    untouched(in, in_end, room, round, what);
    untouched(out, res_base == out ? nres * bb : 0, room, round, what); /* (an output in out starts there) */
    const int overwritten = (coll == BCAST && inplace && !me_root) || (coll == REDUCE && inplace && me_root);
    for (size_t j = 0; !overwritten && j < in_used / esz[k]; j++)
        if (get(in, k, j) != value(round, rank, (int)(j / count), j % count)) {
            char w[160];
            snprintf(w, sizeof w, "%s: its input changed", what);
            bad(w, round, j, get(in, k, j), value(round, rank, (int)(j / count), j % count));
            break;
        }
}

static void rounds(orb_comm_t comm, uint8_t *in, uint8_t *out)
{
    for (int round = 0; round < ROUNDS; round++) {
        const int coll = round % 4, root = (round / 4) % 2, k = (round / 8) % 4, op = (round / 3) % 3;
        const size_t bytes = sizes[(size_t)(round / 2) % NSIZES];
        const size_t count = bytes / esz[k] ? bytes / esz[k] : 1;
        const int inplace = round % 5 == 2;
        if (round % 40 == 17 && rank == (round / 40) % 2)
            usleep(round % 80 == 17 ? 30000 : 5000);
        one(comm, round, coll, root, count, k, op, inplace, in, out);
    }
}

/* 3: a broadcast from rank 0 and a gather to rank 1 in one group: no call of a group vouches
 * (run_ops_n), so none takes the eager path; with ORBIT_EAGER_BYTES=0 on one rank (half) both
 * must run the group's handshakes alike */
static void grouped(orb_comm_t comm, uint8_t *in, uint8_t *out)
{
    for (int round = 0; round < 40; round++) {
        const size_t count = sizes[(size_t)round % NSIZES];
        uint8_t *b = in, *g_in = in + MAXB, *g_out = out;
        memset(in, GUARD, 3 * (size_t)MAXB);
        memset(out, GUARD, 3 * (size_t)MAXB);
        fill_blocks(b, 0, count, 1, round, rank);
        fill_blocks(g_in, 0, count, 1, round, rank);
        must(orb_group_start(), comm, "orb_group_start", round);
        must(orb_broadcast(b, b, count, ORB_UINT8, 0, comm, NULL), comm, "grouped broadcast", round);
        must(orb_gather(g_in, g_out, count, ORB_UINT8, 1, comm, NULL), comm, "grouped gather", round);
        must(orb_group_end(), comm, "orb_group_end", round);
        for (size_t i = 0; i < count; i++)
            if (b[i] != value(round, 0, 0, i)) {
                bad("grouped broadcast", round, i, b[i], value(round, 0, 0, i));
                break;
            }
        for (size_t j = 0; rank == 1 && j < 2 * count; j++)
            if (g_out[j] != value(round, (int)(j / count), 0, j % count)) {
                bad("grouped gather", round, j, g_out[j], value(round, (int)(j / count), 0, j % count));
                break;
            }
        untouched(out, rank == 1 ? 2 * count : 0, 3 * (size_t)MAXB, round, "grouped gather");
    }
}

/* 2: BURST calls one way before the receiver takes any: the small ring fills, and the root's
 * calls after it wait in the general executor */
static void burst(orb_comm_t comm, int coll, int sender, uint8_t *in, uint8_t *out)
{
    if (rank != sender)
        usleep(100000);
    for (int m = 0; m < BURST; m++) {
        const size_t count = sizes[(size_t)m % 9]; /* (uint8, up to 1 KiB) */
        if (coll == BCAST)
            one(comm, 1000 + m, BCAST, sender, count, 0, 0, 0, in, out);
        else
            one(comm, 2000 + m, GATHER, 1 - sender, count, 0, 0, m % 2, in, out);
    }
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
    orb_comm_t comm;
    if (orb_comm_init_env(&comm) != ORB_OK) {
        fprintf(stderr, "init failed: %s\n", orb_comm_last_error(NULL));
        return 1;
    }
    int nranks;
    orb_comm_rank(comm, &rank);
    orb_comm_size(comm, &nranks);
    if (nranks != 2) {
        fprintf(stderr, "run with 2 ranks (orbitrun -n 2): the path is two ranks'\n");
        return 2;
    }
    uint8_t *in = malloc(3 * (size_t)MAXB), *out = malloc(3 * (size_t)MAXB);
    if (!in || !out)
        return 1;
    rounds(comm, in, out);
    printf("rank %d: %d rooted calls: %s\n", rank, ROUNDS, failed ? "FAILED" : "ok");
    long before = failed;
    grouped(comm, in, out);
    printf("rank %d: grouped broadcasts and gathers: %s\n", rank, failed > before ? "FAILED" : "ok");
    before = failed;
    burst(comm, BCAST, 0, in, out);
    burst(comm, GATHER, 0, in, out);
    must(orb_barrier(comm), comm, "orb_barrier", 0);
    printf("rank %d: bursts of %d broadcasts and gathers: %s\n", rank, BURST, failed > before ? "FAILED" : "ok");
    must(orb_comm_destroy(comm), NULL, "orb_comm_destroy", 0);
    free(in);
    free(out);
    printf("rank %d: %s\n", rank, failed ? "FAILED" : "all passed");
    return failed ? 1 : 0;
}
