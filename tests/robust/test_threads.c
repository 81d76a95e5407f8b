/* Ranks as threads of one process (orb_comm_init_all): each thread drives its own
 * communicator through a loop of collectives with exact checks, while one more thread aborts
 * a second set of communicators that are blocked. Built for ThreadSanitizer too. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "orbit.h"

#define NR 4
#define COUNT 4099

static orb_comm_t comms[NR];
static int bad[NR];

static void *worker(void *p)
{
    int r = (int)(long)p;
    static _Thread_local double in[COUNT * NR], out[COUNT * NR];
    for (int it = 0; it < 20; it++) {
        for (int i = 0; i < COUNT; i++)
            in[i] = (double)(r + 1) * (i + it);
        if (orb_allreduce(in, out, COUNT, ORB_FLOAT64, ORB_SUM, comms[r], NULL) != ORB_OK) {
            bad[r]++;
            break;
        }
        for (int i = 0; i < COUNT; i++)
            if (out[i] != (double)(NR * (NR + 1) / 2) * (i + it))
                bad[r]++;
        if (orb_broadcast(in, out, COUNT, ORB_FLOAT64, it % NR, comms[r], NULL) != ORB_OK) {
            bad[r]++;
            break;
        }
        for (int i = 0; i < COUNT; i++)
            if (out[i] != (double)(it % NR + 1) * (i + it))
                bad[r]++;
        if (orb_allgather(in, out, COUNT, ORB_FLOAT64, comms[r], NULL) != ORB_OK) {
            bad[r]++;
            break;
        }
        /* every element of every block: rank q's input at its position */
        for (int q = 0; q < NR; q++)
            for (int i = 0; i < COUNT; i++)
                if (out[(size_t)q * COUNT + i] != (double)(q + 1) * (i + it))
                    bad[r]++;
    }
    return NULL;
}

static orb_comm_t blocked;
static orb_status_t blocked_status;

static void *waiter(void *p)
{
    (void)p;
    double x = 1, y;
    blocked_status = orb_allreduce(&x, &y, 1, ORB_FLOAT64, ORB_SUM, blocked, NULL); /* peer never comes */
    return NULL;
}

int main(void)
{
    int passed = 0, failed = 0;
    orb_status_t st = orb_comm_init_all(comms, NR, NULL);
    if (st != ORB_OK) {
        fprintf(stderr, "init_all: %s: %s\n", orb_status_name(st), orb_comm_last_error(NULL));
        return 1;
    }
    pthread_t th[NR];
    for (long r = 0; r < NR; r++)
        pthread_create(&th[r], NULL, worker, (void *)r);
    for (int r = 0; r < NR; r++)
        pthread_join(th[r], NULL);
    for (int r = 0; r < NR; r++) {
        if (bad[r]) {
            failed++;
            fprintf(stderr, "FAIL rank %d: %d wrong results (%s)\n", r, bad[r], orb_comm_last_error(comms[r]));
        } else {
            passed++;
        }
        orb_comm_destroy(comms[r]);
    }
    /* abort from another thread */
    orb_comm_t pair[2];
    if (orb_comm_init_all(pair, 2, NULL) != ORB_OK) {
        fprintf(stderr, "init_all(2) failed: %s\n", orb_comm_last_error(NULL));
        return 1;
    }
    blocked = pair[0];
    pthread_t w;
    pthread_create(&w, NULL, waiter, NULL);
    usleep(200000);
    orb_comm_abort(blocked);
    pthread_join(w, NULL);
    if (blocked_status == ORB_ERR_ABORTED)
        passed++;
    else {
        failed++;
        fprintf(stderr, "FAIL abort: the blocked call returned %s\n", orb_status_name(blocked_status));
    }
    orb_comm_destroy(pair[0]);
    orb_comm_destroy(pair[1]);
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
