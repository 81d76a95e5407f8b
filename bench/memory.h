/* The two benched buffers, in host memory or on the GPU, and the host view the
 * check pattern is written and read through. */
#ifndef BENCH_MEMORY_H
#define BENCH_MEMORY_H

#include <stddef.h>

#include "options.h"

typedef struct {
    bench_device_t device;
    int cuda_device;
    void *stream; /* cudaStream_t on the GPU, NULL on the host */
    void *send, *recv;
    size_t send_bytes, recv_bytes;
    void *stage; /* host copy of a device region, for --check */
    /* host buffers from the backend's allocator (--mem lib) when set */
    void *(*lib_alloc)(void *ctx, size_t bytes);
    void (*lib_free)(void *ctx, void *p);
    void *lib_ctx;
    char err[256];
} bench_mem_t;

/* Picks the GPU from the launcher's local rank and makes a stream; before the backend
 * starts, so NCCL and orbit find the device already set. */
int bench_mem_open(bench_mem_t *m, bench_device_t device);
/* Both buffers, zeroed (which also faults the pages in before anything is timed). */
int bench_mem_alloc(bench_mem_t *m, size_t send_bytes, size_t recv_bytes);
/* Host memory to write a region starting at buf into; bench_mem_put then makes it the
 * region's content. */
void *bench_mem_host(bench_mem_t *m, void *buf);
int bench_mem_put(bench_mem_t *m, void *buf, const void *host, size_t bytes);
/* The content of a region, readable on the host (NULL on error). */
const void *bench_mem_get(bench_mem_t *m, const void *buf, size_t bytes);
/* Waits for everything queued on the stream. */
int bench_mem_sync(bench_mem_t *m);
void bench_mem_describe(const bench_mem_t *m, char *out, size_t len);
void bench_mem_close(bench_mem_t *m);

#endif
