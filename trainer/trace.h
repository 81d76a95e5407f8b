/* Timed events of one thread (compute or communication), for --profile: a Chrome trace and
 * a summary. Each trace has a single writer; nothing is shared until the run ends. */
#ifndef ORB_TRAIN_TRACE_H
#define ORB_TRAIN_TRACE_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

typedef enum {
    ORB_TRAIN_EV_DATA = 0,  /* batch assembly */
    ORB_TRAIN_EV_FORWARD,
    ORB_TRAIN_EV_BACKWARD,
    ORB_TRAIN_EV_WAIT,      /* compute thread blocked on gradient buckets: exposed communication */
    ORB_TRAIN_EV_OPTIMIZER,
    ORB_TRAIN_EV_ALLREDUCE, /* one bucket, on the communication thread */
    ORB_TRAIN_EV_BROADCAST,
    ORB_TRAIN_EV_REDUCE,
    ORB_TRAIN_EV_COUNT
} orb_train_ev_kind_t;

/* Flat int64 fields so traces of all ranks can be summed into rank 0 with one reduce. */
typedef struct {
    int64_t t0, dur; /* ns from the trace origin */
    int64_t bytes;   /* communication events */
    int64_t kind;
    int64_t step;
    int64_t bucket;  /* -1 when not a bucket */
} orb_train_event_t;

#define ORB_TRAIN_EVENT_FIELDS 6

typedef struct {
    int enabled;
    const char *lib_dir; /* communication trace: where the backend's own tracer writes (or NULL) */
    int64_t origin;
    orb_train_event_t *ev;
    size_t n, cap;
} orb_train_trace_t;

static inline int64_t orb_train_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Drops the event when recording is off or memory runs out (a profile must not end a run). */
void orb_train_trace_add(orb_train_trace_t *t, orb_train_ev_kind_t kind, int64_t t0, int64_t t1, int64_t bytes,
                         int64_t step, int64_t bucket);
void orb_train_trace_free(orb_train_trace_t *t);
const char *orb_train_ev_name(orb_train_ev_kind_t kind);

#endif
