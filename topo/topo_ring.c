/* Ring search. Every pair of devices gets a "level": distinct (bandwidth, class) values,
 * best first. A ring is judged by its worst level (the slowest hop), then by how many hops
 * sit at that level, then by total cost. Exact: a Held-Karp bitmask DP decides, for each
 * candidate worst level, whether a ring exists (binary search), then minimises
 * BIG * slow_hops + cost under it; the reconstruction takes the smallest next device at
 * every tie, so the answer depends only on the matrices. Beyond ORB_TOPO_EXACT_MAX devices:
 * greedy nearest-neighbour from a few starts, improved by 2-opt. */
#include <stdlib.h>
#include <string.h>

#include "topo_priv.h"

#define INF UINT64_MAX
#define BIG ((uint64_t)1 << 42) /* above any sum of 12+ hop costs (each < 2^35) */
#define HEUR_STARTS 4

typedef struct {
    int n, nlev;
    int *lev;       /* n*n */
    uint64_t *cost; /* n*n */
    uint32_t *lev_bw;
    orb_topo_class_t *lev_cls;
} ring_ctx_t;

static uint64_t hop_cost(uint32_t bw, orb_topo_class_t c)
{
    /* Time per byte dominates; the class index separates equal bandwidths (PIX < PXB). */
    return (uint64_t)(1000000000u / (bw ? bw : 1)) * 16u + (uint64_t)c;
}

static int pair_better(uint32_t bw_a, orb_topo_class_t ca, uint32_t bw_b, orb_topo_class_t cb)
{
    return bw_a > bw_b || (bw_a == bw_b && ca < cb);
}

static int ctx_init(ring_ctx_t *x, int n, const uint32_t *bw, const orb_topo_class_t *cls)
{
    memset(x, 0, sizeof *x);
    x->n = n;
    size_t nn = (size_t)n * (size_t)n;
    x->lev = calloc(nn ? nn : 1, sizeof *x->lev);
    x->cost = calloc(nn ? nn : 1, sizeof *x->cost);
    x->lev_bw = calloc(nn ? nn : 1, sizeof *x->lev_bw);
    x->lev_cls = calloc(nn ? nn : 1, sizeof *x->lev_cls);
    if (!x->lev || !x->cost || !x->lev_bw || !x->lev_cls)
        return -1;
    /* Distinct (bw, class) of the upper triangle, sorted best first (insertion: few values). */
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) {
            uint32_t b = bw[i * n + j];
            orb_topo_class_t c = cls[i * n + j];
            int k = 0;
            while (k < x->nlev && pair_better(x->lev_bw[k], x->lev_cls[k], b, c))
                k++;
            if (k < x->nlev && x->lev_bw[k] == b && x->lev_cls[k] == c)
                continue;
            memmove(x->lev_bw + k + 1, x->lev_bw + k, (size_t)(x->nlev - k) * sizeof *x->lev_bw);
            memmove(x->lev_cls + k + 1, x->lev_cls + k, (size_t)(x->nlev - k) * sizeof *x->lev_cls);
            x->lev_bw[k] = b;
            x->lev_cls[k] = c;
            x->nlev++;
        }
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            if (i == j)
                continue;
            int k = 0;
            while (x->lev_bw[k] != bw[i * n + j] || x->lev_cls[k] != cls[i * n + j])
                k++;
            x->lev[i * n + j] = k;
            x->cost[i * n + j] = hop_cost(bw[i * n + j], cls[i * n + j]);
        }
    return 0;
}

static void ctx_fini(ring_ctx_t *x)
{
    free(x->lev);
    free(x->cost);
    free(x->lev_bw);
    free(x->lev_cls);
}

void orb_topo_ring_score(int n, const uint32_t *bw, const orb_topo_class_t *cls, const int *order,
                         orb_topo_score_t *out)
{
    memset(out, 0, sizeof *out);
    out->cls = ORB_TOPO_LOC;
    for (int k = 0; n > 1 && k < n; k++) {
        int a = order[k], b = order[(k + 1) % n];
        uint32_t hb = bw[a * n + b];
        orb_topo_class_t hc = cls[a * n + b];
        if (k == 0 || pair_better(out->bw, out->cls, hb, hc)) {
            out->bw = hb;
            out->cls = hc;
            out->hops = 0;
        }
        if (hb == out->bw && hc == out->cls)
            out->hops++;
        out->cost += hop_cost(hb, hc);
    }
}

/* Least number of slow hops any ring must have: devices joined only through links at or
 * below the slowest level form separate groups, and a ring enters and leaves each group. */
static int groups_below(const ring_ctx_t *x, int maxlev)
{
    int n = x->n, groups = 0;
    int *root = malloc((size_t)n * sizeof *root);
    if (!root)
        return 0;
    for (int i = 0; i < n; i++)
        root[i] = i;
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++)
            if (x->lev[i * n + j] < maxlev) {
                int a = i, b = j;
                while (root[a] != a)
                    a = root[a];
                while (root[b] != b)
                    b = root[b];
                if (a != b)
                    root[a < b ? b : a] = a < b ? a : b;
            }
    for (int i = 0; i < n; i++)
        groups += root[i] == i;
    free(root);
    return groups;
}

/* f[(mask << 4) | last]: least cost to visit every device outside mask from last and
 * return to 0; INF when impossible. mask always holds device 0 and last. */
static void hk_fill(const ring_ctx_t *x, const uint64_t *w, uint64_t *f)
{
    int n = x->n;
    unsigned full = (1u << n) - 1;
    for (unsigned mask = full; mask >= 1; mask--) {
        if (!(mask & 1))
            continue;
        for (int last = 0; last < n; last++) {
            if (!(mask & (1u << last)) || (last == 0 && mask != 1))
                continue;
            uint64_t best = INF;
            if (mask == full) {
                best = w[last * n];
            } else {
                for (int j = 1; j < n; j++) {
                    if (mask & (1u << j) || w[last * n + j] == INF)
                        continue;
                    uint64_t rest = f[((size_t)(mask | (1u << j)) << 4) | (unsigned)j];
                    if (rest != INF && w[last * n + j] + rest < best)
                        best = w[last * n + j] + rest;
                }
            }
            f[((size_t)mask << 4) | (unsigned)last] = best;
        }
    }
}

static int ring_exact(const ring_ctx_t *x, int *order)
{
    int n = x->n;
    size_t nn = (size_t)n * (size_t)n;
    uint64_t *w = malloc(nn * sizeof *w);
    uint64_t *f = malloc(((size_t)1 << n) * 16 * sizeof *f);
    if (!w || !f) {
        free(w);
        free(f);
        return -1;
    }
    /* Smallest worst level that still admits a ring (feasibility is monotone). */
    int lo = 0, hi = x->nlev - 1;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        for (size_t e = 0; e < nn; e++)
            w[e] = x->lev[e] <= mid ? 0 : INF;
        hk_fill(x, w, f);
        if (f[(1u << 4) | 0u] != INF)
            hi = mid;
        else
            lo = mid + 1;
    }
    for (size_t e = 0; e < nn; e++)
        w[e] = x->lev[e] > lo ? INF : (x->lev[e] == lo ? BIG : 0) + x->cost[e];
    hk_fill(x, w, f);
    unsigned mask = 1;
    int last = 0;
    order[0] = 0;
    for (int k = 1; k < n; k++) {
        uint64_t want = f[((size_t)mask << 4) | (unsigned)last];
        for (int j = 1; j < n; j++) {
            if (mask & (1u << j) || w[last * n + j] == INF)
                continue;
            uint64_t rest = f[((size_t)(mask | (1u << j)) << 4) | (unsigned)j];
            if (rest != INF && w[last * n + j] + rest == want) {
                order[k] = j;
                mask |= 1u << j;
                last = j;
                break;
            }
        }
    }
    free(w);
    free(f);
    return 0;
}

typedef struct {
    int maxlev, hops;
    uint64_t cost;
} heur_score_t;

static int heur_better(const heur_score_t *a, const heur_score_t *b)
{
    if (a->maxlev != b->maxlev)
        return a->maxlev < b->maxlev;
    if (a->hops != b->hops)
        return a->hops < b->hops;
    return a->cost < b->cost;
}

static void heur_eval(const ring_ctx_t *x, const int *o, int *hist, heur_score_t *s)
{
    int n = x->n;
    memset(hist, 0, (size_t)x->nlev * sizeof *hist);
    s->cost = 0;
    for (int k = 0; k < n; k++) {
        int e = o[k] * n + o[(k + 1) % n];
        hist[x->lev[e]]++;
        s->cost += x->cost[e];
    }
    s->maxlev = x->nlev - 1;
    while (s->maxlev > 0 && !hist[s->maxlev])
        s->maxlev--;
    s->hops = hist[s->maxlev];
}

/* 2-opt until no move improves the score: replace hops (a,b),(c,d) by (a,c),(b,d). A level
 * histogram makes each candidate O(1) instead of re-scoring the whole ring. */
static void two_opt(const ring_ctx_t *x, int *o, int *hist, heur_score_t *s)
{
    int n = x->n, improved = 1;
    while (improved) {
        improved = 0;
        for (int i = 0; i + 2 < n; i++)
            for (int j = i + 2; j < n; j++) {
                if (i == 0 && j == n - 1)
                    continue;
                int a = o[i], b = o[i + 1], c = o[j], d = o[(j + 1) % n];
                int r1 = x->lev[a * n + b], r2 = x->lev[c * n + d];
                int a1 = x->lev[a * n + c], a2 = x->lev[b * n + d];
                heur_score_t t;
                t.cost = s->cost - x->cost[a * n + b] - x->cost[c * n + d] + x->cost[a * n + c] +
                         x->cost[b * n + d];
                t.maxlev = s->maxlev > a1 ? s->maxlev : a1;
                if (a2 > t.maxlev)
                    t.maxlev = a2;
                for (;;) {
                    int l = t.maxlev;
                    t.hops = hist[l] - (r1 == l) - (r2 == l) + (a1 == l) + (a2 == l);
                    if (t.hops > 0 || l == 0)
                        break;
                    t.maxlev--;
                }
                if (!heur_better(&t, s))
                    continue;
                for (int p = i + 1, q = j; p < q; p++, q--) {
                    int tmp = o[p];
                    o[p] = o[q];
                    o[q] = tmp;
                }
                hist[r1]--;
                hist[r2]--;
                hist[a1]++;
                hist[a2]++;
                *s = t;
                improved = 1;
            }
    }
}

static int ring_heuristic(const ring_ctx_t *x, int *order)
{
    int n = x->n, rc = -1;
    int *o = malloc((size_t)n * sizeof *o);
    int *hist = malloc((size_t)x->nlev * sizeof *hist);
    char *seen = malloc((size_t)n);
    heur_score_t best = {0, 0, 0}, s;
    int have = 0;
    if (!o || !hist || !seen)
        goto out;
    for (int start = 0; start < n && start < HEUR_STARTS; start++) {
        memset(seen, 0, (size_t)n);
        o[0] = start;
        seen[start] = 1;
        for (int k = 1; k < n; k++) {
            int cur = o[k - 1], pick = -1;
            for (int j = 0; j < n; j++) {
                if (seen[j])
                    continue;
                int e = cur * n + j, pe = cur * n + pick;
                if (pick < 0 || x->lev[e] < x->lev[pe] ||
                    (x->lev[e] == x->lev[pe] && x->cost[e] < x->cost[pe]))
                    pick = j;
            }
            o[k] = pick;
            seen[pick] = 1;
        }
        heur_eval(x, o, hist, &s);
        two_opt(x, o, hist, &s);
        if (!have || heur_better(&s, &best)) {
            best = s;
            have = 1;
            memcpy(order, o, (size_t)n * sizeof *o);
        }
    }
    rc = 0;
out:
    free(o);
    free(hist);
    free(seen);
    return rc;
}

/* Rotate to start at device 0 and walk towards the smaller neighbour, so equal rings print
 * the same. */
static void canonical(int n, int *o)
{
    int z = 0;
    while (o[z] != 0)
        z++;
    int *t = malloc((size_t)n * sizeof *t);
    if (!t)
        return;
    for (int k = 0; k < n; k++)
        t[k] = o[(z + k) % n];
    if (n > 2 && t[1] > t[n - 1])
        for (int k = 1; k < n; k++)
            o[k] = t[n - k];
    else
        for (int k = 1; k < n; k++)
            o[k] = t[k];
    o[0] = 0;
    free(t);
}

int orb_topo_ring_search(int n, const uint32_t *bw, const orb_topo_class_t *cls, int *order,
                         orb_topo_score_t *score)
{
    ring_ctx_t x;
    for (int k = 0; k < n; k++)
        order[k] = k;
    if (n <= 2) {
        orb_topo_ring_score(n, bw, cls, order, score);
        score->lower_bound = score->hops; /* only one ring exists */
        return 1;
    }
    if (ctx_init(&x, n, bw, cls) != 0) {
        ctx_fini(&x);
        orb_topo_ring_score(n, bw, cls, order, score); /* out of memory: rank order */
        return 0;
    }
    int exact = n <= ORB_TOPO_EXACT_MAX;
    if ((exact ? ring_exact(&x, order) : ring_heuristic(&x, order)) != 0) {
        exact = 0;
        for (int k = 0; k < n; k++)
            order[k] = k;
    } else {
        canonical(n, order);
    }
    orb_topo_ring_score(n, bw, cls, order, score);
    int maxlev = 0;
    while (x.lev_bw[maxlev] != score->bw || x.lev_cls[maxlev] != score->cls)
        maxlev++;
    int groups = groups_below(&x, maxlev);
    score->lower_bound = exact ? score->hops : (groups >= 2 ? groups : 0);
    ctx_fini(&x);
    return exact;
}
