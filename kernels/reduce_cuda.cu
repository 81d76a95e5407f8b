/* CUDA reduction kernels: one grid-wide orb_cuda::reduce_copy (reduce_cuda.h) per
 * (dtype, op), and the host launchers. */
#include "cuda_launch.h"
#include "reduce_cuda.h"


extern "C" {
#include "core/log.h"
}

using namespace orb_cuda;

template <typename T, typename Op>
__global__ void __launch_bounds__(512)
orb_cuda_reduce_kernel(void *d1, void *d2, const void *a, const void *b, size_t n, int pd)
{
    size_t nthreads = (size_t)gridDim.x * blockDim.x;
    size_t tid = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    reduce_copy<T, Op>(d1, d2, a, b, n, pd, tid, nthreads);
}

namespace {

const int threads_per_block = 512;

/* Enough blocks to cover the work with every thread holding ORB_CUDA_UNROLL packs, capped
 * at a few waves of the device's SMs (the grid-stride loop does the rest). */
int grid_for(size_t n, size_t elem)
{
    static int sm_count[64];
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess)
        dev = 0;
    int sms = dev >= 0 && dev < 64 ? sm_count[dev] : 0;
    if (sms == 0) {
        if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess || sms <= 0)
            sms = 32;
        if (dev >= 0 && dev < 64)
            sm_count[dev] = sms; /* racing writers store the same value */
    }
    size_t per_block = (size_t)threads_per_block * ORB_CUDA_UNROLL * (16 / elem);
    size_t blocks = (n + per_block - 1) / per_block;
    size_t cap = (size_t)sms * 4;
    return (int)(blocks < 1 ? 1 : blocks > cap ? cap : blocks);
}

template <typename T, typename Op>
orb_status_t launch(void *d1, void *d2, const void *a, const void *b, size_t n, int pd,
                    cudaStream_t stream)
{
    auto kernel = orb_cuda_reduce_kernel<T, Op>;
    cudaError_t err = ORB_CUDA_LAUNCH(kernel, grid_for(n, sizeof(T)), threads_per_block, 0, stream, d1, d2, a, b, n, pd);
    if (err != cudaSuccess) {
        ORB_WARN("reduction kernel launch failed: %s", cudaGetErrorString(err));
        return ORB_ERR_CUDA;
    }
    return ORB_OK;
}

template <typename T>
orb_status_t launch_op(void *d1, void *d2, const void *a, const void *b, size_t n, int op,
                       int pd, cudaStream_t stream)
{
    if (b == nullptr)
        return launch<T, OpFirst>(d1, d2, a, nullptr, n, pd, stream);
    switch (op) {
    case ORB_SUM:
    case ORB_AVG:
        return launch<T, OpSum>(d1, d2, a, b, n, pd, stream);
    case ORB_PROD:
        return launch<T, OpProd>(d1, d2, a, b, n, pd, stream);
    case ORB_MIN:
        return launch<T, OpMin>(d1, d2, a, b, n, pd, stream);
    case ORB_MAX:
        return launch<T, OpMax>(d1, d2, a, b, n, pd, stream);
    default:
        return ORB_ERR_INVALID_ARG;
    }
}

/* b == NULL: the dividing copy. */
orb_status_t dispatch(void *d1, void *d2, const void *a, const void *b, size_t n,
                      orb_dtype_t dtype, int op, int pd, cudaStream_t stream)
{
    switch (dtype) {
    case ORB_INT8: return launch_op<int8_t>(d1, d2, a, b, n, op, pd, stream);
    case ORB_UINT8: return launch_op<uint8_t>(d1, d2, a, b, n, op, pd, stream);
    case ORB_INT32: return launch_op<int32_t>(d1, d2, a, b, n, op, pd, stream);
    case ORB_UINT32: return launch_op<uint32_t>(d1, d2, a, b, n, op, pd, stream);
    case ORB_INT64: return launch_op<int64_t>(d1, d2, a, b, n, op, pd, stream);
    case ORB_UINT64: return launch_op<uint64_t>(d1, d2, a, b, n, op, pd, stream);
    case ORB_FLOAT16: return launch_op<__half>(d1, d2, a, b, n, op, pd, stream);
    case ORB_BFLOAT16: return launch_op<__nv_bfloat16>(d1, d2, a, b, n, op, pd, stream);
    case ORB_FLOAT32: return launch_op<float>(d1, d2, a, b, n, op, pd, stream);
    case ORB_FLOAT64: return launch_op<double>(d1, d2, a, b, n, op, pd, stream);
    default: return ORB_ERR_INVALID_ARG;
    }
}

} /* namespace */

extern "C" orb_status_t orb_cuda_reduce(void *dst1, void *dst2, const void *a, const void *b,
                                        size_t n, orb_dtype_t dtype, orb_op_t op, int postdiv,
                                        cudaStream_t stream)
{
    if ((unsigned)dtype >= ORB_NUM_DTYPES || (unsigned)op >= ORB_NUM_OPS)
        return ORB_ERR_INVALID_ARG;
    if (n == 0)
        return ORB_OK;
    if (dst1 == nullptr || a == nullptr || b == nullptr)
        return ORB_ERR_INVALID_ARG;
    if (dst2 == dst1)
        dst2 = nullptr;
    return dispatch(dst1, dst2, a, b, n, dtype, op, postdiv, stream);
}

extern "C" orb_status_t orb_cuda_copy(void *dst1, void *dst2, const void *src, size_t n,
                                      orb_dtype_t dtype, int postdiv, cudaStream_t stream)
{
    if ((unsigned)dtype >= ORB_NUM_DTYPES)
        return ORB_ERR_INVALID_ARG;
    if (n == 0)
        return ORB_OK;
    if (dst1 == nullptr || src == nullptr)
        return ORB_ERR_INVALID_ARG;
    if (dst2 == dst1)
        dst2 = nullptr;
    if (postdiv > 1)
        return dispatch(dst1, dst2, src, nullptr, n, dtype, ORB_SUM, postdiv, stream);
    size_t bytes = n * orb_dtype_size(dtype);
    void *dsts[2] = {dst1, dst2};
    for (int k = 0; k < 2; k++) {
        if (dsts[k] == nullptr || dsts[k] == src)
            continue;
        cudaError_t err = cudaMemcpyAsync(dsts[k], src, bytes, cudaMemcpyDefault, stream);
        if (err != cudaSuccess) {
            ORB_WARN("device copy failed: %s", cudaGetErrorString(err));
            return ORB_ERR_CUDA;
        }
    }
    return ORB_OK;
}
