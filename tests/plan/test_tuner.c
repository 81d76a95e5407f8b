/* Tuner: every choice is a plan that exists with a chunk inside the slot and a channel
 * count inside the limit; the overrides apply; the model picks what its formulas say in
 * the clear-cut cases (these check the model's arithmetic, not measured speed). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collectives/tuner.h"

static int failures;

#define CHECK(cond, ...)                                   \
    do {                                                   \
        if (!(cond)) {                                     \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
            fprintf(stderr, __VA_ARGS__);                  \
            fputc('\n', stderr);                           \
            failures++;                                    \
        }                                                  \
    } while (0)

static orb_tuner_choice_t choose(orb_coll_t coll, size_t count, size_t esz, int n, size_t slot, int maxch)
{
    orb_tuner_choice_t t;
    memset(&t, 0, sizeof t);
    orb_status_t st = orb_tuner_choose(coll, count, esz, n, NULL, slot, maxch, &t);
    CHECK(st == ORB_OK, "%s count %zu esz %zu n %d slot %zu: %s", orb_coll_name(coll), count, esz, n, slot,
          orb_status_name(st));
    return t;
}

static void bounds(void)
{
    static const size_t counts[] = {0, 1, 7, 1000, 1 << 20, (size_t)1 << 26};
    static const size_t eszs[] = {1, 2, 4, 8};
    static const size_t slots[] = {8, 4096, 262144};
    for (int c = 0; c < ORB_NUM_COLLS; c++)
        for (int n = 1; n <= 64; n += (n < 8 ? 1 : 13))
            for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++)
                for (size_t e = 0; e < sizeof eszs / sizeof eszs[0]; e++)
                    for (size_t s = 0; s < sizeof slots / sizeof slots[0]; s++)
                        for (int maxch = 1; maxch <= ORB_MAX_CHANNELS; maxch *= 2) {
                            orb_tuner_choice_t t = choose((orb_coll_t)c, counts[k], eszs[e], n, slots[s], maxch);
                            CHECK(orb_plan_algo_supported((orb_coll_t)c, t.algo), "%s: no %s plan",
                                  orb_coll_name((orb_coll_t)c), orb_algo_name(t.algo));
                            CHECK(t.algo != ORB_ALGO_HIER, "hier chosen without hosts");
                            CHECK(t.chunk_elems >= 1 && t.chunk_elems <= slots[s] / eszs[e],
                                  "chunk %zu outside 1..%zu", t.chunk_elems, slots[s] / eszs[e]);
                            CHECK(t.nchannels >= 1 && t.nchannels <= maxch, "%d channels, limit %d", t.nchannels,
                                  maxch);
                            CHECK(t.predicted_us >= 0 && isfinite(t.predicted_us), "predicted %g",
                                  t.predicted_us);
                            CHECK(t.reason[0] != '\0', "no reason");
                        }
}

static void model(void)
{
    /* 4 bytes to 64 ranks: log2(64) exchanges beat 2*log2(64) + 4 tree hops and 2*63 ring steps */
    orb_tuner_choice_t t = choose(ORB_COLL_ALLREDUCE, 1, 4, 64, 262144, 2);
    CHECK(t.algo == ORB_ALGO_DOUBLING, "small allreduce on 64 ranks: %s (%s)", orb_algo_name(t.algo), t.reason);
    /* 1 MiB to 64 ranks: each of the 6 exchanges moves all of it, the ring 2/64 of it a step */
    t = choose(ORB_COLL_ALLREDUCE, 262144, 4, 64, 262144, 2);
    CHECK(t.algo == ORB_ALGO_RING, "1 MiB allreduce on 64 ranks: %s (%s)", orb_algo_name(t.algo), t.reason);
    /* 7 ranks: 2 + 2 exchanges (the fold in and out) beat the ring's 12 steps */
    t = choose(ORB_COLL_ALLREDUCE, 2, 4, 7, 262144, 2);
    CHECK(t.algo == ORB_ALGO_DOUBLING, "small allreduce on 7 ranks: %s (%s)", orb_algo_name(t.algo), t.reason);
    t = choose(ORB_COLL_BARRIER, 0, 1, 8, 262144, 2);
    CHECK(t.algo == ORB_ALGO_DOUBLING, "barrier on 8 ranks: %s (%s)", orb_algo_name(t.algo), t.reason);
    /* 256 MiB on 4 ranks: ring moves 2(n-1)/n S, the trees 3 S */
    t = choose(ORB_COLL_ALLREDUCE, (size_t)1 << 26, 4, 4, 262144, 2);
    CHECK(t.algo == ORB_ALGO_RING && t.nchannels == 2 && t.chunk_elems == 65536,
          "large allreduce on 4 ranks: %s chunk %zu ch %d (%s)", orb_algo_name(t.algo), t.chunk_elems, t.nchannels,
          t.reason);
    /* The log-round plans for small blocks against the ring (4-byte elements):
     * all-gather: Bruck's 3 rounds beat the ring's 7 steps at 16 B a rank on 8 ranks; at 1 MiB
     * the ring (Bruck copies every block out of its work area once more); on 2 and 3 ranks
     * Bruck has as many rounds as the ring steps, and the copies: the ring.
     * reduce-scatter: 3 exchanges of the whole 128 B beat the ring's 7 steps; at 1 MiB a rank
     * the ring (each exchange moves all 8 MiB); on 3 ranks the fold's two extra exchanges make
     * 3 against the ring's 2. */
    static const struct {
        orb_coll_t coll;
        size_t count;
        int n;
        orb_algo_t want;
    } small[] = {
        {ORB_COLL_ALLGATHER, 4, 8, ORB_ALGO_BRUCK},          {ORB_COLL_ALLGATHER, 262144, 8, ORB_ALGO_RING},
        {ORB_COLL_ALLGATHER, 4, 3, ORB_ALGO_RING},           {ORB_COLL_ALLGATHER, 4, 2, ORB_ALGO_RING},
        {ORB_COLL_REDUCE_SCATTER, 4, 8, ORB_ALGO_DOUBLING},  {ORB_COLL_REDUCE_SCATTER, 262144, 8, ORB_ALGO_RING},
        {ORB_COLL_REDUCE_SCATTER, 4, 3, ORB_ALGO_RING},
    };
    for (size_t i = 0; i < sizeof small / sizeof *small; i++) {
        t = choose(small[i].coll, small[i].count, 4, small[i].n, 262144, 2);
        CHECK(t.algo == small[i].want, "%s of %zu elements on %d ranks: %s, want %s (%s)",
              orb_coll_name(small[i].coll), small[i].count, small[i].n, orb_algo_name(t.algo),
              orb_algo_name(small[i].want), t.reason);
    }
    t = choose(ORB_COLL_GATHER, 1000, 4, 16, 262144, 2);
    CHECK(t.algo == ORB_ALGO_DIRECT, "gather: %s", orb_algo_name(t.algo));
    t = choose(ORB_COLL_SEND, 1000, 4, 2, 262144, 2);
    CHECK(t.algo == ORB_ALGO_DIRECT, "send: %s", orb_algo_name(t.algo));
    t = choose(ORB_COLL_ALLREDUCE, 2, 4, 2, 262144, 2);
    CHECK(t.algo == ORB_ALGO_DIRECT, "2-rank small allreduce: %s (one exchange beats the ring's two hops)",
          orb_algo_name(t.algo));
    t = choose(ORB_COLL_ALLREDUCE, 1, 4, 8, 262144, 8);
    CHECK(t.nchannels == 1, "one element on %d channels", t.nchannels);
    /* a long chain wants chunks well below the slot so the pipeline fills fast */
    t = choose(ORB_COLL_BROADCAST, 1 << 18, 4, 64, 262144, 1);
    CHECK(t.algo != ORB_ALGO_RING || t.chunk_elems < 65536, "broadcast chain chunk %zu", t.chunk_elems);

    for (int c = 0; c < ORB_NUM_COLLS; c++)
        for (int al = 0; al < ORB_NUM_ALGOS; al++) {
            /* hier has a plan only with hosts: none here (see hosts()) */
            int has = orb_plan_algo_supported((orb_coll_t)c, (orb_algo_t)al) && al != ORB_ALGO_HIER &&
                      /* the allreduce exchange is for 2 ranks; here there are 8 */
                      !(c == ORB_COLL_ALLREDUCE && al == ORB_ALGO_DIRECT);
            double p = orb_tuner_predict((orb_coll_t)c, (orb_algo_t)al, 1000, 4, 8, NULL, 256, 2);
            CHECK(has ? p > 0 : p < 0, "%s/%s predicted %g", orb_coll_name((orb_coll_t)c),
                  orb_algo_name((orb_algo_t)al), p);
            CHECK(!orb_plan_algo_supported((orb_coll_t)c, (orb_algo_t)al) ||
                      strchr(orb_tuner_formula((orb_coll_t)c, (orb_algo_t)al), '*'),
                  "no formula for %s/%s",
                  orb_coll_name((orb_coll_t)c), orb_algo_name((orb_algo_t)al));
        }
}

/* ---- the model written out independently (docs/algorithms.md, "Notation" and each plan's
 * cost), to compare orb_tuner_predict and orb_tuner_choose against ---------------------- */

static double ref_predict(orb_coll_t coll, orb_algo_t algo, size_t count, size_t esz, int nranks, double alpha,
                          double beta_gbps, double l2, size_t chunk_elems, int nch)
{
    if (coll == ORB_COLL_BARRIER) { /* a 1-byte all-reduce */
        count = 1;
        esz = 1;
    }
    double S = (double)count * (double)esz, n = nranks, C = nch, b = beta_gbps * 1000.0; /* bytes/us */
    if (S == 0)
        return 0;
    double s = S / C, c = (double)chunk_elems * (double)esz;
    if (c > s)
        c = s; /* a chunk is never longer than the lane */
    double K = ceil(s / c), R = ceil(s / (n * c)), extra = (C - 1) * alpha, hop = alpha + C * c / b;
    int d = 0;
    while ((1 << (d + 1)) <= nranks)
        d++; /* floor(log2 n) */
    if (nranks == 1)
        return (coll == ORB_COLL_SEND || coll == ORB_COLL_RECV) ? 0 : K * hop + extra;
    if (algo == ORB_ALGO_RING) {
        if (coll == ORB_COLL_ALLREDUCE || coll == ORB_COLL_BARRIER)
            return 2 * (n - 1) * R * alpha + 2 * (n - 1) / n * S / b + extra;
        if (coll == ORB_COLL_ALLGATHER || coll == ORB_COLL_REDUCE_SCATTER || coll == ORB_COLL_COMM_SPLIT)
            return (n - 1) * K * alpha + (n - 1) * S / b + extra;
        if (coll == ORB_COLL_SCATTER && nranks >= 3 && nch == 1 && count > 0 &&
            (double)nranks * (double)count <= (double)chunk_elems)
            return (n - 1) * (alpha + n * S / b); /* the root's whole input, one piece a hop */
        if (coll == ORB_COLL_GATHER || coll == ORB_COLL_SCATTER)
            return ((n - 1) * K + n - 2) * hop + extra;
        return (n - 2 + K) * hop + extra; /* broadcast, reduce: the chain */
    }
    if (algo == ORB_ALGO_TREE)
        return coll == ORB_COLL_ALLREDUCE ? (2 * d + (nch == 1 ? 4 : 3) * K) * hop + extra
                                          : 2 * (d + K - 1) * hop + extra;
    if (algo == ORB_ALGO_BRUCK) { /* alltoall: round k moves the blocks whose distance has bit k */
        const int gather = coll == ORB_COLL_ALLGATHER || coll == ORB_COLL_COMM_SPLIT;
        double t = extra + (gather ? (n - 1) * S / b : 0); /* all-gather: then the copies out */
        for (int k = 0; (1 << k) < nranks; k++) {
            int m = 0;
            for (int i = 1; i < nranks; i++)
                m += (i >> k) & 1;
            if (gather) /* all-gather: the first min(2^k, n - 2^k) of the blocks held */
                m = (1 << k) < nranks - (1 << k) ? (1 << k) : nranks - (1 << k);
            double len = m * s, ck = (double)chunk_elems * (double)esz < len ? (double)chunk_elems * (double)esz : len;
            t += ceil(len / ck) * (alpha + C * ck / b);
        }
        return t;
    }
    if (algo == ORB_ALGO_DOUBLING) { /* exchanges with v^1, v^2, ... among p = 2^floor(log2 n); the rest fold */
        int p = 1, rounds = 0;
        while (2 * p <= nranks) {
            p *= 2;
            rounds++;
        }
        if (p < nranks)
            rounds += 2;
        if (coll == ORB_COLL_REDUCE_SCATTER) { /* the all-reduce of the whole input (n blocks), then a copy */
            double sn = n * s, cn = (double)chunk_elems * (double)esz < sn ? (double)chunk_elems * (double)esz : sn;
            return rounds * ceil(sn / cn) * (alpha + C * cn / b) + extra +
                   (l2 > 0 && rounds * n * S > l2 / 8 ? rounds * n * S / b : 0) + S / b;
        }
        /* the reduce after each send is a second pass, free while rounds*S fits in L2/8 */
        return rounds * K * hop + extra + (l2 > 0 && rounds * S > l2 / 8 ? rounds * S / b : 0);
    }
    if (algo == ORB_ALGO_ORDERED) /* chains of n-1 hops; rank 1 takes (2n-3)/n folding, (n-1)/n results */
        return coll == ORB_COLL_REDUCE_SCATTER
                   ? (n - 1) * hop + (2 * n - 3) * K * alpha + (2 * n - 3) * S / b + extra
                   : (n - 1) * hop + (3 * n - 4) * R * alpha + (3 * n - 4) / n * S / b + extra;
    /* direct */
    if (coll == ORB_COLL_GATHER || coll == ORB_COLL_SCATTER) /* n-1 blocks through the root */
        return (n - 1) * K * hop + extra;
    if (coll == ORB_COLL_ALLTOALL || coll == ORB_COLL_ALLTOALLV) /* n-1 pairwise exchanges */
        return (n - 1) * K * hop + extra;
    if (coll == ORB_COLL_ALLREDUCE) /* one exchange: as a round of doubling */
        return K * hop + extra + (l2 > 0 && S > l2 / 8 ? S / b : 0);
    return K * hop + extra;
}

/* What the tuner must pick: the cheapest (algorithm, channels, chunk), algorithms in enum
 * order and a later one only when strictly cheaper; channels 1..min(max, elements); chunks
 * from the slot down by halves, the last one at or below 256 bytes. */
static void ref_choose(orb_coll_t coll, size_t count, size_t esz, int n, size_t slot, int maxch, orb_algo_t *algo,
                       double *best)
{
    static const orb_algo_t order[] = {ORB_ALGO_RING, ORB_ALGO_TREE, ORB_ALGO_DIRECT, ORB_ALGO_BRUCK,
                                       ORB_ALGO_DOUBLING};
    static const int has[ORB_NUM_COLLS][5] = {
        [ORB_COLL_ALLREDUCE] = {1, 1, 1, 0, 1}, [ORB_COLL_BROADCAST] = {1, 1, 0}, [ORB_COLL_REDUCE] = {1, 1, 0},
        [ORB_COLL_GATHER] = {1, 0, 1},    [ORB_COLL_ALLGATHER] = {1, 0, 0, 1}, [ORB_COLL_REDUCE_SCATTER] = {1, 0, 0, 0, 1},
        [ORB_COLL_SEND] = {0, 0, 1},      [ORB_COLL_RECV] = {0, 0, 1},      [ORB_COLL_BARRIER] = {1, 0, 0, 0, 1},
        [ORB_COLL_ALLTOALL] = {0, 0, 1, 1}, [ORB_COLL_ALLTOALLV] = {0, 0, 1}, [ORB_COLL_SCATTER] = {1, 0, 1},
        [ORB_COLL_COMM_SPLIT] = {1, 0, 0, 1}, /* orb_comm_split's exchange: an all-gather */
    };
    size_t elems = (coll == ORB_COLL_BARRIER || count == 0) ? 1 : count;
    int chmax = elems < (size_t)maxch ? (int)elems : maxch;
    *best = INFINITY;
    *algo = ORB_NUM_ALGOS;
    for (int i = 0; i < 5; i++) {
        if (!has[coll][i] || (order[i] == ORB_ALGO_DIRECT && coll == ORB_COLL_ALLREDUCE && n > 2))
            continue;
        for (int ch = 1; ch <= chmax; ch++)
            for (size_t ce = slot / esz; ce >= 1; ce /= 2) {
                double t = ref_predict(coll, order[i], count, esz, n, orb_shm_transport.link.alpha_us,
                                       orb_shm_transport.link.beta_gbps, orb_shm_transport.link.l2_bytes, ce, ch);
                if (t < *best) {
                    *best = t;
                    *algo = order[i];
                }
                if (ce * esz <= 256)
                    break;
            }
    }
}

static int close_to(double got, double want) { return fabs(got - want) <= 1e-9 * (fabs(want) + 1); }

static void formulas(void)
{
    /* Hand-computed, shared memory (alpha 1.5 us, beta 8 GB/s = 8000 B/us), 1000 floats on
     * 4 ranks, 2 channels, chunk 256 elements: S = 4000, s = 2000, c = 1024, K = 2, R = 1,
     * hop = 1.5 + 2*1024/8000 = 1.756, (C-1)*alpha = 1.5.
     *   ring allreduce  2*3*1*1.5 + 2*3/4*4000/8000 + 1.5          = 9 + 0.75 + 1.5  = 11.25
     *   tree allreduce  (2*2 + 3*2)*1.756 + 1.5                     = 17.56 + 1.5    = 19.06
     *   ring allgather  3*2*1.5 + 3*4000/8000 + 1.5                 = 9 + 1.5 + 1.5  = 12
     *   chain broadcast (4-2+2)*1.756 + 1.5                                          = 8.524
     *   tree broadcast  2*(2+2-1)*1.756 + 1.5                                        = 12.036
     *   ring gather     (3*2 + 2)*1.756 + 1.5                                        = 15.548
     *   direct gather   3*2*1.756 + 1.5                                              = 12.036 */
    const orb_link_cost_t shm = {1.5, 8.0, 0, 0};
    struct {
        orb_coll_t coll;
        orb_algo_t algo;
        double want;
    } hand[] = {
        {ORB_COLL_ALLREDUCE, ORB_ALGO_RING, 11.25}, {ORB_COLL_ALLREDUCE, ORB_ALGO_TREE, 19.06},
        {ORB_COLL_ALLGATHER, ORB_ALGO_RING, 12.0},  {ORB_COLL_BROADCAST, ORB_ALGO_RING, 8.524},
        {ORB_COLL_BROADCAST, ORB_ALGO_TREE, 12.036}, {ORB_COLL_GATHER, ORB_ALGO_RING, 15.548},
        {ORB_COLL_GATHER, ORB_ALGO_DIRECT, 12.036},
    };
    for (size_t i = 0; i < sizeof hand / sizeof hand[0]; i++) {
        double p = orb_tuner_predict(hand[i].coll, hand[i].algo, 1000, 4, 4, &shm, 256, 2);
        CHECK(close_to(p, hand[i].want), "%s/%s 1000 x 4 B on 4 ranks: predicted %g, by hand %g",
              orb_coll_name(hand[i].coll), orb_algo_name(hand[i].algo), p, hand[i].want);
    }

    /* The chain scatter packed, by hand: 16 floats a rank on 8 ranks, one channel, chunk 256
     * elements (>= 8 * 16): 7 hops of all 8 blocks, 7*(1.5 + 512/8000) = 10.948; on two
     * channels the blocks one by one: s = 32, K = 1, hop = 1.5 + 2*32/8000 = 1.508,
     * (7*1 + 6)*1.508 + 1.5 = 21.104; chunk 64 elements (< 128): one by one too, s = 64, K = 1,
     * hop = 1.5 + 64/8000 = 1.508, 13*1.508 = 19.604. */
    {
        const struct {
            size_t chunk;
            int nch;
            double want;
        } sc[] = {{256, 1, 10.948}, {256, 2, 21.104}, {64, 1, 19.604}};
        for (size_t i = 0; i < sizeof sc / sizeof sc[0]; i++) {
            double p = orb_tuner_predict(ORB_COLL_SCATTER, ORB_ALGO_RING, 16, 4, 8, &shm, sc[i].chunk, sc[i].nch);
            CHECK(close_to(p, sc[i].want),
                  "ring scatter of 16 x 4 B on 8 ranks, chunk %zu, %d channel(s): predicted %g, by hand %g",
                  sc[i].chunk, sc[i].nch, p, sc[i].want);
        }
    }

    /* The exchange's second pass, by hand, on the link measured on a Zen 1 VM (0.67 us, 4.76
     * GB/s = 4760 B/us, L2 512 KiB: free up to 64 KiB moved): 64 KiB on 2 ranks, one chunk,
     * 0.67 + 65536/4760 = 14.438; 256 KiB 0.67 + 2*262144/4760 = 110.814; doubling on 4
     * ranks (2 rounds) of 32 KiB 2*(0.67 + 32768/4760) = 15.108, of 64 KiB 2*(0.67 +
     * 65536/4760) + 2*65536/4760 = 56.412. What was measured there (docs/perf.md): the
     * exchange ahead of the ring to 64 KiB, behind from 256 KiB; so must the choice be. */
    {
        const orb_link_cost_t z = {0.67, 4.76, 524288, 0};
        const struct {
            orb_algo_t algo;
            int n;
            size_t count;
            double want;
        } ex[] = {{ORB_ALGO_DIRECT, 2, 16384, 14.438}, {ORB_ALGO_DIRECT, 2, 65536, 110.814},
                  {ORB_ALGO_DOUBLING, 4, 8192, 15.108}, {ORB_ALGO_DOUBLING, 4, 16384, 56.412}};
        for (size_t i = 0; i < sizeof ex / sizeof ex[0]; i++) {
            double p = orb_tuner_predict(ORB_COLL_ALLREDUCE, ex[i].algo, ex[i].count, 4, ex[i].n, &z, ex[i].count, 1);
            CHECK(fabs(p - ex[i].want) < 1e-3, "%s allreduce of %zu x 4 B on %d ranks, L2 512 KiB: predicted %g, by hand %g",
                  orb_algo_name(ex[i].algo), ex[i].count, ex[i].n, p, ex[i].want);
        }
        orb_tuner_choice_t t;
        CHECK(orb_tuner_choose(ORB_COLL_ALLREDUCE, 16384, 4, 2, &z, 262144, 2, &t) == ORB_OK &&
                  t.algo == ORB_ALGO_DIRECT,
              "64 KiB on 2 ranks, L2 512 KiB: %s (%s)", orb_algo_name(t.algo), t.reason);
        CHECK(orb_tuner_choose(ORB_COLL_ALLREDUCE, 65536, 4, 2, &z, 262144, 2, &t) == ORB_OK &&
                  t.algo == ORB_ALGO_RING,
              "256 KiB on 2 ranks, L2 512 KiB: %s (%s)", orb_algo_name(t.algo), t.reason);
        /* the chunk cap: 8 slots of a 512 KiB L2 hold 64 KiB chunks (16384 floats) for the
         * plans that pass data on; the direct ones, and callers that name no slot count, keep
         * the slot (65536 floats) */
        CHECK(orb_tuner_choose_det(ORB_COLL_ALLREDUCE, 1 << 22, 4, 2, &z, NULL, 262144, 8, 2, 0, &t) == ORB_OK &&
                  t.algo == ORB_ALGO_RING && t.chunk_elems == 16384,
              "16 MiB all-reduce, L2 512 KiB, 8 slots: %s chunk %zu (%s)", orb_algo_name(t.algo), t.chunk_elems,
              t.reason);
        CHECK(orb_tuner_choose_det(ORB_COLL_BROADCAST, 1 << 22, 4, 4, &z, NULL, 262144, 8, 2, 0, &t) == ORB_OK &&
                  t.chunk_elems <= 16384,
              "16 MiB broadcast, L2 512 KiB, 8 slots: %s chunk %zu", orb_algo_name(t.algo), t.chunk_elems);
        /* a deeper FIFO keeps the 8-slot cap (its other slots are run-ahead room for small calls);
         * a shallower one fits fewer chunks, so they may be larger: L2/4 = 128 KiB (32768 floats) */
        CHECK(orb_tuner_choose_det(ORB_COLL_ALLREDUCE, 1 << 22, 4, 2, &z, NULL, 262144, 16, 2, 0, &t) == ORB_OK &&
                  t.algo == ORB_ALGO_RING && t.chunk_elems == 16384,
              "16 MiB all-reduce, L2 512 KiB, 16 slots: %s chunk %zu (%s)", orb_algo_name(t.algo), t.chunk_elems,
              t.reason);
        CHECK(orb_tuner_choose_det(ORB_COLL_ALLREDUCE, 1 << 22, 4, 2, &z, NULL, 262144, 4, 2, 0, &t) == ORB_OK &&
                  t.algo == ORB_ALGO_RING && t.chunk_elems == 32768,
              "16 MiB all-reduce, L2 512 KiB, 4 slots: %s chunk %zu (%s)", orb_algo_name(t.algo), t.chunk_elems,
              t.reason);
        const int two_hosts[2] = {0, 1};
        const orb_tuner_hosts_t h2 = {.nhosts = 2, .host_of = two_hosts, .inter = {20.0, 1.25, 524288}, .nics = 1};
        CHECK(orb_tuner_choose_det(ORB_COLL_ALLREDUCE, 1 << 22, 4, 2, &z, &h2, 262144, 8, 2, 0, &t) == ORB_OK &&
                  t.chunk_elems == 65536,
              "16 MiB all-reduce across 2 hosts, L2 512 KiB, 8 slots: chunk %zu (no cap across hosts)", t.chunk_elems);
        CHECK(orb_tuner_choose_det(ORB_COLL_ALLREDUCE, 65536, 4, 2, &z, &h2, 262144, 8, 2, 0, &t) == ORB_OK &&
                  t.algo == ORB_ALGO_DIRECT,
              "256 KiB all-reduce across 2 hosts: %s (no second-pass term across hosts) (%s)", orb_algo_name(t.algo),
              t.reason);
        CHECK(orb_tuner_choose_det(ORB_COLL_SEND, 1 << 22, 4, 2, &z, NULL, 262144, 8, 2, 0, &t) == ORB_OK &&
                  t.algo == ORB_ALGO_DIRECT && t.chunk_elems == 65536,
              "16 MiB send, L2 512 KiB, 8 slots: %s chunk %zu", orb_algo_name(t.algo), t.chunk_elems);
        CHECK(orb_tuner_choose_det(ORB_COLL_ALLREDUCE, 1 << 22, 4, 2, &z, NULL, 262144, 0, 2, 0, &t) == ORB_OK &&
                  t.chunk_elems == 65536,
              "16 MiB all-reduce, slots unknown: chunk %zu", t.chunk_elems);
        CHECK(orb_tuner_choose_det(ORB_COLL_ALLREDUCE, 1 << 22, 4, 2, &z, NULL, 262144, 64, 2, 0, &t) == ORB_OK &&
                  t.chunk_elems == 16384,
              "16 MiB all-reduce, L2 512 KiB, 64 slots: chunk %zu (64 KiB, the 8-slot cap)", t.chunk_elems);
        const orb_link_cost_t nol2 = {0.67, 4.76, 0, 0};
        CHECK(orb_tuner_choose(ORB_COLL_ALLREDUCE, 65536, 4, 2, &nol2, 262144, 2, &t) == ORB_OK &&
                  t.algo == ORB_ALGO_DIRECT,
              "256 KiB on 2 ranks, L2 unknown (no second-pass term): %s (%s)", orb_algo_name(t.algo), t.reason);
    }

    /* every flat (collective, algorithm) against the written-out formulas */
    static const size_t counts[] = {0, 1, 7, 1000, 65536, (size_t)1 << 22};
    static const int ns[] = {1, 2, 3, 4, 7, 8, 16, 63, 64};
    static const size_t chunks[] = {1, 64, 256, 65536};
    const orb_link_cost_t tcp = {20.0, 1.25, 0, 0}, zen1 = {0.67, 4.76, 524288, 0}; /* zen1: measured, 2 ranks */
    for (int c = 0; c < ORB_NUM_COLLS; c++)
        for (int al = 0; al < ORB_NUM_ALGOS; al++) {
            if (!orb_plan_algo_supported((orb_coll_t)c, (orb_algo_t)al) || al == ORB_ALGO_HIER)
                continue;
            for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++)
                for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++)
                    for (size_t ck = 0; ck < sizeof chunks / sizeof chunks[0]; ck++)
                        for (int ch = 1; ch <= 8; ch *= 2)
                            for (int l = 0; l < 3; l++) {
                                int n = ns[ni];
                                if (c == ORB_COLL_ALLREDUCE && al == ORB_ALGO_DIRECT && n > 2)
                                    continue;
                                const orb_link_cost_t *lk = l == 2 ? &zen1 : l ? &tcp : &shm;
                                double p = orb_tuner_predict((orb_coll_t)c, (orb_algo_t)al, counts[k], 4, n, lk,
                                                             chunks[ck], ch);
                                double w = ref_predict((orb_coll_t)c, (orb_algo_t)al, counts[k], 4, n,
                                                       lk->alpha_us, lk->beta_gbps, lk->l2_bytes, chunks[ck], ch);
                                CHECK(close_to(p, w), "%s/%s count %zu n %d chunk %zu C %d: predicted %g, formula %g",
                                      orb_coll_name((orb_coll_t)c), orb_algo_name((orb_algo_t)al), counts[k], n,
                                      chunks[ck], ch, p, w);
                            }
        }

    /* the choice is the formulas' minimum, sizes swept across the ring/tree/chain crossovers */
    for (int c = 0; c < ORB_NUM_COLLS; c++)
        for (size_t count = 1; count <= ((size_t)1 << 24); count *= 4)
            for (int n = 2; n <= 64; n *= 2) {
                orb_algo_t want;
                double best;
                ref_choose((orb_coll_t)c, count, 4, n, 262144, 2, &want, &best);
                orb_tuner_choice_t t = choose((orb_coll_t)c, count, 4, n, 262144, 2);
                CHECK(t.algo == want && close_to(t.predicted_us, best),
                      "%s of %zu x 4 B on %d ranks: tuner %s %g us, formulas %s %g us", orb_coll_name((orb_coll_t)c),
                      count, n, orb_algo_name(t.algo), t.predicted_us, orb_algo_name(want), best);
            }
}

static void blocked_hosts(int n, int H, int *host_of)
{
    for (int r = 0; r < n; r++)
        host_of[r] = r / (n / H);
}

static orb_tuner_choice_t choose_hosts(size_t count, int n, const orb_link_cost_t *intra,
                                       const orb_tuner_hosts_t *h)
{
    orb_tuner_choice_t t;
    memset(&t, 0, sizeof t);
    orb_status_t st = orb_tuner_choose_hosts(ORB_COLL_ALLREDUCE, count, 4, n, intra, h, 262144, 2, &t);
    CHECK(st == ORB_OK, "allreduce count %zu n %d on %d hosts: %s", count, n, h ? h->nhosts : 1,
          orb_status_name(st));
    return t;
}

/* The hierarchical all-reduce: only with hosts of equal size, the formula's arithmetic,
 * picked when the hosts are slow to reach and not when they are as fast as shared memory. */
static void hosts(void)
{
    int map[64];
    const orb_link_cost_t tcp = {20.0, 1.25, 0, 0}; /* 10 GbE: tens of us per step */
    orb_tuner_hosts_t h = {.nhosts = 2, .host_of = map, .inter = tcp, .nics = 1};

    /* 2 hosts of 2; intra 1 us, 1 GB/s; inter 10 us, 0.5 GB/s; 4000 B in one round:
     * (2*2*1*1 + 2*1*10) + 2(1/2)*4000/1000 + 2(1/2)*4000/(1*500) = 24 + 4 + 8 */
    const orb_link_cost_t in1 = {1.0, 1.0, 0, 0}, x1 = {10.0, 0.5, 0, 0};
    orb_tuner_hosts_t h4 = {.nhosts = 2, .host_of = map, .inter = x1, .nics = 1};
    blocked_hosts(4, 2, map);
    double p = orb_tuner_predict_hosts(ORB_COLL_ALLREDUCE, ORB_ALGO_HIER, 1000, 4, 4, &in1, &h4, 1000, 1);
    CHECK(fabs(p - 36.0) < 1e-9, "hier 2x2 predicted %g, want 36", p);
    h4.nics = 2; /* two links per host: the inter-host term halves */
    p = orb_tuner_predict_hosts(ORB_COLL_ALLREDUCE, ORB_ALGO_HIER, 1000, 4, 4, &in1, &h4, 1000, 1);
    CHECK(fabs(p - 32.0) < 1e-9, "hier 2x2 on 2 nics predicted %g, want 32", p);
    /* hier alltoall, 2x2, blocks of 4000 B, chunk 4000 B: inside (L-1)*H = 2 blocks of one
     * chunk, 2*(1 + 4000/1000) = 10; across (H-1) = 1 message of L = 2 blocks in 2 chunks,
     * 2*(10 + 4000*2/(2*500)) = 36 (two nics, shared by the host's 2 ranks) */
    p = orb_tuner_predict_hosts(ORB_COLL_ALLTOALL, ORB_ALGO_HIER, 1000, 4, 4, &in1, &h4, 1000, 1);
    CHECK(fabs(p - 46.0) < 1e-9, "hier alltoall 2x2 predicted %g, want 46", p);
    /* flat algorithms pay the slow class: the ring as if every link were the inter-host one */
    /* alpha 10 us, beta 0.5 GB/s = 500 B/us, S = 4000 B, one round (R = ceil(4000/(4*4000))):
     * 2*3*1*10 + 2*3/4*4000/500 = 60 + 12 = 72 */
    double flat = orb_tuner_predict_hosts(ORB_COLL_ALLREDUCE, ORB_ALGO_RING, 1000, 4, 4, &in1, &h4, 1000, 1);
    CHECK(fabs(flat - 72.0) < 1e-9, "flat ring over hosts %g, want 72 (the slow link's alpha and beta)", flat);
    CHECK(orb_tuner_predict(ORB_COLL_ALLREDUCE, ORB_ALGO_HIER, 1000, 4, 4, &in1, 1000, 1) < 0,
          "hier predicted without hosts");
    CHECK(orb_tuner_predict_hosts(ORB_COLL_BROADCAST, ORB_ALGO_HIER, 1000, 4, 4, &in1, &h4, 1000, 1) < 0,
          "hier broadcast predicted");

    /* 2 hosts of 8 over 10 GbE: for one element, recursive doubling's 4 exchanges even
     * priced all at the slow class (80 us) beat hier (42 + 40 us of steps), the ring's 2*15
     * slow steps and the tree's 12; for 64 MiB hier (the slow link carries 1/8) */
    blocked_hosts(16, 2, map);
    orb_tuner_choice_t t = choose_hosts(1, 16, NULL, &h);
    CHECK(t.algo == ORB_ALGO_DOUBLING && strstr(t.reason, "< hier 82.0 us"), "1 element, 2x8 over tcp: %s (%s)",
          orb_algo_name(t.algo), t.reason);
    t = choose_hosts((size_t)1 << 24, 16, NULL, &h);
    CHECK(t.algo == ORB_ALGO_HIER && strstr(t.reason, "model: hier"), "64 MiB, 2x8 over tcp: %s (%s)",
          orb_algo_name(t.algo), t.reason);
    /* one rank per host: hier is the flat ring over hosts, and the tie goes to the ring */
    blocked_hosts(8, 8, map);
    h.nhosts = 8;
    t = choose_hosts((size_t)1 << 24, 8, NULL, &h);
    CHECK(t.algo == ORB_ALGO_RING, "8 hosts of 1: %s (%s)", orb_algo_name(t.algo), t.reason);
    /* hosts as fast as the inside: the ring moves 2(n-1)/n S, hier 2(L-1)/L S + 2(H-1)/H S */
    blocked_hosts(16, 4, map);
    h.nhosts = 4;
    h.inter = orb_tuner_shm_link();
    t = choose_hosts((size_t)1 << 24, 16, NULL, &h);
    CHECK(t.algo == ORB_ALGO_RING, "4x4 on shared memory only: %s (%s)", orb_algo_name(t.algo), t.reason);
    h.inter = tcp;

    /* uneven hosts (3 + 1): no hier, and ORBIT_ALGO=hier says why */
    const int uneven[4] = {0, 0, 0, 1};
    orb_tuner_hosts_t hu = {.nhosts = 2, .host_of = uneven, .inter = tcp, .nics = 1};
    t = choose_hosts(1, 4, NULL, &hu);
    CHECK(t.algo != ORB_ALGO_HIER, "uneven hosts: %s", orb_algo_name(t.algo));
    setenv("ORBIT_ALGO", "hier", 1);
    t = choose_hosts(1, 4, NULL, &hu);
    CHECK(t.algo != ORB_ALGO_HIER && strstr(t.reason, "hier needs"), "ORBIT_ALGO=hier, uneven: %s", t.reason);
    t = choose(ORB_COLL_ALLREDUCE, 1, 4, 4, 262144, 2);
    CHECK(t.algo != ORB_ALGO_HIER && strstr(t.reason, "hier needs"), "ORBIT_ALGO=hier, no hosts: %s", t.reason);
    t = choose(ORB_COLL_BROADCAST, 100, 4, 4, 262144, 2);
    CHECK(t.algo != ORB_ALGO_HIER && strstr(t.reason, "no plan"), "ORBIT_ALGO=hier, broadcast: %s", t.reason);
    blocked_hosts(16, 4, map);
    h.inter = orb_tuner_shm_link(); /* the model would take the ring: the override wins */
    t = choose_hosts((size_t)1 << 24, 16, NULL, &h);
    CHECK(t.algo == ORB_ALGO_HIER && strstr(t.reason, "ORBIT_ALGO=hier"), "ORBIT_ALGO=hier, 4x4: %s", t.reason);
    h.inter = tcp;
    unsetenv("ORBIT_ALGO");

    const int bad[4] = {0, 1, 2, 1};
    orb_tuner_hosts_t hb = {.nhosts = 2, .host_of = bad, .inter = tcp};
    orb_tuner_choice_t u;
    CHECK(orb_tuner_choose_hosts(ORB_COLL_ALLREDUCE, 10, 4, 4, NULL, &hb, 4096, 2, &u) == ORB_ERR_INVALID_ARG,
          "host index 2 of 2 hosts");
    /* one host: exactly the flat choice */
    orb_tuner_hosts_t one = {.nhosts = 1, .inter = tcp};
    orb_tuner_choice_t a = choose_hosts((size_t)1 << 20, 8, NULL, &one), b = choose(ORB_COLL_ALLREDUCE,
                                                                                    (size_t)1 << 20, 4, 8, 262144, 2);
    CHECK(a.algo == b.algo && a.chunk_elems == b.chunk_elems && a.nchannels == b.nchannels &&
              a.predicted_us == b.predicted_us,
          "one host differs from no hosts");

    /* every collective on every even host split: a plan that exists, hier only for allreduce and alltoall */
    static const size_t counts[] = {0, 1, 1000, (size_t)1 << 22};
    for (int n = 2; n <= 64; n *= 2)
        for (int H = 2; H <= n; H *= 2) {
            blocked_hosts(n, H, map);
            orb_tuner_hosts_t hh = {.nhosts = H, .host_of = map, .inter = tcp, .nics = 1};
            for (int c = 0; c < ORB_NUM_COLLS; c++)
                for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++) {
                    orb_tuner_choice_t v;
                    orb_status_t st =
                        orb_tuner_choose_hosts((orb_coll_t)c, counts[k], 4, n, NULL, &hh, 262144, 4, &v);
                    CHECK(st == ORB_OK && orb_plan_algo_supported((orb_coll_t)c, v.algo) &&
                              (v.algo != ORB_ALGO_HIER || c == ORB_COLL_ALLREDUCE || c == ORB_COLL_ALLTOALL) && v.predicted_us >= 0 &&
                              v.nchannels >= 1 && v.nchannels <= 4,
                          "%s on %d hosts of %d: %s %s", orb_coll_name((orb_coll_t)c), H, n / H,
                          orb_status_name(st), orb_algo_name(v.algo));
                }
        }
}

/* More ranks than CPUs on one host (orb_link_cost_t.ranks_per_cpu above 1): a broadcast or reduce
 * of up to one piece's bytes (ORB_TUNER_ONE_PIECE), or a scatter whose whole input (n blocks) is
 * that, on 3 ranks or more takes the chain on one channel, and says why; nothing else moves. Each case
 * against the same call with the CPUs not crowded. */
static void crowded(void)
{
    int map[8];
    blocked_hosts(8, 2, map);
    const orb_tuner_hosts_t two = {.nhosts = 2, .host_of = map, .inter = {20.0, 1.25, 0, 0}, .nics = 1};
    static const struct {
        orb_coll_t coll;
        size_t count, esz;
        int n;
        double per_cpu;
        int hosts; /* 2: the ranks on two hosts */
        int chain; /* the rule takes the chain */
    } cases[] = {
        {ORB_COLL_BROADCAST, 16, 4, 8, 4.0, 1, 1},    {ORB_COLL_BROADCAST, 2, 4, 6, 3.0, 1, 1},
        {ORB_COLL_BROADCAST, 1024, 1, 8, 1.5, 1, 1},  {ORB_COLL_BROADCAST, 256, 4, 3, 1.5, 1, 1},
        {ORB_COLL_BROADCAST, 1025, 1, 8, 4.0, 1, 0},  /* past one piece */
        {ORB_COLL_BROADCAST, 16, 4, 8, 1.0, 1, 0},    /* a CPU each */
        {ORB_COLL_BROADCAST, 16, 4, 8, 0.0, 1, 0},    /* unknown */
        {ORB_COLL_BROADCAST, 16, 4, 2, 4.0, 1, 0},    /* two ranks: one piece whatever the plan */
        {ORB_COLL_BROADCAST, 16, 4, 8, 4.0, 2, 0},    /* across hosts */
        /* scatter: the root's whole input, n blocks, in one piece */
        {ORB_COLL_SCATTER, 16, 4, 8, 4.0, 1, 1},      {ORB_COLL_SCATTER, 32, 4, 8, 4.0, 1, 1}, /* 1024 B */
        {ORB_COLL_SCATTER, 341, 1, 3, 1.5, 1, 1},     /* 1023 B */
        {ORB_COLL_SCATTER, 33, 4, 8, 4.0, 1, 0},      /* 1056 B: past one piece */
        {ORB_COLL_SCATTER, 342, 1, 3, 1.5, 1, 0},     /* 1026 B */
        {ORB_COLL_SCATTER, 16, 4, 8, 1.0, 1, 0},      {ORB_COLL_SCATTER, 16, 4, 2, 4.0, 1, 0},
        {ORB_COLL_SCATTER, 16, 4, 8, 4.0, 2, 0},
        /* reduce: as the broadcast, the other way */
        {ORB_COLL_REDUCE, 16, 4, 8, 4.0, 1, 1},       {ORB_COLL_REDUCE, 256, 4, 6, 3.0, 1, 1}, /* 1024 B */
        {ORB_COLL_REDUCE, 1, 8, 3, 1.5, 1, 1},
        {ORB_COLL_REDUCE, 257, 4, 8, 4.0, 1, 0},      /* 1028 B: past one piece */
        {ORB_COLL_REDUCE, 16, 4, 8, 1.0, 1, 0},       {ORB_COLL_REDUCE, 16, 4, 2, 4.0, 1, 0},
        {ORB_COLL_REDUCE, 16, 4, 8, 4.0, 2, 0},
        {ORB_COLL_GATHER, 16, 4, 8, 4.0, 1, 0},       {ORB_COLL_ALLREDUCE, 16, 4, 8, 4.0, 1, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        orb_link_cost_t intra = {1.5, 8.0, 0, cases[i].per_cpu}, calm = intra;
        calm.ranks_per_cpu = 0;
        const orb_tuner_hosts_t *h = cases[i].hosts == 2 ? &two : NULL;
        orb_tuner_choice_t t, u;
        memset(&t, 0, sizeof t);
        memset(&u, 0, sizeof u);
        orb_status_t st = orb_tuner_choose_hosts(cases[i].coll, cases[i].count, cases[i].esz, cases[i].n, &intra, h,
                                                 262144, 2, &t);
        orb_status_t su = orb_tuner_choose_hosts(cases[i].coll, cases[i].count, cases[i].esz, cases[i].n, &calm, h,
                                                 262144, 2, &u);
        CHECK(st == ORB_OK && su == ORB_OK, "case %zu: %s / %s", i, orb_status_name(st), orb_status_name(su));
        if (cases[i].chain) {
            CHECK(t.algo == ORB_ALGO_RING && strstr(t.reason, "ranks a CPU: the chain"),
                  "case %zu: %s of %zu B on %d ranks, %g a CPU: %s (%s)", i, orb_coll_name(cases[i].coll),
                  cases[i].count * cases[i].esz, cases[i].n, cases[i].per_cpu, orb_algo_name(t.algo), t.reason);
            CHECK(t.nchannels == 1, "case %zu: the chain on %d channels", i, t.nchannels);
            if (cases[i].coll == ORB_COLL_SCATTER) /* the chunk holds all n blocks: the plan packs them */
                CHECK(t.chunk_elems >= (size_t)cases[i].n * cases[i].count,
                      "case %zu: scatter of %zu x %zu B on %d ranks: chunk %zu elements, under the %zu of one piece", i,
                      cases[i].count, cases[i].esz, cases[i].n, t.chunk_elems, (size_t)cases[i].n * cases[i].count);
        } else {
            CHECK(t.algo == u.algo && t.chunk_elems == u.chunk_elems && t.nchannels == u.nchannels &&
                      !strstr(t.reason, "ranks a CPU"),
                  "case %zu: %s of %zu B on %d ranks, %g a CPU: %s (%s), not crowded %s", i,
                  orb_coll_name(cases[i].coll), cases[i].count * cases[i].esz, cases[i].n, cases[i].per_cpu,
                  orb_algo_name(t.algo), t.reason, orb_algo_name(u.algo));
        }
    }
    /* The scatter's one piece is the rule's, not the model's: on a link of 0.05 us the model
     * prices 128 B a rank on 8 ranks cheaper one block at a time (13 hops of 128 B against 7 of
     * 1 KiB: 13*(0.05 + 0.016) = 0.858 < 7*(0.05 + 0.128) = 1.246 us), and crowded CPUs pay for
     * pieces, not bytes: the chunk still holds all 8 blocks. */
    {
        const orb_link_cost_t fast = {0.05, 8.0, 0, 4.0};
        orb_tuner_choice_t f;
        CHECK(orb_tuner_choose(ORB_COLL_SCATTER, 32, 4, 8, &fast, 262144, 2, &f) == ORB_OK && f.algo == ORB_ALGO_RING &&
                  f.nchannels == 1 && f.chunk_elems >= 8 * 32,
              "scatter of 32 x 4 B on 8 ranks, 4 a CPU, alpha 0.05 us: %s, chunk %zu, %d channel(s) (%s); want the "
              "chain with all 256 elements in one chunk",
              orb_algo_name(f.algo), f.chunk_elems, f.nchannels, f.reason);
    }
    /* where the model takes the tree when the CPUs are not crowded, so that the rule is seen to move it */
    orb_link_cost_t intra = {1.5, 8.0, 0, 4.0}, calm = {1.5, 8.0, 0, 0};
    orb_tuner_choice_t t, u;
    CHECK(orb_tuner_choose_hosts(ORB_COLL_BROADCAST, 16, 4, 8, &calm, NULL, 262144, 2, &u) == ORB_OK &&
              u.algo == ORB_ALGO_TREE,
          "8 ranks, 64 B, a CPU each: %s, not the tree", orb_algo_name(u.algo));
    CHECK(orb_tuner_choose_hosts(ORB_COLL_REDUCE, 16, 4, 8, &calm, NULL, 262144, 2, &u) == ORB_OK &&
              u.algo == ORB_ALGO_TREE,
          "reduce, 8 ranks, 64 B, a CPU each: %s, not the tree", orb_algo_name(u.algo));
    setenv("ORBIT_ALGO", "tree", 1); /* the override still decides */
    CHECK(orb_tuner_choose_hosts(ORB_COLL_BROADCAST, 16, 4, 8, &intra, NULL, 262144, 2, &t) == ORB_OK &&
              t.algo == ORB_ALGO_TREE && strstr(t.reason, "ORBIT_ALGO"),
          "ORBIT_ALGO=tree on crowded CPUs: %s (%s)", orb_algo_name(t.algo), t.reason);
    unsetenv("ORBIT_ALGO");
}

static void overrides(void)
{
    setenv("ORBIT_ALGO", "ring", 1);
    orb_tuner_choice_t t = choose(ORB_COLL_ALLREDUCE, 1, 4, 64, 262144, 2);
    CHECK(t.algo == ORB_ALGO_RING && strstr(t.reason, "ORBIT_ALGO"), "ORBIT_ALGO=ring: %s", t.reason);
    setenv("ORBIT_ALGO", "TREE", 1);
    t = choose(ORB_COLL_ALLREDUCE, (size_t)1 << 26, 4, 4, 262144, 2);
    CHECK(t.algo == ORB_ALGO_TREE, "ORBIT_ALGO=TREE: %s", orb_algo_name(t.algo));
    t = choose(ORB_COLL_ALLGATHER, 100, 4, 4, 262144, 2); /* no tree allgather: the model decides (Bruck's 2
                                                           * rounds against the ring's 3 steps) */
    CHECK(t.algo == ORB_ALGO_BRUCK && strstr(t.reason, "no plan"), "tree allgather: %s", t.reason);
    setenv("ORBIT_ALGO", "direct", 1); /* the exchange all-reduce is for 2 ranks: on 4 the model decides */
    t = choose(ORB_COLL_ALLREDUCE, 100, 4, 4, 262144, 2);
    CHECK(t.algo != ORB_ALGO_DIRECT && strstr(t.reason, "no plan"), "ORBIT_ALGO=direct, allreduce on 4: %s %s",
          orb_algo_name(t.algo), t.reason);
    t = choose(ORB_COLL_ALLREDUCE, 100, 4, 2, 262144, 2);
    CHECK(t.algo == ORB_ALGO_DIRECT, "ORBIT_ALGO=direct, allreduce on 2: %s", orb_algo_name(t.algo));
    setenv("ORBIT_ALGO", "bogus", 1);
    t = choose(ORB_COLL_ALLREDUCE, 100, 4, 4, 262144, 2);
    CHECK(orb_plan_algo_supported(ORB_COLL_ALLREDUCE, t.algo), "ORBIT_ALGO=bogus");
    unsetenv("ORBIT_ALGO");

    setenv("ORBIT_CHUNK_BYTES", "1024", 1);
    t = choose(ORB_COLL_ALLREDUCE, 1 << 20, 4, 4, 262144, 2);
    CHECK(t.chunk_elems == 256 && strstr(t.reason, "ORBIT_CHUNK_BYTES"), "ORBIT_CHUNK_BYTES=1024: %zu",
          t.chunk_elems);
    setenv("ORBIT_CHUNK_BYTES", "100000000", 1);
    t = choose(ORB_COLL_ALLREDUCE, 1 << 20, 4, 4, 262144, 2);
    CHECK(t.chunk_elems == 65536, "ORBIT_CHUNK_BYTES beyond the slot: %zu", t.chunk_elems);
    setenv("ORBIT_CHUNK_BYTES", "3", 1);
    t = choose(ORB_COLL_ALLREDUCE, 1 << 20, 8, 4, 262144, 2);
    CHECK(t.chunk_elems == 1, "ORBIT_CHUNK_BYTES below one element: %zu", t.chunk_elems);
    unsetenv("ORBIT_CHUNK_BYTES");

    orb_tuner_choice_t u;
    CHECK(orb_tuner_choose(ORB_COLL_ALLREDUCE, 10, 8, 4, NULL, 4, 2, &u) == ORB_ERR_INVALID_ARG,
          "a slot smaller than one element");
    CHECK(orb_tuner_choose(ORB_COLL_ALLREDUCE, 10, 4, 0, NULL, 4096, 2, &u) == ORB_ERR_INVALID_ARG, "0 ranks");
}

int main(void)
{
    unsetenv("ORBIT_ALGO");
    unsetenv("ORBIT_CHUNK_BYTES");
    setenv("ORBIT_DEBUG", "NONE", 1); /* the bogus override warns; keep the log clean */
    bounds();
    model();
    formulas();
    hosts();
    crowded();
    overrides();
    if (failures)
        fprintf(stderr, "%d failure(s)\n", failures);
    else
        printf("tuner: all checks passed\n");
    return failures ? 1 : 0;
}
