/* The device executor's entry points (exec_cuda.h); the kernels are in
 * exec_cuda_device.cuh. Calls without reductions run the one untyped kernel built here. */
#include "exec_cuda_device.cuh"

using namespace orb_cuda_exec;

namespace orb_cuda_exec {
/* The tracer's clock probe (orb_cuda_exec_clock). Not in an anonymous namespace: nvcc's host
 * stubs cannot name a kernel in this file's one next to the header's. */
__global__ void clock_kernel(unsigned long long *stamp) { *stamp = now_ns(); }
} /* namespace orb_cuda_exec */

namespace {

cudaError_t launch_typed(const orb_cuda_launch_t &L, int blocks, size_t smem, cudaStream_t stream)
{
    switch (L.dtype) {
    case ORB_INT8: return launch_int8(L, blocks, smem, stream);
    case ORB_UINT8: return launch_uint8(L, blocks, smem, stream);
    case ORB_INT32: return launch_int32(L, blocks, smem, stream);
    case ORB_UINT32: return launch_uint32(L, blocks, smem, stream);
    case ORB_INT64: return launch_int64(L, blocks, smem, stream);
    case ORB_UINT64: return launch_uint64(L, blocks, smem, stream);
    case ORB_FLOAT16: return launch_float16(L, blocks, smem, stream);
    case ORB_BFLOAT16: return launch_bfloat16(L, blocks, smem, stream);
    case ORB_FLOAT32: return launch_float32(L, blocks, smem, stream);
    case ORB_FLOAT64: return launch_float64(L, blocks, smem, stream);
    default: return cudaErrorInvalidValue;
    }
}

} /* namespace */


static_assert(sizeof(orb_cuda_launch_t) <= 4000, "the launch record is one kernel parameter (4 KiB)");
static_assert(sizeof(orb_cuda_ctrl_t) <= ORB_CUDA_CTRL_BYTES, "control page");

extern "C" int orb_cuda_exec_blocks(const orb_cuda_launch_t *launch)
{
    int blocks = 0;
    for (int i = 0; i < launch->nops; i++)
        blocks += launch->ops[i].nlanes;
    return blocks;
}

extern "C" orb_status_t orb_cuda_exec_launch(const orb_cuda_launch_t *launch, cudaStream_t stream, char *err,
                                             size_t errlen)
{
    const orb_cuda_launch_t &L = *launch;
    if (L.nops < 1 || L.nops > ORB_CUDA_MAX_OPS || L.nranks < 1 || L.nranks > ORB_CUDA_MAX_RANKS) {
        snprintf(err, errlen, "device executor: %d calls and %d ranks per launch are out of range", L.nops, L.nranks);
        return ORB_ERR_INVALID_ARG;
    }
    int typed = 0;
    for (int i = 0; i < L.nops; i++)
        typed |= L.ops[i].typed;
    if (typed && ((unsigned)L.dtype >= ORB_NUM_DTYPES || (unsigned)L.op >= ORB_NUM_OPS)) {
        snprintf(err, errlen, "device executor: dtype %d / op %d has no kernel", L.dtype, L.op);
        return ORB_ERR_INVALID_ARG;
    }
    int blocks = orb_cuda_exec_blocks(launch);
    if (blocks == 0)
        return ORB_OK;
    size_t smem = 4 * sizeof(unsigned long long) * (size_t)L.nranks;
    cudaError_t rc = typed ? launch_typed(L, blocks, smem, stream)
                           : launch_kernel<uint8_t, OpNone>(L, blocks, smem, stream);
    if (rc != cudaSuccess) {
        snprintf(err, errlen, "device executor launch (%d blocks of %d threads) failed: %s (%s)", blocks, NT,
                 cudaGetErrorString(rc), cudaGetErrorName(rc));
        return ORB_ERR_CUDA;
    }
    return ORB_OK;
}

extern "C" orb_status_t orb_cuda_exec_clock(unsigned long long *stamp, cudaStream_t stream, char *err,
                                            size_t errlen)
{
    cudaError_t rc = ORB_CUDA_LAUNCH(clock_kernel, 1, 1, 0, stream, stamp);
    if (rc != cudaSuccess) {
        snprintf(err, errlen, "the clock probe's launch failed: %s (%s)", cudaGetErrorString(rc), cudaGetErrorName(rc));
        (void)cudaGetLastError();
        return ORB_ERR_CUDA;
    }
    return ORB_OK;
}

extern "C" orb_status_t orb_cuda_exec_load(char *err, size_t errlen)
{
    orb_cuda_launch_t L; /* only its dtype and op are read: nothing is launched */
    memset(&L, 0, sizeof L);
    cudaError_t rc = ORB_CUDA_LOAD(clock_kernel);
    if (rc == cudaSuccess)
        rc = launch_kernel<uint8_t, OpNone>(L, 0, 0, nullptr);
    for (int d = 0; d < ORB_NUM_DTYPES && rc == cudaSuccess; d++)
        for (int o = 0; o < ORB_NUM_OPS && rc == cudaSuccess; o++) {
            L.dtype = d;
            L.op = o;
            rc = launch_typed(L, 0, 0, nullptr);
        }
    if (rc != cudaSuccess) {
        snprintf(err, errlen, "loading the device executor's kernels failed: %s (%s)", cudaGetErrorString(rc),
                 cudaGetErrorName(rc));
        (void)cudaGetLastError();
        return ORB_ERR_CUDA;
    }
    return ORB_OK;
}
