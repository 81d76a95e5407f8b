/* Message rate of small sends, one way: rank 0 sends N messages of SIZE bytes to rank 1 with
 * blocking sends, rank 1 receives them with blocking receives; the FIFO between them (or Open
 * MPI's eager buffers) lets the sender run ahead, so the rate is set by what a send and a
 * receive cost, not by a round trip (osu_mbw_mr's question, without windows). Prints the rate
 * seen by rank 1 (first receive to last), median of REPS repetitions, each after a barrier.
 *   orbitrun -n 2 ./msgrate_orbit SIZE N REPS      mpirun -np 2 ./msgrate_mpi SIZE N REPS */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#ifdef USE_MPI
#include <mpi.h>
#else
#include "orbit.h"
#endif

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

static int cmp(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return (x > y) - (x < y); }

int main(int argc, char **argv)
{
    if (argc != 4)
        return 2;
    size_t size = strtoul(argv[1], 0, 0);
    long n = atol(argv[2]);
    int reps = atoi(argv[3]), rank;
    char *buf = calloc(size, 1);
    double rates[64];
#ifdef USE_MPI
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
#else
    orb_comm_t comm;
    if (orb_comm_init_env(&comm) != ORB_OK)
        return 1;
    orb_comm_rank(comm, &rank);
#endif
    for (int r = 0; r < reps && r < 64; r++) {
#ifdef USE_MPI
        MPI_Barrier(MPI_COMM_WORLD);
#else
        if (orb_barrier(comm) != ORB_OK)
            return 1;
#endif
        double t0 = 0;
        for (long i = 0; i < n; i++) {
            int rc;
#ifdef USE_MPI
            rc = rank == 0 ? MPI_Send(buf, (int)size, MPI_BYTE, 1, 0, MPI_COMM_WORLD)
                           : MPI_Recv(buf, (int)size, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
#else
            rc = rank == 0 ? orb_send(buf, size, ORB_UINT8, 1, comm, NULL) : orb_recv(buf, size, ORB_UINT8, 0, comm, NULL);
#endif
            if (rc != 0) {
                fprintf(stderr, "rank %d: message %ld failed\n", rank, i);
                return 1;
            }
            if (i == 0)
                t0 = now();
        }
        rates[r] = (n - 1) / (now() - t0);
    }
    if (rank == 1) {
        int m = reps < 64 ? reps : 64;
        qsort(rates, m, sizeof *rates, cmp);
        printf("%zu %.3f\n", size, rates[m / 2] / 1e6);
    }
#ifdef USE_MPI
    MPI_Finalize();
#else
    orb_comm_destroy(comm);
#endif
    free(buf);
    return 0;
}
