/* The device path of a communicator: state, setup, errors kernels leave, device plans. */
#include "comm/cuda_comm.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collectives/exec.h"
#include "comm/comm_trace.h"
#include "comm/cuda_hooks.h"
#include "comm/cuda_trace.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/param.h"

/* ---- the state of each communicator -------------------------------------------------------- */

/* The state hangs off the communicator (c->cuda). It is created by the thread that drives the
 * communicator; orb_comm_abort may read it from any thread (or a signal handler), hence the
 * atomic pointer and no lock. */
static void state_free(struct orb_cuda_state *s);

struct orb_cuda_state *orb_cuda_state_of(struct orb_comm *c, int create)
{
    struct orb_cuda_state *s = __atomic_load_n(&c->cuda, __ATOMIC_ACQUIRE);
    if (!s && create && (s = calloc(1, sizeof *s)) != NULL) {
        s->bound_device = s->local_rank = s->device = -1;
        __atomic_store_n(&c->cuda, s, __ATOMIC_RELEASE);
    }
    return s;
}

static void bury(struct orb_cuda_state *s, void *p)
{
    if (!p)
        return;
    if (s->ngrave == s->capgrave) {
        size_t n = s->capgrave ? 2 * s->capgrave : 16;
        void **g = realloc(s->graveyard, n * sizeof *g);
        if (!g)
            return; /* leak rather than free memory a kernel may read */
        s->graveyard = g;
        s->capgrave = n;
    }
    s->graveyard[s->ngrave++] = p;
}

static void state_free(struct orb_cuda_state *s)
{
    if (s->device >= 0) {
        int old = -1;
        cudaGetDevice(&old);
        cudaSetDevice(s->device);
        if (s->internal)
            cudaStreamSynchronize(s->internal);
        orb_cuda_trace_free(s);
        for (int i = 0; i < s->nplans; i++)
            if (!s->plans[i].in_arena)
                cudaFree(s->plans[i].steps);
        cudaFree(s->arena);
        cudaFreeHost(s->arena_mirror);
        for (size_t i = 0; i < s->ngrave; i++)
            cudaFree(s->graveyard[i]);
        cudaFree(s->scratch);
        cudaFree(s->conns);
        cudaFree(s->peer_ctrl);
        cudaFree(s->devstate);
        orb_cuda_ipc_close(&s->ipc);
        if (s->last_done)
            cudaEventDestroy(s->last_done);
        if (s->legacy_done)
            cudaEventDestroy(s->legacy_done);
        if (s->internal)
            cudaStreamDestroy(s->internal);
        (void)cudaGetLastError();
        if (old >= 0)
            cudaSetDevice(old);
    }
    free(s->plans);
    free(s->graveyard);
    free(s);
}

/* ---- setup ------------------------------------------------------------------------------------- */

orb_status_t orb_cuda_state_pick_device(struct orb_cuda_state *s, int hint, int *device, char *err, size_t errlen)
{
    if (s->device >= 0) {
        *device = s->device;
        return ORB_OK;
    }
    int count = 0;
    cudaError_t rc = cudaGetDeviceCount(&count);
    if (rc != cudaSuccess || count == 0) {
        snprintf(err, errlen, "no CUDA device: cudaGetDeviceCount returned %s",
                 rc != cudaSuccess ? cudaGetErrorString(rc) : "0 devices");
        (void)cudaGetLastError();
        return ORB_ERR_UNSUPPORTED;
    }
    int d = -1;
    if (s->bound_device >= 0)
        d = s->bound_device;
    else if (s->local_rank >= 0)
        d = s->local_rank % count;
    else if (hint >= 0)
        d = hint;
    else if ((rc = cudaGetDevice(&d)) != cudaSuccess) {
        snprintf(err, errlen, "cudaGetDevice failed: %s", cudaGetErrorString(rc));
        return ORB_ERR_CUDA;
    }
    if (d < 0 || d >= count) {
        snprintf(err, errlen, "device %d does not exist (%d CUDA devices visible)", d, count);
        return ORB_ERR_INVALID_ARG;
    }
    *device = d;
    return ORB_OK;
}

static orb_status_t cuda_fail(cudaError_t rc, const char *what, char *err, size_t errlen)
{
    snprintf(err, errlen, "%s failed: %s (%s)", what, cudaGetErrorString(rc), cudaGetErrorName(rc));
    (void)cudaGetLastError();
    return ORB_ERR_CUDA;
}

#define CUDA_TRY(call, what)                                          \
    do {                                                              \
        cudaError_t rc_ = (call);                                     \
        if (rc_ != cudaSuccess) {                                     \
            st = cuda_fail(rc_, what, err, errlen);                   \
            goto out;                                                 \
        }                                                             \
    } while (0)

/* What sharing a GPU means for speed, said once per GPU by its lowest rank. */
static void report_mode(struct orb_comm *c, struct orb_cuda_state *s)
{
    const int me = c->rank;
    int threads = 0, procs = 0, lowest = 1;
    char list[256];
    int n = snprintf(list, sizeof list, "%d", me);
    for (int p = 0; p < c->nranks; p++) {
        int l = s->ipc.link[p];
        if (l != ORB_CUDA_LINK_SAME_GPU_THREADS && l != ORB_CUDA_LINK_SAME_GPU_IPC)
            continue;
        threads += l == ORB_CUDA_LINK_SAME_GPU_THREADS;
        procs += l == ORB_CUDA_LINK_SAME_GPU_IPC;
        lowest &= me < p;
        if (n > 0 && (size_t)n < sizeof list)
            n += snprintf(list + n, sizeof list - (size_t)n, ",%d", p);
    }
    struct cudaDeviceProp prop;
    const char *name = cudaGetDeviceProperties(&prop, s->device) == cudaSuccess ? prop.name : "?";
    if (lowest && procs) {
        int mps = getenv("CUDA_MPS_PIPE_DIRECTORY") != NULL || access("/tmp/nvidia-mps", F_OK) == 0;
        ORB_WARN("ranks %s share GPU %d (%s) as %s processes: without MPS the GPU time-slices between "
                 "processes, so every hand-over between them waits for a time slice (correct, but milliseconds "
                 "per step); with MPS (nvidia-cuda-mps-control -d) their kernels run side by side and split "
                 "the GPU. MPS control pipes %s.",
                 list, s->device, name, threads ? "threads and" : "separate", mps ? "were found" : "were not found");
    } else if (lowest && threads) {
        ORB_WARN("ranks %s share GPU %d (%s) as threads of one process: their kernels run side by side on their "
                 "own streams, and each gets about 1/%d of the GPU's SMs and memory bandwidth",
                 list, s->device, name, threads + 1);
    }
    if (lowest && threads) {
        /* A context's streams share CUDA_DEVICE_MAX_CONNECTIONS hardware queues, in order: work
         * queued behind a kernel that spins for a peer waits for it, even on another stream. */
        const char *env = getenv("CUDA_DEVICE_MAX_CONNECTIONS"); /* CUDA's own variable */
        const int queues = env && atoi(env) > 0 ? atoi(env) : 8;
        const int need = 2 * (threads + 1) + 1; /* each rank: ours and the caller's; the legacy one */
        if (need > queues)
            ORB_WARN("ranks %s are threads sharing GPU %d: with their own and their callers' streams they need "
                     "about %d streams, more than the %d hardware queues of the context "
                     "(CUDA_DEVICE_MAX_CONNECTIONS): streams then share queues in order, and a rank's work can "
                     "wait behind a peer's kernel that waits for it; set CUDA_DEVICE_MAX_CONNECTIONS=%d (at most "
                     "32) before the process starts CUDA",
                     list, s->device, need, queues, need < 32 ? need : 32);
        else
            ORB_INFO("ranks %s are threads sharing GPU %d: about %d streams on the context's %d hardware queues "
                     "(CUDA_DEVICE_MAX_CONNECTIONS)",
                     list, s->device, need, queues);
    }
    for (int p = me + 1; p < c->nranks; p++)
        if (s->ipc.link[p] == ORB_CUDA_LINK_HOST)
            ORB_WARN("ranks %d and %d: their GPUs cannot access each other (cudaDeviceCanAccessPeer): pieces "
                     "between them go through host shared memory and cross PCIe twice",
                     me, p);
    ORB_INFO("device path ready on GPU %d (%s): %d channels x %u slots (%zu bytes simple, %d bytes LL) per peer, "
             "%zu bytes of FIFOs",
             s->device, name, c->nchannels, c->nslots, c->slot_bytes, ORB_CUDA_LL_SLOT_BYTES, s->ipc.region_bytes);
}

orb_status_t orb_cuda_state_setup(struct orb_comm *c, struct orb_cuda_state *s, int device, char *err,
                                  size_t errlen)
{
    if (s->ready)
        return ORB_OK;
    if (s->broken) {
        snprintf(err, errlen, "%s", s->broken_msg);
        return s->broken;
    }
    orb_status_t st = ORB_OK;
    orb_cuda_conn_t *conns = NULL;
    orb_cuda_ctrl_t **pctrl = NULL;
    size_t nconn = (size_t)c->nranks * (size_t)c->nchannels;
    double deadline = orb_now() + orb_param_num(ORB_PARAM_INIT_TIMEOUT);
    s->device = device;
    CUDA_TRY(cudaSetDevice(device), "cudaSetDevice");
    s->stride[ORB_CUDA_PROTO_SIMPLE] = orb_cuda_slot_stride(ORB_CUDA_PROTO_SIMPLE, c->slot_bytes);
    s->stride[ORB_CUDA_PROTO_LL] = orb_cuda_slot_stride(ORB_CUDA_PROTO_LL, ORB_CUDA_LL_SLOT_BYTES);
    char name[96];
    snprintf(name, sizeof name, "%.80s-cuda", c->bs.cards[c->rank].shm_name);
    /* One stream per communicator, its own, for setup and NULL-stream calls alike. */
    CUDA_TRY(cudaStreamCreateWithFlags(&s->internal, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    CUDA_TRY(cudaEventCreateWithFlags(&s->last_done, cudaEventDisableTiming), "cudaEventCreate");
    CUDA_TRY(cudaEventCreateWithFlags(&s->legacy_done, cudaEventDisableTiming), "cudaEventCreate");
    orb_cuda_ipc_args_t args = {
        .rank = c->rank, .nranks = c->nranks, .nchannels = c->nchannels, .nslots = c->nslots,
        .stride = {s->stride[0], s->stride[1]}, .device = device, .shm_name = name, .deadline = deadline,
        .stream = s->internal,
    };
    st = orb_cuda_ipc_setup(&s->ipc, &args, &c->bs, c->bs.cards, err, errlen);
    if (st != ORB_OK)
        goto out;

    conns = calloc(nconn, sizeof *conns);
    pctrl = calloc((size_t)c->nranks, sizeof *pctrl);
    if (!conns || !pctrl) {
        snprintf(err, errlen, "out of memory for the connection table");
        st = ORB_ERR_NO_MEMORY;
        goto out;
    }
    orb_cuda_ipc_conns(&s->ipc, conns);
    for (int r = 0; r < c->nranks; r++)
        pctrl[r] = orb_cuda_ipc_ctrl_dev(&s->ipc, r);
    CUDA_TRY(cudaMalloc((void **)&s->conns, nconn * sizeof *conns), "cudaMalloc of the connection table");
    CUDA_TRY(cudaMalloc((void **)&s->peer_ctrl, (size_t)c->nranks * sizeof *pctrl), "cudaMalloc");
    CUDA_TRY(cudaMalloc((void **)&s->devstate, sizeof *s->devstate), "cudaMalloc");
    CUDA_TRY(cudaMalloc((void **)&s->arena, ORB_CUDA_PLAN_ARENA_STEPS * sizeof *s->arena), "cudaMalloc of the plan arena");
    CUDA_TRY(cudaHostAlloc((void **)&s->arena_mirror, ORB_CUDA_PLAN_ARENA_STEPS * sizeof *s->arena_mirror,
                           cudaHostAllocDefault),
             "cudaHostAlloc of the plan arena's mirror");
    /* Every kernel loaded now, while nothing of ours runs (lazy loading: exec_cuda.h). */
    if ((st = orb_cuda_exec_load(err, errlen)) != ORB_OK)
        goto out;
    /* before the final exchange: no peer's kernel runs yet to wait for (cuda_trace.h) */
    if (orb_comm_trace_steps_on(c))
        orb_cuda_trace_prepare(c, s);
    CUDA_TRY(cudaMemcpyAsync(s->conns, conns, nconn * sizeof *conns, cudaMemcpyHostToDevice, s->internal),
             "cudaMemcpyAsync");
    CUDA_TRY(cudaMemcpyAsync(s->peer_ctrl, pctrl, (size_t)c->nranks * sizeof *pctrl, cudaMemcpyHostToDevice,
                             s->internal),
             "cudaMemcpyAsync");
    CUDA_TRY(cudaMemsetAsync(s->devstate, 0, sizeof *s->devstate, s->internal), "cudaMemsetAsync");
    CUDA_TRY(cudaStreamSynchronize(s->internal), "cudaStreamSynchronize");
    CUDA_TRY(cudaDeviceGetAttribute(&s->sm_count, cudaDevAttrMultiProcessorCount, device), "cudaDeviceGetAttribute");
    s->gpu_ranks = 1;
    for (int r = 0; r < c->nranks; r++)
        s->gpu_ranks += s->ipc.link[r] == ORB_CUDA_LINK_SAME_GPU_THREADS || s->ipc.link[r] == ORB_CUDA_LINK_SAME_GPU_IPC;
    s->ctrl = orb_cuda_ipc_ctrl(&s->ipc, c->rank);
    double t = c->timeout_s > 0 && c->timeout_s < 1e9 ? c->timeout_s : 1e9;
    s->timeout_ns = (uint64_t)(t * 1e9);
out:
    free(conns);
    free(pctrl);
    /* all ranks ready, or all give up: a rank that failed alone would leave the others'
     * kernels waiting for it until the timeout */
    if (s->ipc.link) {
        int32_t *all = calloc((size_t)c->nranks, sizeof *all);
        orb_status_t bst = all ? ORB_OK : ORB_ERR_NO_MEMORY;
        if (all) {
            all[c->rank] = st;
            bst = orb_bootstrap_allgather(&c->bs, all, sizeof *all, deadline);
            for (int r = 0; r < c->nranks && bst == ORB_OK && st == ORB_OK; r++)
                if (all[r] != ORB_OK) {
                    st = (orb_status_t)all[r];
                    snprintf(err, errlen, "rank %d could not set up its device path (see its log)", r);
                }
            free(all);
        }
        if (bst != ORB_OK && st == ORB_OK) {
            st = bst;
            snprintf(err, errlen, "the final exchange of the device setup failed (%s)", orb_strerror(bst));
        }
    }
    if (st != ORB_OK) {
        s->broken = st;
        snprintf(s->broken_msg, sizeof s->broken_msg, "the device path of this communicator could not be set up: %s",
                 err);
        return st;
    }
    s->ready = 1;
    report_mode(c, s);
    return ORB_OK;
}

/* ---- errors kernels leave ---------------------------------------------------------------------- */

static void describe_record(const orb_cuda_err_t *e, char *buf, size_t len)
{
    orb_slot_hdr_t want, got;
    memcpy(&want, &e->want, sizeof want);
    memcpy(&got, &e->got, sizeof got);
    char mine[160], theirs[160], where[96];
    orb_exec_describe_sig(&want, mine, sizeof mine);
    orb_exec_describe_sig(&got, theirs, sizeof theirs);
    if (e->step == UINT32_MAX)
        snprintf(where, sizeof where, "channel %d, signature handshake", e->channel);
    else
        snprintf(where, sizeof where, "channel %d, step %u, piece %u (%s)", e->channel, e->step + 1, e->piece + 1,
                 e->proto == ORB_CUDA_PROTO_LL ? "LL" : "simple");
    switch (e->status) {
    case ORB_ERR_MISMATCH:
        if (got.seq == want.seq && got.count == want.count && got.coll == want.coll && got.dtype == want.dtype &&
            got.op == want.op && got.root == want.root)
            snprintf(buf, len, "rank %d: %s on the device received a piece of %u bytes from rank %d where it "
                               "expected %u (%s): the ranks disagree on the algorithm or the pipeline settings "
                               "(ORBIT_ALGO, ORBIT_CHUNK_BYTES, ORBIT_NCHANNELS, ORBIT_CUDA_PROTO must match on "
                               "every rank)",
                     e->rank, mine, got.nbytes, e->peer, e->want_nbytes, where);
        else
            snprintf(buf, len, "rank %d called %s but rank %d called %s: every rank must make the same collective "
                               "calls, with the same arguments, in the same order",
                     e->rank, mine, e->peer, theirs);
        break;
    case ORB_ERR_TIMEOUT:
        snprintf(buf, len, "rank %d: %s on the device made no progress for ORBIT_TIMEOUT seconds: %s waits for "
                           "rank %d to %s (all ranks' kernels must be resident at once; ranks sharing a GPU as "
                           "processes need MPS or time slicing to progress)",
                 e->rank, mine, where, e->peer,
                 e->waiting == ORB_CUDA_WAIT_SLOT ? "take what this rank sent (a free slot)" : "send its data");
        break;
    case ORB_ERR_INTERNAL:
        snprintf(buf, len, "rank %d: %s: the device executor met a malformed plan step (%s): a bug in orbit",
                 e->rank, mine, where);
        break;
    default:
        snprintf(buf, len, "rank %d: %s: the device executor failed with %s (%s)", e->rank, mine,
                 orb_status_name((orb_status_t)e->status), where);
    }
}

orb_status_t orb_cuda_state_check(struct orb_comm *c, struct orb_cuda_state *s, char *err, size_t errlen)
{
    if (s->broken) {
        snprintf(err, errlen, "%s", s->broken_msg);
        return s->broken;
    }
    if (!s->ready)
        return ORB_OK;
    orb_cuda_ctrl_t *me = s->ctrl;
    orb_cuda_err_t e;
    int32_t st = __atomic_load_n(&me->err.status, __ATOMIC_ACQUIRE);
    if (st != 0) {
        memcpy(&e, &me->err, sizeof e);
        e.status = st;
        describe_record(&e, err, errlen);
    } else if ((st = __atomic_load_n(&me->abort_status, __ATOMIC_ACQUIRE)) != 0) {
        int from = __atomic_load_n(&me->abort_from, __ATOMIC_RELAXED);
        if (from == c->rank || from < 0 || from >= c->nranks) {
            st = ORB_ERR_ABORTED;
            snprintf(err, errlen, "rank %d: orb_comm_abort was called on this communicator", c->rank);
        } else {
            orb_cuda_ctrl_t *o = orb_cuda_ipc_ctrl(&s->ipc, from);
            int32_t ost = __atomic_load_n(&o->err.status, __ATOMIC_ACQUIRE);
            char what[900];
            if (ost != 0) {
                memcpy(&e, &o->err, sizeof e);
                e.status = ost;
                describe_record(&e, what, sizeof what);
                st = ost;
                snprintf(err, errlen, "%s (reported by rank %d; rank %d's device calls stopped)", what, from,
                         c->rank);
            } else {
                snprintf(err, errlen, "rank %d called orb_comm_abort: rank %d's device calls stopped", from, c->rank);
            }
        }
    }
    if (st != 0) {
        s->broken = (orb_status_t)st;
        snprintf(s->broken_msg, sizeof s->broken_msg, "%s", err);
    }
    return (orb_status_t)st;
}

/* ---- device plans and scratch ------------------------------------------------------------------ */

static int dplan_matches(const orb_cuda_dplan_t *d, const orb_call_key_t *k, const orb_plan_t *p)
{
    return d->key.coll == k->coll && d->key.count == k->count && d->key.elem_size == k->elem_size &&
           d->key.root == k->root && d->key.op == k->op && d->key.vhash == k->vhash && d->algo == p->args.algo &&
           d->chunk_elems == p->args.chunk_elems && d->nlanes == p->nlanes;
}

orb_status_t orb_cuda_state_plan(struct orb_cuda_state *s, const orb_call_key_t *key, const orb_plan_t *plan,
                                 int pin, cudaStream_t stream, const orb_cuda_dplan_t **out, char *err,
                                 size_t errlen)
{
    for (int i = 0; i < s->nplans; i++)
        if (dplan_matches(&s->plans[i], key, plan)) {
            s->plans[i].used = ++s->clock;
            s->plans[i].pinned |= pin;
            *out = &s->plans[i];
            return ORB_OK;
        }
    orb_cuda_dplan_t d = {.key = *key, .algo = plan->args.algo, .chunk_elems = plan->args.chunk_elems,
                          .nlanes = plan->nlanes, .pinned = pin};
    size_t total = 0;
    for (int ch = 0; ch < plan->nlanes; ch++) {
        d.lane_off[ch] = (uint32_t)total;
        d.lane_n[ch] = (uint32_t)plan->lanes[ch].nsteps;
        total += plan->lanes[ch].nsteps;
    }
    if (total > UINT32_MAX / 2) {
        snprintf(err, errlen, "a plan of %zu steps is too long for the device executor", total);
        return ORB_ERR_UNSUPPORTED;
    }
    orb_status_t st = ORB_OK;
    orb_step_t *host = NULL;
    if (total && s->arena && s->arena_used + total <= ORB_CUDA_PLAN_ARENA_STEPS) {
        orb_step_t *m = s->arena_mirror + s->arena_used;
        for (int ch = 0; ch < plan->nlanes; ch++)
            memcpy(m + d.lane_off[ch], plan->lanes[ch].steps, d.lane_n[ch] * sizeof *m);
        d.steps = s->arena + s->arena_used;
        d.in_arena = 1;
        /* A capturing stream would only copy when the graph runs, and an uncaptured call could
         * meet the cached plan first: then the copy goes on our own stream, waited for. */
        cudaStream_t up = pin ? s->internal : stream;
        CUDA_TRY(cudaMemcpyAsync(d.steps, m, total * sizeof *m, cudaMemcpyHostToDevice, up), "cudaMemcpyAsync");
        if (pin)
            CUDA_TRY(cudaStreamSynchronize(s->internal), "cudaStreamSynchronize");
        s->arena_used += total;
    } else if (total) {
        static int warned;
        if (!__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED))
            ORB_WARN("the device plan arena (%d steps) is full: further plans are uploaded with cudaMalloc and a "
                     "wait, which can stall ranks that share a GPU as threads",
                     ORB_CUDA_PLAN_ARENA_STEPS);
        size_t bytes = total * sizeof *host;
        host = malloc(bytes);
        if (!host) {
            snprintf(err, errlen, "out of memory for a plan");
            return ORB_ERR_NO_MEMORY;
        }
        for (int ch = 0; ch < plan->nlanes; ch++)
            memcpy(host + d.lane_off[ch], plan->lanes[ch].steps, d.lane_n[ch] * sizeof *host);
        CUDA_TRY(cudaMalloc((void **)&d.steps, bytes), "cudaMalloc of a plan");
        CUDA_TRY(cudaMemcpyAsync(d.steps, host, bytes, cudaMemcpyHostToDevice, s->internal), "cudaMemcpyAsync");
        CUDA_TRY(cudaStreamSynchronize(s->internal), "cudaStreamSynchronize");
    }
    int slot = -1;
    if (s->nplans >= ORB_CUDA_DPLANS) /* retire the least used plan no graph holds */
        for (int i = 0; i < s->nplans; i++)
            if (!s->plans[i].pinned && (slot < 0 || s->plans[i].used < s->plans[slot].used))
                slot = i;
    if (slot >= 0) {
        if (!s->plans[slot].in_arena)
            bury(s, s->plans[slot].steps);
    } else {
        if (s->nplans == s->capplans) {
            int n = s->capplans ? 2 * s->capplans : 16;
            orb_cuda_dplan_t *p = realloc(s->plans, (size_t)n * sizeof *p);
            if (!p) {
                snprintf(err, errlen, "out of memory for the device plan cache");
                st = ORB_ERR_NO_MEMORY;
                goto out;
            }
            s->plans = p;
            s->capplans = n;
        }
        slot = s->nplans++;
    }
    d.used = ++s->clock;
    s->plans[slot] = d;
    d.steps = NULL; /* owned by the cache now */
    *out = &s->plans[slot];
out:
    free(host);
    if (d.steps && !d.in_arena)
        cudaFree(d.steps); /* never launched */
    return st;
}

orb_status_t orb_cuda_state_scratch(struct orb_cuda_state *s, size_t bytes, cudaStream_t stream, int capturing,
                                    char **out, char *err, size_t errlen)
{
    if (bytes > s->scratch_bytes) {
        size_t n = bytes > 2 * s->scratch_bytes ? bytes : 2 * s->scratch_bytes;
        char *p = NULL;
        /* In stream order: a plain device allocation between two launches keeps kernels of
         * other streams from running together, and a peer's may already spin for ours. While a
         * graph is captured it would become the graph's own memory: then the plain way. */
        cudaError_t rc = capturing ? cudaMalloc((void **)&p, n) : cudaMallocAsync((void **)&p, n, stream);
        if (rc != cudaSuccess) {
            char what[96];
            snprintf(what, sizeof what, "cudaMalloc of %zu bytes of scratch", n);
            return cuda_fail(rc, what, err, errlen);
        }
        bury(s, s->scratch);
        s->scratch = p;
        s->scratch_bytes = n;
    }
    *out = s->scratch;
    return ORB_OK;
}

/* ---- hooks for the communicator life cycle (cuda_hooks.h) ----------------------------------------- */

orb_status_t orb_cuda_comm_init_device(struct orb_comm *c, int device, char *err, size_t errlen)
{
    struct orb_cuda_state *s = orb_cuda_state_of(c, 1);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return ORB_ERR_NO_MEMORY;
    }
    s->bound_device = device;
    int d;
    orb_status_t st = orb_cuda_state_pick_device(s, -1, &d, err, errlen);
    return st != ORB_OK ? st : orb_cuda_state_setup(c, s, d, err, errlen);
}

void orb_cuda_comm_bind_local_rank(struct orb_comm *c, int local_rank)
{
    struct orb_cuda_state *s = orb_cuda_state_of(c, 1);
    if (s)
        s->local_rank = local_rank;
}

void orb_cuda_comm_inherit(struct orb_comm *child, struct orb_comm *parent)
{
    struct orb_cuda_state *p = orb_cuda_state_of(parent, 0), *s;
    if (!p || !(s = orb_cuda_state_of(child, 1)))
        return; /* a parent without a device path, or no memory: the child picks as a new comm does */
    s->bound_device = p->device >= 0 ? p->device : p->bound_device;
    s->local_rank = p->local_rank;
}

orb_status_t orb_cuda_comm_setup(struct orb_comm *c, char *err, size_t errlen)
{
    struct orb_cuda_state *s = orb_cuda_state_of(c, 1);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return ORB_ERR_NO_MEMORY;
    }
    int d, old = -1;
    orb_status_t st = orb_cuda_state_pick_device(s, -1, &d, err, errlen);
    if (st != ORB_OK)
        return st;
    cudaGetDevice(&old);
    st = orb_cuda_state_setup(c, s, d, err, errlen);
    if (old >= 0)
        cudaSetDevice(old);
    return st;
}

void orb_cuda_comm_abort(struct orb_comm *c)
{
    struct orb_cuda_state *s = orb_cuda_state_of(c, 0);
    if (!s || !s->ready)
        return;
    s->host_aborted = 1;
    for (int r = 0; r < c->nranks; r++) {
        orb_cuda_ctrl_t *o = orb_cuda_ipc_ctrl(&s->ipc, r);
        if (__atomic_load_n(&o->abort_status, __ATOMIC_ACQUIRE) != 0)
            continue;
        __atomic_store_n(&o->abort_from, c->rank, __ATOMIC_RELAXED);
        __atomic_store_n(&o->abort_status, r == c->rank ? ORB_ERR_ABORTED : ORB_ERR_PEER_LOST, __ATOMIC_RELEASE);
    }
}

void orb_cuda_comm_destroy(struct orb_comm *c)
{
    struct orb_cuda_state *s = __atomic_exchange_n(&c->cuda, NULL, __ATOMIC_ACQ_REL);
    if (!s)
        return;
    orb_cuda_trace_collect(c, s, 1); /* the trace is written after this, without the state */
    state_free(s);
}

void orb_cuda_trace_flush(struct orb_comm *c, int wait)
{
    struct orb_cuda_state *s = orb_cuda_state_of(c, 0);
    if (s)
        orb_cuda_trace_collect(c, s, wait);
}

orb_status_t orb_cuda_async_error(struct orb_comm *c)
{
    struct orb_cuda_state *s = orb_cuda_state_of(c, 0);
    if (!s)
        return ORB_OK;
    if (s->broken)
        return s->broken;
    if (!s->ready)
        return ORB_OK;
    int32_t st = __atomic_load_n(&s->ctrl->err.status, __ATOMIC_ACQUIRE);
    if (st == 0)
        st = __atomic_load_n(&s->ctrl->abort_status, __ATOMIC_ACQUIRE);
    return (orb_status_t)st;
}
