/* Placing a host's ranks: parse their descriptions, sort them by a stable key (so the order
 * they joined in never matters), locate them, then order the ring and the tree and explain. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/log.h"
#include "topo_priv.h"

typedef struct {
    orb_topo_dev_t dev;
    const char *cpu_req;
} entry_t;

static int entry_cmp(const void *pa, const void *pb)
{
    const orb_topo_dev_t *a = &((const entry_t *)pa)->dev, *b = &((const entry_t *)pb)->dev;
    if (a->kind != b->kind)
        return a->kind == ORB_TOPO_DEV_GPU ? -1 : 1; /* GPUs first */
    int c = strcmp(a->busid, b->busid);              /* canonical, fixed width */
    if (c)
        return c;
    return a->rank < b->rank ? -1 : a->rank > b->rank;
}

static int parse_desc(const orb_topo_rank_t *r, entry_t *e)
{
    const char *s = r->desc;
    memset(e, 0, sizeof *e);
    e->dev.rank = r->rank;
    e->dev.numa = e->dev.package = e->dev.nic = -1;
    e->dev.nic_class = ORB_TOPO_NET;
    if (memchr(r->desc, '\0', sizeof r->desc) == NULL)
        return 0;
    if (!strcasecmp(s, "cpu") || !*s) {
        e->dev.kind = ORB_TOPO_DEV_CPU;
        return 1;
    }
    if (!strncasecmp(s, "cpu:", 4)) {
        e->dev.kind = ORB_TOPO_DEV_CPU;
        e->cpu_req = s + 4;
        return 1;
    }
    if (!strncasecmp(s, "gpu:", 4))
        s += 4;
    e->dev.kind = ORB_TOPO_DEV_GPU;
    return orb_topo_busid_parse(s, NULL, NULL, NULL, NULL, e->dev.busid);
}

static void fallback_note(const orb_topo_t *topo, orb_topo_host_t *h)
{
    int missing = 0, first = -1;
    for (int i = 0; i < h->ndev; i++)
        if (!h->dev[i].located && missing++ == 0)
            first = i;
    if (!topo->hw)
        snprintf(h->note, sizeof h->note, "ring follows rank order: %.200s", topo->note);
    else if (first >= 0 && h->dev[first].kind == ORB_TOPO_DEV_GPU)
        snprintf(h->note, sizeof h->note,
                 "ring follows rank order: no PCI data for GPU %s%s in %.80s (a VM, or a container without /sys/bus/pci?)",
                 h->dev[first].busid, missing > 1 ? " and others" : "", topo->source);
    else
        snprintf(h->note, sizeof h->note, "ring follows rank order: %d rank(s) not found in %.150s", missing,
                 topo->source);
}

int orb_topo_host_find(const orb_topo_host_t *h, int rank)
{
    for (int i = 0; h && i < h->ndev; i++)
        if (h->dev[i].rank == rank)
            return i;
    return -1;
}

static int alloc_host(orb_topo_host_t *h, int n, int nnics)
{
    size_t nn = (size_t)n * (size_t)n;
    h->ndev = n;
    h->dev = calloc((size_t)n, sizeof *h->dev);
    h->cls = calloc(nn, sizeof *h->cls);
    h->bw = calloc(nn, sizeof *h->bw);
    h->nics = calloc((size_t)nnics + 1, sizeof *h->nics);
    h->nic_cls = calloc((size_t)n * (size_t)nnics + 1, sizeof *h->nic_cls);
    for (size_t e = 0; h->nic_cls && e < (size_t)n * (size_t)nnics; e++)
        h->nic_cls[e] = ORB_TOPO_NET;
    h->ring = calloc((size_t)n, sizeof *h->ring);
    h->ring_dev = calloc((size_t)n, sizeof *h->ring_dev);
    h->tree = calloc((size_t)n, sizeof *h->tree);
    h->ports = calloc((size_t)nnics + 1, sizeof *h->ports);
    return h->dev && h->cls && h->bw && h->nics && h->nic_cls && h->ring && h->ring_dev && h->tree && h->ports;
}

static void rank_order(orb_topo_host_t *h)
{
    /* Insertion sort of device indices by rank id: this path is for small, odd cases. */
    for (int k = 0; k < h->ndev; k++) {
        int v = k, p = k;
        while (p > 0 && h->dev[h->ring_dev[p - 1]].rank > h->dev[v].rank) {
            h->ring_dev[p] = h->ring_dev[p - 1];
            p--;
        }
        h->ring_dev[p] = v;
    }
}

orb_status_t orb_topo_place(const orb_topo_t *topo, const orb_topo_rank_t *ranks, int n,
                            orb_topo_host_t **out)
{
    if (!topo || !ranks || n <= 0 || !out)
        return ORB_ERR_INVALID_ARG;
    orb_status_t st = ORB_ERR_NO_MEMORY;
    orb_topo_host_t *h = calloc(1, sizeof *h);
    entry_t *e = calloc((size_t)n, sizeof *e);
    const char **req = calloc((size_t)n, sizeof *req);
    if (!h || !e || !req || !alloc_host(h, n, topo->nnics))
        goto err;
    for (int i = 0; i < n; i++) {
        if (!parse_desc(&ranks[i], &e[i])) {
            ORB_WARN("topology: rank %d: cannot read device description \"%.*s\" (want gpu:<bus id> or cpu[:<cpus>])",
                     ranks[i].rank, (int)sizeof ranks[i].desc, ranks[i].desc);
            st = ORB_ERR_INVALID_ARG;
            goto err;
        }
    }
    qsort(e, (size_t)n, sizeof *e, entry_cmp);
    for (int i = 0; i < n; i++) {
        h->dev[i] = e[i].dev;
        req[i] = e[i].cpu_req;
    }
    for (int i = 1; i < n; i++) /* a GPU and a CPU entry with one rank id sort apart */
        for (int j = 0; j < i; j++)
            if (h->dev[i].rank == h->dev[j].rank) {
                ORB_WARN("topology: rank %d given twice", h->dev[i].rank);
                st = ORB_ERR_INVALID_ARG;
                goto err;
            }
    h->nnics = topo->nnics;
    if (topo->nnics)
        memcpy(h->nics, topo->nics, (size_t)topo->nnics * sizeof *h->nics);
    snprintf(h->source, sizeof h->source, "%s", topo->source);
    snprintf(h->nic_note, sizeof h->nic_note, "%s", topo->nic_note);
    int located = topo->hw ? orb_topo_hw_locate(topo, h, req) : 0;
    if (!topo->hw) /* no data: every pair is assumed to cross sockets */
        for (int i = 0; i < n * n; i++) {
            h->cls[i] = i % (n + 1) ? ORB_TOPO_SYS : ORB_TOPO_LOC;
            h->bw[i] = i % (n + 1) ? ORB_TOPO_BW_SYS : ORB_TOPO_BW_LOC;
        }
    if (located < 0)
        goto err;
    if (located == n) {
        h->optimized = 1;
        h->exact = orb_topo_ring_search(n, h->bw, h->cls, h->ring_dev, &h->score);
    } else {
        fallback_note(topo, h);
        rank_order(h);
        orb_topo_ring_score(n, h->bw, h->cls, h->ring_dev, &h->score);
    }
    for (int k = 0; k < n; k++)
        h->ring[k] = h->dev[h->ring_dev[k]].rank;
    orb_topo_order_tree(h);
    orb_topo_order_ports(h);
    h->explain = orb_topo_explain(h);
    if (!h->explain)
        goto err;
    free(e);
    free(req);
    *out = h;
    return ORB_OK;
err:
    free(e);
    free(req);
    orb_topo_host_free(h);
    return st;
}

void orb_topo_host_free(orb_topo_host_t *h)
{
    if (!h)
        return;
    free(h->dev);
    free(h->cls);
    free(h->bw);
    free(h->nics);
    free(h->nic_cls);
    free(h->ring);
    free(h->ring_dev);
    free(h->tree);
    free(h->ports);
    free(h->explain);
    free(h);
}

void orb_topo_host_log(const orb_topo_host_t *h)
{
    if (!h || orb_log_level() < ORB_LOG_INFO)
        return;
    for (int i = 0; i < h->ndev; i++) {
        const orb_topo_dev_t *d = &h->dev[i];
        ORB_INFO("topology: rank %d: %s%s%s%s, NUMA node %d (%d cores: %s), NIC %s", d->rank,
                 d->kind == ORB_TOPO_DEV_GPU ? "GPU " : "CPU", d->busid, d->name[0] ? " " : "", d->name,
                 d->numa, d->ncores, d->cpus[0] ? d->cpus : "-",
                 d->nic >= 0 ? h->nics[d->nic].name : "none");
    }
    /* One log line per explanation line: log lines have a size limit. */
    for (const char *s = h->explain; s && *s;) {
        const char *nl = strchr(s, '\n');
        int len = nl ? (int)(nl - s) : (int)strlen(s);
        ORB_INFO("topology: %.*s", len, s);
        s += len + (nl != NULL);
    }
}
