/* Command-line flags of every *_bench program. */
#ifndef BENCH_OPTIONS_H
#define BENCH_OPTIONS_H

#include <stddef.h>

#include "harness.h"

typedef enum { BENCH_BACKEND_CUSTOM, BENCH_BACKEND_MPI, BENCH_BACKEND_NCCL } bench_backend_kind_t;
typedef enum { BENCH_DEVICE_CPU, BENCH_DEVICE_GPU } bench_device_t;
/* Host buffers from malloc, or from the library under test (orb_mem_alloc, MPI_Alloc_mem). */
typedef enum { BENCH_MEM_HOST, BENCH_MEM_LIB } bench_mem_kind_t;

typedef struct {
    const char *prog;
    size_t min_bytes, max_bytes;
    size_t factor;
    orb_dtype_t dtype;
    orb_op_t op;
    int root;
    int iters;  /* 0: scaled down with size, see bench_opts_iters */
    int warmup; /* 0 is a real value; -1: scaled down with size */
    int check;
    int run_outofplace, run_inplace;
    bench_backend_kind_t backend;
    const char *algo; /* "ring", "tree", or NULL for auto */
    bench_device_t device;
    bench_mem_kind_t mem;
    const char *json_path;
} bench_opts_t;

/* 0: parsed; 1: --help printed (exit 0); 2: bad flag, message printed (exit 2). */
int bench_opts_parse(int argc, char **argv, const bench_coll_t *coll, bench_opts_t *o);
const char *bench_backend_name(bench_backend_kind_t backend);
/* Iterations for one size: the flag's value, or as many as keep the bytes moved per
 * size near a fixed budget (a full 8:256M sweep stays under a minute on two cores). */
int bench_opts_iters(const bench_opts_t *o, size_t bytes);
int bench_opts_warmup(const bench_opts_t *o, size_t bytes);

#endif
