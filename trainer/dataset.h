/* An image-classification split (images + labels) held as raw bytes; batches are normalised
 * floats made on demand, which keeps a 60k-image set at 47 MB per rank. */
#ifndef ORB_TRAIN_DATASET_H
#define ORB_TRAIN_DATASET_H

#include <stdint.h>

#include "orbit.h"

typedef struct {
    int64_t n;
    int rows, cols;
    int nclasses;    /* 1 + largest label */
    uint8_t *pixels; /* n * rows * cols */
    uint8_t *labels; /* n */
} orb_train_dataset_t;

/* Loads DIR/<split>-images-idx3-ubyte[.gz] and DIR/<split>-labels-idx1-ubyte[.gz] (or the
 * dotted names .idx3-ubyte); split is "train" or "t10k". A missing or corrupt file is an
 * error naming it. */
orb_status_t orb_train_dataset_load(const char *dir, const char *split, orb_train_dataset_t *ds);
void orb_train_dataset_free(orb_train_dataset_t *ds);

/* Mean and standard deviation of all pixels scaled to [0, 1], as torchvision's Normalize wants. */
void orb_train_dataset_stats(const orb_train_dataset_t *ds, double *mean, double *std);

/* Gathers the samples idx[0..n) into x (n x rows x cols floats, (p/255 - mean) / std) and y. */
void orb_train_dataset_batch(const orb_train_dataset_t *ds, const int64_t *idx, int n, float mean,
                             float std, float *x, int32_t *y);

#endif
