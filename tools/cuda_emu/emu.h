/* The CUDA emulator's internal interface (C++): what the device-code shim (cuda_emu.h), the
 * grid runner (emu_grid.cc) and the runtime calls (emu_runtime.cc) share.
 *
 * The emulator runs orbit's device path on the CPU so that the GPU tests exercise its host
 * logic and the executor's protocol on machines without a GPU. It is a test tool: it says
 * nothing about speed, the GPU memory model or the real CUDA runtime's corner cases. */
#ifndef ORB_CUDA_EMU_EMU_H
#define ORB_CUDA_EMU_EMU_H

#include <stddef.h>

#include <functional>

#include <cuda_runtime_api.h>

namespace orb_emu {

/* Run a grid to completion on the calling thread (emu_grid.cc): every block on an OS thread
 * of its own while the grid fits the emulated SMs (blocks of a grid that fits are
 * co-resident, as on a GPU at one block per SM), the threads of a block as fibers that switch
 * at __syncthreads. body is called once per thread with threadIdx/blockIdx set. */
void grid_run(dim3 grid, dim3 block, size_t dynamic_smem, const std::function<void()> &body);

/* Emulated SMs per device: ORBIT_CUDA_EMU_SMS, default 32. */
int sm_count();

/* Emulated devices: ORBIT_CUDA_EMU_DEVICES, default 1. */
int device_count();

} /* namespace orb_emu */

/* A kernel launch (the shim's ORB_CUDA_LAUNCH): checks the configuration like the runtime
 * (cudaErrorInvalidConfiguration, cudaErrorInvalidResourceHandle ...; the error is also the
 * thread's last error), then enqueues grid_run on the stream, or adds it to the graph the
 * stream is capturing. Implemented in emu_runtime.cc. */
cudaError_t orb_emu_launch(dim3 grid, dim3 block, size_t dynamic_smem, cudaStream_t stream,
                           std::function<void()> body);

/* kernel(args...) as a launch: the arguments are evaluated here and copied, as CUDA copies a
 * kernel's parameters at the launch. */
template <typename K, typename... A>
cudaError_t orb_emu_launch_kernel(dim3 grid, dim3 block, size_t dynamic_smem, cudaStream_t stream, K kernel, A... args)
{
    return orb_emu_launch(grid, block, dynamic_smem, stream, [kernel, args...] { kernel(args...); });
}

#endif
