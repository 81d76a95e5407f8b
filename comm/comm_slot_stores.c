/* How this rank writes pieces into its shared-memory peers' slots (orb_slot_stores_t,
 * collectives/slot_stores.h): ORBIT_SLOT_STORES, and in auto mode the floor under which an
 * ordinary copy says the peer's core is far: a third of the link rate the calibration measured
 * or cached. On a 2-core Zen 4 VM (docs/transports.md) the calibration measured 9-12 GB/s; copies
 * into a near core's slot ran at 25-45 GB/s from a source in cache and 8-22 GB/s from one in
 * memory, into a far core's at 2.3-2.5 GB/s whatever the source. Without a measured rate (ORBIT_CALIBRATE=0) auto keeps ordinary stores. Local to
 * each rank: the receiver reads both kinds alike. */
#include <stdio.h>
#include <string.h>

#include "collectives/slot_stores.h"
#include "comm/comm_impl.h"
#include "core/param.h"

orb_status_t orb_comm_slot_stores_setup(struct orb_comm *c, char *err, size_t errlen)
{
    const char *want = orb_param_str(ORB_PARAM_S_SLOT_STORES);
    uint8_t mode;
    if (!strcmp(want, "auto"))
        mode = ORB_SLOT_STORES_AUTO;
    else if (!strcmp(want, "cached"))
        mode = ORB_SLOT_STORES_CACHED;
    else if (!strcmp(want, "stream"))
        mode = ORB_SLOT_STORES_STREAM;
    else {
        snprintf(err, errlen, "ORBIT_SLOT_STORES=%s: not a way to write slots; use auto, cached or stream", want);
        return ORB_ERR_INVALID_ARG;
    }
    const float floor = c->shm_measured_how ? (float)(c->shm_measured.beta_gbps / ORB_SLOT_STORES_FLOOR_SHARE) : 0;
    for (int p = 0; p < c->nranks; p++) {
        if (p == c->rank || !orb_comm_peer_shm(c, p))
            continue;
        for (int ch = 0; ch < c->nchannels; ch++)
            c->send[(size_t)p * (size_t)c->nchannels + (size_t)ch].stores =
                (orb_slot_stores_t){.mode = mode, .floor_gbps = floor};
    }
    return ORB_OK;
}
