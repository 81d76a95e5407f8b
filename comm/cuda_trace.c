/* Device steps for the tracer (cuda_trace.h). */
#include "comm/cuda_trace.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/comm_trace.h"
#include "comm/cuda_comm.h"
#include "core/log.h"
#include "core/trace.h"

#define SLOTS 64 /* launches in flight that can be traced; more are dropped, never waited for */
#define BLOCKS (ORB_CUDA_MAX_OPS * ORB_MAX_CHANNELS)
#define PROBES 3 /* clock probes; the one with the shortest round trip wins */

enum { SLOT_FREE = 0, SLOT_STAGED, SLOT_PENDING };

typedef struct {
    uint64_t id, bytes; /* the call's trace id; the lane's bytes */
    int16_t channel;
} lane_t;

typedef struct {
    int state, nblocks;
    cudaEvent_t done; /* recorded after the launch: the stamps may be read once it completes */
    lane_t lane[BLOCKS];
} slot_t;

struct orb_cuda_trace {
    unsigned long long *host, *dev; /* SLOTS * 2 * BLOCKS stamps, then the clock probe's word */
    slot_t slot[SLOTS];
    uint64_t head, tail; /* launches recorded / read: pending slots are [tail, head) mod SLOTS */
    int64_t offset_ns, err_ns; /* CLOCK_MONOTONIC = device clock + offset_ns, within err_ns */
};

static unsigned long long *slot_stamps(unsigned long long *base, uint64_t i)
{
    return base + (size_t)(i % SLOTS) * 2 * BLOCKS;
}

/* offset = host midpoint - device stamp, from the probe with the shortest round trip (its
 * half is the error bound: the stamp was taken somewhere inside it). */
static orb_status_t measure_clock(struct orb_cuda_trace *t, cudaStream_t stream, char *err, size_t errlen)
{
    unsigned long long *h = t->host + (size_t)SLOTS * 2 * BLOCKS, *d = t->dev + (size_t)SLOTS * 2 * BLOCKS;
    int64_t best = INT64_MAX;
    for (int i = 0; i < PROBES; i++) {
        __atomic_store_n(h, 0ull, __ATOMIC_RELAXED);
        const int64_t a = orb_trace_mono_ns();
        orb_status_t st = orb_cuda_exec_clock(d, stream, err, errlen);
        if (st != ORB_OK)
            return st;
        cudaError_t rc = cudaStreamSynchronize(stream);
        const int64_t b = orb_trace_mono_ns();
        const unsigned long long stamp = __atomic_load_n(h, __ATOMIC_ACQUIRE);
        if (rc != cudaSuccess || stamp == 0) {
            snprintf(err, errlen, "the clock probe did not complete: %s", cudaGetErrorString(rc));
            (void)cudaGetLastError();
            return ORB_ERR_CUDA;
        }
        if (b - a < best) {
            best = b - a;
            t->offset_ns = a + (b - a) / 2 - (int64_t)stamp;
            t->err_ns = (b - a + 1) / 2;
        }
    }
    return ORB_OK;
}

void orb_cuda_trace_prepare(struct orb_comm *c, struct orb_cuda_state *s)
{
    if (s->trace || s->trace_failed)
        return;
    char err[256] = "out of memory";
    struct orb_cuda_trace *t = calloc(1, sizeof *t);
    int nev = 0;
    cudaError_t rc = cudaSuccess;
    const size_t bytes = ((size_t)SLOTS * 2 * BLOCKS + 1) * sizeof *t->host;
    if (!t)
        goto fail;
    /* mapped pinned memory: the kernels write it, the host reads it without a copy */
    if ((rc = cudaHostAlloc((void **)&t->host, bytes, cudaHostAllocMapped)) != cudaSuccess ||
        (rc = cudaHostGetDevicePointer((void **)&t->dev, t->host, 0)) != cudaSuccess)
        goto fail_rc;
    memset(t->host, 0, bytes);
    for (; nev < SLOTS; nev++)
        if ((rc = cudaEventCreateWithFlags(&t->slot[nev].done, cudaEventDisableTiming)) != cudaSuccess)
            goto fail_rc;
    if (measure_clock(t, s->internal, err, sizeof err) != ORB_OK)
        goto fail;
    ORB_INFO("rank %d: device steps traced; device clock + %lld ns = CLOCK_MONOTONIC (within %lld ns)", c->rank,
             (long long)t->offset_ns, (long long)t->err_ns);
    s->trace = t;
    return;
fail_rc:
    snprintf(err, sizeof err, "%s (%s)", cudaGetErrorString(rc), cudaGetErrorName(rc));
    (void)cudaGetLastError();
fail:
    ORB_WARN("rank %d: cannot trace device steps (%s): device calls are traced as calls only", c->rank, err);
    s->trace_failed = 1;
    if (t) {
        while (nev > 0)
            cudaEventDestroy(t->slot[--nev].done);
        if (t->host)
            cudaFreeHost(t->host);
        free(t);
    }
}

/* Slot tail's stamps become step records (or dropped ones, for a block that left none). */
static void read_slot(struct orb_comm *c, struct orb_cuda_trace *t)
{
    slot_t *sl = &t->slot[t->tail % SLOTS];
    const unsigned long long *st = slot_stamps(t->host, t->tail);
    uint64_t dropped = 0;
    for (int b = 0; b < sl->nblocks; b++) {
        const unsigned long long t0 = st[2 * b], t1 = st[2 * b + 1];
        if (!t0 || !t1) {
            dropped++;
            continue;
        }
        orb_comm_trace_kernel(c, sl->lane[b].id, sl->lane[b].channel, sl->lane[b].bytes,
                              (int64_t)t0 + t->offset_ns, (int64_t)t1 + t->offset_ns);
    }
    if (dropped)
        orb_comm_trace_kernel_dropped(c, dropped);
    sl->state = SLOT_FREE;
    t->tail++;
}

void orb_cuda_trace_collect(struct orb_comm *c, struct orb_cuda_state *s, int wait)
{
    struct orb_cuda_trace *t = s->trace;
    while (t && t->tail < t->head) {
        slot_t *sl = &t->slot[t->tail % SLOTS];
        cudaError_t rc = wait ? cudaEventSynchronize(sl->done) : cudaEventQuery(sl->done);
        if (rc == cudaErrorNotReady && !wait)
            return;
        if (rc != cudaSuccess) { /* a failed launch: its stamps say nothing */
            (void)cudaGetLastError();
            orb_comm_trace_kernel_dropped(c, (uint64_t)sl->nblocks);
            sl->nblocks = 0;
        }
        read_slot(c, t);
    }
}

void orb_cuda_trace_stage(struct orb_comm *c, struct orb_cuda_state *s, const orb_prepared_t *k, int n,
                          orb_cuda_launch_t *L, int capturing)
{
    L->stamps = NULL;
    /* a captured launch replays any number of times, with no host step to read it after */
    if (capturing || !orb_comm_trace_steps_on(c))
        return;
    orb_cuda_trace_prepare(c, s);
    struct orb_cuda_trace *t = s->trace;
    if (!t)
        return;
    orb_cuda_trace_collect(c, s, 0);
    const int blocks = orb_cuda_exec_blocks(L);
    if (t->head - t->tail == SLOTS || blocks > BLOCKS) {
        orb_comm_trace_kernel_dropped(c, (uint64_t)blocks);
        return;
    }
    slot_t *sl = &t->slot[t->head % SLOTS];
    int b = 0;
    /* block order as exec_kernel decodes it: op after op, channel after channel */
    for (int i = 0; i < n; i++)
        for (int ch = 0; ch < L->ops[i].nlanes; ch++, b++) {
            const orb_lane_t *lane = &k[i].plan->lanes[ch];
            uint64_t bytes = 0;
            for (size_t j = 0; j < lane->nsteps; j++)
                bytes += (uint64_t)lane->steps[j].count * L->ops[i].esize;
            sl->lane[b] = (lane_t){.id = k[i].trace_id, .bytes = bytes, .channel = (int16_t)ch};
        }
    sl->nblocks = b;
    sl->state = SLOT_STAGED;
    unsigned long long *h = slot_stamps(t->host, t->head);
    memset(h, 0, (size_t)b * 2 * sizeof *h);
    L->stamps = slot_stamps(t->dev, t->head);
}

void orb_cuda_trace_commit(struct orb_cuda_state *s, cudaStream_t stream, int launched)
{
    struct orb_cuda_trace *t = s->trace;
    slot_t *sl = t ? &t->slot[t->head % SLOTS] : NULL;
    if (!sl || sl->state != SLOT_STAGED)
        return;
    if (launched && cudaEventRecord(sl->done, stream) == cudaSuccess) {
        sl->state = SLOT_PENDING;
        t->head++;
        return;
    }
    (void)cudaGetLastError();
    sl->state = SLOT_FREE; /* the next launch takes it */
}

void orb_cuda_trace_free(struct orb_cuda_state *s)
{
    struct orb_cuda_trace *t = s->trace;
    if (!t)
        return;
    for (int i = 0; i < SLOTS; i++)
        cudaEventDestroy(t->slot[i].done);
    cudaFreeHost(t->host);
    free(t);
    s->trace = NULL;
}
