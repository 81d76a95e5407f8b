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
} orb_train_epoch_rec_t;

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
