/* The doorbell's protocol (transport/box.h): arm, look once more, sleep; post, then ring only
 * an armed owner. Two parts, each with the owner's fence by membarrier ("light", where the
 * kernel offers it) and with the waker's own fence ("heavy", the box's light flag cleared as
 * on a kernel without membarrier):
 *   rings: in one process, a wake rings an armed box once and leaves a box nobody armed alone
 *          (the cheap path: no locked add on a waker's every post);
 *   pingpong: two processes pass a counter back and forth 20000 times through shared memory,
 *          each arming and sleeping on its box whenever it waits (no spinning): a wake-up lost between
 *          a look and a sleep would leave one asleep until its 5 s timeout, which each checks
 *          (a futex wake takes microseconds; 1 s is five orders of magnitude above) and fails on.
 * Each process checks its own side and exits 1 on its own failure. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "transport/box.h"

#define ROUNDS 20000

static int failed;

static void check(int ok, const char *what)
{
    printf("%s %s\n", ok ? "ok  " : "FAIL", what);
    fflush(stdout);
    failed += !ok;
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static orb_box_t *make(const char *tag, int rank, int light)
{
    char name[96], err[256];
    snprintf(name, sizeof name, "/orbit-test-box-%d-%s-%d", (int)getpid(), tag, rank);
    orb_box_t *b;
    if (orb_box_create(&b, name, rank, 2, err, sizeof err) != ORB_OK) {
        fprintf(stderr, "FAIL create %s: %s\n", name, err);
        exit(1);
    }
    orb_box_unlink(name); /* mapped: the name is not needed (fork shares the mapping) */
    if (!light)
        atomic_store(&b->light, 0);
    return b;
}

static void rings(int light)
{
    orb_box_t *b = make("rings", 0, light);
    const uint32_t before = atomic_load(&b->doorbell);
    orb_box_wake(b);
    check(atomic_load(&b->doorbell) == before, "a wake leaves a box nobody armed alone");
    const uint32_t seen = orb_box_arm(b);
    check(seen == before && atomic_load(&b->waiters) == 1, "arming returns the doorbell and counts one waiter");
    orb_box_wake(b);
    check(atomic_load(&b->doorbell) == seen + 1, "a wake rings an armed box");
    const double t0 = now();
    orb_box_wait(b, seen, 5.0);
    check(now() - t0 < 1.0 && atomic_load(&b->waiters) == 0, "a wait on a rung doorbell returns at once and disarms");
    orb_box_release(b, 0);
}

/* side 0 waits for odd values of *ctr, side 1 for even ones; each sleeps on its own box */
static int pingpong_side(int side, _Atomic uint32_t *ctr, orb_box_t *mine, orb_box_t *peer, long *slept)
{
    for (uint32_t v = (uint32_t)side; v < 2 * ROUNDS; v += 2) {
        while (atomic_load(ctr) != v) {
            const uint32_t seen = orb_box_arm(mine);
            if (atomic_load(ctr) == v) { /* the look after arming */
                orb_box_disarm(mine);
                break;
            }
            const double t0 = now();
            orb_box_wait(mine, seen, 5.0);
            (*slept)++;
            if (now() - t0 > 1.0) {
                fprintf(stderr, "FAIL side %d: asleep %.1f s waiting for %u (the counter is %u): a lost wake-up\n",
                        side, now() - t0, v, atomic_load(ctr));
                return 1;
            }
        }
        atomic_store(ctr, v + 1);
        orb_box_wake(peer);
    }
    return 0;
}

static void pingpong(int light)
{
    _Atomic uint32_t *ctr = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (ctr == MAP_FAILED) {
        perror("FAIL mmap");
        exit(1);
    }
    atomic_store(ctr, 0);
    orb_box_t *b0 = make("pp", 0, light), *b1 = make("pp", 1, light);
    const double t0 = now();
    pid_t child = fork();
    if (child < 0) {
        perror("FAIL fork");
        exit(1);
    }
    long slept = 0;
    if (child == 0)
        _exit(pingpong_side(1, ctr, b1, b0, &slept));
    const int mine = pingpong_side(0, ctr, b0, b1, &slept);
    int status = 0;
    waitpid(child, &status, 0);
    char what[160];
    snprintf(what, sizeof what, "%s: %d round trips, side 0 went to sleep %ld times, no wake-up lost (%.2f s)",
             light ? "light" : "heavy", ROUNDS, slept, now() - t0);
    check(mine == 0, what);
    check(WIFEXITED(status) && WEXITSTATUS(status) == 0, "... and none lost on side 1 (its own verdict)");
    orb_box_release(b0, 0);
    orb_box_release(b1, 0);
    munmap((void *)ctr, 4096);
}

int main(void)
{
    orb_box_t *probe = make("probe", 0, 1);
    const int light = atomic_load(&probe->light);
    orb_box_release(probe, 0);
    printf("membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED): %s\n",
           light ? "registered: the light path runs first" : "not offered here: the heavy path only");
    for (int l = light; l >= 0; l--) {
        rings(l);
        pingpong(l);
    }
    printf("%d failures\n", failed);
    return failed ? 1 : 0;
}
