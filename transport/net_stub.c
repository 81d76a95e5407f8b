/* Placeholder until the TCP transport lands: ranks on other hosts are refused clearly. */
#include <stdio.h>

#include "transport/net.h"

orb_status_t orb_net_create(orb_net_t **net, int rank, int nranks, int nchannels, uint32_t nslots,
                            size_t slot_bytes, const uint8_t *secret, const orb_net_callbacks_t *cb,
                            orb_card_t *card, char *err, size_t errlen)
{
    (void)rank, (void)nranks, (void)nchannels, (void)nslots, (void)slot_bytes, (void)secret, (void)cb, (void)card,
        (void)err, (void)errlen;
    *net = NULL;
    return ORB_OK;
}

orb_status_t orb_net_connect(orb_net_t *net, const orb_card_t *cards, const int *peers, int npeers,
                             orb_conn_t *send, orb_conn_t *recv, double deadline, char *err, size_t errlen)
{
    (void)net, (void)send, (void)recv, (void)deadline;
    if (npeers == 0)
        return ORB_OK;
    snprintf(err, errlen, "rank %d runs on another host (%s): this build has no network transport", peers[0],
             cards[peers[0]].hostname);
    return ORB_ERR_UNSUPPORTED;
}

orb_status_t orb_net_check(orb_net_t *net, int *lost)
{
    (void)net, (void)lost;
    return ORB_OK;
}

void orb_net_post_error(orb_net_t *net, int peer, orb_status_t st, const char *msg)
{
    (void)net, (void)peer, (void)st, (void)msg;
}

void orb_net_destroy(orb_net_t *net) { (void)net; }
