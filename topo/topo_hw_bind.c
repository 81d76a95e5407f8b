/* Binding the calling thread to the cores of its device's NUMA node, so its host buffers
 * and the copies it drives stay on the memory controller nearest the device; with
 * ORBIT_BIND=1 and no more ranks on the node than it has cores, each rank gets its own
 * share of those cores. Two ranks that the scheduler stacks on one core otherwise take
 * turns: each hop of a small collective then costs a whole spin period while the peer
 * waits for the core (measured: docs/topology.md). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "topo_hw.h"

static hwloc_const_cpuset_t device_cpus(const struct orb_topo *t, const orb_topo_dev_t *d)
{
    hwloc_topology_t hw = t->hw;
    if (d->numa >= 0) {
        hwloc_obj_t node = hwloc_get_numanode_obj_by_os_index(hw, (unsigned)d->numa);
        return node ? node->cpuset : NULL;
    }
    unsigned dom, bus, dv, fn;
    if (d->kind != ORB_TOPO_DEV_GPU || !orb_topo_busid_parse(d->busid, &dom, &bus, &dv, &fn, NULL))
        return NULL;
    hwloc_obj_t o = hwloc_get_pcidev_by_busid(hw, dom, bus, dv, fn);
    return o ? hwloc_get_non_io_ancestor_obj(hw, o)->cpuset : NULL;
}

/* The cores of set that rank j of m sharing it gets: a contiguous run of ncores / m. */
static hwloc_bitmap_t share_of(hwloc_topology_t hw, hwloc_const_cpuset_t set, int j, int m)
{
    int nc = hwloc_get_nbobjs_inside_cpuset_by_type(hw, set, HWLOC_OBJ_CORE);
    if (nc <= 0 || m <= 0 || m > nc)
        return NULL;
    hwloc_bitmap_t mine = hwloc_bitmap_alloc();
    if (!mine)
        return NULL;
    for (int k = j * nc / m; k < (j + 1) * nc / m; k++) {
        hwloc_obj_t core = hwloc_get_obj_inside_cpuset_by_type(hw, set, HWLOC_OBJ_CORE, (unsigned)k);
        if (core)
            hwloc_bitmap_or(mine, mine, core->cpuset);
    }
    if (hwloc_bitmap_iszero(mine)) {
        hwloc_bitmap_free(mine);
        return NULL;
    }
    return mine;
}

orb_status_t orb_topo_hw_bind(const struct orb_topo *t, const orb_topo_host_t *host, int i, int mode, char *note,
                              size_t len)
{
    const orb_topo_dev_t *d = &host->dev[i];
    hwloc_const_cpuset_t set = device_cpus(t, d);
    char list[ORB_TOPO_CPUS_LEN], what[64];
    if (!set || hwloc_bitmap_iszero(set)) {
        snprintf(note, len, "rank %d: no cores known for its device: not bound", d->rank);
        return ORB_OK;
    }
    hwloc_bitmap_t cur = hwloc_bitmap_alloc();
    if (!cur)
        return ORB_ERR_NO_MEMORY;
    /* A thread already pinned inside the node (by the launcher or the user) keeps its pin. */
    if (hwloc_get_cpubind(t->hw, cur, HWLOC_CPUBIND_THREAD) == 0 && hwloc_bitmap_isincluded(cur, set) &&
        !hwloc_bitmap_isequal(cur, set)) {
        hwloc_bitmap_list_snprintf(list, sizeof list, cur);
        snprintf(note, len, "rank %d: already bound inside NUMA node %d (PUs %s)", d->rank, d->numa, list);
        hwloc_bitmap_free(cur);
        return ORB_OK;
    }
    hwloc_bitmap_free(cur);
    /* The ranks of this host on the same node share its cores, in device order. */
    int m = 0, j = 0;
    for (int k = 0; k < host->ndev; k++)
        if (host->dev[k].located && host->dev[k].numa == d->numa && device_cpus(t, &host->dev[k]) &&
            hwloc_bitmap_isequal(device_cpus(t, &host->dev[k]), set)) {
            if (k == i)
                j = m;
            m++;
        }
    hwloc_bitmap_t mine = mode == 1 ? share_of(t->hw, set, j, m) : NULL;
    hwloc_const_cpuset_t target = mine ? mine : set;
    hwloc_bitmap_list_snprintf(list, sizeof list, target);
    if (mine)
        snprintf(what, sizeof what, "share %d of %d of NUMA node %d", j + 1, m, d->numa);
    else if (mode == 1)
        snprintf(what, sizeof what, "NUMA node %d (%d ranks share it)", d->numa, m);
    else
        snprintf(what, sizeof what, "NUMA node %d", d->numa);
    if (hwloc_set_cpubind(t->hw, target, HWLOC_CPUBIND_THREAD) != 0)
        snprintf(note, len, "rank %d: binding to %s failed (%s): not bound", d->rank, list, strerror(errno));
    else
        snprintf(note, len, "rank %d: bound to %s: PUs %s", d->rank, what, list);
    if (mine)
        hwloc_bitmap_free(mine);
    return ORB_OK;
}
