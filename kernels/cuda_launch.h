/* Kernel launches and dynamic shared memory, spelled once for nvcc and once for the CPU
 * emulator (tools/cuda_emu, -Dgpu_emu=true), which has no <<< >>> syntax. Internal to
 * kernels/. */
#ifndef ORB_KERNELS_CUDA_LAUNCH_H
#define ORB_KERNELS_CUDA_LAUNCH_H

#ifdef ORB_CUDA_EMU
#include "emu.h"
/* kernel: a name without commas (take a pointer to a template instance first) */
#define ORB_CUDA_LAUNCH(kernel, grid, block, smem, stream, ...) \
    orb_emu_launch_kernel(dim3(grid), dim3(block), (smem), (stream), kernel, __VA_ARGS__)
#define ORB_CUDA_DYNAMIC_SHARED(type, name) type *name = (type *)orb_emu::dynamic_smem()
#else
#define ORB_CUDA_LAUNCH(kernel, grid, block, smem, stream, ...) \
    (kernel<<<(grid), (block), (smem), (stream)>>>(__VA_ARGS__), cudaGetLastError())
#define ORB_CUDA_DYNAMIC_SHARED(type, name) extern __shared__ type name[]
#endif

/* Loads kernel into the current context now (cudaFuncGetAttributes does): under lazy module
 * loading, the default since CUDA 12.2, a kernel's first launch may otherwise need a
 * context-wide synchronisation, which deadlocks while a peer rank's kernel spins for us. */
#define ORB_CUDA_LOAD(kernel)                                               \
    ([&]() {                                                                \
        struct cudaFuncAttributes attr_;                                    \
        return cudaFuncGetAttributes(&attr_, (const void *)(kernel));       \
    }())

#endif
