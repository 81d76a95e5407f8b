/* orb_comm_split and orb_comm_dup: child communicators (ncclCommSplit semantics).
 *
 * The ranks agree over the parent's own connections, in two all-gathers that run as the
 * collective ORB_COLL_COMM_SPLIT (an all-gather's plan under an identity of its own: a rank
 * that calls anything else meanwhile meets a mismatch that names the split, on every rank):
 *   1. every rank's (color, key): each rank works out its group and its rank in it;
 *   2. the first rank of each group makes a unique id (orb_get_unique_id) and every rank
 *      learns its group's.
 * Each member then runs the normal init (orb_comm_start) from that id with its parent's
 * settings, so the child has boxes, shared memory and connections of its own and lives on
 * when the parent is destroyed.
 *
 * Sockets a split opens, all inside this host's interface set (ORBIT_SOCKET_IFNAME): the first
 * rank of each group listens for the child's rendezvous (closed once every member arrived) and
 * keeps one bootstrap socket per member (barriers, liveness), each other member one to it; and
 * as in every init, each rank's TCP transport listens until it knows whether a peer is on
 * another host (then one set of data sockets per such peer). Ranks of one host talk through
 * shared memory only. No socket is visible to the user: there is no new rendezvous to arrange. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/coll_call.h"
#include "comm/comm_impl.h"
#include "comm/cuda_hooks.h"
#include "core/log.h"

/* Exchange 2: the group's id, from its first rank; status says whether that rank made one. */
typedef struct {
    orb_unique_id_t id;
    int32_t status;
    int32_t pad;
} split_id_t;

/* Everything a child takes from its parent, in this one place: the settings the parent
 * started with (not the registry's values now: a child behaves as its parent does) and the
 * per-communicator switches. A new per-communicator setting is one more line here. */
static void inherit_settings(struct orb_comm *child, const struct orb_comm *parent)
{
    child->nchannels = parent->nchannels;
    child->nslots = parent->nslots;
    child->nsmall = parent->nsmall;
    child->release_batch = parent->release_batch;
    child->slot_bytes = parent->slot_bytes;
    child->timeout_s = parent->timeout_s;
    child->check_signatures = parent->check_signatures;
    child->local_rank = parent->local_rank; /* the process's place on its host, not the comm's */
    /* per-communicator switches (orb_comm_set_*) */
    child->deterministic = parent->deterministic;
}

/* One all-gather of ORB_COLL_COMM_SPLIT over the parent. */
static orb_status_t exchange(struct orb_comm *c, const char *fn, const char *what, const void *mine, void *all,
                             size_t count, orb_dtype_t dtype)
{
    orb_call_t k = {.coll = ORB_COLL_COMM_SPLIT, .sendbuf = mine, .recvbuf = all, .count = count, .dtype = dtype,
                    .op = ORB_SUM};
    orb_status_t st = orb_coll_enter(c, &k, NULL);
    if (st != ORB_OK) {
        char why[ORB_ERRMSG_BYTES];
        snprintf(why, sizeof why, "%s", c->last_error);
        orb_comm_fail(c, st, "%s: rank %d: %s over the parent failed: %.*s", fn, c->rank, what,
                      ORB_ERRMSG_BYTES - 160, why);
    }
    return st;
}

/* Does parent rank a come before parent rank b in their group? By key, ties by parent rank. */
static int before(const int32_t *cards, int a, int b)
{
    return cards[2 * a + 1] < cards[2 * b + 1] || (cards[2 * a + 1] == cards[2 * b + 1] && a < b);
}

static orb_status_t split(orb_comm_t c, int color, int key, orb_comm_t *newcomm, const char *fn)
{
    if (!newcomm)
        return orb_comm_fail(c, ORB_ERR_INVALID_ARG, "%s: rank %d: newcomm (the output pointer) is NULL; pass the "
                             "address of an orb_comm_t", fn, c->rank);
    *newcomm = NULL;
    if (color < ORB_SPLIT_NOCOLOR)
        return orb_comm_fail(c, ORB_ERR_INVALID_ARG, "%s: rank %d: color=%d is negative; pass a color >= 0, or "
                             "ORB_SPLIT_NOCOLOR (-1) to join no group", fn, c->rank, color);
    if (orb_group_open())
        return orb_comm_fail(c, ORB_ERR_INVALID_ARG, "%s: rank %d: called between orb_group_start and "
                             "orb_group_end; call it outside the group (it returns with the child made)", fn, c->rank);

    const int n = c->nranks;
    int32_t *cards = malloc(sizeof(int32_t) * 2 * (size_t)n);
    split_id_t *ids = malloc(sizeof *ids * (size_t)n);
    if (!cards || !ids) {
        free(cards);
        free(ids);
        return orb_comm_fail(c, ORB_ERR_NO_MEMORY, "%s: rank %d: no memory for the colors of %d ranks", fn,
                             c->rank, n);
    }
    int32_t mine[2] = {color, key};
    orb_status_t st = exchange(c, fn, "agreeing on the groups", mine, cards, 2, ORB_INT32);
    if (st != ORB_OK)
        goto out;

    /* My group: its size, my rank in it, its first rank. Every rank computes the same. */
    int size = 0, rank = 0, first = -1, anyone = 0;
    for (int r = 0; r < n; r++) {
        anyone |= cards[2 * r] != ORB_SPLIT_NOCOLOR;
        if (color == ORB_SPLIT_NOCOLOR || cards[2 * r] != color)
            continue;
        size++;
        rank += before(cards, r, c->rank);
        if (first < 0 || before(cards, r, first))
            first = r;
    }
    if (!anyone) /* every rank knows: nobody needs an id */
        goto out;

    split_id_t me;
    memset(&me, 0, sizeof me);
    char why[ORB_ERRMSG_BYTES] = "";
    if (first == c->rank) {
        me.status = orb_get_unique_id(&me.id);
        if (me.status != ORB_OK)
            snprintf(why, sizeof why, "%s", orb_thread_error());
    }
    st = exchange(c, fn, "handing out the children's ids", &me, ids, sizeof me, ORB_UINT8);
    if (st != ORB_OK || color == ORB_SPLIT_NOCOLOR)
        goto out;
    if (ids[first].status != ORB_OK) {
        st = (orb_status_t)ids[first].status;
        if (first == c->rank)
            orb_comm_fail(c, st, "%s: rank %d: making the id of the child of color %d: %.*s", fn, c->rank, color,
                          ORB_ERRMSG_BYTES - 160, why);
        else
            orb_comm_fail(c, st, "%s: rank %d: rank %d, the first of the child of color %d, could not make its id "
                          "(%s); see that rank's error", fn, c->rank, first, color, orb_strerror(st));
        goto out;
    }

    struct orb_comm *child = calloc(1, sizeof *child);
    if (!child) {
        st = orb_comm_fail(c, ORB_ERR_NO_MEMORY, "%s: rank %d: out of memory for the child communicator", fn,
                           c->rank);
        goto out;
    }
    child->rank = rank;
    child->nranks = size;
    inherit_settings(child, c);
    st = orb_comm_start(child, &ids[first].id, why, sizeof why); /* frees child on failure */
    if (st != ORB_OK) {
        orb_comm_fail(c, st, "%s: rank %d (rank %d of %d in the child of color %d): %.*s", fn, c->rank, rank, size,
                      color, ORB_ERRMSG_BYTES - 160, why);
        goto out;
    }
    orb_cuda_comm_inherit(child, c);
    ORB_INFO("%s: rank %d is rank %d of %d in the child of color %d (key %d)", fn, c->rank, rank, size, color, key);
    *newcomm = child;
out:
    free(cards);
    free(ids);
    return st;
}

orb_status_t orb_comm_split(orb_comm_t comm, int color, int key, orb_comm_t *newcomm)
{
    orb_status_t st = orb_comm_check_handle(comm, "orb_comm_split");
    return st != ORB_OK ? st : split(comm, color, key, newcomm, "orb_comm_split");
}

orb_status_t orb_comm_dup(orb_comm_t comm, orb_comm_t *newcomm)
{
    orb_status_t st = orb_comm_check_handle(comm, "orb_comm_dup");
    return st != ORB_OK ? st : split(comm, 0, comm->rank, newcomm, "orb_comm_dup");
}
