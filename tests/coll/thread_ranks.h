/* test_coll.c's rank globals made per-thread, for the drivers that run its main once per
 * rank as threads of one process (test_coll_threads.c, tests/gpu/test_gpu_threads.c):
 *   #include "thread_ranks.h"     ...   #include "test_coll.c"   #include "thread_ranks_end.h"
 * A thread sets tv.comm before it calls test_coll's main; orb_comm_init_env then hands that
 * communicator back, and orb_comm_destroy leaves it to the driver, which destroys every rank's
 * after all threads are done. */
#ifndef ORB_TEST_THREAD_RANKS_H
#define ORB_TEST_THREAD_RANKS_H

#include "orbit.h"

typedef struct {
    int nranks, rank;
    orb_comm_t comm;
    long passed, failed, ran;
} rank_vars_t;

static _Thread_local rank_vars_t tv;
static int *tl_nranks(void) { return &tv.nranks; }
static int *tl_rank(void) { return &tv.rank; }
static orb_comm_t *tl_comm(void) { return &tv.comm; }
static long *tl_passed(void) { return &tv.passed; }
static long *tl_failed(void) { return &tv.failed; }
static long *tl_ran(void) { return &tv.ran; }

static orb_status_t thread_init_env(orb_comm_t *c)
{
    *c = tv.comm;
    return ORB_OK;
}
static orb_status_t thread_destroy(orb_comm_t c)
{
    (void)c;
    return ORB_OK;
}

#endif

#define nranks (*tl_nranks())
#define rank (*tl_rank())
#define comm (*tl_comm())
#define passed (*tl_passed())
#define failed (*tl_failed())
#define ran (*tl_ran())
#define orb_comm_init_env thread_init_env
#define orb_comm_destroy thread_destroy
#define RANK_LOCAL _Thread_local
