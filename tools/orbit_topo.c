/* orbit-topo: what orbit sees of a machine (or of an hwloc XML) and the rings and trees it
 * would use there, with the reasons in plain words or as JSON. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "topo/topo.h"

static void usage(FILE *fp)
{
    fprintf(fp,
            "usage: orbit-topo [--xml FILE] [--ranks gpu|cpu|N] [--json]\n"
            "  --xml FILE    read an hwloc XML export instead of this machine (also ORBIT_TOPO_FILE)\n"
            "  --ranks gpu   one rank per NVIDIA GPU (default when there are GPUs)\n"
            "  --ranks cpu   one CPU rank per NUMA node (default otherwise)\n"
            "  --ranks N     the first N GPUs, or N CPU ranks when there are fewer GPUs (N <= 512)\n"
            "  --json        the same as data: devices, links, rings, trees, nics, channels\n");
}

/* Fills ranks[0..n) as the options ask; returns n, or -1 with a message. */
static int pick_ranks(const orb_topo_t *topo, const char *spec, orb_topo_rank_t **out, char *note,
                      size_t notelen)
{
    int ngpus = orb_topo_gpus(topo, NULL, 0), nnuma = orb_topo_numa_nodes(topo, 0, NULL, 0);
    char(*bus)[ORB_TOPO_BUSID_LEN] = calloc((size_t)ngpus + 1, sizeof *bus);
    orb_topo_rank_t *r = NULL;
    int n = -1, want = 0, gpu = 0;
    note[0] = '\0';
    if (!bus)
        return -1;
    orb_topo_gpus(topo, bus, ngpus);
    if (!spec)
        spec = ngpus ? "gpu" : "cpu";
    if (!strcmp(spec, "gpu")) {
        if (!ngpus) {
            fprintf(stderr, "orbit-topo: no NVIDIA GPU in %s (try --ranks cpu)\n", orb_topo_source(topo));
            goto out;
        }
        want = ngpus;
        gpu = 1;
    } else if (!strcmp(spec, "cpu")) {
        want = nnuma > 0 ? nnuma : 1;
    } else {
        char *end;
        long v = strtol(spec, &end, 10);
        if (*end || v < 1 || v > 512) {
            fprintf(stderr, "orbit-topo: --ranks wants gpu, cpu or a count from 1 to 512, not '%s'\n", spec);
            goto out;
        }
        want = (int)v;
        gpu = ngpus >= want;
        if (ngpus && !gpu)
            snprintf(note, notelen, "%d CPU ranks: the machine has only %d GPU%s", want, ngpus, ngpus == 1 ? "" : "s");
    }
    r = calloc((size_t)want, sizeof *r);
    if (!r)
        goto out;
    for (int i = 0; i < want; i++) {
        r[i].rank = i;
        if (gpu)
            snprintf(r[i].desc, sizeof r[i].desc, "gpu:%s", bus[i]);
        else if (!strcmp(spec, "cpu") && nnuma > 0) {
            char cpus[4096];
            orb_topo_numa_nodes(topo, i, cpus, sizeof cpus);
            /* A list too long for a description is cut to its first PU: that names the node. */
            if (strlen(cpus) + 4 >= sizeof r[i].desc)
                cpus[strspn(cpus, "0123456789")] = '\0';
            snprintf(r[i].desc, sizeof r[i].desc, "cpu:%.59s", cpus);
        } else
            snprintf(r[i].desc, sizeof r[i].desc, "cpu");
    }
    n = want;
    *out = r;
out:
    free(bus);
    return n;
}

static const char *gbs(uint32_t mbs, char *buf, size_t len)
{
    if (mbs % 1000 == 0)
        snprintf(buf, len, "%u", mbs / 1000);
    else
        snprintf(buf, len, "%.1f", mbs / 1000.0);
    return buf;
}

/* A link is known when both ends were found in the topology. */
static int known(const orb_topo_host_t *h, int i, int j)
{
    return i == j || (h->dev[i].located && h->dev[j].located);
}

static void print_text(const orb_topo_host_t *h, const char *note)
{
    int n = h->ndev;
    char t[32];
    printf("devices (%s):\n", h->source);
    printf("  %-4s %-4s %-13s %-8s %-5s %-4s %-6s %-26s %s\n", "rank", "kind", "bus id", "name", "NUMA",
           "pkg", "cores", "cpus", "nearest NIC");
    for (int i = 0; i < n; i++) {
        const orb_topo_dev_t *d = &h->dev[i];
        char nic[64] = "-";
        if (d->nic >= 0)
            snprintf(nic, sizeof nic, "%s (%s)", h->nics[d->nic].name, orb_topo_class_name(d->nic_class));
        printf("  %-4d %-4s %-13s %-8s %-5d %-4d %-6d %-26s %s\n", d->rank,
               d->kind == ORB_TOPO_DEV_GPU ? "GPU" : "CPU", d->busid[0] ? d->busid : "-",
               d->name[0] ? d->name : "-", d->numa, d->package, d->ncores, d->located ? d->cpus : "?", nic);
    }
    if (h->nnics) {
        printf("NICs:\n");
        for (int k = 0; k < h->nnics; k++)
            printf("  %-8s %s NUMA %d%s\n", h->nics[k].name, h->nics[k].busid, h->nics[k].numa,
                   h->nics[k].rdma ? " RDMA" : "");
    }
    printf("links (class between ranks; row and column by rank):\n      ");
    for (int j = 0; j < n; j++)
        printf("%5d", h->dev[j].rank);
    printf("\n");
    for (int i = 0; i < n; i++) {
        printf("  %4d", h->dev[i].rank);
        for (int j = 0; j < n; j++)
            printf("%5s", known(h, i, j) ? orb_topo_class_name(h->cls[i * n + j]) : "?");
        printf("\n");
    }
    /* Bandwidth per class as the matrix has it, once per distinct value. */
    printf("bandwidth used for ordering (GB/s):");
    uint32_t vbw[32];
    orb_topo_class_t vcls[32];
    int nv = 0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            int e = i * n + j, v = 0;
            if (i == j || !known(h, i, j))
                continue;
            while (v < nv && (vbw[v] != h->bw[e] || vcls[v] != h->cls[e]))
                v++;
            if (v < nv || nv == 32)
                continue;
            vbw[nv] = h->bw[e];
            vcls[nv] = h->cls[e];
            printf("%s %s %s", nv++ ? "," : "", orb_topo_class_name(h->cls[e]), gbs(h->bw[e], t, sizeof t));
        }
    printf("%s\n", nv ? "" : " none known");
    printf("rings:\n  ring 0:");
    for (int k = 0; k < n; k++)
        printf(" %d", h->ring[k]);
    printf("\ntrees:\n  tree 0:");
    for (int k = 0; k < n; k++)
        printf(" %d", h->tree[k]);
    printf("\n\n%s", h->explain);
    if (note[0])
        printf("note: %s\n", note);
}

static void json_str(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            printf("\\%c", c);
        else if (c == '\n')
            printf("\\n");
        else if (c < 0x20)
            printf("\\u%04x", c);
        else
            putchar(c);
    }
    putchar('"');
}

static void json_ints(const int *v, int n)
{
    putchar('[');
    for (int k = 0; k < n; k++)
        printf("%s%d", k ? "," : "", v[k]);
    putchar(']');
}

static void print_json(const orb_topo_host_t *h, const char *note)
{
    int n = h->ndev;
    printf("{\"source\":");
    json_str(h->source);
    printf(",\n\"devices\":[");
    for (int i = 0; i < n; i++) {
        const orb_topo_dev_t *d = &h->dev[i];
        printf("%s\n {\"rank\":%d,\"kind\":\"%s\",\"busid\":", i ? "," : "", d->rank,
               d->kind == ORB_TOPO_DEV_GPU ? "gpu" : "cpu");
        json_str(d->busid);
        printf(",\"name\":");
        json_str(d->name);
        printf(",\"located\":%s,\"numa\":%d,\"package\":%d,\"cores\":%d,\"cpus\":", d->located ? "true" : "false",
               d->numa, d->package, d->ncores);
        json_str(d->cpus);
        printf(",\"nic\":");
        if (d->nic >= 0) {
            json_str(h->nics[d->nic].name);
            printf(",\"nic_class\":\"%s\"}", orb_topo_class_name(d->nic_class));
        } else {
            printf("null,\"nic_class\":null}");
        }
    }
    printf("],\n\"links\":[");
    for (int i = 0; i < n; i++) {
        printf("%s\n [", i ? "," : "");
        for (int j = 0; j < n; j++)
            if (known(h, i, j))
                printf("%s\"%s\"", j ? "," : "", orb_topo_class_name(h->cls[i * n + j]));
            else
                printf("%snull", j ? "," : "");
        printf("]");
    }
    printf("],\n\"bandwidth_mbs\":[");
    for (int i = 0; i < n; i++) {
        printf("%s\n [", i ? "," : "");
        for (int j = 0; j < n; j++)
            printf("%s%u", j ? "," : "", h->bw[i * n + j]);
        printf("]");
    }
    printf("],\n\"rings\":[");
    json_ints(h->ring, n);
    printf("],\n\"trees\":[");
    json_ints(h->tree, n);
    printf("],\n\"ring_score\":{\"slowest_mbs\":%u,\"slowest_class\":\"%s\",\"slowest_hops\":%d,"
           "\"least_possible_hops\":%d,\"exact\":%s,\"optimized\":%s},\n\"nics\":{",
           h->score.bw, orb_topo_class_name(h->score.cls), h->score.hops, h->score.lower_bound,
           h->exact ? "true" : "false", h->optimized ? "true" : "false");
    for (int k = 0; k < h->nnics; k++) {
        printf("%s\n ", k ? "," : "");
        json_str(h->nics[k].name);
        printf(":{\"busid\":");
        json_str(h->nics[k].busid);
        printf(",\"numa\":%d,\"rdma\":%s,\"serves\":[", h->nics[k].numa, h->nics[k].rdma ? "true" : "false");
        for (int i = 0, m = 0; i < n; i++)
            if (h->dev[i].nic == k)
                printf("%s%d", m++ ? "," : "", h->dev[i].rank);
        printf("]}");
    }
    printf("},\n\"channels\":[");
    int *order = malloc((size_t)n * sizeof *order);
    orb_topo_hostring_t view;
    orb_topo_hostring_of(h, &view);
    for (int p = 0; order && p < h->nports; p++) {
        printf("%s\n {\"nic\":", p ? "," : "");
        if (h->ports[p].nic >= 0)
            json_str(h->ports[p].nic_name);
        else
            printf("null");
        printf(",\"order\":");
        if (orb_topo_global_order(&view, 1, p, order, n) == ORB_OK)
            json_ints(order, n);
        else
            printf("[]");
        printf("}");
    }
    free(order);
    printf("],\n\"explain\":");
    json_str(h->explain);
    printf(",\n\"note\":");
    json_str(h->note[0] ? h->note : note);
    printf("}\n");
}

int main(int argc, char **argv)
{
    const char *xml = NULL, *spec = NULL;
    int json = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--xml") && i + 1 < argc)
            xml = argv[++i];
        else if (!strcmp(argv[i], "--ranks") && i + 1 < argc)
            spec = argv[++i];
        else if (!strcmp(argv[i], "--json"))
            json = 1;
        else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            return 0;
        } else {
            usage(stderr);
            return 2;
        }
    }
    orb_topo_t *topo;
    orb_status_t st = orb_topo_load(xml, &topo);
    if (st != ORB_OK) {
        fprintf(stderr, "orbit-topo: cannot load the topology: %s\n", orb_strerror(st));
        return 1;
    }
    orb_topo_dump(topo, NULL);
    orb_topo_rank_t *ranks = NULL;
    char note[128];
    int n = pick_ranks(topo, spec, &ranks, note, sizeof note);
    orb_topo_host_t *host = NULL;
    if (n > 0 && (st = orb_topo_place(topo, ranks, n, &host)) != ORB_OK)
        fprintf(stderr, "orbit-topo: cannot place the ranks: %s\n", orb_strerror(st));
    if (host) {
        if (!note[0] && !host->note[0] && orb_topo_note(topo)[0])
            snprintf(note, sizeof note, "%s", orb_topo_note(topo));
        orb_topo_host_log(host);
        if (json)
            print_json(host, note);
        else
            print_text(host, note);
    }
    orb_topo_host_free(host);
    free(ranks);
    orb_topo_free(topo);
    return host ? 0 : 1;
}
