/* Link class and bandwidth between two located objects (GPU, NIC or a CPU rank's NUMA
 * node), from the position of their PCI devices in the hwloc tree. */
#include <stdio.h>
#include <string.h>

#include "topo_hw.h"

static int single_numa(hwloc_topology_t hw, hwloc_const_cpuset_t set)
{
    hwloc_obj_t nodes[256];
    int n = orb_topo_hw_cpu_numas(hw, nodes, 256), found = -1;
    for (int i = 0; i < n && i < 256; i++)
        if (hwloc_bitmap_intersects(nodes[i]->cpuset, set)) {
            if (found >= 0)
                return -1;
            found = (int)nodes[i]->os_index;
        }
    return found;
}

static int single_package(hwloc_topology_t hw, hwloc_const_cpuset_t set)
{
    int found = -1, any = 0;
    for (hwloc_obj_t p = NULL; (p = hwloc_get_next_obj_by_type(hw, HWLOC_OBJ_PACKAGE, p));) {
        any = 1;
        if (p->cpuset && hwloc_bitmap_intersects(p->cpuset, set)) {
            if (found >= 0)
                return -1;
            found = (int)p->logical_index;
        }
    }
    return any ? found : 0; /* no Package objects (some VMs): one package */
}

void orb_topo_hw_where(hwloc_topology_t hw, hwloc_obj_t pci, hwloc_obj_t numa, orb_topo_loc_t *loc)
{
    loc->pci = pci;
    loc->pcie_bw = ORB_TOPO_BW_MEM;
    if (pci) {
        /* An I/O object is local to the CPUs of its first non-I/O ancestor (a Package,
         * Group or NUMA-level object); that set decides its NUMA node and package. */
        hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(hw, pci);
        loc->cpuset = anc->cpuset;
        float gbs = pci->attr->pcidev.linkspeed;
        loc->pcie_bw = gbs > 0.1f ? (uint32_t)(gbs * 1000.0f) : ORB_TOPO_BW_PCIE;
    } else {
        loc->cpuset = numa->cpuset;
    }
    loc->numa = single_numa(hw, loc->cpuset);
    loc->package = single_package(hw, loc->cpuset);
}

static int bridges_between(hwloc_obj_t o, hwloc_obj_t anc)
{
    int n = 0;
    for (o = o->parent; o && o != anc; o = o->parent)
        n += o->type == HWLOC_OBJ_BRIDGE;
    return n;
}

static uint32_t min_u32(uint32_t a, uint32_t b) { return a < b ? a : b; }

orb_topo_class_t orb_topo_hw_class(hwloc_topology_t hw, const orb_topo_loc_t *a,
                                   const orb_topo_loc_t *b, uint32_t *bw)
{
    uint32_t base = min_u32(a->pcie_bw, b->pcie_bw);
    *bw = base;
    if (a->pci && b->pci) {
        if (a->pci == b->pci) {
            *bw = ORB_TOPO_BW_LOC;
            return ORB_TOPO_LOC;
        }
        hwloc_obj_t c = hwloc_get_common_ancestor_obj(hw, a->pci, b->pci);
        if (c && hwloc_obj_type_is_io(c->type)) {
            if (c->type == HWLOC_OBJ_BRIDGE && c->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_HOST)
                return ORB_TOPO_PHB;
            /* The upstream port of the switch both hang from: one downstream port each. */
            if (bridges_between(a->pci, c) <= 1 && bridges_between(b->pci, c) <= 1)
                return ORB_TOPO_PIX;
            return ORB_TOPO_PXB;
        }
    }
    if (a->numa >= 0 && a->numa == b->numa)
        return (a->pci != NULL) != (b->pci != NULL) ? ORB_TOPO_PHB : ORB_TOPO_NODE;
    if (a->package >= 0 && a->package == b->package) {
        *bw = min_u32(base, ORB_TOPO_BW_PKG);
        return ORB_TOPO_PKG;
    }
    *bw = min_u32(base, ORB_TOPO_BW_SYS);
    return ORB_TOPO_SYS;
}

void orb_topo_hw_osdev_name(hwloc_obj_t pci, char *name, size_t len)
{
    const char *best = NULL;
    int rank = 9;
    for (hwloc_obj_t c = pci->io_first_child; c; c = c->next_sibling) {
        if (c->type != HWLOC_OBJ_OS_DEVICE || !c->name)
            continue;
        /* cuda0 is what users see; nvml0 and opencl0d0 follow; card0/renderD128 say little. */
        int r = !strncmp(c->name, "cuda", 4)     ? 0
                : !strncmp(c->name, "nvml", 4)   ? 1
                : !strncmp(c->name, "opencl", 6) ? 2
                                                 : 9;
        if (r < rank) {
            rank = r;
            best = c->name;
        }
    }
    snprintf(name, len, "%s", best ? best : "");
}
