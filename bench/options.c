#include "options.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtype.h"

#define ITERS_MAX 50
/* Untimed calls: enough for two laps of orbit's default FIFO (8 slots) when a call fills one
 * slot (64-256 KiB), so no timed call is the first to touch a slot's pages. With 5, three of
 * the 50 timed calls at 256 KiB paid the page faults of fresh slots: 10 timed send/recv calls
 * took 169 us a call after 5 untimed ones, 53 us after 20 (medians; docs/perf.md, 2026-11-29). */
#define WARMUP_MAX 20
#define ITER_BUDGET_BYTES ((size_t)1 << 30)
/* Small calls take a fraction of a microsecond: 50 of them time a few microseconds, where the
 * ranks' skew leaving the barrier, or one timer tick, weighs on the figure (Open MPI's 8-byte
 * broadcast: median 0.16 us over 50 calls, 0.125 over 1000, 6 alternating runs; docs/bench.md).
 * Below 64 KiB a size gets up to 1000 calls, as many as 50 calls of 64 KiB carry. */
#define ITERS_SMALL_MAX 1000
#define ITER_SMALL_BUDGET_BYTES ((size_t)50 << 16)
#define WARMUP_BUDGET_BYTES ((size_t)256 << 20)

static void usage(FILE *f, const bench_coll_t *coll, const char *prog)
{
    fprintf(f,
            "usage: %s [flags]   (run under orbitrun -n N, or mpirun -np N with --backend mpi)\n"
            "Times %s over a range of sizes and prints an nccl-tests style table on rank 0.\n"
            "Sizes are bytes: %s.\n"
            "  --size MIN:MAX | N    bytes, with K/M/G suffixes (binary)      [8:256M]\n"
            "  --factor F            multiply the size by F each row (>= 2)   [2]\n"
            "  --dtype T             int8 uint8 int32 uint32 int64 uint64 float16 bfloat16\n"
            "                        float32 float64 (or float, half, double, bf16, int) [float32]\n"
            "  --op OP               sum prod min max avg                     [sum]\n"
            "  --root R              root rank of broadcast, reduce, gather   [0]\n"
            "  --iters N             timed calls per size    [50; up to 1000 under 64K, fewer above 16M]\n"
            "  --warmup N            untimed calls per size  [20, fewer above 12M]\n"
            "  --check               verify results with an exact pattern; counts #wrong\n"
            "  --inplace             run only the in-place variant\n"
            "  --no-inplace          run only the out-of-place variant        [both]\n"
            "  --backend B           custom (orbit) | mpi | nccl              [custom]\n"
            "  --algo A              ring | tree | auto (ORBIT_ALGO, NCCL_ALGO) [auto]\n"
            "  --device D            cpu | gpu               [cpu; gpu for nccl]\n"
            "  --mem M               host (malloc) | lib (the backend's own: orb_mem_alloc's\n"
            "                        windows, MPI_Alloc_mem), for host buffers  [host]\n"
            "  --json FILE           also write one JSON object per row to FILE\n"
            "  --help                this text\n",
            prog, coll->name, coll->size_means);
}

/* "256M" -> 268435456. Binary suffixes, like nccl-tests. */
static int parse_bytes(const char *s, size_t *out)
{
    char *end;
    if (*s < '0' || *s > '9')
        return -1;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno)
        return -1;
    unsigned shift = 0;
    switch (*end) {
    case 'k': case 'K': shift = 10; end++; break;
    case 'm': case 'M': shift = 20; end++; break;
    case 'g': case 'G': shift = 30; end++; break;
    default: break;
    }
    if (*end == 'B' || *end == 'b')
        end++;
    if (*end != '\0' || v > (SIZE_MAX >> shift))
        return -1;
    *out = (size_t)(v << shift);
    return 0;
}

static int parse_int(const char *s, long min, long max, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end != '\0' || v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

const char *bench_backend_name(bench_backend_kind_t backend)
{
    switch (backend) {
    case BENCH_BACKEND_CUSTOM: return "custom";
    case BENCH_BACKEND_MPI: return "mpi";
    case BENCH_BACKEND_NCCL: return "nccl";
    }
    return "?";
}

static int bad(const char *prog, const char *flag, const char *value, const char *want)
{
    if (value)
        fprintf(stderr, "%s: %s: '%s' is not valid: %s (see --help)\n", prog, flag, value, want);
    else
        fprintf(stderr, "%s: %s: %s (see --help)\n", prog, flag, want);
    return 2;
}

int bench_opts_parse(int argc, char **argv, const bench_coll_t *coll, bench_opts_t *o)
{
    const char *prog = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
    int device_set = 0;

    *o = (bench_opts_t){
        .prog = prog, .min_bytes = 8, .max_bytes = (size_t)256 << 20, .factor = 2,
        .dtype = ORB_FLOAT32, .op = ORB_SUM, .warmup = -1, .run_outofplace = 1,
        .run_inplace = coll->has_inplace, .backend = BENCH_BACKEND_CUSTOM,
    };

    for (int i = 1; i < argc; i++) {
        char flag[32];
        const char *arg = argv[i];
        const char *value = NULL;
        const char *eq = strchr(arg, '=');

        if (strncmp(arg, "--", 2) != 0 && strcmp(arg, "-h") != 0)
            return bad(prog, arg, NULL, "unexpected argument; flags start with --");
        if (eq && (size_t)(eq - arg) < sizeof(flag)) {
            memcpy(flag, arg, (size_t)(eq - arg));
            flag[eq - arg] = '\0';
            value = eq + 1;
        } else {
            snprintf(flag, sizeof(flag), "%s", arg);
        }

        /* Flags without a value. */
        if (!strcmp(flag, "--help") || !strcmp(flag, "-h")) {
            usage(stdout, coll, prog);
            return 1;
        }
        if (!strcmp(flag, "--check") || !strcmp(flag, "--inplace") ||
            !strcmp(flag, "--no-inplace")) {
            if (value)
                return bad(prog, flag, NULL, "takes no value");
            if (!strcmp(flag, "--check")) {
                o->check = 1;
            } else if (!strcmp(flag, "--inplace")) {
                if (!coll->has_inplace)
                    return bad(prog, flag, NULL, "this collective has no in-place variant");
                o->run_inplace = 1;
                o->run_outofplace = 0;
            } else {
                o->run_inplace = 0;
                o->run_outofplace = 1;
            }
            continue;
        }

        /* Flags with a value: --flag=value or --flag value. */
        if (!value) {
            if (i + 1 >= argc)
                goto unknown_or_missing;
            value = argv[++i];
        }
        long v;
        if (!strcmp(flag, "--size")) {
            const char *colon = strchr(value, ':');
            if (colon) {
                char lo[64];
                size_t n = (size_t)(colon - value);
                if (n >= sizeof(lo))
                    return bad(prog, flag, value, "use MIN:MAX or N, e.g. 8:256M");
                memcpy(lo, value, n);
                lo[n] = '\0';
                if (parse_bytes(lo, &o->min_bytes) || parse_bytes(colon + 1, &o->max_bytes))
                    return bad(prog, flag, value, "use MIN:MAX or N, e.g. 8:256M");
            } else {
                if (parse_bytes(value, &o->min_bytes))
                    return bad(prog, flag, value, "use MIN:MAX or N, e.g. 8:256M");
                o->max_bytes = o->min_bytes;
            }
            if (o->min_bytes == 0)
                return bad(prog, flag, value, "sizes start at 1 byte");
            if (o->min_bytes > o->max_bytes)
                return bad(prog, flag, value, "MIN is larger than MAX");
        } else if (!strcmp(flag, "--factor")) {
            if (parse_int(value, 2, 1 << 20, &v))
                return bad(prog, flag, value, "an integer >= 2");
            o->factor = (size_t)v;
        } else if (!strcmp(flag, "--dtype")) {
            if (bench_dtype_parse(value, &o->dtype))
                return bad(prog, flag, value, "one of int8 uint8 int32 uint32 int64 uint64 "
                                              "float16 bfloat16 float32 float64");
        } else if (!strcmp(flag, "--op")) {
            if (bench_op_parse(value, &o->op))
                return bad(prog, flag, value, "one of sum prod min max avg");
        } else if (!strcmp(flag, "--root")) {
            if (parse_int(value, 0, INT_MAX, &v))
                return bad(prog, flag, value, "a rank number >= 0");
            o->root = (int)v;
        } else if (!strcmp(flag, "--iters")) {
            if (parse_int(value, 1, INT_MAX, &v))
                return bad(prog, flag, value, "an integer >= 1");
            o->iters = (int)v;
        } else if (!strcmp(flag, "--warmup")) {
            if (parse_int(value, 0, INT_MAX, &v))
                return bad(prog, flag, value, "an integer >= 0");
            o->warmup = (int)v;
        } else if (!strcmp(flag, "--backend")) {
            if (!strcmp(value, "custom") || !strcmp(value, "orbit"))
                o->backend = BENCH_BACKEND_CUSTOM;
            else if (!strcmp(value, "mpi"))
                o->backend = BENCH_BACKEND_MPI;
            else if (!strcmp(value, "nccl"))
                o->backend = BENCH_BACKEND_NCCL;
            else
                return bad(prog, flag, value, "one of custom mpi nccl");
        } else if (!strcmp(flag, "--algo")) {
            if (!strcmp(value, "ring") || !strcmp(value, "tree"))
                o->algo = value;
            else if (!strcmp(value, "auto"))
                o->algo = NULL;
            else
                return bad(prog, flag, value, "one of ring tree auto");
        } else if (!strcmp(flag, "--device")) {
            if (!strcmp(value, "cpu"))
                o->device = BENCH_DEVICE_CPU;
            else if (!strcmp(value, "gpu"))
                o->device = BENCH_DEVICE_GPU;
            else
                return bad(prog, flag, value, "one of cpu gpu");
            device_set = 1;
        } else if (!strcmp(flag, "--mem")) {
            if (!strcmp(value, "host"))
                o->mem = BENCH_MEM_HOST;
            else if (!strcmp(value, "lib"))
                o->mem = BENCH_MEM_LIB;
            else
                return bad(prog, flag, value, "one of host lib");
        } else if (!strcmp(flag, "--json")) {
            if (!*value)
                return bad(prog, flag, value, "a file name");
            o->json_path = value;
        } else {
            goto unknown_or_missing;
        }
        continue;

    unknown_or_missing:
        if (!strcmp(flag, "--size") || !strcmp(flag, "--factor") || !strcmp(flag, "--dtype") ||
            !strcmp(flag, "--op") || !strcmp(flag, "--root") || !strcmp(flag, "--iters") ||
            !strcmp(flag, "--warmup") || !strcmp(flag, "--backend") || !strcmp(flag, "--algo") ||
            !strcmp(flag, "--device") || !strcmp(flag, "--mem") || !strcmp(flag, "--json"))
            return bad(prog, flag, NULL, "needs a value");
        return bad(prog, flag, NULL, "unknown flag");
    }

    if (o->backend == BENCH_BACKEND_NCCL && !device_set)
        o->device = BENCH_DEVICE_GPU;
    if (o->backend == BENCH_BACKEND_NCCL && o->device != BENCH_DEVICE_GPU)
        return bad(prog, "--device", "cpu", "--backend nccl runs on GPU buffers only");
    if (o->mem == BENCH_MEM_LIB && o->device == BENCH_DEVICE_GPU)
        return bad(prog, "--mem", "lib", "the backends' own allocators serve host buffers; leave --mem out with --device gpu");
    if (o->backend == BENCH_BACKEND_MPI && o->device == BENCH_DEVICE_GPU)
        return bad(prog, "--device", "gpu", "--backend mpi benches host buffers only");
    return 0;
}

int bench_opts_iters(const bench_opts_t *o, size_t bytes)
{
    if (o->iters > 0)
        return o->iters;
    size_t n = ITER_BUDGET_BYTES / bytes, small = ITER_SMALL_BUDGET_BYTES / bytes;
    n = n > ITERS_MAX ? ITERS_MAX : n;
    small = small > ITERS_SMALL_MAX ? ITERS_SMALL_MAX : small;
    n = small > n ? small : n;
    return n < 2 ? 2 : (int)n;
}

int bench_opts_warmup(const bench_opts_t *o, size_t bytes)
{
    if (o->warmup >= 0)
        return o->warmup;
    size_t n = WARMUP_BUDGET_BYTES / bytes;
    return n < 1 ? 1 : n > WARMUP_MAX ? WARMUP_MAX : (int)n;
}
