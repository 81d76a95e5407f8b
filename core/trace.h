/* The tracer's records and rings, and its clock. Recording must cost next to nothing on the
 * hot path: a record is a few stores into a ring allocated up front (no I/O, no allocation),
 * and time is read as raw ticks (the TSC on x86-64), turned into nanoseconds only when the
 * ring is written out. The comm layer fills and writes the rings (comm/comm_trace.c); the
 * CPU executor adds the step records (collectives/exec_cpu.c). */
#ifndef ORB_CORE_TRACE_H
#define ORB_CORE_TRACE_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

/* Raw ticks: the TSC where the CPU has one (about 20 ns to read against clock_gettime's 25-60
 * ns here), else CLOCK_MONOTONIC nanoseconds. orb_trace_clock_t maps them to nanoseconds. */
static inline int64_t orb_trace_ticks(void)
{
#if defined(__x86_64__) || defined(__i386__)
    return (int64_t)__rdtsc();
#else
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
#endif
}

static inline int64_t orb_trace_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Two (ticks, CLOCK_MONOTONIC) pairs, taken when recording starts and when it is written:
 * ticks between them map linearly to nanoseconds (the TSC runs at a constant rate on every
 * CPU this project lands on: constant_tsc). */
typedef struct {
    int64_t tick0, ns0, tick1, ns1;
} orb_trace_clock_t;

void orb_trace_clock_start(orb_trace_clock_t *k);
/* Takes the second pair: ticks up to now convert from here on. */
void orb_trace_clock_finish(orb_trace_clock_t *k);
int64_t orb_trace_clock_ns(const orb_trace_clock_t *k, int64_t ticks);

/* One call as the tracer and the flight recorder keep it. */
typedef struct {
    uint64_t id;       /* this rank's call counter on the communicator */
    int64_t seq;       /* collective sequence number (the same on every rank); -1: send/recv */
    int64_t t_start, t_end; /* ticks; t_end 0 while the call runs */
    uint64_t count, bytes;
    int32_t coll, dtype, op, root;
    int32_t status;    /* orb_status_t once ended */
    int16_t algo, nchannels;
    uint8_t device;    /* ran on the device path */
    uint8_t transports; /* bit i: orb_transports[i] carried part of it */
    uint8_t group;     /* queued in an orb_group_start/end */
    uint8_t ended;
} orb_trace_call_t;

/* One plan step of one channel (ORBIT_TRACE_STEPS=1). */
typedef struct {
    uint64_t id; /* the call's */
    int64_t t_start, t_end, move, reduce; /* ticks; move/reduce: time in the copy/reduce kernels */
    uint64_t bytes;
    int32_t index, send_peer, recv_peer;
    int16_t channel, kind; /* kind: orb_step_kind_t, or ORB_TRACE_STEP_KERNEL */
} orb_trace_step_t;

/* A device lane as one step (kernel start to end of one block): t_start/t_end are already
 * CLOCK_MONOTONIC nanoseconds (the kernel's stamps, aligned when read), not ticks. */
#define ORB_TRACE_STEP_KERNEL (-1)

/* A ring of fixed-size records: when full, the oldest are overwritten and counted. */
typedef struct {
    void *rec;
    size_t size, cap; /* record size, capacity in records */
    uint64_t head;    /* records ever pushed */
} orb_trace_ring_t;

int orb_trace_ring_init(orb_trace_ring_t *r, size_t size, size_t cap); /* 0 on success */
void orb_trace_ring_free(orb_trace_ring_t *r);

/* The slot of the next record (never NULL once initialised with cap > 0). */
static inline void *orb_trace_ring_push(orb_trace_ring_t *r)
{
    return (char *)r->rec + (size_t)(r->head++ % r->cap) * r->size;
}

/* Record i counted from the oldest still held (0 .. held-1). */
static inline size_t orb_trace_ring_held(const orb_trace_ring_t *r) { return r->head < r->cap ? (size_t)r->head : r->cap; }
static inline uint64_t orb_trace_ring_dropped(const orb_trace_ring_t *r) { return r->head - orb_trace_ring_held(r); }
static inline void *orb_trace_ring_at(const orb_trace_ring_t *r, size_t i)
{
    uint64_t first = r->head - orb_trace_ring_held(r);
    return (char *)r->rec + (size_t)((first + i) % r->cap) * r->size;
}

/* What the CPU executor needs to record steps: the ring and, per running operation and
 * channel, the current step's timing so far. */
typedef struct {
    int64_t t_start, move, reduce;
} orb_trace_step_time_t;

typedef struct {
    orb_trace_ring_t ring;           /* of orb_trace_step_t */
    orb_trace_step_time_t *time;     /* [op * ORB_TRACE_MAX_CHANNELS + channel] */
    size_t time_ops;                 /* operations time has room for */
} orb_trace_steps_t;

#define ORB_TRACE_MAX_CHANNELS 8

#endif
