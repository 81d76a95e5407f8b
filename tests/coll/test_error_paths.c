/* Every public function of orbit.h, driven with a bad argument: the exact status, and a message
 * where orb_comm_last_error finds it (the communicator's, or the thread's for calls without
 * one) that names the function and, after it, the argument. Before each case a message from
 * another function is left on the thread and on the communicator, so a path that sets none
 * fails here instead of passing on a stale text. One process; one-rank communicators. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "orbit.h"

static int passed, failed;
static orb_comm_t live; /* a working communicator, poisoned before each case */
static float one[1];

static void poison(const char *fn)
{
    if (strcmp(fn, "orb_group_end"))
        orb_group_end(); /* "orb_group_end: no matching orb_group_start ..." */
    else
        orb_comm_size(NULL, NULL);
    if (live && strcmp(fn, "orb_send"))
        orb_send(one, 1, ORB_FLOAT32, 0, live, NULL); /* "orb_send: rank 0: peer=0 is this rank ..." */
    else if (live)
        orb_recv(one, 1, ORB_FLOAT32, 0, live, NULL);
}

/* want: one status, or two where the build or the machine decides (want2 != ORB_OK). */
static void check(const char *what, orb_status_t got, orb_status_t want, orb_status_t want2, const char *msg,
                  const char *fn, const char *arg)
{
    const char *at = msg ? strstr(msg, fn) : NULL;
    int ok = (got == want || (want2 != ORB_OK && got == want2)) && at && strstr(at + strlen(fn), arg);
    if (ok) {
        passed++;
        return;
    }
    failed++;
    fprintf(stderr, "FAIL %s: got %s, want %s; message \"%s\" must name %s and then \"%s\"\n", what,
            orb_status_name(got), orb_status_name(want), msg ? msg : "(NULL)", fn, arg);
}

/* msgcomm: whose last error holds the text (NULL: the thread's). */
#define CASE2(what, want, want2, call, msgcomm, fn, arg)                                       \
    do {                                                                                      \
        poison(fn);                                                                           \
        orb_status_t st_ = (call);                                                            \
        check(what, st_, want, want2, orb_comm_last_error(msgcomm), fn, arg);                 \
    } while (0)
#define CASE(what, want, call, msgcomm, fn, arg) CASE2(what, want, ORB_OK, call, msgcomm, fn, arg)
#define BAD ORB_ERR_INVALID_ARG

static orb_comm_t one_rank(void)
{
    orb_unique_id_t id;
    orb_comm_t c = NULL;
    if (orb_get_unique_id(&id) != ORB_OK || orb_comm_init_rank(&c, 1, id, 0) != ORB_OK) {
        fprintf(stderr, "FAIL: no one-rank communicator: %s\n", orb_comm_last_error(NULL));
        exit(1);
    }
    return c;
}

static void ids(void)
{
    orb_unique_id_t id, zero;
    memset(&zero, 0, sizeof zero);
    char text[ORB_UNIQUE_ID_STR_BYTES], zeros[ORB_UNIQUE_ID_STR_BYTES];
    memset(zeros, '0', sizeof zeros - 1);
    zeros[sizeof zeros - 1] = 0;
    CASE("get_unique_id id NULL", BAD, orb_get_unique_id(NULL), NULL, "orb_get_unique_id", "id");
    CASE("to_string id NULL", BAD, orb_unique_id_to_string(NULL, text, sizeof text), NULL, "orb_unique_id_to_string",
         "id");
    CASE("to_string out NULL", BAD, orb_unique_id_to_string(&zero, NULL, sizeof text), NULL,
         "orb_unique_id_to_string", "out");
    CASE("to_string outlen short", BAD, orb_unique_id_to_string(&zero, text, 10), NULL, "orb_unique_id_to_string",
         "outlen=10");
    CASE("from_string str NULL", BAD, orb_unique_id_from_string(NULL, &id), NULL, "orb_unique_id_from_string", "str");
    CASE("from_string id NULL", BAD, orb_unique_id_from_string(zeros, NULL), NULL, "orb_unique_id_from_string", "id");
    CASE("from_string not hex", BAD, orb_unique_id_from_string("xyz", &id), NULL, "orb_unique_id_from_string",
         "str");
    CASE("from_string not an id", BAD, orb_unique_id_from_string(zeros, &id), NULL, "orb_unique_id_from_string",
         "str");
}

static void inits(void)
{
    orb_comm_t c = NULL;
    orb_unique_id_t zero;
    memset(&zero, 0, sizeof zero);
    CASE("init_rank comm NULL", BAD, orb_comm_init_rank(NULL, 1, zero, 0), NULL, "orb_comm_init_rank", "comm");
    CASE("init_rank nranks=0", BAD, orb_comm_init_rank(&c, 0, zero, 0), NULL, "orb_comm_init_rank", "nranks=0");
    CASE("init_rank nranks too big", BAD, orb_comm_init_rank(&c, 1 << 20, zero, 0), NULL, "orb_comm_init_rank",
         "nranks=1048576");
    CASE("init_rank rank=-1", BAD, orb_comm_init_rank(&c, 2, zero, -1), NULL, "orb_comm_init_rank", "rank=-1");
    CASE("init_rank rank=nranks", BAD, orb_comm_init_rank(&c, 2, zero, 2), NULL, "orb_comm_init_rank", "rank=2");
    CASE("init_rank bad id", BAD, orb_comm_init_rank(&c, 1, zero, 0), NULL, "orb_comm_init_rank", "id");

    static const char *const launcher[] = {"RANK", "WORLD_SIZE", "LOCAL_RANK", "OMPI_COMM_WORLD_RANK",
                                           "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
                                           "OMPI_COMM_WORLD_LOCAL_SIZE", "PMIX_RANK", "SLURM_PROCID", "SLURM_NTASKS",
                                           "SLURM_LOCALID", "SLURM_NNODES", "MASTER_ADDR", "MASTER_PORT",
                                           "ORBIT_SECRET", NULL};
    for (const char *const *v = launcher; *v; v++)
        unsetenv(*v);
    CASE("init_env comm NULL", BAD, orb_comm_init_env(NULL), NULL, "orb_comm_init_env", "comm");
    CASE("init_env no launcher", BAD, orb_comm_init_env(&c), NULL, "orb_comm_init_env", "RANK");
    setenv("RANK", "0", 1);
    setenv("WORLD_SIZE", "0", 1);
    CASE("init_env WORLD_SIZE=0", BAD, orb_comm_init_env(&c), NULL, "orb_comm_init_env", "WORLD_SIZE");
    setenv("WORLD_SIZE", "2", 1);
    setenv("RANK", "2", 1);
    CASE("init_env RANK=2 of 2", BAD, orb_comm_init_env(&c), NULL, "orb_comm_init_env", "RANK");
    setenv("RANK", "0", 1);
    CASE("init_env 2 ranks, no MASTER_ADDR", BAD, orb_comm_init_env(&c), NULL, "orb_comm_init_env", "MASTER_ADDR");
    setenv("WORLD_SIZE", "1", 1);
    setenv("MASTER_PORT", "99999", 1);
    CASE("init_env MASTER_PORT=99999", BAD, orb_comm_init_env(&c), NULL, "orb_comm_init_env", "MASTER_PORT");
    unsetenv("MASTER_PORT");
    setenv("ORBIT_SECRET", "abc", 1);
    CASE("init_env ORBIT_SECRET=abc", BAD, orb_comm_init_env(&c), NULL, "orb_comm_init_env", "ORBIT_SECRET");
    for (const char *const *v = launcher; *v; v++)
        unsetenv(*v);

    orb_comm_t comms[2];
    CASE("init_all comms NULL", BAD, orb_comm_init_all(NULL, 2, NULL), NULL, "orb_comm_init_all", "comms");
    CASE("init_all ndev=0", BAD, orb_comm_init_all(comms, 0, NULL), NULL, "orb_comm_init_all", "ndev=0");
    CASE("init_all ndev=257", BAD, orb_comm_init_all(comms, 257, NULL), NULL, "orb_comm_init_all", "ndev=257");
    /* A device that no machine has: a build without CUDA refuses any device; with CUDA, a
     * machine without a GPU has no device (UNSUPPORTED) and one with GPUs not this one. */
    const int devices[1] = {1000};
#ifdef ORB_TEST_CUDA_BUILD
    CASE2("init_all devices={1000}", ORB_ERR_UNSUPPORTED, BAD, orb_comm_init_all(comms, 1, devices), NULL,
          "orb_comm_init_all", "devices[0]=1000");
#else
    CASE("init_all devices={1000}", ORB_ERR_UNSUPPORTED, orb_comm_init_all(comms, 1, devices), NULL,
         "orb_comm_init_all", "devices[0]=1000");
#endif
}

/* Every call that takes a communicator, given h (NULL, destroyed or garbage). */
static void handles(orb_comm_t h, const char *kind, const char *arg)
{
    char what[96];
    float b[4] = {0};
    int r;
    orb_status_t a;
#define H(fn, call)                                                                        \
    do {                                                                                   \
        snprintf(what, sizeof what, "%s comm %s", fn, kind);                               \
        CASE(what, BAD, call, h, fn, arg);                                                 \
    } while (0)
    H("orb_comm_destroy", orb_comm_destroy(h));
    H("orb_comm_rank", orb_comm_rank(h, &r));
    H("orb_comm_size", orb_comm_size(h, &r));
    H("orb_comm_get_async_error", orb_comm_get_async_error(h, &a));
    H("orb_allreduce", orb_allreduce(b, b, 4, ORB_FLOAT32, ORB_SUM, h, NULL));
    H("orb_broadcast", orb_broadcast(b, b, 4, ORB_FLOAT32, 0, h, NULL));
    H("orb_reduce", orb_reduce(b, b, 4, ORB_FLOAT32, ORB_SUM, 0, h, NULL));
    H("orb_gather", orb_gather(b, b, 1, ORB_FLOAT32, 0, h, NULL));
    H("orb_allgather", orb_allgather(b, b, 1, ORB_FLOAT32, h, NULL));
    H("orb_reduce_scatter", orb_reduce_scatter(b, b, 1, ORB_FLOAT32, ORB_SUM, h, NULL));
    H("orb_alltoall", orb_alltoall(b, b, 1, ORB_FLOAT32, h, NULL));
    size_t v1[1] = {1}, v0[1] = {0};
    H("orb_alltoallv", orb_alltoallv(b, v1, v0, b + 1, v1, v0, ORB_FLOAT32, h, NULL));
    H("orb_scatter", orb_scatter(b, b, 1, ORB_FLOAT32, 0, h, NULL));
    H("orb_barrier", orb_barrier(h));
    H("orb_send", orb_send(b, 4, ORB_FLOAT32, 0, h, NULL));
    H("orb_recv", orb_recv(b, 4, ORB_FLOAT32, 0, h, NULL));
    H("orb_send", orb_send_tagged(b, 4, ORB_FLOAT32, 0, 7, h, NULL));
    H("orb_recv", orb_recv_tagged(b, 4, ORB_FLOAT32, 0, 7, h, NULL));
    double secs;
    H("orb_comm_set_timeout", orb_comm_set_timeout(h, 1.0));
    H("orb_comm_get_timeout", orb_comm_get_timeout(h, &secs));
    orb_comm_t child;
    H("orb_comm_split", orb_comm_split(h, 0, 0, &child));
    H("orb_comm_dup", orb_comm_dup(h, &child));
#undef H
    if (!orb_comm_last_error(h)) {
        failed++;
        fprintf(stderr, "FAIL orb_comm_last_error(comm %s) is NULL\n", kind);
    }
}

/* Bad arguments on the live one-rank communicator: its own last error holds the text. */
static void calls(void)
{
    float b[8] = {0}, o[8];
    const orb_dtype_t badt = ORB_NUM_DTYPES;
    const orb_op_t bado = (orb_op_t)-1;
    const size_t huge = SIZE_MAX / 2;
    orb_comm_t c = live;
    CASE("rank out NULL", BAD, orb_comm_rank(c, NULL), NULL, "orb_comm_rank", "rank");
    CASE("size out NULL", BAD, orb_comm_size(c, NULL), NULL, "orb_comm_size", "size");
    CASE("async_error out NULL", BAD, orb_comm_get_async_error(c, NULL), NULL, "orb_comm_get_async_error",
         "async_error");
    CASE("get_timeout out NULL", BAD, orb_comm_get_timeout(c, NULL), NULL, "orb_comm_get_timeout", "seconds");
    CASE("set_timeout NaN", BAD, orb_comm_set_timeout(c, 0.0 / 0.0), NULL, "orb_comm_set_timeout", "NaN");

    CASE("allreduce sendbuf NULL", BAD, orb_allreduce(NULL, o, 4, ORB_FLOAT32, ORB_SUM, c, NULL), c, "orb_allreduce",
         "sendbuf");
    CASE("allreduce recvbuf NULL", BAD, orb_allreduce(b, NULL, 4, ORB_FLOAT32, ORB_SUM, c, NULL), c, "orb_allreduce",
         "recvbuf");
    CASE("allreduce dtype", BAD, orb_allreduce(b, o, 4, badt, ORB_SUM, c, NULL), c, "orb_allreduce", "dtype=");
    CASE("allreduce op", BAD, orb_allreduce(b, o, 4, ORB_FLOAT32, bado, c, NULL), c, "orb_allreduce", "op=-1");
    CASE("allreduce count", BAD, orb_allreduce(b, o, huge, ORB_FLOAT32, ORB_SUM, c, NULL), c, "orb_allreduce",
         "count=");
    CASE("broadcast root=1", BAD, orb_broadcast(b, o, 4, ORB_FLOAT32, 1, c, NULL), c, "orb_broadcast", "root=1");
    CASE("broadcast root=-1", BAD, orb_broadcast(b, o, 4, ORB_FLOAT32, -1, c, NULL), c, "orb_broadcast", "root=-1");
    CASE("broadcast dtype", BAD, orb_broadcast(b, o, 4, badt, 0, c, NULL), c, "orb_broadcast", "dtype=");
    CASE("broadcast recvbuf NULL", BAD, orb_broadcast(b, NULL, 4, ORB_FLOAT32, 0, c, NULL), c, "orb_broadcast",
         "recvbuf");
    CASE("reduce root=1", BAD, orb_reduce(b, o, 4, ORB_FLOAT32, ORB_SUM, 1, c, NULL), c, "orb_reduce", "root=1");
    CASE("reduce op", BAD, orb_reduce(b, o, 4, ORB_FLOAT32, bado, 0, c, NULL), c, "orb_reduce", "op=-1");
    CASE("reduce dtype", BAD, orb_reduce(b, o, 4, badt, ORB_SUM, 0, c, NULL), c, "orb_reduce", "dtype=");
    CASE("reduce sendbuf NULL", BAD, orb_reduce(NULL, o, 4, ORB_FLOAT32, ORB_SUM, 0, c, NULL), c, "orb_reduce",
         "sendbuf");
    CASE("gather root=1", BAD, orb_gather(b, o, 4, ORB_FLOAT32, 1, c, NULL), c, "orb_gather", "root=1");
    CASE("gather dtype", BAD, orb_gather(b, o, 4, badt, 0, c, NULL), c, "orb_gather", "dtype=");
    CASE("gather recvbuf NULL", BAD, orb_gather(b, NULL, 4, ORB_FLOAT32, 0, c, NULL), c, "orb_gather", "recvbuf");
    CASE("allgather sendbuf NULL", BAD, orb_allgather(NULL, o, 4, ORB_FLOAT32, c, NULL), c, "orb_allgather",
         "sendbuf");
    CASE("allgather recvbuf NULL", BAD, orb_allgather(b, NULL, 4, ORB_FLOAT32, c, NULL), c, "orb_allgather",
         "recvbuf");
    CASE("allgather dtype", BAD, orb_allgather(b, o, 4, badt, c, NULL), c, "orb_allgather", "dtype=");
    CASE("allgather count", BAD, orb_allgather(b, o, huge, ORB_FLOAT32, c, NULL), c, "orb_allgather", "count=");
    CASE("reduce_scatter sendbuf NULL", BAD, orb_reduce_scatter(NULL, o, 4, ORB_FLOAT32, ORB_SUM, c, NULL), c,
         "orb_reduce_scatter", "sendbuf");
    CASE("reduce_scatter recvbuf NULL", BAD, orb_reduce_scatter(b, NULL, 4, ORB_FLOAT32, ORB_SUM, c, NULL), c,
         "orb_reduce_scatter", "recvbuf");
    CASE("reduce_scatter op", BAD, orb_reduce_scatter(b, o, 4, ORB_FLOAT32, bado, c, NULL), c, "orb_reduce_scatter",
         "op=-1");
    CASE("reduce_scatter dtype", BAD, orb_reduce_scatter(b, o, 4, badt, ORB_SUM, c, NULL), c, "orb_reduce_scatter",
         "dtype=");
    CASE("alltoall sendbuf NULL", BAD, orb_alltoall(NULL, o, 4, ORB_FLOAT32, c, NULL), c, "orb_alltoall", "sendbuf");
    CASE("alltoall recvbuf NULL", BAD, orb_alltoall(b, NULL, 4, ORB_FLOAT32, c, NULL), c, "orb_alltoall", "recvbuf");
    CASE("alltoall dtype", BAD, orb_alltoall(b, o, 4, badt, c, NULL), c, "orb_alltoall", "dtype=");
    CASE("alltoall count", BAD, orb_alltoall(b, o, huge, ORB_FLOAT32, c, NULL), c, "orb_alltoall", "count=");
    CASE("alltoall overlap", BAD, orb_alltoall(b, b + 1, 4, ORB_FLOAT32, c, NULL), c, "orb_alltoall", "overlap");
    size_t cnt[1] = {4}, dsp[1] = {0}, big[1] = {SIZE_MAX - 2}, three[1] = {3};
    CASE("alltoallv sendcounts NULL", BAD, orb_alltoallv(b, NULL, dsp, o, cnt, dsp, ORB_FLOAT32, c, NULL), c,
         "orb_alltoallv", "sendcounts is NULL");
    CASE("alltoallv rdispls NULL", BAD, orb_alltoallv(b, cnt, dsp, o, cnt, NULL, ORB_FLOAT32, c, NULL), c,
         "orb_alltoallv", "rdispls is NULL");
    CASE("alltoallv own block", BAD, orb_alltoallv(b, cnt, dsp, o, three, dsp, ORB_FLOAT32, c, NULL), c,
         "orb_alltoallv", "sendcounts[0]=4 but recvcounts[0]=3");
    CASE("alltoallv sdispls overflow", BAD, orb_alltoallv(b, cnt, big, o, cnt, dsp, ORB_FLOAT32, c, NULL), c,
         "orb_alltoallv", "sdispls[0]=");
    CASE("alltoallv in place", BAD, orb_alltoallv(b, cnt, dsp, b, cnt, dsp, ORB_FLOAT32, c, NULL), c,
         "orb_alltoallv", "no in-place form");
    CASE("alltoallv recvbuf NULL", BAD, orb_alltoallv(b, cnt, dsp, NULL, cnt, dsp, ORB_FLOAT32, c, NULL), c,
         "orb_alltoallv", "recvbuf is NULL");
    CASE("alltoallv dtype", BAD, orb_alltoallv(b, cnt, dsp, o, cnt, dsp, badt, c, NULL), c, "orb_alltoallv",
         "dtype=");
    CASE("scatter root=1", BAD, orb_scatter(b, o, 4, ORB_FLOAT32, 1, c, NULL), c, "orb_scatter", "root=1");
    CASE("scatter sendbuf NULL at the root", BAD, orb_scatter(NULL, o, 4, ORB_FLOAT32, 0, c, NULL), c,
         "orb_scatter", "sendbuf is NULL");
    CASE("scatter recvbuf NULL", BAD, orb_scatter(b, NULL, 4, ORB_FLOAT32, 0, c, NULL), c, "orb_scatter",
         "recvbuf");
    CASE("send to self", BAD, orb_send(b, 4, ORB_FLOAT32, 0, c, NULL), c, "orb_send", "peer=0");
    CASE("send peer=1", BAD, orb_send(b, 4, ORB_FLOAT32, 1, c, NULL), c, "orb_send", "peer=1");
    CASE("send peer=-1", BAD, orb_send(b, 4, ORB_FLOAT32, -1, c, NULL), c, "orb_send", "peer=-1");
    CASE("send dtype", BAD, orb_send(b, 4, badt, 0, c, NULL), c, "orb_send", "dtype=");
    CASE("recv peer=5", BAD, orb_recv(b, 4, ORB_FLOAT32, 5, c, NULL), c, "orb_recv", "peer=5");
    CASE("recv dtype", BAD, orb_recv(b, 4, badt, 0, c, NULL), c, "orb_recv", "dtype=");
    orb_comm_t child;
    CASE("split newcomm NULL", BAD, orb_comm_split(c, 0, 0, NULL), c, "orb_comm_split", "newcomm");
    CASE("split color=-2", BAD, orb_comm_split(c, -2, 0, &child), c, "orb_comm_split", "color=-2");
    CASE("dup newcomm NULL", BAD, orb_comm_dup(c, NULL), c, "orb_comm_dup", "newcomm");
    CASE("group_end without start", BAD, orb_group_end(), NULL, "orb_group_end", "orb_group_start");
    CASE("abort comm NULL", BAD, orb_comm_abort(NULL), NULL, "orb_comm_abort", "comm");
}

int main(void)
{
    setenv("ORBIT_INIT_TIMEOUT", "30", 1);
    ids();
    inits();
    live = one_rank();
    orb_comm_t dead = one_rank();
    orb_comm_destroy(dead);
    handles(NULL, "NULL", "comm");
    handles(dead, "destroyed", "comm");
    /* Memory that is not a communicator (readable, so that orb_comm_abort's check of the
     * magic number reads something). */
    static _Alignas(64) unsigned char garbage[4096];
    orb_comm_t junk = (orb_comm_t)(void *)garbage;
    handles(junk, "garbage", "comm");
    CASE("abort comm garbage", BAD, orb_comm_abort(junk), NULL, "orb_comm_abort", "comm");
    calls();
    /* still a working communicator after every refusal */
    float in[4] = {1, 2, 3, 4}, out[4] = {0};
    orb_status_t st = orb_allreduce(in, out, 4, ORB_FLOAT32, ORB_SUM, live, NULL);
    if (st != ORB_OK || out[3] != 4.0f) {
        failed++;
        fprintf(stderr, "FAIL allreduce after the bad calls: %s, out[3]=%g\n", orb_status_name(st), out[3]);
    }
    orb_comm_destroy(live);
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
