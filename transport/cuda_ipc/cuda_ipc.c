/* cuda_ipc: regions, their exchange over the bootstrap, and the connection table. */
#include "transport/cuda_ipc/cuda_ipc.h"

#include <cuda_runtime_api.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/log.h"

/* ---- layout: the same in both regions of every rank ------------------------------------ */

static size_t align_up(size_t v, size_t a) { return (v + a - 1) / a * a; }

static size_t fifo_bytes(const orb_cuda_ipc_args_t *a, int proto)
{
    return align_up((size_t)a->nslots * a->stride[proto], 128);
}

/* Receive FIFO of (proto, sender src, channel ch). */
static size_t fifo_off(const orb_cuda_ipc_args_t *a, int proto, int src, int ch)
{
    size_t pair = fifo_bytes(a, ORB_CUDA_PROTO_SIMPLE) + fifo_bytes(a, ORB_CUDA_PROTO_LL);
    size_t off = ORB_CUDA_CTRL_BYTES + ((size_t)src * (size_t)a->nchannels + (size_t)ch) * pair;
    return proto == ORB_CUDA_PROTO_LL ? off + fifo_bytes(a, ORB_CUDA_PROTO_SIMPLE) : off;
}

/* Done words of this rank's sends to (receiver dst, channel ch). */
static size_t done_off(const orb_cuda_ipc_args_t *a, int proto, int dst, int ch)
{
    size_t base = fifo_off(a, ORB_CUDA_PROTO_SIMPLE, a->nranks, 0);
    return base + (((size_t)dst * (size_t)a->nchannels + (size_t)ch) * ORB_CUDA_NPROTOS + (size_t)proto) *
                      a->nslots * sizeof(uint64_t);
}

static size_t region_bytes(const orb_cuda_ipc_args_t *a)
{
    return align_up(done_off(a, 0, a->nranks, 0), 4096);
}

/* ---- exchanges: each entry starts with the sender's verdict, so all fail together ---------- */

typedef struct {
    int32_t status; /* orb_status_t of this rank's local work before the exchange */
    char why[252];
} verdict_t;

typedef struct {
    verdict_t v;
    uint64_t process; /* random per process: equal means same address space */
    uint8_t uuid[16];
    char busid[32];
    uint64_t region_bytes;
} ident_t;

typedef struct {
    verdict_t v;
    uint64_t dev_ptr;
    uint64_t host_bytes;
    cudaIpcMemHandle_t handle;
    char shm_name[96];
} region_t;

static orb_status_t exchange(orb_bootstrap_t *bs, void *all, size_t size, int nranks, double deadline, char *err,
                             size_t errlen)
{
    orb_status_t st = orb_bootstrap_allgather(bs, all, size, deadline);
    if (st != ORB_OK) {
        snprintf(err, errlen, "exchanging CUDA connection details over the bootstrap failed (%s): a rank left or "
                              "timed out (every rank must make its first device call together)",
                 orb_strerror(st));
        return st;
    }
    for (int r = 0; r < nranks; r++) {
        const verdict_t *v = (const verdict_t *)((const char *)all + (size_t)r * size);
        if (v->status != ORB_OK) {
            snprintf(err, errlen, "rank %d: %.*s", r, (int)sizeof v->why, v->why);
            return (orb_status_t)v->status;
        }
    }
    return ORB_OK;
}

static void verdict_cuda(verdict_t *v, const char *what, cudaError_t rc)
{
    if (v->status != ORB_OK)
        return; /* keep the first failure */
    v->status = ORB_ERR_CUDA;
    snprintf(v->why, sizeof v->why, "%s failed: %s (%s)", what, cudaGetErrorString(rc), cudaGetErrorName(rc));
    (void)cudaGetLastError(); /* a failed call must not be reported again by the next one */
}

static void verdict_sys(verdict_t *v, const char *what)
{
    if (v->status != ORB_OK)
        return;
    v->status = ORB_ERR_SYSTEM;
    snprintf(v->why, sizeof v->why, "%s failed: %s", what, strerror(errno));
}

static uint64_t process_token;
static pthread_once_t process_once = PTHREAD_ONCE_INIT;
static void make_token(void)
{
    if (orb_random_bytes(&process_token, sizeof process_token) != ORB_OK)
        process_token = ((uint64_t)getpid() << 32) ^ (uint64_t)(uintptr_t)&process_token;
}

/* ---- host segments ------------------------------------------------------------------------ */

/* Map (and register with CUDA) rank r's segment of len bytes; create it when r is us. */
static void map_segment(orb_cuda_ipc_t *x, int r, const char *name, size_t len, int create, verdict_t *v)
{
    int fd = -1;
    if (create) {
        fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
        if (fd < 0 && errno == EEXIST) { /* left behind by a crashed run with the same id */
            shm_unlink(name);
            fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
        }
        if (fd >= 0)
            x->shm_linked = 1;
        if (fd >= 0 && ftruncate(fd, (off_t)len) != 0) {
            verdict_sys(v, "ftruncate of the CUDA control segment");
            close(fd);
            return;
        }
    } else {
        fd = shm_open(name, O_RDWR, 0);
    }
    if (fd < 0) {
        char what[160];
        snprintf(what, sizeof what, "shm_open(%s)", name);
        verdict_sys(v, what);
        return;
    }
    struct stat sb;
    if (fstat(fd, &sb) != 0 || (size_t)sb.st_size < len) {
        close(fd);
        if (v->status == ORB_OK) {
            v->status = ORB_ERR_PROTOCOL;
            snprintf(v->why, sizeof v->why, "segment %s of rank %d is smaller than announced", name, r);
        }
        return;
    }
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) {
        verdict_sys(v, "mmap of a CUDA control segment");
        return;
    }
    x->host[r] = p;
    x->host_len[r] = len;
    cudaError_t rc = cudaHostRegister(p, len, cudaHostRegisterMapped | cudaHostRegisterPortable);
    if (rc != cudaSuccess) {
        verdict_cuda(v, "cudaHostRegister of a shared-memory segment", rc);
        return;
    }
    x->registered[r] = 1;
    void *d = NULL;
    rc = cudaHostGetDevicePointer(&d, p, 0);
    if (rc != cudaSuccess) {
        verdict_cuda(v, "cudaHostGetDevicePointer", rc);
        return;
    }
    x->host_dev[r] = d;
}

/* ---- setup ---------------------------------------------------------------------------------- */

const char *orb_cuda_link_name(orb_cuda_link_t link)
{
    switch (link) {
    case ORB_CUDA_LINK_SELF: return "self";
    case ORB_CUDA_LINK_SAME_GPU_THREADS: return "same GPU, same process";
    case ORB_CUDA_LINK_SAME_GPU_IPC: return "same GPU, CUDA IPC";
    case ORB_CUDA_LINK_P2P: return "peer GPU (P2P)";
    case ORB_CUDA_LINK_HOST: return "through host memory (no P2P)";
    }
    return "?";
}

static orb_status_t alloc_tables(orb_cuda_ipc_t *x, int n)
{
    x->peer_dev = calloc((size_t)n, sizeof *x->peer_dev);
    x->ipc_opened = calloc((size_t)n, 1);
    x->host = calloc((size_t)n, sizeof *x->host);
    x->host_dev = calloc((size_t)n, sizeof *x->host_dev);
    x->host_len = calloc((size_t)n, sizeof *x->host_len);
    x->registered = calloc((size_t)n, 1);
    x->link = calloc((size_t)n, 1);
    return x->peer_dev && x->ipc_opened && x->host && x->host_dev && x->host_len && x->registered && x->link
               ? ORB_OK
               : ORB_ERR_NO_MEMORY;
}

/* Which ranks this rank can reach in device memory, and how. */
static void find_links(orb_cuda_ipc_t *x, const ident_t *ids, const uint8_t *rows, size_t rowlen)
{
    const int me = x->a.rank, n = x->a.nranks;
    for (int p = 0; p < n; p++) {
        if (p == me)
            x->link[p] = ORB_CUDA_LINK_SELF;
        else if (!memcmp(ids[p].uuid, ids[me].uuid, sizeof ids[me].uuid))
            x->link[p] = ids[p].process == ids[me].process ? ORB_CUDA_LINK_SAME_GPU_THREADS : ORB_CUDA_LINK_SAME_GPU_IPC;
        else if (rows[(size_t)me * rowlen + sizeof(verdict_t) + (size_t)p] &&
                 rows[(size_t)p * rowlen + sizeof(verdict_t) + (size_t)me])
            x->link[p] = ORB_CUDA_LINK_P2P;
        else
            x->link[p] = ORB_CUDA_LINK_HOST;
    }
}

/* Map peer p's device region here. */
static void map_peer_region(orb_cuda_ipc_t *x, int p, const ident_t *ids, const region_t *rg, verdict_t *v)
{
    const int me = x->a.rank;
    int same_process = ids[p].process == ids[me].process;
    if (x->link[p] == ORB_CUDA_LINK_HOST || x->link[p] == ORB_CUDA_LINK_SELF)
        return;
    if (same_process) {
        if (x->link[p] == ORB_CUDA_LINK_P2P) {
            int ord = -1;
            cudaError_t rc = cudaDeviceGetByPCIBusId(&ord, ids[p].busid);
            if (rc == cudaSuccess)
                rc = cudaDeviceEnablePeerAccess(ord, 0);
            if (rc == cudaErrorPeerAccessAlreadyEnabled)
                rc = cudaSuccess, (void)cudaGetLastError();
            if (rc != cudaSuccess) {
                verdict_cuda(v, "cudaDeviceEnablePeerAccess", rc);
                return;
            }
        }
        x->peer_dev[p] = (char *)(uintptr_t)rg[p].dev_ptr; /* one address space: use it as is */
        return;
    }
    void *ptr = NULL;
    cudaError_t rc = cudaIpcOpenMemHandle(&ptr, rg[p].handle, cudaIpcMemLazyEnablePeerAccess);
    if (rc != cudaSuccess) {
        char what[96];
        snprintf(what, sizeof what, "cudaIpcOpenMemHandle of rank %d's FIFOs", p);
        verdict_cuda(v, what, rc);
        return;
    }
    x->peer_dev[p] = ptr;
    x->ipc_opened[p] = 1;
}

orb_status_t orb_cuda_ipc_setup(orb_cuda_ipc_t *x, const orb_cuda_ipc_args_t *args, orb_bootstrap_t *bs,
                                const orb_card_t *cards, char *err, size_t errlen)
{
    memset(x, 0, sizeof *x);
    x->a = *args;
    x->a.shm_name = NULL;
    snprintf(x->shm_name, sizeof x->shm_name, "%s", args->shm_name);
    const int me = args->rank, n = args->nranks;
    /* Deterministic refusals first: every rank sees the same cards and refuses alike. */
    for (int r = 0; r < n; r++)
        if (cards[r].host_id != cards[me].host_id) {
            snprintf(err, errlen, "ranks %d (%s) and %d (%s) are on different hosts: device buffers need every "
                                  "rank of the communicator on one host (no network path for the device executor "
                                  "yet); use host buffers with a NULL stream",
                     me, cards[me].hostname, r, cards[r].hostname);
            return ORB_ERR_UNSUPPORTED;
        }
    if (n > ORB_CUDA_MAX_RANKS) {
        snprintf(err, errlen, "%d ranks: the device executor supports at most %d ranks per communicator", n,
                 ORB_CUDA_MAX_RANKS);
        return ORB_ERR_UNSUPPORTED;
    }
    orb_status_t st = alloc_tables(x, n);
    ident_t *ids = calloc((size_t)n, sizeof *ids);
    size_t rowlen = sizeof(verdict_t) + (size_t)n;
    uint8_t *rows = calloc((size_t)n, rowlen);
    region_t *rg = calloc((size_t)n, sizeof *rg);
    verdict_t *fin = calloc((size_t)n, sizeof *fin);
    if (st != ORB_OK || !ids || !rows || !rg || !fin) {
        snprintf(err, errlen, "out of memory for the CUDA connection tables");
        st = ORB_ERR_NO_MEMORY;
        goto out;
    }
    pthread_once(&process_once, make_token);
    x->region_bytes = region_bytes(&x->a);

    /* 1. who is where: GPU identity (UUIDs survive CUDA_VISIBLE_DEVICES), process */
    ident_t *mine = &ids[me];
    mine->process = process_token;
    mine->region_bytes = x->region_bytes;
    struct cudaDeviceProp prop;
    cudaError_t rc = cudaGetDeviceProperties(&prop, args->device);
    if (rc != cudaSuccess)
        verdict_cuda(&mine->v, "cudaGetDeviceProperties", rc);
    else
        memcpy(mine->uuid, prop.uuid.bytes, sizeof mine->uuid);
    rc = cudaDeviceGetPCIBusId(mine->busid, (int)sizeof mine->busid, args->device);
    if (rc != cudaSuccess)
        verdict_cuda(&mine->v, "cudaDeviceGetPCIBusId", rc);
    if ((st = exchange(bs, ids, sizeof *ids, n, args->deadline, err, errlen)) != ORB_OK)
        goto out;
    for (int r = 0; r < n; r++)
        if (ids[r].region_bytes != x->region_bytes) {
            snprintf(err, errlen, "rank %d lays out its FIFOs differently (%llu bytes, here %zu): ORBIT_NCHANNELS, "
                                  "ORBIT_SHM_SLOTS and ORBIT_SHM_SLOT_BYTES must match on every rank",
                     r, (unsigned long long)ids[r].region_bytes, x->region_bytes);
            st = ORB_ERR_MISMATCH;
            goto out;
        }

    /* 2. which GPUs this rank reaches directly */
    uint8_t *row = rows + (size_t)me * rowlen + sizeof(verdict_t);
    for (int p = 0; p < n; p++) {
        if (p == me || !memcmp(ids[p].uuid, mine->uuid, sizeof mine->uuid)) {
            row[p] = 1;
            continue;
        }
        int ord = -1, can = 0;
        if (cudaDeviceGetByPCIBusId(&ord, ids[p].busid) != cudaSuccess) {
            (void)cudaGetLastError(); /* not visible here (CUDA_VISIBLE_DEVICES): no P2P */
            ord = -1;
        }
        if (ord >= 0 && cudaDeviceCanAccessPeer(&can, args->device, ord) != cudaSuccess) {
            (void)cudaGetLastError();
            can = 0;
        }
        row[p] = can ? 1 : 0;
    }
    if ((st = exchange(bs, rows, rowlen, n, args->deadline, err, errlen)) != ORB_OK)
        goto out;
    find_links(x, ids, rows, rowlen);
    int staged = 0, ipc = 0;
    for (int p = 0; p < n; p++) {
        staged |= x->link[p] == ORB_CUDA_LINK_HOST;
        ipc |= (x->link[p] == ORB_CUDA_LINK_SAME_GPU_IPC || x->link[p] == ORB_CUDA_LINK_P2P) &&
               ids[p].process != mine->process;
    }

    /* 3. this rank's regions */
    region_t *rme = &rg[me];
    rc = cudaMalloc((void **)&x->dev, x->region_bytes);
    if (rc != cudaSuccess) {
        x->dev = NULL;
        char what[96];
        snprintf(what, sizeof what, "cudaMalloc of %zu bytes of FIFOs", x->region_bytes);
        verdict_cuda(&rme->v, what, rc);
    }
    /* the communicator's non-blocking stream, not the legacy one (it would wait for kernels of
     * other ranks of this process, which may be waiting for us) nor a stream of our own (every
     * stream takes one of the context's few hardware queues) */
    const cudaStream_t s = args->stream;
    if (x->dev && (rc = cudaMemsetAsync(x->dev, 0, x->region_bytes, s)) != cudaSuccess)
        verdict_cuda(&rme->v, "cudaMemsetAsync", rc);
    if (x->dev && rc == cudaSuccess && (rc = cudaStreamSynchronize(s)) != cudaSuccess)
        verdict_cuda(&rme->v, "cudaStreamSynchronize", rc);
    if (x->dev && ipc && (rc = cudaIpcGetMemHandle(&rme->handle, x->dev)) != cudaSuccess)
        verdict_cuda(&rme->v, "cudaIpcGetMemHandle", rc);
    x->host_bytes = staged ? x->region_bytes : ORB_CUDA_CTRL_BYTES;
    if (rme->v.status == ORB_OK)
        map_segment(x, me, x->shm_name, x->host_bytes, 1, &rme->v);
    rme->dev_ptr = (uint64_t)(uintptr_t)x->dev;
    rme->host_bytes = x->host_bytes;
    snprintf(rme->shm_name, sizeof rme->shm_name, "%s", x->shm_name);
    if ((st = exchange(bs, rg, sizeof *rg, n, args->deadline, err, errlen)) != ORB_OK)
        goto out;

    /* 4. the peers' regions */
    for (int p = 0; p < n && fin[me].status == ORB_OK; p++) {
        if (p == me)
            continue;
        map_segment(x, p, rg[p].shm_name, rg[p].host_bytes, 0, &fin[me]);
        map_peer_region(x, p, ids, rg, &fin[me]);
    }
    st = exchange(bs, fin, sizeof *fin, n, args->deadline, err, errlen);
    /* every rank has mapped every segment (or failed): the name can go */
    if (x->shm_linked) {
        shm_unlink(x->shm_name);
        x->shm_linked = 0;
    }
out:
    free(ids);
    free(rows);
    free(rg);
    free(fin);
    if (st != ORB_OK)
        orb_cuda_ipc_close(x);
    return st;
}

void orb_cuda_ipc_conns(const orb_cuda_ipc_t *x, orb_cuda_conn_t *conns)
{
    const orb_cuda_ipc_args_t *a = &x->a;
    const int me = a->rank;
    for (int p = 0; p < a->nranks; p++)
        for (int ch = 0; ch < a->nchannels; ch++) {
            orb_cuda_conn_t *c = &conns[(size_t)p * (size_t)a->nchannels + (size_t)ch];
            memset(c, 0, sizeof *c);
            if (p == me)
                continue;
            int host = x->link[p] == ORB_CUDA_LINK_HOST;
            char *mine = host ? x->host_dev[me] : x->dev;
            char *theirs = host ? x->host_dev[p] : x->peer_dev[p];
            for (int pr = 0; pr < ORB_CUDA_NPROTOS; pr++) {
                c->send[pr].fifo = theirs + fifo_off(a, pr, me, ch);
                c->send[pr].done = (uint64_t *)(mine + done_off(a, pr, p, ch));
                c->recv[pr].fifo = mine + fifo_off(a, pr, p, ch);
                c->recv[pr].done = (uint64_t *)(theirs + done_off(a, pr, me, ch));
            }
        }
}

orb_cuda_ctrl_t *orb_cuda_ipc_ctrl(const orb_cuda_ipc_t *x, int r) { return (orb_cuda_ctrl_t *)x->host[r]; }

orb_cuda_ctrl_t *orb_cuda_ipc_ctrl_dev(const orb_cuda_ipc_t *x, int r) { return (orb_cuda_ctrl_t *)x->host_dev[r]; }

void orb_cuda_ipc_close(orb_cuda_ipc_t *x)
{
    const int n = x->a.nranks;
    for (int p = 0; p < n && x->peer_dev; p++)
        if (x->ipc_opened && x->ipc_opened[p])
            cudaIpcCloseMemHandle(x->peer_dev[p]);
    for (int p = 0; p < n && x->host; p++) {
        if (x->registered && x->registered[p])
            cudaHostUnregister(x->host[p]);
        if (x->host[p])
            munmap(x->host[p], x->host_len[p]);
    }
    if (x->shm_linked)
        shm_unlink(x->shm_name);
    if (x->dev)
        cudaFree(x->dev);
    (void)cudaGetLastError();
    free(x->peer_dev);
    free(x->ipc_opened);
    free(x->host);
    free(x->host_dev);
    free(x->host_len);
    free(x->registered);
    free(x->link);
    memset(x, 0, sizeof *x);
}
