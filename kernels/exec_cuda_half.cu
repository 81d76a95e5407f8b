/* Device executor kernels for float16 and bfloat16 (exec_cuda_device.cuh). */
#include "exec_cuda_device.cuh"

namespace orb_cuda_exec {

cudaError_t launch_float16(const orb_cuda_launch_t &L, int blocks, size_t smem, cudaStream_t stream)
{
    return launch_dtype<__half>(L, blocks, smem, stream);
}

cudaError_t launch_bfloat16(const orb_cuda_launch_t &L, int blocks, size_t smem, cudaStream_t stream)
{
    return launch_dtype<__nv_bfloat16>(L, blocks, smem, stream);
}

} /* namespace orb_cuda_exec */
