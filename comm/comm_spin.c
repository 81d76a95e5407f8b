/* How long a waiting rank spins before it yields the CPU: a policy of the host, agreed on
 * at init from every rank's CPU mask. */
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
orb_status_t orb_comm_spin_default(struct orb_comm *c, double deadline, double *spin_s)
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
    const int nlocal = c->host_ranks; /* counted by host in ring_by_host (comm_init.c), which runs first */
    const int ncpu = CPU_COUNT(&all);
    if (orb_param_num_state(ORB_PARAM_SPIN_US) == ORB_PARAM_STATE_SET)
        *spin_s = orb_param_num(ORB_PARAM_SPIN_US) * 1e-6;
    else
        *spin_s = nlocal > ncpu && ncpu > 0 ? 0.0 : orb_param_num(ORB_PARAM_SPIN_US) * 1e-6;
    ORB_INFO("rank %d: %d ranks on this host, %d CPUs between them: spin %g us before yielding", c->rank, nlocal,
             ncpu, *spin_s * 1e6);
    return ORB_OK;
}

