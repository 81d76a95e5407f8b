/* Shared helpers of the topology tests: checks that name the line, the data folder, loading
 * an XML (skip without hwloc), and an independent brute-force ring judge. */
#ifndef ORB_TEST_TOPO_H
#define ORB_TEST_TOPO_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "topo/topo.h"

#define SKIP 77

static int test_failures;

#define CHECK(cond)                                                              \
    do {                                                                         \
        if (!(cond)) {                                                           \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
            test_failures++;                                                     \
        }                                                                        \
    } while (0)

#define CHECK_EQ_INT(a, b)                                                                  \
    do {                                                                                    \
        long long a_ = (long long)(a), b_ = (long long)(b);                                 \
        if (a_ != b_) {                                                                     \
            fprintf(stderr, "%s:%d: %s == %lld, want %lld\n", __FILE__, __LINE__, #a, a_, b_); \
            test_failures++;                                                                \
        }                                                                                   \
    } while (0)

static inline const char *test_data_dir(void)
{
    const char *d = getenv("ORB_TEST_DATA");
    return d && *d ? d : "tests/data";
}

static inline void test_data_path(char *out, size_t len, const char *file)
{
    snprintf(out, len, "%s/%s", test_data_dir(), file);
}

/* Loads tests/data/<file>; exits 77 when this build has no hwloc. */
static inline orb_topo_t *test_load(const char *file)
{
    char path[1024];
    orb_topo_t *t = NULL;
    test_data_path(path, sizeof path, file);
#ifndef ORB_HAVE_HWLOC
    printf("skip: built without hwloc, %s cannot be read\n", file);
    exit(SKIP);
#endif
    if (orb_topo_load(path, &t) != ORB_OK || !t) {
        fprintf(stderr, "cannot load %s\n", path);
        exit(1);
    }
    return t;
}

/* Places one rank per GPU of t (rank i = i-th GPU by bus id), only those listed in pick
 * when npick > 0. */
static inline orb_topo_host_t *test_place_gpus(orb_topo_t *t, const int *pick, int npick)
{
    char bus[64][ORB_TOPO_BUSID_LEN];
    int ng = orb_topo_gpus(t, bus, 64), n = npick > 0 ? npick : ng;
    orb_topo_rank_t r[64];
    orb_topo_host_t *h = NULL;
    for (int i = 0; i < n; i++) {
        r[i].rank = i;
        snprintf(r[i].desc, sizeof r[i].desc, "gpu:%.15s", bus[npick > 0 ? pick[i] : i]);
    }
    if (orb_topo_place(t, r, n, &h) != ORB_OK) {
        fprintf(stderr, "orb_topo_place failed\n");
        exit(1);
    }
    return h;
}

/* A ring's worst hop: lowest bandwidth, then worse class; and how many hops equal it. */
typedef struct {
    uint32_t bw;
    int cls, hops;
} judge_t;

static inline int judge_worse_hop(uint32_t bw, int c, uint32_t rbw, int rc)
{
    return bw < rbw || (bw == rbw && c > rc);
}

static inline judge_t judge_ring(int n, const uint32_t *bw, const orb_topo_class_t *cls, const int *o)
{
    judge_t j = {UINT32_MAX, -1, 0};
    for (int k = 0; k < n; k++) {
        int a = o[k], b = o[(k + 1) % n];
        uint32_t hb = bw[a * n + b];
        int hc = (int)cls[a * n + b];
        if (judge_worse_hop(hb, hc, j.bw, j.cls)) {
            j.bw = hb;
            j.cls = hc;
            j.hops = 0;
        }
        if (hb == j.bw && hc == j.cls)
            j.hops++;
    }
    return j;
}

/* Better ring judgement: faster worst hop, then fewer such hops. */
static inline int judge_better(judge_t a, judge_t b)
{
    if (a.bw != b.bw || a.cls != b.cls)
        return judge_worse_hop(b.bw, b.cls, a.bw, a.cls);
    return a.hops < b.hops;
}

/* Best judgement over every ring (device 0 fixed first): lexicographic permutations. */
static inline judge_t judge_brute_force(int n, const uint32_t *bw, const orb_topo_class_t *cls)
{
    int o[16];
    for (int k = 0; k < n; k++)
        o[k] = k;
    judge_t best = judge_ring(n, bw, cls, o);
    for (;;) {
        int i = n - 2;
        while (i >= 1 && o[i] > o[i + 1])
            i--;
        if (i < 1)
            break;
        int j = n - 1;
        while (o[j] < o[i])
            j--;
        int t = o[i];
        o[i] = o[j];
        o[j] = t;
        for (int a = i + 1, b = n - 1; a < b; a++, b--) {
            t = o[a];
            o[a] = o[b];
            o[b] = t;
        }
        judge_t x = judge_ring(n, bw, cls, o);
        if (judge_better(x, best))
            best = x;
    }
    return best;
}

/* 1 when order is a permutation of 0..n-1. */
static inline int is_permutation(const int *order, int n)
{
    char seen[4096] = {0};
    for (int k = 0; k < n; k++) {
        if (order[k] < 0 || order[k] >= n || order[k] >= 4096 || seen[order[k]])
            return 0;
        seen[order[k]] = 1;
    }
    return 1;
}

#endif
