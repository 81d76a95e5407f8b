/* --json: the run's configuration and results, for scripts (bench/train_compare.sh) and
 * tests; the same keys as bench/ddp_torch.py writes. */
#ifndef ORB_TRAIN_REPORT_H
#define ORB_TRAIN_REPORT_H

#include <stdint.h>

#include "options.h"
#include "profile.h"

typedef struct {
    int epoch;
    double loss, dur, lr;
    double cpu; /* CPU seconds of all ranks together: less sensitive than dur to other load */
    int64_t steps, images;  /* optimizer steps; samples trained by all ranks */
    double ips_rank, ips;   /* images/s of rank 0, and summed over the ranks (train.c) */
} orb_train_epoch_rec_t;

/* total images/s over world x the 1-rank figure: 1 is perfect scaling. */
static inline double orb_train_scaling_efficiency(double ips, int world, double baseline_ips)
{
    return world > 0 && baseline_ips > 0 ? ips / ((double)world * baseline_ips) : 0.0;
}

typedef struct {
    const orb_train_opts_t *opts;
    int world, per_rank_batch, nclasses;
    size_t nparams;
    int nbuckets;
    const size_t *bucket_bytes;
    double data_mean, data_std;
    int nepochs;
    const orb_train_epoch_rec_t *epochs;
    double total_time;
    int64_t test_images, correct;
    const int64_t *class_counts; /* correct per class, then total per class */
    const orb_train_profile_summary_t *profile; /* NULL without --profile */
    const char *blas;                           /* library and kernels in use */
} orb_train_report_t;

orb_status_t orb_train_report_json(const char *path, const orb_train_report_t *r);

#endif
