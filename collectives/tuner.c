/* Alpha-beta tuner. Symbols: S bytes of the call (count * elem_size: the per-rank block for
 * gather, allgather, reduce_scatter, scatter and alltoall, the largest pair's for
 * alltoallv), n ranks, C channels, c chunk bytes, s = S / C bytes per lane, K = ceil(s / c)
 * chunks per lane, R = ceil(s / (n c)) ring rounds per lane, d = floor(log2 n) tree depth,
 * alpha (us) and beta (bytes/us). Channels share the link, so one chunk on a lane takes
 * C c / beta; each channel beyond the first costs one alpha more (its own start and
 * completion). On several hosts (H hosts of L ranks) the flat algorithms pay the slower of
 * the intra- and inter-host classes on every hop; the hierarchical all-reduce pays each
 * class for its own phases. */
#include "tuner.h"

#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "algos.h"
#include "core/log.h"
#include "core/param.h"

orb_link_cost_t orb_tuner_shm_link(void)
{
    return orb_shm_transport.link;
}

static double ceil_div(double a, double b) { return a <= 0 ? 0 : ceil(a / b); }

/* An exchange (the two-rank direct all-reduce, each round of recursive doubling) sends a
 * chunk and then reduces the partner's into its output: two passes over the data one after
 * the other, where a ring step fuses them into one. While what a rank moves over the call
 * stays in its L2 the second pass costs next to nothing: r rounds of S bytes each touch the
 * input, the output and two slots, 4 r S, and half the L2 is what the call may use of it,
 * so up to r S = L2/8. Beyond, each round pays a pass at beta more. Measured on Zen 1 (512
 * KiB L2, docs/perf.md 2026-11-27): the exchange beat the ring up to 64 KiB on 2 ranks, even
 * at 128 KiB, 1.5x slower at 256 and 512 KiB; doubling on 4 ranks even at 32 KiB, 1.3x slower
 * at 64 KiB. l2_bytes 0 (unknown): no such term. */
static double exchange_spill(const orb_link_cost_t *link, double rounds, double S, double b)
{
    return link->l2_bytes > 0 && rounds * S > link->l2_bytes / 8 ? rounds * S / b : 0;
}

static int tree_depth(int n)
{
    int d = 0;
    while ((2 << d) <= n)
        d++;
    return d;
}

/* What the model needs to know about where the ranks are. */
typedef struct {
    orb_link_cost_t flat;  /* the link the flat algorithms are costed on */
    orb_link_cost_t intra; /* inside a host */
    orb_link_cost_t inter; /* between hosts */
    int nhosts;
    int per_host; /* ranks on every host; 0: uneven or one host, so no HIER */
    int nics;
} model_t;

/* ORB_OK, or the host map's error other than "no hierarchy" (a bad host index, memory). */
static orb_status_t model_init(model_t *m, int nranks, const orb_link_cost_t *intra, const orb_tuner_hosts_t *hosts)
{
    memset(m, 0, sizeof *m);
    m->intra = intra ? *intra : orb_tuner_shm_link();
    m->flat = m->intra;
    m->nhosts = 1;
    if (!hosts || hosts->nhosts <= 1)
        return ORB_OK;
    m->inter = hosts->inter;
    m->nhosts = hosts->nhosts;
    m->nics = hosts->nics < 1 ? 1 : hosts->nics;
    m->flat.alpha_us = fmax(m->intra.alpha_us, m->inter.alpha_us);
    m->flat.beta_gbps = fmin(m->intra.beta_gbps, m->inter.beta_gbps);
    /* The cache terms are for shared-memory slots (exchange_spill, the chunk cap): across
     * hosts the wire dominates (2 ranks over TCP on loopback: the exchange 5-18% ahead of the
     * ring at 256 KiB-1 MiB, where the L2 term would have taken the ring) */
    m->flat.l2_bytes = 0;
    orb_status_t st = orb_plan_ranks_per_host(nranks, hosts->nhosts, hosts->host_of, &m->per_host);
    if (st == ORB_ERR_UNSUPPORTED) {
        m->per_host = 0;
        st = ORB_OK;
    }
    return st;
}

/* All-to-all: L-1 exchanges inside the host of H blocks each (each cut into chunks), then
 * H-1 across of L blocks in one message, the L ranks of a host sharing its inter-host links. */
static double hier_alltoall_predict(const model_t *m, size_t count, size_t elem_size, size_t chunk_elems,
                                    int nchannels)
{
    const double ai = m->intra.alpha_us, bi = m->intra.beta_gbps * 1e3;
    const double ax = m->inter.alpha_us, bx = m->inter.beta_gbps * 1e3;
    const double H = m->nhosts, L = m->per_host, C = nchannels, links = fmin(m->nics, L);
    const double s = (double)count * (double)elem_size / C, ck = (double)chunk_elems * (double)elem_size;
    if (s == 0)
        return 0;
    const double c1 = fmin(ck, s), c2 = fmin(ck, L * s);
    return (L - 1) * H * ceil_div(s, c1) * (ai + C * c1 / bi) +
           (H - 1) * ceil_div(L * s, c2) * (ax + C * c2 * L / (links * bx)) + (C - 1) * fmax(ai, ax);
}

/* All-reduce: three phases in sequence per round of n chunks: 2H(L-1) intra steps and
 * 2(H-1) inter steps; each rank moves 2(L-1)/L S inside its host and 2(H-1)/H S/L across,
 * the L ranks of a host sharing its min(nics, L) inter-host links. */
static double hier_predict(const model_t *m, orb_coll_t coll, size_t count, size_t elem_size, int nranks,
                           size_t chunk_elems, int nchannels)
{
    if (coll == ORB_COLL_ALLTOALL)
        return hier_alltoall_predict(m, count, elem_size, chunk_elems, nchannels);
    const double ai = m->intra.alpha_us, bi = m->intra.beta_gbps * 1e3;
    const double ax = m->inter.alpha_us, bx = m->inter.beta_gbps * 1e3;
    const double H = m->nhosts, L = m->per_host, C = nchannels, n = nranks;
    const double S = (double)count * (double)elem_size;
    if (S == 0)
        return 0;
    const double s = S / C, c = fmin((double)chunk_elems * (double)elem_size, s);
    const double R = ceil_div(s, n * c), links = fmin(m->nics, L);
    return R * (2 * H * (L - 1) * ai + 2 * (H - 1) * ax) + 2 * (L - 1) / L * S / bi +
           2 * (H - 1) / H * S / (links * bx) + (C - 1) * fmax(ai, ax);
}

static double flat_predict(orb_coll_t coll, orb_algo_t algo, size_t count, size_t elem_size, int nranks,
                           const orb_link_cost_t *link, size_t chunk_elems, int nchannels)
{
    coll = orb_coll_planned_as(coll);
    if (coll == ORB_COLL_BARRIER) {
        count = 1;
        elem_size = 1;
    }
    const double a = link->alpha_us, b = link->beta_gbps * 1e3; /* GB/s -> bytes/us */
    const double n = nranks, C = nchannels, S = (double)count * (double)elem_size;
    if (S == 0)
        return 0;
    const double s = S / C;
    const double c = fmin((double)chunk_elems * (double)elem_size, s);
    const double K = ceil_div(s, c), d = tree_depth(nranks);
    const double hop = a + C * c / b; /* one chunk over one link */
    const double chan = (C - 1) * a;
    if (nranks == 1)
        return (coll == ORB_COLL_SEND || coll == ORB_COLL_RECV) ? 0 : K * hop + chan;

    switch (algo) {
    case ORB_ALGO_RING:
        switch (coll) {
        case ORB_COLL_ALLREDUCE:
        case ORB_COLL_BARRIER:
            return 2 * (n - 1) * ceil_div(s, n * c) * a + 2 * (n - 1) / n * S / b + chan;
        case ORB_COLL_ALLGATHER:
        case ORB_COLL_REDUCE_SCATTER:
            return (n - 1) * K * a + (n - 1) * S / b + chan;
        case ORB_COLL_BROADCAST:
        case ORB_COLL_REDUCE:
            return (n - 2 + K) * hop + chan;
        case ORB_COLL_SCATTER:
            if (orb_ring_scatter_packs(nranks, count, chunk_elems, nchannels)) /* all n blocks a hop */
                return (n - 1) * (a + n * S / b);
            /* fall through - one block a piece, as the gather's */
        case ORB_COLL_GATHER:
            return ((n - 1) * K + n - 2) * hop + chan;
        default:
            return -1;
        }
    case ORB_ALGO_TREE:
        if (coll == ORB_COLL_ALLREDUCE) /* busiest node: 4 steps a chunk in one tree, 3 on average in two */
            return (2 * d + (nchannels == 1 ? 4 : 3) * K) * hop + chan;
        return 2 * (d + K - 1) * hop + chan; /* an interior node sends every chunk twice */
    case ORB_ALGO_DIRECT:
        if (coll == ORB_COLL_GATHER || coll == ORB_COLL_SCATTER)
            return (n - 1) * K * hop + chan; /* the root takes (gives) n-1 blocks, one after the other */
        if (coll == ORB_COLL_ALLTOALL || coll == ORB_COLL_ALLTOALLV)
            return (n - 1) * K * hop + chan; /* n-1 exchanges of a block, each way at once */
        if (coll == ORB_COLL_ALLREDUCE && n > 2)
            return -1; /* the exchange exists for two ranks only (the plan falls back to the ring) */
        if (coll == ORB_COLL_ALLREDUCE)
            return K * hop + exchange_spill(link, 1, S, b) + chan;
        return K * hop + chan;
    case ORB_ALGO_BRUCK: { /* round k: one message of m_k blocks' lane shares, chunked */
        const int gather = coll == ORB_COLL_ALLGATHER;
        double t = chan;
        for (int k = 0; k < orb_bruck_rounds(nranks); k++) {
            const double len = (gather ? orb_bruck_gather_blocks(nranks, k) : orb_bruck_blocks(nranks, k)) * s,
                         ck = fmin((double)chunk_elems * (double)elem_size, len);
            t += ceil_div(len, ck) * (a + C * ck / b);
        }
        /* all-gather: the blocks are copied from the work area to the output last, as many
         * bytes again as came in (at the link's rate: between ranks on a host, a copy too) */
        return gather ? t + (n - 1) * S / b : t;
    }
    case ORB_ALGO_ORDERED: {
        /* the last shard's chain fills over n-1 hops of a chunk; then rank 1 takes the most:
         * (2n-3)/n of the data folding, (n-1)/n more being sent the results (all-reduce;
         * reduce: at the root), one message per shard of a round */
        const double R = ceil_div(s, n * c);
        if (coll == ORB_COLL_REDUCE_SCATTER)
            return (n - 1) * hop + (2 * n - 3) * K * a + (2 * n - 3) * S / b + chan;
        return (n - 1) * hop + (3 * n - 4) * R * a + (3 * n - 4) / n * S / b + chan;
    }
    case ORB_ALGO_DOUBLING: { /* every chunk through every round, one exchange after the other */
        const double r = orb_doubling_rounds(nranks);
        if (coll == ORB_COLL_REDUCE_SCATTER) { /* the all-reduce of all n blocks, then the own one copied */
            const double sn = n * s, cn = fmin((double)chunk_elems * (double)elem_size, sn);
            return r * ceil_div(sn, cn) * (a + C * cn / b) + exchange_spill(link, r, n * S, b) + S / b + chan;
        }
        return r * K * hop + exchange_spill(link, r, S, b) + chan;
    }
    default:
        return -1;
    }
}

static double model_predict(const model_t *m, orb_coll_t coll, orb_algo_t algo, size_t count, size_t elem_size,
                            int nranks, size_t chunk_elems, int nchannels)
{
    if (!orb_plan_algo_supported(coll, algo) || nranks < 1 || nchannels < 1 || chunk_elems < 1)
        return -1;
    if (algo == ORB_ALGO_HIER)
        return m->per_host > 0 ? hier_predict(m, coll, count, elem_size, nranks, chunk_elems, nchannels) : -1;
    return flat_predict(coll, algo, count, elem_size, nranks, &m->flat, chunk_elems, nchannels);
}

double orb_tuner_predict_hosts(orb_coll_t coll, orb_algo_t algo, size_t count, size_t elem_size, int nranks,
                               const orb_link_cost_t *intra, const orb_tuner_hosts_t *hosts, size_t chunk_elems,
                               int nchannels)
{
    model_t m;
    if (nranks < 1 || model_init(&m, nranks, intra, hosts) != ORB_OK)
        return -1;
    return model_predict(&m, coll, algo, count, elem_size, nranks, chunk_elems, nchannels);
}

double orb_tuner_predict(orb_coll_t coll, orb_algo_t algo, size_t count, size_t elem_size, int nranks,
                         const orb_link_cost_t *link, size_t chunk_elems, int nchannels)
{
    return orb_tuner_predict_hosts(coll, algo, count, elem_size, nranks, link, NULL, chunk_elems, nchannels);
}

const char *orb_tuner_formula(orb_coll_t coll, orb_algo_t algo)
{
    coll = orb_coll_planned_as(coll);
    if (!orb_plan_algo_supported(coll, algo))
        return "no plan";
    switch (algo) {
    case ORB_ALGO_RING:
        switch (coll) {
        case ORB_COLL_ALLREDUCE:
        case ORB_COLL_BARRIER:
            return "2(n-1)*R*alpha + 2(n-1)/n*S/beta + (C-1)*alpha, R = ceil(S/(C*n*c))";
        case ORB_COLL_ALLGATHER:
        case ORB_COLL_REDUCE_SCATTER:
            return "(n-1)*K*alpha + (n-1)*S/beta + (C-1)*alpha, K = ceil(S/(C*c))";
        case ORB_COLL_GATHER:
            return "((n-1)*K + n-2)*(alpha + C*c/beta) + (C-1)*alpha, K = ceil(S/(C*c))";
        case ORB_COLL_SCATTER:
            return "((n-1)*K + n-2)*(alpha + C*c/beta) + (C-1)*alpha, K = ceil(S/(C*c)); n >= 3 with n*S in one "
                   "chunk on one channel, packed: (n-1)*(alpha + n*S/beta)";
        default:
            return "(n-2+K)*(alpha + C*c/beta) + (C-1)*alpha, K = ceil(S/(C*c))";
        }
    case ORB_ALGO_TREE:
        if (coll == ORB_COLL_ALLREDUCE)
            return "(2d + w*K)*(alpha + C*c/beta) + (C-1)*alpha, d = floor(log2 n), w = 4 (C = 1) or 3, "
                   "K = ceil(S/(C*c))";
        return "2(d+K-1)*(alpha + C*c/beta) + (C-1)*alpha, d = floor(log2 n), K = ceil(S/(C*c))";
    case ORB_ALGO_DIRECT:
        if (coll == ORB_COLL_GATHER || coll == ORB_COLL_SCATTER || coll == ORB_COLL_ALLTOALL ||
            coll == ORB_COLL_ALLTOALLV)
            return "(n-1)*K*(alpha + C*c/beta) + (C-1)*alpha, K = ceil(S/(C*c))";
        if (coll == ORB_COLL_ALLREDUCE)
            return "K*(alpha + C*c/beta) + (C-1)*alpha + (S/beta if S > L2/8), K = ceil(S/(C*c))";
        return "K*(alpha + C*c/beta) + (C-1)*alpha, K = ceil(S/(C*c))";
    case ORB_ALGO_BRUCK:
        if (coll == ORB_COLL_ALLGATHER)
            return "sum over rounds k < ceil(log2 n) of ceil(m_k*s/c_k)*(alpha + C*c_k/beta) + (n-1)*S/beta + "
                   "(C-1)*alpha, m_k = min(2^k, n - 2^k), c_k = min(c, m_k*s)";
        return "sum over rounds k < ceil(log2 n) of ceil(m_k*s/c_k)*(alpha + C*c_k/beta) + (C-1)*alpha, "
               "m_k = #{1 <= i < n: bit k of i}, c_k = min(c, m_k*s)";
    case ORB_ALGO_ORDERED:
        if (coll == ORB_COLL_REDUCE_SCATTER)
            return "(n-1)*(alpha + C*c/beta) + (2n-3)*K*alpha + (2n-3)*S/beta + (C-1)*alpha, K = ceil(S/(C*c))";
        return "(n-1)*(alpha + C*c/beta) + (3n-4)*R*alpha + (3n-4)/n*S/beta + (C-1)*alpha, R = ceil(S/(C*n*c))";
    case ORB_ALGO_HIER:
        if (coll == ORB_COLL_ALLTOALL)
            return "(L-1)*H*ceil(s/c1)*(alpha_i + C*c1/beta_i) + (H-1)*ceil(L*s/c2)*(alpha_x + C*c2*L/(m*beta_x)) + "
                   "(C-1)*max(alpha_i, alpha_x), H hosts of L ranks, m = min(nics, L), c1 = min(c, s), "
                   "c2 = min(c, L*s)";
        return "R*(2H(L-1)*alpha_i + 2(H-1)*alpha_x) + 2(L-1)/L*S/beta_i + 2(H-1)/H*S/(m*beta_x) + "
               "(C-1)*max(alpha_i, alpha_x), H hosts of L ranks, m = min(nics, L), R = ceil(S/(C*n*c))";
    case ORB_ALGO_DOUBLING:
        if (coll == ORB_COLL_REDUCE_SCATTER)
            return "r*K*(alpha + C*c/beta) + (C-1)*alpha + (r*n*S/beta if r*n*S > L2/8) + S/beta, r = log2 p + (2 if "
                   "n > p), p the largest power of 2 <= n, K = ceil(n*S/(C*c)), c = min(chunk, n*S/C)";
        return "r*K*(alpha + C*c/beta) + (C-1)*alpha + (r*S/beta if r*S > L2/8), r = log2 p + (2 if n > p), "
               "p the largest power of 2 <= n, K = ceil(S/(C*c))";
    default:
        return "no plan";
    }
}

int orb_tuner_forced_algo(const char *s)
{
    if (!s || !*s)
        return -1;
    for (int al = 0; al < ORB_NUM_ALGOS; al++)
        if (strcasecmp(s, orb_algo_name((orb_algo_t)al)) == 0)
            return al;
    return -2;
}

orb_status_t orb_tuner_choose(orb_coll_t coll, size_t count, size_t elem_size, int nranks,
                              const orb_link_cost_t *link, size_t slot_bytes, int max_channels,
                              orb_tuner_choice_t *out)
{
    return orb_tuner_choose_hosts(coll, count, elem_size, nranks, link, NULL, slot_bytes, max_channels, out);
}

/* More ranks than CPUs on one host: a small call takes as long as all its ranks' pieces
 * together, and the waits between them are turns on a CPU, not hops, which the model (the
 * longest path) does not price. The chain moves the fewest pieces a broadcast can (n - 1, each
 * handshake riding on a hop's data, and the last rank's none: it vouches), where the tree adds a
 * handshake piece of its own at most ranks: on the 2-core Intel VM, 6 to 8 ranks, the tree took 1.24-1.39x the
 * chain's time at 8 B-1 KiB and the chain 1.42x the tree's at 4 KiB (docs/perf.md, 2026-12-07;
 * the model already takes the chain for small calls up to 5 ranks). A scatter whose whole
 * input is one piece takes the chain too, packed (orb_ring_scatter_packs): the direct plan's
 * leaves each send a handshake piece of their own, n - 1 more pieces; 3-8 ranks on 2 CPUs:
 * 0.77-0.90 of its time at 64 B-1 KiB, 2.3x at 2 KiB (one piece past the small slots). A
 * reduce too, since its chain's last rank (the root) vouches for its neighbour and sends the
 * first no handshake (collectives/exec_cpu.c, vouch_setup; so do a broadcast's and a
 * scatter's): n - 1 pieces, where the tree took 1.06-1.66x the chain's time at 4-8 ranks on
 * the Zen 4 VM at 8 B-512 B, level at 4 KiB (docs/perf.md, 2026-12-07 late). Gather stays with
 * the model: its chain moves n(n-1)/2 pieces (1.3-2.4x the direct plan's time). The algorithm
 * the load takes for a call of `bytes` a rank (a scatter's root moves n such blocks), or -1
 * where the model decides. */
static int crowded_algo(orb_coll_t coll, size_t bytes, int nranks, const model_t *m)
{
    const size_t total = (coll == ORB_COLL_SCATTER ? (size_t)nranks : 1) * bytes;
    return (coll == ORB_COLL_BROADCAST || coll == ORB_COLL_SCATTER || coll == ORB_COLL_REDUCE) && nranks >= 3 &&
                   m->nhosts <= 1 && m->intra.ranks_per_cpu > 1 && total <= ORB_TUNER_ONE_PIECE
               ? ORB_ALGO_RING
               : -1;
}

/* det: the communicator is in deterministic mode. Reductions on more than two ranks then
 * have one algorithm, ORDERED; otherwise ORDERED is only taken when ORBIT_ALGO names it (it
 * is never faster). */
static orb_status_t choose(orb_coll_t coll, size_t count, size_t elem_size, int nranks,
                           const orb_link_cost_t *intra, const orb_tuner_hosts_t *hosts, size_t slot_bytes,
                           int nslots, int max_channels, int det, orb_tuner_choice_t *out)
{
    static atomic_int warned_algo, warned_chunk, told_det;
    if ((unsigned)coll >= ORB_NUM_COLLS || elem_size == 0 || nranks < 1 || max_channels < 1 ||
        slot_bytes < elem_size || !out)
        return ORB_ERR_INVALID_ARG;
    model_t m;
    orb_status_t st = model_init(&m, nranks, intra, hosts);
    if (st != ORB_OK)
        return st;
    if (max_channels > ORB_MAX_CHANNELS)
        max_channels = ORB_MAX_CHANNELS;
    const size_t slot_elems = slot_bytes / elem_size;

    /* Chunk candidates: the slot, then halvings down to 256 bytes (smaller chunks shorten a
     * chain's fill but pay alpha per piece). ORBIT_CHUNK_BYTES pins one. */
    size_t chunks[64];
    int nchunks = 0;
    const double env_chunk = orb_param_num(ORB_PARAM_CHUNK_BYTES);
    int chunk_forced = 0;
    if (env_chunk > 0) {
        double e = floor(env_chunk / (double)elem_size);
        size_t ce = e < 1 ? 1 : e > (double)slot_elems ? slot_elems : (size_t)e;
        if (e > (double)slot_elems && atomic_exchange(&warned_chunk, 1) == 0)
            ORB_WARN("ORBIT_CHUNK_BYTES=%.0f is larger than a slot (%zu bytes); the chunk is capped at the slot",
                     env_chunk, slot_bytes);
        chunks[nchunks++] = ce;
        chunk_forced = 1;
    } else {
        for (size_t ce = slot_elems; ce >= 1 && nchunks < 64; ce /= 2) {
            chunks[nchunks++] = ce;
            if (ce * elem_size <= 256)
                break;
        }
    }

    const char *algo_env = orb_param_str(ORB_PARAM_S_ALGO);
    int forced = orb_tuner_forced_algo(algo_env);
    const char *no_plan = "ORBIT_ALGO has no plan for this collective; ";
    if (forced == -2 && atomic_exchange(&warned_algo, 1) == 0) /* once per process, not per call */
        ORB_WARN("ORBIT_ALGO=\"%s\" is not an algorithm (ring, tree, direct, hier, bruck, ordered, doubling); the tuner "
                 "decides", algo_env);
    else if (forced >= 0 && !orb_plan_algo_supported(coll, (orb_algo_t)forced))
        forced = -3; /* told per call in the reason: it depends on the collective */
    else if (forced == ORB_ALGO_HIER && m.per_host == 0) {
        forced = -3;
        no_plan = "ORBIT_ALGO=hier needs ranks on several hosts, as many on each; ";
    } else if (forced >= 0 && model_predict(&m, coll, (orb_algo_t)forced, 1, elem_size, nranks, 1, 1) < 0) {
        forced = -3; /* a plan, but not at this rank count (the direct all-reduce is for 2 ranks) */
        no_plan = "ORBIT_ALGO has no plan for this collective at this rank count; ";
    }
    /* A FIFO holds up to nslots chunks ahead of its receiver. Where a rank takes what arrived
     * and passes it on or folds it into its own (ring, chain, tree steps), that much should
     * still be in the cache when it is read: chunks of at most L2/nslots. Measured on Zen 1
     * (512 KiB L2, 8 slots: 64 KiB chunks against full 256 KiB slots, 2 ranks, docs/perf.md
     * 2026-11-27): all-reduce 1-64 MiB 0.55-0.75x the time, reduce 0.59-0.89x, reduce-scatter
     * 0.46-0.89x, all-gather 0.46-0.74x; the direct plans (send/recv 4 and 16 MiB 1.4x
     * slower, more pieces for nothing to pass on) keep the slot. One host only (model_init
     * drops the L2 across hosts): what crosses hosts waits in socket or NIC buffers, not in a
     * slot the receiver reads. A FIFO deeper than CAP_SLOTS keeps their cap: its other slots
     * are room for small calls to run ahead (rooted calls with more ranks than cores), and
     * halving the chunk for them cost large calls (Zen 3, docs/perf.md 2026-11-29: 16 slots
     * with L2/16 chunks 1.1-1.6x the time of 8 slots at 1-16 MiB, with L2/8 chunks the same). */
    enum { CAP_SLOTS = 8 };
    size_t cap_elems = slot_elems;
    if (!chunk_forced && nslots > 0 && m.flat.l2_bytes > 0) {
        double cap = fmax(m.flat.l2_bytes / (nslots < CAP_SLOTS ? nslots : CAP_SLOTS), 256.0) / (double)elem_size;
        cap_elems = cap < 1 ? 1 : cap < (double)slot_elems ? (size_t)cap : slot_elems;
    }
    det = det && orb_coll_reduces(coll);
    /* With one or two ranks every plan applies the op once per element, op(x0, x1), and the
     * kernels' ops give the same bits whichever operand comes first: any plan is ordered. */
    const int det_any = det && nranks <= 2;
    if (det_any)
        det = 0;
    if (det && forced >= 0 && forced != ORB_ALGO_ORDERED && atomic_exchange(&told_det, 1) == 0)
        ORB_INFO("ORBIT_ALGO=%s is ignored for reductions in deterministic mode: only the ordered plan adds in "
                 "rank order", algo_env);

    /* no more channels than elements: an empty channel only adds its alpha */
    const size_t elems = coll == ORB_COLL_BARRIER || count == 0 ? 1 : count;
    int ch_max = elems < (size_t)max_channels ? (int)elems : max_channels;
    /* The algorithms the search below considers: the one ORBIT_ALGO names, else the one the
     * load takes (crowded_algo), else every one but ORDERED. */
    const int crowded = forced < 0 && !det ? crowded_algo(coll, count * elem_size, nranks, &m) : -1;
    if (crowded >= 0 ||
        ((orb_coll_p2p(coll) || (orb_coll_rooted(coll) && nranks == 2)) && count * elem_size <= ORB_TUNER_ONE_PIECE)) {
        ch_max = 1;
        nchunks = 1; /* (the largest: a slot, or ORBIT_CHUNK_BYTES) */
    }
    const int only = forced >= 0 ? forced : crowded;
    orb_tuner_choice_t best = {.algo = ORB_NUM_ALGOS, .predicted_us = INFINITY};
    double runner_up = INFINITY;
    orb_algo_t runner_algo = ORB_NUM_ALGOS;
    for (int al = 0; al < ORB_NUM_ALGOS; al++) {
        if (!orb_plan_algo_supported(coll, (orb_algo_t)al) ||
            (det ? al != ORB_ALGO_ORDERED : (only >= 0 ? al != only : al == ORB_ALGO_ORDERED)))
            continue;
        double algo_best = INFINITY;
        size_t algo_chunk = 0;
        int algo_ch = 1;
        const int passes_on = al != ORB_ALGO_DIRECT && al != ORB_ALGO_BRUCK;
        for (int ch = 1; ch <= ch_max; ch++)
            for (int k = 0; k < nchunks; k++) {
                if (passes_on && chunks[k] > cap_elems && k + 1 < nchunks)
                    continue; /* (the last, smallest candidate stays whatever the cap) */
                double t = model_predict(&m, coll, (orb_algo_t)al, count, elem_size, nranks, chunks[k], ch);
                if (t >= 0 && t < algo_best) {
                    algo_best = t;
                    algo_chunk = chunks[k];
                    algo_ch = ch;
                }
            }
        if (algo_best < best.predicted_us) {
            if (best.algo != ORB_NUM_ALGOS) {
                runner_up = best.predicted_us;
                runner_algo = best.algo;
            }
            best.algo = (orb_algo_t)al;
            best.chunk_elems = algo_chunk;
            best.nchannels = algo_ch;
            best.predicted_us = algo_best;
        } else if (algo_best < runner_up) {
            runner_up = algo_best;
            runner_algo = (orb_algo_t)al;
        }
    }
    if (best.algo == ORB_NUM_ALGOS)
        return ORB_ERR_UNSUPPORTED;

    int o;
    if (det_any)
        o = snprintf(best.reason, sizeof best.reason,
                     "deterministic on %d rank%s: any plan adds in rank order; %s %.1f us", nranks,
                     nranks > 1 ? "s" : "", orb_algo_name(best.algo), best.predicted_us);
    else if (det)
        o = snprintf(best.reason, sizeof best.reason, "deterministic%s%s%s", forced >= 0 ? " (ORBIT_ALGO=" : "",
                     forced >= 0 ? orb_algo_name((orb_algo_t)forced) : "", forced >= 0 ? " ignored)" : "");
    else if (crowded >= 0)
        o = snprintf(best.reason, sizeof best.reason,
                     "%s%.3g ranks a CPU: the chain, fewest pieces up to %d bytes; %.1f us as if alone",
                     forced == -3 ? no_plan : "", m.intra.ranks_per_cpu, ORB_TUNER_ONE_PIECE, best.predicted_us);
    else if (forced >= 0)
        o = snprintf(best.reason, sizeof best.reason, "ORBIT_ALGO=%s", orb_algo_name(best.algo));
    else if (runner_algo != ORB_NUM_ALGOS)
        o = snprintf(best.reason, sizeof best.reason, "%smodel: %s %.1f us < %s %.1f us",
                     forced == -3 ? no_plan : "", orb_algo_name(best.algo),
                     best.predicted_us, orb_algo_name(runner_algo), runner_up);
    else
        o = snprintf(best.reason, sizeof best.reason, "%sonly %s plans %s",
                     forced == -3 ? no_plan : "", orb_algo_name(best.algo),
                     orb_coll_name(coll));
    if (chunk_forced && o >= 0 && (size_t)o < sizeof best.reason)
        snprintf(best.reason + o, sizeof best.reason - (size_t)o, "; chunk from ORBIT_CHUNK_BYTES");
    ORB_TRACE("tuner: %s of %zu x %zu B on %d ranks, %d host(s) -> %s, chunk %zu elements, %d channel(s), "
              "%.1f us (%s; %s)",
              orb_coll_name(coll), count, elem_size, nranks, m.nhosts, orb_algo_name(best.algo), best.chunk_elems,
              best.nchannels, best.predicted_us, best.reason, orb_tuner_formula(coll, best.algo));
    *out = best;
    return ORB_OK;
}

orb_status_t orb_tuner_choose_hosts(orb_coll_t coll, size_t count, size_t elem_size, int nranks,
                                    const orb_link_cost_t *intra, const orb_tuner_hosts_t *hosts,
                                    size_t slot_bytes, int max_channels, orb_tuner_choice_t *out)
{
    return choose(coll, count, elem_size, nranks, intra, hosts, slot_bytes, 0, max_channels, 0, out);
}

orb_status_t orb_tuner_choose_det(orb_coll_t coll, size_t count, size_t elem_size, int nranks,
                                  const orb_link_cost_t *intra, const orb_tuner_hosts_t *hosts, size_t slot_bytes,
                                  int nslots, int max_channels, int deterministic, orb_tuner_choice_t *out)
{
    return choose(coll, count, elem_size, nranks, intra, hosts, slot_bytes, nslots, max_channels, deterministic,
                  out);
}
