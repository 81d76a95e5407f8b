/* Ring order and CPU binding at init, from the topology (topo/): every rank describes its
 * device, the descriptions are all-gathered, and each host's ranks are placed by the same
 * deterministic search, so every rank computes the same ring. Hosts are chained in the order
 * of their lowest rank, each host's ranks in its own ring order. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/comm_impl.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/param.h"
#include "topo/topo.h"

typedef struct {
    char desc[ORB_TOPO_DESC_LEN];
    int32_t host_pos; /* position in its host's ring, filled in the second round */
    int32_t pad;
} rank_desc_t;

/* hwloc's discovery goes through libudev, whose global state is not thread-safe: ranks that
 * are threads of one process (orb_comm_init_all) load and free topologies one at a time. */
static pthread_mutex_t topo_lock = PTHREAD_MUTEX_INITIALIZER;

void orb_comm_topo_free(struct orb_comm *c)
{
    orb_topo_host_free(c->topo_host);
    pthread_mutex_lock(&topo_lock);
    orb_topo_free(c->topo);
    pthread_mutex_unlock(&topo_lock);
    c->topo_host = NULL;
    c->topo = NULL;
}

orb_status_t orb_comm_order_ranks(struct orb_comm *c, double deadline, char *err, size_t errlen)
{
    const int n = c->nranks;
    rank_desc_t *all = calloc((size_t)n, sizeof *all);
    orb_topo_rank_t *mine = calloc((size_t)n, sizeof *mine);
    if (!all || !mine) {
        free(all);
        free(mine);
        return ORB_ERR_NO_MEMORY;
    }
    pthread_mutex_lock(&topo_lock);
    orb_status_t st = orb_topo_load(NULL, &c->topo);
    pthread_mutex_unlock(&topo_lock);
    if (st != ORB_OK) {
        snprintf(err, errlen, "cannot load the topology (ORBIT_TOPO_FILE=\"%s\"): %s",
                 orb_param_str(ORB_PARAM_S_TOPO_FILE), orb_strerror(st));
        goto out;
    }
    orb_topo_dump(c->topo, NULL);
    /* A CPU rank is described by its binding; a GPU rank will be described by its bus id. */
    orb_topo_self_desc(c->topo, all[c->rank].desc, sizeof all[c->rank].desc);
    int was_bound = strcmp(all[c->rank].desc, "cpu") != 0;
    st = orb_bootstrap_allgather(&c->bs, all, sizeof *all, deadline);
    if (st != ORB_OK) {
        snprintf(err, errlen, "a rank left while the topology was exchanged");
        goto out;
    }
    int nlocal = 0;
    uint64_t me = c->bs.cards[c->rank].host_id;
    for (int r = 0; r < n; r++)
        if (c->bs.cards[r].host_id == me) {
            mine[nlocal].rank = r;
            memcpy(mine[nlocal].desc, all[r].desc, sizeof mine[nlocal].desc);
            mine[nlocal].desc[ORB_TOPO_DESC_LEN - 1] = 0;
            nlocal++;
        }
    st = orb_topo_place(c->topo, mine, nlocal, &c->topo_host);
    if (st != ORB_OK) {
        snprintf(err, errlen, "cannot place this host's %d ranks on the topology: %s", nlocal, orb_strerror(st));
        goto out;
    }
    int lowest = mine[0].rank;
    if (c->rank == lowest)
        orb_topo_host_log(c->topo_host);
    /* Binding narrows an unbound rank to its device's NUMA node; a rank the launcher already
     * bound (mpirun --bind-to, taskset) keeps what it was given. */
    if (!was_bound) {
        orb_topo_bind(c->topo, c->topo_host, c->rank, NULL, 0); /* logs what it did at INFO */
    }
    /* second round: every rank's position in its host's ring */
    for (int i = 0; i < nlocal; i++)
        if (c->topo_host->ring[i] == c->rank)
            all[c->rank].host_pos = i;
    st = orb_bootstrap_allgather(&c->bs, all, sizeof *all, deadline);
    if (st != ORB_OK) {
        snprintf(err, errlen, "a rank left while the ring was exchanged");
        goto out;
    }
    char *placed = calloc((size_t)n, 1);
    if (!placed) {
        st = ORB_ERR_NO_MEMORY;
        goto out;
    }
    int k = 0;
    for (int r = 0; r < n; r++) { /* hosts in order of their lowest rank */
        if (placed[r])
            continue;
        int start = k;
        for (int q = r; q < n; q++)
            if (!placed[q] && c->bs.cards[q].host_id == c->bs.cards[r].host_id) {
                c->ring[k++] = q;
                placed[q] = 1;
            }
        for (int i = start + 1; i < k; i++) { /* insertion sort by position in the host ring */
            int v = c->ring[i], j = i;
            while (j > start && all[c->ring[j - 1]].host_pos > all[v].host_pos) {
                c->ring[j] = c->ring[j - 1];
                j--;
            }
            c->ring[j] = v;
        }
    }
    free(placed);
    if (orb_log_level() >= ORB_LOG_INFO && c->rank == 0) {
        char line[1024];
        int m = snprintf(line, sizeof line, "ring:");
        for (int i = 0; i < n && m < (int)sizeof line - 16; i++)
            m += snprintf(line + m, sizeof line - (size_t)m, " %d", c->ring[i]);
        ORB_INFO("%s%s", line, n > 64 ? " ..." : "");
    }
    st = ORB_OK;
out:
    free(all);
    free(mine);
    return st;
}
