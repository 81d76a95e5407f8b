/* What a busy-waiting loop does between two looks: a pause that tells the core it spins
 * (x86 PAUSE), a compiler barrier elsewhere. */
#ifndef ORB_CORE_RELAX_H
#define ORB_CORE_RELAX_H

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
static inline void orb_cpu_relax(void) { _mm_pause(); }
#else
static inline void orb_cpu_relax(void) { __asm__ __volatile__("" ::: "memory"); }
#endif

#endif
