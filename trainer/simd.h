/* Hot loops of our own (not the BLAS) are built for the baseline ISA and, on x86-64, also
 * for AVX2+FMA, picked at load time (ifunc): one binary, full speed on current CPUs. */
#ifndef ORB_TRAIN_SIMD_H
#define ORB_TRAIN_SIMD_H

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(ORB_TRAIN_NO_CLONES)
#define ORB_TRAIN_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define ORB_TRAIN_CLONES
#endif

#endif
