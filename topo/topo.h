/* Topology: where each local rank's device sits (hwloc), the link class and bandwidth of
 * every pair of devices on a host, and ring/tree orders that keep slow links to a minimum.
 *
 * Typical use from communicator init (every rank of a host does the same, so every rank
 * computes the same ring):
 *   orb_topo_load(NULL, &topo);                      machine, or ORBIT_TOPO_FILE
 *   orb_topo_dump(topo, NULL);                       to ORBIT_TOPO_DUMP when set
 *   ... allgather one orb_topo_rank_t per local rank ("gpu:<bus id>" or "cpu[:<cpus>]") ...
 *   orb_topo_place(topo, ranks, n, &host);           ring, tree, NIC ports, explanation
 *   orb_topo_host_log(host);                         explanation at ORBIT_DEBUG=INFO
 *   orb_topo_bind(topo, host, my_rank, NULL, 0);     unless ORBIT_BIND=0
 *   multi-host: exchange orb_topo_hostring_of(host) views, then orb_topo_global_order(). */
#ifndef ORB_TOPO_TOPO_H
#define ORB_TOPO_TOPO_H

#include <stddef.h>
#include <stdint.h>

#include "orbit.h"

#define ORB_TOPO_DESC_LEN 64
#define ORB_TOPO_NAME_LEN 32
#define ORB_TOPO_BUSID_LEN 16  /* "dddd:bb:dd.f" */
#define ORB_TOPO_CPUS_LEN 128  /* PU list such as "0-15,128-143" (cut with "..." if longer) */
#define ORB_TOPO_EXACT_MAX 12  /* exact ring search up to this many devices */

/* Link classes, best first: the NCCL-like PIX/PXB/PHB/NODE/SYS ladder with NVLink on top
 * and "same package" between NODE and SYS (machines with several NUMA nodes per socket). */
#define ORB_TOPO_CLASS_MAP(X)                                                     \
    X(LOC, "stays on one device")                                                 \
    X(NVL, "is NVLink")                                                           \
    X(PIX, "stays under one PCIe switch")                                         \
    X(PXB, "crosses PCIe switches under one host bridge")                        \
    X(PHB, "goes through one host bridge")                                        \
    X(NODE, "stays within one NUMA node")                                         \
    X(PKG, "crosses NUMA nodes within one package")                              \
    X(SYS, "crosses sockets")                                                     \
    X(NET, "crosses the network")

typedef enum {
#define ORB_TOPO_CLASS_ENUM_(id, words) ORB_TOPO_##id,
    ORB_TOPO_CLASS_MAP(ORB_TOPO_CLASS_ENUM_)
#undef ORB_TOPO_CLASS_ENUM_
        ORB_TOPO_NCLASSES
} orb_topo_class_t;

const char *orb_topo_class_name(orb_topo_class_t c);  /* "PIX" */
const char *orb_topo_class_words(orb_topo_class_t c); /* "stays under one PCIe switch" */

/* A loaded machine description (hwloc topology plus its GPUs, NICs and NVLink matrix). */
typedef struct orb_topo orb_topo_t;

/* xml_path NULL or "": ORBIT_TOPO_FILE when set, else this machine. Without hwloc (or when
 * hwloc fails on this machine) a topology with no data is returned and orb_topo_note()
 * says why; orb_topo_place() then gives rank-order rings. An XML that does not load is
 * an error (ORB_ERR_INVALID_ARG), since the caller asked for it. */
orb_status_t orb_topo_load(const char *xml_path, orb_topo_t **out);
void orb_topo_free(orb_topo_t *topo);
const char *orb_topo_source(const orb_topo_t *topo); /* "this machine" or the XML path */
const char *orb_topo_note(const orb_topo_t *topo);   /* "" or why data is missing */
int orb_topo_is_this_machine(const orb_topo_t *topo);
/* NVIDIA GPUs (PCI class 0x0300/0x0302, vendor 0x10de) by ascending bus id. Returns how
 * many exist; fills at most max. */
int orb_topo_gpus(const orb_topo_t *topo, char (*busids)[ORB_TOPO_BUSID_LEN], int max);
/* NUMA nodes that have CPUs, by OS index: returns how many; node i's PU list in cpus. */
int orb_topo_numa_nodes(const orb_topo_t *topo, int i, char *cpus, size_t len);
/* Description of the calling thread as a CPU rank: "cpu:<its binding>", or "cpu" when it
 * is not bound (or the topology is not this machine). */
orb_status_t orb_topo_self_desc(const orb_topo_t *topo, char *desc, size_t len);
/* Writes the topology as hwloc XML to path (NULL: ORBIT_TOPO_DUMP; nothing when empty). */
orb_status_t orb_topo_dump(const orb_topo_t *topo, const char *path);

/* One local rank. desc: "gpu:0000:3b:00.0" (a bare bus id works too, any case, CUDA's
 * 8-digit domain too), "cpu:0-3,8" (the PUs it is bound to), or "cpu" (unbound: spread
 * over NUMA nodes round-robin). */
typedef struct {
    int rank; /* the caller's id for it (e.g. global rank); output orders use it */
    char desc[ORB_TOPO_DESC_LEN];
} orb_topo_rank_t;

typedef enum { ORB_TOPO_DEV_CPU = 0, ORB_TOPO_DEV_GPU } orb_topo_dev_kind_t;

typedef struct {
    int rank;
    orb_topo_dev_kind_t kind;
    char busid[ORB_TOPO_BUSID_LEN]; /* GPU: canonical lower-case bus id; CPU: "" */
    char name[ORB_TOPO_NAME_LEN];   /* OS device name (cuda0, nvml3) or "" */
    int located;                    /* 0: not found in the topology */
    int numa;                       /* OS index of its NUMA node, -1 unknown */
    int package;                    /* logical index of its package, -1 unknown */
    int ncores;                     /* cores of that NUMA node */
    char cpus[ORB_TOPO_CPUS_LEN];   /* PUs of that NUMA node */
    int nic;                        /* index into host->nics, -1 none */
    orb_topo_class_t nic_class;     /* class of the path to that NIC */
} orb_topo_dev_t;

typedef struct {
    char name[ORB_TOPO_NAME_LEN];   /* mlx5_0 (OpenFabrics) or ib0/eth0 (Net) */
    char busid[ORB_TOPO_BUSID_LEN];
    int rdma;                       /* 1: has an OpenFabrics device */
    int numa;                       /* -1 unknown */
} orb_topo_nic_t;

/* Where a host is entered and left on one channel: the host's part of the global ring is
 * ring[start], ring[start+dir], ... (n entries, cyclic), so it leaves from ring[start-dir]. */
typedef struct {
    int start;
    int dir; /* +1 or -1 */
    int nic; /* index into host->nics, -1: the host has no NIC */
    char nic_name[ORB_TOPO_NAME_LEN];
} orb_topo_port_t;

/* Score of a ring, compared in this order: the slowest hop (lowest bandwidth, ties broken by
 * the worse class) as fast as possible, then as few hops of that speed and class, then the
 * least total cost (sum over hops of 1/bandwidth, plus the class index to break ties). */
typedef struct {
    uint32_t bw;            /* MB/s of the slowest hop */
    orb_topo_class_t cls;   /* its class */
    int hops;               /* hops at that bandwidth and class */
    int lower_bound;        /* proven least possible value of hops (0: unknown) */
    uint64_t cost;
} orb_topo_score_t;

typedef struct {
    int ndev;
    orb_topo_dev_t *dev;    /* sorted by a stable key: kind, bus id, rank */
    orb_topo_class_t *cls;  /* ndev*ndev, cls[i*ndev+j] */
    uint32_t *bw;           /* ndev*ndev, MB/s (nominal where hwloc gives none) */
    int nnics;
    orb_topo_nic_t *nics;
    orb_topo_class_t *nic_cls; /* ndev*nnics: class of device i's path to NIC k (NET: unknown) */
    int *ring;              /* ndev rank ids in ring order */
    int *ring_dev;          /* the same as device indices */
    int *tree;              /* ndev rank ids: the order the double binary tree uses */
    int nports;             /* >= 1: one per NIC, or one with nic = -1 */
    orb_topo_port_t *ports;
    int optimized;          /* 0: rank order (no topology data), see note */
    int exact;              /* 1: exact search, 0: greedy + 2-opt */
    orb_topo_score_t score;
    char note[256];         /* "" or why the ring follows rank order */
    char nic_note[128];     /* "" or which NICs were left out and why */
    char *explain;          /* multi-line explanation in plain words */
    char source[256];
} orb_topo_host_t;

/* Places n local ranks (any order: the result depends only on the set) and computes the
 * ring, the tree order, the NIC ports and the explanation. */
orb_status_t orb_topo_place(const orb_topo_t *topo, const orb_topo_rank_t *ranks, int n,
                            orb_topo_host_t **out);
void orb_topo_host_free(orb_topo_host_t *host);
int orb_topo_host_find(const orb_topo_host_t *host, int rank); /* device index or -1 */
void orb_topo_host_log(const orb_topo_host_t *host);          /* explanation at INFO */

/* Binds the calling thread to its share of the cores of rank's device's NUMA node (the
 * node's ranks split its cores; the whole node when they outnumber them, or ORBIT_BIND=2),
 * unless ORBIT_BIND=0.
 * When that is impossible (no hwloc, an XML topology, an unlocated device) it binds nothing
 * and still returns ORB_OK; note (may be NULL) says what was done. */
orb_status_t orb_topo_bind(const orb_topo_t *topo, const orb_topo_host_t *host, int rank,
                           char *note, size_t notelen);

/* Score of any order of device indices (tests and the explanation use it). */
void orb_topo_ring_score(int n, const uint32_t *bw, const orb_topo_class_t *cls,
                         const int *order, orb_topo_score_t *out);
/* Best ring over n devices: exact up to ORB_TOPO_EXACT_MAX, greedy + 2-opt beyond.
 * order gets device indices starting at 0. Returns 1 when exact. */
int orb_topo_ring_search(int n, const uint32_t *bw, const orb_topo_class_t *cls, int *order,
                         orb_topo_score_t *score);

/* Multi-host. One view per host, in host order; plain ints so they can be exchanged. */
typedef struct {
    int nranks;
    const int *ring; /* rank ids in the host's ring order */
    int nports;
    const orb_topo_port_t *ports;
} orb_topo_hostring_t;

void orb_topo_hostring_of(const orb_topo_host_t *host, orb_topo_hostring_t *out);
/* The global order for one channel: hosts chained in host order, each entered and left
 * through port (channel % nports), i.e. the rank nearest that port's NIC. Used as the ring
 * (cyclic) and, with several hosts, as the tree order (each host's chain starts at the
 * rank nearest its NIC). For a single host, host->tree is the better tree order. */
orb_status_t orb_topo_global_order(const orb_topo_hostring_t *hosts, int nhosts, int channel,
                                   int *out, int outlen);

#endif
