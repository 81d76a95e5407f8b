/* One rank of an ib setup case (ib_cases.sh runs two under different settings):
 *   test_ib_init ok             init succeeds; an all-reduce (sum, int32, 65539 elements of
 *                               rank- and position-dependent values) and a broadcast of 1 MiB
 *                               from rank 1 match their closed forms
 *   test_ib_init fail TEXT...   init fails, and its message contains every TEXT
 * Each rank judges only itself: prints "rank R: ok" or "rank R: FAIL ..." and exits 0 or 1. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int main(int argc, char **argv)
{
    const char *r = getenv("RANK");
    rank = r ? atoi(r) : -1;
    if (argc < 2 || (strcmp(argv[1], "ok") != 0 && strcmp(argv[1], "fail") != 0)) {
        fprintf(stderr, "usage: test_ib_init ok | fail TEXT...\n");
        return 2;
    }
    orb_comm_t c = NULL;
    orb_status_t st = orb_comm_init_env(&c);
    if (!strcmp(argv[1], "ok")) {
        if (st != ORB_OK)
            return fail("init: %s: %s", orb_status_name(st), orb_comm_last_error(NULL));
        return run_ok(c);
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
