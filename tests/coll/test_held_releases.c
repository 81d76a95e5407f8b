/* A shared-memory receiver tells its sender of the small slots it has read in batches while the
 * sender's next piece is already in, at once otherwise, and before it waits for anything
 * (transport/shm/shm.c, "releases told in batches"). Real processes under orbitrun -n 2.
 *   --case told: rank 0 puts a small ring's worth of 8-byte pieces straight into its FIFO to
 *     rank 1 (the connection's own entries), rank 1 takes them once all are in (take_turns.h),
 *     and after every release compares what the sender can see (ctrl->tail_small, ctrl->tail)
 *     with the rule worked out here: told every min(ORBIT_SHM_RELEASE_BATCH, small slots / 4)
 *     (every one below 2), at the last piece at once, and at once when flushed (after the 10th).
 *   --case hold-then-send: rank 1 sends a ring and 6 more to rank 0, which takes 10 (holding
 *     them back: more wait) and then sends as many to rank 1 before taking the rest. Rank 1's
 *     last 6 sends need those 10 slots: a rank that waits must tell first, or both wait.
 *   --case last-told: 40 broadcasts from rank 0, rank 1 once they are all in; rank 0 then destroys its
 *     communicator, which waits until its last piece is taken, while rank 1, done, waits
 *     outside orbit for a mark rank 0 leaves after that (take_turns.h): a receiver that has taken all there
 *     is must have told, or rank 0 times out (ORBIT_TIMEOUT) and rank 1 never sees the file.
 *   --case untaken: rank 0 broadcasts once more than rank 1 takes part in and destroys its
 *     communicator, while rank 1 waits outside orbit: rank 0's destroy must fail after
 *     ORBIT_TIMEOUT (2 s here) naming that broadcast and rank 1, then rank 1 goes on.
 * Payloads depend on the sender and the piece's number; each rank exits 1 on its own
 * failures, 77 where the case cannot run (the rings too small for it). */
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../common/take_turns.h"
#include "comm/comm_impl.h"
#include "core/clock.h"
#include "orbit.h"

static int rank;
static int failed;

static uint64_t value(int sender, int i) { return 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1) ^ (uint64_t)sender << 56; }

static void must(orb_status_t st, orb_comm_t comm, const char *what, int i)
{
    if (st != ORB_OK) {
        fprintf(stderr, "rank %d: %s (%d) failed: %s: %s\n", rank, what, i, orb_status_name(st),
                orb_comm_last_error(comm));
        exit(1);
    }
}

/* ORBIT_SHM_RELEASE_BATCH as the transport is to read it, then the rule's clamp */
static uint64_t batch_of(const struct orb_comm *c)
{
    const char *e = getenv("ORBIT_SHM_RELEASE_BATCH");
    uint64_t b = e ? strtoull(e, NULL, 10) : 16;
    if (b > c->nsmall / 4)
        b = c->nsmall / 4;
    return b < 2 ? 1 : b;
}

static int told_case(orb_comm_t comm)
{
    struct orb_comm *c = comm;
    const size_t nch = (size_t)c->nchannels;
    const int n = (int)c->nsmall;
    if (n < 16) {
        printf("rank %d: SKIP: %d small slots (the case needs 16)\n", rank, n);
        return 77;
    }
    const double deadline = orb_now() + 20;
    if (rank == 0) {
        orb_conn_t *sc = &c->send[1 * nch];
        for (int i = 0; i < n; i++) {
            orb_slot_hdr_t *h;
            while (!(h = sc->ops->send_acquire(sc, 8)))
                if (orb_now() > deadline) {
                    fprintf(stderr, "rank 0: piece %d: no free small slot in 20 s\n", i);
                    return 1;
                }
            const orb_slot_hdr_t hdr = {.seq = (uint64_t)i, .nbytes = 8, .sender = 0};
            orb_piece_hdr_put(h, &hdr);
            const uint64_t v = value(0, i);
            memcpy(h + 1, &v, 8);
            sc->ops->send_post(sc);
        }
        turn_mark("held", "posted");
        /* nothing more into the FIFO (the barrier's piece) until rank 1 has looked at the last */
        return turn_wait_for("held", "checked", rank, 40) ? 0 : 1;
    }
    orb_conn_t *rc = &c->recv[0 * nch];
    const uint64_t b = batch_of(c), small0 = rc->pos_small, all0 = rc->pos;
    if (atomic_load(&rc->ctrl->tail_small) != small0 || atomic_load(&rc->ctrl->tail) != all0) {
        fprintf(stderr, "rank 1: at rest the sender sees %llu / %llu slots released, the receiver has %llu / %llu\n",
                (unsigned long long)atomic_load(&rc->ctrl->tail_small), (unsigned long long)atomic_load(&rc->ctrl->tail),
                (unsigned long long)small0, (unsigned long long)all0);
        failed = 1;
    }
    if (!turn_wait_for("held", "posted", rank, 40)) /* every piece in before the first is taken */
        return 1;
    uint64_t told = 0;
    for (int i = 1; i <= n; i++) {
        orb_slot_hdr_t *h;
        while (!(h = rc->ops->recv_acquire(rc)))
            if (orb_now() > deadline) {
                fprintf(stderr, "rank 1: piece %d never came\n", i);
                return 1;
            }
        uint64_t v;
        memcpy(&v, h + 1, 8);
        if (h->nbytes != 8 || v != value(0, i - 1)) {
            fprintf(stderr, "rank 1: piece %d: %u bytes, %#llx; want 8, %#llx\n", i, h->nbytes, (unsigned long long)v,
                    (unsigned long long)value(0, i - 1));
            failed = 1;
        }
        rc->ops->recv_release(rc);
        if ((uint64_t)i - told >= b || i == n) /* a batch, or the last: nothing more waits */
            told = (uint64_t)i;
        const char *when = "released";
        if (i == 10) {
            orb_comm_flush_held(c); /* (what the executor does before it waits) */
            told = 10;
            when = "flushed";
        }
        const uint64_t ts = atomic_load(&rc->ctrl->tail_small), ta = atomic_load(&rc->ctrl->tail);
        if (ts != small0 + told || ta != all0 + told) {
            fprintf(stderr, "rank 1: piece %d of %d %s (batch %llu): the sender sees %llu small / %llu slots released, "
                            "want %llu\n",
                    i, n, when, (unsigned long long)b, (unsigned long long)(ts - small0),
                    (unsigned long long)(ta - all0), (unsigned long long)told);
            failed = 1;
        }
    }
    turn_mark("held", "checked");
    printf("rank 1: %d pieces, batch %llu: %s\n", n, (unsigned long long)b, failed ? "FAILED" : "ok");
    return failed;
}

static int hold_then_send(orb_comm_t comm)
{
    struct orb_comm *c = comm;
    const int ring = (int)c->nsmall, more = 6, first = 10;
    if (ring < 16 || batch_of(c) <= (uint64_t)first) {
        printf("rank %d: SKIP: %d small slots, batch %llu (the case holds 10 back)\n", rank, ring,
               (unsigned long long)batch_of(c));
        return 77;
    }
    const int m = ring + more, peer = 1 - rank;
    uint64_t v;
    int got = 0;
    if (rank == 0) {
        if (!turn_wait_for("held", "ring-full", rank, 40)) /* rank 1 has filled the ring */
            return 1;
        for (; got < first; got++) {
            must(orb_recv(&v, 1, ORB_UINT64, peer, comm, NULL), comm, "orb_recv", got);
            failed |= v != value(peer, got);
        }
    }
    for (int i = 0; i < m; i++) {
        v = value(rank, i);
        must(orb_send(&v, 1, ORB_UINT64, peer, comm, NULL), comm, "orb_send", i);
        if (rank == 1 && i == ring - 1)
            turn_mark("held", "ring-full"); /* (its next send waits for rank 0) */
    }
    for (; got < m; got++) {
        v = 0;
        must(orb_recv(&v, 1, ORB_UINT64, peer, comm, NULL), comm, "orb_recv", got);
        if (v != value(peer, got) && !failed++)
            fprintf(stderr, "rank %d: message %d from rank %d: %#llx, want %#llx\n", rank, got, peer,
                    (unsigned long long)v, (unsigned long long)value(peer, got));
    }
    printf("rank %d: %d sends and receives each way: %s\n", rank, m, failed ? "FAILED" : "ok");
    return failed != 0;
}

static int untaken(orb_comm_t comm)
{
    uint64_t v = value(0, 0);
    if (rank == 0) {
        must(orb_broadcast(&v, &v, 1, ORB_UINT64, 0, comm, NULL), comm, "orb_broadcast", 0);
        const orb_status_t st = orb_comm_destroy(comm);
        const char *msg = orb_comm_last_error(NULL);
        if (st != ORB_ERR_TIMEOUT || !strstr(msg, "no progress for 2 s") || !strstr(msg, "broadcast #") ||
            !strstr(msg, "waits for rank 1 to take its last piece")) {
            fprintf(stderr, "rank 0: orb_comm_destroy with a broadcast rank 1 never took: %s: \"%s\"; want "
                            "ORB_ERR_TIMEOUT naming the broadcast and rank 1\n", orb_status_name(st), msg);
            failed = 1;
        }
        printf("rank 0: destroy with a piece never taken: %s\n", failed ? "FAILED" : "ok");
        turn_mark("held", "destroyed"); /* (rank 1 waits for it outside orbit) */
        return failed;
    }
    if (!turn_wait_for("held", "destroyed", rank, 40))
        return 1;
    orb_comm_destroy(comm); /* (the piece is still in its FIFO: nothing to check) */
    printf("rank 1: ok\n");
    return 0;
}

static int last_told(orb_comm_t comm)
{
    enum { CALLS = 40 };
    if (((struct orb_comm *)comm)->nsmall < CALLS + 8) {
        printf("rank %d: SKIP: %u small slots (the root posts %d calls ahead)\n", rank,
               ((struct orb_comm *)comm)->nsmall, CALLS);
        orb_comm_destroy(comm);
        return 77;
    }
    if (rank != 0 && !turn_wait_for("held", "posted", rank, 40)) /* the root posts every piece first */
        return 1;
    for (int i = 0; i < CALLS; i++) {
        uint64_t v = rank == 0 ? value(0, i) : 0;
        must(orb_broadcast(&v, &v, 1, ORB_UINT64, 0, comm, NULL), comm, "orb_broadcast", i);
        if (v != value(0, i) && !failed++)
            fprintf(stderr, "rank %d: broadcast %d: %#llx, want %#llx\n", rank, i, (unsigned long long)v,
                    (unsigned long long)value(0, i));
    }
    if (rank == 0)
        turn_mark("held", "posted");
    if (rank == 0) {
        const orb_status_t st = orb_comm_destroy(comm);
        if (st != ORB_OK) {
            fprintf(stderr, "rank 0: orb_comm_destroy after %d broadcasts: %s: %s (rank 1 had taken every piece)\n",
                    CALLS, orb_status_name(st), orb_comm_last_error(NULL));
            return 1;
        }
        turn_mark("held", "destroyed");
        printf("rank 0: %d broadcasts, destroyed: %s\n", CALLS, failed ? "FAILED" : "ok");
        return failed != 0;
    }
    if (!turn_wait_for("held", "destroyed", rank, 40)) /* (its FAIL line names the file) */
        return 1;
    must(orb_comm_destroy(comm), NULL, "orb_comm_destroy", 0);
    printf("rank 1: %d broadcasts, destroyed: %s\n", CALLS, failed ? "FAILED" : "ok");
    return failed != 0;
}

int main(int argc, char **argv)
{
    const char *which = argc > 2 && !strcmp(argv[1], "--case") ? argv[2] : NULL;
    if (!which || (strcmp(which, "told") && strcmp(which, "hold-then-send") && strcmp(which, "last-told") &&
                   strcmp(which, "untaken"))) {
        fprintf(stderr, "usage: orbitrun -n 2 %s --case told|hold-then-send|last-told|untaken\n", argv[0]);
        return 2;
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
        fprintf(stderr, "rank %d: run with 2 ranks (orbitrun -n 2), not %d\n", rank, n);
        return 2;
    }
    if (!strcmp(which, "last-told")) /* (these destroy their communicator themselves) */
        return last_told(comm);
    if (!strcmp(which, "untaken"))
        return untaken(comm);
    const int rc = !strcmp(which, "told") ? told_case(comm) : hold_then_send(comm);
    if (rc == 0 && !strcmp(which, "told"))
        must(orb_barrier(comm), comm, "orb_barrier", 0); /* the FIFO goes on as collectives use it */
    orb_comm_destroy(comm);
    return rc;
}
