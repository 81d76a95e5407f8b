/* The median of a few measurements: what the link calibration and the slot stores' verdict
 * judge by (a preempted round or copy lands in a few of them and does not move it). */
#ifndef ORB_CORE_MEDIAN_H
#define ORB_CORE_MEDIAN_H

/* The median of v[0..n) (reorders v); 0 when n is 0. */
double orb_median(double *v, int n);

#endif
