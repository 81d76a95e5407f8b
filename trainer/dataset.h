/* An image-classification split: images + labels held as raw bytes (IDX files), or generated
 * (synthetic.h) and held as nothing. Batches are normalised floats made on demand, which keeps
 * a 60k-image set at 47 MB per rank and a synthetic one at a few bytes. */
#ifndef ORB_TRAIN_DATASET_H
#define ORB_TRAIN_DATASET_H

#include <stdint.h>

#include "orbit.h"
#include "synthetic.h"

/* --data synthetic: ImageNet-1k's training set size, as PyTorch's ImageNet example fakes it
 * (--dummy), so steps per epoch match a real run and --steps, not the set, bounds a
 * throughput run; a small test set keeps the closing evaluation short on CPU. */
#define ORB_TRAIN_SYNTH_TRAIN_N INT64_C(1281167)
#define ORB_TRAIN_SYNTH_TEST_N INT64_C(1000)

typedef struct {
    int64_t n;
    int channels;    /* 1 for IDX files */
    int rows, cols;
    int nclasses;    /* IDX: 1 + largest label; synthetic: as given */
    uint8_t *pixels; /* n * rows * cols; NULL when synthetic */
    uint8_t *labels; /* n; NULL when synthetic */
    int synthetic;
    uint64_t seed, split; /* synthetic: the samples' keys (orb_train_synth_key) */
} orb_train_dataset_t;

/* Loads DIR/<split>-images-idx3-ubyte[.gz] and DIR/<split>-labels-idx1-ubyte[.gz] (or the
 * dotted names .idx3-ubyte); split is "train" or "t10k". A missing or corrupt file is an
 * error naming it. */
orb_status_t orb_train_dataset_load(const char *dir, const char *split, orb_train_dataset_t *ds);
/* The generated split ("train" or "t10k") of spec, keyed by seed: no memory, no files. */
void orb_train_dataset_synthetic(const orb_train_synth_spec_t *spec, uint64_t seed, const char *split,
                                 orb_train_dataset_t *ds);
void orb_train_dataset_free(orb_train_dataset_t *ds);

/* Mean and standard deviation of all pixels scaled to [0, 1], as torchvision's Normalize wants;
 * 0 and 1 for generated data, which is already N(0, 1)-like. */
void orb_train_dataset_stats(const orb_train_dataset_t *ds, double *mean, double *std);

/* Gathers the samples idx[0..n) into x (n x channels x rows x cols floats, (p/255 - mean) / std
 * for files, generated values for synthetic data) and y. */
void orb_train_dataset_batch(const orb_train_dataset_t *ds, const int64_t *idx, int n, float mean,
                             float std, float *x, int32_t *y);

#endif
