/* What the tuner prices, agreed at init: the slowest link inside a host and the slowest
 * between hosts. A rank knows the transports that connect its peers (each offers a link
 * cost in its table) and its host's topology (the slowest hop of the host's ring, from
 * hwloc); every rank must choose the same algorithm for a call, so the views are
 * all-gathered and every rank takes the worst of them (largest alpha, smallest beta). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "comm/comm_impl.h"
#include "core/log.h"
#include "topo/topo.h"

typedef struct {
    double alpha_us[2], beta_gbps[2]; /* [0] inside a host, [1] between hosts */
    int32_t has[2];                   /* this rank has such peers */
    int32_t topo_class;               /* the class of its host's slowest ring hop, -1: not priced */
    double topo_gbps;                 /* that hop's bandwidth */
    double l2_bytes;                  /* its core's L2 cache (0: unknown) */
    double ranks_per_cpu;             /* its host's ranks over their CPUs (0: unknown) */
} link_view_t;

static void worse(double *alpha, double *beta, double a, double b)
{
    *alpha = fmax(*alpha, a);
    *beta = fmin(*beta, b);
}

/* This rank's view: the transports that won its peers, and its host's slowest ring hop. */
static void own_view(const struct orb_comm *c, link_view_t *v)
{
    for (int w = 0; w < 2; w++) {
        v->alpha_us[w] = 0;
        v->beta_gbps[w] = INFINITY;
        v->has[w] = 0;
    }
    const uint64_t me = c->bs.cards[c->rank].host_id;
    for (int r = 0; r < c->nranks; r++) {
        if (r == c->rank || c->tp_of[r] < 0)
            continue;
        int w = c->bs.cards[r].host_id != me;
        const orb_link_cost_t *l = c->shm_measured_how && orb_comm_peer_shm(c, r)
                                       ? &c->shm_measured /* comm_calib.c */
                                       : &orb_transports[c->tp_of[r]]->link;
        worse(&v->alpha_us[w], &v->beta_gbps[w], l->alpha_us, l->beta_gbps);
        v->has[w] = 1;
    }
    v->topo_class = -1;
    v->topo_gbps = INFINITY;
    v->l2_bytes = (double)orb_comm_l2_bytes();
    v->ranks_per_cpu = c->host_cpus > 0 ? (double)c->host_ranks / c->host_cpus : 0;
    const orb_topo_host_t *h = c->topo_host;
    /* Only a ring the topology placed from real data, with a hop to price (2 ranks or more). */
    if (v->has[0] && h && h->optimized && h->ndev >= 2 && h->score.bw > 0) {
        v->topo_class = (int32_t)h->score.cls;
        v->topo_gbps = h->score.bw / 1000.0; /* MB/s */
        v->beta_gbps[0] = fmin(v->beta_gbps[0], v->topo_gbps);
    }
}

orb_status_t orb_comm_price_links(struct orb_comm *c, double deadline, char *err, size_t errlen)
{
    link_view_t *all = calloc((size_t)c->nranks, sizeof *all);
    if (!all) {
        snprintf(err, errlen, "no memory for the link costs of %d ranks", c->nranks);
        return ORB_ERR_NO_MEMORY;
    }
    own_view(c, &all[c->rank]);
    orb_status_t st = orb_bootstrap_allgather(&c->bs, all, sizeof *all, deadline);
    if (st != ORB_OK) {
        snprintf(err, errlen, "a rank left while the link costs were exchanged");
        free(all);
        return st;
    }
    link_view_t agreed;
    for (int w = 0; w < 2; w++) {
        agreed.alpha_us[w] = 0;
        agreed.beta_gbps[w] = INFINITY;
        agreed.has[w] = 0;
    }
    agreed.topo_class = -1;
    agreed.topo_gbps = INFINITY;
    double l2 = INFINITY; /* the smallest, and 0 (unknown) as soon as one rank cannot tell */
    double per_cpu = 0;   /* the most crowded host's */
    for (int r = 0; r < c->nranks; r++) {
        l2 = fmin(l2, all[r].l2_bytes);
        per_cpu = fmax(per_cpu, all[r].ranks_per_cpu);
        for (int w = 0; w < 2; w++)
            if (all[r].has[w]) {
                worse(&agreed.alpha_us[w], &agreed.beta_gbps[w], all[r].alpha_us[w], all[r].beta_gbps[w]);
                agreed.has[w] = 1;
            }
        if (all[r].topo_class >= 0 && all[r].topo_gbps < agreed.topo_gbps) {
            agreed.topo_gbps = all[r].topo_gbps;
            agreed.topo_class = all[r].topo_class;
        }
    }
    free(all);
    /* Without peers of a kind the tuner never prices that kind: the defaults stand in. */
    c->link_intra = agreed.has[0] ? (orb_link_cost_t){agreed.alpha_us[0], agreed.beta_gbps[0], 0, 0}
                                  : orb_shm_transport.link;
    c->link_inter = agreed.has[1] ? (orb_link_cost_t){agreed.alpha_us[1], agreed.beta_gbps[1], 0, 0}
                                  : orb_tcp_transport.link;
    /* the tuner's cache terms are for shared-memory slots: only the intra-host class carries
     * the L2 (and the tuner drops it once ranks span hosts) */
    c->link_intra.l2_bytes = isfinite(l2) ? l2 : 0;
    c->link_intra.ranks_per_cpu = per_cpu;
    if (c->rank == 0 && orb_log_level() >= ORB_LOG_INFO) {
        char topo[96] = "";
        if (agreed.topo_class >= 0)
            snprintf(topo, sizeof topo, ", the slowest ring hop %s at %.1f GB/s",
                     orb_topo_class_name((orb_topo_class_t)agreed.topo_class), agreed.topo_gbps);
        char inter[96] = "no peers on other hosts";
        if (agreed.has[1])
            snprintf(inter, sizeof inter, "%.2f us, %.2f GB/s", c->link_inter.alpha_us, c->link_inter.beta_gbps);
        ORB_INFO("tuner links: inside a host %.2f us, %.2f GB/s (%s%s); between hosts %s; the smallest L2 %.0f KiB; "
                 "%.3g ranks a CPU at most",
                 c->link_intra.alpha_us,
                 c->link_intra.beta_gbps,
                 !agreed.has[0]                ? "no peers on this host"
                 : c->shm_measured_how == 1 ? "measured at init"
                 : c->shm_measured_how == 2 ? "measured earlier, from the cache"
                                            : "the transports' cost",
                 topo, inter, c->link_intra.l2_bytes / 1024, c->link_intra.ranks_per_cpu);
    }
    return ORB_OK;
}
