/* Hot loops of our own (not the BLAS) are built for the baseline ISA and, on x86-64, also
 * for AVX2, picked at load time (ifunc): one binary, full speed on current CPUs. (The clone
 * does not contract a * b + c into FMA, so both clones round alike; conv_direct.c, which
 * wants FMA, uses intrinsics and checks the CPU itself.) */
#ifndef ORB_TRAIN_SIMD_H
#define ORB_TRAIN_SIMD_H

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(ORB_TRAIN_NO_CLONES)
#define ORB_TRAIN_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define ORB_TRAIN_CLONES
#endif

/* Eight floats as one value (the GCC/Clang vector extension): one AVX2 register in the avx2
 * clone, two SSE registers in the default one, the same arithmetic in both. For loops whose
 * select or lane layout the auto-vectoriser gets wrong (it turned a masked sum into a branch
 * per element). Through these types a load or store may be unaligned and may alias floats;
 * they are never passed by value (that would change the ABI between the clones). */
typedef float orb_train_v8f __attribute__((vector_size(32), aligned(4), may_alias));
typedef int orb_train_v8i __attribute__((vector_size(32), aligned(4), may_alias));

#endif
