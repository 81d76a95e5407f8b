/* Unfolding of one image for convolution as a matrix product. The column matrix has
 * K = C*kh*kw rows and P = oh*ow columns; it is written at column offset col0 of a matrix
 * with row stride ld, so several images can sit side by side for one larger GEMM. */
#ifndef ORB_TRAIN_IM2COL_H
#define ORB_TRAIN_IM2COL_H

#include <stddef.h>

typedef struct {
    int c, h, w;      /* input image */
    int k, stride, pad;
    int oh, ow;       /* output size */
} orb_train_convgeom_t;

void orb_train_im2col(const orb_train_convgeom_t *g, const float *img, float *col, size_t ld, size_t col0);
/* Accumulates the columns back into img (img must be zeroed by the caller first). */
void orb_train_col2im(const orb_train_convgeom_t *g, const float *col, size_t ld, size_t col0, float *img);

#endif
