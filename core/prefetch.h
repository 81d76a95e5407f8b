/* Taking a cache line for writing before the stores that need it (x86 PREFETCHW, ARM PRFM
 * PSTL1KEEP). A store to a line another core holds waits for that core to give it up, and the
 * stores after it wait in line: shm's small slots are such lines (transport/shm/shm.c). */
#ifndef ORB_CORE_PREFETCH_H
#define ORB_CORE_PREFETCH_H

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>

/* Does this CPU run PREFETCHW (CPUID 0x80000001 ECX bit 8: every Zen, Intel since Broadwell)?
 * Asked once a connection, not a piece. */
static inline int orb_cpu_prefetchw(void)
{
    unsigned a, b, c, d;
    return __get_cpuid(0x80000001u, &a, &b, &c, &d) && (c & (1u << 8));
}

static inline void orb_prefetch_write(const void *p) { __asm__ volatile("prefetchw %0" ::"m"(*(const char *)p)); }
#else
static inline int orb_cpu_prefetchw(void) { return 1; }
static inline void orb_prefetch_write(const void *p) { __builtin_prefetch(p, 1, 3); }
#endif

#endif
