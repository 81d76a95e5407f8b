#include "trace.h"

#include <stdlib.h>

static const char *const ev_names[ORB_TRAIN_EV_COUNT] = {
    "data", "forward", "backward", "wait", "optimizer", "allreduce", "broadcast", "reduce",
};

const char *orb_train_ev_name(orb_train_ev_kind_t kind)
{
    return kind >= 0 && kind < ORB_TRAIN_EV_COUNT ? ev_names[kind] : "?";
}

void orb_train_trace_add(orb_train_trace_t *t, orb_train_ev_kind_t kind, int64_t t0, int64_t t1, int64_t bytes,
                         int64_t step, int64_t bucket)
{
    if (!t || !t->enabled)
        return;
    if (t->n == t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 4096;
        orb_train_event_t *ev = realloc(t->ev, cap * sizeof *ev);
        if (!ev)
            return;
        t->ev = ev;
        t->cap = cap;
    }
    t->ev[t->n++] = (orb_train_event_t){t0 - t->origin, t1 - t0, bytes, kind, step, bucket};
}

void orb_train_trace_free(orb_train_trace_t *t)
{
    free(t->ev);
    t->ev = NULL;
    t->n = t->cap = 0;
}
