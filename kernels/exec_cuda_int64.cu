/* Device executor kernels for int64 and uint64 (exec_cuda_device.cuh). */
#include "exec_cuda_device.cuh"

namespace orb_cuda_exec {

cudaError_t launch_int64(const orb_cuda_launch_t &L, int blocks, size_t smem, cudaStream_t stream)
{
    return launch_dtype<int64_t>(L, blocks, smem, stream);
}

cudaError_t launch_uint64(const orb_cuda_launch_t &L, int blocks, size_t smem, cudaStream_t stream)
{
    return launch_dtype<uint64_t>(L, blocks, smem, stream);
}

} /* namespace orb_cuda_exec */
