/* Direct convolution of padded images for stride-1 layers (conv.c's WIDE layout): output f
 * (0 <= f < P = oh * wp, columns ox >= ow dropped later) of channel o is
 *   sum over c, ki, kj of w[o][c][ki][kj] * in[c][f + ki * wp + kj],
 * the product the column matrix + SGEMM computes, without building the columns. x86-64 with
 * AVX2 and FMA only; elsewhere conv.c keeps the columns. */
#ifndef ORB_TRAIN_CONV_DIRECT_H
#define ORB_TRAIN_CONV_DIRECT_H

#include <stddef.h>

/* Whether orb_train_conv_direct serves a k x k kernel with co output channels and P outputs
 * per image on this CPU (and pays: k >= 3, co a multiple of 4, P >= 96). */
int orb_train_conv_direct_usable(int k, int co, size_t P);

/* w [co][ci][k][k] into the kernel's layout: [co / 4][ci][k * k][4] (co * ci * k * k floats) */
void orb_train_conv_direct_pack(const float *w, float *wr, int co, int ci, int k);

/* One image: in holds ci padded planes of hp x wp and k - 1 readable floats after the last
 * (they feed dropped outputs only); out[o * ld + f] for o < co, f < P. */
void orb_train_conv_direct(const float *wr, const float *in, int ci, int co, int k, int hp, int wp, size_t P,
                           float *out, size_t ld);

/* The weight gradient of a 3x3 kernel from the same padded images: for o < co, c < ci,
 *   dw[o][c][ki][kj] (+)= sum over images j < gn and f < P of g[o * ld + j * P + f] *
 *                         in[j * pimg + c * hp * wp + f + ki * wp + kj],
 * g being dy in the WIDE layout with zeros in the dropped columns. */
int orb_train_conv_direct_dw_usable(int k, int co, size_t P);
void orb_train_conv_direct_dw(const float *g, size_t ld, const float *in, size_t pimg, int gn, int ci, int co, int hp,
                              int wp, size_t P, float *dw, int accumulate);

#endif
