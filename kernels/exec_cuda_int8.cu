/* Device executor kernels for int8 and uint8 (exec_cuda_device.cuh). */
#include "exec_cuda_device.cuh"

namespace orb_cuda_exec {

cudaError_t launch_int8(const orb_cuda_launch_t &L, int blocks, size_t smem, cudaStream_t stream)
{
    return launch_dtype<int8_t>(L, blocks, smem, stream);
}

cudaError_t launch_uint8(const orb_cuda_launch_t &L, int blocks, size_t smem, cudaStream_t stream)
{
    return launch_dtype<uint8_t>(L, blocks, smem, stream);
}

} /* namespace orb_cuda_exec */
