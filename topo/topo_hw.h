/* hwloc-only helpers shared by the topo_hw_*.c files. */
#ifndef ORB_TOPO_HW_H
#define ORB_TOPO_HW_H

#include <hwloc.h>

#include "topo_priv.h"

/* Where an object sits: its PCI device (NULL for a CPU rank), NUMA node (OS index, -1 when
 * ambiguous), package (logical index, -1 when ambiguous) and the PUs that are local to it. */
typedef struct {
    hwloc_obj_t pci;
    int numa;
    int package;
    hwloc_const_cpuset_t cpuset;
    uint32_t pcie_bw; /* MB/s of its own PCIe link (nominal when unknown) */
} orb_topo_loc_t;

/* Fills loc for a PCI device, or for a NUMA node when pci is NULL. */
void orb_topo_hw_where(hwloc_topology_t hw, hwloc_obj_t pci, hwloc_obj_t numa, orb_topo_loc_t *loc);
/* NUMA nodes that have CPUs, in logical order; returns the count, fills at most max. */
int orb_topo_hw_cpu_numas(hwloc_topology_t hw, hwloc_obj_t *out, int max);
orb_topo_class_t orb_topo_hw_class(hwloc_topology_t hw, const orb_topo_loc_t *a,
                                   const orb_topo_loc_t *b, uint32_t *bw);
/* First CUDA/NVML OS device name under a PCI device ("" when none). */
void orb_topo_hw_osdev_name(hwloc_obj_t pci, char *name, size_t len);
/* The GPU NVLink matrix from hwloc's NVLinkBandwidth distances; 0 when there are none. */
int orb_topo_hw_nvlink(struct orb_topo *t);

#endif
