#include "stage.h"

#include <cuda_runtime_api.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A host region copied to the device before the call and (when back) from it afterwards,
 * through its pinned twin: a copy from pageable memory blocks the host and goes through the
 * driver's staging buffers, which the ranks of one process would share. */
typedef struct {
    char *host;
    char *dev;
    char *pin; /* the pinned bytes between host and dev */
    size_t bytes;
    int back;
} region_t;

struct stage {
    cudaStream_t stream; /* calls (unless null_stream) and every copy */
    int null_stream;
    char *arena[2];  /* device */
    char *pinned[2]; /* host, page-locked, the same layout */
    size_t arena_bytes, used[2];
    int group_depth;
    region_t *pending; /* copies back at the end of the group */
    int npending, cappending;
};

static _Thread_local stage_t *cur;

stage_t *stage_create(size_t arena_bytes, int null_stream, char *err, size_t errlen)
{
    stage_t *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    s->null_stream = null_stream;
    s->arena_bytes = arena_bytes;
    cudaError_t rc = cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking);
    for (int i = 0; i < 2 && rc == cudaSuccess; i++)
        if ((rc = cudaMalloc((void **)&s->arena[i], arena_bytes)) == cudaSuccess)
            rc = cudaHostAlloc((void **)&s->pinned[i], arena_bytes, cudaHostAllocDefault);
    if (rc != cudaSuccess) {
        snprintf(err, errlen, "staging setup (%zu bytes of device and pinned host memory x 2): %s", arena_bytes,
                 cudaGetErrorString(rc));
        stage_destroy(s);
        return NULL;
    }
    return s;
}

void stage_destroy(stage_t *s)
{
    if (!s)
        return;
    for (int i = 0; i < 2; i++) {
        if (s->arena[i])
            cudaFree(s->arena[i]);
        if (s->pinned[i])
            cudaFreeHost(s->pinned[i]);
    }
    if (s->stream)
        cudaStreamDestroy(s->stream);
    free(s->pending);
    free(s);
}

void stage_bind(stage_t *s) { cur = s; }

void *stage_stream(stage_t *s) { return s->stream; }

/* Room for bytes in one arena: the device pointer, and its pinned twin in *pin. */
static char *take(stage_t *s, int arena, size_t bytes, char **pin)
{
    size_t at = (s->used[arena] + 255) / 256 * 256;
    if (at + bytes > s->arena_bytes)
        return NULL;
    s->used[arena] = at + bytes;
    *pin = s->pinned[arena] + at;
    return s->arena[arena] + at;
}

static int copy_back(stage_t *s, const region_t *r, int n)
{
    for (int i = 0; i < n; i++)
        if (r[i].back && r[i].bytes &&
            cudaMemcpyAsync(r[i].pin, r[i].dev, r[i].bytes, cudaMemcpyDeviceToHost, s->stream) != cudaSuccess)
            return -1;
    if (cudaStreamSynchronize(s->stream) != cudaSuccess)
        return -1;
    for (int i = 0; i < n; i++)
        if (r[i].back && r[i].bytes)
            memcpy(r[i].host, r[i].pin, r[i].bytes);
    return 0;
}

/* The orbit call on device copies of [in, in+inb) and [out, out+outb); in-place layouts
 * (one region inside the other) keep their relative placement in one device block. */
typedef orb_status_t (*call_fn)(const void *in, void *out, void *arg, orb_stream_t stream);

static orb_status_t staged(const void *in, size_t inb, void *out, size_t outb, call_fn fn, void *arg)
{
    stage_t *s = cur;
    if (!s) {
        fprintf(stderr, "stage: no staging context on this thread\n");
        return ORB_ERR_INTERNAL;
    }
    const char *hi = in, *ho = out;
    region_t r[2];
    int nr = 0;
    char *din = NULL, *dout = NULL;
    int joint = hi && ho && inb && outb && hi < ho + outb && ho < hi + inb;
    if (joint) {
        const char *lo = hi < ho ? hi : ho;
        const char *end = hi + inb > ho + outb ? hi + inb : ho + outb;
        char *pin;
        char *d = take(s, 0, (size_t)(end - lo), &pin);
        if (!d)
            return ORB_ERR_NO_MEMORY;
        r[nr++] = (region_t){(char *)lo, d, pin, (size_t)(end - lo), 1};
        din = d + (hi - lo);
        dout = d + (ho - lo);
    } else {
        char *pin;
        if (hi && inb) {
            if (!(din = take(s, 0, inb, &pin)))
                return ORB_ERR_NO_MEMORY;
            r[nr++] = (region_t){(char *)hi, din, pin, inb, 0};
        }
        if (ho && outb) {
            if (!(dout = take(s, 1, outb, &pin)))
                return ORB_ERR_NO_MEMORY;
            r[nr++] = (region_t){(char *)ho, dout, pin, outb, 1};
        }
    }
    for (int i = 0; i < nr; i++) {
        memcpy(r[i].pin, r[i].host, r[i].bytes); /* the arenas are reused only after a synchronize */
        if (cudaMemcpyAsync(r[i].dev, r[i].pin, r[i].bytes, cudaMemcpyHostToDevice, s->stream) != cudaSuccess)
            return ORB_ERR_CUDA;
    }
    if (s->null_stream && cudaStreamSynchronize(s->stream) != cudaSuccess)
        return ORB_ERR_CUDA; /* the call runs on orbit's own stream: inputs must be in place */
    /* count 0: the host pointers as given (orbit must not touch them) */
    orb_status_t st = fn(din ? din : in, dout ? dout : out, arg, s->null_stream ? NULL : s->stream);
    if (s->group_depth > 0) {
        for (int i = 0; i < nr && st == ORB_OK; i++) {
            if (s->npending == s->cappending) {
                int n = s->cappending ? 2 * s->cappending : 16;
                region_t *p = realloc(s->pending, (size_t)n * sizeof *p);
                if (!p)
                    return ORB_ERR_NO_MEMORY;
                s->pending = p;
                s->cappending = n;
            }
            s->pending[s->npending++] = r[i];
        }
        return st;
    }
    if (copy_back(s, r, nr) != 0 && st == ORB_OK)
        st = ORB_ERR_CUDA;
    s->used[0] = s->used[1] = 0;
    return st;
}

orb_status_t stage_group_start(void)
{
    if (cur)
        cur->group_depth++;
    return orb_group_start();
}

orb_status_t stage_group_end(void)
{
    orb_status_t st = orb_group_end();
    stage_t *s = cur;
    if (s && s->group_depth > 0 && --s->group_depth == 0) {
        if (copy_back(s, s->pending, s->npending) != 0 && st == ORB_OK)
            st = ORB_ERR_CUDA;
        s->npending = 0;
        s->used[0] = s->used[1] = 0;
    }
    return st;
}

/* ---- one wrapper per call --------------------------------------------------------------------- */

typedef struct {
    size_t count;
    orb_dtype_t dtype;
    orb_op_t op;
    int root;
    orb_comm_t comm;
} args_t;

static void shape(orb_comm_t comm, int *n, int *r)
{
    *n = 1;
    *r = 0;
    orb_comm_size(comm, n);
    orb_comm_rank(comm, r);
}

static orb_status_t do_allreduce(const void *in, void *out, void *p, orb_stream_t st)
{
    args_t *a = p;
    return orb_allreduce(in, out, a->count, a->dtype, a->op, a->comm, st);
}
static orb_status_t do_broadcast(const void *in, void *out, void *p, orb_stream_t st)
{
    args_t *a = p;
    return orb_broadcast(in, out, a->count, a->dtype, a->root, a->comm, st);
}
static orb_status_t do_reduce(const void *in, void *out, void *p, orb_stream_t st)
{
    args_t *a = p;
    return orb_reduce(in, out, a->count, a->dtype, a->op, a->root, a->comm, st);
}
static orb_status_t do_gather(const void *in, void *out, void *p, orb_stream_t st)
{
    args_t *a = p;
    return orb_gather(in, out, a->count, a->dtype, a->root, a->comm, st);
}
static orb_status_t do_allgather(const void *in, void *out, void *p, orb_stream_t st)
{
    args_t *a = p;
    return orb_allgather(in, out, a->count, a->dtype, a->comm, st);
}
static orb_status_t do_reduce_scatter(const void *in, void *out, void *p, orb_stream_t st)
{
    args_t *a = p;
    return orb_reduce_scatter(in, out, a->count, a->dtype, a->op, a->comm, st);
}
static orb_status_t do_alltoall(const void *in, void *out, void *p, orb_stream_t st)
{
    args_t *a = p;
    return orb_alltoall(in, out, a->count, a->dtype, a->comm, st);
}
static orb_status_t do_scatter(const void *in, void *out, void *p, orb_stream_t st)
{
    args_t *a = p;
    return orb_scatter(in, out, a->count, a->dtype, a->root, a->comm, st);
}

typedef struct {
    orb_dtype_t dtype;
    orb_comm_t comm;
    const size_t *v[4]; /* sendcounts, sdispls, recvcounts, rdispls */
} vargs_t;

static orb_status_t do_alltoallv(const void *in, void *out, void *p, orb_stream_t st)
{
    vargs_t *a = p;
    return orb_alltoallv(in, a->v[0], a->v[1], out, a->v[2], a->v[3], a->dtype, a->comm, st);
}

static orb_status_t do_send(const void *in, void *out, void *p, orb_stream_t st)
{
    args_t *a = p;
    (void)out;
    return orb_send(in, a->count, a->dtype, a->root, a->comm, st);
}
static orb_status_t do_recv(const void *in, void *out, void *p, orb_stream_t st)
{
    args_t *a = p;
    (void)in;
    return orb_recv(out, a->count, a->dtype, a->root, a->comm, st);
}

/* Output regions are staged at their full (root) size on every rank, so a non-root whose
 * recvbuf orbit must leave alone is checked on the host as in the CPU test. */
orb_status_t stage_allreduce(const void *sendbuf, void *recvbuf, size_t count, orb_dtype_t dtype, orb_op_t op,
                             orb_comm_t comm, orb_stream_t stream)
{
    (void)stream;
    args_t a = {count, dtype, op, 0, comm};
    size_t b = count * orb_dtype_size(dtype);
    return staged(sendbuf, b, recvbuf, b, do_allreduce, &a);
}

orb_status_t stage_broadcast(const void *sendbuf, void *recvbuf, size_t count, orb_dtype_t dtype, int root,
                             orb_comm_t comm, orb_stream_t stream)
{
    (void)stream;
    args_t a = {count, dtype, ORB_SUM, root, comm};
    size_t b = count * orb_dtype_size(dtype);
    return staged(sendbuf, b, recvbuf, b, do_broadcast, &a);
}

orb_status_t stage_reduce(const void *sendbuf, void *recvbuf, size_t count, orb_dtype_t dtype, orb_op_t op,
                          int root, orb_comm_t comm, orb_stream_t stream)
{
    (void)stream;
    args_t a = {count, dtype, op, root, comm};
    size_t b = count * orb_dtype_size(dtype);
    return staged(sendbuf, b, recvbuf, b, do_reduce, &a);
}

orb_status_t stage_gather(const void *sendbuf, void *recvbuf, size_t sendcount, orb_dtype_t dtype, int root,
                          orb_comm_t comm, orb_stream_t stream)
{
    (void)stream;
    int n, r;
    shape(comm, &n, &r);
    args_t a = {sendcount, dtype, ORB_SUM, root, comm};
    size_t b = sendcount * orb_dtype_size(dtype);
    return staged(sendbuf, b, recvbuf, b * (size_t)n, do_gather, &a);
}

orb_status_t stage_allgather(const void *sendbuf, void *recvbuf, size_t sendcount, orb_dtype_t dtype,
                             orb_comm_t comm, orb_stream_t stream)
{
    (void)stream;
    int n, r;
    shape(comm, &n, &r);
    args_t a = {sendcount, dtype, ORB_SUM, 0, comm};
    size_t b = sendcount * orb_dtype_size(dtype);
    return staged(sendbuf, b, recvbuf, b * (size_t)n, do_allgather, &a);
}

orb_status_t stage_reduce_scatter(const void *sendbuf, void *recvbuf, size_t recvcount, orb_dtype_t dtype,
                                  orb_op_t op, orb_comm_t comm, orb_stream_t stream)
{
    (void)stream;
    int n, r;
    shape(comm, &n, &r);
    args_t a = {recvcount, dtype, op, 0, comm};
    size_t b = recvcount * orb_dtype_size(dtype);
    return staged(sendbuf, b * (size_t)n, recvbuf, b, do_reduce_scatter, &a);
}

orb_status_t stage_alltoall(const void *sendbuf, void *recvbuf, size_t count, orb_dtype_t dtype, orb_comm_t comm,
                            orb_stream_t stream)
{
    (void)stream;
    int n, r;
    shape(comm, &n, &r);
    args_t a = {count, dtype, ORB_SUM, 0, comm};
    size_t b = count * orb_dtype_size(dtype) * (size_t)n;
    return staged(sendbuf, b, recvbuf, b, do_alltoall, &a);
}

/* The regions the vectors reach (the output's gaps travel too: orbit must leave them alone). */
orb_status_t stage_alltoallv(const void *sendbuf, const size_t *sendcounts, const size_t *sdispls, void *recvbuf,
                             const size_t *recvcounts, const size_t *rdispls, orb_dtype_t dtype, orb_comm_t comm,
                             orb_stream_t stream)
{
    (void)stream;
    int n, r;
    shape(comm, &n, &r);
    size_t in = 0, out = 0, es = orb_dtype_size(dtype);
    for (int j = 0; j < n; j++) {
        if (sendcounts[j] && sdispls[j] + sendcounts[j] > in)
            in = sdispls[j] + sendcounts[j];
        if (recvcounts[j] && rdispls[j] + recvcounts[j] > out)
            out = rdispls[j] + recvcounts[j];
    }
    vargs_t a = {dtype, comm, {sendcounts, sdispls, recvcounts, rdispls}};
    return staged(sendbuf, in * es, recvbuf, out * es, do_alltoallv, &a);
}

orb_status_t stage_scatter(const void *sendbuf, void *recvbuf, size_t recvcount, orb_dtype_t dtype, int root,
                           orb_comm_t comm, orb_stream_t stream)
{
    (void)stream;
    int n, r;
    shape(comm, &n, &r);
    args_t a = {recvcount, dtype, ORB_SUM, root, comm};
    size_t b = recvcount * orb_dtype_size(dtype);
    return staged(sendbuf, sendbuf ? b * (size_t)n : 0, recvbuf, b, do_scatter, &a);
}

orb_status_t stage_send(const void *buf, size_t count, orb_dtype_t dtype, int peer, orb_comm_t comm,
                        orb_stream_t stream)
{
    (void)stream;
    args_t a = {count, dtype, ORB_SUM, peer, comm};
    return staged(buf, count * orb_dtype_size(dtype), NULL, 0, do_send, &a);
}

orb_status_t stage_recv(void *buf, size_t count, orb_dtype_t dtype, int peer, orb_comm_t comm,
                        orb_stream_t stream)
{
    (void)stream;
    args_t a = {count, dtype, ORB_SUM, peer, comm};
    return staged(NULL, 0, buf, count * orb_dtype_size(dtype), do_recv, &a);
}

int stage_skip_without_device(void)
{
    int ndev = 0;
    cudaError_t rc = cudaGetDeviceCount(&ndev);
    if (rc == cudaSuccess && ndev > 0)
        return 0;
    printf("SKIP: no CUDA device: cudaGetDeviceCount returned %s\n",
           rc != cudaSuccess ? cudaGetErrorString(rc) : "0 devices");
    return 77;
}

size_t stage_arena_for(int nranks)
{
    return (size_t)8 * ((1u << 20) + 64) * (size_t)(nranks > 0 ? nranks : 1) + (1u << 20);
}
