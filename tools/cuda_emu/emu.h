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
#include <type_traits>

#include <cuda_runtime_api.h>

namespace orb_emu {

/* Run a grid of the device to completion on the calling thread (emu_grid.cc): every block on
 * an OS thread of its own while the grid fits the emulated SMs (blocks of a grid that fits
 * are co-resident, as on a GPU at one block per SM), the threads of a block as fibers that
 * switch at __syncthreads. body is called once per thread with threadIdx/blockIdx set. Each
 * block starts only once this process holds the device's time slice (slice_*). */
void grid_run(dim3 grid, dim3 block, size_t dynamic_smem, const std::function<void()> &body, int device);

/* Time slices between processes that share an emulated device (emu_slice.cc): kernels of
 * different processes never run at the same time unless MPS is on. A grid counts as running
 * from slice_grid_begin to slice_grid_end; each block calls slice_block_begin before it runs
 * (waits until the process owns the device) and slice_block_end after. */
void slice_grid_begin(int device);
void slice_grid_end(int device);
void slice_block_begin(int device);
void slice_block_end();

/* The first call that needs the device's context in this process: false when the device is
 * in ORBIT_CUDA_EMU_COMPUTE_MODE=exclusive_process and another live process has a context
 * on it (the call fails with cudaErrorDevicesUnavailable). */
bool device_open(int device);

/* Emulated SMs per device: ORBIT_CUDA_EMU_SMS, default 32. */
int sm_count();

/* Emulated devices: ORBIT_CUDA_EMU_DEVICES, default 1. */
int device_count();

} /* namespace orb_emu */

/* A kernel launch (the shim's ORB_CUDA_LAUNCH): checks the configuration like the runtime
 * (cudaErrorInvalidConfiguration, cudaErrorInvalidResourceHandle ...; the error is also the
 * thread's last error), loads func if lazy loading has not yet (a context-wide wait, see
 * CUDA_MODULE_LOADING), then enqueues grid_run on the stream, or adds it to the graph the
 * stream is capturing. func names the kernel (null: a body that is no module function, never
 * loaded). Implemented in emu_runtime.cc. */
cudaError_t orb_emu_launch(dim3 grid, dim3 block, size_t dynamic_smem, cudaStream_t stream,
                           std::function<void()> body, const void *func = nullptr);

/* The identity of a kernel: a function's address (what cudaFuncGetAttributes is given), or
 * one per type for a function object. */
template <typename K> const void *orb_emu_kernel_key(K kernel)
{
    if constexpr (std::is_pointer<K>::value && std::is_function<typename std::remove_pointer<K>::type>::value) {
        return reinterpret_cast<const void *>(kernel);
    } else {
        static const char tag = 0;
        return &tag;
    }
}

/* kernel(args...) as a launch: the arguments are evaluated here and copied, as CUDA copies a
 * kernel's parameters at the launch. */
template <typename K, typename... A>
cudaError_t orb_emu_launch_kernel(dim3 grid, dim3 block, size_t dynamic_smem, cudaStream_t stream, K kernel, A... args)
{
    return orb_emu_launch(grid, block, dynamic_smem, stream, [kernel, args...] { kernel(args...); },
                          orb_emu_kernel_key(kernel));
}

#endif
