/* Bad input: every case returns the documented status with a message naming the argument,
 * and nothing hangs. Runs as one process (ranks as threads where two are needed). */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "orbit.h"

static int passed, failed;

static void expect(const char *what, orb_status_t got, orb_status_t want, const char *msg, const char *needle)
{
    int ok = got == want && (!needle || (msg && strstr(msg, needle)));
    if (ok)
        passed++;
    else {
        failed++;
        fprintf(stderr, "FAIL %s: got %s (\"%s\"), want %s mentioning \"%s\"\n", what, orb_status_name(got),
                msg ? msg : "", orb_status_name(want), needle ? needle : "");
    }
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct {
    orb_unique_id_t id;
    int nranks, rank;
    orb_status_t st;
    char err[1600];
    orb_comm_t comm;
} init_arg_t;

static void *init_thread(void *p)
{
    init_arg_t *a = p;
    a->st = orb_comm_init_rank(&a->comm, a->nranks, a->id, a->rank);
    snprintf(a->err, sizeof a->err, "%s", orb_comm_last_error(NULL));
    return NULL;
}

/* Two ranks as threads, for the tag and timeout cases. */
typedef struct {
    orb_comm_t comm;
    int rank;
    orb_status_t st[3];
    char msg[3][1600];
    float data[4];
} pair_arg_t;

static void *tags_thread(void *p)
{
    pair_arg_t *a = p;
    float mine[4] = {1.5f, -2.0f, 3.25f, 8.0f};
    if (a->rank == 0) {
        a->st[0] = orb_send_tagged(mine, 4, ORB_FLOAT32, 1, 5, a->comm, NULL);
        /* a small send is eager: it completes before rank 1 looks at it; the verdict reaches
         * this rank as rank 1's posted error, which its next call returns */
        a->st[1] = orb_send_tagged(mine, 4, ORB_FLOAT32, 1, 7, a->comm, NULL);
        if (a->st[1] == ORB_OK)
            a->st[1] = orb_barrier(a->comm);
    } else {
        a->st[0] = orb_recv_tagged(a->data, 4, ORB_FLOAT32, 0, 5, a->comm, NULL);
        a->st[1] = orb_recv_tagged(a->data, 4, ORB_FLOAT32, 0, 8, a->comm, NULL);
    }
    snprintf(a->msg[1], sizeof a->msg[1], "%s", orb_comm_last_error(a->comm));
    return NULL;
}

static void *timeout_thread(void *p)
{
    pair_arg_t *a = p;
    if (a->rank == 0) { /* rank 1 never sends: the recv must give up after the comm's timeout */
        a->st[0] = orb_comm_set_timeout(a->comm, 0.5);
        double t = 0;
        a->st[1] = orb_comm_get_timeout(a->comm, &t);
        a->data[0] = (float)t;
        a->st[2] = orb_recv(a->data + 1, 1, ORB_FLOAT32, 1, a->comm, NULL);
        snprintf(a->msg[2], sizeof a->msg[2], "%s", orb_comm_last_error(a->comm));
    }
    return NULL;
}

/* Start a two-rank communicator (threads), run fn on both ranks, leave results in a[]. */
static int run_pair(void *(*fn)(void *), pair_arg_t a[2])
{
    init_arg_t in[2];
    pthread_t t[2];
    orb_unique_id_t id;
    if (orb_get_unique_id(&id) != ORB_OK)
        return -1;
    for (int r = 0; r < 2; r++) {
        in[r] = (init_arg_t){.id = id, .nranks = 2, .rank = r};
        pthread_create(&t[r], NULL, init_thread, &in[r]);
    }
    for (int r = 0; r < 2; r++)
        pthread_join(t[r], NULL);
    if (in[0].st != ORB_OK || in[1].st != ORB_OK) {
        fprintf(stderr, "FAIL two-rank init: %s / %s\n", in[0].err, in[1].err);
        return -1;
    }
    for (int r = 0; r < 2; r++) {
        memset(&a[r], 0, sizeof a[r]);
        a[r].comm = in[r].comm;
        a[r].rank = r;
        pthread_create(&t[r], NULL, fn, &a[r]);
    }
    for (int r = 0; r < 2; r++)
        pthread_join(t[r], NULL);
    for (int r = 0; r < 2; r++)
        orb_comm_destroy(a[r].comm);
    return 0;
}

static void tags_and_timeout(void)
{
    pair_arg_t a[2];
    if (run_pair(tags_thread, a) == 0) {
        expect("tagged send", a[0].st[0], ORB_OK, NULL, NULL);
        expect("tagged recv", a[1].st[0], ORB_OK, NULL, NULL);
        if (a[1].data[0] != 1.5f || a[1].data[3] != 8.0f) {
            failed++;
            fprintf(stderr, "FAIL tagged recv data: %g %g\n", a[1].data[0], a[1].data[3]);
        }
        /* each side names the other's tag */
        expect("tag mismatch, sender", a[0].st[1], ORB_ERR_MISMATCH, a[0].msg[1], "tag 8");
        expect("tag mismatch, receiver", a[1].st[1], ORB_ERR_MISMATCH, a[1].msg[1], "tag 7");
    } else
        failed++;
    if (run_pair(timeout_thread, a) == 0) {
        expect("set_timeout", a[0].st[0], ORB_OK, NULL, NULL);
        expect("get_timeout", a[0].st[1], ORB_OK, NULL, NULL);
        if (a[0].data[0] != 0.5f) {
            failed++;
            fprintf(stderr, "FAIL get_timeout gave %g, want 0.5\n", a[0].data[0]);
        }
        expect("recv past the comm's timeout", a[0].st[2], ORB_ERR_TIMEOUT, a[0].msg[2], "rank 1");
    } else
        failed++;
}

int main(void)
{
    orb_comm_t comm = NULL;
    orb_unique_id_t id;
    memset(&id, 0, sizeof id);

    /* ---- init arguments ---- */
    expect("init nranks=0", orb_comm_init_rank(&comm, 0, id, 0), ORB_ERR_INVALID_ARG, orb_comm_last_error(NULL), "nranks");
    expect("init nranks=-3", orb_comm_init_rank(&comm, -3, id, 0), ORB_ERR_INVALID_ARG, orb_comm_last_error(NULL), "nranks");
    expect("init rank=-1", orb_comm_init_rank(&comm, 2, id, -1), ORB_ERR_INVALID_ARG, orb_comm_last_error(NULL), "rank");
    expect("init rank=nranks", orb_comm_init_rank(&comm, 2, id, 2), ORB_ERR_INVALID_ARG, orb_comm_last_error(NULL), "rank=2");
    expect("init NULL comm", orb_comm_init_rank(NULL, 1, id, 0), ORB_ERR_INVALID_ARG, orb_comm_last_error(NULL), "comm");
    expect("init bad id", orb_comm_init_rank(&comm, 1, id, 0), ORB_ERR_INVALID_ARG, orb_comm_last_error(NULL), "unique id");
    expect("unique id NULL", orb_get_unique_id(NULL), ORB_ERR_INVALID_ARG, orb_comm_last_error(NULL), "id");

    /* ---- a rank that never arrives: rank 0 gives up after ORBIT_INIT_TIMEOUT, naming it ---- */
    setenv("ORBIT_INIT_TIMEOUT", "2", 1);
    orb_get_unique_id(&id);
    double t0 = now();
    orb_status_t st = orb_comm_init_rank(&comm, 3, id, 0);
    double took = now() - t0;
    expect("missing ranks", st, ORB_ERR_TIMEOUT, orb_comm_last_error(NULL), "1, 2");
    if (took > 10) {
        failed++;
        fprintf(stderr, "FAIL missing ranks: took %.1f s with ORBIT_INIT_TIMEOUT=2\n", took);
    }

    /* ---- wrong secret: rank 1 is turned away, rank 0 times out naming it ---- */
    init_arg_t a0 = {.nranks = 2, .rank = 0}, a1 = {.nranks = 2, .rank = 1};
    orb_get_unique_id(&a0.id);
    a1.id = a0.id;
    a1.id.internal[40] ^= 0x5a; /* the secret sits after magic/version/family/port/addr */
    pthread_t t_a0, t_a1;
    pthread_create(&t_a0, NULL, init_thread, &a0);
    pthread_create(&t_a1, NULL, init_thread, &a1);
    pthread_join(t_a0, NULL);
    pthread_join(t_a1, NULL);
    expect("wrong secret (rank 0)", a0.st, ORB_ERR_TIMEOUT, a0.err, "1");
    expect("wrong secret (rank 1)", a1.st, ORB_ERR_PROTOCOL, a1.err, "refused");
    if (a0.st == ORB_OK)
        orb_comm_destroy(a0.comm);
    if (a1.st == ORB_OK)
        orb_comm_destroy(a1.comm);

    /* ---- call arguments on a real one-rank communicator ---- */
    setenv("ORBIT_INIT_TIMEOUT", "30", 1);
    orb_get_unique_id(&id);
    st = orb_comm_init_rank(&comm, 1, id, 0);
    expect("init 1 rank", st, ORB_OK, NULL, NULL);
    if (st != ORB_OK) {
        printf("%d passed, %d failed\n", passed, failed);
        return 1;
    }
    float buf[16] = {0}, out[16];
    expect("NULL sendbuf", orb_allreduce(NULL, out, 4, ORB_FLOAT32, ORB_SUM, comm, NULL), ORB_ERR_INVALID_ARG,
           orb_comm_last_error(comm), "sendbuf");
    expect("NULL recvbuf", orb_allreduce(buf, NULL, 4, ORB_FLOAT32, ORB_SUM, comm, NULL), ORB_ERR_INVALID_ARG,
           orb_comm_last_error(comm), "recvbuf");
    expect("NULL with count 0 is fine", orb_allreduce(NULL, NULL, 0, ORB_FLOAT32, ORB_SUM, comm, NULL), ORB_OK, NULL,
           NULL);
    expect("unknown dtype", orb_allreduce(buf, out, 4, (orb_dtype_t)99, ORB_SUM, comm, NULL), ORB_ERR_INVALID_ARG,
           orb_comm_last_error(comm), "dtype=99");
    expect("unknown op", orb_allreduce(buf, out, 4, ORB_FLOAT32, (orb_op_t)-1, comm, NULL), ORB_ERR_INVALID_ARG,
           orb_comm_last_error(comm), "op=-1");
    expect("count overflow", orb_allreduce(buf, out, SIZE_MAX / 2, ORB_FLOAT32, ORB_SUM, comm, NULL),
           ORB_ERR_INVALID_ARG, orb_comm_last_error(comm), "count");
    expect("partial overlap", orb_allreduce(buf, buf + 1, 4, ORB_FLOAT32, ORB_SUM, comm, NULL), ORB_ERR_INVALID_ARG,
           orb_comm_last_error(comm), "overlap");
    expect("root out of range", orb_broadcast(buf, out, 4, ORB_FLOAT32, 1, comm, NULL), ORB_ERR_INVALID_ARG,
           orb_comm_last_error(comm), "root=1");
    expect("negative root", orb_reduce(buf, out, 4, ORB_FLOAT32, ORB_SUM, -1, comm, NULL), ORB_ERR_INVALID_ARG,
           orb_comm_last_error(comm), "root=-1");
    expect("recvbuf NULL on root", orb_reduce(buf, NULL, 4, ORB_FLOAT32, ORB_SUM, 0, comm, NULL), ORB_ERR_INVALID_ARG,
           orb_comm_last_error(comm), "root");
    expect("gather recvbuf NULL on root", orb_gather(buf, NULL, 4, ORB_FLOAT32, 0, comm, NULL), ORB_ERR_INVALID_ARG,
           orb_comm_last_error(comm), "recvbuf");
    expect("send to self", orb_send(buf, 4, ORB_FLOAT32, 0, comm, NULL), ORB_ERR_INVALID_ARG,
           orb_comm_last_error(comm), "peer=0");
    expect("recv from out of range", orb_recv(buf, 4, ORB_FLOAT32, 5, comm, NULL), ORB_ERR_INVALID_ARG,
           orb_comm_last_error(comm), "peer=5");
    expect("group end without start", orb_group_end(), ORB_ERR_INVALID_ARG, orb_comm_last_error(NULL),
           "orb_group_start");
    int dummy_stream;
    /* host buffers with a stream: no device path here (UNSUPPORTED), or pageable memory refused
     * by the device path on a GPU machine (INVALID_ARG); either way the message says "stream" */
    st = orb_allreduce(buf, out, 4, ORB_FLOAT32, ORB_SUM, comm, &dummy_stream);
    expect("stream with host buffers", st == ORB_ERR_INVALID_ARG ? ORB_ERR_UNSUPPORTED : st, ORB_ERR_UNSUPPORTED,
           orb_comm_last_error(comm), "stream");
    /* the communicator still works after all that */
    for (int i = 0; i < 16; i++)
        buf[i] = (float)i;
    st = orb_allreduce(buf, out, 16, ORB_FLOAT32, ORB_AVG, comm, NULL);
    expect("valid call after errors", st, ORB_OK, NULL, NULL);
    if (st == ORB_OK && (out[3] != 3.0f || out[15] != 15.0f)) {
        failed++;
        fprintf(stderr, "FAIL one-rank avg: out[3]=%g out[15]=%g\n", out[3], out[15]);
    }
    int r = -1;
    expect("rank NULL out", orb_comm_rank(comm, NULL), ORB_ERR_INVALID_ARG, orb_comm_last_error(NULL), "rank");
    expect("comm NULL", orb_allreduce(buf, out, 4, ORB_FLOAT32, ORB_SUM, NULL, NULL), ORB_ERR_INVALID_ARG,
           orb_comm_last_error(NULL), "comm is NULL");
    orb_comm_destroy(comm);
    expect("use after destroy", orb_comm_rank(comm, &r), ORB_ERR_INVALID_ARG, orb_comm_last_error(NULL), "destroy");
    expect("destroy twice", orb_comm_destroy(comm), ORB_ERR_INVALID_ARG, orb_comm_last_error(NULL), "destroy");
    tags_and_timeout();
    expect("strerror", ORB_OK, ORB_OK, orb_strerror(ORB_ERR_TIMEOUT), "timed out");
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
