/* Checkpoints: parameters, optimiser state, the model's buffers (batch norm's running
 * statistics) and the position in the run (epochs done, global step), enough for --resume
 * to continue bit for bit. One file: a 128-byte header,
 * float32 arrays in host byte order (little-endian on every supported machine), CRC-32. */
#ifndef ORB_TRAIN_CHECKPOINT_H
#define ORB_TRAIN_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>

#include "orbit.h"

typedef struct {
    char model[16];
    int32_t optimizer; /* orb_train_optim_kind_t */
    int32_t nstate;    /* optimiser state vectors after the parameters */
    uint64_t nparams;
    int64_t epochs_done;
    int64_t step;      /* global optimiser steps taken */
    int64_t optim_t;
    uint64_t seed;
    int64_t batch_size;
    int32_t world;
    float momentum;
    uint64_t nbuffers; /* model buffers after the optimiser state (0 in files of models without) */
} orb_train_ckpt_info_t;

/* Writes path.tmp, syncs it, renames it over path: a crash leaves the old file or the new. */
orb_status_t orb_train_ckpt_save(const char *path, const orb_train_ckpt_info_t *info, const float *params,
                                 float *const state[2], const float *buffers);
/* Reads and checks the whole file (size, magic, CRC) into a malloc'd blob. */
orb_status_t orb_train_ckpt_read(const char *path, void **blob, size_t *len);
/* Points into a checked blob; name is used in error messages. */
orb_status_t orb_train_ckpt_parse(const char *name, const void *blob, size_t len, orb_train_ckpt_info_t *info,
                                  const float **params, const float *state[2], const float **buffers);

#endif
