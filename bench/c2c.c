/* c2c: how far apart two CPUs are, as the round trip of one cache line between them (two
 * threads pinned to CPUs A and B take turns writing a counter the other waits for; median of
 * 9 rounds of 20000 trips). Cores that share a last-level cache trade a line in tens of ns;
 * cores on another CCD or socket take several times that, and a VM's vCPUs can move from one
 * case to the other within seconds (docs/transports.md, "Stores into a peer's slots"). The host
 * suite prints it around every collective so that each figure says which case it met. Uses no
 * orbit code.
 * usage: c2c [A B]  (default: the first two CPUs this process may run on)
 * prints: c2c_ns N cpus A B   (or "c2c_ns - ..." and exit 77 where there is only one CPU) */
#ifndef _GNU_SOURCE /* meson defines it for every file */
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define TRIPS 20000
#define ROUNDS 9

static _Alignas(64) _Atomic long line;

static void *answer(void *arg)
{
    (void)arg;
    for (long i = 1; i <= (long)TRIPS * ROUNDS; i++) {
        while (atomic_load_explicit(&line, memory_order_acquire) != 2 * i - 1)
            ;
        atomic_store_explicit(&line, 2 * i, memory_order_release);
    }
    return NULL;
}

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    int a = -1, b = -1;
    if (argc == 3) {
        a = atoi(argv[1]);
        b = atoi(argv[2]);
    } else if (argc != 1) {
        fprintf(stderr, "usage: c2c [A B]\n");
        return 2;
    } else {
        cpu_set_t s;
        if (sched_getaffinity(0, sizeof s, &s) == 0)
            for (int c = 0; c < CPU_SETSIZE && b < 0; c++)
                if (CPU_ISSET(c, &s)) {
                    if (a < 0)
                        a = c;
                    else
                        b = c;
                }
        if (b < 0) {
            printf("c2c_ns - (this process may run on one CPU only)\n");
            return 77;
        }
    }
    cpu_set_t sa, sb;
    CPU_ZERO(&sa);
    CPU_SET(a, &sa);
    CPU_ZERO(&sb);
    CPU_SET(b, &sb);
    pthread_attr_t attr; /* pinned before it starts: a CPU it may not use fails here, not in a spin */
    pthread_t t;
    if (pthread_setaffinity_np(pthread_self(), sizeof sa, &sa) != 0 || pthread_attr_init(&attr) != 0 ||
        pthread_attr_setaffinity_np(&attr, sizeof sb, &sb) != 0 || pthread_create(&t, &attr, answer, NULL) != 0) {
        fprintf(stderr, "c2c: cannot run one thread on CPU %d and one on CPU %d\n", a, b);
        return 2;
    }
    pthread_attr_destroy(&attr);
    double per[ROUNDS];
    long i = 1;
    for (int r = 0; r < ROUNDS; r++) {
        const double t0 = now_ns();
        for (int k = 0; k < TRIPS; k++, i++) {
            atomic_store_explicit(&line, 2 * i - 1, memory_order_release);
            while (atomic_load_explicit(&line, memory_order_acquire) != 2 * i)
                ;
        }
        per[r] = (now_ns() - t0) / TRIPS;
    }
    pthread_join(t, NULL);
    qsort(per, ROUNDS, sizeof per[0], cmp);
    printf("c2c_ns %.0f cpus %d %d\n", per[ROUNDS / 2], a, b);
    return 0;
}
