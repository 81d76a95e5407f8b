#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backend.h"
#include "dtype.h"
#include "memory.h"
#include "options.h"
#include "pattern.h"
#include "report.h"

typedef struct {
    const bench_coll_t *coll;
    bench_opts_t opts;
    bench_backend_t be;
    bench_mem_t mem;
    size_t elem_size;
    FILE *json;
} bench_t;

/* One rank failed: say where and take the others down with it. */
static void die(bench_t *b, const char *msg)
{
    fprintf(stderr, "%s: rank %d: %s\n", b->opts.prog, b->be.rank, msg);
    fflush(stderr);
    if (b->be.ops)
        b->be.ops->abort(&b->be);
    exit(1);
}

static void check_be(bench_t *b, int rc)
{
    if (rc)
        die(b, b->be.err);
}

static void check_mem(bench_t *b, int rc)
{
    if (rc)
        die(b, b->mem.err);
}

/* --mem lib: the backend's allocator behind bench_mem_t's hooks, its reason kept on failure */
static void *lib_alloc(void *ctx, size_t bytes)
{
    bench_t *b = ctx;
    void *p = b->be.ops->mem_alloc(&b->be, bytes);
    if (!p)
        snprintf(b->mem.err, sizeof b->mem.err, "--mem lib: %.230s", b->be.err);
    return p;
}

static void lib_free(void *ctx, void *p)
{
    bench_t *b = ctx;
    b->be.ops->mem_free(&b->be, p);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The check's input: sentinel everywhere the call writes, then each rank's pattern. */
static void fill_inputs(bench_t *b, bench_call_t *call, const bench_counts_t *c)
{
    orb_dtype_t dt = b->opts.dtype;
    int op = b->coll->uses_op ? (int)b->opts.op : BENCH_OP_NONE;
    size_t recv_bytes = c->recv_elems * b->elem_size;
    size_t send_bytes = c->send_elems * b->elem_size;

    void *h = bench_mem_host(&b->mem, call->recvbuf);
    for (size_t i = 0; i < c->recv_elems; i++)
        bench_elem_store(dt, h, i, BENCH_SENTINEL);
    check_mem(b, bench_mem_put(&b->mem, call->recvbuf, h, recv_bytes));

    h = bench_mem_host(&b->mem, (void *)call->sendbuf);
    for (size_t i = 0; i < c->send_elems; i++)
        bench_elem_store(dt, h, i, bench_pattern_input(op, b->be.rank, b->be.nranks, i));
    check_mem(b, bench_mem_put(&b->mem, (void *)call->sendbuf, h, send_bytes));
}

static long long count_wrong(bench_t *b, const bench_call_t *call, const bench_counts_t *c)
{
    size_t n = b->coll->result_elems(c, b->be.rank, b->opts.root);
    const void *where = call->result ? call->result : call->recvbuf;
    int op = b->coll->uses_op ? (int)b->opts.op : BENCH_OP_NONE;
    long long wrong = 0;

    if (n == 0)
        return 0;
    const void *h = bench_mem_get(&b->mem, where, n * b->elem_size);
    if (!h)
        die(b, b->mem.err);
    for (size_t j = 0; j < n; j++) {
        double want = b->coll->expected(c, b->opts.op, b->opts.root, b->be.rank, b->be.nranks, j);
        double got = bench_elem_load(b->opts.dtype, h, j);
        if (!bench_pattern_matches(b->opts.dtype, op, got, want)) {
            if (wrong < 3) /* a few examples are worth more than a count */
                fprintf(stderr, "%s: rank %d: %s %zu B%s: element %zu is %g, expected %g\n",
                        b->opts.prog, b->be.rank, b->coll->name, c->bytes,
                        call->inplace ? " in-place" : "", j, got, want);
            wrong++;
        }
    }
    return wrong;
}

static void run_placement(bench_t *b, const bench_counts_t *c, int inplace, bench_result_t *res)
{
    bench_call_t call = {
        .kind = b->coll->kind, .count = c->count, .dtype = b->opts.dtype, .op = b->opts.op,
        .root = b->opts.root, .inplace = inplace, .stream = b->mem.stream,
    };
    int iters = bench_opts_iters(&b->opts, c->bytes);
    int warmup = bench_opts_warmup(&b->opts, c->bytes);

    b->coll->place(&call, b->mem.send, b->mem.recv, b->elem_size, b->be.rank, inplace);

    for (int i = 0; i < warmup; i++)
        check_be(b, b->be.ops->run(&b->be, &call));
    check_mem(b, bench_mem_sync(&b->mem));
    check_be(b, b->be.ops->barrier(&b->be));

    double t0 = now_s();
    for (int i = 0; i < iters; i++)
        check_be(b, b->be.ops->run(&b->be, &call));
    check_mem(b, bench_mem_sync(&b->mem));
    double per_call = (now_s() - t0) / iters;
    /* The slowest rank is what the application waits for. */
    check_be(b, b->be.ops->reduce_double(&b->be, &per_call, BENCH_REDUCE_MAX));

    res->ran = 1;
    res->time_us = per_call * 1e6;
    res->algbw = (double)c->bytes / per_call / 1e9;
    res->busbw = res->algbw * b->coll->busbw_factor(b->be.nranks);
    res->wrong = -1;

    if (b->opts.check) {
        call.result = NULL;
        fill_inputs(b, &call, c);
        check_be(b, b->be.ops->barrier(&b->be));
        check_be(b, b->be.ops->run(&b->be, &call));
        check_mem(b, bench_mem_sync(&b->mem));
        res->mine = count_wrong(b, &call, c);
        /* the sum goes through the backend (orbit itself for --backend custom): it is only
         * shown; each rank's exit status comes from its own count */
        double wrong = (double)res->mine;
        check_be(b, b->be.ops->reduce_double(&b->be, &wrong, BENCH_REDUCE_SUM));
        res->wrong = (long long)wrong;
    }
}

static void print_header(bench_t *b)
{
    bench_rank_info_t me = {.rank = b->be.rank, .pid = (int)getpid()};
    bench_rank_info_t *all = calloc((size_t)b->be.nranks, sizeof(*all));
    if (!all)
        die(b, "out of memory");
    gethostname(me.host, sizeof(me.host) - 1);
    bench_mem_describe(&b->mem, me.device, sizeof(me.device));
    check_be(b, b->be.ops->allgather_bytes(&b->be, &me, all, sizeof(me)));
    if (b->be.rank == 0)
        bench_report_header(stdout, &b->opts, b->coll, b->be.nranks, all);
    free(all);
}

/* Agreement on a setup problem found on one rank, so all ranks exit instead of hanging. */
static int any_rank(bench_t *b, int bad)
{
    double v = bad;
    check_be(b, b->be.ops->reduce_double(&b->be, &v, BENCH_REDUCE_MAX));
    return v != 0;
}

static void setup_or_exit(bench_t *b)
{
    const char *why;
    const bench_opts_t *o = &b->opts;

    b->be.ops = NULL;
    const bench_backend_ops_t *ops = bench_backend_select(o->backend, &why);
    if (!ops) {
        fprintf(stderr, "%s: --backend %s: %s\n", o->prog, bench_backend_name(o->backend), why);
        exit(2);
    }
    if (bench_mem_open(&b->mem, o->device)) {
        fprintf(stderr, "%s: %s\n", o->prog, b->mem.err);
        exit(2);
    }
    if (ops->init(&b->be, o)) {
        fprintf(stderr, "%s: --backend %s: %s\n", o->prog, ops->name, b->be.err);
        exit(1);
    }
    b->be.ops = ops;

    /* Argument problems every rank sees alike: rank 0 explains, all exit 2. */
    const char *bad = NULL;
    char msg[600];
    if (b->be.nranks < b->coll->min_ranks) {
        snprintf(msg, sizeof(msg), "%s needs at least %d ranks, this job has %d", b->coll->name,
                 b->coll->min_ranks, b->be.nranks);
        bad = msg;
    } else if (b->coll->uses_root && o->root >= b->be.nranks) {
        snprintf(msg, sizeof(msg), "--root %d: only %d ranks", o->root, b->be.nranks);
        bad = msg;
    } else if (!ops->supports(&b->be, b->coll, o->dtype, b->coll->uses_op ? o->op : ORB_SUM)) {
        snprintf(msg, sizeof(msg), "%s", b->be.err);
        bad = msg;
    } else if (o->mem == BENCH_MEM_LIB && !ops->mem_alloc) {
        snprintf(msg, sizeof(msg), "--mem lib: --backend %s has no allocator of its own", ops->name);
        bad = msg;
    }
    if (!bad && o->mem == BENCH_MEM_LIB) {
        b->mem.lib_alloc = lib_alloc;
        b->mem.lib_free = lib_free;
        b->mem.lib_ctx = b;
    }
    int json_bad = 0;
    if (!bad && o->json_path && b->be.rank == 0) {
        b->json = fopen(o->json_path, "w");
        if (!b->json) {
            snprintf(msg, sizeof(msg), "--json %s: cannot open for writing", o->json_path);
            json_bad = 1;
        }
    }
    if (bad || any_rank(b, json_bad)) {
        if (b->be.rank == 0)
            fprintf(stderr, "%s: %s\n", o->prog, msg);
        ops->finalize(&b->be);
        exit(2);
    }
}

int bench_main(int argc, char **argv, const bench_coll_t *coll)
{
    bench_t b = {.coll = coll};

    int rc = bench_opts_parse(argc, argv, coll, &b.opts);
    if (rc)
        return rc == 1 ? 0 : 2;
    b.elem_size = orb_dtype_size(b.opts.dtype);
    setup_or_exit(&b);

    /* Buffers for the largest row; counts only grow with the size. */
    bench_counts_t max;
    coll->counts(b.opts.max_bytes, b.elem_size, b.be.nranks, &max);
    check_mem(&b, bench_mem_alloc(&b.mem, max.send_elems * b.elem_size,
                                  max.recv_elems * b.elem_size));
    print_header(&b);

    long long wrong_total = 0, mine_total = 0;
    double bw_sum = 0;
    int bw_n = 0;
    for (size_t bytes = b.opts.min_bytes; bytes <= b.opts.max_bytes;) {
        bench_counts_t c;
        bench_result_t res[2] = {{0}, {0}};
        if (!coll->counts(bytes, b.elem_size, b.be.nranks, &c)) {
            if (b.be.rank == 0)
                bench_report_skip(stdout, &c, bytes, b.be.nranks);
        } else {
            for (int p = 0; p < 2; p++) {
                if (!(p ? b.opts.run_inplace : b.opts.run_outofplace))
                    continue;
                run_placement(&b, &c, p, &res[p]);
                bw_sum += res[p].busbw;
                bw_n++;
                if (res[p].wrong > 0)
                    wrong_total += res[p].wrong;
                mine_total += res[p].mine;
                if (b.json)
                    bench_report_json(b.json, &b.opts, coll, b.be.nranks, &c, &res[p], p,
                                      bench_opts_iters(&b.opts, c.bytes));
            }
            if (b.be.rank == 0)
                bench_report_row(stdout, &b.opts, coll, &c, res);
        }
        if (bytes > b.opts.max_bytes / b.opts.factor)
            break;
        bytes *= b.opts.factor;
    }
    if (b.be.rank == 0)
        bench_report_footer(stdout, wrong_total, bw_n ? bw_sum / bw_n : 0.0, b.opts.check);

    if (b.json)
        fclose(b.json);
    check_be(&b, b.be.ops->barrier(&b.be));
    bench_mem_close(&b.mem); /* first: MPI_Free_mem needs MPI */
    b.be.ops->finalize(&b.be);
    if (mine_total)
        fprintf(stderr, "%s: rank %d: %lld wrong elements of its own\n", b.opts.prog, b.be.rank, mine_total);
    return mine_total ? 1 : 0;
}
