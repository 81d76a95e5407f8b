/* Force-included (g++ -include) ahead of every .cu source in the emulator build
 * (-Dgpu_emu=true): what nvcc gives device code, made of plain C++ for the CPU.
 *
 * __shared__ becomes static thread_local: a block's threads are fibers of one OS thread
 * (emu_grid.cc), so they share it as a block shares shared memory. Atomics and fences are
 * the compiler's; __syncthreads switches fibers. Inline PTX has no CPU meaning: the few
 * places that use it have an ORB_CUDA_EMU branch of their own. */
#ifndef ORB_CUDA_EMU_SHIM_H
#define ORB_CUDA_EMU_SHIM_H

#ifndef __cplusplus
#error "cuda_emu.h is for the .cu sources compiled as C++"
#endif

#define ORB_CUDA_EMU 1
#define __shared__ static thread_local
#define __launch_bounds__(...)
#define __noinline__ /* glibc spells the attribute __noinline__ too: empty keeps both valid */

#include <sched.h>
#include <stdint.h>
#include <string.h>

#include <cuda_runtime_api.h>
#include <vector_types.h>

/* The built-in variables: set by the grid runner for the fiber it resumes. */
extern thread_local uint3 threadIdx, blockIdx;
extern thread_local dim3 blockDim, gridDim;

namespace orb_emu {
void syncthreads(); /* emu_grid.cc */
void *dynamic_smem();
void yield_point(); /* emu_slice.cc */
} /* namespace orb_emu */

static inline void __syncthreads() { orb_emu::syncthreads(); }
#if defined(__SANITIZE_THREAD__)
/* ThreadSanitizer has no fences: under it only the acquire/release pairs order anything,
 * so a protocol step that leans on a fence alone shows up as a race. */
static inline void __threadfence() {}
static inline void __threadfence_system() {}
#else
static inline void __threadfence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
static inline void __threadfence_system() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
#endif
/* A waiting thread lets the OS thread of the block it waits for run (2 cores, many blocks), and
 * it is where a block of a process whose time slice is over stops until the process gets the
 * device again (emu_slice.cc): a spinning kernel of orbit reaches it in every Spin::check. */
static inline void __nanosleep(unsigned) { orb_emu::yield_point(); }

/* The C++ form of cudaFuncGetAttributes that cuda_runtime.h gives nvcc's sources. */
template <class T> static inline cudaError_t cudaFuncGetAttributes(struct cudaFuncAttributes *attr, T *entry)
{
    return ::cudaFuncGetAttributes(attr, reinterpret_cast<const void *>(entry));
}

template <typename T> static inline T atomicAdd(T *p, T v) { return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST); }
template <typename T> static inline T atomicExch(T *p, T v) { return __atomic_exchange_n(p, v, __ATOMIC_SEQ_CST); }
template <typename T> static inline T atomicCAS(T *p, T expect, T v)
{
    __atomic_compare_exchange_n(p, &expect, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
    return expect; /* the old value, whether or not it was swapped */
}

template <typename To, typename From> static inline To orb_emu_bits(From x)
{
    static_assert(sizeof(To) == sizeof(From), "same width");
    To y;
    memcpy(&y, &x, sizeof y);
    return y;
}
static inline float __int_as_float(int x) { return orb_emu_bits<float>(x); }
static inline int __float_as_int(float x) { return orb_emu_bits<int>(x); }
static inline double __longlong_as_double(long long x) { return orb_emu_bits<double>(x); }
static inline long long __double_as_longlong(double x) { return orb_emu_bits<long long>(x); }
/* IEEE division rounds to nearest on the CPU too (SSE, no x87 excess precision on x86-64) */
static inline float __fdiv_rn(float a, float b) { return a / b; }
static inline double __ddiv_rn(double a, double b) { return a / b; }

#endif
