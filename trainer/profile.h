/* --profile: gathers every rank's trace to rank 0, writes one Chrome trace (pid = rank,
 * tid 0 compute, tid 1 communication; open in chrome://tracing or Perfetto) and prints a
 * summary: compute, communication, exposed communication, bytes, busbw per bucket. */
#ifndef ORB_TRAIN_PROFILE_H
#define ORB_TRAIN_PROFILE_H

#include <stdio.h>

#include "comm_thread.h"
#include "trace.h"

typedef struct {
    double step_s, compute_s, comm_s, exposed_s; /* rank 0, summed over steps */
    double bytes;                                /* reduced by rank 0 */
    int64_t steps;
    /* Exposed fraction of the rank that waited least: the last to finish backward waits only
     * for the transfer, the others also for it (imbalance between ranks, not communication). */
    double least_exposed_frac;
} orb_train_profile_summary_t;

/* Collective: every rank calls it after the last step. Only rank 0 writes path and out. */
orb_status_t orb_train_profile_finish(orb_train_comm_t *comm, orb_train_trace_t *compute,
                                      orb_train_trace_t *commtr, const char *path, FILE *out,
                                      orb_train_profile_summary_t *sum);

#endif
