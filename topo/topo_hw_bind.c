/* Binding the calling thread to the cores of its device's NUMA node, so its host buffers
 * and the copies it drives stay on the memory controller nearest the device. */
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

orb_status_t orb_topo_hw_bind(const struct orb_topo *t, const orb_topo_dev_t *d, char *note,
                              size_t len)
{
    hwloc_const_cpuset_t set = device_cpus(t, d);
    char list[ORB_TOPO_CPUS_LEN];
    if (!set || hwloc_bitmap_iszero(set)) {
        snprintf(note, len, "rank %d: no cores known for its device: not bound", d->rank);
        return ORB_OK;
    }
    hwloc_bitmap_list_snprintf(list, sizeof list, set);
    hwloc_bitmap_t cur = hwloc_bitmap_alloc();
    if (!cur)
        return ORB_ERR_NO_MEMORY;
    /* A thread already pinned inside the node (by the launcher or the user) keeps its pin. */
    if (hwloc_get_cpubind(t->hw, cur, HWLOC_CPUBIND_THREAD) == 0 && hwloc_bitmap_isincluded(cur, set) &&
        !hwloc_bitmap_isequal(cur, set)) {
        snprintf(note, len, "rank %d: already bound inside NUMA node %d (cores %s)", d->rank, d->numa, list);
    } else if (hwloc_set_cpubind(t->hw, set, HWLOC_CPUBIND_THREAD) != 0) {
        snprintf(note, len, "rank %d: binding to %s failed (%s): not bound", d->rank, list, strerror(errno));
    } else {
        snprintf(note, len, "rank %d: bound to NUMA node %d, cores %s", d->rank, d->numa, list);
    }
    hwloc_bitmap_free(cur);
    return ORB_OK;
}
