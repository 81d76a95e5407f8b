/* orb_barrier keeps every rank in until the last has come in, real processes under orbitrun.
 * Round i: rank i % n arrives 20 ms late; every rank writes its arrival time (CLOCK_MONOTONIC,
 * one clock for the whole host) into a file in /dev/shm that the ranks share outside orbit,
 * calls orb_barrier, and then reads the round's arrival times back: each must be written
 * already and none may be later than this rank's own leaving time. A rank that leaves early
 * leaves before the late one arrived (20 ms is far more than any clock or scheduling
 * difference). Each rank checks its own rounds and exits 1 on a failure of its own.
 * Whichever plan ORBIT_ALGO names (ring, doubling) runs the barrier.
 *   orbitrun -n N test_barrier */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "orbit.h"

#define LATE_NS 20000000L

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

int main(void)
{
    const char *secret = getenv("ORBIT_SECRET"), *r = getenv("RANK"), *w = getenv("WORLD_SIZE");
    if (!secret || !r || !w) {
        fprintf(stderr, "test_barrier: run it under orbitrun (ORBIT_SECRET, RANK and WORLD_SIZE unset)\n");
        return 2;
    }
    const int rank = atoi(r), n = atoi(w), rounds = 2 * n + 1;
    if (n < 1 || n > 64) {
        fprintf(stderr, "test_barrier: %d ranks; it runs 1 to 64\n", n);
        return 2;
    }
    char path[160];
    snprintf(path, sizeof path, "/dev/shm/orbit-test-barrier-%.32s", secret);
    /* opened before init: init waits for every rank, so rank 0 unlinks it only after all opened */
    int fd = open(path, O_RDWR | O_CREAT, 0600);
    if (fd < 0 || ftruncate(fd, (off_t)(sizeof(double) * (size_t)(rounds * n))) != 0) {
        perror(path);
        return 1;
    }
    orb_comm_t comm;
    orb_status_t st = orb_comm_init_env(&comm);
    if (st != ORB_OK) {
        fprintf(stderr, "rank %d: init failed: %s: %s\n", rank, orb_status_name(st), orb_comm_last_error(NULL));
        return 1;
    }
    int failed = 0;
    for (int i = 0; i < rounds; i++) {
        if (i % n == rank) {
            struct timespec late = {0, LATE_NS};
            nanosleep(&late, NULL);
        }
        const double in = now_ns();
        if (pwrite(fd, &in, sizeof in, (off_t)(sizeof in * (size_t)(i * n + rank))) != (ssize_t)sizeof in) {
            perror("pwrite");
            return 1;
        }
        st = orb_barrier(comm);
        const double out = now_ns();
        if (st != ORB_OK) {
            fprintf(stderr, "rank %d: round %d: orb_barrier: %s: %s\n", rank, i, orb_status_name(st),
                    orb_comm_last_error(comm));
            return 1;
        }
        double t[64];
        const int m = n;
        if (pread(fd, t, sizeof t[0] * (size_t)m, (off_t)(sizeof t[0] * (size_t)(i * n))) !=
            (ssize_t)(sizeof t[0] * (size_t)m)) {
            perror("pread");
            return 1;
        }
        for (int k = 0; k < m; k++) {
            if (t[k] == 0)
                fprintf(stderr, "FAIL rank %d: round %d: left the barrier before rank %d arrived (no arrival time "
                                "written)\n", rank, i, k);
            else if (t[k] > out)
                fprintf(stderr, "FAIL rank %d: round %d: left the barrier %.3f ms before rank %d arrived\n", rank, i,
                        (t[k] - out) / 1e6, k);
            failed |= t[k] == 0 || t[k] > out;
        }
    }
    st = orb_barrier(comm); /* nobody reads the file any more */
    if (rank == 0)
        unlink(path);
    close(fd);
    orb_comm_destroy(comm);
    if (st != ORB_OK) {
        fprintf(stderr, "rank %d: the last orb_barrier: %s\n", rank, orb_status_name(st));
        return 1;
    }
    printf("rank %d: %d rounds of %d ranks, each %s\n", rank, rounds, n, failed ? "NOT kept in" : "kept in until all came");
    return failed;
}
