/* Finding each rank's device in the hwloc tree, the class and bandwidth of every pair, and
 * each device's nearest NIC. GPU ranks are found by PCI bus id; CPU ranks by the NUMA node
 * their binding falls in, or round-robin over NUMA nodes when they are not bound to one. */
#include <stdlib.h>
#include <string.h>

#include "topo_hw.h"

#define MAX_NUMAS 256

static hwloc_const_cpuset_t local_cpus(hwloc_topology_t hw, const orb_topo_loc_t *loc)
{
    hwloc_obj_t node = loc->numa >= 0 ? hwloc_get_numanode_obj_by_os_index(hw, (unsigned)loc->numa) : NULL;
    return node ? node->cpuset : loc->cpuset;
}

static hwloc_obj_t cpu_rank_node(hwloc_obj_t *numas, int nn, const char *req, int *rr)
{
    hwloc_obj_t cand[MAX_NUMAS];
    int nc = 0;
    hwloc_bitmap_t set = req ? hwloc_bitmap_alloc() : NULL;
    if (set && hwloc_bitmap_list_sscanf(set, req) == 0)
        for (int k = 0; k < nn; k++)
            if (hwloc_bitmap_intersects(numas[k]->cpuset, set))
                cand[nc++] = numas[k];
    hwloc_bitmap_free(set);
    if (nc == 1)
        return cand[0];
    if (nc == 0) { /* unbound (or bound outside every node): spread over all */
        memcpy(cand, numas, (size_t)nn * sizeof *cand);
        nc = nn;
    }
    return nc ? cand[(*rr)++ % nc] : NULL;
}

static int gpu_index(const struct orb_topo *t, hwloc_obj_t o)
{
    for (int g = 0; g < t->ngpus; g++)
        if (t->gpu_obj[g] == o)
            return g;
    return -1;
}

static void nearest_nics(hwloc_topology_t hw, orb_topo_host_t *h, const orb_topo_loc_t *loc,
                         const orb_topo_loc_t *nicloc)
{
    int n = h->ndev, nk = h->nnics;
    int *load = calloc((size_t)nk + 1, sizeof *load);
    if (!load)
        return;
    for (int i = 0; i < n; i++) {
        orb_topo_dev_t *d = &h->dev[i];
        d->nic = -1;
        d->nic_class = ORB_TOPO_NET;
        for (int k = 0; d->located && k < nk; k++) {
            uint32_t bw;
            orb_topo_class_t c = orb_topo_hw_class(hw, &loc[i], &nicloc[k], &bw);
            h->nic_cls[i * nk + k] = c;
            if (c < d->nic_class)
                d->nic_class = c;
        }
    }
    /* Devices with the nearest NICs choose first; equally near NICs are then shared out,
     * so GPUs beside a dual-port HCA get a port each. */
    for (int c = 0; c < ORB_TOPO_NET; c++)
        for (int i = 0; i < n; i++) {
            orb_topo_dev_t *d = &h->dev[i];
            if (!d->located || (int)d->nic_class != c)
                continue;
            for (int k = 0; k < nk; k++)
                if (h->nic_cls[i * nk + k] == d->nic_class && (d->nic < 0 || load[k] < load[d->nic]))
                    d->nic = k;
            load[d->nic]++;
        }
    free(load);
}

int orb_topo_hw_locate(const struct orb_topo *t, orb_topo_host_t *h, const char *const *cpu_req)
{
    hwloc_topology_t hw = t->hw;
    int n = h->ndev, located = 0, rr = 0;
    hwloc_obj_t numas[MAX_NUMAS];
    int nn = orb_topo_hw_cpu_numas(hw, numas, MAX_NUMAS);
    if (nn > MAX_NUMAS)
        nn = MAX_NUMAS;
    orb_topo_loc_t *loc = calloc((size_t)(n + t->nnics) + 1, sizeof *loc);
    int *gpu = calloc((size_t)n + 1, sizeof *gpu);
    if (!loc || !gpu) {
        free(loc);
        free(gpu);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        orb_topo_dev_t *d = &h->dev[i];
        gpu[i] = -1;
        if (d->kind == ORB_TOPO_DEV_GPU) {
            unsigned dom, bus, dv, fn;
            hwloc_obj_t o = NULL;
            if (orb_topo_busid_parse(d->busid, &dom, &bus, &dv, &fn, NULL))
                o = hwloc_get_pcidev_by_busid(hw, dom, bus, dv, fn);
            if (!o)
                continue;
            orb_topo_hw_where(hw, o, NULL, &loc[i]);
            orb_topo_hw_osdev_name(o, d->name, sizeof d->name);
            gpu[i] = gpu_index(t, o);
        } else {
            hwloc_obj_t node = cpu_rank_node(numas, nn, cpu_req[i], &rr);
            if (!node)
                continue;
            orb_topo_hw_where(hw, NULL, node, &loc[i]);
        }
        hwloc_const_cpuset_t cpus = local_cpus(hw, &loc[i]);
        d->located = 1;
        d->numa = loc[i].numa;
        d->package = loc[i].package;
        d->ncores = hwloc_get_nbobjs_inside_cpuset_by_type(hw, cpus, HWLOC_OBJ_CORE);
        if (hwloc_bitmap_list_snprintf(d->cpus, sizeof d->cpus, cpus) >= (int)sizeof d->cpus)
            strcpy(d->cpus + sizeof d->cpus - 4, "...");
        located++;
    }
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            uint32_t bw = ORB_TOPO_BW_SYS;
            orb_topo_class_t c = ORB_TOPO_SYS; /* assumed for unlocated devices */
            if (i == j) {
                c = ORB_TOPO_LOC;
                bw = ORB_TOPO_BW_LOC;
            } else if (h->dev[i].located && h->dev[j].located) {
                c = orb_topo_hw_class(hw, &loc[i], &loc[j], &bw);
                uint32_t v = gpu[i] >= 0 && gpu[j] >= 0 && t->nvl ? t->nvl[gpu[i] * t->ngpus + gpu[j]] : 0;
                if (c != ORB_TOPO_LOC && v > 0) {
                    c = ORB_TOPO_NVL;
                    bw = v;
                }
            }
            h->cls[i * n + j] = c;
            h->bw[i * n + j] = bw;
        }
    orb_topo_loc_t *nicloc = loc + n;
    for (int k = 0; k < h->nnics; k++)
        orb_topo_hw_where(hw, t->nic_obj[k], NULL, &nicloc[k]);
    nearest_nics(hw, h, loc, nicloc);
    free(loc);
    free(gpu);
    return located;
}
