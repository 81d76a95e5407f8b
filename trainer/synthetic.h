/* --data synthetic:C,H,W,CLASSES: samples computed from (seed, split, index) instead of read,
 * for throughput runs (PyTorch's ImageNet example has --dummy for the same purpose). Every
 * value is a pure function of its key, so all ranks and all runs agree on sample i and the
 * sampler's shards mean what they mean for files; nothing is stored, so a 3x224x224 set
 * costs no memory. */
#ifndef ORB_TRAIN_SYNTHETIC_H
#define ORB_TRAIN_SYNTHETIC_H

#include <stddef.h>
#include <stdint.h>

#include "orbit.h"

/* Limits that keep a spec from asking for an absurd batch: 64 MiB of floats per sample. */
#define ORB_TRAIN_SYNTH_MAX_DIM 4096
#define ORB_TRAIN_SYNTH_MAX_CHANNELS 1024
#define ORB_TRAIN_SYNTH_MAX_SAMPLE (INT64_C(1) << 24)
#define ORB_TRAIN_SYNTH_MAX_CLASSES 100000

typedef struct {
    int c, h, w, nclasses;
} orb_train_synth_spec_t;

/* data names the generator: "synthetic" or "synthetic:..." (anything else is a directory). */
int orb_train_synth_named(const char *data);
/* Parses "synthetic:C,H,W,CLASSES"; a bad spec is an error naming --data and the form to write. */
orb_status_t orb_train_synth_parse(const char *data, orb_train_synth_spec_t *out);

/* One sample's key: every pixel and the label derive from it. */
uint64_t orb_train_synth_key(uint64_t seed, uint64_t split, int64_t index);
/* len pixels, each the sum of four 16-bit uniforms rescaled to mean 0 and variance 1
 * (Irwin-Hall: N(0,1)-like, within +-3.47); integer arithmetic and one exact float
 * multiply, so every machine computes the same bits. */
void orb_train_synth_pixels(uint64_t key, size_t len, float *x);
/* In [0, nclasses). */
int32_t orb_train_synth_label(uint64_t key, int nclasses);

#endif
