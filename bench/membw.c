/* membw: what this machine's memory gives, for the bound the host suite holds the
 * collectives to (docs/bench.md): a copy (glibc memcpy, dst = src) and an a+b->c (float32)
 * over arrays larger than the caches, on T threads at once (one per rank of the run it is
 * compared with, since ranks on one host share the memory bus). Each thread has its own
 * arrays, written first by itself (so they sit on its NUMA node); a pass starts every
 * thread together and lasts until the slowest ends; the best of R passes counts. Printed:
 * output bytes a second per thread, and the DRAM traffic that makes (copy 2 bytes moved per
 * byte written, a+b->c 3). Uses no orbit code: the bound is the machine's, not ours. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct {
    size_t bytes;
    int reps;
    int id;
    pthread_barrier_t *start, *stop;
    double *copy_s, *add_s; /* this thread's seconds, one per pass */
} job_t;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Not inlined, so the compiler cannot see that a pass repeats the last one's work. */
__attribute__((noinline)) static void add_f32(float *restrict c, const float *restrict a, const float *restrict b,
                                              size_t n)
{
    for (size_t i = 0; i < n; i++)
        c[i] = a[i] + b[i];
}

static void *worker(void *arg)
{
    job_t *j = arg;
    const size_t n = j->bytes / sizeof(float);
    float *a = malloc(j->bytes), *b = malloc(j->bytes), *c = malloc(j->bytes);
    if (!a || !b || !c) {
        fprintf(stderr, "membw: thread %d: no memory for 3 arrays of %zu bytes: lower --bytes\n", j->id, j->bytes);
        exit(1);
    }
    for (size_t i = 0; i < n; i++) { /* first touch by the thread that uses them */
        a[i] = (float)(i & 1023);
        b[i] = (float)((i * 7) & 1023);
        c[i] = 0;
    }
    for (int r = 0; r < j->reps; r++) {
        pthread_barrier_wait(j->start);
        double t0 = now_s();
        memcpy(c, a, j->bytes);
        j->copy_s[r] = now_s() - t0; /* the pass's time is its slowest thread's */
        pthread_barrier_wait(j->stop);
        pthread_barrier_wait(j->start);
        t0 = now_s();
        add_f32(c, a, b, n);
        j->add_s[r] = now_s() - t0;
        pthread_barrier_wait(j->stop);
    }
    volatile float sink = c[n / 2]; /* the last pass's result is used */
    (void)sink;
    free(a);
    free(b);
    free(c);
    return NULL;
}

static int usage(FILE *f, int rc)
{
    fprintf(f, "usage: membw [--threads T] [--bytes B] [--reps R]\n"
               "  --threads T  threads at once, one per rank of the run compared against  [2]\n"
               "  --bytes B    bytes per array (suffix K, M, G), above the last-level cache [64M]\n"
               "  --reps R     passes; the best counts                                  [5]\n"
               "prints: copy_gbps and add_gbps (output bytes a second per thread, while T threads run)\n");
    return rc;
}

static int parse_size(const char *s, size_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s)
        return -1;
    switch (*end) {
    case 'K': v <<= 10; end++; break;
    case 'M': v <<= 20; end++; break;
    case 'G': v <<= 30; end++; break;
    default: break;
    }
    if (*end || v < 4096)
        return -1;
    *out = (size_t)v / 64 * 64;
    return 0;
}

int main(int argc, char **argv)
{
    int threads = 2, reps = 5;
    size_t bytes = (size_t)64 << 20;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help"))
            return usage(stdout, 0);
        if (!v) {
            fprintf(stderr, "membw: %s: needs a value (or unknown option)\n", a);
            return usage(stderr, 2);
        }
        if (!strcmp(a, "--threads")) {
            threads = atoi(v);
            if (threads < 1 || threads > 1024) {
                fprintf(stderr, "membw: --threads %s: give 1..1024\n", v);
                return 2;
            }
        } else if (!strcmp(a, "--reps")) {
            reps = atoi(v);
            if (reps < 1 || reps > 1000) {
                fprintf(stderr, "membw: --reps %s: give 1..1000\n", v);
                return 2;
            }
        } else if (!strcmp(a, "--bytes")) {
            if (parse_size(v, &bytes) != 0) {
                fprintf(stderr, "membw: --bytes %s: give a size of at least 4096 bytes, e.g. 64M\n", v);
                return 2;
            }
        } else {
            fprintf(stderr, "membw: %s: unknown option\n", a);
            return usage(stderr, 2);
        }
        i++;
    }
    pthread_barrier_t start, stop;
    pthread_barrier_init(&start, NULL, (unsigned)threads);
    pthread_barrier_init(&stop, NULL, (unsigned)threads);
    job_t *jobs = calloc((size_t)threads, sizeof *jobs);
    pthread_t *tids = calloc((size_t)threads, sizeof *tids);
    double *copy = calloc((size_t)threads * (size_t)reps, sizeof *copy);
    double *add = calloc((size_t)threads * (size_t)reps, sizeof *add);
    if (!jobs || !tids || !copy || !add) {
        fprintf(stderr, "membw: no memory\n");
        return 1;
    }
    for (int t = 0; t < threads; t++) {
        jobs[t] = (job_t){.bytes = bytes, .reps = reps, .id = t, .start = &start, .stop = &stop,
                          .copy_s = copy + (size_t)t * (size_t)reps, .add_s = add + (size_t)t * (size_t)reps};
        if (pthread_create(&tids[t], NULL, worker, &jobs[t]) != 0) {
            fprintf(stderr, "membw: cannot start thread %d\n", t);
            return 1;
        }
    }
    for (int t = 0; t < threads; t++)
        pthread_join(tids[t], NULL);
    /* a pass lasts as long as its slowest thread; the best pass counts */
    double best_copy = 1e30, best_add = 1e30;
    for (int r = 0; r < reps; r++) {
        double wc = 0, wa = 0;
        for (int t = 0; t < threads; t++) {
            wc = copy[(size_t)t * (size_t)reps + (size_t)r] > wc ? copy[(size_t)t * (size_t)reps + (size_t)r] : wc;
            wa = add[(size_t)t * (size_t)reps + (size_t)r] > wa ? add[(size_t)t * (size_t)reps + (size_t)r] : wa;
        }
        best_copy = wc < best_copy ? wc : best_copy;
        best_add = wa < best_add ? wa : best_add;
    }
    const double cg = (double)bytes / best_copy / 1e9, ag = (double)bytes / best_add / 1e9;
    printf("# membw: %d thread(s) at once, %zu bytes per array, best of %d passes\n", threads, bytes, reps);
    printf("copy_gbps %.3f  (traffic %.3f GB/s per thread)\n", cg, 2 * cg);
    printf("add_gbps %.3f  (traffic %.3f GB/s per thread)\n", ag, 3 * ag);
    free(jobs);
    free(tids);
    free(copy);
    free(add);
    return 0;
}
