/* More ranks than CPUs: the load every rank agrees on at init (comm/comm_links.c,
 * link_intra.ranks_per_cpu: the host's ranks over the CPUs their masks give them between them)
 * and the plan it gets a small broadcast, scatter and reduce (collectives/tuner.c: the chain up
 * to one piece's bytes, a scatter's n blocks packed in it, with the reason saying so; from one
 * piece on, whatever the model says). Real processes under
 * orbitrun, every rank started with the CPU mask the test's command gives (meson: taskset), so
 * the load is known whatever machine runs it:
 *   taskset -c 0 orbitrun -n N test_crowded N          (N ranks on one CPU: the load is N)
 *   orbitrun -n N test_crowded 0                       (any machine: no check of the figure,
 *                                                       the plan checked against the load found)
 * Then every rank broadcasts from each root, 8 B to 4 KiB of rank- and position-dependent values,
 * scatters from each root one element a rank to one past the piece (in place at the root
 * and not), reduces to each root 8 B to 4 KiB (uint32 sums worked out here), and checks every
 * element. Each rank exits 1 on its own failures. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/comm_impl.h"
#include "orbit.h"

static int rank, failed;

#define FAIL(...)                                   \
    do {                                            \
        fprintf(stderr, "rank %d: FAIL ", rank);    \
        fprintf(stderr, __VA_ARGS__);               \
        fputc('\n', stderr);                        \
        failed = 1;                                 \
    } while (0)

/* The plan the plan cache gives a call of coll, count 4-byte elements from root 0, whose root
 * moves `total` bytes: the chain by the load rule where the load is above 1 on 3 ranks or more
 * and total is at most 1 KiB, else the model's choice. NULL (a failure said) without one. */
static const orb_plan_cache_entry_t *plan_checked(struct orb_comm *c, orb_coll_t coll, size_t count, size_t total,
                                                  int n, double load)
{
    const orb_call_key_t key = {.coll = coll, .count = count, .elem_size = 4, .root = 0};
    const orb_plan_cache_entry_t *e = NULL;
    char why[256] = "";
    if (orb_comm_plan(c, &key, &e, why, sizeof why) != ORB_OK || !e) {
        FAIL("no plan for a %s of %zu B: %s", orb_coll_name(coll), total, why);
        return NULL;
    }
    const int chain = strstr(e->reason, "ranks a CPU: the chain") != NULL;
    const int should = load > 1 && n >= 3 && total <= 1024;
    if (chain != should || (should && e->plan.args.algo != ORB_ALGO_RING))
        FAIL("%s of %zu B on %d ranks, %g a CPU: %s (%s), want %s", orb_coll_name(coll), total, n, load,
             orb_algo_name(e->plan.args.algo), e->reason, should ? "the chain by the load rule" : "the model's");
    return e;
}

static uint32_t value(int root, size_t i, int call) { return (uint32_t)(root * 1000003u + i * 7919u + (unsigned)call); }

int main(int argc, char **argv)
{
    const double want = argc > 1 ? strtod(argv[1], NULL) : 0; /* 0: not checked */
    orb_comm_t comm;
    if (orb_comm_init_env(&comm) != ORB_OK) {
        fprintf(stderr, "FAIL init: %s\n", orb_comm_last_error(NULL));
        return 1;
    }
    int n;
    orb_comm_rank(comm, &rank);
    orb_comm_size(comm, &n);
    struct orb_comm *c = (struct orb_comm *)comm;
    const double got = c->link_intra.ranks_per_cpu;
    if (want > 0 && got != want)
        FAIL("%d ranks on the CPUs given: the agreed load is %g ranks a CPU, want %g", n, got, want);

    /* The plan of a broadcast and a reduce of 64 B, 1 KiB and 4 KiB, as the plan cache gives it
     * any call. */
    static const size_t bytes[] = {64, 1024, 4096};
    for (size_t b = 0; b < sizeof bytes / sizeof bytes[0]; b++) {
        plan_checked(c, ORB_COLL_BROADCAST, bytes[b] / 4, bytes[b], n, got);
        plan_checked(c, ORB_COLL_REDUCE, bytes[b] / 4, bytes[b], n, got);
    }

    /* The plan of a scatter whose whole input is one block a rank, 1 KiB, and one element a rank
     * more: up to 1 KiB the chain with all n blocks in one piece (a non-root's scratch holds
     * them; its lane receives one piece and copies its block out). */
    const size_t fit = 1024 / (4 * (size_t)n), scounts[] = {1, fit, fit + 1};
    for (size_t b = 0; b < sizeof scounts / sizeof scounts[0]; b++) {
        const size_t total = 4 * (size_t)n * scounts[b];
        const orb_plan_cache_entry_t *e = plan_checked(c, ORB_COLL_SCATTER, scounts[b], total, n, got);
        if (!e)
            continue;
        const int should = got > 1 && n >= 3 && total <= 1024;
        const orb_lane_t *l0 = &e->plan.lanes[0];
        if (should && rank != 0 &&
            (e->plan.scratch_count != (size_t)n * scounts[b] || l0->nsteps != 2 ||
             l0->steps[0].count != (size_t)n * scounts[b]))
            FAIL("scatter of %zu B on %d ranks, rank %d: scratch %zu, %zu steps of %zu first; want all %zu elements in "
                 "one piece",
                 total, n, rank, e->plan.scratch_count, l0->nsteps, l0->nsteps ? l0->steps[0].count : 0,
                 (size_t)n * scounts[b]);
    }

    /* Scatters from every root, one element a rank to one past the piece, in place at the root
     * and not: every rank's block checked element by element. */
    uint32_t *in = malloc(4 * (size_t)n * (fit + 1)), *out = malloc(4 * (fit + 1));
    for (int root = 0; root < n && in && out; root++)
        for (size_t k = 0; k < sizeof scounts / sizeof scounts[0]; k++)
            for (int call = 0; call < 4; call++) {
                const size_t cnt = scounts[k];
                const int inplace = call & 1;
                for (size_t i = 0; i < (size_t)n * cnt; i++)
                    in[i] = rank == root ? value(root, i, call) : 0xdeadbeefu;
                for (size_t i = 0; i < cnt; i++)
                    out[i] = 0xdeadbeefu;
                uint32_t *dst = inplace && rank == root ? in + (size_t)root * cnt : out;
                orb_status_t st = orb_scatter(in, dst, cnt, ORB_UINT32, root, comm, NULL);
                if (st != ORB_OK) {
                    FAIL("scatter of %zu a rank from %d: %s: %s", cnt, root, orb_status_name(st),
                         orb_comm_last_error(comm));
                    continue;
                }
                size_t wrong = 0;
                for (size_t i = 0; i < cnt; i++)
                    wrong += dst[i] != value(root, (size_t)rank * cnt + i, call);
                if (wrong)
                    FAIL("scatter of %zu a rank from %d, call %d%s: %zu of this rank's elements wrong", cnt, root, call,
                         inplace ? " (in place at the root)" : "", wrong);
            }
    free(in);
    free(out);

    /* Every root, every size the rule covers and one past it: each element checked. */
    uint32_t *buf = malloc(4096);
    for (int root = 0; root < n && buf; root++)
        for (size_t bsz = 8; bsz <= 4096; bsz *= 8)
            for (int call = 0; call < 3; call++) {
                const size_t cnt = bsz / 4 ? bsz / 4 : 1;
                for (size_t i = 0; i < cnt; i++)
                    buf[i] = rank == root ? value(root, i, call) : 0xdeadbeefu;
                orb_status_t st = orb_broadcast(buf, buf, cnt, ORB_UINT32, root, comm, NULL);
                if (st != ORB_OK) {
                    FAIL("broadcast of %zu B from %d: %s: %s", cnt * 4, root, orb_status_name(st),
                         orb_comm_last_error(comm));
                    continue;
                }
                size_t wrong = 0;
                for (size_t i = 0; i < cnt; i++)
                    wrong += buf[i] != value(root, i, call);
                if (wrong)
                    FAIL("broadcast of %zu B from %d, call %d: %zu elements wrong", cnt * 4, root, call, wrong);
            }
    free(buf);

    /* Reduces (uint32 sums: exact, wrapping alike here and in orbit) to every root, the same
     * sizes, out of place and in place at the root: the root's every element checked against the
     * sum worked out here from every rank's values; the others' outputs untouched. */
    uint32_t *rin = malloc(4096), *rout = malloc(4096);
    for (int root = 0; root < n && rin && rout; root++)
        for (size_t bsz = 8; bsz <= 4096; bsz *= 8)
            for (int call = 0; call < 4; call++) {
                const size_t cnt = bsz / 4 ? bsz / 4 : 1;
                const int inplace = call & 1;
                for (size_t i = 0; i < cnt; i++) {
                    rin[i] = value(rank, i, call);
                    rout[i] = 0xdeadbeefu;
                }
                uint32_t *dst = inplace && rank == root ? rin : rout;
                orb_status_t st = orb_reduce(rin, dst, cnt, ORB_UINT32, ORB_SUM, root, comm, NULL);
                if (st != ORB_OK) {
                    FAIL("reduce of %zu B to %d: %s: %s", cnt * 4, root, orb_status_name(st),
                         orb_comm_last_error(comm));
                    continue;
                }
                size_t wrong = 0;
                for (size_t i = 0; i < cnt; i++) {
                    uint32_t sum = 0;
                    for (int r = 0; r < n; r++)
                        sum += value(r, i, call);
                    wrong += rank == root ? dst[i] != sum : rout[i] != 0xdeadbeefu;
                }
                if (wrong)
                    FAIL("reduce of %zu B to %d, call %d%s: %zu elements wrong", cnt * 4, root, call,
                         inplace ? " (in place at the root)" : "", wrong);
            }
    free(rin);
    free(rout);
    if (orb_comm_destroy(comm) != ORB_OK)
        FAIL("destroy: %s", orb_comm_last_error(NULL));
    if (!failed)
        printf("rank %d: load %g ranks a CPU, plans and values as they should be\n", rank, got);
    return failed;
}
