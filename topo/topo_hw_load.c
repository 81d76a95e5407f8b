/* Loading a topology with hwloc 2.x: this machine or an XML export, with every I/O object
 * kept (PCI bridges give the switch/host-bridge ladder, OS devices name GPUs and NICs,
 * and the NVLinkBandwidth distances refer to both). Then the GPUs and NICs it holds. */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "topo_hw.h"

static int pci_cmp(hwloc_obj_t a, hwloc_obj_t b)
{
    const struct hwloc_pcidev_attr_s *x = &a->attr->pcidev, *y = &b->attr->pcidev;
    if (x->domain != y->domain)
        return x->domain < y->domain ? -1 : 1;
    if (x->bus != y->bus)
        return x->bus < y->bus ? -1 : 1;
    if (x->dev != y->dev)
        return x->dev < y->dev ? -1 : 1;
    return (int)x->func - (int)y->func;
}

static void pci_busid(hwloc_obj_t o, char *out)
{
    snprintf(out, ORB_TOPO_BUSID_LEN, "%04x:%02x:%02x.%x", (unsigned)o->attr->pcidev.domain,
             (unsigned)o->attr->pcidev.bus, (unsigned)o->attr->pcidev.dev,
             (unsigned)o->attr->pcidev.func);
}

/* Insertion into a list kept in bus id order (a machine has a handful of GPUs and NICs). */
static void insert_sorted(void **objs, int n, hwloc_obj_t o)
{
    int k = n;
    while (k > 0 && pci_cmp(objs[k - 1], o) > 0) {
        objs[k] = objs[k - 1];
        k--;
    }
    objs[k] = o;
}

static int is_nvidia_gpu(hwloc_obj_t o)
{
    /* 0x0302: 3D controller (datacenter parts), 0x0300: VGA (workstation parts). Some
     * exports carry no CUDA/NVML OS device, so the PCI identity is what counts. */
    return o->attr->pcidev.vendor_id == 0x10de &&
           (o->attr->pcidev.class_id == 0x0302 || o->attr->pcidev.class_id == 0x0300);
}

static int find_gpus(struct orb_topo *t)
{
    hwloc_topology_t hw = t->hw;
    int n = 0;
    for (hwloc_obj_t o = NULL; (o = hwloc_get_next_pcidev(hw, o));)
        n += is_nvidia_gpu(o);
    t->gpu_obj = calloc((size_t)n + 1, sizeof *t->gpu_obj);
    t->gpu_busid = calloc((size_t)n + 1, sizeof *t->gpu_busid);
    if (!t->gpu_obj || !t->gpu_busid)
        return -1;
    for (hwloc_obj_t o = NULL; (o = hwloc_get_next_pcidev(hw, o));)
        if (is_nvidia_gpu(o))
            insert_sorted(t->gpu_obj, t->ngpus++, o);
    for (int i = 0; i < t->ngpus; i++)
        pci_busid(t->gpu_obj[i], t->gpu_busid[i]);
    return 0;
}

static hwloc_obj_t pci_parent(hwloc_obj_t o)
{
    while (o && o->type != HWLOC_OBJ_PCI_DEVICE && hwloc_obj_type_is_io(o->type))
        o = o->parent;
    return o && o->type == HWLOC_OBJ_PCI_DEVICE ? o : NULL;
}

/* A NIC is a PCI device with an OpenFabrics (RDMA) or Net OS device below it; its name is
 * the OpenFabrics one (mlx5_0) when there is one, since that is what verbs opens. */
static int find_nics(struct orb_topo *t)
{
    hwloc_topology_t hw = t->hw;
    int n = 0, nrdma = 0;
    for (hwloc_obj_t o = NULL; (o = hwloc_get_next_osdev(hw, o));)
        n++;
    void **objs = calloc((size_t)n + 1, sizeof *objs);
    t->nics = calloc((size_t)n + 1, sizeof *t->nics);
    t->nic_obj = calloc((size_t)n + 1, sizeof *t->nic_obj);
    if (!objs || !t->nics || !t->nic_obj) {
        free(objs);
        return -1;
    }
    int npci = 0;
    for (hwloc_obj_t o = NULL; (o = hwloc_get_next_osdev(hw, o));) {
        hwloc_obj_osdev_type_t ty = o->attr->osdev.type;
        hwloc_obj_t p = pci_parent(o);
        if ((ty != HWLOC_OBJ_OSDEV_OPENFABRICS && ty != HWLOC_OBJ_OSDEV_NETWORK) || !p)
            continue;
        int k = 0;
        while (k < npci && objs[k] != p)
            k++;
        if (k == npci)
            insert_sorted(objs, npci++, p);
    }
    for (int k = 0; k < npci; k++) {
        hwloc_obj_t p = objs[k];
        orb_topo_nic_t nic;
        memset(&nic, 0, sizeof nic);
        for (hwloc_obj_t c = p->io_first_child; c; c = c->next_sibling) {
            if (c->type != HWLOC_OBJ_OS_DEVICE || !c->name)
                continue;
            if (c->attr->osdev.type == HWLOC_OBJ_OSDEV_OPENFABRICS && !nic.rdma) {
                nic.rdma = 1;
                snprintf(nic.name, sizeof nic.name, "%s", c->name);
            } else if (c->attr->osdev.type == HWLOC_OBJ_OSDEV_NETWORK && !nic.name[0]) {
                snprintf(nic.name, sizeof nic.name, "%s", c->name);
            }
        }
        pci_busid(p, nic.busid);
        orb_topo_loc_t loc;
        orb_topo_hw_where(hw, p, NULL, &loc);
        nic.numa = loc.numa;
        nrdma += nic.rdma;
        t->nics[t->nnics] = nic;
        t->nic_obj[t->nnics++] = p;
    }
    free(objs);
    /* With RDMA HCAs present, plain Ethernet ports are management or storage networks. */
    if (nrdma && nrdma < t->nnics) {
        int m = 0;
        for (int k = 0; k < t->nnics; k++)
            if (t->nics[k].rdma) {
                t->nics[m] = t->nics[k];
                t->nic_obj[m++] = t->nic_obj[k];
            }
        snprintf(t->nic_note, sizeof t->nic_note, "%d Ethernet-only NIC(s) left out: RDMA HCAs present",
                 t->nnics - m);
        t->nnics = m;
    }
    return 0;
}

orb_status_t orb_topo_hw_open(struct orb_topo *t, const char *xml)
{
    hwloc_topology_t hw;
    if (hwloc_topology_init(&hw) != 0) {
        snprintf(t->note, sizeof t->note, "hwloc_topology_init failed: %s", strerror(errno));
        return ORB_OK;
    }
    hwloc_topology_set_io_types_filter(hw, HWLOC_TYPE_FILTER_KEEP_ALL);
#if HWLOC_API_VERSION >= 0x00020100
    /* PCI devices and their locality from sysfs (hwloc's linux component), not libpciaccess:
     * the latter also names every device from pci.ids, growing one array by realloc per entry
     * (30 ms of each rank's init here; 1.5 s under AddressSanitizer), and orbit reads no name. */
    if (!xml)
        hwloc_topology_set_components(hw, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, "pci");
#endif
    if (xml && hwloc_topology_set_xml(hw, xml) != 0) {
        ORB_WARN("topology: cannot use hwloc XML %s: %s", xml, strerror(errno));
        hwloc_topology_destroy(hw);
        return ORB_ERR_INVALID_ARG;
    }
    if (hwloc_topology_load(hw) != 0) {
        int e = errno;
        hwloc_topology_destroy(hw);
        if (xml) {
            ORB_WARN("topology: hwloc could not load %s: %s", xml, strerror(e));
            return ORB_ERR_INVALID_ARG;
        }
        snprintf(t->note, sizeof t->note, "hwloc could not read this machine: %s", strerror(e));
        return ORB_OK;
    }
    t->hw = hw;
    t->this_machine = hwloc_topology_is_thissystem(hw);
    if (!xml) {
        /* hwloc's PCI plugin unloads libpciaccess with the last topology, and what that
         * library still points at then reads as leaked to LeakSanitizer in every program
         * that made a communicator. Keeping it resident costs nothing. */
        void *pciaccess = dlopen("libpciaccess.so.0", RTLD_LAZY | RTLD_NOLOAD | RTLD_NODELETE);
        if (pciaccess)
            dlclose(pciaccess);
    }
    if (find_gpus(t) != 0 || find_nics(t) != 0)
        return ORB_ERR_NO_MEMORY;
    if (t->ngpus > 1 && !orb_topo_hw_nvlink(t) && t->this_machine) {
        char why[128] = "";
        t->nvl = calloc((size_t)t->ngpus * (size_t)t->ngpus, sizeof *t->nvl);
        if (!t->nvl)
            return ORB_ERR_NO_MEMORY;
        if (orb_topo_nvml_matrix(t->ngpus, t->gpu_busid, t->nvl, why, sizeof why)) {
            snprintf(t->nvl_source, sizeof t->nvl_source, "NVML");
        } else {
            free(t->nvl);
            t->nvl = NULL;
            ORB_INFO("topology: no NVLink data (%s)", why);
        }
    }
    return ORB_OK;
}

void orb_topo_hw_close(struct orb_topo *t)
{
    if (t->hw)
        hwloc_topology_destroy(t->hw);
    t->hw = NULL;
}

int orb_topo_hw_cpu_numas(hwloc_topology_t hw, hwloc_obj_t *out, int max)
{
    int n = 0;
    for (hwloc_obj_t o = NULL; (o = hwloc_get_next_obj_by_type(hw, HWLOC_OBJ_NUMANODE, o));) {
        /* Memory-only nodes (GPU memory on POWER9, CXL) hold no ranks. */
        if (!o->cpuset || hwloc_bitmap_iszero(o->cpuset))
            continue;
        if (n < max)
            out[n] = o;
        n++;
    }
    return n;
}

int orb_topo_hw_numa_nodes(const struct orb_topo *t, int i, char *cpus, size_t len)
{
    hwloc_obj_t nodes[256];
    int n = orb_topo_hw_cpu_numas(t->hw, nodes, 256);
    if (cpus && len) {
        cpus[0] = '\0';
        if (i >= 0 && i < n && i < 256)
            hwloc_bitmap_list_snprintf(cpus, len, nodes[i]->cpuset);
    }
    return n;
}

orb_status_t orb_topo_hw_self_desc(const struct orb_topo *t, char *desc, size_t len)
{
    snprintf(desc, len, "cpu");
    if (!t->this_machine)
        return ORB_OK;
    hwloc_bitmap_t cur = hwloc_bitmap_alloc();
    if (!cur)
        return ORB_ERR_NO_MEMORY;
    if (hwloc_get_cpubind(t->hw, cur, HWLOC_CPUBIND_THREAD) == 0 &&
        !hwloc_bitmap_isincluded(hwloc_topology_get_allowed_cpuset(t->hw), cur)) {
        char list[ORB_TOPO_DESC_LEN];
        int n = hwloc_bitmap_list_snprintf(list, sizeof list, cur);
        /* A set too long to send whole still places the rank: its first PU names the node. */
        if (n >= (int)len - 4 || n >= (int)sizeof list)
            snprintf(desc, len, "cpu:%d", hwloc_bitmap_first(cur));
        else
            snprintf(desc, len, "cpu:%s", list);
    }
    hwloc_bitmap_free(cur);
    return ORB_OK;
}

orb_status_t orb_topo_hw_dump(const struct orb_topo *t, const char *path)
{
    if (hwloc_topology_export_xml(t->hw, path, 0) != 0) {
        ORB_WARN("topology: cannot write %s: %s", path, strerror(errno));
        return ORB_ERR_SYSTEM;
    }
    ORB_INFO("topology: written to %s", path);
    return ORB_OK;
}
