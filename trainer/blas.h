/* BLAS set-up. OpenBLAS makes two choices when it is loaded, before main, that matter
 * here: its thread pool (as many threads as cores; idle workers spin on sched_yield and
 * take CPU from the other ranks on the same cores, even after openblas_set_num_threads(1))
 * and its kernels (from its own CPU table: a release older than the CPU can take an
 * AVX-512 machine for Haswell or Zen and run AVX2 kernels at half the SGEMM speed). Both
 * can only be set through the environment, so orb_train_blas_prepare sets
 * OPENBLAS_NUM_THREADS (from --threads) and, in that misdetection case only,
 * OPENBLAS_CORETYPE=SkylakeX, and re-executes the program once. Variables the user set are
 * left alone (an explicit OPENBLAS_CORETYPE=Haswell stays Haswell). */
#ifndef ORB_TRAIN_BLAS_H
#define ORB_TRAIN_BLAS_H

/* Call first thing in main: may not return (re-exec). */
void orb_train_blas_prepare(int argc, char **argv);
void orb_train_blas_set_threads(int threads);
/* "OpenBLAS 0.3.21, SkylakeX kernels" */
const char *orb_train_blas_describe(void);

#endif
