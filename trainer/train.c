#include "train.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "blas.h"
#include "checkpoint.h"
#include "comm_thread.h"
#include "dataset.h"
#include "error.h"
#include "eval.h"
#include "loss.h"
#include "model.h"
#include "optim.h"
#include "profile.h"
#include "progress.h"
#include "reducer.h"
#include "report.h"
#include "sampler.h"
#include "trace.h"

typedef struct {
    const orb_train_opts_t *o;
    orb_train_trace_t tr_compute, tr_comm;
    char lib_trace_dir[4096]; /* --profile PATH: orbit's own trace goes to PATH.orbit/ */
    orb_status_t sync_status; /* the first failure of a --sync-bn all-reduce */
    orb_train_comm_t *comm;
    int rank, world, local_batch;
    orb_train_dataset_t train, test;
    double mean, std;
    orb_train_model_t *model;
    orb_train_optim_t *optim;
    orb_train_reducer_t *reducer;
    int32_t *labels;
    uint64_t seed;
    int64_t start_epoch, step;
    orb_train_epoch_rec_t *recs;
    int nrecs;
    double total_time;
    int64_t *class_counts;
    orb_train_profile_summary_t prof;
} run_t;

/* pass.sync_sum for --sync-bn: a blocking all-reduce on the communication thread, after the
 * buckets already queued (every rank queues the same jobs in the same order). */
static void sync_sum(void *ctx, double *buf, size_t n)
{
    run_t *r = ctx;
    if (r->sync_status != ORB_OK)
        return;
    orb_train_job_t job = {.kind = ORB_TRAIN_JOB_ALLREDUCE, .buf = buf, .count = n, .dtype = ORB_FLOAT64,
                           .bucket = -1, .step = r->step};
    r->sync_status = orb_train_comm_run(r->comm, &job);
}

static orb_status_t bcast(run_t *r, void *buf, size_t count, orb_dtype_t dtype)
{
    if (r->world == 1)
        return ORB_OK;
    orb_train_job_t job = {.kind = ORB_TRAIN_JOB_BROADCAST, .buf = buf, .count = count, .dtype = dtype,
                           .root = 0, .bucket = -1, .step = r->step};
    return orb_train_comm_run(r->comm, &job);
}

static orb_status_t load_data(run_t *r)
{
    if (r->o->synthetic) {
        orb_train_dataset_synthetic(&r->o->synth, r->seed, "train", &r->train);
        orb_train_dataset_synthetic(&r->o->synth, r->seed, "t10k", &r->test);
        orb_train_dataset_stats(&r->train, &r->mean, &r->std);
        return ORB_OK;
    }
    ORB_TRAIN_CHECK(orb_train_dataset_load(r->o->data, "train", &r->train));
    ORB_TRAIN_CHECK(orb_train_dataset_load(r->o->data, "t10k", &r->test));
    if (r->test.rows != r->train.rows || r->test.cols != r->train.cols)
        return orb_train_fail(ORB_ERR_INVALID_ARG, "%s: test images are %dx%d but training images %dx%d", r->o->data,
                              r->test.rows, r->test.cols, r->train.rows, r->train.cols);
    orb_train_dataset_stats(&r->train, &r->mean, &r->std);
    return ORB_OK;
}

static orb_status_t build(run_t *r)
{
    const orb_train_opts_t *o = r->o;
    int nclasses = r->train.nclasses > r->test.nclasses ? r->train.nclasses : r->test.nclasses;
    if (nclasses < 2)
        return orb_train_fail(ORB_ERR_INVALID_ARG, "%s: the labels hold a single class", o->data);
    int max_batch = r->local_batch > 128 ? r->local_batch : 128; /* evaluation goes 128 at a time */
    orb_train_shape_t in = {r->train.channels, r->train.rows, r->train.cols}, want;
    /* IDX data keep what they always had (any image size the layers fit); a generated shape
     * is a deliberate choice, so a model that cannot take it says so */
    if (o->synthetic && orb_train_model_fixed_input(o->model, &want) &&
        (in.c != want.c || in.h != want.h || in.w != want.w))
        return orb_train_fail(ORB_ERR_INVALID_ARG, "--data %s: model %s takes %dx%dx%d samples, not %dx%dx%d "
                              "(write --data synthetic:%d,%d,%d,%d)", o->data, o->model, want.c, want.h, want.w,
                              in.c, in.h, in.w, want.c, want.h, want.w, o->synth.nclasses);
    ORB_TRAIN_CHECK(orb_train_model_create(o->model, in, nclasses, max_batch, &r->model));
    orb_train_model_init_params(r->model, r->seed);
    /* DDP starts every rank from rank 0's parameters */
    ORB_TRAIN_CHECK(bcast(r, r->model->params, r->model->nparams, ORB_FLOAT32));
    orb_train_optim_kind_t kind = strcmp(o->optimizer, "adam") == 0 ? ORB_TRAIN_ADAM : ORB_TRAIN_SGD;
    ORB_TRAIN_CHECK(orb_train_optim_create(kind, r->model->nparams, o->momentum, &r->optim));
    size_t cap = (size_t)(o->bucket_mb * 1024.0 * 1024.0);
    ORB_TRAIN_CHECK(orb_train_reducer_create(r->model, r->comm, cap, o->overlap, &r->reducer));
    r->reducer->wire = o->grad_dtype;
    r->labels = malloc(sizeof(int32_t) * (size_t)max_batch);
    r->class_counts = calloc(2 * (size_t)nclasses, sizeof(int64_t));
    r->recs = calloc((size_t)o->epochs + 1, sizeof *r->recs);
    if (!r->labels || !r->class_counts || !r->recs)
        return orb_train_fail(ORB_ERR_NO_MEMORY, "out of memory");
    return ORB_OK;
}

/* Rank 0 reads the file and broadcasts it, so ranks never disagree about what they load. */
static orb_status_t resume(run_t *r)
{
    const orb_train_opts_t *o = r->o;
    void *blob = NULL;
    size_t len = 0;
    int64_t blen = -1;
    orb_status_t st = ORB_OK;
    if (r->rank == 0) {
        st = orb_train_ckpt_read(o->resume, &blob, &len);
        blen = st == ORB_OK ? (int64_t)len : -1;
    }
    char why[512];
    snprintf(why, sizeof why, "%s", orb_train_last_error());
    ORB_TRAIN_CHECK(bcast(r, &blen, 1, ORB_INT64));
    if (blen < 0)
        return r->rank == 0 ? orb_train_fail(st, "%s", why)
                            : orb_train_fail(ORB_ERR_INVALID_ARG, "rank 0 could not read --resume %s", o->resume);
    if (r->rank != 0 && !(blob = malloc((size_t)blen)))
        return orb_train_fail(ORB_ERR_NO_MEMORY, "--resume: cannot allocate %lld bytes", (long long)blen);
    st = bcast(r, blob, (size_t)blen, ORB_UINT8);
    orb_train_ckpt_info_t info;
    const float *params, *state[2], *buffers;
    if (st == ORB_OK)
        st = orb_train_ckpt_parse(o->resume, blob, (size_t)blen, &info, &params, state, &buffers);
    if (st == ORB_OK && (strcmp(info.model, o->model) != 0 || info.nparams != r->model->nparams ||
                         info.nbuffers != r->model->nbuffers))
        st = orb_train_fail(ORB_ERR_INVALID_ARG, "--resume %s holds a %s (%llu parameters), not a %s", o->resume,
                            info.model, (unsigned long long)info.nparams, o->model);
    if (st == ORB_OK && (info.optimizer != (int32_t)r->optim->kind || info.nstate != r->optim->nstate))
        st = orb_train_fail(ORB_ERR_INVALID_ARG, "--resume %s was saved with another optimiser (or momentum on/off)",
                            o->resume);
    if (st == ORB_OK) {
        memcpy(r->model->params, params, sizeof(float) * r->model->nparams);
        if (info.nbuffers)
            memcpy(r->model->buffers, buffers, sizeof(float) * r->model->nbuffers);
        for (int i = 0; i < info.nstate; i++)
            memcpy(r->optim->state[i], state[i], sizeof(float) * r->model->nparams);
        r->optim->t = info.optim_t;
        r->start_epoch = info.epochs_done;
        r->step = info.step;
        if (r->rank == 0 && o->seed_set && o->seed != info.seed)
            fprintf(stderr, "orbit-train: --seed %llu ignored: the checkpoint continues seed %llu\n",
                    (unsigned long long)o->seed, (unsigned long long)info.seed);
        if (r->rank == 0 && (info.batch_size != o->batch_size || info.world != r->world))
            fprintf(stderr, "orbit-train: warning: checkpoint saved with batch %lld on %d ranks, now batch %d on %d: "
                            "the run continues but is not the one saved\n",
                    (long long)info.batch_size, info.world, o->batch_size, r->world);
        r->seed = info.seed;
        r->train.seed = r->test.seed = info.seed; /* synthetic samples are keyed by it too */
    }
    free(blob);
    return st;
}

static orb_status_t save(run_t *r, int64_t epochs_done)
{
    if (r->rank != 0 || !r->o->save)
        return ORB_OK;
    orb_train_ckpt_info_t info = {
        .optimizer = (int32_t)r->optim->kind, .nstate = r->optim->nstate, .nparams = r->model->nparams,
        .epochs_done = epochs_done, .step = r->step, .optim_t = r->optim->t, .seed = r->seed,
        .batch_size = r->o->batch_size, .world = r->world, .momentum = r->optim->momentum,
        .nbuffers = r->model->nbuffers,
    };
    snprintf(info.model, sizeof info.model, "%s", r->o->model);
    return orb_train_ckpt_save(r->o->save, &info, r->model->params, r->optim->state, r->model->buffers);
}

/* CPU seconds of the whole process (compute and communication threads). */
static double cpu_seconds(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_sec +
           1e-6 * (double)ru.ru_stime.tv_usec;
}

/* Fills rec's loss (mean batch loss over all ranks), cpu (CPU seconds of all ranks), steps,
 * images (all ranks) and throughput: ips_rank is this rank's samples over the seconds from its
 * first step's start to its last optimizer step, ips the sum of that over the ranks. The
 * epoch's setup stays out: shuffling the 1.28M synthetic indices takes 70 ms, which would
 * halve a 5-step LeNet figure and is nothing in a real epoch. */
static orb_status_t train_epoch(run_t *r, int64_t epoch, orb_train_epoch_rec_t *rec)
{
    double cpu0 = cpu_seconds();
    const orb_train_opts_t *o = r->o;
    orb_train_model_t *m = r->model;
    orb_train_shard_t shard;
    ORB_TRAIN_CHECK(orb_train_shard_make(r->train.n, r->rank, r->world, r->seed, epoch, 1, 1, &shard));
    float lr = orb_train_lr_at(o->lr, o->lr_step, o->lr_gamma, epoch);
    int64_t steps = (shard.count + r->local_batch - 1) / r->local_batch;
    if (o->steps > 0 && o->steps < steps) /* shards are equal, so every rank stops at the same step */
        steps = o->steps;
    orb_train_progress_t prog;
    orb_train_progress_begin(&prog, r->rank == 0 && orb_train_progress_wanted(), (int)epoch + 1, o->epochs, steps,
                             (int64_t)r->local_batch * r->world);
    orb_status_t st = ORB_OK;
    double loss[5] = {0.0, (double)steps, 0.0, 0.0, 0.0}; /* loss, steps, cpu, images, images/s */
    int64_t images = 0, t_begin = orb_train_now_ns();
    for (int64_t s = 0; s < steps && st == ORB_OK; s++) {
        int64_t t0 = orb_train_now_ns();
        int n = (int)(shard.count - s * r->local_batch < r->local_batch ? shard.count - s * r->local_batch
                                                                          : r->local_batch);
        const int64_t *ids = shard.idx + s * r->local_batch;
        images += n;
        orb_train_dataset_batch(&r->train, ids, n, (float)r->mean, (float)r->std, orb_train_model_input(m),
                                r->labels);
        int64_t t1 = orb_train_now_ns();
        orb_train_pass_t pass = {.n = n, .training = 1, .seed = r->seed, .step = (uint64_t)r->step, .sample_ids = ids,
                                 .sync_sum = o->sync_bn && r->world > 1 ? sync_sum : NULL, .sync_ctx = r};
        /* DDP's broadcast_buffers (its default): rank 0's running statistics before each forward */
        if (m->nbuffers && (st = bcast(r, m->buffers, m->nbuffers, ORB_FLOAT32)) != ORB_OK)
            break;
        const float *logp = orb_train_model_forward(m, &pass);
        loss[0] += orb_train_nll_loss(logp, r->labels, n, m->nclasses, orb_train_model_output_grad(m));
        int64_t t2 = orb_train_now_ns();
        int64_t t3;
        if (o->no_sync) { /* as under DDP's no_sync(): buffers and SyncBatchNorm still travel */
            orb_train_model_backward(m, &pass, NULL, NULL);
            t3 = orb_train_now_ns();
        } else {
            orb_train_reducer_begin(r->reducer, r->step);
            orb_train_model_backward(m, &pass, orb_train_reducer_hook, r->reducer);
            t3 = orb_train_now_ns();
            st = orb_train_reducer_finish(r->reducer);
        }
        if (st == ORB_OK)
            st = r->sync_status;
        int64_t t4 = orb_train_now_ns();
        orb_train_optim_step(r->optim, m->params, m->grads, lr);
        int64_t t5 = orb_train_now_ns();
        orb_train_trace_add(&r->tr_compute, ORB_TRAIN_EV_DATA, t0, t1, 0, r->step, -1);
        orb_train_trace_add(&r->tr_compute, ORB_TRAIN_EV_FORWARD, t1, t2, 0, r->step, -1);
        orb_train_trace_add(&r->tr_compute, ORB_TRAIN_EV_BACKWARD, t2, t3, 0, r->step, -1);
        orb_train_trace_add(&r->tr_compute, ORB_TRAIN_EV_WAIT, t3, t4, 0, r->step, -1);
        orb_train_trace_add(&r->tr_compute, ORB_TRAIN_EV_OPTIMIZER, t4, t5, 0, r->step, -1);
        r->step++;
        orb_train_progress_update(&prog, s + 1);
    }
    double secs = (double)(orb_train_now_ns() - t_begin) * 1e-9;
    orb_train_progress_end(&prog);
    orb_train_shard_free(&shard);
    ORB_TRAIN_CHECK(st);
    loss[2] = cpu_seconds() - cpu0;
    loss[3] = (double)images;
    loss[4] = secs > 0 ? (double)images / secs : 0.0;
    rec->ips_rank = loss[4];
    /* the printed loss is the mean over all ranks' batches, as a global-batch run sees it */
    if (r->world > 1) {
        orb_train_job_t job = {.kind = ORB_TRAIN_JOB_ALLREDUCE, .buf = loss, .count = 5, .dtype = ORB_FLOAT64,
                               .bucket = -1};
        ORB_TRAIN_CHECK(orb_train_comm_run(r->comm, &job));
    }
    rec->loss = loss[1] > 0 ? loss[0] / loss[1] : 0.0;
    rec->cpu = loss[2];
    rec->steps = steps;
    rec->images = (int64_t)loss[3];
    rec->ips = loss[4];
    return ORB_OK;
}

static orb_status_t train(run_t *r)
{
    const orb_train_opts_t *o = r->o;
    int64_t t_start = orb_train_now_ns();
    for (int64_t e = r->start_epoch; e < o->epochs; e++) {
        int64_t t0 = orb_train_now_ns();
        orb_train_epoch_rec_t *rec = &r->recs[r->nrecs++];
        ORB_TRAIN_CHECK(train_epoch(r, e, rec));
        rec->epoch = (int)e + 1;
        rec->dur = (double)(orb_train_now_ns() - t0) * 1e-9;
        rec->lr = orb_train_lr_at(o->lr, o->lr_step, o->lr_gamma, e);
        if (r->rank == 0) {
            printf("Epoch [%lld/%d], Loss: %.4f, Dur: %.2f\n", (long long)e + 1, o->epochs, rec->loss, rec->dur);
            printf("Throughput [%lld/%d]: %.1f images/s on rank 0, %.1f images/s on %d rank%s", (long long)e + 1,
                   o->epochs, rec->ips_rank, rec->ips, r->world, r->world > 1 ? "s" : "");
            if (o->baseline_ips > 0)
                printf(", scaling efficiency %.1f%% (baseline %.1f images/s on 1 rank)",
                       100.0 * orb_train_scaling_efficiency(rec->ips, r->world, o->baseline_ips), o->baseline_ips);
            printf("\n");
            fflush(stdout);
        }
        ORB_TRAIN_CHECK(save(r, e + 1));
    }
    r->total_time = (double)(orb_train_now_ns() - t_start) * 1e-9;
    if (r->rank == 0)
        printf("Total training time: %.2f s\n", r->total_time);
    return ORB_OK;
}

static orb_status_t evaluate(run_t *r, int64_t *total, int64_t *correct)
{
    int nc = r->model->nclasses;
    /* every rank evaluates with rank 0's running statistics, as a DDP model's forward does */
    if (r->model->nbuffers)
        ORB_TRAIN_CHECK(bcast(r, r->model->buffers, r->model->nbuffers, ORB_FLOAT32));
    ORB_TRAIN_CHECK(orb_train_evaluate(r->model, r->comm, &r->test, (float)r->mean, (float)r->std,
                                       r->class_counts));
    *total = *correct = 0;
    for (int c = 0; c < nc; c++) {
        *correct += r->class_counts[c];
        *total += r->class_counts[nc + c];
    }
    if (r->rank != 0)
        return ORB_OK;
    printf("Accuracy of the network on the %lld test images: %.2f%%\n", (long long)*total,
           *total ? 100.0 * (double)*correct / (double)*total : 0.0);
    for (int c = 0; c < nc; c++)
        if (r->class_counts[nc + c])
            printf("Accuracy of class %d: %.2f%%\n", c,
                   100.0 * (double)r->class_counts[c] / (double)r->class_counts[nc + c]);
    fflush(stdout);
    return ORB_OK;
}

/* Started by hand, with no launcher around: one rank, as PyTorch scripts run without torchrun. */
static int no_launcher(void)
{
    static const char *const vars[] = {"WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "SLURM_NTASKS", "PMI_SIZE"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        if (getenv(vars[i]))
            return 0;
    return 1;
}

static orb_status_t run(run_t *r)
{
    const orb_train_opts_t *o = r->o;
    const orb_train_backend_ops_t *ops;
    ORB_TRAIN_CHECK(orb_train_backend_lookup(o->backend, &ops));
    if (ops != &orb_train_backend_none_ops && no_launcher()) {
        printf("orbit-train: no launcher environment (orbitrun -n N, mpirun, srun): training on 1 rank\n");
        ops = &orb_train_backend_none_ops;
    }
    if (o->grad_dtype != ORB_FLOAT32 && ops == &orb_train_backend_mpi_ops)
        return orb_train_fail(ORB_ERR_UNSUPPORTED, "--grad-dtype %s: Open MPI has no 16-bit floating sum; use --backend "
                              "custom", o->grad_dtype == ORB_BFLOAT16 ? "bf16" : "fp16");
    r->tr_compute.enabled = r->tr_comm.enabled = o->profile != NULL;
    if (o->profile) {
        snprintf(r->lib_trace_dir, sizeof r->lib_trace_dir, "%s.orbit", o->profile);
        r->tr_comm.lib_dir = r->lib_trace_dir;
    }
    ORB_TRAIN_CHECK(orb_train_comm_start(ops, &r->tr_comm, &r->comm));
    r->rank = orb_train_comm_rank(r->comm);
    r->world = orb_train_comm_world(r->comm);
    if (o->batch_size % r->world != 0)
        return orb_train_fail(ORB_ERR_INVALID_ARG, "--batch-size %d is not a multiple of the %d ranks (each takes "
                              "batch / world size)", o->batch_size, r->world);
    r->local_batch = o->batch_size / r->world;
    r->seed = o->seed;
    ORB_TRAIN_CHECK(load_data(r));
    ORB_TRAIN_CHECK(build(r));
    if (o->resume)
        ORB_TRAIN_CHECK(resume(r));
    if (r->rank == 0) {
        printf("orbit-train: %s, %zu parameters, %d rank%s x batch %d (global %d), %s lr %g, backend %s, "
               "%d bucket%s%s, data %s (%lld train / %lld test, mean %.4f std %.4f)\n",
               o->model, r->model->nparams, r->world, r->world > 1 ? "s" : "", r->local_batch, o->batch_size,
               o->optimizer, (double)o->lr, ops->name, r->reducer->nbuckets, r->reducer->nbuckets > 1 ? "s" : "",
               o->no_sync ? " (no sync: gradients not all-reduced)" : o->overlap ? "" : " (no overlap)", o->data, (long long)r->train.n, (long long)r->test.n, r->mean,
               r->std);
        printf("orbit-train: %s, %d thread%s per rank\n", orb_train_blas_describe(), o->threads,
               o->threads > 1 ? "s" : "");
        if (r->start_epoch > 0)
            printf("Resuming after epoch %lld (step %lld) from %s\n", (long long)r->start_epoch,
                   (long long)r->step, o->resume);
        fflush(stdout);
    }
    /* traces start here, after the rendezvous, so ranks' clocks roughly line up */
    r->tr_compute.origin = r->tr_comm.origin = orb_train_now_ns();
    ORB_TRAIN_CHECK(train(r));
    int64_t total, correct;
    ORB_TRAIN_CHECK(evaluate(r, &total, &correct));
    if (o->profile)
        ORB_TRAIN_CHECK(orb_train_profile_finish(r->comm, &r->tr_compute, &r->tr_comm, o->profile, stdout, &r->prof));
    if (r->rank == 0 && o->json) {
        size_t bucket_bytes[2 * ORB_TRAIN_MAX_LAYERS];
        for (int i = 0; i < r->reducer->nbuckets; i++)
            bucket_bytes[i] = r->reducer->buckets[i].count * sizeof(float);
        orb_train_report_t rep = {
            .opts = o, .world = r->world, .per_rank_batch = r->local_batch, .nclasses = r->model->nclasses,
            .nparams = r->model->nparams, .nbuckets = r->reducer->nbuckets, .bucket_bytes = bucket_bytes,
            .data_mean = r->mean, .data_std = r->std, .nepochs = r->nrecs, .epochs = r->recs,
            .total_time = r->total_time, .test_images = total, .correct = correct,
            .class_counts = r->class_counts, .profile = o->profile ? &r->prof : NULL,
            .blas = orb_train_blas_describe(),
        };
        ORB_TRAIN_CHECK(orb_train_report_json(o->json, &rep));
    }
    return ORB_OK;
}

int orb_train_run(const orb_train_opts_t *o)
{
    run_t r = {.o = o};
    orb_train_blas_set_threads(o->threads);
    orb_status_t st = run(&r);
    if (st != ORB_OK) {
        if (r.comm)
            fprintf(stderr, "orbit-train: rank %d: %s\n", r.rank, orb_train_last_error());
        else
            fprintf(stderr, "orbit-train: %s\n", orb_train_last_error());
        fflush(stderr);
        /* the other ranks may be blocked in a collective waiting for this one */
        if (r.comm && r.world > 1)
            orb_train_comm_abort(r.comm);
    }
    orb_train_comm_stop(r.comm);
    orb_train_reducer_destroy(r.reducer);
    orb_train_optim_destroy(r.optim);
    orb_train_model_destroy(r.model);
    orb_train_dataset_free(&r.train);
    orb_train_dataset_free(&r.test);
    orb_train_trace_free(&r.tr_compute);
    orb_train_trace_free(&r.tr_comm);
    free(r.labels);
    free(r.class_counts);
    free(r.recs);
    return st == ORB_OK ? 0 : 1;
}
