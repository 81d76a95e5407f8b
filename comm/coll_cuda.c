/* Device buffers: the device executor's side of a call (coll_cuda.h). The front end
 * (coll_front.c) has checked, planned and signed it; here its buffers become device-accessible
 * pointers, the host plan (the same plans the CPU executor runs) gets its device copy, and
 * one kernel runs the calls of one communicator: nothing waits on the host, so calls can be
 * captured in a CUDA graph. With a NULL stream the call runs on the communicator's own stream
 * and returns when it is done. Kernels report failures through the control page, which the
 * next call reads (cuda_comm.c). */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "comm/coll_call.h"
#include "comm/coll_cuda.h"
#include "comm/cuda_comm.h"
#include "comm/cuda_hooks.h"
#include "comm/cuda_trace.h"
#include "core/dtype.h"
#include "core/loader.h"
#include "core/log.h"
#include "core/param.h"

/* ---- device or host memory -------------------------------------------------------------------- */

#ifdef ORB_CUDA_EMU
/* The CPU emulator (tools/cuda_emu) has no driver API and no contexts: its runtime answers. */
static int is_device_ptr(const void *p)
{
    struct cudaPointerAttributes a;
    if (!p)
        return 0;
    if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged;
}

int orb_cuda_any_device_ptr(const void *a, const void *b) { return is_device_ptr(a) || is_device_ptr(b); }
#else
/* Every host collective asks this, so it must not create a CUDA context on a machine with a
 * GPU (seconds and hundreds of MiB per process). A process that never loaded libcuda cannot
 * hold device memory; one that did is asked through the driver, which needs no context. */
typedef CUresult (*pointer_attr_fn)(void *data, CUpointer_attribute attribute, CUdeviceptr ptr);
static pointer_attr_fn pointer_attr;

/* The driver's entry point, or NULL while libcuda is not loaded: then no pointer can be
 * device memory. Asked once a call: while nothing was loaded since libcuda was last found
 * absent, a load and a compare say so (core/loader.h); otherwise the loader's generation,
 * unchanged, says libcuda is still absent, which lets a host-only process skip the dlopen
 * below (glibc searches the library path even with RTLD_NOLOAD: tens of microseconds). */
static pointer_attr_fn driver_attr(void)
{
    static unsigned long long no_cuda_at = ~0ull; /* loader generation when libcuda was absent */
    pointer_attr_fn f = __atomic_load_n(&pointer_attr, __ATOMIC_ACQUIRE);
    if (!f) {
        if (orb_loader_unchanged())
            return NULL;
        unsigned long long gen = orb_loader_generation();
        if (gen == __atomic_load_n(&no_cuda_at, __ATOMIC_RELAXED)) {
            orb_loader_mark(gen); /* once a generation; a no-op after */
            return NULL;
        }
        void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD); /* never loads it */
        if (!h) {
            __atomic_store_n(&no_cuda_at, gen, __ATOMIC_RELAXED);
            orb_loader_mark(gen);
            return NULL;
        }
        f = (pointer_attr_fn)dlsym(h, "cuPointerGetAttribute"); /* h stays open: f must stay valid */
        if (f)
            __atomic_store_n(&pointer_attr, f, __ATOMIC_RELEASE);
    }
    return f;
}

static int is_device_ptr(pointer_attr_fn f, const void *p)
{
    if (!p)
        return 0;
    unsigned int type = 0;
    CUresult rc = f(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)(uintptr_t)p);
    if (rc == CUDA_SUCCESS)
        return type == CU_MEMORYTYPE_DEVICE;
    if (rc == CUDA_ERROR_INVALID_VALUE || rc == CUDA_ERROR_NOT_INITIALIZED)
        return 0; /* not memory CUDA knows */
    struct cudaPointerAttributes a; /* anything else: the runtime sorts it out */
    if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged;
}

int orb_cuda_any_device_ptr(const void *a, const void *b)
{
    if (!a && !b)
        return 0;
    pointer_attr_fn f = driver_attr();
    return f && (is_device_ptr(f, a) || is_device_ptr(f, b));
}
#endif

/* ---- admitting calls: setup and device views ------------------------------------------------ */

/* The pointer the kernels use for a user buffer: device memory of the communicator's GPU,
 * managed memory, or mapped pinned host memory. */
static orb_status_t device_view(struct orb_comm *c, struct orb_cuda_state *s, const orb_prepared_t *p,
                                const char *which, const void *ptr, const char **out)
{
    const char *fn = orb_coll_fn_name(p->a.coll);
    struct cudaPointerAttributes a;
    cudaError_t rc = cudaPointerGetAttributes(&a, ptr);
    if (rc != cudaSuccess) {
        (void)cudaGetLastError();
        a.type = cudaMemoryTypeUnregistered;
    }
    const char *d = NULL;
    switch (a.type) {
    case cudaMemoryTypeDevice:
        if (a.device != s->device)
            return orb_comm_fail(c, ORB_ERR_INVALID_ARG,
                                 "%s: rank %d: %s %p is memory of GPU %d, but this communicator runs on GPU %d "
                                 "(cudaSetDevice before allocating, or bind the communicator to GPU %d)",
                                 fn, c->rank, which, ptr, a.device, s->device, a.device);
        d = ptr;
        break;
    case cudaMemoryTypeManaged:
        d = ptr;
        break;
    case cudaMemoryTypeHost:
        if (!a.devicePointer)
            return orb_comm_fail(c, ORB_ERR_INVALID_ARG,
                                 "%s: rank %d: %s %p is pinned host memory without a device mapping "
                                 "(cudaHostAllocMapped / cudaHostRegisterMapped)",
                                 fn, c->rank, which, ptr);
        d = a.devicePointer;
        break;
    default:
        return orb_comm_fail(c, ORB_ERR_INVALID_ARG,
                             "%s: rank %d: %s %p is neither device memory nor pinned host memory (pageable host "
                             "memory, or a buffer already freed): pass cudaMalloc'd buffers with a stream, or host "
                             "buffers with a NULL stream",
                             fn, c->rank, which, ptr);
    }
    if ((uintptr_t)d % orb_dtype_bytes(p->a.dtype) != 0)
        return orb_comm_fail(c, ORB_ERR_INVALID_ARG, "%s: rank %d: %s %p is not aligned to its %s elements", fn,
                             c->rank, which, ptr, orb_dtype_name(p->a.dtype));
    *out = d;
    return ORB_OK;
}

/* The device of the first device buffer among c's calls in p[0..n), -1 if none. */
static int buffer_device(struct orb_comm *c, const orb_prepared_t *p, int n)
{
    for (int i = 0; i < n; i++) {
        const void *bufs[2] = {p[i].a.sendbuf, p[i].a.recvbuf};
        for (int j = 0; j < 2 && p[i].comm == c; j++) {
            struct cudaPointerAttributes a;
            if (!bufs[j])
                continue;
            if (cudaPointerGetAttributes(&a, bufs[j]) != cudaSuccess) {
                (void)cudaGetLastError();
                continue;
            }
            if (a.type == cudaMemoryTypeDevice)
                return a.device;
        }
    }
    return -1;
}

static orb_status_t ensure_setup(struct orb_comm *c, const orb_prepared_t *p, int n)
{
    struct orb_cuda_state *s = orb_cuda_state_of(c, 1);
    if (!s)
        return orb_comm_fail(c, ORB_ERR_NO_MEMORY, "%s: rank %d: no memory for the device path's state",
                             orb_coll_fn_name(p[0].a.coll), c->rank);
    if (s->ready)
        return ORB_OK;
    char err[ORB_ERRMSG_BYTES / 2];
    int d;
    orb_status_t st = orb_cuda_state_pick_device(s, buffer_device(c, p, n), &d, err, sizeof err);
    if (st == ORB_OK)
        st = orb_cuda_state_setup(c, s, d, err, sizeof err);
    if (st != ORB_OK)
        return orb_comm_fail(c, st, "%s: rank %d: a stream or device buffers ask for the device path, but %s "
                                    "(host buffers take a NULL stream)",
                             orb_coll_fn_name(p[0].a.coll), c->rank, err);
    return ORB_OK;
}

typedef struct {
    struct orb_comm *c;
    const orb_prepared_t *p;
    int n;
    orb_status_t st;
} setup_job_t;

static void *setup_thread(void *arg)
{
    setup_job_t *j = arg;
    j->st = ensure_setup(j->c, j->p, j->n);
    return NULL;
}

/* Every communicator among the calls that has no device path yet gets one. One thread may
 * drive several ranks (orb_comm_init_all, NCCL-style groups): their setups are collective, so
 * they run side by side, one thread each. */
static orb_status_t setup_all(const orb_prepared_t *p, int n)
{
    if (n <= 0)
        return ORB_OK;
    setup_job_t *jobs = calloc((size_t)n, sizeof *jobs);
    pthread_t *th = calloc((size_t)n, sizeof *th);
    int nj = 0;
    orb_status_t st = ORB_OK;
    if (!jobs || !th) {
        free(jobs);
        free(th);
        orb_set_thread_error("orb_group_end: no memory to set the device path up");
        return ORB_ERR_NO_MEMORY;
    }
    for (int i = 0; i < n; i++) {
        struct orb_cuda_state *s = orb_cuda_state_of(p[i].comm, 0);
        int seen = 0;
        for (int j = 0; j < nj && !seen; j++)
            seen = jobs[j].c == p[i].comm;
        if (!seen && (!s || !s->ready))
            jobs[nj++] = (setup_job_t){p[i].comm, p, n, ORB_OK};
    }
    if (nj == 1) {
        setup_thread(&jobs[0]);
    } else {
        int started = 0;
        for (; started < nj; started++)
            if (pthread_create(&th[started], NULL, setup_thread, &jobs[started]) != 0)
                break;
        for (int j = 0; j < started; j++)
            pthread_join(th[j], NULL);
        if (started < nj) {
            /* the setups already started wait for this rank and fail when the init timeout ends */
            st = orb_comm_fail(jobs[started].c, ORB_ERR_SYSTEM,
                               "orb_group_end: rank %d: cannot start a thread to set its device path up",
                               jobs[started].c->rank);
        }
    }
    for (int j = 0; j < nj && st == ORB_OK; j++)
        st = jobs[j].st;
    free(jobs);
    free(th);
    return st;
}

orb_status_t orb_cuda_admit(orb_prepared_t *p, int n)
{
    if (n <= 0)
        return ORB_OK;
    orb_status_t st = ORB_OK;
    for (int i = 0; i < n && st == ORB_OK; i++) /* the device executor does not take due handshakes */
        st = orb_host_settle(p[i].comm);
    if (st == ORB_OK)
        st = setup_all(p, n);
    for (int i = 0; i < n && st == ORB_OK; i++) {
        struct orb_comm *c = p[i].comm;
        struct orb_cuda_state *s = orb_cuda_state_of(c, 0);
        const char *in = NULL, *out = NULL;
        int old = -1;
        cudaGetDevice(&old);
        (void)cudaGetLastError();
        cudaSetDevice(s->device); /* mapped host memory's device pointer is per device */
        if (p[i].in_count)
            st = device_view(c, s, &p[i], p[i].a.coll == ORB_COLL_SEND ? "buf" : "sendbuf", p[i].a.sendbuf, &in);
        if (st == ORB_OK && p[i].out_count)
            st = device_view(c, s, &p[i], p[i].a.coll == ORB_COLL_RECV ? "buf" : "recvbuf", p[i].a.recvbuf, &out);
        if (old >= 0)
            cudaSetDevice(old);
        p[i].in = in;
        p[i].out = (void *)out;
    }
    return st;
}

/* ---- launching --------------------------------------------------------------------------------- */

static int proto_for(size_t bytes)
{
    const char *e = orb_param_str(ORB_PARAM_S_CUDA_PROTO); /* must match on every rank, like ORBIT_ALGO */
    if (!strcasecmp(e, "ll"))
        return ORB_CUDA_PROTO_LL;
    if (!strcasecmp(e, "simple"))
        return ORB_CUDA_PROTO_SIMPLE;
    return bytes <= ORB_CUDA_LL_MAX_BYTES ? ORB_CUDA_PROTO_LL : ORB_CUDA_PROTO_SIMPLE;
}

/* Fill op for the prepared call p; *scratch_need: bytes of output room a non-root needs plus
 * the plan's workspace (0: none). */
static orb_status_t prepare(struct orb_comm *c, struct orb_cuda_state *s, const orb_prepared_t *p, int pin,
                            cudaStream_t stream, orb_cuda_op_t *op, size_t *scratch_need)
{
    const char *fn = orb_coll_fn_name(p->a.coll);
    const size_t esz = p->key.elem_size;
    const orb_plan_t *plan = p->plan;
    const orb_cuda_dplan_t *dp;
    char why[ORB_ERRMSG_BYTES / 2] = "";
    orb_status_t st = orb_cuda_state_plan(s, &p->key, plan, pin, stream, &dp, why, sizeof why);
    if (st != ORB_OK)
        return orb_comm_fail(c, st, "%s: rank %d: %s", fn, c->rank, why);

    memset(op, 0, sizeof *op);
    op->steps = dp->steps;
    memcpy(op->lane_off, dp->lane_off, sizeof op->lane_off);
    memcpy(op->lane_n, dp->lane_n, sizeof op->lane_n);
    op->in = p->in;
    op->out = p->out;
    op->esize = (uint32_t)esz;
    op->postdiv = p->a.op == ORB_AVG && orb_coll_reduces(p->a.coll) ? c->nranks : 0;
    int proto = proto_for(p->a.count * esz);
    if (proto == ORB_CUDA_PROTO_LL && orb_plan_min_slots(p->a.coll, plan->args.algo) > 1) {
        /* A ring needs one slot more than the pieces of a step (plan.h): LL's small slots cut
         * a big chunk into too many pieces for the FIFO, and the ring would stall. */
        size_t per = ORB_CUDA_LL_SLOT_BYTES / esz;
        if ((plan->args.chunk_elems + per - 1) / per + 1 > c->nslots)
            proto = ORB_CUDA_PROTO_SIMPLE;
    }
    op->proto = (uint8_t)proto;
    op->piece_elems = (uint32_t)(orb_cuda_slot_payload(op->proto, s->stride[op->proto]) / esz);
    op->nlanes = (uint8_t)plan->nlanes;
    op->typed = (uint8_t)orb_coll_reduces(p->a.coll);
    op->sig = p->sig;
    op->sync_next = p->sync_next;
    op->sync_prev = p->sync_prev;
    size_t nsteps = 0;
    for (int ch = 0; ch < plan->nlanes; ch++)
        nsteps += plan->lanes[ch].nsteps;
    if (nsteps == 0 && op->sync_next < 0)
        op->nlanes = 0; /* nothing to move: no blocks */
    /* a non-root's output room, then (256-byte aligned) the plan's workspace */
    *scratch_need = orb_plan_out_is_scratch(plan) ? (plan->out_count * esz + 255) / 256 * 256 : 0;
    *scratch_need += plan->scratch_count * esz;
    ORB_INFO("%s #%llu on the device: %s protocol", fn, (unsigned long long)op->sig.seq,
             op->proto == ORB_CUDA_PROTO_LL ? "LL" : "simple");
    return ORB_OK;
}

static orb_status_t finish_sync(struct orb_comm *c, struct orb_cuda_state *s, const char *fn)
{
    cudaError_t rc = cudaStreamSynchronize(s->internal);
    if (rc != cudaSuccess) {
        s->broken = ORB_ERR_CUDA;
        snprintf(s->broken_msg, sizeof s->broken_msg, "a device call failed: %s (%s)", cudaGetErrorString(rc),
                 cudaGetErrorName(rc));
        (void)cudaGetLastError();
        return orb_comm_fail(c, ORB_ERR_CUDA, "%s: rank %d: %s", fn, c->rank, s->broken_msg);
    }
    char err[ORB_ERRMSG_BYTES];
    orb_status_t st = orb_cuda_state_check(c, s, err, sizeof err);
    return st == ORB_OK ? ORB_OK : orb_comm_fail(c, st, "%s", err);
}

orb_status_t orb_cuda_finish(struct orb_comm *c, const char *fn)
{
    struct orb_cuda_state *s = orb_cuda_state_of(c, 0);
    int old = -1;
    cudaGetDevice(&old);
    (void)cudaGetLastError();
    cudaSetDevice(s->device);
    orb_status_t st = finish_sync(c, s, fn);
    if (old >= 0)
        cudaSetDevice(old);
    return st;
}

/* A launch staged: every allocation and upload of its calls done, nothing running yet. */
struct orb_cuda_staged {
    struct orb_comm *c;
    const char *fn;
    cudaStream_t stream; /* the caller's; NULL: a NULL-stream call, run on ours */
    cudaStream_t ls;     /* the stream it runs on */
    int capturing;
    orb_cuda_launch_t L;
};

/* Runs f with the communicator's device current and relaxed capture mode (allocations and
 * uploads on a cache miss are legal while the caller captures a graph), then restores both. */
typedef struct {
    int old;
    enum cudaStreamCaptureMode mode;
} device_scope_t;

static cudaError_t scope_enter(device_scope_t *d, int device)
{
    d->old = -1;
    cudaGetDevice(&d->old);
    (void)cudaGetLastError();
    d->mode = cudaStreamCaptureModeRelaxed;
    cudaThreadExchangeStreamCaptureMode(&d->mode);
    return cudaSetDevice(device);
}

static void scope_leave(device_scope_t *d)
{
    cudaThreadExchangeStreamCaptureMode(&d->mode);
    if (d->old >= 0)
        cudaSetDevice(d->old);
}

orb_status_t orb_cuda_stage(struct orb_comm *c, const orb_prepared_t *k, int n, orb_cuda_staged_t **out)
{
    const char *fn = orb_coll_fn_name(k[0].a.coll);
    *out = NULL;
    struct orb_cuda_state *s = orb_cuda_state_of(c, 1);
    if (!s)
        return orb_comm_fail(c, ORB_ERR_NO_MEMORY, "%s: rank %d: out of memory", fn, c->rank);
    if (n > ORB_CUDA_MAX_OPS)
        return orb_comm_fail(c, ORB_ERR_UNSUPPORTED,
                             "%s: rank %d: %d device calls in one group on one communicator; at most %d (split "
                             "the group)",
                             fn, c->rank, n, ORB_CUDA_MAX_OPS);
    for (int i = 1; i < n; i++)
        if (k[i].stream != k[0].stream)
            return orb_comm_fail(c, ORB_ERR_INVALID_ARG,
                                 "%s: rank %d: the device calls of one group on one communicator must share one "
                                 "stream",
                                 fn, c->rank);
    char err[ORB_ERRMSG_BYTES];
    orb_status_t st = orb_cuda_state_check(c, s, err, sizeof err);
    if (st != ORB_OK)
        return orb_comm_fail(c, st, "%s", err);
    if ((st = ensure_setup(c, k, n)) != ORB_OK) /* admitted calls have it: a no-op */
        return st;

    device_scope_t scope;
    orb_cuda_staged_t *g = calloc(1, sizeof *g);
    cudaStream_t stream = (cudaStream_t)k[0].stream;
    enum cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
    cudaError_t rc = scope_enter(&scope, s->device);
    if (rc == cudaSuccess && stream)
        rc = cudaStreamIsCapturing(stream, &cs);
    if (rc != cudaSuccess) {
        st = orb_comm_fail(c, ORB_ERR_CUDA, "%s: rank %d: %s: %s", fn, c->rank,
                           stream ? "cudaStreamIsCapturing (is the stream valid?)" : "cudaSetDevice",
                           cudaGetErrorString(rc));
        (void)cudaGetLastError();
        goto out;
    }
    if (!g) {
        st = orb_comm_fail(c, ORB_ERR_NO_MEMORY, "%s: rank %d: out of memory", fn, c->rank);
        goto out;
    }
    g->c = c;
    g->fn = fn;
    g->stream = stream;
    g->ls = stream ? stream : s->internal;
    g->capturing = cs != cudaStreamCaptureStatusNone;
    orb_cuda_launch_t *L = &g->L;
    size_t need[ORB_CUDA_MAX_OPS], total = 0;
    int have_typed = 0;
    for (int i = 0; i < n; i++) {
        if ((st = prepare(c, s, &k[i], g->capturing, g->ls, &L->ops[i], &need[i])) != ORB_OK)
            goto out;
        total += (need[i] + 255) / 256 * 256;
        if (!L->ops[i].typed)
            continue;
        orb_op_t kop = k[i].a.op == ORB_AVG ? ORB_SUM : k[i].a.op; /* one kernel for both */
        if (!have_typed) {
            L->dtype = k[i].a.dtype;
            L->op = k[i].a.op;
            have_typed = 1;
        } else if ((int)k[i].a.dtype != L->dtype || kop != (L->op == ORB_AVG ? ORB_SUM : (orb_op_t)L->op)) {
            st = orb_comm_fail(c, ORB_ERR_UNSUPPORTED,
                               "%s: rank %d: one group mixes device reductions of different dtypes or ops; the "
                               "device executor runs one of each per launch (split the group)",
                               fn, c->rank);
            goto out;
        }
    }
    if (total) {
        char *base;
        if ((st = orb_cuda_state_scratch(s, total, g->ls, g->capturing, &base, err, sizeof err)) != ORB_OK) {
            st = orb_comm_fail(c, st, "%s: rank %d: %s", fn, c->rank, err);
            goto out;
        }
        for (int i = 0; i < n; i++)
            if (need[i]) {
                const orb_plan_t *pl = k[i].plan;
                const size_t work = pl->scratch_count * L->ops[i].esize, room = need[i] - work;
                if (room)
                    L->ops[i].out = base;
                if (work)
                    L->ops[i].scratch = base + room;
                base += (need[i] + 255) / 256 * 256;
            }
    }
    L->conns = s->conns;
    L->ctrl = orb_cuda_ipc_ctrl_dev(&s->ipc, c->rank);
    L->peer_ctrl = s->peer_ctrl;
    L->dev = s->devstate;
    L->stride[0] = s->stride[0];
    L->stride[1] = s->stride[1];
    L->timeout_ns = s->timeout_ns;
    L->rank = c->rank;
    L->nranks = c->nranks;
    L->nchannels = c->nchannels;
    L->nslots = c->nslots;
    L->check_signatures = c->check_signatures;
    L->nops = n;
    int blocks = orb_cuda_exec_blocks(L);
    if (blocks * s->gpu_ranks > s->sm_count) {
        /* one block per SM is guaranteed (launch bounds); more than that and blocks that wait
         * for each other might never be resident together */
        st = orb_comm_fail(c, ORB_ERR_UNSUPPORTED,
                           "%s: rank %d: %d blocks per rank x %d ranks on this GPU exceed its %d SMs, and every "
                           "block of every rank must be resident at once; use fewer calls per group or fewer "
                           "channels (ORBIT_NCHANNELS)",
                           fn, c->rank, blocks, s->gpu_ranks, s->sm_count);
        goto out;
    }
    if (blocks > 0) { /* else nothing moves (count 0, no handshake): nothing to fire */
        orb_cuda_trace_stage(c, s, k, n, L, g->capturing);
        *out = g;
        g = NULL;
    }
out:
    free(g);
    scope_leave(&scope);
    return st;
}

orb_status_t orb_cuda_fire(orb_cuda_staged_t *g, int defer, int *pending)
{
    if (!g)
        return ORB_OK;
    struct orb_comm *c = g->c;
    struct orb_cuda_state *s = orb_cuda_state_of(c, 0);
    const char *fn = g->fn;
    char err[ORB_ERRMSG_BYTES];
    orb_status_t st = ORB_OK;
    device_scope_t scope;
    cudaError_t rc = scope_enter(&scope, s->device);
    const char *what = "cudaSetDevice";
    /* A NULL-stream call comes after what the caller queued on the legacy default stream
     * (ours is non-blocking, so the order has to be asked for); and calls of one communicator
     * never overlap, whatever streams they come on (positions in the FIFOs are taken in launch
     * order); a graph orders its own nodes. */
    if (rc == cudaSuccess && !g->stream) {
        what = "cudaEventRecord on the legacy stream";
        rc = cudaEventRecord(s->legacy_done, cudaStreamLegacy);
        if (rc == cudaSuccess) {
            what = "cudaStreamWaitEvent";
            rc = cudaStreamWaitEvent(g->ls, s->legacy_done, 0);
        }
    }
    if (rc == cudaSuccess && !g->capturing && s->have_last && s->last_stream != g->ls) {
        what = "cudaStreamWaitEvent";
        rc = cudaStreamWaitEvent(g->ls, s->last_done, 0);
    }
    if (rc != cudaSuccess) {
        st = orb_comm_fail(c, ORB_ERR_CUDA, "%s: rank %d: %s: %s", fn, c->rank, what, cudaGetErrorString(rc));
        (void)cudaGetLastError();
        goto out;
    }
    if ((st = orb_cuda_exec_launch(&g->L, g->ls, err, sizeof err)) != ORB_OK) {
        st = orb_comm_fail(c, st, "%s: rank %d: %s", fn, c->rank, err);
        goto out;
    }
    orb_cuda_trace_commit(s, g->ls, 1);
    if (!g->capturing) {
        if ((rc = cudaEventRecord(s->last_done, g->ls)) != cudaSuccess) {
            st = orb_comm_fail(c, ORB_ERR_CUDA, "%s: rank %d: cudaEventRecord: %s", fn, c->rank, cudaGetErrorString(rc));
            (void)cudaGetLastError();
            goto out;
        }
        s->last_stream = g->ls;
        s->have_last = 1;
    }
    if (!g->stream) {
        if (defer)
            *pending = 1;
        else
            st = finish_sync(c, s, fn);
    }
out:
    orb_cuda_trace_commit(s, g->ls, 0); /* a no-op once committed */
    scope_leave(&scope);
    free(g);
    return st;
}

void orb_cuda_drop(orb_cuda_staged_t *g)
{
    struct orb_cuda_state *s = g ? orb_cuda_state_of(g->c, 0) : NULL;
    if (s)
        orb_cuda_trace_commit(s, NULL, 0);
    free(g);
}

struct orb_comm *orb_cuda_staged_comm(const orb_cuda_staged_t *g) { return g->c; }

orb_status_t orb_cuda_launch(struct orb_comm *c, const orb_prepared_t *p, int n, int defer, int *pending)
{
    orb_cuda_staged_t *g;
    orb_status_t st = orb_cuda_stage(c, p, n, &g);
    return st != ORB_OK ? st : orb_cuda_fire(g, defer, pending);
}
