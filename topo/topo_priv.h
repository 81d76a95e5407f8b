/* Internals shared by the topo files. Discovery (topo_hw_*.c with hwloc, topo_nohw.c
 * without) fills struct orb_topo and locates devices; the rest (ordering, explanation) only
 * reads the resulting matrices, so it builds and is tested the same either way. */
#ifndef ORB_TOPO_PRIV_H
#define ORB_TOPO_PRIV_H

#include "topo.h"

/* Nominal bandwidths in MB/s, used where hwloc gives none. They only need the right order
 * of magnitude: the ring compares them, it never promises them. */
#define ORB_TOPO_BW_PCIE 12000   /* a PCIe Gen3 x16 link after protocol overhead */
#define ORB_TOPO_BW_MEM 20000    /* CPU ranks copying through memory on one NUMA node */
#define ORB_TOPO_BW_PKG 20000    /* between NUMA nodes of one package */
#define ORB_TOPO_BW_SYS 10000    /* between sockets (QPI/UPI/X-bus class) */
#define ORB_TOPO_BW_LOC 1000000  /* two ranks on one device */

struct orb_topo {
    void *hw; /* hwloc_topology_t, NULL without data */
    char source[256];
    char note[256];
    int this_machine;
    int ngpus;
    char (*gpu_busid)[ORB_TOPO_BUSID_LEN];
    void **gpu_obj;   /* hwloc PCI objects, parallel to gpu_busid */
    uint32_t *nvl;    /* ngpus*ngpus NVLink MB/s, NULL when no NVLink data */
    char nvl_source[64];
    int nnics;
    orb_topo_nic_t *nics;
    void **nic_obj;   /* hwloc PCI objects of the NICs */
    char nic_note[128];
};

/* Discovery backend. */
orb_status_t orb_topo_hw_open(struct orb_topo *t, const char *xml_path);
void orb_topo_hw_close(struct orb_topo *t);
/* Fills located/numa/package/ncores/cpus/name/nic/nic_class of every device and the cls and
 * bw matrices (host->nics is already set); cpu_req[i] is the PU list a CPU rank is bound to,
 * or NULL. Returns how many devices were located, -1 when out of memory. */
int orb_topo_hw_locate(const struct orb_topo *t, orb_topo_host_t *host, const char *const *cpu_req);
int orb_topo_hw_numa_nodes(const struct orb_topo *t, int i, char *cpus, size_t len);
orb_status_t orb_topo_hw_self_desc(const struct orb_topo *t, char *desc, size_t len);
orb_status_t orb_topo_hw_dump(const struct orb_topo *t, const char *path);
/* Binds the calling thread for device i of host: mode 1 its share of the node's cores
 * (the whole node when the node has more ranks than cores), mode 2 the whole node. */
orb_status_t orb_topo_hw_bind(const struct orb_topo *t, const orb_topo_host_t *host, int i, int mode, char *note,
                              size_t len);

/* NVLink matrix (MB/s) between the GPUs of t from NVML at run time; 0 when unavailable. */
int orb_topo_nvml_matrix(int ngpus, char (*busids)[ORB_TOPO_BUSID_LEN], uint32_t *nvl,
                         char *why, size_t whylen);

/* Bus id text -> canonical "dddd:bb:dd.f" and its numeric parts. 0 when it does not parse. */
int orb_topo_busid_parse(const char *s, unsigned *dom, unsigned *bus, unsigned *dev,
                         unsigned *fn, char *canon);

/* Ordering helpers (topo_order.c). */
void orb_topo_order_tree(orb_topo_host_t *host);
void orb_topo_order_ports(orb_topo_host_t *host);

/* Explanation (topo_explain.c); returns a malloc'd string or NULL. */
char *orb_topo_explain(const orb_topo_host_t *host);

/* Growable text buffer (topo_text.c). */
typedef struct {
    char *s;
    size_t len, cap;
    int failed;
} orb_topo_text_t;
void orb_topo_text_add(orb_topo_text_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* "0-3,7" style list of sorted ints. */
void orb_topo_text_ranks(orb_topo_text_t *b, const int *v, int n);

#endif
