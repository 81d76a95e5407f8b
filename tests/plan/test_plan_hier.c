/* The hierarchical all-reduce proven by the plan checker for 2..8 hosts of 1..8 ranks
 * (at most 64 ranks), hosts as rank blocks or interleaved, with and without a shuffled
 * ring; plus the traffic that crosses hosts, and the host maps the builder must refuse. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collectives/algos.h"
#include "collectives/plan_check.h"

static int failures, checks;

#define CHECK(cond, ...)                                         \
    do {                                                         \
        if (!(cond)) {                                           \
            if (++failures <= 10) {                              \
                fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
                fprintf(stderr, __VA_ARGS__);                    \
                fputc('\n', stderr);                             \
            }                                                    \
        }                                                        \
    } while (0)

/* Host maps: blocked (ranks 0..L-1 on host 0, ...) or interleaved (rank r on host r % H). */
static void host_map(int H, int L, int interleaved, int *host_of)
{
    for (int r = 0; r < H * L; r++)
        host_of[r] = interleaved ? r % H : r / L;
}

static void shuffled_ring(int n, int *ring)
{
    for (int i = 0; i < n; i++)
        ring[i] = i;
    unsigned s = 777u + (unsigned)n; /* fixed seed: the same order on every run */
    for (int i = n - 1; i > 0; i--) {
        s = s * 1103515245u + 12345u;
        int j = (int)((s >> 8) % (unsigned)(i + 1)), t = ring[i];
        ring[i] = ring[j];
        ring[j] = t;
    }
}

static void check_one(const orb_plan_args_t *a, const orb_plan_check_opts_t *o, int interleaved)
{
    char err[2048];
    checks++;
    orb_status_t st = orb_plan_check(a, o, err, sizeof err);
    CHECK(st == ORB_OK,
          "hier H=%d L=%d hosts=%s count=%zu chunk=%zu nchannels=%d nslots=%zu slot_elems=%zu inplace=%d "
          "ring=%s: %s: %s",
          a->nhosts, a->nranks / a->nhosts, interleaved ? "interleaved" : "blocked", a->count, a->chunk_elems,
          a->nchannels, o->nslots, o->slot_elems, o->inplace, a->ring ? "shuffled" : "0..n-1",
          orb_status_name(st), err);
}

/* Elements that leave the host: only to the same local index on the next host, 2(H-1) *
 * count of them in all (each piece goes H-1 hops reducing and H-1 hops gathering). */
static void check_traffic(const orb_plan_args_t *tmpl)
{
    const int n = tmpl->nranks, H = tmpl->nhosts;
    size_t cross = 0;
    int dest_host_ok = 1;
    for (int r = 0; r < n; r++) {
        orb_plan_args_t a = *tmpl;
        a.rank = r;
        orb_plan_t p;
        if (orb_plan_build(&p, &a) != ORB_OK) {
            CHECK(0, "traffic: rank %d does not build", r);
            return;
        }
        for (int c = 0; c < p.nlanes; c++)
            for (size_t i = 0; i < p.lanes[c].nsteps; i++) {
                const orb_step_t *s = &p.lanes[c].steps[i];
                if (s->send_peer < 0 || a.host_of[s->send_peer] == a.host_of[r])
                    continue;
                cross += s->count;
                if (a.host_of[s->send_peer] != (a.host_of[r] + 1) % H)
                    dest_host_ok = 0;
            }
        orb_plan_free(&p);
    }
    CHECK(dest_host_ok, "traffic: a step crosses to a host other than the next (H=%d n=%d)", H, n);
    CHECK(cross == 2 * (size_t)(H - 1) * tmpl->count, "traffic: %zu elements cross hosts, want %zu (H=%d n=%d)",
          cross, 2 * (size_t)(H - 1) * tmpl->count, H, n);
}

static void check_shapes(void)
{
    static const size_t chunks[] = {4, 7};
    int host_of[ORB_PLAN_CHECK_MAX_RANKS], ring[ORB_PLAN_CHECK_MAX_RANKS];
    const int min_slots = orb_plan_min_slots(ORB_COLL_ALLREDUCE, ORB_ALGO_HIER);
    CHECK(min_slots == 2, "hier needs the slots of a ring, min_slots says %d", min_slots);
    /* and one slot is not enough: every ring of it deadlocks */
    host_map(3, 2, 0, host_of);
    orb_plan_args_t one = {.coll = ORB_COLL_ALLREDUCE, .algo = ORB_ALGO_HIER, .nranks = 6, .count = 100,
                           .op = ORB_AVG, .chunk_elems = 4, .nchannels = 1, .nhosts = 3, .host_of = host_of};
    orb_plan_check_opts_t o1 = {.nslots = 1, .slot_elems = 4};
    char err[2048];
    CHECK(orb_plan_check(&one, &o1, err, sizeof err) == ORB_ERR_INTERNAL && strstr(err, "deadlock"),
          "one slot: %s", err);
    for (int H = 2; H <= 8; H++)
        for (int L = 1; L <= 8 && H * L <= ORB_PLAN_CHECK_MAX_RANKS; L++) {
            const int n = H * L;
            shuffled_ring(n, ring);
            for (int ci = 0; ci < 2; ci++)
                for (int nch = 1; nch <= 2; nch++) {
                    const size_t chunk = chunks[ci];
                    /* several rounds per lane, the last one partial */
                    const size_t counts[] = {0, 1, 7, 1000, 3 * (size_t)n * chunk * (size_t)nch + 5};
                    for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++)
                        for (int variant = 0; variant < 4; variant++) {
                            /* variants: one piece per step with the fewest slots and one more;
                             * three pieces per step; in place, interleaved hosts, shuffled ring */
                            const int interleaved = variant >= 2;
                            host_map(H, L, interleaved, host_of);
                            orb_plan_args_t a = {.coll = ORB_COLL_ALLREDUCE, .algo = ORB_ALGO_HIER, .nranks = n,
                                                 .count = counts[k], .op = ORB_AVG, .chunk_elems = chunk,
                                                 .nchannels = nch, .nhosts = H, .host_of = host_of};
                            orb_plan_check_opts_t o = {.nslots = (size_t)min_slots, .slot_elems = chunk};
                            if (variant == 1)
                                o.nslots++;
                            if (variant == 2) {
                                o.slot_elems = (chunk + 2) / 3;
                                o.nslots = 4;
                            }
                            if (variant == 3) {
                                o.inplace = 1;
                                a.ring = ring;
                            }
                            check_one(&a, &o, interleaved);
                            if (variant == 0 || variant == 3)
                                check_traffic(&a);
                        }
                }
        }
}

static orb_status_t build_rank0(int n, int nhosts, const int *host_of, const int *ring)
{
    orb_plan_args_t a = {.coll = ORB_COLL_ALLREDUCE, .algo = ORB_ALGO_HIER, .nranks = n, .count = 100,
                         .op = ORB_SUM, .chunk_elems = 8, .nchannels = 1, .ring = ring, .nhosts = nhosts,
                         .host_of = host_of};
    orb_plan_t p;
    orb_status_t st = orb_plan_build(&p, &a);
    if (st == ORB_OK)
        orb_plan_free(&p);
    return st;
}

static void check_refusals(void)
{
    static const int uneven[6] = {0, 0, 0, 1, 1, 2}; /* 3 + 2 + 1 */
    static const int two_plus_four[6] = {0, 1, 1, 1, 1, 1};
    static const int one_host[4] = {0, 0, 0, 0};
    static const int out_of_range[4] = {0, 1, 2, 1};
    static const int ok[4] = {1, 0, 1, 0};
    static const int dup_ring[4] = {1, 1, 2, 3}; /* rank 0 missing */
    CHECK(build_rank0(6, 3, uneven, NULL) == ORB_ERR_UNSUPPORTED, "uneven hosts");
    CHECK(build_rank0(6, 2, two_plus_four, NULL) == ORB_ERR_UNSUPPORTED, "2 + 4 ranks on two hosts");
    CHECK(build_rank0(4, 1, one_host, NULL) == ORB_ERR_UNSUPPORTED, "one host");
    CHECK(build_rank0(4, 0, NULL, NULL) == ORB_ERR_UNSUPPORTED, "no host map");
    CHECK(build_rank0(4, 2, NULL, NULL) == ORB_ERR_UNSUPPORTED, "nhosts without a map");
    CHECK(build_rank0(4, 2, out_of_range, NULL) == ORB_ERR_INVALID_ARG, "host index 2 of 2 hosts");
    CHECK(build_rank0(4, 2, ok, NULL) == ORB_OK, "2 hosts of 2");
    CHECK(build_rank0(4, 2, ok, dup_ring) == ORB_ERR_INVALID_ARG, "a ring that is not a permutation");
    int L = -1;
    CHECK(orb_plan_ranks_per_host(4, 2, ok, &L) == ORB_OK && L == 2, "ranks per host %d", L);
    CHECK(orb_plan_ranks_per_host(6, 3, uneven, &L) == ORB_ERR_UNSUPPORTED, "ranks per host of uneven hosts");
    for (int c = 0; c < ORB_NUM_COLLS; c++)
        CHECK(orb_plan_algo_supported((orb_coll_t)c, ORB_ALGO_HIER) ==
                  (c == ORB_COLL_ALLREDUCE || c == ORB_COLL_ALLTOALL),
              "hier %s plan", orb_coll_name((orb_coll_t)c));
    CHECK(strcmp(orb_algo_name(ORB_ALGO_HIER), "hier") == 0, "name %s", orb_algo_name(ORB_ALGO_HIER));
}

int main(void)
{
    check_refusals();
    check_shapes();
    printf("allreduce/hier: %d configurations checked\n", checks);
    if (failures)
        fprintf(stderr, "%d failure(s)\n", failures);
    return failures ? 1 : 0;
}
