/* IDX files (the MNIST container: big-endian header, then unsigned bytes), gzipped or not,
 * as MNIST, Fashion-MNIST and KMNIST ship them. */
#ifndef ORB_TRAIN_IDX_H
#define ORB_TRAIN_IDX_H

#include <stdint.h>

#include "orbit.h"

#define ORB_TRAIN_IDX_MAX_DIMS 4

typedef struct {
    int ndims;
    int64_t dims[ORB_TRAIN_IDX_MAX_DIMS];
    int64_t count; /* product of dims */
    uint8_t *data; /* count bytes, malloc'd */
} orb_train_idx_t;

/* Reads path (gzip detected from the content, not the name). Expects unsigned-byte data with
 * ndims dimensions. Every failure names the file and what is wrong with it. */
orb_status_t orb_train_idx_read(const char *path, int ndims, orb_train_idx_t *out);
void orb_train_idx_free(orb_train_idx_t *idx);

#endif
