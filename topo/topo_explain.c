/* The ring, tree and NIC choices in plain words, built only from the matrices and the
 * score, so every sentence is something the data says. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "topo_priv.h"

static const char *const plural_words[ORB_TOPO_NCLASSES] = {
    "stay on one device", "are NVLink", "stay under one PCIe switch",
    "cross PCIe switches under one host bridge", "go through one host bridge",
    "stay within one NUMA node", "cross NUMA nodes within one package", "cross sockets",
    "cross the network"};

static const char *const nic_words[ORB_TOPO_NCLASSES] = {
    "same device", "NVLink", "same PCIe switch", "across PCIe switches, same host bridge",
    "same host bridge", "same NUMA node", "same package, other NUMA node", "other socket",
    "unknown path"};

/* Slow classes read best as a crossing: "crosses sockets twice". */
static const char *crossing(orb_topo_class_t c)
{
    switch (c) {
    case ORB_TOPO_SYS: return "crosses sockets";
    case ORB_TOPO_PKG: return "crosses NUMA nodes";
    case ORB_TOPO_NODE: return "crosses host bridges";
    case ORB_TOPO_PHB: return "goes through a host bridge";
    case ORB_TOPO_PXB: return "crosses PCIe switches";
    case ORB_TOPO_NET: return "crosses the network";
    default: return NULL;
    }
}

static const char *times(int k, char *buf, size_t len)
{
    if (k == 1)
        return "once";
    if (k == 2)
        return "twice";
    snprintf(buf, len, "%d times", k);
    return buf;
}

static const char *gbs(uint32_t mbs, char *buf, size_t len)
{
    if (mbs % 1000 == 0)
        snprintf(buf, len, "%u GB/s", mbs / 1000);
    else
        snprintf(buf, len, "%.1f GB/s", mbs / 1000.0);
    return buf;
}

static const char *unit(const orb_topo_host_t *h, int plural)
{
    int gpus = 0;
    for (int i = 0; i < h->ndev; i++)
        gpus += h->dev[i].kind == ORB_TOPO_DEV_GPU;
    if (gpus == h->ndev)
        return plural ? "GPUs" : "GPU";
    return plural ? "ranks" : "rank";
}

static void ring_sentence(orb_topo_text_t *b, const orb_topo_host_t *h)
{
    int n = h->ndev;
    char t1[32], t2[32];
    const orb_topo_score_t *s = &h->score;
    if (n == 1) {
        orb_topo_text_add(b, "a single rank, no links");
        return;
    }
    if (!h->optimized) {
        orb_topo_text_add(b, "rank order (no topology data, see the note)");
        return;
    }
    if (s->hops == n) {
        orb_topo_text_add(b, "every hop %s (%s)", orb_topo_class_words(s->cls), gbs(s->bw, t1, sizeof t1));
        return;
    }
    const char *cross = crossing(s->cls);
    if (cross)
        orb_topo_text_add(b, "%s %s (", cross, times(s->hops, t2, sizeof t2));
    else
        orb_topo_text_add(b, "%d slowest hops, which %s (", s->hops, plural_words[s->cls]);
    int first = 1;
    for (int k = 0; k < n; k++) {
        int a = h->ring_dev[k], c = h->ring_dev[(k + 1) % n];
        if (h->bw[a * n + c] == s->bw && h->cls[a * n + c] == s->cls) {
            orb_topo_text_add(b, "%s%d->%d", first ? "" : ", ", h->dev[a].rank, h->dev[c].rank);
            first = 0;
        }
    }
    orb_topo_text_add(b, ") at %s", gbs(s->bw, t1, sizeof t1));
    /* The other hops, grouped by (class, bandwidth), best first. */
    int ngroups = 0, gcount[64];
    uint32_t gbw[64];
    orb_topo_class_t gcls[64];
    for (int k = 0; k < n; k++) {
        int a = h->ring_dev[k], c = h->ring_dev[(k + 1) % n];
        uint32_t bw = h->bw[a * n + c];
        orb_topo_class_t cl = h->cls[a * n + c];
        if (bw == s->bw && cl == s->cls)
            continue;
        int g = 0;
        while (g < ngroups && (gbw[g] != bw || gcls[g] != cl))
            g++;
        if (g == ngroups) {
            if (ngroups == 64)
                continue;
            gbw[g] = bw;
            gcls[g] = cl;
            gcount[g] = 0;
            ngroups++;
        }
        gcount[g]++;
    }
    for (int i = 1; i < ngroups; i++) /* few groups: insertion sort, best first */
        for (int j = i; j > 0 && (gbw[j] > gbw[j - 1] || (gbw[j] == gbw[j - 1] && gcls[j] < gcls[j - 1])); j--) {
            uint32_t tb = gbw[j];
            gbw[j] = gbw[j - 1];
            gbw[j - 1] = tb;
            orb_topo_class_t tc = gcls[j];
            gcls[j] = gcls[j - 1];
            gcls[j - 1] = tc;
            int tn = gcount[j];
            gcount[j] = gcount[j - 1];
            gcount[j - 1] = tn;
        }
    if (ngroups == 1) {
        orb_topo_text_add(b, ", every other hop %s (%s)", orb_topo_class_words(gcls[0]), gbs(gbw[0], t1, sizeof t1));
        return;
    }
    orb_topo_text_add(b, "; other hops:");
    for (int g = 0; g < ngroups; g++)
        orb_topo_text_add(b, "%s %d %s (%s)", g ? "," : "", gcount[g],
                          gcount[g] == 1 ? orb_topo_class_words(gcls[g]) : plural_words[gcls[g]],
                          gbs(gbw[g], t1, sizeof t1));
}

static unsigned long long rings_of(int n)
{
    unsigned long long r = 1; /* (n-1)!/2 distinct rings */
    for (int k = 3; k < n; k++)
        r *= (unsigned long long)k;
    return r;
}

static void why_sentence(orb_topo_text_t *b, const orb_topo_host_t *h)
{
    int n = h->ndev;
    char t1[32], t2[32];
    const orb_topo_score_t *s = &h->score;
    if (!h->optimized || n < 3) {
        if (n == 2)
            orb_topo_text_add(b, "why: two ranks make one ring\n");
        return;
    }
    /* "The GPUs sit on 2 sockets" is only said when the data shows it: every link above the
     * slowest joins devices of one package, and those packages are the groups. */
    int pkgs = 0, seen[64], within = 1;
    for (int i = 0; i < n; i++) {
        int p = h->dev[i].package, k = 0;
        while (k < pkgs && seen[k] != p)
            k++;
        if (k == pkgs && pkgs < 64)
            seen[pkgs++] = p;
        for (int j = 0; j < n; j++) {
            uint32_t bw = h->bw[i * n + j];
            orb_topo_class_t c = h->cls[i * n + j];
            if (i != j && (bw > s->bw || (bw == s->bw && c < s->cls)))
                within &= h->dev[i].package == h->dev[j].package;
        }
    }
    orb_topo_text_add(b, "why: the slowest hop is %s at %s; ", orb_topo_class_name(s->cls), gbs(s->bw, t1, sizeof t1));
    if (s->cls == ORB_TOPO_SYS && within && s->lower_bound == pkgs && s->hops == pkgs)
        orb_topo_text_add(b, "the %s sit on %d sockets with no faster link between them, so every ring crosses sockets at least %s; ",
                          unit(h, 1), pkgs, times(pkgs, t2, sizeof t2));
    else if (s->lower_bound >= 2 && s->hops == s->lower_bound && s->hops < n)
        orb_topo_text_add(b, "the links above it on the ladder join the %s into %d groups, and a ring enters and leaves each; ",
                          unit(h, 1), s->lower_bound);
    if (h->exact)
        orb_topo_text_add(b, "exact search over all %llu rings found no faster slowest hop and none with fewer such hops\n",
                          rings_of(n));
    else if (s->lower_bound > 0 && s->hops == s->lower_bound)
        orb_topo_text_add(b, "greedy + 2-opt over %d devices reached that least number, so no ring has a faster slowest hop or fewer such hops\n", n);
    else
        orb_topo_text_add(b, "greedy + 2-opt over %d devices (best found; above %d devices the search is not exact)\n",
                          n, ORB_TOPO_EXACT_MAX);
}

static const char *nic_path(const orb_topo_dev_t *d, orb_topo_class_t c)
{
    /* A CPU reaches a NIC on its own NUMA node through that node's host bridge. */
    return d->kind == ORB_TOPO_DEV_CPU && c == ORB_TOPO_PHB ? "same NUMA node" : nic_words[c];
}

static void nic_sentences(orb_topo_text_t *b, const orb_topo_host_t *h)
{
    int n = h->ndev;
    int *served = malloc(((size_t)n + 1) * sizeof *served);
    if (!served) {
        b->failed = 1;
        return;
    }
    if (h->nnics == 0)
        orb_topo_text_add(b, "NICs: none found\n");
    for (int k = 0; k < h->nnics; k++) {
        orb_topo_text_add(b, "NIC %s (%s, NUMA node %d) ", h->nics[k].name, h->nics[k].busid, h->nics[k].numa);
        int total = 0;
        /* One group per path class, each listed by rank id. */
        for (int c = 0; c < ORB_TOPO_NCLASSES; c++) {
            int m = 0, example = -1;
            for (int i = 0; i < n; i++)
                if (h->dev[i].nic == k && (int)h->dev[i].nic_class == c) {
                    int p = m++;
                    while (p > 0 && served[p - 1] > h->dev[i].rank) {
                        served[p] = served[p - 1];
                        p--;
                    }
                    served[p] = h->dev[i].rank;
                    example = i;
                }
            if (!m)
                continue;
            orb_topo_text_add(b, "%s %s ", total ? "," : "serves", m == 1 ? unit(h, 0) : unit(h, 1));
            orb_topo_text_ranks(b, served, m);
            orb_topo_text_add(b, " (%s)", nic_path(&h->dev[example], (orb_topo_class_t)c));
            total += m;
        }
        orb_topo_text_add(b, "%s\n", total ? "" : "serves no rank here");
    }
    free(served);
}

static void port_sentences(orb_topo_text_t *b, const orb_topo_host_t *h)
{
    int n = h->ndev;
    if (n < 2)
        return;
    orb_topo_text_add(b, "between hosts:");
    for (int p = 0; p < h->nports; p++) {
        const orb_topo_port_t *pt = &h->ports[p];
        int in = h->ring_dev[pt->start], out = h->ring_dev[((pt->start - pt->dir) % n + n) % n];
        if (pt->nic < 0) {
            orb_topo_text_add(b, " no NIC, so the ring enters at %d and leaves from %d", h->dev[in].rank,
                              h->dev[out].rank);
            continue;
        }
        orb_topo_text_add(b, "%s channel %d enters at %d (%s) and leaves from %d", p ? ";" : "", p,
                          h->dev[in].rank, pt->nic_name, h->dev[out].rank);
        if (h->dev[out].nic >= 0)
            orb_topo_text_add(b, " (%s)", h->nics[h->dev[out].nic].name);
    }
    if (h->nports > 1)
        orb_topo_text_add(b, "; channel c uses entry c mod %d", h->nports);
    orb_topo_text_add(b, "\n");
}

char *orb_topo_explain(const orb_topo_host_t *h)
{
    orb_topo_text_t b = {NULL, 0, 0, 0};
    int n = h->ndev, nvl = 0;
    for (int e = 0; e < n * n; e++)
        nvl += h->cls[e] == ORB_TOPO_NVL;
    orb_topo_text_add(&b, "topology: %s: %d %s, %d NIC%s, %s\n", h->source, n, unit(h, n != 1), h->nnics,
                      h->nnics == 1 ? "" : "s", nvl ? "NVLink between some of them" : "no NVLink");
    orb_topo_text_add(&b, "ring 0:");
    for (int k = 0; k < n; k++)
        orb_topo_text_add(&b, " %d", h->ring[k]);
    orb_topo_text_add(&b, " \u2014 ");
    ring_sentence(&b, h);
    orb_topo_text_add(&b, "\n");
    why_sentence(&b, h);
    nic_sentences(&b, h);
    if (h->nic_note[0])
        orb_topo_text_add(&b, "note: %s\n", h->nic_note);
    port_sentences(&b, h);
    orb_topo_text_add(&b, "tree order:");
    for (int k = 0; k < n; k++)
        orb_topo_text_add(&b, " %d", h->tree[k]);
    if (h->optimized && n > 2)
        orb_topo_text_add(&b, " (the ring cut at its slowest hop %d->%d)\n", h->tree[n - 1], h->tree[0]);
    else
        orb_topo_text_add(&b, "\n");
    if (h->note[0])
        orb_topo_text_add(&b, "note: %s\n", h->note);
    if (b.failed) {
        free(b.s);
        return NULL;
    }
    return b.s;
}
