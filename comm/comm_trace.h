/* The tracer and the flight recorder of a communicator (docs/profiling.md).
 *
 * The flight recorder is always on: the last ORBIT_FLIGHT_CALLS calls, a few stores each.
 * When a call fails in a way that ends the communicator (timeout, mismatch, lost peer,
 * abort), every rank prints them after its error, so the user sees what each rank was doing.
 * The tracer (ORBIT_TRACE=DIR or orb_comm_trace_start) also keeps every call with its times
 * and, with ORBIT_TRACE_STEPS=1, each plan step per channel, in rings of fixed size; the rings
 * go to DIR/orbit-<comm>-r<rank>.trace when tracing stops, at destroy, at exit and on the
 * first error. Nothing is written or allocated on the hot path. */
#ifndef ORB_COMM_TRACE_H
#define ORB_COMM_TRACE_H

#include "comm/coll_call.h"
#include "core/trace.h"

/* A call's records while it runs (NULL where that recorder is off). */
typedef struct {
    orb_trace_call_t *flight, *trace;
    uint64_t id;
} orb_trace_mark_t;

/* At the end of init (every rank): the flight ring, and tracing when ORBIT_TRACE is set. */
void orb_comm_trace_setup(struct orb_comm *c);
/* At destroy: writes the trace if one runs, frees both recorders. */
void orb_comm_trace_teardown(struct orb_comm *c);

/* A call that is about to run (p planned and signed); sets p->trace_id. now: orb_trace_ticks(),
 * read by the caller once for all the calls of a group (they start and end together; a clock
 * read costs about 16 ns, as much as a tenth of a small call). */
void orb_comm_trace_begin(struct orb_comm *c, orb_prepared_t *p, int group, orb_trace_mark_t *m, int64_t now);
void orb_comm_trace_end(struct orb_comm *c, orb_trace_mark_t *m, orb_status_t st, int64_t now);
/* The plan cache is about to reuse plan's room for another plan. */
void orb_comm_trace_plan_gone(struct orb_comm *c, const orb_plan_t *plan);
/* Before the host executor runs n calls: room for their step timings (steps traced only). */
void orb_comm_trace_exec(struct orb_comm *c, int n);
/* Device steps (comm/cuda_trace.c): whether steps are traced; one lane of a device call that
 * ran from t_start_ns to t_end_ns (CLOCK_MONOTONIC); n lanes that could not be recorded. */
int orb_comm_trace_steps_on(const struct orb_comm *c);
void orb_comm_trace_kernel(struct orb_comm *c, uint64_t id, int channel, uint64_t bytes, int64_t t_start_ns,
                           int64_t t_end_ns);
void orb_comm_trace_kernel_dropped(struct orb_comm *c, uint64_t n);
/* A call failed with st: when st ends the communicator, print the flight recorder after the
 * error (once) and write the trace. */
void orb_comm_trace_failed(struct orb_comm *c, orb_status_t st);

#endif
