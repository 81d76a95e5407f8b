/* The tracer's rings and its tick clock (core/trace.h). */
#include "core/trace.h"

#include <stdlib.h>

void orb_trace_clock_start(orb_trace_clock_t *k)
{
    k->tick0 = orb_trace_ticks();
    k->ns0 = orb_trace_mono_ns();
    k->tick1 = k->ns1 = 0;
}

void orb_trace_clock_finish(orb_trace_clock_t *k)
{
    /* No minimum span: every record lies between the two pairs, so the rate's error (the
     * clock reads' jitter over the span) moves none by more than that jitter, ~100 ns. */
    k->tick1 = orb_trace_ticks();
    k->ns1 = orb_trace_mono_ns();
}

int64_t orb_trace_clock_ns(const orb_trace_clock_t *k, int64_t ticks)
{
    if (ticks == 0)
        return 0;
    const int64_t dt = k->tick1 - k->tick0;
    if (dt <= 0)
        return k->ns0;
    const double rate = (double)(k->ns1 - k->ns0) / (double)dt;
    return k->ns0 + (int64_t)((double)(ticks - k->tick0) * rate);
}

int orb_trace_ring_init(orb_trace_ring_t *r, size_t size, size_t cap)
{
    r->size = size;
    r->cap = cap;
    r->head = 0;
    r->rec = cap ? calloc(cap, size) : NULL;
    return cap && !r->rec ? -1 : 0;
}

void orb_trace_ring_free(orb_trace_ring_t *r)
{
    free(r->rec);
    r->rec = NULL;
    r->cap = r->head = 0;
}
