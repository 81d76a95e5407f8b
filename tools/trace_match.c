/* Matching across ranks: the calls of one collective by (comm, seq), the k-th send from A to B
 * with the k-th receive on B from A, and the same k-th rule for the steps inside them (the flow
 * arrows). Ordinals rather than timestamps, so clock error cannot pair the wrong messages. */
#include <stdlib.h>
#include <string.h>

#include "trace.h"

/* A growable array; everything here is built once, so realloc doubling is enough. */
#define PUSH(arr, n, cap, val)                                                                     \
    do {                                                                                           \
        if ((n) == (cap)) {                                                                        \
            (cap) = (cap) ? (cap) * 2 : 64;                                                        \
            void *q_ = realloc((arr), (cap) * sizeof(*(arr)));                                     \
            if (!q_) {                                                                             \
                fprintf(stderr, "orbit-trace: out of memory\n");                                   \
                exit(1);                                                                           \
            }                                                                                      \
            (arr) = q_;                                                                            \
        }                                                                                          \
        (arr)[(n)++] = (val);                                                                      \
    } while (0)

bool trace_is_p2p(const char *coll)
{
    return !strcmp(coll, "send") || !strcmp(coll, "recv");
}

static const trace_set_t *g_set; /* for the qsort comparators */

static const trace_call_t *call_of(trace_ref_t r)
{
    return &g_set->ranks[r.rank].calls[r.idx];
}

static int cmp64(int64_t a, int64_t b)
{
    return (a > b) - (a < b);
}

static int coll_ref_cmp(const void *a, const void *b)
{
    const trace_ref_t *x = a, *y = b;
    int c = strcmp(g_set->ranks[x->rank].comm, g_set->ranks[y->rank].comm);
    if (c)
        return c;
    if ((c = cmp64(call_of(*x)->seq, call_of(*y)->seq)))
        return c;
    return x->rank != y->rank ? x->rank - y->rank : cmp64((int64_t)x->idx, (int64_t)y->idx);
}

/* A send (or receive) from src to dst, the ord-th of its kind between those two. */
typedef struct {
    trace_ref_t ref;
    int src, dst, channel, is_recv;
    int64_t order; /* call id or step index: the position on its own rank */
} link_t;

static int link_cmp(const void *a, const void *b)
{
    const link_t *x = a, *y = b;
    int c = strcmp(g_set->ranks[x->ref.rank].comm, g_set->ranks[y->ref.rank].comm);
    if (c)
        return c;
    if (x->channel != y->channel)
        return x->channel - y->channel;
    if (x->src != y->src)
        return x->src - y->src;
    if (x->dst != y->dst)
        return x->dst - y->dst;
    if (x->is_recv != y->is_recv)
        return x->is_recv - y->is_recv;
    return cmp64(x->order, y->order);
}

static bool same_pair(const link_t *x, const link_t *y)
{
    return x->channel == y->channel && x->src == y->src && x->dst == y->dst &&
           !strcmp(g_set->ranks[x->ref.rank].comm, g_set->ranks[y->ref.rank].comm);
}

/* Sorts links and calls pair(send, recv) for the k-th send and k-th receive of each
 * (comm, channel, src, dst); the rest go to unpaired() when given. */
static void pair_links(link_t *l, size_t n, void (*pair)(const link_t *, const link_t *, void *),
                       void (*unpaired)(const link_t *, void *), void *ctx)
{
    trace_sort(l, n, sizeof(*l), link_cmp);
    for (size_t s = 0; s < n;) {
        size_t r = s, e;
        while (r < n && !l[r].is_recv && same_pair(&l[s], &l[r]))
            r++;
        for (e = r; e < n && l[e].is_recv && same_pair(&l[s], &l[e]); e++)
            ;
        size_t nsend = r - s, nrecv = e - r;
        for (size_t k = 0; k < nsend || k < nrecv; k++) {
            if (k < nsend && k < nrecv)
                pair(&l[s + k], &l[r + k], ctx);
            else if (unpaired)
                unpaired(k < nsend ? &l[s + k] : &l[r + k], ctx);
        }
        s = e;
    }
}

typedef struct {
    trace_set_t *set;
    size_t gcap, mcap, fcap;
} build_t;

static void add_group(build_t *b, const trace_ref_t *m, size_t n)
{
    trace_set_t *set = b->set;
    trace_group_t g = {0};
    const trace_call_t *c0 = call_of(m[0]);
    g.coll = c0->coll;
    g.comm = set->ranks[m[0].rank].comm;
    g.seq = c0->seq;
    g.t0 = c0->t0;
    g.t1 = c0->t1;
    g.nranks = set->ranks[m[0].rank].nranks;
    g.first = set->nmembers;
    g.n = n;
    for (size_t i = 0; i < n; i++) {
        const trace_call_t *c = call_of(m[i]);
        g.t0 = c->t0 < g.t0 ? c->t0 : g.t0;
        g.t1 = c->t1 > g.t1 ? c->t1 : g.t1;
        g.bytes = c->bytes > g.bytes ? c->bytes : g.bytes;
        PUSH(set->members, set->nmembers, b->mcap, m[i]);
    }
    PUSH(set->groups, set->ngroups, b->gcap, g);
}

static void p2p_pair(const link_t *s, const link_t *r, void *ctx)
{
    trace_ref_t m[2] = {s->ref, r->ref};
    if (m[1].rank < m[0].rank)
        m[0] = r->ref, m[1] = s->ref;
    add_group(ctx, m, 2);
}

static void p2p_single(const link_t *l, void *ctx)
{
    add_group(ctx, &l->ref, 1);
}

static void flow_pair(const link_t *s, const link_t *r, void *ctx)
{
    build_t *b = ctx;
    trace_flow_t f = {s->ref, r->ref};
    PUSH(b->set->flows, b->set->nflows, b->fcap, f);
}

/* The flows between the steps of one group's calls. */
static void group_flows(build_t *b, const trace_group_t *g)
{
    link_t *l = NULL;
    size_t n = 0, cap = 0;
    for (size_t i = 0; i < g->n; i++) {
        trace_ref_t m = b->set->members[g->first + i];
        const trace_rank_t *rk = &b->set->ranks[m.rank];
        const trace_call_t *c = &rk->calls[m.idx];
        for (size_t j = c->step_first; j < c->step_first + c->step_n; j++) {
            const trace_step_t *s = &rk->steps[j];
            trace_ref_t sr = {m.rank, j};
            if (s->send_peer >= 0 && s->send_peer != rk->rank)
                PUSH(l, n, cap, ((link_t){sr, rk->rank, s->send_peer, s->channel, 0, s->index}));
            if (s->recv_peer >= 0 && s->recv_peer != rk->rank)
                PUSH(l, n, cap, ((link_t){sr, s->recv_peer, rk->rank, s->channel, 1, s->index}));
        }
    }
    pair_links(l, n, flow_pair, NULL, b);
    free(l);
}

static void attach_steps(trace_rank_t *r)
{
    size_t j = 0;
    for (size_t i = 0; i < r->ncalls; i++) {
        trace_call_t *c = &r->calls[i];
        while (j < r->nsteps && r->steps[j].id < c->id)
            j++;
        c->step_first = j;
        while (j < r->nsteps && r->steps[j].id == c->id)
            j++;
        c->step_n = j - c->step_first;
    }
}

static void find_missing(trace_set_t *set)
{
    size_t cap = 0;
    for (size_t i = 0; i < set->nranks;) {
        size_t e = i;
        int n = 0;
        while (e < set->nranks && !strcmp(set->ranks[e].comm, set->ranks[i].comm)) {
            n = set->ranks[e].nranks > n ? set->ranks[e].nranks : n;
            e++;
        }
        set->ncomms++;
        size_t k = i;
        for (int rank = 0; rank < n; rank++) {
            if (k < e && set->ranks[k].rank == rank) {
                k++;
                continue;
            }
            trace_missing_t m = {.rank = rank};
            memcpy(m.comm, set->ranks[i].comm, sizeof(m.comm));
            PUSH(set->missing, set->nmissing, cap, m);
        }
        i = e;
    }
    for (size_t i = 0; i < set->nmissing;) {
        size_t e = i;
        fprintf(stderr, "orbit-trace: warning: comm %s: no trace from rank", set->missing[i].comm);
        for (; e < set->nmissing && !strcmp(set->missing[e].comm, set->missing[i].comm); e++)
            fprintf(stderr, "%s %d", e == i ? "" : ",", set->missing[e].rank);
        fprintf(stderr, " (the process died before writing, or its file is elsewhere); its calls are left out\n");
        i = e;
    }
}

int trace_set_match(trace_set_t *set)
{
    g_set = set;
    build_t b = {.set = set};
    set->t_min = INT64_MAX;
    set->t_max = INT64_MIN;
    trace_ref_t *refs = NULL;
    link_t *links = NULL;
    size_t nrefs = 0, rcap = 0, nlinks = 0, lcap = 0;
    for (size_t i = 0; i < set->nranks; i++) {
        trace_rank_t *r = &set->ranks[i];
        attach_steps(r);
        for (size_t j = 0; j < r->ncalls; j++) {
            trace_call_t *c = &r->calls[j];
            if (c->t1 < c->t0) /* a call that never finished: keep it visible, zero long */
                c->t1 = c->t0;
            set->t_min = c->t0 < set->t_min ? c->t0 : set->t_min;
            set->t_max = c->t1 > set->t_max ? c->t1 : set->t_max;
            trace_ref_t ref = {(int)i, j};
            if (!strcmp(c->coll, "send"))
                PUSH(links, nlinks, lcap, ((link_t){ref, r->rank, c->root, -1, 0, c->id}));
            else if (!strcmp(c->coll, "recv"))
                PUSH(links, nlinks, lcap, ((link_t){ref, c->root, r->rank, -1, 1, c->id}));
            else if (c->seq >= 0)
                PUSH(refs, nrefs, rcap, ref);
        }
        for (size_t j = 0; j < r->nsteps; j++) {
            trace_step_t *s = &r->steps[j];
            if (s->t1 < s->t0)
                s->t1 = s->t0;
            set->t_min = s->t0 < set->t_min ? s->t0 : set->t_min;
            set->t_max = s->t1 > set->t_max ? s->t1 : set->t_max;
        }
    }
    if (set->t_min > set->t_max)
        set->t_min = set->t_max = 0;

    trace_sort(refs, nrefs, sizeof(*refs), coll_ref_cmp);
    for (size_t i = 0; i < nrefs;) {
        size_t e = i + 1, k = i + 1;
        while (e < nrefs && !strcmp(set->ranks[refs[e].rank].comm, set->ranks[refs[i].rank].comm) &&
               call_of(refs[e])->seq == call_of(refs[i])->seq) {
            if (refs[e].rank == refs[k - 1].rank)
                fprintf(stderr, "orbit-trace: warning: %s: two calls with seq %lld; using the first\n",
                        set->ranks[refs[e].rank].path, (long long)call_of(refs[e])->seq);
            else
                refs[k++] = refs[e];
            e++;
        }
        add_group(&b, &refs[i], k - i);
        i = e;
    }
    pair_links(links, nlinks, p2p_pair, p2p_single, &b);
    for (size_t i = 0; i < set->ngroups; i++)
        if (set->groups[i].n >= 2)
            group_flows(&b, &set->groups[i]);
    free(refs);
    free(links);
    find_missing(set);
    return 0;
}
