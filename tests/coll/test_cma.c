/* Single-copy pieces (ORBIT_CMA_BYTES, transport/cma.h), 2 real processes under orbitrun.
 * A piece sent as an address is read by the receiver from the sender's buffer, so the
 * sender's call must not return before the receiver has read it. Rank 0 sends, then at once
 * overwrites its buffer; rank 1 starts receiving only 200 ms later and must still get what
 * was sent. Then the other way round with broadcast from rank 1, and a send/recv exchange
 * in one group. Each rank checks its own buffers against values computed here and exits 1 on
 * a failure of its own. Skips (77) where Yama forbids sibling processes to read each other:
 * orbit then copies through the slots and this test would prove nothing.
 *   orbitrun -n 2 test_cma   (with ORBIT_CMA_BYTES=4096 ORBIT_STREAM_BYTES=-1) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "orbit.h"

#define N (1u << 18) /* 1 MiB of int32: 4 pieces of a 256 KiB slot */

static int rank;
static long failed;

static int32_t value(int from, int what, size_t i) { return (int32_t)((from + 1) * 100000 + what * 7919 + (int)(i % 65521)); }

static void expect(const int32_t *buf, int from, int what, const char *name)
{
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < N; i++)
        if (buf[i] != value(from, what, i) && bad++ == 0)
            first = i;
    if (bad) {
        fprintf(stderr, "rank %d: %s: %zu of %u elements wrong (first at %zu: %d, expected %d)\n", rank, name, bad, N,
                first, buf[first], value(from, what, first));
        failed++;
    } else {
        printf("rank %d: %s: ok\n", rank, name);
    }
}

static void must(orb_status_t st, orb_comm_t comm, const char *what)
{
    if (st != ORB_OK) {
        fprintf(stderr, "rank %d: %s failed: %s: %s\n", rank, what, orb_status_name(st), orb_comm_last_error(comm));
        exit(1);
    }
}

int main(void)
{
    FILE *f = fopen("/proc/sys/kernel/yama/ptrace_scope", "r");
    int scope = 0;
    if (f) {
        if (fscanf(f, "%d", &scope) != 1)
            scope = 0;
        fclose(f);
    }
    if (scope >= 1) {
        printf("skip: kernel.yama.ptrace_scope = %d: sibling processes may not read each other's memory\n", scope);
        return 77;
    }
    orb_comm_t comm;
    if (orb_comm_init_env(&comm) != ORB_OK) {
        fprintf(stderr, "init failed: %s\n", orb_comm_last_error(NULL));
        return 1;
    }
    int n;
    orb_comm_rank(comm, &rank);
    orb_comm_size(comm, &n);
    if (n != 2) {
        fprintf(stderr, "run with 2 ranks (orbitrun -n 2)\n");
        return 2;
    }
    int32_t *buf = malloc(N * sizeof *buf), *other = malloc(N * sizeof *other);
    if (!buf || !other)
        return 1;

    /* 1. send, then overwrite at once; the receiver comes late */
    if (rank == 0) {
        for (size_t i = 0; i < N; i++)
            buf[i] = value(0, 1, i);
        must(orb_send(buf, N, ORB_INT32, 1, comm, NULL), comm, "orb_send");
        memset(buf, 0xee, N * sizeof *buf);
    } else {
        usleep(200000);
        must(orb_recv(buf, N, ORB_INT32, 0, comm, NULL), comm, "orb_recv");
        expect(buf, 0, 1, "recv after the sender overwrote its buffer");
    }
    must(orb_barrier(comm), comm, "orb_barrier");

    /* 2. broadcast from rank 1 (out of place on the root), its input overwritten at once */
    if (rank == 1) {
        for (size_t i = 0; i < N; i++)
            other[i] = value(1, 2, i);
        must(orb_broadcast(other, buf, N, ORB_INT32, 1, comm, NULL), comm, "orb_broadcast");
        memset(other, 0xee, N * sizeof *other);
        expect(buf, 1, 2, "broadcast root's own output");
    } else {
        usleep(200000);
        must(orb_broadcast(NULL, buf, N, ORB_INT32, 1, comm, NULL), comm, "orb_broadcast");
        expect(buf, 1, 2, "broadcast received after the root overwrote its input");
    }
    must(orb_barrier(comm), comm, "orb_barrier");

    /* 3. an exchange in one group: each sends buf and receives into other */
    for (size_t i = 0; i < N; i++)
        buf[i] = value(rank, 3, i);
    must(orb_group_start(), comm, "orb_group_start");
    must(orb_send(buf, N, ORB_INT32, 1 - rank, comm, NULL), comm, "orb_send (group)");
    must(orb_recv(other, N, ORB_INT32, 1 - rank, comm, NULL), comm, "orb_recv (group)");
    must(orb_group_end(), comm, "orb_group_end");
    memset(buf, 0xee, N * sizeof *buf);
    expect(other, 1 - rank, 3, "exchange in a group");
    must(orb_barrier(comm), comm, "orb_barrier");

    orb_comm_destroy(comm);
    free(buf);
    free(other);
    printf("rank %d: %s\n", rank, failed ? "FAILED" : "all passed");
    return failed ? 1 : 0;
}
