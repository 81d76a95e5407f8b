/* Every algorithm of one collective (argv[1], e.g. "allreduce") proven by the plan checker
 * over nranks 1..64, several counts, roots, channel counts, chunk and slot sizes, with and
 * without in-place buffers and with a shuffled ring order. Every call carries a host map
 * (only the hierarchical all-reduce reads it; the others must not care). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "collectives/algos.h"
#include "collectives/plan_check.h"

static int failures, checks, skipped;

static void shuffled_ring(int n, int *ring)
{
    for (int i = 0; i < n; i++)
        ring[i] = i;
    unsigned s = 12345u + (unsigned)n; /* fixed seed: the same order on every run */
    for (int i = n - 1; i > 0; i--) {
        s = s * 1103515245u + 12345u;
        int j = (int)((s >> 8) % (unsigned)(i + 1)), t = ring[i];
        ring[i] = ring[j];
        ring[j] = t;
    }
}

/* Hosts for n ranks: p hosts of n/p ranks in blocks (p the smallest prime factor of n), or
 * n/p hosts of p ranks interleaved (n hosts of one rank when n is prime). 0 for n = 1. */
static int host_map(int n, int interleaved, int *host_of)
{
    if (n < 2)
        return 0;
    int p = 2;
    while (n % p)
        p++;
    const int H = !interleaved ? p : p < n ? n / p : n, L = n / H;
    for (int r = 0; r < n; r++)
        host_of[r] = interleaved ? r % H : r / L;
    return H;
}

static int is_rooted(orb_coll_t c)
{
    return c == ORB_COLL_BROADCAST || c == ORB_COLL_REDUCE || c == ORB_COLL_GATHER || c == ORB_COLL_SEND ||
           c == ORB_COLL_RECV || c == ORB_COLL_SCATTER;
}

/* Collectives whose buffers hold a block per rank: their simulations grow with n^2. */
static int is_block(orb_coll_t c)
{
    return c == ORB_COLL_GATHER || c == ORB_COLL_ALLGATHER || c == ORB_COLL_REDUCE_SCATTER || c == ORB_COLL_SCATTER ||
           c == ORB_COLL_ALLTOALL || c == ORB_COLL_ALLTOALLV;
}

/* alltoallv vectors for n ranks around count: rank r sends (count * ((3r + 5j) % 4)) / 2 +
 * (j == r) elements to j (zeros included, sizes uneven, never all equal), its blocks laid
 * out in reverse peer order with a one-element gap; the receiver's recvcounts mirror them,
 * in peer order with a two-element gap. vecs[r] points into store (4 * n * n elements). */
static void make_vectors(int n, size_t count, size_t *store, const size_t **vecs)
{
    const size_t N = (size_t)n;
    for (size_t r = 0; r < N; r++) {
        size_t *v = store + 4 * N * r;
        vecs[r] = v;
        for (size_t j = 0; j < N; j++)
            v[j] = count * ((3 * r + 5 * j) % 4) / 2 + (j == r);
        for (size_t j = N, at = 0; j-- > 0; at += v[j] + 1)
            v[N + j] = at;
    }
    for (size_t r = 0; r < N; r++) {
        size_t *v = store + 4 * N * r;
        for (size_t i = 0, at = 0; i < N; at += v[2 * N + i] + 2, i++) {
            v[2 * N + i] = store[4 * N * i + r];
            v[3 * N + i] = at;
        }
    }
}

/* A count that needs several rounds (ring) or more chunks than the tree's lag per lane. */
static size_t big_count(orb_coll_t c, orb_algo_t algo, int n, size_t chunk, int nch)
{
    size_t per_lane = 3;
    if (c == ORB_COLL_ALLREDUCE && (algo == ORB_ALGO_RING || algo == ORB_ALGO_HIER))
        per_lane = 2 * (size_t)n;
    else if (algo == ORB_ALGO_TREE)
        per_lane = (size_t)orb_tree_lag(n) + 3;
    return per_lane * chunk * (size_t)nch + 3;
}

static void check_one(const orb_plan_args_t *a, const orb_plan_check_opts_t *o)
{
    char err[2048];
    checks++;
    orb_status_t st = orb_plan_check(a, o, err, sizeof err);
    if (st == ORB_OK)
        return;
    if (++failures <= 10)
        fprintf(stderr,
                "FAIL %s/%s nranks=%d rank=%d root=%d count=%zu chunk=%zu nchannels=%d nslots=%zu "
                "slot_elems=%zu inplace=%d ring=%s nhosts=%d: %s: %s\n",
                orb_coll_name(a->coll), orb_algo_name(a->algo), a->nranks, a->rank, a->root, a->count,
                a->chunk_elems, a->nchannels, o->nslots, o->slot_elems, o->inplace,
                a->ring ? "shuffled" : "0..n-1", a->nhosts, orb_status_name(st), err);
}

static void check_algo(orb_coll_t coll, orb_algo_t algo)
{
    static const size_t chunks[] = {4, 64};
    int ring[ORB_PLAN_CHECK_MAX_RANKS], blocked[ORB_PLAN_CHECK_MAX_RANKS], interleaved[ORB_PLAN_CHECK_MAX_RANKS];
    static size_t vstore[4 * ORB_PLAN_CHECK_MAX_RANKS * ORB_PLAN_CHECK_MAX_RANKS];
    const size_t *vecs[ORB_PLAN_CHECK_MAX_RANKS];
    const int min_slots = orb_plan_min_slots(coll, algo);
    for (int n = 1; n <= ORB_PLAN_CHECK_MAX_RANKS; n++) {
        shuffled_ring(n, ring);
        const int hb = host_map(n, 0, blocked), hi = host_map(n, 1, interleaved);
        if (algo == ORB_ALGO_HIER && n == 1)
            continue; /* one host: no hierarchy (the builder refuses, test_plan_hier checks it) */
        const int roots[3] = {0, n - 1, n / 2};
        const int nroots = is_rooted(coll) ? 3 : 1;
        for (int ri = 0; ri < nroots; ri++) {
            if (ri > 0 && roots[ri] == roots[ri - 1])
                continue;
            for (int ci = 0; ci < 2; ci++)
                for (int nch = 1; nch <= 2; nch++) {
                    const size_t chunk = chunks[ci];
                    const size_t counts[] = {0, 1, 7, 1000, big_count(coll, algo, n, chunk, nch)};
                    for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++)
                        for (int variant = 0; variant < 4; variant++) {
                            /* variants: one piece per step with the fewest slots and one more;
                             * three pieces per step; in place with a shuffled ring */
                            orb_plan_args_t a = {.coll = coll, .algo = algo, .nranks = n, .root = roots[ri],
                                                 .count = counts[k], .op = ORB_AVG, .chunk_elems = chunk,
                                                 .nchannels = nch, .nhosts = hb, .host_of = hb ? blocked : NULL};
                            orb_plan_check_opts_t o = {.nslots = (size_t)min_slots, .slot_elems = chunk};
                            if (coll == ORB_COLL_ALLTOALLV) {
                                make_vectors(n, counts[k], vstore, vecs);
                                o.vecs = vecs;
                            }
                            if (variant == 1)
                                o.nslots++;
                            if (variant == 2) {
                                o.slot_elems = (chunk + 2) / 3;
                                o.nslots = min_slots > 1 ? 4 : 1;
                            }
                            if (variant == 3) {
                                o.inplace = coll != ORB_COLL_ALLTOALLV; /* it has no in-place form */
                                a.ring = ring;
                                a.nhosts = hi;
                                a.host_of = hi ? interleaved : NULL;
                            }
                            /* Keep the run short: big simulations (~ values moved) get the two
                             * variants that matter most, the biggest none (smaller n and the
                             * 4-element chunks cover those shapes with many rounds). */
                            /* all-to-all moves every block to every rank: a tenth of the budget */
                            const size_t cost = (size_t)n * counts[k] * (is_block(coll) ? (size_t)n : 2) *
                                                (coll == ORB_COLL_ALLTOALL || coll == ORB_COLL_ALLTOALLV ? 10 : 1);
                            if (cost > 1000000 || (cost > 100000 && (variant == 1 || variant == 2))) {
                                skipped++;
                                continue;
                            }
                            if (coll == ORB_COLL_SEND || coll == ORB_COLL_RECV) {
                                /* the other side of the pair: across the ring, or the next rank */
                                a.rank = (roots[ri] + 1 + n / 2) % n;
                                if (a.rank == a.root)
                                    a.rank = (a.root + 1) % n;
                                if (a.rank == a.root)
                                    continue; /* one rank: no pair */
                            }
                            check_one(&a, &o);
                        }
                }
        }
    }
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s COLLECTIVE (allreduce, broadcast, ...)\n", argv[0]);
        return 2;
    }
#ifdef __GLIBC__
    /* Each check allocates and frees up to tens of MB; without this glibc hands the memory
     * back after every check and the kernel zeroes it again for the next (half the run). */
    mallopt(M_TRIM_THRESHOLD, 512 << 20);
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
#endif
    int found = 0;
    for (int c = 0; c < ORB_NUM_COLLS; c++) {
        if (strcmp(argv[1], orb_coll_name((orb_coll_t)c)) != 0)
            continue;
        found = 1;
        for (int al = 0; al < ORB_NUM_ALGOS; al++)
            if (orb_plan_algo_supported((orb_coll_t)c, (orb_algo_t)al)) {
                int before = checks, before_skipped = skipped;
                check_algo((orb_coll_t)c, (orb_algo_t)al);
                printf("%s/%s: %d configurations checked, %d left out for time\n", argv[1],
                       orb_algo_name((orb_algo_t)al), checks - before, skipped - before_skipped);
            }
    }
    if (!found) {
        fprintf(stderr, "unknown collective %s\n", argv[1]);
        return 2;
    }
    if (failures)
        fprintf(stderr, "%d of %d configurations failed\n", failures, checks);
    return failures ? 1 : 0;
}
