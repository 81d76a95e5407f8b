/* Failure behaviour, as real ranks under orbitrun:
 *   test_robust mismatch   every pair of differing signatures -> ORB_ERR_MISMATCH on all ranks, < 2 s
 *   test_robust vmismatch  alltoallv pairs whose counts disagree -> the same, naming both counts
 *   test_robust timeout    a rank that sleeps -> ORB_ERR_TIMEOUT naming the call and the peer
 *   test_robust abort      orb_comm_abort from another thread unblocks a waiting call
 *   test_robust stranger   garbage on the bootstrap port during init does not disturb it
 *   test_robust tcpsettle  2 ranks on pretend hosts (TCP): rank 0's send times out with pieces
 *                          still to go out of its buffer, which it then overwrites; what rank 1
 *                          receives afterwards (it starts once rank 0's send has returned) is
 *                          what the buffer held during the call
 *   test_robust runahead   rank 0 returns from as many broadcasts as a FIFO has slots before the
 *                          others make one (16, 80, 300; deeper, the cap of due handshakes, 256,
 *                          where it waits for its neighbour's), not from one more; a disagreement at the
 *                          5th of 8 is still reported
 *   test_robust lastvouch  chains (ORBIT_ALGO=ring, 3 ranks or more): a chain's last rank (of a
 *                          broadcast or scatter, the root's ring neighbour before it; of a reduce
 *                          or gather, the root) vouches and sends the first no handshake; it alone
 *                          making another call (count, dtype, root, collective) is ORB_ERR_MISMATCH
 *                          on every rank within the call and a barrier, naming its call
 *   test_robust chaos SEED mixed collectives until one rank SIGKILLs itself; survivors print
 *                          "SURVIVOR <rank> LOST <k> <seconds>" (checked by robust_driver)
 * For the first four each rank prints its own "rank R: N passed, N failed" and exits 1 on a
 * failure of its own (a verdict never goes through orbit); orbitrun fails the job when any
 * rank does. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "../common/take_turns.h"
#include "orbit.h"

static int rank, nranks;
static int passed, failed;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static orb_comm_t init(void)
{
    orb_comm_t c;
    orb_status_t st = orb_comm_init_env(&c);
    if (st != ORB_OK) {
        fprintf(stderr, "init failed: %s: %s\n", orb_status_name(st), orb_comm_last_error(NULL));
        exit(1);
    }
    orb_comm_rank(c, &rank);
    orb_comm_size(c, &nranks);
    return c;
}

static void check(int ok, const char *what, const char *detail)
{
    if (ok)
        passed++;
    else {
        failed++;
        fprintf(stderr, "FAIL rank %d: %s: %s\n", rank, what, detail);
    }
}

/* want: how many checks this rank must have made (a mode that returns early fails) */
static int finish(int want)
{
    printf("rank %d: %d passed, %d failed\n", rank, passed, failed);
    if (passed + failed < want) {
        fprintf(stderr, "FAIL rank %d: %d checks ran, at least %d expected\n", rank, passed + failed, want);
        return 1;
    }
    return failed ? 1 : 0;
}

/* ---- mismatch ------------------------------------------------------------------------ */

typedef struct {
    const char *name;
    int coll; /* 0 allreduce, 1 broadcast, 2 reduce, 3 allgather, 4 reduce_scatter, 5 gather, 6 scatter */
    size_t count;
    orb_dtype_t dtype;
    orb_op_t op;
    int root;
} call_sig_t;

static orb_status_t call(orb_comm_t c, const call_sig_t *s, void *a, void *b)
{
    switch (s->coll) {
    case 0:
        return orb_allreduce(a, b, s->count, s->dtype, s->op, c, NULL);
    case 1:
        return orb_broadcast(a, b, s->count, s->dtype, s->root, c, NULL);
    case 2:
        return orb_reduce(a, b, s->count, s->dtype, s->op, s->root, c, NULL);
    case 3:
        return orb_allgather(a, b, s->count, s->dtype, c, NULL);
    case 4:
        return orb_reduce_scatter(a, b, s->count, s->dtype, s->op, c, NULL);
    case 6:
        return orb_scatter(a, b, s->count, s->dtype, s->root, c, NULL);
    default:
        return orb_gather(a, b, s->count, s->dtype, s->root, c, NULL);
    }
}

/* What the message must say of one side of the pair, "called <coll> #1 (count N, <dtype>[, <op>]
 * [, root R])", from the case's own definition (docs/errors.md: both ranks and both
 * signatures; the op for reductions, the root for rooted calls). */
static void side_text(const call_sig_t *s, char *buf, size_t len)
{
    static const char *colls[] = {"allreduce", "broadcast", "reduce", "allgather", "reduce_scatter", "gather", "scatter"};
    const char *dt = s->dtype == ORB_FLOAT32 ? "float32" : s->dtype == ORB_INT32 ? "int32" : "float64";
    const char *op = s->op == ORB_SUM ? "sum" : "max";
    int reduces = s->coll == 0 || s->coll == 2 || s->coll == 4,
        rooted = s->coll == 1 || s->coll == 2 || s->coll == 5 || s->coll == 6;
    char opt[32] = "", rt[32] = "";
    if (reduces)
        snprintf(opt, sizeof opt, ", %s", op);
    if (rooted)
        snprintf(rt, sizeof rt, ", root %d", s->root);
    snprintf(buf, len, "called %s #1 (count %zu, %s%s%s)", colls[s->coll], s->count, dt, opt, rt);
}

/* The message names rank 0 with call A and another rank with call B, in either order. */
static int mismatch_message_ok(const char *msg, const call_sig_t *a, const call_sig_t *b)
{
    char ta[128], tb[128], r0[160];
    side_text(a, ta, sizeof ta);
    side_text(b, tb, sizeof tb);
    snprintf(r0, sizeof r0, "rank 0 %s", ta);
    const char *pb = strstr(msg, tb);
    if (!strstr(msg, r0) || !pb || !strstr(msg, " but rank ") || pb - msg < 7)
        return 0;
    /* the rank named before call B: "rank K called ..." with K in 1..nranks-1 */
    const char *k = pb - 2;
    while (k > msg && k[-1] >= '0' && k[-1] <= '9')
        k--;
    int who = atoi(k);
    return k >= msg + 5 && strncmp(k - 5, "rank ", 5) == 0 && who >= 1 && who < nranks;
}

static int mode_mismatch(void)
{
    /* rank 0 makes call A, every other rank call B */
    static const call_sig_t cases[][2] = {
        {{"allreduce", 0, 64, ORB_FLOAT32, ORB_SUM, 0}, {"broadcast", 1, 64, ORB_FLOAT32, ORB_SUM, 0}},
        {{"allreduce", 0, 64, ORB_FLOAT32, ORB_SUM, 0}, {"allgather", 3, 64, ORB_FLOAT32, ORB_SUM, 0}},
        {{"allreduce count 64", 0, 64, ORB_FLOAT32, ORB_SUM, 0}, {"count 65", 0, 65, ORB_FLOAT32, ORB_SUM, 0}},
        {{"allreduce count 100000", 0, 100000, ORB_FLOAT32, ORB_SUM, 0}, {"count 1", 0, 1, ORB_FLOAT32, ORB_SUM, 0}},
        {{"allreduce float32", 0, 64, ORB_FLOAT32, ORB_SUM, 0}, {"int32", 0, 64, ORB_INT32, ORB_SUM, 0}},
        {{"allreduce float32", 0, 64, ORB_FLOAT32, ORB_SUM, 0}, {"float64", 0, 64, ORB_FLOAT64, ORB_SUM, 0}},
        {{"allreduce sum", 0, 64, ORB_FLOAT32, ORB_SUM, 0}, {"max", 0, 64, ORB_FLOAT32, ORB_MAX, 0}},
        {{"reduce root 0", 2, 64, ORB_FLOAT32, ORB_SUM, 0}, {"root 1", 2, 64, ORB_FLOAT32, ORB_SUM, 1}},
        {{"broadcast root 0", 1, 64, ORB_FLOAT32, ORB_SUM, 0}, {"root 1", 1, 64, ORB_FLOAT32, ORB_SUM, 1}},
        {{"gather root 0", 5, 64, ORB_FLOAT32, ORB_SUM, 0}, {"root 1", 5, 64, ORB_FLOAT32, ORB_SUM, 1}},
        {{"reduce", 2, 64, ORB_FLOAT32, ORB_SUM, 0}, {"allreduce", 0, 64, ORB_FLOAT32, ORB_SUM, 0}},
        {{"reduce_scatter", 4, 64, ORB_FLOAT32, ORB_SUM, 0}, {"allgather", 3, 64, ORB_FLOAT32, ORB_SUM, 0}},
        /* the root's handshake rides on its data; the others' goes as a piece of its own */
        {{"broadcast root 0", 1, 64, ORB_FLOAT32, ORB_SUM, 0}, {"reduce root 1", 2, 64, ORB_FLOAT32, ORB_SUM, 1}},
        /* ... and where it rides on data, a neighbour whose call takes no piece from the root
         * (count 0: a handshake and nothing else) must not count it as its handshake */
        {{"broadcast root 0", 1, 64, ORB_FLOAT32, ORB_SUM, 0}, {"allreduce count 0", 0, 0, ORB_FLOAT32, ORB_SUM, 0}},
        /* count 0: a handshake and nothing else, so no data piece names the disagreement and
         * the handshake's own signature must (two ranks: nothing moves one way to vouch for) */
        {{"broadcast count 0 root 0", 1, 0, ORB_FLOAT32, ORB_SUM, 0}, {"root 1", 1, 0, ORB_FLOAT32, ORB_SUM, 1}},
    };
    const size_t ncases = sizeof cases / sizeof cases[0];
    float *a = calloc(1 << 20, sizeof(float)), *b = calloc(1 << 20, sizeof(float));
    for (size_t i = 0; i < ncases; i++) {
        orb_comm_t c = init();
        const call_sig_t *s = &cases[i][rank == 0 ? 0 : 1];
        double t0 = now();
        orb_status_t st = call(c, s, a, b);
        /* A rank returns OK only if every piece it received carried its own signature (its
         * output is right). If its neighbours agreed with it, it learns of the mismatch from
         * the ranks that saw it, at its next call at the latest. */
        orb_status_t first = st;
        if (st == ORB_OK)
            st = orb_barrier(c);
        double took = now() - t0;
        char detail[2048];
        snprintf(detail, sizeof detail, "case \"%s\" vs \"%s\": got %s%s after %.2f s: %s", cases[i][0].name,
                 cases[i][1].name, first == ORB_OK ? "OK, then " : "", orb_status_name(st), took,
                 orb_comm_last_error(c));
        check(st == ORB_ERR_MISMATCH && took < 2.0, "mismatch", detail);
        check(mismatch_message_ok(orb_comm_last_error(c), &cases[i][0], &cases[i][1]),
              "the mismatch message names rank 0 with its call and another rank with the other call", detail);
        if (rank == 0 && i == 0)
            printf("example: %s\n", orb_comm_last_error(c));
        orb_comm_destroy(c);
    }
    /* A rooted call's senders return without waiting for their neighbour's signature
     * (collectives/exec.h, orb_exec_due_t); when no call follows, orb_comm_destroy is where
     * they learn that the neighbour disagreed, and its message names the rooted call. Two
     * ranks: each is the other's neighbour (with more, a rank whose neighbours agree with it
     * hears of the others' disagreement at its next call, which this does not make). */
    static const size_t rooted[] = {7, 8, 9, 12, 14};
    const size_t nrooted = sizeof rooted / sizeof rooted[0];
    for (size_t j = 0; nranks == 2 && j < nrooted; j++) {
        const size_t i = rooted[j];
        orb_comm_t c = init();
        /* the others call late, so that rank 0's broadcast has sent everything, left its
         * neighbour's handshake due and returned before any piece of theirs is there: the
         * path under test (the verdict does not depend on it: in time, the call fails) */
        if (rank != 0)
            usleep(50000);
        orb_status_t st = call(c, &cases[i][rank == 0 ? 0 : 1], a, b);
        orb_status_t first = st;
        const double t0 = now();
        orb_status_t dst = orb_comm_destroy(c);
        if (st == ORB_OK)
            st = dst;
        const char *msg = orb_comm_last_error(NULL); /* the thread's copy outlives the handle */
        char detail[2048];
        snprintf(detail, sizeof detail, "case \"%s\" vs \"%s\", then destroy: got %s%s: %s", cases[i][0].name,
                 cases[i][1].name, first == ORB_OK ? "OK, then " : "", orb_status_name(st), msg);
        check(st == ORB_ERR_MISMATCH && now() - t0 < 2.0, "mismatch by destroy", detail);
        check(mismatch_message_ok(msg, &cases[i][0], &cases[i][1]), "the destroy's message names both calls",
              detail);
    }
    /* Every rank a chain's forwarder: a broadcast whose root is the rank's ring predecessor
     * (the ring is 0 1 .. n-1 on one host's single NUMA node, as the test machines have), so
     * each rank's handshake was to ride on the piece it forwards after a receive that never
     * comes (collectives/exec.h, ORB_SYNC_AFTER_RECV): after ORB_EXEC_UNMERGE_S it goes as a
     * piece of its own, and every rank names the disagreement long before ORBIT_TIMEOUT. */
    if (nranks >= 3) {
        setenv("ORBIT_ALGO", "ring", 1); /* the chain */
        orb_comm_t c = init();
        unsetenv("ORBIT_ALGO");
        const int root = (rank + nranks - 1) % nranks;
        const double t0 = now();
        orb_status_t st = orb_broadcast(a, b, 64, ORB_FLOAT32, root, c, NULL);
        orb_status_t first = st;
        if (st == ORB_OK)
            st = orb_barrier(c);
        const double took = now() - t0;
        char detail[2048];
        snprintf(detail, sizeof detail, "broadcast rooted at each rank's predecessor (root %d here): got %s%s after "
                 "%.2f s: %s", root, first == ORB_OK ? "OK, then " : "", orb_status_name(st), took,
                 orb_comm_last_error(c));
        check(st == ORB_ERR_MISMATCH && took < 2.0, "every rank a forwarder: mismatch", detail);
        const char *msg = orb_comm_last_error(c);
        check(strstr(msg, "called broadcast #1 (count 64, float32, root ") && strstr(msg, " but rank "),
              "every rank a forwarder: the message names two broadcasts", detail);
        orb_comm_destroy(c);
    }
    /* a skipped call: rank 0 makes one allreduce more than the others */
    {
        orb_comm_t c = init();
        orb_status_t st = ORB_OK;
        double t0 = now();
        if (rank == 0)
            st = orb_allreduce(a, b, 16, ORB_FLOAT32, ORB_SUM, c, NULL);
        if (st == ORB_OK)
            st = orb_broadcast(a, b, 16, ORB_FLOAT32, 0, c, NULL);
        char detail[2048];
        snprintf(detail, sizeof detail, "skipped call: got %s: %s", orb_status_name(st), orb_comm_last_error(c));
        check(st == ORB_ERR_MISMATCH && now() - t0 < 2.0, "skipped call", detail);
        orb_comm_destroy(c);
    }
    free(a);
    free(b);
    return finish(2 * (int)ncases + (nranks == 2 ? 2 * (int)nrooted : 0) + (nranks >= 3 ? 2 : 0));
}

/* ---- timeout ------------------------------------------------------------------------- */

static int mode_timeout(void)
{
    setenv("ORBIT_TIMEOUT", "1.5", 1);
    /* The ring, so that rank 0 waits on the sleeper itself (its ring predecessor); recursive
     * doubling, the tuner's choice from 3 ranks, would have rank 0 wait on its fold partner,
     * and the message would rightly name that one. */
    setenv("ORBIT_ALGO", "ring", 1);
    orb_comm_t c = init();
    float x[4] = {1, 2, 3, 4}, y[4];
    if (rank == nranks - 1) { /* the late rank: arrives after the others gave up */
        sleep(4);
        orb_status_t st = orb_allreduce(x, y, 4, ORB_FLOAT32, ORB_SUM, c, NULL);
        /* An error, or (when everything it needed had arrived before the others gave up, as in
         * the 2-rank exchange) the right answer: never a hang, never garbage. */
        check(st != ORB_OK || (y[0] == (float)nranks && y[3] == 4.0f * (float)nranks),
              "late rank gets an error or the right answer", orb_comm_last_error(c));
    } else {
        double t0 = now();
        orb_status_t st = orb_allreduce(x, y, 4, ORB_FLOAT32, ORB_SUM, c, NULL);
        double took = now() - t0;
        const char *msg = orb_comm_last_error(c);
        if (rank == 0) /* waits on the sleeper itself */
        {
            char peer[64];
            snprintf(peer, sizeof peer, "waits for rank %d", nranks - 1);
            check(st == ORB_ERR_TIMEOUT && took > 1.4 && took < 4 && strstr(msg, "allreduce #1 (count 4, float32, sum)") &&
                      strstr(msg, "step") && strstr(msg, peer),
                  "timeout names call, step and the late peer", msg);
        }
        else { /* waits on a rank that timed out: its timeout, or that rank leaving, whichever first */
            check((st == ORB_ERR_TIMEOUT || st == ORB_ERR_PEER_LOST) && took < 4, "timeout or peer gone", msg);
            /* Stay in the job past rank 0's own deadline: leaving first would let rank 0 see this
             * rank gone before its timeout fires (seen once on one CPU), which is true but not
             * the case this mode checks. */
            sleep(3);
        }
        if (rank == 0)
            printf("example: %s\n", msg);
    }
    orb_comm_destroy(c);
    unsetenv("ORBIT_TIMEOUT");
    unsetenv("ORBIT_ALGO");
    return finish(1);
}

/* ---- tcpsettle ----------------------------------------------------------------------- */

/* More than the sockets and rank 1's FIFOs take while it sleeps: 41 MiB here, with one socket
 * a channel (the kernel doubles the 4 MiB buffers orbit asks for, and caps them there). */
#define SETTLE_BYTES (128u << 20)

/* 1..0xEC: never 0 (rank 1's fill) nor 0xEE (rank 0's overwrite) */
static uint8_t settle_byte(size_t k) { return (uint8_t)(1 + (k * 7 + (k >> 12)) % 0xEC); }

/* The two ranks take turns through files (take_turns.h), outside orbit and without timing:
 * rank 1 reads only after rank 0's send has failed, rank 0 leaves only after rank 1 read. */
static int mode_tcpsettle(void)
{
    const char *r = getenv("RANK");
    char host[32];
    snprintf(host, sizeof host, "settle-h%s", r ? r : "?");
    setenv("ORBIT_HOSTID", host, 1); /* each rank a host of its own: TCP between them */
    setenv("ORBIT_NSOCKS", "1", 1);
    setenv("ORBIT_TIMEOUT", r && !strcmp(r, "0") ? "1.5" : "5", 1);
    orb_comm_t c = init();
    uint8_t *buf = malloc(SETTLE_BYTES);
    if (!buf || nranks != 2) {
        fprintf(stderr, "FAIL rank %d: needs 2 ranks and %u bytes\n", rank, SETTLE_BYTES);
        return 1;
    }
    char detail[256];
    if (rank == 0) {
        for (size_t k = 0; k < SETTLE_BYTES; k++)
            buf[k] = settle_byte(k);
        /* Rank 1 waits: the sockets fill, pieces posted from buf wait, the send times out. */
        orb_status_t st = orb_send(buf, SETTLE_BYTES, ORB_UINT8, 1, c, NULL);
        snprintf(detail, sizeof detail, "%s: %s", orb_status_name(st), orb_comm_last_error(c));
        check(st == ORB_ERR_TIMEOUT && strstr(orb_comm_last_error(c), "send/recv from rank 0") &&
                  strstr(orb_comm_last_error(c), "waits for rank 1"),
              "a send to a sleeping rank times out", detail);
        memset(buf, 0xEE, SETTLE_BYTES); /* the caller's buffer is its own again */
        turn_mark("tcpsettle", "sent");
        /* destroy after an error sends nothing more: stay till rank 1 has read */
        if (!turn_wait("tcpsettle", "read", rank))
            return 1;
    } else {
        memset(buf, 0, SETTLE_BYTES);
        if (!turn_wait("tcpsettle", "sent", rank))
            return 1;
        orb_status_t st = orb_recv(buf, SETTLE_BYTES, ORB_UINT8, 0, c, NULL);
        size_t good = 0, zero = 0, bad = 0, first_bad = 0;
        for (size_t k = 0; k < SETTLE_BYTES; k++) {
            if (buf[k] == settle_byte(k))
                good++;
            else if (buf[k] == 0)
                zero++;
            else if (bad++ == 0)
                first_bad = k;
        }
        snprintf(detail, sizeof detail, "recv %s; %zu bytes as sent, %zu never came, %zu wrong (the first at %zu: "
                 "0x%02x)", orb_status_name(st), good, zero, bad, first_bad, bad ? buf[first_bad] : 0);
        printf("rank 1: %s\n", detail);
        turn_mark("tcpsettle", "read");
        /* at least what the sockets held when rank 0 gave up must have come, and nothing else */
        check(st != ORB_OK && bad == 0 && good >= (1u << 20), "the bytes that come are the ones sent", detail);
    }
    free(buf);
    orb_comm_destroy(c);
    unsetenv("ORBIT_TIMEOUT");
    unsetenv("ORBIT_HOSTID");
    unsetenv("ORBIT_NSOCKS");
    return finish(1);
}

/* ---- abort --------------------------------------------------------------------------- */

static void *aborter(void *p)
{
    usleep(300000);
    orb_comm_abort((orb_comm_t)p);
    return NULL;
}

static int mode_abort(void)
{
    orb_comm_t c = init();
    float x[4] = {1, 2, 3, 4}, y[4];
    if (rank == 0) {
        pthread_t t;
        pthread_create(&t, NULL, aborter, c);
        double t0 = now();
        orb_status_t st = orb_allreduce(x, y, 4, ORB_FLOAT32, ORB_SUM, c, NULL);
        double took = now() - t0;
        pthread_join(t, NULL);
        orb_status_t async = ORB_OK;
        orb_comm_get_async_error(c, &async);
        char detail[1700];
        snprintf(detail, sizeof detail, "%s after %.2f s (async %s): %s", orb_status_name(st), took,
                 orb_status_name(async), orb_comm_last_error(c));
        check(st == ORB_ERR_ABORTED && took < 1.5 && async == ORB_ERR_ABORTED, "abort unblocks", detail);
        st = orb_allreduce(x, y, 4, ORB_FLOAT32, ORB_SUM, c, NULL);
        check(st == ORB_ERR_ABORTED, "calls after abort fail", orb_comm_last_error(c));
        check(orb_comm_destroy(c) == ORB_OK, "destroy after abort", "");
    } else { /* never joins the call: rank 0 must not depend on us to get out */
        sleep(2);
        orb_comm_destroy(c);
    }
    return finish(rank == 0 ? 3 : 0);
}

/* ---- strangers on the bootstrap port ------------------------------------------------- */

static void poke(const char *addr, int port, const void *bytes, size_t len, int keep_open)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {0};
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)port);
    inet_pton(AF_INET, addr, &sa.sin_addr);
    for (int i = 0; i < 100 && connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0; i++) {
        close(fd);
        usleep(20000);
        fd = socket(AF_INET, SOCK_STREAM, 0);
    }
    if (len) {
        ssize_t w = send(fd, bytes, len, MSG_NOSIGNAL);
        (void)w;
    }
    if (!keep_open)
        close(fd);
}

static int mode_stranger(void)
{
    const char *me = getenv("RANK"), *ws = getenv("WORLD_SIZE");
    const char *addr = getenv("MASTER_ADDR"), *ps = getenv("MASTER_PORT");
    int last = me && ws && atoi(me) == atoi(ws) - 1;
    if (last && addr && ps) { /* knock on rank 0's door with junk before joining */
        int port = atoi(ps);
        unsigned char junk[256];
        for (size_t i = 0; i < sizeof junk; i++)
            junk[i] = (unsigned char)(i * 37 + 11);
        const char http[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
        /* a well-formed header that announces 4 GiB */
        uint32_t huge[4] = {0x4f524242u, 1u | (1u << 16), 0xffffffffu, 0};
        uint32_t badver[4] = {0x4f524242u, 77u | (1u << 16), 16, 0};
        poke(addr, port, junk, sizeof junk, 0);
        poke(addr, port, http, sizeof http - 1, 0);
        poke(addr, port, huge, sizeof huge, 0);
        poke(addr, port, badver, sizeof badver, 0);
        poke(addr, port, NULL, 0, 1); /* half-open: connects, never speaks, stays open */
        poke(addr, port, junk, 3, 1);  /* starts a header and stalls */
    }
    double t0 = now();
    orb_comm_t c = init();
    double took = now() - t0;
    float x[4] = {1, 2, 3, 4}, y[4];
    orb_status_t st = orb_allreduce(x, y, 4, ORB_FLOAT32, ORB_SUM, c, NULL);
    char detail[1700];
    snprintf(detail, sizeof detail, "init took %.2f s, allreduce %s: %s", took, orb_status_name(st),
             orb_comm_last_error(c));
    check(st == ORB_OK && y[3] == 4.0f * (float)nranks && took < 5.0, "init undisturbed by strangers", detail);
    orb_comm_destroy(c);
    return finish(1);
}

/* ---- chaos --------------------------------------------------------------------------- */

static int mode_chaos(unsigned seed)
{
    orb_comm_t c = init();
    int victim = (int)(seed % (unsigned)nranks);
    int when = (int)((seed * 7919u) % 150u) + 5;
    size_t maxn = 1 << 16;
    float *a = malloc(maxn * sizeof(float) * (size_t)nranks), *b = malloc(maxn * sizeof(float) * (size_t)nranks);
    for (size_t i = 0; i < maxn * (size_t)nranks; i++)
        a[i] = 1.0f;
    for (int it = 0;; it++) {
        if (rank == victim && it == when) {
            printf("VICTIM %d %.6f\n", rank, now());
            fflush(stdout);
            if (seed & 1)
                usleep(1000 * (seed % 50)); /* sometimes while the others are already waiting */
            raise(SIGKILL);
        }
        size_t n = (size_t)1 << ((it * 5 + (int)seed) % 17);
        orb_status_t st;
        switch (it % 5) {
        case 0:
            st = orb_allreduce(a, b, n, ORB_FLOAT32, ORB_SUM, c, NULL);
            break;
        case 1:
            st = orb_broadcast(a, b, n, ORB_FLOAT32, it % nranks, c, NULL);
            break;
        case 2:
            st = orb_reduce(a, b, n, ORB_FLOAT32, ORB_MAX, (it / 5) % nranks, c, NULL);
            break;
        case 3:
            st = orb_allgather(a, b, n, ORB_FLOAT32, c, NULL);
            break;
        default:
            st = orb_barrier(c);
        }
        if (st != ORB_OK) {
            const char *msg = orb_comm_last_error(c);
            printf("SURVIVOR %d %s %.6f %s\n", rank, orb_status_name(st), now(), msg);
            fflush(stdout);
            return st == ORB_ERR_PEER_LOST ? 0 : 3;
        }
        if (it > 100000)
            return 4; /* the victim never died: the driver will say so */
    }
}

/* alltoallv whose pair (0, 1) disagrees: rank 0 sends `give` elements to rank 1, which
 * expects `want`; every other pair agrees (one element each way). Every rank fails with
 * ORB_ERR_MISMATCH in under 2 s; ranks 0 and 1 name each other and both counts, the others
 * hear it from them. */
static void vmismatch_case(size_t give, size_t want)
{
    orb_comm_t c = init();
    const size_t n = (size_t)nranks;
    size_t *v = calloc(4 * n, sizeof *v);
    float sbuf[64] = {0}, rbuf[64];
    for (size_t j = 0; j < n; j++) {
        v[j] = v[2 * n + j] = 1;
        v[n + j] = v[3 * n + j] = 8 * j;
    }
    if (rank == 0)
        v[1] = give;
    if (rank == 1)
        v[2 * n] = want;
    double t0 = now();
    orb_status_t st = orb_alltoallv(sbuf, v, v + n, rbuf, v + 2 * n, v + 3 * n, ORB_FLOAT32, c, NULL);
    if (st == ORB_OK)
        st = orb_barrier(c);
    double took = now() - t0;
    const char *msg = orb_comm_last_error(c);
    char detail[2048], a[96], b[96];
    snprintf(detail, sizeof detail, "alltoallv rank 0 gives %zu, rank 1 wants %zu: got %s after %.2f s: %s", give,
             want, orb_status_name(st), took, msg);
    check(st == ORB_ERR_MISMATCH && took < 2.0, "alltoallv counts mismatch", detail);
    snprintf(a, sizeof a, "rank 0 has sendcounts[1]=%zu", give);
    snprintf(b, sizeof b, "rank 1 has recvcounts[0]=%zu", want);
    check(strstr(msg, "orb_alltoallv") && strstr(msg, a) && strstr(msg, b),
          "the message names the call, both ranks and both counts", detail);
    free(v);
    orb_comm_destroy(c);
}

static int mode_vmismatch(void)
{
    vmismatch_case(5, 4);
    vmismatch_case(0, 3); /* a pair where one side sends nothing */
    vmismatch_case(2, 0);
    return finish(6);
}

/* ---- runahead ------------------------------------------------------------------------ */

/* A rooted call's root returns without its neighbour's handshake; as many calls' handshakes as
 * a FIFO has slots, up to 256, may stay due (docs/errors.md), so the root runs ahead of ranks that
 * have not started yet, and a mismatch among the calls it has returned from is still reported,
 * naming the call. */
#define RUNAHEAD 8 /* parts 2 and 3: calls rank 0 returns from, within every window below */
#define RUNAHEAD_COUNT 16
#define RUNAHEAD_CAP 256 /* collectives/exec.h, ORB_EXEC_DUE_CAP */

static float runahead_value(int call, size_t i) { return (float)(call * 1000 + (int)i); }

/* Rank 0 marks "what-<r>" for every other rank r (tests/common/take_turns.h). */
static void mark_all(const char *what)
{
    char name[64];
    for (int r = 1; r < nranks; r++) {
        snprintf(name, sizeof name, "%s-%d", what, r);
        turn_mark("runahead", name);
    }
}

/* This rank's own mark ("what-<rank>"): waits up to 30 s for it (the test's ORBIT_TIMEOUT). */
static int wait_mark(const char *what)
{
    char name[64];
    snprintf(name, sizeof name, "%s-%d", what, rank);
    return turn_wait_for("runahead", name, rank, 30);
}

static int mark_seen(const char *what, int peer)
{
    char name[64];
    snprintf(name, sizeof name, "%s-%d", what, peer);
    return turn_seen("runahead", name);
}

/* 1. With FIFOs of `slots` large slots and `small` small ones, rank 0 returns from `window`
 * broadcasts of 64 bytes before any other rank makes one, and not from one more: window = the
 * deeper ring (16 large slots and no small ring: 16; 8 large and 16 small: 16; 80 small: 80),
 * or with more than two ranks the cap where the FIFO is deeper (a tree with 600 small slots: 256,
 * the window of due handshakes and not a full FIFO stops the root). Where no handshake comes back to the
 * root, none is left due and the full small ring stops it (300): two ranks over shared memory,
 * whose receiver vouches for the root's calls (collectives/exec.h, ORB_SYNC_VOUCH), and a chain
 * (ORBIT_ALGO=ring), whose last rank vouches for its forwarder's (ORB_VOUCH_CHAIN). */
static void runahead_window(const char *slots, const char *small, int window)
{
    setenv("ORBIT_SHM_SLOTS", slots, 1);
    setenv("ORBIT_SHM_SMALL_SLOTS", small, 1);
    float buf[RUNAHEAD_COUNT];
    char detail[2048], what[200], ahead_mark[32], past_mark[32], checked_mark[32];
    snprintf(ahead_mark, sizeof ahead_mark, "ahead%s-%s", slots, small);
    snprintf(past_mark, sizeof past_mark, "past%s-%s", slots, small);
    snprintf(checked_mark, sizeof checked_mark, "checked%s-%s", slots, small);
    orb_comm_t c = init();
    if (rank == 0) {
        orb_status_t st = ORB_OK;
        int k;
        for (k = 1; k <= window + 1 && st == ORB_OK; k++) {
            for (size_t i = 0; i < RUNAHEAD_COUNT; i++)
                buf[i] = runahead_value(k, i);
            st = orb_broadcast(buf, buf, RUNAHEAD_COUNT, ORB_FLOAT32, 0, c, NULL);
            if (k == window)
                mark_all(ahead_mark);
        }
        mark_all(past_mark);
        snprintf(detail, sizeof detail, "%s slots, %s small: broadcast %d: %s: %s", slots, small, k - 1, orb_status_name(st),
                 orb_comm_last_error(c));
        snprintf(what, sizeof what, "%d broadcasts from the root", window + 1);
        check(st == ORB_OK, what, detail);
    } else {
        const int ahead = wait_mark(ahead_mark);
        snprintf(detail, sizeof detail, "%s slots, %s small: no mark from rank 0 within 30 s of rank %d's start", slots,
                 small, rank);
        snprintf(what, sizeof what, "rank 0 returned from %d broadcasts before this rank made one (%s slots, %s small)",
                 window, slots, small);
        check(ahead, what, detail);
        usleep(200000); /* rank 0 cannot return from one more now; were it to, this is time enough to see it */
        snprintf(what, sizeof what, "rank 0 did not return from broadcast %d with %d ahead (%s slots, %s small)",
                 window + 1, window, slots, small);
        snprintf(detail, sizeof detail, "rank 0 marked its call %d done before this rank made its first", window + 1);
        check(!mark_seen(past_mark, rank), what, detail);
        /* no other rank starts before every one has looked (rank 0 waits for its ring neighbour's
         * handshake, whichever rank that is) */
        char name[64];
        snprintf(name, sizeof name, "%s-%d", checked_mark, rank);
        turn_mark("runahead", name);
        for (int q = 1, i = 0; q < nranks && i < 3000; i++)
            if (mark_seen(checked_mark, q))
                q++;
            else
                usleep(10000);
        int wrong = 0, k;
        orb_status_t st = ORB_OK;
        for (k = 1; k <= window + 1 && st == ORB_OK; k++) {
            memset(buf, 0xff, sizeof buf);
            st = orb_broadcast(buf, buf, RUNAHEAD_COUNT, ORB_FLOAT32, 0, c, NULL);
            for (size_t i = 0; st == ORB_OK && i < RUNAHEAD_COUNT; i++)
                wrong += buf[i] != runahead_value(k, i);
        }
        snprintf(detail, sizeof detail, "%s slots, %s small: broadcast %d: %s, %d elements wrong: %s", slots, small, k - 1,
                 orb_status_name(st), wrong, orb_comm_last_error(c));
        snprintf(what, sizeof what, "%d broadcasts received, every element exact", window + 1);
        check(st == ORB_OK && wrong == 0, what, detail);
        wait_mark(past_mark);
    }
    orb_status_t bst = orb_barrier(c);
    check(bst == ORB_OK, "barrier after the run-ahead", orb_comm_last_error(c));
    if (rank != 0) { /* every rank is past the wait for it now */
        char path[160], name[64];
        snprintf(name, sizeof name, "%s-%d", checked_mark, rank);
        turn_path(path, sizeof path, "runahead", name);
        unlink(path);
    }
    orb_comm_destroy(c);
}

static int mode_runahead(void)
{
    runahead_window("16", "0", 16);
    runahead_window("8", "16", 16);
    runahead_window("8", "80", 80);
    if (nranks == 2) {
        runahead_window("8", "300", 300);
    } else { /* the tree waits for its ring neighbour's handshake (and sends its ring neighbour
              * two pieces a call, the handshake on its own: 600 slots hold 300 calls); a chain
              * for none */
        setenv("ORBIT_ALGO", "tree", 1);
        runahead_window("8", "600", RUNAHEAD_CAP);
        setenv("ORBIT_ALGO", "ring", 1);
        runahead_window("8", "300", 300);
        unsetenv("ORBIT_ALGO");
    }
    /* parts 2 and 3: FIFOs deeper than the 8 calls rank 0 runs ahead */
    setenv("ORBIT_SHM_SLOTS", "16", 1);
    unsetenv("ORBIT_SHM_SMALL_SLOTS");
    float buf[RUNAHEAD_COUNT];
    char detail[2048];
    orb_comm_t c;

    /* 2. the others disagree at the 5th of the 8 calls rank 0 has returned from */
    c = init();
    const char *want[2] = {"broadcast #5 (count 16, float32, root 0)", "broadcast #5 (count 17, float32, root 0)"};
    orb_status_t st = ORB_OK;
    if (rank == 0) {
        for (int k = 1; k <= RUNAHEAD && st == ORB_OK; k++)
            st = orb_broadcast(buf, buf, RUNAHEAD_COUNT, ORB_FLOAT32, 0, c, NULL);
        check(st == ORB_OK, "8 broadcasts from the root before the others start", orb_comm_last_error(c));
        mark_all("due");
        st = orb_barrier(c);
    } else {
        wait_mark("due");
        int k;
        for (k = 1; k <= RUNAHEAD && st == ORB_OK; k++)
            st = orb_broadcast(buf, buf, k == 5 ? RUNAHEAD_COUNT + 1 : RUNAHEAD_COUNT, ORB_FLOAT32, 0, c, NULL);
        /* (a rank further down the chain may hear of it from the rank that saw it first) */
        snprintf(detail, sizeof detail, "failed at call %d", k - 1);
        check(k - 1 <= 5, "no other rank gets past the call that disagrees", detail);
    }
    const char *msg = orb_comm_last_error(c);
    snprintf(detail, sizeof detail, "got %s: %s", orb_status_name(st), msg);
    check(st == ORB_ERR_MISMATCH, "mismatch at the 5th of the calls rank 0 returned from", detail);
    check(strstr(msg, want[0]) && strstr(msg, want[1]), "the message names both 5th calls", detail);
    orb_comm_destroy(c);

    /* 3. calls that receive from a rank whose handshakes are still due take those first, not
     * as their data: broadcasts from the last rank (its neighbour's handshakes stay due), then
     * an all-gather, many times over so that a handshake piece lands in every gap of the path */
    c = init();
    st = ORB_OK;
    int wrong = 0, it;
    float one = 0, all[8];
    for (it = 0; it < 20000 && st == ORB_OK; it++) {
        for (int k = 0; k < 3 && st == ORB_OK; k++) {
            one = rank == nranks - 1 ? runahead_value(it, (size_t)k) : -1.0f;
            st = orb_broadcast(&one, &one, 1, ORB_FLOAT32, nranks - 1, c, NULL);
            wrong += st == ORB_OK && one != runahead_value(it, (size_t)k);
        }
        one = runahead_value(it, (size_t)rank);
        if (st == ORB_OK)
            st = orb_allgather(&one, all, 1, ORB_FLOAT32, c, NULL);
        for (int r = 0; st == ORB_OK && r < nranks && r < 8; r++)
            wrong += all[r] != runahead_value(it, (size_t)r);
    }
    snprintf(detail, sizeof detail, "iteration %d: %s, %d values wrong: %s", it - 1, orb_status_name(st), wrong,
             orb_comm_last_error(c));
    check(st == ORB_OK && wrong == 0, "broadcasts running ahead, then all-gathers, 20000 times", detail);
    orb_comm_destroy(c);
    return finish(rank == 0 ? 8 : 12);
}

/* ---- lastvouch ------------------------------------------------------------------------- */

/* A chain (a rooted ring plan of 3 ranks or more) sends its first rank no handshake from its
 * last (collectives/exec_cpu.c, vouch_setup): the last rank checks the pieces of its ring
 * neighbour before it, and the first, which never receives from it, expects nothing. Here the
 * last rank alone calls something else, where the first and the forwarders agree: rank n-1 in
 * broadcasts and scatters from root 0 (the ring being 0 1 .. n-1 on these machines' one NUMA
 * node), the root, rank 0, in reduces and gathers to it. Every rank must still end in
 * ORB_ERR_MISMATCH within its call and a barrier, whose message names the odd rank's call and
 * another rank's. */
static int mode_lastvouch(void)
{
    /* call_sig_t: name, collective (1 broadcast, 2 reduce, 5 gather, 6 scatter, 0 allreduce),
     * count, dtype, op, root (-1: the last rank of root 0's broadcast chain, rank n-1) */
    static const struct {
        int odd; /* 0: rank n-1, 1: rank 0 */
        call_sig_t call[2]; /* the odd rank's call, everyone else's */
    } cases[] = {
        {0, {{"broadcast count 17", 1, 17, ORB_FLOAT32, ORB_SUM, 0}, {"count 16", 1, 16, ORB_FLOAT32, ORB_SUM, 0}}},
        /* pieces of the same size: only the signature on them tells */
        {0, {{"broadcast int32", 1, 16, ORB_INT32, ORB_SUM, 0}, {"float32", 1, 16, ORB_FLOAT32, ORB_SUM, 0}}},
        /* the last rank roots a chain of its own: it sends to rank 0 and leaves its forwarder's
         * handshake due, to find it at its next call */
        {0, {{"broadcast root n-1", 1, 16, ORB_FLOAT32, ORB_SUM, -1}, {"root 0", 1, 16, ORB_FLOAT32, ORB_SUM, 0}}},
        /* the packed chain (n blocks in one piece) */
        {0, {{"scatter count 5", 6, 5, ORB_FLOAT32, ORB_SUM, 0}, {"count 4", 6, 4, ORB_FLOAT32, ORB_SUM, 0}}},
        {0, {{"scatter int32", 6, 4, ORB_INT32, ORB_SUM, 0}, {"float32", 6, 4, ORB_FLOAT32, ORB_SUM, 0}}},
        {0, {{"broadcast", 1, 16, ORB_FLOAT32, ORB_SUM, 0}, {"scatter", 6, 16, ORB_FLOAT32, ORB_SUM, 0}}},
        {0, {{"allreduce", 0, 16, ORB_FLOAT32, ORB_SUM, 0}, {"broadcast", 1, 16, ORB_FLOAT32, ORB_SUM, 0}}},
        /* towards the root: the root is the last rank */
        {1, {{"reduce count 17", 2, 17, ORB_FLOAT32, ORB_SUM, 0}, {"count 16", 2, 16, ORB_FLOAT32, ORB_SUM, 0}}},
        {1, {{"reduce int32", 2, 16, ORB_INT32, ORB_SUM, 0}, {"float32", 2, 16, ORB_FLOAT32, ORB_SUM, 0}}},
        {1, {{"gather int32", 5, 4, ORB_INT32, ORB_SUM, 0}, {"float32", 5, 4, ORB_FLOAT32, ORB_SUM, 0}}},
        {1, {{"gather", 5, 16, ORB_FLOAT32, ORB_SUM, 0}, {"reduce", 2, 16, ORB_FLOAT32, ORB_SUM, 0}}},
        /* the root makes a broadcast: it sends to rank 1, the reduce's first rank, which sends
         * and never receives in its call */
        {1, {{"broadcast", 1, 16, ORB_FLOAT32, ORB_SUM, 0}, {"reduce", 2, 16, ORB_FLOAT32, ORB_SUM, 0}}},
    };
    const size_t ncases = sizeof cases / sizeof cases[0];
    float a[64 * 16], b[64 * 16];
    for (size_t i = 0; i < sizeof a / sizeof a[0]; i++)
        a[i] = (float)i;
    setenv("ORBIT_ALGO", "ring", 1);
    for (size_t i = 0; i < ncases; i++) {
        orb_comm_t c = init();
        if (nranks < 3) {
            orb_comm_destroy(c);
            unsetenv("ORBIT_ALGO");
            printf("lastvouch: a chain has a last rank apart from its first from 3 ranks on\n");
            return 77;
        }
        const int odd_rank = cases[i].odd ? 0 : nranks - 1;
        call_sig_t mine = cases[i].call[rank == odd_rank ? 0 : 1], odd = cases[i].call[0];
        if (mine.root < 0)
            mine.root = nranks - 1;
        if (odd.root < 0)
            odd.root = nranks - 1;
        const double t0 = now();
        orb_status_t st = call(c, &mine, a, b), first = st;
        if (st == ORB_OK)
            st = orb_barrier(c);
        const double took = now() - t0;
        const char *msg = orb_comm_last_error(c);
        char detail[2048], odd_text[160], other_text[128], want[200];
        side_text(&odd, odd_text, sizeof odd_text);
        side_text(&cases[i].call[1], other_text, sizeof other_text);
        snprintf(want, sizeof want, "rank %d %s", odd_rank, odd_text);
        snprintf(detail, sizeof detail, "case \"%s\" (rank %d) vs \"%s\": got %s%s after %.2f s: %s",
                 cases[i].call[0].name, odd_rank, cases[i].call[1].name, first == ORB_OK ? "OK, then " : "",
                 orb_status_name(st), took, msg);
        check(st == ORB_ERR_MISMATCH && took < 2.0, "the chain's last rank disagrees: mismatch", detail);
        check(strstr(msg, want) && strstr(msg, other_text) && strstr(msg, " but rank "),
              "the message names the last rank's call and another rank's", detail);
        orb_comm_destroy(c);
    }
    unsetenv("ORBIT_ALGO");
    return finish(2 * (int)ncases);
}

/* ---- vouch ----------------------------------------------------------------------------- */

static float vouch_value(int call, int r, size_t i) { return (float)(call * 10000 + r * 100 + (int)i); }

/* Two ranks over shared memory: in a rooted call whose data goes one way the receiver checks
 * the sender's signature on its pieces and sends no handshake back (collectives/exec.h,
 * ORB_SYNC_VOUCH). With more ranks the same calls run the handshake ring; the checks hold
 * there too. */
static int mode_vouch(void)
{
    enum { N = 16 };
    float a[N], all[8 * N];
    char detail[2048];

    /* 1. A slow root: the others wait past ORB_EXEC_UNMERGE_S (20 ms; a waiter that sleeps
     * looks at the clock when its doorbell rings or after 0.1 s, so 150 ms) for its piece and
     * send their signatures after all (LATE); the root meets those pieces in the calls that
     * next receive from them, a gather to it and an all-gather, and passes over them. */
    orb_comm_t c = init();
    const int last = nranks - 1; /* (known once init has run) */
    orb_status_t st = ORB_OK;
    int wrong = 0, k;
    for (k = 0; k < 3 && st == ORB_OK; k++) {
        for (size_t i = 0; i < N; i++)
            a[i] = rank == last ? vouch_value(k, last, i) : -1.0f;
        if (rank == last)
            usleep(150000);
        st = orb_broadcast(a, a, N, ORB_FLOAT32, last, c, NULL);
        for (size_t i = 0; st == ORB_OK && i < N; i++)
            wrong += a[i] != vouch_value(k, last, i);
    }
    for (size_t i = 0; i < N; i++)
        a[i] = vouch_value(k, rank, i);
    if (st == ORB_OK)
        st = orb_gather(a, all, N, ORB_FLOAT32, last, c, NULL);
    for (int r = 0; st == ORB_OK && rank == last && r < nranks && r < 8; r++)
        for (size_t i = 0; i < N; i++)
            wrong += all[(size_t)r * N + i] != vouch_value(k, r, i);
    if (st == ORB_OK)
        st = orb_allgather(a, all, N, ORB_FLOAT32, c, NULL);
    for (int r = 0; st == ORB_OK && r < nranks && r < 8; r++)
        for (size_t i = 0; i < N; i++)
            wrong += all[(size_t)r * N + i] != vouch_value(k, r, i);
    snprintf(detail, sizeof detail, "%s, %d values wrong: %s", orb_status_name(st), wrong, orb_comm_last_error(c));
    check(st == ORB_OK && wrong == 0, "a root 150 ms late three times, then a gather to it and an all-gather", detail);
    check(orb_comm_destroy(c) == ORB_OK, "destroy after the late root", orb_comm_last_error(NULL));

    /* 2. Ranks that each call themselves the root keep broadcasting: with two, both send and
     * neither receives, so each fills the other's FIFO (128 small slots), waits for room, and
     * names the piece of the other's it never took, well before ORBIT_TIMEOUT; with three, in
     * the tree (ORBIT_ALGO=tree) the window of 128 due handshakes (as many as a FIFO's small slots) stops
     * them; in a chain (ORBIT_ALGO=ring) rank 0, root of its own, gets no handshake to wait for:
     * its full FIFO stops it, and there it names the piece of its last rank's (rank 2 forwards
     * root 1's calls to it) that it never took. */
    const char *algos[2] = {nranks == 2 ? NULL : "tree", "ring"};
    for (int x = 0; x < (nranks == 2 ? 1 : 2); x++) {
        if (algos[x])
            setenv("ORBIT_ALGO", algos[x], 1);
        c = init();
        st = ORB_OK;
        const double t0 = now();
        for (k = 1; k <= 300 && st == ORB_OK; k++)
            st = orb_broadcast(a, a, N, ORB_FLOAT32, rank == 0 ? 0 : 1, c, NULL);
        const double took = now() - t0;
        const char *msg = orb_comm_last_error(c);
        char what[160];
        snprintf(detail, sizeof detail, "broadcast %d: %s after %.2f s: %s", k - 1, orb_status_name(st), took, msg);
        snprintf(what, sizeof what, "senders that disagree on the root: mismatch%s%s", algos[x] ? ", ORBIT_ALGO=" : "",
                 algos[x] ? algos[x] : "");
        check(st == ORB_ERR_MISMATCH && took < 2.0, what, detail);
        if (nranks == 2 || x == 1) /* (a chain: rank 2's first piece for rank 0 is the one found) */
            check(strstr(msg, "(count 16, float32, root 0)") && strstr(msg, "(count 16, float32, root 1)"),
                  "the message names both roots' broadcasts", detail);
        orb_comm_destroy(c);
        unsetenv("ORBIT_ALGO");
    }
    return finish(nranks == 2 ? 4 : 5);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test_robust mismatch|vmismatch|timeout|abort|stranger|tcpsettle|runahead|vouch|lastvouch|chaos SEED "
                        "[half]\n");
        return 2;
    }
    /* half: odd ranks plan every call (ORBIT_EAGER_BYTES=0), so that the eager path's pieces
     * meet the general executor's and the other way round */
    const char *r = getenv("RANK");
    if (argc > 2 && !strcmp(argv[argc - 1], "half") && r && atoi(r) % 2)
        setenv("ORBIT_EAGER_BYTES", "0", 1);
    if (!strcmp(argv[1], "mismatch"))
        return mode_mismatch();
    if (!strcmp(argv[1], "timeout"))
        return mode_timeout();
    if (!strcmp(argv[1], "vmismatch"))
        return mode_vmismatch();
    if (!strcmp(argv[1], "abort"))
        return mode_abort();
    if (!strcmp(argv[1], "stranger"))
        return mode_stranger();
    if (!strcmp(argv[1], "tcpsettle"))
        return mode_tcpsettle();
    if (!strcmp(argv[1], "runahead"))
        return mode_runahead();
    if (!strcmp(argv[1], "vouch"))
        return mode_vouch();
    if (!strcmp(argv[1], "lastvouch"))
        return mode_lastvouch();
    if (!strcmp(argv[1], "forever")) { /* for the launcher-kill test */
        orb_comm_t c = init();
        float x = 1, y;
        for (;;)
            if (orb_allreduce(&x, &y, 1, ORB_FLOAT32, ORB_SUM, c, NULL) != ORB_OK)
                return 1;
    }
    if (!strcmp(argv[1], "chaos") && argc > 2)
        return mode_chaos((unsigned)strtoul(argv[2], NULL, 10));
    fprintf(stderr, "test_robust: unknown mode %s\n", argv[1]);
    return 2;
}
