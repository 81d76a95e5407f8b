/* orb_comm_split and orb_comm_dup, as N real processes under orbitrun:
 *   orbitrun -n N -- test_split --case reorder|nested|dup|threads|mismatch|destroy|args
 * or as ranks that are threads of one process (orb_comm_init_all):
 *   test_split --case init-all [--n N]
 * --hosts K puts rank r on a pretend host r % K (ORBIT_HOSTID): ranks of different hosts talk
 * over TCP.
 * Every expectation comes from the colors and keys the test picks, through a reference of
 * its own (expect_child: the ranks of one color sorted by key, ties by rank), never through
 * orbit: a rank's identity is RANK from the launcher (or its thread's index), and a child's
 * membership and order are proven by an all-gather of those identities on the child and an
 * all-reduce of values that depend on them. Each rank judges only its own results, prints
 * "rank R: N passed, N failed" and exits 1 on a failure of its own. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/comm_impl.h" /* init-all only: the settings a child inherits are not public */
#include "orbit.h"

#define MAXN 64

static _Atomic int passed, failed;
static const char *which = "";

#define CHECK(who, cond, ...)                                                                                   \
    do {                                                                                                       \
        if (cond)                                                                                              \
            passed++;                                                                                          \
        else {                                                                                                 \
            failed++;                                                                                          \
            char m_[512];                                                                                      \
            snprintf(m_, sizeof m_, __VA_ARGS__);                                                              \
            fprintf(stderr, "rank %d: FAIL %s: %s (%s:%d)\n", (who), which, m_, __FILE__, __LINE__);          \
        }                                                                                                      \
    } while (0)

/* ---- the reference ------------------------------------------------------------------------ */

/* The child that parent rank me joins when parent rank r passes colors[r], keys[r]: its
 * members as identities (ids[] of the parent's ranks) in child order, in out[]; my rank in it
 * in *crank. Returns its size, 0 for no color. */
static int expect_child(int pn, const int *ids, const int *colors, const int *keys, int me, int *out, int *crank)
{
    if (colors[me] == ORB_SPLIT_NOCOLOR)
        return 0;
    int idx[MAXN], m = 0;
    for (int r = 0; r < pn; r++)
        if (colors[r] == colors[me])
            idx[m++] = r;
    for (int i = 1; i < m; i++) /* insertion sort by (key, parent rank) */
        for (int j = i; j > 0 && (keys[idx[j - 1]] > keys[idx[j]] ||
                                  (keys[idx[j - 1]] == keys[idx[j]] && idx[j - 1] > idx[j])); j--) {
            int t = idx[j];
            idx[j] = idx[j - 1];
            idx[j - 1] = t;
        }
    for (int i = 0; i < m; i++) {
        out[i] = ids[idx[i]];
        if (idx[i] == me)
            *crank = i;
    }
    return m;
}

/* A communicator and what the test knows about it independently: its members' identities. */
typedef struct {
    orb_comm_t comm;
    int n, rank, id; /* id: my identity (world rank) */
    int ids[MAXN];   /* identity of each of its ranks */
} known_t;

/* Does c hold the members k says, in that order? Rank, size, an all-gather of identities, an
 * all-reduce of values that depend on identity and rank. */
static void verify(const known_t *k, const char *what)
{
    int r = -1, n = -1;
    CHECK(k->id, orb_comm_rank(k->comm, &r) == ORB_OK && r == k->rank, "%s: orb_comm_rank %d, want %d", what, r,
          k->rank);
    CHECK(k->id, orb_comm_size(k->comm, &n) == ORB_OK && n == k->n, "%s: orb_comm_size %d, want %d", what, n, k->n);
    int32_t mine = 1000 + k->id, all[MAXN + 1];
    all[k->n] = -7; /* past the output: must stay */
    orb_status_t st = orb_allgather(&mine, all, 1, ORB_INT32, k->comm, NULL);
    CHECK(k->id, st == ORB_OK, "%s: allgather: %s %s", what, orb_status_name(st), orb_comm_last_error(k->comm));
    for (int i = 0; st == ORB_OK && i < k->n; i++)
        CHECK(k->id, all[i] == 1000 + k->ids[i], "%s: allgather[%d] = %d, want %d (identity of child rank %d)", what,
              i, all[i], 1000 + k->ids[i], i);
    CHECK(k->id, all[k->n] == -7, "%s: allgather wrote past its output", what);
    int64_t v[2] = {(int64_t)(k->id + 1) * (k->id + 1), (int64_t)k->rank * 1000 + k->id}, sum[2];
    int64_t want[2] = {0, 0};
    for (int i = 0; i < k->n; i++) {
        want[0] += (int64_t)(k->ids[i] + 1) * (k->ids[i] + 1);
        want[1] += (int64_t)i * 1000 + k->ids[i];
    }
    st = orb_allreduce(v, sum, 2, ORB_INT64, ORB_SUM, k->comm, NULL);
    CHECK(k->id, st == ORB_OK && sum[0] == want[0] && sum[1] == want[1],
          "%s: allreduce %s: %lld %lld, want %lld %lld", what, orb_status_name(st), (long long)sum[0],
          (long long)sum[1], (long long)want[0], (long long)want[1]);
}

/* Split p with colors[r], keys[r] chosen for each of its ranks r; checks the child against the
 * reference and returns what is known of it (comm NULL for no color). */
static known_t split_checked(const known_t *p, const int *colors, const int *keys, const char *what)
{
    known_t k = {.id = p->id};
    orb_comm_t c = (orb_comm_t)&k; /* anything but NULL: a NOCOLOR rank must get NULL */
    orb_status_t st = orb_comm_split(p->comm, colors[p->rank], keys[p->rank], &c);
    CHECK(p->id, st == ORB_OK, "%s: orb_comm_split: %s %s", what, orb_status_name(st), orb_comm_last_error(p->comm));
    k.n = expect_child(p->n, p->ids, colors, keys, p->rank, k.ids, &k.rank);
    if (st != ORB_OK)
        return k;
    if (k.n == 0) {
        CHECK(p->id, c == NULL, "%s: no color, but newcomm is not NULL", what);
        return k;
    }
    CHECK(p->id, c != NULL, "%s: newcomm is NULL", what);
    k.comm = c;
    if (c)
        verify(&k, what);
    return k;
}

static void destroy(known_t *k, const char *what)
{
    if (!k->comm)
        return;
    orb_status_t st = orb_comm_destroy(k->comm);
    CHECK(k->id, st == ORB_OK, "%s: destroy: %s", what, orb_status_name(st));
    k->comm = NULL;
}

/* ---- the cases -------------------------------------------------------------------------- */

/* Colors and keys that reorder, ties broken by rank, NOCOLOR; the parent still works. */
static void case_reorder(known_t *w)
{
    int n = w->n, colors[MAXN] = {0}, keys[MAXN] = {0};
    for (int r = 0; r < n; r++) { /* two groups, each in reverse order */
        colors[r] = r % 2;
        keys[r] = -r;
    }
    known_t a = split_checked(w, colors, keys, "color r%2, key -r");
    for (int r = 0; r < n; r++) { /* the last rank out; keys tie in pairs: parent order decides */
        colors[r] = r == n - 1 && n > 1 ? ORB_SPLIT_NOCOLOR : 5;
        keys[r] = (n - r) / 2;
    }
    known_t b = split_checked(w, colors, keys, "NOCOLOR last, keys tie in pairs");
    for (int r = 0; r < n; r++) { /* every rank alone */
        colors[r] = 100 + r;
        keys[r] = 0;
    }
    known_t c = split_checked(w, colors, keys, "a color each");
    verify(w, "the parent after three splits");
    verify(&a, "the first child after the others were made");
    destroy(&a, "first child");
    destroy(&b, "second child");
    destroy(&c, "third child");
    verify(w, "the parent after its children were destroyed");
}

/* A split of a split of a split. */
static void case_nested(known_t *w)
{
    int colors[MAXN] = {0}, keys[MAXN] = {0};
    for (int r = 0; r < w->n; r++) { /* everyone, reversed */
        colors[r] = 0;
        keys[r] = w->n - r;
    }
    known_t a = split_checked(w, colors, keys, "level 1: reversed");
    if (!a.comm)
        return;
    for (int r = 0; r < a.n; r++) { /* halves of the reversed order, each reversed again */
        colors[r] = r < a.n / 2;
        keys[r] = -r;
    }
    known_t b = split_checked(&a, colors, keys, "level 2: halves, reversed again");
    for (int r = 0; r < b.n; r++) {
        colors[r] = r == 0 ? ORB_SPLIT_NOCOLOR : 3;
        keys[r] = 0;
    }
    known_t c = split_checked(&b, colors, keys, "level 3: the first out");
    destroy(&a, "level 1 before its children");
    if (b.comm)
        verify(&b, "level 2 after level 1 was destroyed");
    destroy(&b, "level 2");
    if (c.comm)
        verify(&c, "level 3 after levels 1 and 2 were destroyed");
    destroy(&c, "level 3");
}

/* orb_comm_dup: the same ranks, its own connections: calls on parent and dup interleave. */
static void case_dup(known_t *w)
{
    known_t d = *w;
    orb_status_t st = orb_comm_dup(w->comm, &d.comm);
    CHECK(w->id, st == ORB_OK && d.comm && d.comm != w->comm, "orb_comm_dup: %s %s", orb_status_name(st),
          orb_comm_last_error(w->comm));
    if (st != ORB_OK)
        return;
    verify(&d, "the dup");
    known_t dd = d;
    st = orb_comm_dup(d.comm, &dd.comm);
    CHECK(w->id, st == ORB_OK, "orb_comm_dup of the dup: %s", orb_status_name(st));
    for (int i = 0; i < 3 && st == ORB_OK; i++) {
        verify(w, "the parent between calls on its dups");
        verify(&d, "the dup between calls on the parent");
        verify(&dd, "the dup of the dup");
    }
    destroy(&d, "the dup");
    if (st == ORB_OK)
        verify(&dd, "the dup of the dup after the dup was destroyed");
    destroy(&dd, "the dup of the dup");
    verify(w, "the parent after its dups were destroyed");
}

/* Two children of one parent and the parent itself, each driven from a thread of its own. */
typedef struct {
    known_t *k;
    const char *what;
} drive_arg_t;

static void *drive(void *p)
{
    drive_arg_t *a = p;
    for (int it = 0; it < 40; it++) {
        int64_t v = (int64_t)(a->k->id + 1) * (it + 1), s = -1, want = 0;
        for (int i = 0; i < a->k->n; i++)
            want += (int64_t)(a->k->ids[i] + 1) * (it + 1);
        orb_status_t st = orb_allreduce(&v, &s, 1, ORB_INT64, ORB_SUM, a->k->comm, NULL);
        CHECK(a->k->id, st == ORB_OK && s == want, "%s, iteration %d: allreduce %s: %lld, want %lld", a->what, it,
              orb_status_name(st), (long long)s, (long long)want);
        if (st != ORB_OK)
            break;
        if (it % 8 == 0)
            verify(a->k, a->what);
    }
    return NULL;
}

static void case_threads(known_t *w)
{
    int colors[MAXN] = {0}, keys[MAXN] = {0};
    for (int r = 0; r < w->n; r++) {
        colors[r] = r % 2;
        keys[r] = r;
    }
    known_t a = split_checked(w, colors, keys, "child A: color r%2");
    for (int r = 0; r < w->n; r++) {
        colors[r] = 1;
        keys[r] = -r;
    }
    known_t b = split_checked(w, colors, keys, "child B: everyone reversed");
    if (!a.comm || !b.comm)
        return;
    drive_arg_t da = {&a, "child A driven from a thread"}, db = {&b, "child B driven from another thread"},
                dw = {w, "the parent driven at the same time"};
    pthread_t ta, tb;
    pthread_create(&ta, NULL, drive, &da);
    pthread_create(&tb, NULL, drive, &db);
    drive(&dw);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    verify(w, "the parent afterwards");
    known_t c = split_checked(w, colors, keys, "child C after the threads");
    destroy(&a, "child A");
    destroy(&b, "child B");
    destroy(&c, "child C");
    verify(w, "the parent at the end");
}

/* Rank 0 splits, every other rank calls orb_allreduce: a mismatch on every rank, naming both,
 * not a hang. */
static void case_mismatch(known_t *w)
{
    orb_comm_t c = (orb_comm_t)w;
    float in[4] = {1, 2, 3, 4}, out[4];
    orb_status_t st = w->rank == 0 ? orb_comm_split(w->comm, 0, 0, &c)
                                   : orb_allreduce(in, out, 4, ORB_FLOAT32, ORB_SUM, w->comm, NULL);
    const char *msg = orb_comm_last_error(w->comm);
    CHECK(w->id, st == ORB_ERR_MISMATCH, "got %s, want ORB_ERR_MISMATCH (%s)", orb_status_name(st), msg);
    CHECK(w->id, strstr(msg, "comm_split") && strstr(msg, "allreduce"),
          "the message names comm_split and allreduce: \"%s\"", msg);
    if (w->rank == 0) {
        CHECK(w->id, strncmp(msg, "orb_comm_split: rank 0: ", 24) == 0, "the message starts with the function "
              "and the rank: \"%s\"", msg);
        CHECK(w->id, c == NULL, "newcomm is not NULL after a failed split");
    }
}

/* Children outlive their parent: destroyed after it, in either order. */
static void case_destroy(known_t *w)
{
    int colors[MAXN] = {0}, keys[MAXN] = {0};
    for (int r = 0; r < w->n; r++) {
        colors[r] = r % 2;
        keys[r] = -r;
    }
    known_t a = split_checked(w, colors, keys, "child A");
    known_t d = *w;
    orb_status_t st = orb_comm_dup(w->comm, &d.comm);
    CHECK(w->id, st == ORB_OK, "orb_comm_dup: %s", orb_status_name(st));
    destroy(w, "the parent first");
    if (a.comm)
        verify(&a, "child A after its parent was destroyed");
    if (st == ORB_OK)
        verify(&d, "the dup after its parent was destroyed");
    destroy(&d, "the dup before child A");
    if (a.comm)
        verify(&a, "child A after the dup was destroyed");
    destroy(&a, "child A last");
}

/* Bad arguments: ORB_ERR_INVALID_ARG at once on the rank that passes them, a message with the
 * function, the argument, the rank and the fix; nothing is exchanged, so every rank passing
 * them leaves the parent in step (a split right after works). */
static void expect_bad(int who, const char *what, orb_status_t st, const char *msg, const char *const *needles)
{
    CHECK(who, st == ORB_ERR_INVALID_ARG, "%s: got %s, want ORB_ERR_INVALID_ARG", what, orb_status_name(st));
    for (; *needles; needles++)
        CHECK(who, strstr(msg, *needles) != NULL, "%s: the message lacks \"%s\": \"%s\"", what, *needles, msg);
}

static void case_args(known_t *w)
{
    char rk[32];
    snprintf(rk, sizeof rk, "rank %d", w->rank);
    orb_comm_t c = (orb_comm_t)w;
    orb_status_t st = orb_comm_split(w->comm, 0, 0, NULL);
    expect_bad(w->id, "split newcomm NULL", st, orb_comm_last_error(w->comm),
               (const char *const[]){"orb_comm_split: ", rk, "newcomm", "NULL", "pass the address", NULL});
    st = orb_comm_split(w->comm, -2, 0, &c);
    expect_bad(w->id, "split color -2", st, orb_comm_last_error(w->comm),
               (const char *const[]){"orb_comm_split: ", rk, "color=-2", "ORB_SPLIT_NOCOLOR", NULL});
    CHECK(w->id, c == NULL, "newcomm is not NULL after a refused split");
    st = orb_comm_dup(w->comm, NULL);
    expect_bad(w->id, "dup newcomm NULL", st, orb_comm_last_error(w->comm),
               (const char *const[]){"orb_comm_dup: ", rk, "newcomm", "pass the address", NULL});
    st = orb_comm_split(NULL, 0, 0, &c);
    expect_bad(w->id, "split comm NULL", st, orb_comm_last_error(NULL),
               (const char *const[]){"orb_comm_split: ", "comm is NULL", "pass a communicator", NULL});
    st = orb_comm_dup(NULL, &c);
    expect_bad(w->id, "dup comm NULL", st, orb_comm_last_error(NULL),
               (const char *const[]){"orb_comm_dup: ", "comm is NULL", NULL});
    orb_group_start();
    st = orb_comm_split(w->comm, 0, 0, &c);
    orb_group_end();
    expect_bad(w->id, "split inside a group", st, orb_comm_last_error(w->comm),
               (const char *const[]){"orb_comm_split: ", rk, "orb_group_start", "outside the group", NULL});
    /* a destroyed parent: made and destroyed here, so the handle is stale */
    known_t d = *w;
    st = orb_comm_dup(w->comm, &d.comm);
    CHECK(w->id, st == ORB_OK, "orb_comm_dup: %s", orb_status_name(st));
    orb_comm_t stale = d.comm;
    destroy(&d, "the dup");
    st = orb_comm_split(stale, 0, 0, &c);
    expect_bad(w->id, "split of a destroyed comm", st, orb_comm_last_error(NULL),
               (const char *const[]){"orb_comm_split: ", "not a live communicator", "orb_comm_destroy", NULL});
    /* the parent is in step on every rank */
    int colors[MAXN] = {0}, keys[MAXN] = {0};
    for (int r = 0; r < w->n; r++) {
        colors[r] = 0;
        keys[r] = -r;
    }
    known_t a = split_checked(w, colors, keys, "a split after the refused ones");
    destroy(&a, "that child");
    verify(w, "the parent at the end");
}

/* ---- ranks as threads ------------------------------------------------------------------- */

typedef struct {
    known_t w;
    struct orb_comm *parent_seen; /* the settings the parent had, for the inheritance check */
} rank_arg_t;

static void *init_all_rank(void *p)
{
    rank_arg_t *a = p;
    known_t *w = &a->w;
    int colors[MAXN] = {0}, keys[MAXN] = {0};
    for (int r = 0; r < w->n; r++) {
        colors[r] = r % 2;
        keys[r] = -r;
    }
    known_t c = split_checked(w, colors, keys, "threads: color r%2, key -r");
    if (c.comm) {
        /* the child runs with the parent's settings, not the registry's values now */
        const struct orb_comm *pc = w->comm, *cc = c.comm;
        CHECK(w->id, cc->nchannels == pc->nchannels && cc->nslots == pc->nslots && cc->slot_bytes == pc->slot_bytes,
              "the child has %d channels x %u slots x %zu bytes, its parent %d x %u x %zu", cc->nchannels, cc->nslots,
              cc->slot_bytes, pc->nchannels, pc->nslots, pc->slot_bytes);
        CHECK(w->id, cc->timeout_s == pc->timeout_s && cc->env.timeout_s == pc->timeout_s,
              "the child's timeout %g (executor %g), its parent's %g", cc->timeout_s, cc->env.timeout_s,
              pc->timeout_s);
        CHECK(w->id, cc->check_signatures == pc->check_signatures, "the child checks signatures: %d, its parent: %d",
              cc->check_signatures, pc->check_signatures);
        int det = -1;
        orb_comm_get_deterministic(c.comm, &det);
        CHECK(w->id, det == 1, "the child's deterministic mode is %d, its parent's 1", det);
    }
    known_t d = *w;
    orb_status_t st = orb_comm_dup(w->comm, &d.comm);
    CHECK(w->id, st == ORB_OK, "threads: orb_comm_dup: %s %s", orb_status_name(st), orb_comm_last_error(w->comm));
    if (st == ORB_OK)
        verify(&d, "threads: the dup");
    known_t g = {.id = w->id};
    if (c.comm) {
        for (int r = 0; r < c.n; r++) {
            colors[r] = 0;
            keys[r] = c.n - r;
        }
        g = split_checked(&c, colors, keys, "threads: the child split again, reversed");
    }
    destroy(&c, "threads: the child");
    destroy(&d, "threads: the dup");
    verify(w, "threads: the parent");
    if (g.comm)
        verify(&g, "threads: the grandchild after its parent went");
    destroy(&g, "threads: the grandchild");
    destroy(w, "threads: the parent");
    return NULL;
}

static int run_init_all(int n)
{
    orb_comm_t comms[MAXN];
    orb_status_t st = orb_comm_init_all(comms, n, NULL);
    if (st != ORB_OK) {
        fprintf(stderr, "FAIL orb_comm_init_all: %s %s\n", orb_status_name(st), orb_comm_last_error(NULL));
        return 1;
    }
    /* The registry now says otherwise than when the parents were made: a child must not care. */
    comms[0]->timeout_s = 77; /* a value no setting gives: copied, not re-read */
    for (int i = 1; i < n; i++)
        comms[i]->timeout_s = 77;
    setenv("ORBIT_NCHANNELS", "5", 1);
    setenv("ORBIT_SHM_SLOTS", "3", 1);
    setenv("ORBIT_TIMEOUT", "33", 1);
    setenv("ORBIT_CHECK", "0", 1);
    for (int i = 0; i < n; i++) /* a per-communicator switch the registry (0) does not give */
        orb_comm_set_deterministic(comms[i], 1);
    rank_arg_t args[MAXN];
    pthread_t th[MAXN];
    for (int i = 0; i < n; i++) {
        args[i].w = (known_t){.comm = comms[i], .n = n, .rank = i, .id = i};
        for (int r = 0; r < n; r++)
            args[i].w.ids[r] = r;
        pthread_create(&th[i], NULL, init_all_rank, &args[i]);
    }
    for (int i = 0; i < n; i++)
        pthread_join(th[i], NULL);
    printf("init-all, %d ranks: %d passed, %d failed\n", n, passed, failed);
    return failed ? 1 : 0;
}

int main(int argc, char **argv)
{
    int n_threads = 4, hosts = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--case") && i + 1 < argc)
            which = argv[++i];
        else if (!strcmp(argv[i], "--n") && i + 1 < argc)
            n_threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--hosts") && i + 1 < argc)
            hosts = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: test_split --case NAME [--n N] [--hosts K]\n");
            return 2;
        }
    }
    if (!strcmp(which, "init-all"))
        return n_threads >= 1 && n_threads <= MAXN ? run_init_all(n_threads) : 2;

    const char *re = getenv("RANK"), *ws = getenv("WORLD_SIZE");
    if (!re || !ws) {
        fprintf(stderr, "test_split --case %s runs under orbitrun (RANK, WORLD_SIZE)\n", which);
        return 2;
    }
    known_t w = {.rank = atoi(re), .n = atoi(ws), .id = atoi(re)};
    if (w.n < 1 || w.n > MAXN)
        return 2;
    for (int r = 0; r < w.n; r++)
        w.ids[r] = r;
    if (hosts > 1) { /* rank r on "host" r % hosts: those pairs talk over TCP, parent and children */
        char h[32];
        snprintf(h, sizeof h, "split-host-%d", w.rank % hosts);
        setenv("ORBIT_HOSTID", h, 1);
    }
    orb_status_t st = orb_comm_init_env(&w.comm);
    if (st != ORB_OK) {
        fprintf(stderr, "rank %d: FAIL init: %s %s\n", w.id, orb_status_name(st), orb_comm_last_error(NULL));
        return 1;
    }
    static const struct {
        const char *name;
        void (*fn)(known_t *);
    } cases[] = {{"reorder", case_reorder}, {"nested", case_nested}, {"dup", case_dup}, {"threads", case_threads},
                 {"mismatch", case_mismatch}, {"destroy", case_destroy}, {"args", case_args}};
    int found = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        if (!strcmp(which, cases[i].name)) {
            cases[i].fn(&w);
            found = 1;
        }
    if (!found) {
        fprintf(stderr, "test_split: no case %s\n", which);
        return 2;
    }
    destroy(&w, "the parent at exit");
    printf("rank %d: %s: %d passed, %d failed\n", w.id, which, passed, failed);
    return failed || !passed ? 1 : 0;
}
