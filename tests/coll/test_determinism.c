/* Deterministic mode under orbitrun (orbitrun -n N test_determinism, ORBIT_DETERMINISTIC=1):
 * float32 and bfloat16 all-reduce, reduce and reduce-scatter, sum and avg, in and out of
 * place, through every ORBIT_ALGO and several ORBIT_CHUNK_BYTES (each configuration is a
 * new call shape, so the tuner runs again; ORBIT_NCHANNELS differs between the meson
 * entries). Every result must equal, to the bit, the left fold in rank order that this rank
 * computes itself with tests/kernels/ref.c (float32 arithmetic per step, bfloat16 rounded
 * per step, avg's division in the last step). Inputs mix signs and exponents so that any
 * other order rounds differently, which the default mode shows: with 3 or more ranks its
 * ring and tree all-reduce must disagree with each other, and the ring with the fold. Each
 * rank judges its own results and exits 1 on a failure; orbit never carries a verdict. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../kernels/ref.h"
#include "orbit.h"

static int nranks, rank;
static orb_comm_t comm;
static long passed, failed;

enum { C_ALLREDUCE, C_REDUCE, C_RS };
static const char *const coll_names[] = {"allreduce", "reduce", "reduce_scatter"};

static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* Rank r's element i: a small integer times a power of two, exact in the dtype; the
 * exponents spread over 2^-24..2^23 (float32) or 2^-12..2^11 (bfloat16). */
static void input_elem(void *p, orb_dtype_t t, int r, size_t i)
{
    uint64_t h = mix((uint64_t)r << 40 ^ i);
    if (t == ORB_FLOAT32) {
        float v = ldexpf((float)((int)(h % 2001) - 1000), (int)((h >> 16) % 48) - 24);
        memcpy(p, &v, 4);
    } else {
        float v = ldexpf((float)((int)(h % 255) - 127), (int)((h >> 16) % 24) - 12);
        uint32_t b;
        memcpy(&b, &v, 4);
        uint16_t hb = (uint16_t)(b >> 16); /* exact: 8 significant bits at most */
        memcpy(p, &hb, 2);
    }
}

/* The element every rank's element i folds to: op(...op(op(x0, x1), x2)..., x_{n-1}). */
static void fold_elem(void *out, orb_dtype_t t, orb_op_t op, size_t i)
{
    unsigned char acc[4], x[4];
    input_elem(acc, t, 0, i);
    if (nranks == 1)
        return (void)memcpy(out, acc, 4);
    for (int q = 1; q < nranks; q++) {
        input_elem(x, t, q, i);
        ref_reduce_elem(acc, acc, x, 0, t, op, (op == ORB_AVG && q == nranks - 1) ? nranks : 0, 0);
    }
    memcpy(out, acc, 4);
}

static void fail(const char *what)
{
    failed++;
    if (failed <= 10)
        fprintf(stderr, "rank %d: FAIL %s\n", rank, what);
}

/* One call; its result compared with the fold. */
static void run_case(int c, orb_dtype_t t, orb_op_t op, size_t count, int inplace, const char *cfg)
{
    const size_t esz = t == ORB_FLOAT32 ? 4 : 2;
    const size_t in_n = c == C_RS ? count * (size_t)nranks : count;
    const int root = (int)(count % (size_t)nranks);
    unsigned char *in = malloc(in_n * esz + 1), *out = malloc(count * esz + 1);
    for (size_t i = 0; i < in_n; i++)
        input_elem(in + i * esz, t, rank, i);
    const void *sb = in;
    void *rb = inplace ? (c == C_RS ? (void *)(in + (size_t)rank * count * esz) : (void *)in) : (void *)out;
    orb_status_t st;
    if (c == C_ALLREDUCE)
        st = orb_allreduce(sb, rb, count, t, op, comm, NULL);
    else if (c == C_REDUCE)
        st = orb_reduce(sb, rb, count, t, op, root, comm, NULL);
    else
        st = orb_reduce_scatter(sb, rb, count, t, op, comm, NULL);
    char what[256];
    snprintf(what, sizeof what, "%s %s %s count %zu%s (%s)", coll_names[c], t == ORB_FLOAT32 ? "float32" : "bfloat16",
             op == ORB_SUM ? "sum" : "avg", count, inplace ? " in place" : "", cfg);
    if (st != ORB_OK) {
        char m[512];
        snprintf(m, sizeof m, "%s: %s: %s", what, orb_status_name(st), orb_comm_last_error(comm));
        fail(m);
    } else if (c != C_REDUCE || rank == root) {
        const unsigned char *res = rb;
        const size_t first = c == C_RS ? (size_t)rank * count : 0; /* the fold's element index */
        size_t bad = count;
        for (size_t i = 0; i < count && bad == count; i++) {
            unsigned char want[4];
            fold_elem(want, t, op, first + i);
            if (memcmp(want, res + i * esz, esz))
                bad = i;
        }
        if (bad < count) {
            char m[512];
            snprintf(m, sizeof m, "%s: element %zu differs from the rank-order fold", what, bad);
            fail(m);
        } else {
            passed++;
        }
    } else {
        passed++;
    }
    free(in);
    free(out);
}

/* Default mode: the ring and the tree (and the ring and the fold) must differ somewhere on
 * these inputs, or the exact comparisons above could not fail. */
static void default_mode_differs(void)
{
    if (nranks < 3) /* two ranks add x0 + x1 in every plan */
        return;
    const size_t count = 4099;
    float *ring = malloc((count + 1) * 4), *tree = malloc((count + 1) * 4), *in = malloc((count + 1) * 4);
    for (size_t i = 0; i <= count; i++)
        input_elem(&in[i], ORB_FLOAT32, rank, i);
    orb_comm_set_deterministic(comm, 0);
    unsetenv("ORBIT_CHUNK_BYTES");
    setenv("ORBIT_ALGO", "ring", 1);
    orb_status_t s1 = orb_allreduce(in, ring, count, ORB_FLOAT32, ORB_SUM, comm, NULL);
    setenv("ORBIT_ALGO", "tree", 1); /* count + 1: a new shape, so the tuner reads it */
    orb_status_t s2 = orb_allreduce(in, tree, count + 1, ORB_FLOAT32, ORB_SUM, comm, NULL);
    int ring_tree = 0, ring_fold = 0;
    for (size_t i = 0; i < count; i++) {
        float f;
        fold_elem(&f, ORB_FLOAT32, ORB_SUM, i);
        ring_tree += memcmp(&ring[i], &tree[i], 4) != 0;
        ring_fold += memcmp(&ring[i], &f, 4) != 0;
    }
    if (s1 != ORB_OK || s2 != ORB_OK)
        fail("default mode: a call failed");
    else if (!ring_tree || !ring_fold)
        fail("default mode: ring, tree and the rank-order fold agree on every element: the inputs do not "
             "make the order of addition visible");
    else
        passed++;
    printf("rank %d: default mode differs: ring vs tree in %d, ring vs rank order in %d of %zu elements\n", rank,
           ring_tree, ring_fold, count);
    /* the same call shape again in deterministic mode: the plan cached for the default
     * mode must not be taken */
    orb_comm_set_deterministic(comm, 1);
    setenv("ORBIT_ALGO", "ring", 1);
    if (orb_allreduce(in, ring, count, ORB_FLOAT32, ORB_SUM, comm, NULL) != ORB_OK)
        fail("deterministic mode after the default: the call failed");
    for (size_t i = 0; i < count; i++) {
        float f;
        fold_elem(&f, ORB_FLOAT32, ORB_SUM, i);
        if (memcmp(&ring[i], &f, 4)) {
            fail("deterministic mode after the default: a shape planned in the default mode kept its plan");
            break;
        }
    }
    free(ring);
    free(tree);
    free(in);
}

int main(void)
{
    ref_init();
    orb_status_t st = orb_comm_init_env(&comm);
    if (st != ORB_OK) {
        fprintf(stderr, "init failed: %s: %s\n", orb_status_name(st), orb_comm_last_error(NULL));
        return 1;
    }
    orb_comm_rank(comm, &rank);
    orb_comm_size(comm, &nranks);
    int on = -1;
    if (orb_comm_get_deterministic(comm, &on) != ORB_OK || on != 1)
        fail("ORBIT_DETERMINISTIC=1 did not turn deterministic mode on at init");
    if (orb_comm_set_deterministic(comm, 0) != ORB_OK || orb_comm_get_deterministic(comm, &on) != ORB_OK || on)
        fail("orb_comm_set_deterministic(0) did not turn it off");
    orb_comm_set_deterministic(comm, 1);

    static const char *const algos[] = {"", "ring", "tree", "direct"};
    static const char *const chunks[] = {"", "64", "1000", "16384"};
    static const size_t counts[] = {1, 5, 1000, 30011};
    size_t shape = 0; /* added to every count: each configuration is a call shape of its own */
    for (int ai = 0; ai < 4; ai++)
        for (int ci = 0; ci < 4; ci++) {
            char cfg[96];
            snprintf(cfg, sizeof cfg, "ORBIT_ALGO=%s ORBIT_CHUNK_BYTES=%s", algos[ai], chunks[ci]);
            setenv("ORBIT_ALGO", algos[ai], 1);
            setenv("ORBIT_CHUNK_BYTES", chunks[ci], 1);
            shape++;
            for (int c = 0; c < 3; c++)
                for (int t = 0; t < 2; t++)
                    for (int k = 0; k < 4; k++) {
                        if (k == 3 && (ai + ci + c + t) % 3) /* the long case in a third of them */
                            continue;
                        for (int op = 0; op < 2; op++)
                            run_case(c, t ? ORB_BFLOAT16 : ORB_FLOAT32, op ? ORB_AVG : ORB_SUM,
                                     counts[k] + shape * 3, (ai + ci + k + op) % 2, cfg);
                    }
        }
    default_mode_differs();
    orb_comm_destroy(comm);
    printf("rank %d: %ld passed, %ld failed\n", rank, passed, failed);
    return failed ? 1 : 0;
}
