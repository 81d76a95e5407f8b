/* orbit-train's command line. */
#ifndef ORB_TRAIN_OPTIONS_H
#define ORB_TRAIN_OPTIONS_H

#include <stdint.h>

#include "orbit.h"
#include "synthetic.h"

#define ORB_TRAIN_DEFAULT_DATA "/usr/share/datasets/fashion-mnist"

typedef struct {
    const char *model;
    const char *data;
    int synthetic;               /* --data synthetic:C,H,W,CLASSES, parsed into synth */
    orb_train_synth_spec_t synth;
    int epochs;
    int64_t steps;   /* optimizer steps per epoch, 0: the whole shard */
    int batch_size;  /* global: per-rank batch = batch_size / world */
    float lr;
    const char *optimizer;
    float momentum;
    int lr_step;     /* StepLR step size in epochs, 0: constant */
    float lr_gamma;
    const char *backend;
    double bucket_mb;
    int overlap;
    uint64_t seed;
    int seed_set;
    int threads;     /* BLAS threads per rank */
    double baseline_ips; /* images/s of the same run on one rank, 0: unknown */
    const char *profile, *save, *resume, *json;
    orb_dtype_t grad_dtype; /* the gradient buckets on the wire: float32, bfloat16 or float16 */
    int sync_bn;            /* SyncBatchNorm: batch statistics all-reduced inside forward */
    int no_sync;            /* gradients not all-reduced (DDP's no_sync()): measures the step without */
} orb_train_opts_t;

/* Returns ORB_OK, or ORB_ERR_INVALID_ARG with the message recorded; *exit_now is set
 * (with status 0) after --help. */
orb_status_t orb_train_opts_parse(int argc, char **argv, orb_train_opts_t *o, int *exit_now);
void orb_train_opts_usage(const char *prog);

#endif
