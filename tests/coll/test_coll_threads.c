/* The collective matrix of test_coll.c with host buffers, ranks as threads of one process:
 *   test_coll_threads -n N [test_coll flags: --coll, --quick, --seed, --algo]
 * The communicators come from orb_comm_init_all(comms, N, NULL); each rank is a thread that
 * runs test_coll.c's main, compiled in unchanged, its rank globals made per-thread through
 * thread_ranks.h (as in tests/gpu/test_gpu_threads.c, for device buffers). Each thread
 * judges its own rank; the process fails when any does. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "orbit.h"

#include "thread_ranks.h"
#define main test_coll_main
#include "test_coll.c"
#undef main
#include "thread_ranks_end.h"

typedef struct {
    orb_comm_t comm;
    int argc;
    char **argv;
    int ret;
} rank_arg_t;

static void *rank_thread(void *p)
{
    rank_arg_t *a = p;
    tv = (rank_vars_t){.comm = a->comm};
    a->ret = test_coll_main(a->argc, a->argv);
    return NULL;
}

int main(int argc, char **argv)
{
    int n = 2, nargs = 0;
    char **args = calloc((size_t)argc + 1, sizeof *args);
    for (int i = 0; args && i < argc; i++) {
        if (!strcmp(argv[i], "-n") && i + 1 < argc)
            n = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--algo") && i + 1 < argc)
            setenv("ORBIT_ALGO", argv[++i], 1); /* here, before any thread reads the environment */
        else
            args[nargs++] = argv[i];
    }
    if (!args || n < 1 || n > 16) {
        fprintf(stderr, "usage: test_coll_threads -n N (1..16) [test_coll flags]\n");
        return 2;
    }
    orb_comm_t *comms = calloc((size_t)n, sizeof *comms);
    rank_arg_t *ra = calloc((size_t)n, sizeof *ra);
    pthread_t *th = calloc((size_t)n, sizeof *th);
    if (!comms || !ra || !th)
        return 1;
    orb_status_t st = orb_comm_init_all(comms, n, NULL);
    if (st != ORB_OK) {
        fprintf(stderr, "FAIL: orb_comm_init_all(%d ranks): %s: %s\n", n, orb_status_name(st),
                orb_comm_last_error(NULL));
        return 1;
    }
    for (int r = 0; r < n; r++) {
        ra[r] = (rank_arg_t){comms[r], nargs, args, 1};
        if (pthread_create(&th[r], NULL, rank_thread, &ra[r]) != 0) {
            fprintf(stderr, "FAIL: pthread_create for rank %d\n", r);
            _exit(1); /* the ranks already running would wait for this one */
        }
    }
    int ret = 0;
    for (int r = 0; r < n; r++) {
        pthread_join(th[r], NULL);
        if (ra[r].ret != 0)
            ret = 1;
    }
    for (int r = 0; r < n; r++)
        orb_comm_destroy(comms[r]);
    free(comms);
    free(ra);
    free(th);
    free(args);
    return ret;
}
