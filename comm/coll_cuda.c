/* Device buffers: collectives enqueued on the caller's CUDA stream (coll_cuda.h).
 *
 * A call validates its arguments, resolves the buffers to device-accessible pointers, takes the
 * host plan (the same plans the CPU executor runs) and its device copy, and launches one
 * kernel: nothing waits on the host, so calls can be captured in a CUDA graph. With a NULL
 * stream the call runs on the communicator's own stream and returns when it is done. Kernels
 * report failures through the control page, which the next call reads (cuda_comm.c). */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <link.h>
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
#include "core/log.h"

/* ---- device or host memory -------------------------------------------------------------------- */

#ifdef ORB_CUDA_EMU
/* The CPU emulator (tools/cuda_emu) has no driver API and no contexts: its runtime answers. */
int orb_cuda_is_device_ptr(const void *p)
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
#else
/* Every host collective asks this, so it must not create a CUDA context on a machine with a
 * GPU (seconds and hundreds of MiB per process). A process that never loaded libcuda cannot
 * hold device memory; one that did is asked through the driver, which needs no context. */
typedef CUresult (*pointer_attr_fn)(void *data, CUpointer_attribute attribute, CUdeviceptr ptr);
static pointer_attr_fn pointer_attr;

/* How many objects the dynamic loader has ever loaded: unchanged means libcuda is still not
 * among them, which lets a host-only process skip the dlopen below (glibc searches the
 * library path even with RTLD_NOLOAD: tens of microseconds on every collective). */
static int loader_adds_cb(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    *(unsigned long long *)data = info->dlpi_adds;
    return 1; /* the first object carries the counter; stop there */
}

static unsigned long long loader_generation(void)
{
    unsigned long long adds = 0;
    dl_iterate_phdr(loader_adds_cb, &adds);
    return adds;
}

int orb_cuda_is_device_ptr(const void *p)
{
    static unsigned long long no_cuda_at = ~0ull; /* loader generation when libcuda was absent */
    if (!p)
        return 0;
    pointer_attr_fn f = __atomic_load_n(&pointer_attr, __ATOMIC_ACQUIRE);
    if (!f) {
        unsigned long long gen = loader_generation();
        if (gen == __atomic_load_n(&no_cuda_at, __ATOMIC_RELAXED))
            return 0;
        void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD); /* never loads it */
        if (!h) {
            __atomic_store_n(&no_cuda_at, gen, __ATOMIC_RELAXED);
            return 0;
        }
        f = (pointer_attr_fn)dlsym(h, "cuPointerGetAttribute"); /* h stays open: f must stay valid */
        if (!f)
            return 0;
        __atomic_store_n(&pointer_attr, f, __ATOMIC_RELEASE);
    }
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
#endif

/* ---- one call --------------------------------------------------------------------------------- */

typedef struct {
    orb_call_t a; /* the arguments, as the host path has them */
    struct orb_comm *c;
    orb_stream_t stream;
} dcall_t;

/* The host path's checks (coll_call.c); a barrier never takes this path. */
static orb_status_t validate(struct orb_comm *c, const dcall_t *k, size_t *in_count, size_t *out_count)
{
    if (k->a.coll == ORB_COLL_BARRIER)
        return orb_comm_fail(c, ORB_ERR_INVALID_ARG, "orb_barrier: rank %d: not a collective of the device path",
                             c->rank);
    return orb_call_validate(c, &k->a, in_count, out_count);
}

/* The pointer the kernels use for a user buffer: device memory of the communicator's GPU,
 * managed memory, or mapped pinned host memory. */
static orb_status_t device_view(struct orb_comm *c, struct orb_cuda_state *s, const dcall_t *k, const char *which,
                                const void *p, const char **out)
{
    const char *fn = orb_call_fn_name(k->a.coll);
    struct cudaPointerAttributes a;
    cudaError_t rc = cudaPointerGetAttributes(&a, p);
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
                                 fn, c->rank, which, p, a.device, s->device, a.device);
        d = p;
        break;
    case cudaMemoryTypeManaged:
        d = p;
        break;
    case cudaMemoryTypeHost:
        if (!a.devicePointer)
            return orb_comm_fail(c, ORB_ERR_INVALID_ARG,
                                 "%s: rank %d: %s %p is pinned host memory without a device mapping "
                                 "(cudaHostAllocMapped / cudaHostRegisterMapped)",
                                 fn, c->rank, which, p);
        d = a.devicePointer;
        break;
    default:
        return orb_comm_fail(c, ORB_ERR_INVALID_ARG,
                             "%s: rank %d: %s %p is neither device memory nor pinned host memory (pageable host "
                             "memory, or a buffer already freed): pass cudaMalloc'd buffers with a stream, or host "
                             "buffers with a NULL stream",
                             fn, c->rank, which, p);
    }
    if ((uintptr_t)d % orb_dtype_size(k->a.dtype) != 0)
        return orb_comm_fail(c, ORB_ERR_INVALID_ARG, "%s: rank %d: %s %p is not aligned to its %s elements", fn,
                             c->rank, which, p, orb_dtype_name(k->a.dtype));
    *out = d;
    return ORB_OK;
}

static int proto_for(size_t bytes)
{
    const char *e = getenv("ORBIT_CUDA_PROTO"); /* must match on every rank, like ORBIT_ALGO */
    if (e && !strcasecmp(e, "ll"))
        return ORB_CUDA_PROTO_LL;
    if (e && !strcasecmp(e, "simple"))
        return ORB_CUDA_PROTO_SIMPLE;
    return bytes <= ORB_CUDA_LL_MAX_BYTES ? ORB_CUDA_PROTO_LL : ORB_CUDA_PROTO_SIMPLE;
}

/* Fill op for call k; *scratch_need: bytes of output room a non-root needs (0: none). */
static orb_status_t prepare(struct orb_comm *c, struct orb_cuda_state *s, const dcall_t *k, int pin,
                            orb_cuda_op_t *op, size_t *scratch_need)
{
    const char *fn = orb_call_fn_name(k->a.coll);
    size_t in_count, out_count;
    orb_status_t st = validate(c, k, &in_count, &out_count);
    if (st != ORB_OK)
        return st;
    const size_t esz = orb_dtype_size(k->a.dtype);
    const char *in = NULL, *out = NULL;
    if (in_count && (st = device_view(c, s, k, k->a.coll == ORB_COLL_SEND ? "buf" : "sendbuf", k->a.sendbuf, &in)) != ORB_OK)
        return st;
    if (out_count && (st = device_view(c, s, k, k->a.coll == ORB_COLL_RECV ? "buf" : "recvbuf", k->a.recvbuf, &out)) != ORB_OK)
        return st;

    orb_call_key_t key = {k->a.coll, k->a.count, esz, k->a.root, k->a.op};
    const orb_plan_cache_entry_t *entry;
    char why[512] = "";
    st = orb_comm_plan(c, &key, &entry, why, sizeof why);
    if (st != ORB_OK)
        return orb_comm_fail(c, st, "%s: rank %d: no algorithm for this call: %s", fn, c->rank, why);
    const orb_plan_t *plan = &entry->plan;
    const orb_cuda_dplan_t *dp;
    st = orb_cuda_state_plan(s, &key, plan, pin, &dp, why, sizeof why);
    if (st != ORB_OK)
        return orb_comm_fail(c, st, "%s: rank %d: %s", fn, c->rank, why);

    memset(op, 0, sizeof *op);
    op->steps = dp->steps;
    memcpy(op->lane_off, dp->lane_off, sizeof op->lane_off);
    memcpy(op->lane_n, dp->lane_n, sizeof op->lane_n);
    op->in = in;
    op->out = (char *)out;
    op->esize = (uint32_t)esz;
    op->postdiv = k->a.op == ORB_AVG && orb_coll_reduces(k->a.coll) ? c->nranks : 0;
    int proto = proto_for(k->a.count * esz);
    if (proto == ORB_CUDA_PROTO_LL && orb_plan_min_slots(k->a.coll, plan->args.algo) > 1) {
        /* A ring needs one slot more than the pieces of a step (plan.h): LL's small slots cut
         * a big chunk into too many pieces for the FIFO, and the ring would stall. */
        size_t per = ORB_CUDA_LL_SLOT_BYTES / esz;
        if ((plan->args.chunk_elems + per - 1) / per + 1 > c->nslots)
            proto = ORB_CUDA_PROTO_SIMPLE;
    }
    op->proto = (uint8_t)proto;
    op->piece_elems = (uint32_t)(orb_cuda_slot_payload(op->proto, s->stride[op->proto]) / esz);
    op->nlanes = (uint8_t)plan->nlanes;
    op->typed = (uint8_t)orb_coll_reduces(k->a.coll);
    orb_slot_hdr_t sig = {0};
    int sync_next, sync_prev;
    orb_call_signature(c, &k->a, &sig, &sync_next, &sync_prev);
    memcpy(&op->sig, &sig, sizeof op->sig); /* the same layout, checked field by field above */
    op->sync_next = sync_next;
    op->sync_prev = sync_prev;
    size_t nsteps = 0;
    for (int ch = 0; ch < plan->nlanes; ch++)
        nsteps += plan->lanes[ch].nsteps;
    if (nsteps == 0 && op->sync_next < 0)
        op->nlanes = 0; /* nothing to move: no blocks */
    *scratch_need = orb_plan_out_is_scratch(plan) ? plan->out_count * esz : 0;
    ORB_INFO("%s #%llu count %zu %s on the device: %s, chunk %zu elements, %d channel%s, %s protocol (%s)", fn,
             (unsigned long long)op->sig.seq, k->a.count, orb_dtype_name(k->a.dtype), orb_algo_name(plan->args.algo),
             plan->args.chunk_elems, plan->nlanes, plan->nlanes > 1 ? "s" : "",
             op->proto == ORB_CUDA_PROTO_LL ? "LL" : "simple", entry->reason);
    return ORB_OK;
}

/* The device of the first device buffer among the calls, -1 if none. */
static int buffer_device(const dcall_t *k, int n)
{
    for (int i = 0; i < n; i++) {
        const void *bufs[2] = {k[i].a.sendbuf, k[i].a.recvbuf};
        for (int j = 0; j < 2; j++) {
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

static orb_status_t ensure_setup(struct orb_comm *c, struct orb_cuda_state *s, const dcall_t *k, int n)
{
    if (s->ready)
        return ORB_OK;
    char err[1024];
    int d;
    orb_status_t st = orb_cuda_state_pick_device(s, buffer_device(k, n), &d, err, sizeof err);
    if (st == ORB_OK)
        st = orb_cuda_state_setup(c, s, d, err, sizeof err);
    if (st != ORB_OK)
        return orb_comm_fail(c, st, "%s: rank %d: a stream or device buffers ask for the device path, but %s "
                                    "(host buffers take a NULL stream)",
                             orb_call_fn_name(k[0].a.coll), c->rank, err);
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
    char err[1024];
    orb_status_t st = orb_cuda_state_check(c, s, err, sizeof err);
    return st == ORB_OK ? ORB_OK : orb_comm_fail(c, st, "%s", err);
}

/* Launch the calls k[0..n) of one communicator as one kernel. *pending: a NULL-stream launch
 * whose end the caller still has to wait for (only when defer is set). */
static orb_status_t launch_calls(struct orb_comm *c, const dcall_t *k, int n, int defer, int *pending)
{
    const char *fn = orb_call_fn_name(k[0].a.coll);
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
    char err[1024];
    orb_status_t st = orb_cuda_state_check(c, s, err, sizeof err);
    if (st != ORB_OK)
        return orb_comm_fail(c, st, "%s", err);

    int old = -1;
    cudaGetDevice(&old);
    (void)cudaGetLastError();
    /* Allocations and uploads on a cache miss are legal while the caller captures a graph. */
    enum cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    cudaThreadExchangeStreamCaptureMode(&mode);
    cudaStream_t stream = (cudaStream_t)k[0].stream;
    enum cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
    orb_cuda_launch_t *L = NULL;
    if ((st = ensure_setup(c, s, k, n)) != ORB_OK)
        goto out;
    cudaError_t rc = cudaSetDevice(s->device);
    if (rc == cudaSuccess && stream)
        rc = cudaStreamIsCapturing(stream, &cs);
    if (rc != cudaSuccess) {
        st = orb_comm_fail(c, ORB_ERR_CUDA, "%s: rank %d: %s: %s", fn, c->rank,
                           stream ? "cudaStreamIsCapturing (is the stream valid?)" : "cudaSetDevice",
                           cudaGetErrorString(rc));
        (void)cudaGetLastError();
        goto out;
    }
    const int capturing = cs != cudaStreamCaptureStatusNone;
    L = calloc(1, sizeof *L);
    if (!L) {
        st = orb_comm_fail(c, ORB_ERR_NO_MEMORY, "%s: rank %d: out of memory", fn, c->rank);
        goto out;
    }
    size_t need[ORB_CUDA_MAX_OPS], total = 0;
    int have_typed = 0;
    for (int i = 0; i < n; i++) {
        if ((st = prepare(c, s, &k[i], capturing, &L->ops[i], &need[i])) != ORB_OK)
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
        if ((st = orb_cuda_state_scratch(s, total, &base, err, sizeof err)) != ORB_OK) {
            st = orb_comm_fail(c, st, "%s: rank %d: %s", fn, c->rank, err);
            goto out;
        }
        for (int i = 0; i < n; i++)
            if (need[i]) {
                L->ops[i].out = base;
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
    if (blocks == 0)
        goto out; /* nothing moves (count 0, no handshake) */
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

    cudaStream_t ls = stream ? stream : s->internal;
    /* calls of one communicator never overlap, whatever streams they come on (positions in
     * the FIFOs are taken in launch order); a graph orders its own nodes */
    if (!capturing && s->have_last && s->last_stream != ls && (rc = cudaStreamWaitEvent(ls, s->last_done, 0)) != cudaSuccess) {
        st = orb_comm_fail(c, ORB_ERR_CUDA, "%s: rank %d: cudaStreamWaitEvent: %s", fn, c->rank, cudaGetErrorString(rc));
        (void)cudaGetLastError();
        goto out;
    }
    if ((st = orb_cuda_exec_launch(L, ls, err, sizeof err)) != ORB_OK) {
        st = orb_comm_fail(c, st, "%s: rank %d: %s", fn, c->rank, err);
        goto out;
    }
    if (!capturing) {
        if ((rc = cudaEventRecord(s->last_done, ls)) != cudaSuccess) {
            st = orb_comm_fail(c, ORB_ERR_CUDA, "%s: rank %d: cudaEventRecord: %s", fn, c->rank, cudaGetErrorString(rc));
            (void)cudaGetLastError();
            goto out;
        }
        s->last_stream = ls;
        s->have_last = 1;
    }
    if (!stream) {
        if (defer)
            *pending = 1;
        else
            st = finish_sync(c, s, fn);
    }
out:
    free(L);
    cudaThreadExchangeStreamCaptureMode(&mode);
    if (old >= 0)
        cudaSetDevice(old);
    return st;
}

orb_status_t orb_cuda_collective(struct orb_comm *c, orb_coll_t coll, const void *sendbuf, void *recvbuf,
                                 size_t count, orb_dtype_t dtype, orb_op_t op, int root, orb_stream_t stream)
{
    dcall_t k = {{coll, sendbuf, recvbuf, count, dtype, op, root}, c, stream};
    return launch_calls(c, &k, 1, 0, NULL);
}

/* ---- groups ------------------------------------------------------------------------------------- */

static _Thread_local dcall_t *group_q;
static _Thread_local int group_n, group_cap;

orb_status_t orb_cuda_group_add(struct orb_comm *c, orb_coll_t coll, const void *sendbuf, void *recvbuf,
                                size_t count, orb_dtype_t dtype, orb_op_t op, int root, orb_stream_t stream)
{
    dcall_t k = {{coll, sendbuf, recvbuf, count, dtype, op, root}, c, stream};
    size_t in_count, out_count;
    orb_status_t st = validate(c, &k, &in_count, &out_count); /* the rest needs the device: at group end */
    if (st != ORB_OK)
        return st;
    if (group_n == group_cap) {
        int n = group_cap ? 2 * group_cap : 16;
        dcall_t *q = realloc(group_q, (size_t)n * sizeof *q);
        if (!q)
            return orb_comm_fail(c, ORB_ERR_NO_MEMORY, "%s: rank %d: out of memory", orb_call_fn_name(coll), c->rank);
        group_q = q;
        group_cap = n;
    }
    group_q[group_n++] = k;
    return ORB_OK;
}

typedef struct {
    struct orb_comm *c;
    const dcall_t *k;
    int n;
    orb_status_t st;
} setup_job_t;

static void *setup_thread(void *arg)
{
    setup_job_t *j = arg;
    struct orb_cuda_state *s = orb_cuda_state_of(j->c, 1);
    j->st = s ? ensure_setup(j->c, s, j->k, j->n) : ORB_ERR_NO_MEMORY;
    return NULL;
}

/* One thread may drive several ranks (orb_comm_init_all): their setups are collective, so
 * they run side by side, one thread each. */
static orb_status_t setup_all(dcall_t *q, int n)
{
    setup_job_t *jobs = calloc((size_t)n, sizeof *jobs);
    pthread_t *th = calloc((size_t)n, sizeof *th);
    int nj = 0;
    orb_status_t st = ORB_OK;
    if (!jobs || !th) {
        free(jobs);
        free(th);
        return ORB_ERR_NO_MEMORY;
    }
    for (int i = 0; i < n; i++) {
        struct orb_cuda_state *s = orb_cuda_state_of(q[i].c, 1);
        int seen = 0;
        for (int j = 0; j < nj && !seen; j++)
            seen = jobs[j].c == q[i].c;
        if (!seen && (!s || !s->ready))
            jobs[nj++] = (setup_job_t){q[i].c, &q[i], 1, ORB_OK};
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
        if (started < nj)
            st = ORB_ERR_SYSTEM;
    }
    for (int j = 0; j < nj && st == ORB_OK; j++)
        st = jobs[j].st;
    free(jobs);
    free(th);
    return st;
}

orb_status_t orb_cuda_group_end(void)
{
    if (group_n == 0)
        return ORB_OK;
    dcall_t *q = group_q;
    int n = group_n;
    group_q = NULL;
    group_n = group_cap = 0;
    orb_status_t st = setup_all(q, n);
    dcall_t *mine = malloc((size_t)n * sizeof *mine);
    struct orb_comm **sync = calloc((size_t)n, sizeof *sync);
    int nsync = 0;
    if (!mine || !sync)
        st = ORB_ERR_NO_MEMORY;
    /* one launch per communicator, in first-use order, none waiting for another */
    for (int i = 0; i < n && st == ORB_OK; i++) {
        struct orb_comm *c = q[i].c;
        if (!c)
            continue;
        int m = 0;
        for (int j = i; j < n; j++)
            if (q[j].c == c) {
                mine[m++] = q[j];
                q[j].c = NULL;
            }
        int pending = 0;
        st = launch_calls(c, mine, m, 1, &pending);
        if (pending)
            sync[nsync++] = c;
    }
    /* NULL-stream groups return when done: wait only after every launch is out */
    for (int i = 0; i < nsync; i++) {
        struct orb_cuda_state *s = orb_cuda_state_of(sync[i], 0);
        int old = -1;
        cudaGetDevice(&old);
        cudaSetDevice(s->device);
        orb_status_t fs = finish_sync(sync[i], s, "orb_group_end");
        if (st == ORB_OK)
            st = fs;
        if (old >= 0)
            cudaSetDevice(old);
    }
    free(mine);
    free(sync);
    free(q);
    return st;
}
