/* One rank of an ib setup case (ib_cases.sh runs two under different settings):
 *   test_ib_init ok             init succeeds; an all-reduce (sum, int32, 65539 elements of
 *                               rank- and position-dependent values) and a broadcast of 1 MiB
 *                               from rank 1 match their closed forms
 *   test_ib_init fail TEXT...   init fails, and its message contains every TEXT
 *   test_ib_init lose           rank 1 exits without a word after init; rank 0's all-reduce
 *                               fails with ORB_ERR_PEER_LOST naming rank 1, and its destroy
 *                               then returns within 4 s (it must not wait for writes to the
 *                               dead peer: the drain of a healthy destroy waits up to 5 s)
 * Each rank judges only itself: prints "rank R: ok" or "rank R: FAIL ..." and exits 0 or 1. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "orbit.h"

static int rank = -1;

static int fail(const char *fmt, const char *a, const char *b)
{
    printf("rank %d: FAIL ", rank);
    printf(fmt, a, b);
    printf("\n");
    return 1;
}

static int run_ok(orb_comm_t c)
{
    int nranks = 0;
    orb_comm_size(c, &nranks);
    enum { N = 65539, B = 1 << 20 };
    int32_t *x = malloc(N * sizeof *x);
    uint8_t *b = malloc(B);
    if (!x || !b)
        return fail("%s%s", "out of memory", "");
    for (int i = 0; i < N; i++)
        x[i] = (rank + 1) * 1000 + i % 977;
    orb_status_t st = orb_allreduce(x, x, N, ORB_INT32, ORB_SUM, c, NULL);
    if (st != ORB_OK)
        return fail("all-reduce: %s: %s", orb_status_name(st), orb_comm_last_error(c));
    for (int i = 0; i < N; i++) {
        int32_t want = 1000 * nranks * (nranks + 1) / 2 + nranks * (i % 977);
        if (x[i] != want) {
            char at[64];
            snprintf(at, sizeof at, "element %d is %d, want %d", i, x[i], want);
            return fail("all-reduce: %s%s", at, "");
        }
    }
    for (int i = 0; i < B; i++)
        b[i] = rank == 1 ? (uint8_t)(i * 7 + 3) : 0;
    st = orb_broadcast(b, b, B, ORB_UINT8, 1, c, NULL);
    if (st != ORB_OK)
        return fail("broadcast: %s: %s", orb_status_name(st), orb_comm_last_error(c));
    for (int i = 0; i < B; i++)
        if (b[i] != (uint8_t)(i * 7 + 3))
            return fail("broadcast: byte %s differs%s", "", "");
    free(x);
    free(b);
    st = orb_comm_destroy(c);
    if (st != ORB_OK)
        return fail("destroy: %s%s", orb_status_name(st), "");
    printf("rank %d: ok\n", rank);
    return 0;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int run_lose(orb_comm_t c)
{
    if (rank != 0) {
        printf("rank %d: leaving without a word\n", rank);
        fflush(stdout);
        _exit(0);
    }
    sleep(1); /* let it go first */
    int32_t x[256] = {0};
    double t0 = now();
    orb_status_t st = orb_allreduce(x, x, 256, ORB_INT32, ORB_SUM, c, NULL);
    double lost_s = now() - t0;
    char buf[512];
    snprintf(buf, sizeof buf, "%s", orb_comm_last_error(c));
    if (st != ORB_ERR_PEER_LOST || !strstr(buf, "rank 1 "))
        return fail("all-reduce with rank 1 gone: %s: %s", orb_status_name(st), buf);
    t0 = now();
    orb_comm_destroy(c);
    double destroy_s = now() - t0;
    if (destroy_s > 4.0) {
        snprintf(buf, sizeof buf, "%.2f s", destroy_s);
        return fail("destroy after the loss took %s%s", buf, "");
    }
    printf("rank 0: ok (lost after %.2f s, destroy %.3f s)\n", lost_s, destroy_s);
    return 0;
}

int main(int argc, char **argv)
{
    const char *r = getenv("RANK");
    rank = r ? atoi(r) : -1;
    if (argc < 2 || (strcmp(argv[1], "ok") != 0 && strcmp(argv[1], "fail") != 0 && strcmp(argv[1], "lose") != 0)) {
        fprintf(stderr, "usage: test_ib_init ok | fail TEXT... | lose\n");
        return 2;
    }
    orb_comm_t c = NULL;
    orb_status_t st = orb_comm_init_env(&c);
    if (!strcmp(argv[1], "ok") || !strcmp(argv[1], "lose")) {
        if (st != ORB_OK)
            return fail("init: %s: %s", orb_status_name(st), orb_comm_last_error(NULL));
        return !strcmp(argv[1], "ok") ? run_ok(c) : run_lose(c);
    }
    if (st == ORB_OK)
        return fail("init succeeded where it should have failed%s%s", "", "");
    const char *msg = orb_comm_last_error(NULL);
    for (int i = 2; i < argc; i++)
        if (!strstr(msg, argv[i]))
            return fail("the init error lacks \"%s\": %s", argv[i], msg);
    printf("rank %d: ok (init failed as it should: %s: %s)\n", rank, orb_status_name(st), msg);
    return 0;
}
