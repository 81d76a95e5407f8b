#include "memory.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef BENCH_HAVE_CUDA
#include <cuda_runtime_api.h>

static int cuda_fail(bench_mem_t *m, const char *what, cudaError_t rc)
{
    snprintf(m->err, sizeof(m->err), "%s failed: %s", what, cudaGetErrorString(rc));
    return -1;
}

static int local_rank(void)
{
    static const char *const vars[] = {"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID"};
    for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
        const char *v = getenv(vars[i]);
        if (v)
            return atoi(v);
    }
    return 0;
}
#endif

int bench_mem_open(bench_mem_t *m, bench_device_t device)
{
    memset(m, 0, sizeof(*m));
    m->device = device;
    if (device == BENCH_DEVICE_CPU)
        return 0;
#ifdef BENCH_HAVE_CUDA
    int n = 0;
    cudaError_t rc = cudaGetDeviceCount(&n);
    if (rc != cudaSuccess || n == 0) {
        snprintf(m->err, sizeof(m->err), "--device gpu: no CUDA device found (%s)",
                 rc != cudaSuccess ? cudaGetErrorString(rc) : "0 devices");
        return -1;
    }
    m->cuda_device = local_rank() % n;
    if ((rc = cudaSetDevice(m->cuda_device)) != cudaSuccess)
        return cuda_fail(m, "cudaSetDevice", rc);
    cudaStream_t s;
    if ((rc = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking)) != cudaSuccess)
        return cuda_fail(m, "cudaStreamCreate", rc);
    m->stream = s;
    return 0;
#else
    snprintf(m->err, sizeof(m->err), "--device gpu: not built with CUDA (meson found no cuda_dep)");
    return -1;
#endif
}

int bench_mem_alloc(bench_mem_t *m, size_t send_bytes, size_t recv_bytes)
{
    /* Never zero bytes, so every buffer is a distinct valid pointer. */
    m->send_bytes = send_bytes ? send_bytes : 1;
    m->recv_bytes = recv_bytes ? recv_bytes : 1;
    if (m->device == BENCH_DEVICE_CPU && m->lib_alloc) {
        if (!(m->send = m->lib_alloc(m->lib_ctx, m->send_bytes)) || !(m->recv = m->lib_alloc(m->lib_ctx, m->recv_bytes)))
            return -1; /* the backend said why */
        memset(m->send, 0, m->send_bytes);
        memset(m->recv, 0, m->recv_bytes);
        return 0;
    }
    if (m->device == BENCH_DEVICE_CPU) {
        if (posix_memalign(&m->send, 4096, m->send_bytes) ||
            posix_memalign(&m->recv, 4096, m->recv_bytes)) {
            snprintf(m->err, sizeof(m->err), "cannot allocate %zu + %zu bytes of host memory",
                     m->send_bytes, m->recv_bytes);
            return -1;
        }
        memset(m->send, 0, m->send_bytes);
        memset(m->recv, 0, m->recv_bytes);
        return 0;
    }
#ifdef BENCH_HAVE_CUDA
    cudaError_t rc;
    if ((rc = cudaMalloc(&m->send, m->send_bytes)) != cudaSuccess ||
        (rc = cudaMalloc(&m->recv, m->recv_bytes)) != cudaSuccess)
        return cuda_fail(m, "cudaMalloc", rc);
    if ((rc = cudaMemset(m->send, 0, m->send_bytes)) != cudaSuccess ||
        (rc = cudaMemset(m->recv, 0, m->recv_bytes)) != cudaSuccess)
        return cuda_fail(m, "cudaMemset", rc);
    size_t stage = m->send_bytes > m->recv_bytes ? m->send_bytes : m->recv_bytes;
    if ((rc = cudaMallocHost(&m->stage, stage)) != cudaSuccess)
        return cuda_fail(m, "cudaMallocHost", rc);
    return 0;
#else
    return -1;
#endif
}

void *bench_mem_host(bench_mem_t *m, void *buf)
{
    return m->device == BENCH_DEVICE_CPU ? buf : m->stage;
}

int bench_mem_put(bench_mem_t *m, void *buf, const void *host, size_t bytes)
{
    if (m->device == BENCH_DEVICE_CPU)
        return 0;
#ifdef BENCH_HAVE_CUDA
    cudaError_t rc = cudaMemcpy(buf, host, bytes, cudaMemcpyHostToDevice);
    return rc == cudaSuccess ? 0 : cuda_fail(m, "cudaMemcpy to device", rc);
#else
    (void)buf;
    (void)host;
    (void)bytes;
    return -1;
#endif
}

const void *bench_mem_get(bench_mem_t *m, const void *buf, size_t bytes)
{
    if (m->device == BENCH_DEVICE_CPU)
        return buf;
#ifdef BENCH_HAVE_CUDA
    cudaError_t rc = cudaMemcpy(m->stage, buf, bytes, cudaMemcpyDeviceToHost);
    if (rc != cudaSuccess) {
        cuda_fail(m, "cudaMemcpy to host", rc);
        return NULL;
    }
    return m->stage;
#else
    (void)bytes;
    return NULL;
#endif
}

int bench_mem_sync(bench_mem_t *m)
{
    if (m->device == BENCH_DEVICE_CPU)
        return 0;
#ifdef BENCH_HAVE_CUDA
    cudaError_t rc = cudaStreamSynchronize((cudaStream_t)m->stream);
    return rc == cudaSuccess ? 0 : cuda_fail(m, "cudaStreamSynchronize", rc);
#else
    return -1;
#endif
}

void bench_mem_describe(const bench_mem_t *m, char *out, size_t len)
{
    if (m->device == BENCH_DEVICE_CPU) {
        snprintf(out, len, m->lib_alloc ? "cpu (the library's memory)" : "cpu");
        return;
    }
#ifdef BENCH_HAVE_CUDA
    struct cudaDeviceProp prop;
    if (cudaGetDeviceProperties(&prop, m->cuda_device) == cudaSuccess)
        snprintf(out, len, "gpu %d [%04x:%02x:%02x] %s", m->cuda_device, prop.pciDomainID,
                 prop.pciBusID, prop.pciDeviceID, prop.name);
    else
#endif
        snprintf(out, len, "gpu %d", m->cuda_device);
}

void bench_mem_close(bench_mem_t *m)
{
    if (m->device == BENCH_DEVICE_CPU && m->lib_free) {
        if (m->send)
            m->lib_free(m->lib_ctx, m->send);
        if (m->recv)
            m->lib_free(m->lib_ctx, m->recv);
    } else if (m->device == BENCH_DEVICE_CPU) {
        free(m->send);
        free(m->recv);
    } else {
#ifdef BENCH_HAVE_CUDA
        cudaFree(m->send);
        cudaFree(m->recv);
        cudaFreeHost(m->stage);
        if (m->stream)
            cudaStreamDestroy((cudaStream_t)m->stream);
#endif
    }
    memset(m, 0, sizeof(*m));
}
