/* Device executor kernels for float32 and float64 (exec_cuda_device.cuh). */
#include "exec_cuda_device.cuh"

namespace orb_cuda_exec {

cudaError_t launch_float32(const orb_cuda_launch_t &L, int blocks, size_t smem, cudaStream_t stream)
{
    return launch_dtype<float>(L, blocks, smem, stream);
}

cudaError_t launch_float64(const orb_cuda_launch_t &L, int blocks, size_t smem, cudaStream_t stream)
{
    return launch_dtype<double>(L, blocks, smem, stream);
}

} /* namespace orb_cuda_exec */
