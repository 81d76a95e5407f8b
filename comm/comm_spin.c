/* How a waiting rank waits: how long it spins before it yields the CPU, and how often it
 * yields then; a policy of the host, agreed on at init from every rank's CPU mask. */
#include <sched.h>
#include <stdlib.h>
#include <unistd.h>

#include "comm/comm_impl.h"
#include "core/log.h"
#include "core/param.h"

/* How long a waiting rank spins before it yields. With more ranks on this host than CPUs
 * to run them, the peer a rank waits for is often queued behind it on its own core, and
 * every microsecond spent spinning delays that peer: then yield at once, as Open MPI does
 * when oversubscribed (4 ranks on 2 cores: 8-byte all-reduce 50 -> 10 us). The CPUs are the
 * union of the host's ranks' affinity masks as they arrive (exchanged: a launcher that pins
 * each rank to its own core leaves each mask one CPU wide, the union as wide as the ranks).
 * Collective: every rank exchanges its mask, whatever ORBIT_SPIN_US says. */
orb_status_t orb_comm_wait_setup(struct orb_comm *c, double deadline)
{
    const uint64_t host_id = c->bs.cards[c->rank].host_id;
    cpu_set_t *masks = calloc((size_t)c->nranks, sizeof *masks);
    if (!masks)
        return ORB_ERR_NO_MEMORY;
    if (sched_getaffinity(0, sizeof masks[c->rank], &masks[c->rank]) != 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        for (long k = 0; k < n && k < CPU_SETSIZE; k++)
            CPU_SET((int)k, &masks[c->rank]);
    }
    orb_status_t st = orb_bootstrap_allgather(&c->bs, masks, sizeof *masks, deadline);
    if (st != ORB_OK) {
        free(masks);
        return st;
    }
    cpu_set_t all;
    CPU_ZERO(&all);
    for (int r = 0; r < c->nranks; r++)
        if (c->bs.cards[r].host_id == host_id)
            CPU_OR(&all, &all, &masks[r]);
    free(masks);
    const int ncpu = CPU_COUNT(&all);
    c->host_cpus = ncpu;
    orb_comm_wait_policy(c->host_ranks, ncpu, &c->wait); /* host_ranks: counted in ring_by_host, which runs first */
    ORB_INFO("rank %d: %d ranks on this host, %d CPUs between them: spin %g us before yielding, then yield every %u "
             "idle passes",
             c->rank, c->host_ranks, ncpu, c->wait.spin_s * 1e6, c->wait.idle_mask + 1);
    return ORB_OK;
}

/* Largest power of two <= v, for v >= 1 */
static unsigned floor_pow2(unsigned v)
{
    unsigned p = 1;
    while (p <= v / 2)
        p *= 2;
    return p;
}

void orb_comm_wait_policy(int nlocal, int ncpu, orb_wait_policy_t *w)
{
    const int over = ncpu > 0 && nlocal > ncpu;
    if (orb_param_num_state(ORB_PARAM_SPIN_US) == ORB_PARAM_STATE_SET)
        w->spin_s = orb_param_num(ORB_PARAM_SPIN_US) * 1e-6;
    else
        w->spin_s = over ? 0.0 : orb_param_num(ORB_PARAM_SPIN_US) * 1e-6;
    /* With more than two ranks a CPU, the peer a rank waits for is running less than a third of
     * the time (8 ranks on 2 CPUs: 1 in 7), and each idle pass a waiting rank makes before it yields
     * keeps the peers queued on its core, that one among them, off it: yielding every 4th pass
     * instead of every 16th took 8 ranks' all-reduce of 8 B-4 KiB on 2 CPUs from 21.5-27.6 to
     * 15.2-22.2 us; at 4 ranks on 2 CPUs, where the peer is often running on the other CPU and
     * the passes catch its piece, it cost 6-14% (docs/perf.md, 2026-12-07). */
    double passes = ncpu > 0 && nlocal > 2 * ncpu ? 4 : 16;
    if (orb_param_num_state(ORB_PARAM_YIELD_PASSES) == ORB_PARAM_STATE_SET)
        passes = orb_param_num(ORB_PARAM_YIELD_PASSES);
    passes = passes < 1 ? 1 : passes > 1024 ? 1024 : passes;
    w->idle_mask = floor_pow2((unsigned)passes) - 1;
}
