/* The device path's contract beyond the matrix, ranks as threads of one process on one GPU:
 *   test_gpu_api errors     bad buffers come back as ORB_ERR_INVALID_ARG with the reason,
 *                           never a crash, and leave the communicator usable
 *   test_gpu_api graph      a call captured in a CUDA graph, replayed with new inputs
 *   test_gpu_api group      one thread drives every rank in orb_group_start/end (NCCL style),
 *                           with messages larger than the FIFOs both ways at once
 *   test_gpu_api mismatch   ranks disagree on the count: both get ORB_ERR_MISMATCH
 *   test_gpu_api timeout    one rank never calls: the other gets ORB_ERR_TIMEOUT (ORBIT_TIMEOUT)
 * Exits 77 without a CUDA device. */
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "orbit.h"
#include "stage.h"

static int failures;

#define CHECK(cond, ...)                                     \
    do {                                                     \
        if (!(cond)) {                                       \
            failures++;                                      \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
            fprintf(stderr, __VA_ARGS__);                    \
            fprintf(stderr, "\n");                           \
        }                                                    \
    } while (0)

#define CUDA_OK(call)                                                                              \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "FAIL %s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static int device;

static orb_comm_t *make_comms(int n)
{
    orb_comm_t *c = calloc((size_t)n, sizeof *c);
    orb_status_t st = c ? orb_comm_init_all(c, n, NULL) : ORB_ERR_NO_MEMORY;
    if (st != ORB_OK) {
        fprintf(stderr, "FAIL: orb_comm_init_all(%d): %s: %s\n", n, orb_status_name(st), orb_comm_last_error(NULL));
        exit(1);
    }
    return c;
}

static void free_comms(orb_comm_t *c, int n)
{
    for (int r = 0; r < n; r++)
        orb_comm_destroy(c[r]);
    free(c);
}

/* ---- errors ------------------------------------------------------------------------------- */

static void expect_invalid(orb_comm_t c, orb_status_t st, const char *what, const char *needle)
{
    const char *msg = orb_comm_last_error(c);
    CHECK(st == ORB_ERR_INVALID_ARG, "%s: got %s (%s), want ORB_ERR_INVALID_ARG", what, orb_status_name(st), msg);
    CHECK(strstr(msg, needle) != NULL, "%s: message \"%s\" does not say \"%s\"", what, msg, needle);
}

static void test_errors(void)
{
    orb_comm_t *cs = make_comms(1), c = cs[0];
    cudaStream_t s;
    CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    const size_t n = 1000;
    float *d_in, *d_out, *d_freed, *h = malloc(n * sizeof *h), *back = malloc(n * sizeof *back);
    CUDA_OK(cudaMalloc((void **)&d_in, n * sizeof *d_in));
    CUDA_OK(cudaMalloc((void **)&d_out, n * sizeof *d_out));
    for (size_t i = 0; i < n; i++)
        h[i] = (float)i * 0.5f;
    CUDA_OK(cudaMemcpy(d_in, h, n * sizeof *h, cudaMemcpyHostToDevice));

    expect_invalid(c, orb_allreduce(h, back, n, ORB_FLOAT32, ORB_SUM, c, s), "pageable host buffers with a stream",
                   "neither device memory nor pinned");
    expect_invalid(c, orb_allreduce((void *)(uintptr_t)0x1000, d_out, n, ORB_FLOAT32, ORB_SUM, c, s),
                   "a made-up pointer", "neither device memory nor pinned");
    /* Freed just before the call: an allocation in between (the device path's setup on the
     * first call) may be handed the same address, and the buffer would look alive again. */
    CUDA_OK(cudaMalloc((void **)&d_freed, n * sizeof *d_freed));
    CUDA_OK(cudaFree(d_freed));
    expect_invalid(c, orb_allreduce(d_freed, d_out, n, ORB_FLOAT32, ORB_SUM, c, s), "a freed buffer",
                   "already freed");
    expect_invalid(c, orb_allreduce((char *)d_in + 1, d_out, n - 1, ORB_FLOAT32, ORB_SUM, c, s),
                   "a misaligned buffer", "not aligned");
    expect_invalid(c, orb_allreduce(d_in, NULL, n, ORB_FLOAT32, ORB_SUM, c, s), "a NULL recvbuf", "NULL");
    expect_invalid(c, orb_allreduce(d_in, d_in + 1, n, ORB_FLOAT32, ORB_SUM, c, s), "overlapping buffers",
                   "overlap");
    expect_invalid(c, orb_broadcast(d_in, d_out, n, ORB_FLOAT32, 3, c, s), "root out of range", "root=3");

    /* none of that broke the communicator */
    orb_status_t st = orb_allreduce(d_in, d_out, n, ORB_FLOAT32, ORB_SUM, c, s);
    CHECK(st == ORB_OK, "a valid call after the bad ones: %s: %s", orb_status_name(st), orb_comm_last_error(c));
    CUDA_OK(cudaStreamSynchronize(s));
    CUDA_OK(cudaMemcpy(back, d_out, n * sizeof *back, cudaMemcpyDeviceToHost));
    CHECK(!memcmp(back, h, n * sizeof *h), "one-rank allreduce on the device did not copy its input");
    /* the blocking form: NULL stream, device buffers */
    CUDA_OK(cudaMemset(d_out, 0, n * sizeof *d_out));
    st = orb_allreduce(d_in, d_out, n, ORB_FLOAT32, ORB_SUM, c, NULL);
    CHECK(st == ORB_OK, "NULL-stream call: %s: %s", orb_status_name(st), orb_comm_last_error(c));
    CUDA_OK(cudaMemcpy(back, d_out, n * sizeof *back, cudaMemcpyDeviceToHost));
    CHECK(!memcmp(back, h, n * sizeof *h), "NULL-stream allreduce was not complete on return");

    cudaFree(d_in);
    cudaFree(d_out);
    cudaStreamDestroy(s);
    free(h);
    free(back);
    free_comms(cs, 1);
}

/* ---- per-rank threads ----------------------------------------------------------------------- */

typedef struct {
    orb_comm_t comm;
    int rank, n;
    size_t count;
    int skip_call; /* timeout: this rank stays away */
    orb_status_t first, second;
    char msg[1600];
} rank_job_t;

static void run_ranks(rank_job_t *jobs, int n, void *(*fn)(void *))
{
    pthread_t *th = calloc((size_t)n, sizeof *th);
    for (int r = 0; r < n; r++)
        pthread_create(&th[r], NULL, fn, &jobs[r]);
    for (int r = 0; r < n; r++)
        pthread_join(th[r], NULL);
    free(th);
}

/* in[i] of rank r = r + i (exact in float); the sum over ranks is n*i + n*(n-1)/2 */
static float input_of(int r, size_t i, int round) { return (float)(r + (int)(i % 1024) + round); }

static void *graph_rank(void *p)
{
    rank_job_t *j = p;
    cudaSetDevice(device);
    cudaStream_t s;
    float *d_in, *d_out, *h = malloc(j->count * sizeof *h);
    CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CUDA_OK(cudaMalloc((void **)&d_in, j->count * sizeof *d_in));
    CUDA_OK(cudaMalloc((void **)&d_out, j->count * sizeof *d_out));
    /* one eager call first: sets the device path up and uploads the plan */
    j->first = orb_allreduce(d_in, d_out, j->count, ORB_FLOAT32, ORB_SUM, j->comm, s);
    CUDA_OK(cudaStreamSynchronize(s));
    cudaGraph_t g;
    cudaGraphExec_t ge;
    CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    orb_status_t st = orb_allreduce(d_in, d_out, j->count, ORB_FLOAT32, ORB_SUM, j->comm, s);
    CUDA_OK(cudaStreamEndCapture(s, &g));
    j->second = st;
    if (st == ORB_OK) {
        CUDA_OK(cudaGraphInstantiate(&ge, g, 0));
        for (int round = 0; round < 3; round++) {
            for (size_t i = 0; i < j->count; i++)
                h[i] = input_of(j->rank, i, round);
            CUDA_OK(cudaMemcpyAsync(d_in, h, j->count * sizeof *h, cudaMemcpyHostToDevice, s));
            CUDA_OK(cudaGraphLaunch(ge, s));
            CUDA_OK(cudaMemcpyAsync(h, d_out, j->count * sizeof *h, cudaMemcpyDeviceToHost, s));
            CUDA_OK(cudaStreamSynchronize(s));
            size_t bad = 0;
            for (size_t i = 0; i < j->count; i++) {
                float want = 0;
                for (int r = 0; r < j->n; r++)
                    want += input_of(r, i, round);
                bad += h[i] != want;
            }
            CHECK(bad == 0, "graph replay %d, rank %d: %zu of %zu elements wrong", round, j->rank, bad, j->count);
        }
        cudaGraphExecDestroy(ge);
    } else {
        snprintf(j->msg, sizeof j->msg, "%s", orb_comm_last_error(j->comm));
    }
    cudaGraphDestroy(g);
    cudaFree(d_in);
    cudaFree(d_out);
    cudaStreamDestroy(s);
    free(h);
    return NULL;
}

static void test_graph(int n)
{
    orb_comm_t *cs = make_comms(n);
    rank_job_t *jobs = calloc((size_t)n, sizeof *jobs);
    for (int r = 0; r < n; r++)
        jobs[r] = (rank_job_t){.comm = cs[r], .rank = r, .n = n, .count = 300000};
    run_ranks(jobs, n, graph_rank);
    for (int r = 0; r < n; r++) {
        CHECK(jobs[r].first == ORB_OK, "rank %d: eager call: %s", r, orb_status_name(jobs[r].first));
        CHECK(jobs[r].second == ORB_OK, "rank %d: captured call: %s: %s", r, orb_status_name(jobs[r].second),
              jobs[r].msg);
    }
    free(jobs);
    free_comms(cs, n);
}

/* ---- one thread, every rank ------------------------------------------------------------------ */

static void test_group(int n)
{
    orb_comm_t *cs = make_comms(n);
    const size_t count = (size_t)3 << 20; /* 12 MiB of float32: larger than any FIFO */
    cudaStream_t *s = calloc((size_t)n, sizeof *s);
    float **in = calloc((size_t)n, sizeof *in), **red = calloc((size_t)n, sizeof *red),
          **got = calloc((size_t)n, sizeof *got);
    float *h = malloc(count * sizeof *h);
    for (int r = 0; r < n; r++) {
        CUDA_OK(cudaStreamCreateWithFlags(&s[r], cudaStreamNonBlocking));
        CUDA_OK(cudaMalloc((void **)&in[r], count * sizeof *h));
        CUDA_OK(cudaMalloc((void **)&red[r], count * sizeof *h));
        CUDA_OK(cudaMalloc((void **)&got[r], count * sizeof *h));
        for (size_t i = 0; i < count; i++)
            h[i] = input_of(r, i, 0);
        CUDA_OK(cudaMemcpy(in[r], h, count * sizeof *h, cudaMemcpyHostToDevice));
    }
    orb_group_start();
    for (int r = 0; r < n; r++) /* every rank sends to the next and receives from the previous at once */
        orb_allreduce(in[r], red[r], count, ORB_FLOAT32, ORB_SUM, cs[r], s[r]);
    for (int r = 0; r < n && n > 1; r++) {
        orb_send(in[r], count, ORB_FLOAT32, (r + 1) % n, cs[r], s[r]);
        orb_recv(got[r], count, ORB_FLOAT32, (r + n - 1) % n, cs[r], s[r]);
    }
    orb_status_t st = orb_group_end();
    CHECK(st == ORB_OK, "orb_group_end: %s: %s", orb_status_name(st), orb_comm_last_error(NULL));
    for (int r = 0; r < n; r++) {
        CUDA_OK(cudaStreamSynchronize(s[r]));
        CUDA_OK(cudaMemcpy(h, red[r], count * sizeof *h, cudaMemcpyDeviceToHost));
        size_t bad = 0;
        for (size_t i = 0; i < count; i++) {
            float want = 0;
            for (int q = 0; q < n; q++)
                want += input_of(q, i, 0);
            bad += h[i] != want;
        }
        CHECK(bad == 0, "group allreduce, rank %d: %zu wrong elements", r, bad);
        if (n > 1) {
            CUDA_OK(cudaMemcpy(h, got[r], count * sizeof *h, cudaMemcpyDeviceToHost));
            bad = 0;
            for (size_t i = 0; i < count; i++)
                bad += h[i] != input_of((r + n - 1) % n, i, 0);
            CHECK(bad == 0, "group send/recv ring, rank %d: %zu wrong elements", r, bad);
        }
        cudaFree(in[r]);
        cudaFree(red[r]);
        cudaFree(got[r]);
        cudaStreamDestroy(s[r]);
    }
    free(h);
    free(in);
    free(red);
    free(got);
    free(s);
    free_comms(cs, n);
}

/* ---- failures a kernel finds -------------------------------------------------------------------- */

static void *failing_rank(void *p)
{
    rank_job_t *j = p;
    cudaSetDevice(device);
    cudaStream_t s;
    float *d;
    CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CUDA_OK(cudaMalloc((void **)&d, 2 * j->count * sizeof *d));
    CUDA_OK(cudaMemset(d, 0, 2 * j->count * sizeof *d));
    /* a good call first: the device path is set up on every rank (that is collective) */
    orb_status_t warm = orb_allreduce(d, d + j->count, 16, ORB_FLOAT32, ORB_SUM, j->comm, s);
    CHECK(warm == ORB_OK, "rank %d: warm-up call: %s: %s", j->rank, orb_status_name(warm), orb_comm_last_error(j->comm));
    CUDA_OK(cudaStreamSynchronize(s));
    if (j->skip_call) {
        struct timespec ts = {6, 0}; /* past the other rank's timeout */
        nanosleep(&ts, NULL);
    } else {
        j->first = orb_allreduce(d, d + j->count, j->count, ORB_FLOAT32, ORB_SUM, j->comm, s);
        cudaError_t rc = cudaStreamSynchronize(s); /* the kernel ends: failed, not hung */
        CHECK(rc == cudaSuccess, "rank %d: the failing kernel broke the stream: %s", j->rank, cudaGetErrorString(rc));
    }
    /* the failure surfaces on the next call, the async error already */
    orb_status_t async = ORB_OK;
    orb_comm_get_async_error(j->comm, &async);
    j->second = orb_allreduce(d, d + j->count, j->count, ORB_FLOAT32, ORB_SUM, j->comm, s);
    snprintf(j->msg, sizeof j->msg, "%s (async error %s)", orb_comm_last_error(j->comm), orb_status_name(async));
    cudaStreamSynchronize(s);
    cudaFree(d);
    cudaStreamDestroy(s);
    return NULL;
}

static void test_mismatch(void)
{
    orb_comm_t *cs = make_comms(2);
    rank_job_t jobs[2] = {{.comm = cs[0], .rank = 0, .n = 2, .count = 1000},
                          {.comm = cs[1], .rank = 1, .n = 2, .count = 1001}};
    run_ranks(jobs, 2, failing_rank);
    for (int r = 0; r < 2; r++) {
        CHECK(jobs[r].first == ORB_OK, "rank %d: the mismatched call itself is only enqueued: %s", r,
              orb_status_name(jobs[r].first));
        CHECK(jobs[r].second == ORB_ERR_MISMATCH, "rank %d: next call: %s, want ORB_ERR_MISMATCH: %s", r,
              orb_status_name(jobs[r].second), jobs[r].msg);
        CHECK(strstr(jobs[r].msg, "called") != NULL, "rank %d: message does not name both calls: %s", r, jobs[r].msg);
    }
    free_comms(cs, 2);
}

static void test_timeout(void)
{
    orb_comm_t *cs = make_comms(2); /* ORBIT_TIMEOUT is read at init */
    rank_job_t jobs[2] = {{.comm = cs[0], .rank = 0, .n = 2, .count = 1000},
                          {.comm = cs[1], .rank = 1, .n = 2, .count = 1000, .skip_call = 1}};
    run_ranks(jobs, 2, failing_rank);
    CHECK(jobs[0].second == ORB_ERR_TIMEOUT, "rank 0: %s, want ORB_ERR_TIMEOUT: %s", orb_status_name(jobs[0].second),
          jobs[0].msg);
    CHECK(strstr(jobs[0].msg, "no progress") != NULL, "rank 0: message does not say it timed out: %s", jobs[0].msg);
    CHECK(jobs[1].second != ORB_OK, "rank 1: a call after its peer timed out must fail: %s", jobs[1].msg);
    free_comms(cs, 2);
}

int main(int argc, char **argv)
{
    if (stage_skip_without_device())
        return 77;
    const char *mode = argc > 1 ? argv[1] : "";
    int n = argc > 2 ? atoi(argv[2]) : 2;
    cudaGetDevice(&device);
    if (!strcmp(mode, "errors"))
        test_errors();
    else if (!strcmp(mode, "graph"))
        test_graph(n);
    else if (!strcmp(mode, "group"))
        test_group(n);
    else if (!strcmp(mode, "mismatch"))
        test_mismatch();
    else if (!strcmp(mode, "timeout")) {
        setenv("ORBIT_TIMEOUT", "3", 1);
        test_timeout();
    } else {
        fprintf(stderr, "usage: test_gpu_api errors|graph [N]|group [N]|mismatch|timeout\n");
        return 2;
    }
    printf("%s: %s\n", mode, failures ? "FAILED" : "passed");
    return failures ? 1 : 0;
}
