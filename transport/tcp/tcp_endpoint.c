/* The TCP transport as the communicator sees it: orb_tcp_* behind the endpoint ops table.
 * Data arriving or a slot freeing wakes this rank through its box; an error a remote peer reports goes
 * into it, where the executor looks. */
#include <stdio.h>
#include <stdlib.h>

#include "transport/endpoint.h"
#include "transport/tcp/tcp.h"

typedef struct {
    orb_tcp_t *tcp;
    orb_box_t *box;
    int rank;
    const orb_card_t *cards;
} tcp_ep_t;

static void on_wake(void *arg) { orb_box_wake(((tcp_ep_t *)arg)->box); }

static void on_error(void *arg, int from, orb_status_t st, const char *msg)
{
    tcp_ep_t *t = arg;
    orb_box_post(t->box, from, st, msg);
}

static void tcp_ep_destroy(orb_endpoint_t *ep)
{
    tcp_ep_t *t = (tcp_ep_t *)ep;
    if (!t)
        return;
    orb_tcp_destroy(t->tcp);
    free(t);
}

static orb_status_t tcp_ep_create(orb_endpoint_t **out, const orb_transport_args_t *a, orb_card_t *card, char *err,
                                  size_t errlen)
{
    *out = NULL;
    tcp_ep_t *t = calloc(1, sizeof *t);
    if (!t)
        return ORB_ERR_NO_MEMORY;
    t->box = a->box;
    t->rank = a->rank;
    orb_tcp_callbacks_t cb = {.wake = on_wake, .on_error = on_error, .arg = t};
    orb_status_t st = orb_tcp_create(&t->tcp, a->rank, a->nranks, a->nchannels, a->nslots, a->slot_bytes, a->secret,
                                     &cb, card, err, errlen);
    if (st != ORB_OK) {
        free(t);
        return st;
    }
    *out = (orb_endpoint_t *)t;
    return ORB_OK;
}

static int tcp_ep_reaches(const orb_card_t *me, const orb_card_t *peer)
{
    (void)me, (void)peer;
    return 1; /* any pair; whether this host can listen is told at connect */
}

static orb_status_t tcp_ep_connect(orb_endpoint_t *ep, const orb_card_t *cards, const int *peers, int npeers,
                                   orb_conn_t *send, orb_conn_t *recv, double deadline, char *err, size_t errlen)
{
    tcp_ep_t *t = (tcp_ep_t *)ep;
    t->cards = cards;
    return orb_tcp_connect(t->tcp, cards, peers, npeers, send, recv, deadline, err, errlen);
}

static void tcp_ep_ready(orb_endpoint_t *ep) { (void)ep; /* the listener closed at connect */ }

static void tcp_ep_post_error(orb_endpoint_t *ep, int peer, orb_status_t st, const char *msg)
{
    orb_tcp_post_error(((tcp_ep_t *)ep)->tcp, peer, st, msg);
}

/* The bootstrap socket cannot tell a crash from a rank that finished first and left; the
 * transport can (a goodbye before its sockets close). */
static orb_status_t tcp_ep_check_alive(orb_endpoint_t *ep, const int *waiting_on, int n, int *lost, char *err,
                                       char *note, size_t len)
{
    (void)waiting_on, (void)n;
    tcp_ep_t *t = (tcp_ep_t *)ep;
    note[0] = 0;
    int who = -1;
    if (orb_tcp_check(t->tcp, &who) == ORB_OK || who < 0)
        return ORB_OK;
    *lost = who;
    snprintf(err, len, "rank %d (on %s) closed its connection to rank %d: it died or left", who,
             t->cards[who].hostname, t->rank);
    snprintf(note, len, "rank %d (on %s) died or left (noticed by rank %d)", who, t->cards[who].hostname, t->rank);
    return ORB_ERR_PEER_LOST;
}

static void tcp_ep_abort(orb_endpoint_t *ep) { orb_tcp_set_aborted(((tcp_ep_t *)ep)->tcp); }

/* One TCP connection between hosts: defaults for a 10-25 GbE class link until measured. */
const orb_transport_t orb_tcp_transport = {
    .name = "tcp",
    .link = {.alpha_us = 25.0, .beta_gbps = 1.2},
    .create = tcp_ep_create,
    .reaches = tcp_ep_reaches,
    .connect = tcp_ep_connect,
    .ready = tcp_ep_ready,
    .post_error = tcp_ep_post_error,
    .check_alive = tcp_ep_check_alive,
    .abort = tcp_ep_abort,
    .destroy = tcp_ep_destroy,
};
