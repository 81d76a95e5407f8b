/* The choice between ordinary and non-temporal stores into shared-memory slots
 * (slot_stores.h). */
#include "slot_stores.h"

#include "core/median.h"

orb_slot_write_t orb_slot_stores_pick(orb_slot_stores_t *s, size_t bytes, int copy, uint64_t pos, uint32_t nslots)
{
    if (s->mode == ORB_SLOT_STORES_STREAM)
        return ORB_SLOT_WRITE_STREAM;
    if (s->mode != ORB_SLOT_STORES_AUTO || s->floor_gbps <= 0 || bytes < ORB_SLOT_STORES_MIN_PIECE)
        return ORB_SLOT_WRITE_CACHED;
    if (!s->far) {
        if (copy && ++s->since >= ORB_SLOT_STORES_NEAR_EVERY) {
            s->since = 0;
            return ORB_SLOT_WRITE_TIMED;
        }
        return ORB_SLOT_WRITE_CACHED;
    }
    if (s->probe && pos + 1 >= s->probe) { /* the lap's second copy: timed, if this is it */
        const int due = pos + 1 == s->probe && copy;
        s->probe = 0;
        if (due)
            return ORB_SLOT_WRITE_TIMED;
    }
    if (copy && !s->probe && ++s->since >= ORB_SLOT_STORES_FAR_EVERY) { /* the first, untimed */
        s->since = 0;
        s->probe = pos + nslots + 1;
        return ORB_SLOT_WRITE_CACHED;
    }
    return ORB_SLOT_WRITE_STREAM;
}

double orb_slot_stores_median(const orb_slot_stores_t *s)
{
    double v[sizeof s->gbps / sizeof s->gbps[0]];
    for (int i = 0; i < s->n; i++)
        v[i] = s->gbps[i];
    return orb_median(v, s->n);
}

int orb_slot_stores_sample(orb_slot_stores_t *s, double gbps)
{
    const int cap = (int)(sizeof s->gbps / sizeof s->gbps[0]);
    s->gbps[s->next] = (float)gbps;
    s->next = (uint8_t)((s->next + 1) % cap);
    if (s->n < cap)
        s->n++;
    if (s->n < 3) /* one slow copy is a preemption, not a far core */
        return 0;
    const uint8_t far = orb_slot_stores_median(s) < (double)s->floor_gbps;
    const int changed = far != s->far;
    s->far = far;
    if (changed) {
        s->since = 0;
        s->probe = 0;
    }
    return changed;
}
