/* Device executor kernels for int32 and uint32 (exec_cuda_device.cuh). */
#include "exec_cuda_device.cuh"

namespace orb_cuda_exec {

cudaError_t launch_int32(const orb_cuda_launch_t &L, int blocks, size_t smem, cudaStream_t stream)
{
    return launch_dtype<int32_t>(L, blocks, smem, stream);
}

cudaError_t launch_uint32(const orb_cuda_launch_t &L, int blocks, size_t smem, cudaStream_t stream)
{
    return launch_dtype<uint32_t>(L, blocks, smem, stream);
}

} /* namespace orb_cuda_exec */
