/* The baseline flavour: compiled for the build's default ISA (SSE2 on x86-64), float16 by
 * bit manipulation. Runs everywhere; the reference the F16C flavour must match. */
#define ORB_KTARGET
#define ORB_KSET orb_kernels_portable
#define ORB_KHALF_IMPL "portable"

#include "reduce_loops.h"
#include "reduce_table.h"
