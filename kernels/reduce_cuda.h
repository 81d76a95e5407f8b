/* CUDA reduction and copy kernels: the device side of reduce.h, same contract.
 *
 * dst1[i] (and dst2[i] when not NULL) = post(op(a[i], b[i])); destinations may alias a
 * source exactly. float16 / bfloat16 compute in float32 and round once (to nearest even);
 * their NaN results are the canonical 0x7e00 / 0x7fc0, as on the CPU. Integer sum/prod
 * wrap; postdiv > 1 divides (integers truncate toward zero). min/max: NaN propagates,
 * -0 < +0. All pointers are device (or mapped peer) memory.
 *
 * From C: the host launchers. From CUDA C++ (__CUDACC__): also the device building block
 * orb_cuda::reduce_copy<T, Op> that the device executor calls inside its own kernels (also
 * when the CPU emulator, tools/cuda_emu, compiles them as C++: ORB_CUDA_EMU). */
#ifndef ORB_KERNELS_REDUCE_CUDA_H
#define ORB_KERNELS_REDUCE_CUDA_H

#include <stddef.h>

#include <cuda_runtime_api.h>

#include "orbit.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Enqueue on stream. ORB_ERR_INVALID_ARG for a bad dtype/op or NULL pointer with n > 0,
 * ORB_ERR_CUDA when the launch fails (the CUDA error is logged). */
orb_status_t orb_cuda_reduce(void *dst1, void *dst2, const void *a, const void *b, size_t n,
                             orb_dtype_t dtype, orb_op_t op, int postdiv, cudaStream_t stream);

/* dst1 (and dst2) = post(src): cudaMemcpyAsync when postdiv <= 1, a kernel otherwise. */
orb_status_t orb_cuda_copy(void *dst1, void *dst2, const void *src, size_t n, orb_dtype_t dtype,
                           int postdiv, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#if (defined(__CUDACC__) || defined(ORB_CUDA_EMU)) && defined(__cplusplus)

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

#include <type_traits>

namespace orb_cuda {

/* ---- element types: storage type, compute type, widen / narrow ----------------------- */

/* Raw: how an element is stored and moved (plain bits for float16 / bfloat16, whose CUDA
 * types have constructors and cannot sit in a union); Acc: what it is computed in. */
template <typename T> struct Elem {
    typedef T Raw;
    typedef T Acc;
    static __device__ __forceinline__ Acc load(Raw x) { return x; }
    static __device__ __forceinline__ Raw store(Acc x) { return x; }
};

/* Canonical NaN on narrowing: the CPU kernels do the same (payloads depend on operand
 * order, which neither side promises). */
template <> struct Elem<__half> {
    typedef unsigned short Raw;
    typedef float Acc;
    static __device__ __forceinline__ float load(Raw x) { return __half2float(__ushort_as_half(x)); }
    static __device__ __forceinline__ Raw store(float x)
    {
        return x != x ? (Raw)0x7e00 : __half_as_ushort(__float2half_rn(x));
    }
};

template <> struct Elem<__nv_bfloat16> {
    typedef unsigned short Raw;
    typedef float Acc;
    static __device__ __forceinline__ float load(Raw x)
    {
        return __bfloat162float(__ushort_as_bfloat16(x));
    }
    static __device__ __forceinline__ Raw store(float x)
    {
        return x != x ? (Raw)0x7fc0 : __bfloat16_as_ushort(__float2bfloat16_rn(x));
    }
};

/* ---- ops on the compute type ----------------------------------------------------------- */

/* Integer sum/prod in the unsigned type of the same width: wraps, no signed overflow. */
template <typename T> struct Unsigned { typedef T type; };
template <> struct Unsigned<int8_t> { typedef uint8_t type; };
template <> struct Unsigned<int32_t> { typedef uint32_t type; };
template <> struct Unsigned<int64_t> { typedef uint64_t type; };

template <typename T> __device__ __forceinline__ bool is_nan(T) { return false; }
template <> __device__ __forceinline__ bool is_nan<float>(float x) { return x != x; }
template <> __device__ __forceinline__ bool is_nan<double>(double x) { return x != x; }

/* Equal floats have equal bits except +0 / -0: OR of the bits gives -0 (min), AND +0. */
__device__ __forceinline__ float zero_or(float x, float y) { return __int_as_float(__float_as_int(x) | __float_as_int(y)); }
__device__ __forceinline__ float zero_and(float x, float y) { return __int_as_float(__float_as_int(x) & __float_as_int(y)); }
__device__ __forceinline__ double zero_or(double x, double y) { return __longlong_as_double(__double_as_longlong(x) | __double_as_longlong(y)); }
__device__ __forceinline__ double zero_and(double x, double y) { return __longlong_as_double(__double_as_longlong(x) & __double_as_longlong(y)); }
template <typename T> __device__ __forceinline__ T zero_or(T x, T) { return x; }
template <typename T> __device__ __forceinline__ T zero_and(T x, T) { return x; }

struct OpSum {
    template <typename T> static __device__ __forceinline__ T apply(T x, T y)
    {
        typedef typename Unsigned<T>::type U;
        return (T)(U)((U)x + (U)y);
    }
    static __device__ __forceinline__ float apply(float x, float y) { return x + y; }
    static __device__ __forceinline__ double apply(double x, double y) { return x + y; }
};

struct OpProd {
    template <typename T> static __device__ __forceinline__ T apply(T x, T y)
    {
        typedef typename Unsigned<T>::type U;
        return (T)(U)((U)x * (U)y);
    }
    static __device__ __forceinline__ float apply(float x, float y) { return x * y; }
    static __device__ __forceinline__ double apply(double x, double y) { return x * y; }
};

struct OpMin {
    template <typename T> static __device__ __forceinline__ T apply(T x, T y)
    {
        T r = x < y ? x : y;
        r = x == y ? zero_or(x, y) : r;
        r = is_nan(y) ? y : r;
        return is_nan(x) ? x : r;
    }
};

struct OpMax {
    template <typename T> static __device__ __forceinline__ T apply(T x, T y)
    {
        T r = x > y ? x : y;
        r = x == y ? zero_and(x, y) : r;
        r = is_nan(y) ? y : r;
        return is_nan(x) ? x : r;
    }
};

/* r = a: the dividing copy. */
struct OpFirst {
    template <typename T> static __device__ __forceinline__ T apply(T x, T) { return x; }
};

/* ---- post-division ---------------------------------------------------------------------- */

/* integers: 64-bit division truncates toward zero; postdiv may not fit T */
template <typename T> __device__ __forceinline__ T post_div(T r, int pd)
{
    if (std::is_signed<T>::value)
        return (T)((int64_t)r / (int64_t)pd);
    return (T)((uint64_t)r / (uint64_t)pd);
}
template <> __device__ __forceinline__ float post_div<float>(float r, int pd) { return __fdiv_rn(r, (float)pd); }
template <> __device__ __forceinline__ double post_div<double>(double r, int pd) { return __ddiv_rn(r, (double)pd); }

template <typename T, typename Op>
__device__ __forceinline__ typename Elem<T>::Raw reduce_elem(typename Elem<T>::Raw x,
                                                             typename Elem<T>::Raw y,
                                                             bool two_src, int pd)
{
    typedef typename Elem<T>::Acc Acc;
    Acc r = two_src ? Op::apply(Elem<T>::load(x), Elem<T>::load(y)) : Elem<T>::load(x);
    if (pd > 1)
        r = post_div<Acc>(r, pd);
    return Elem<T>::store(r);
}

/* 16 bytes of elements, moved as one uint4. */
template <typename R> union Pack {
    uint4 v;
    R e[sizeof(uint4) / sizeof(R)];
};

#define ORB_CUDA_UNROLL 4

/* The building block: threads tid = 0..nthreads-1 of the caller (a block, a warp group or
 * the whole grid) cover n elements together. b == NULL: copy a (with post-division). All
 * loads of one step come before its stores, so exact aliasing is safe. T is the CUDA
 * element type (int8_t ... double, __half, __nv_bfloat16); Op one of Op* above. */
template <typename T, typename Op>
__device__ void reduce_copy(void *dst1, void *dst2, const void *src_a, const void *src_b,
                            size_t n, int pd, size_t tid, size_t nthreads)
{
    typedef typename Elem<T>::Raw R;
    R *d1 = (R *)dst1, *d2 = (R *)dst2;
    const R *a = (const R *)src_a, *b = (const R *)src_b;
    const size_t per = sizeof(uint4) / sizeof(R);
    const bool two_src = b != nullptr;
    /* elements until a is 16-byte aligned; the vector path needs every pointer aligned
     * there, otherwise everything goes the scalar way (still coalesced) */
    size_t head = ((16 - ((uintptr_t)a & 15)) & 15) / sizeof(R);
    if (head > n)
        head = n;
    bool vec = ((uintptr_t)a & (sizeof(R) - 1)) == 0;
    const void *ptrs[3] = {d1 + head, d2 ? (const void *)(d2 + head) : nullptr,
                           two_src ? (const void *)(b + head) : nullptr};
    for (int k = 0; k < 3; k++)
        vec = vec && (ptrs[k] == nullptr || ((uintptr_t)ptrs[k] & 15) == 0);
    if (!vec)
        head = n;

    for (size_t i = tid; i < head; i += nthreads) {
        R r = reduce_elem<T, Op>(a[i], two_src ? b[i] : a[i], two_src, pd);
        d1[i] = r;
        if (d2)
            d2[i] = r;
    }

    size_t npacks = (n - head) / per;
    const uint4 *va = (const uint4 *)(a + head);
    const uint4 *vb = (const uint4 *)(two_src ? b + head : a + head);
    uint4 *v1 = (uint4 *)(d1 + head);
    uint4 *v2 = d2 ? (uint4 *)(d2 + head) : nullptr;

    /* ORB_CUDA_UNROLL packs per thread in flight, spaced nthreads apart: coalesced */
    size_t p = tid;
    for (; p + (ORB_CUDA_UNROLL - 1) * nthreads < npacks; p += ORB_CUDA_UNROLL * nthreads) {
        Pack<R> x[ORB_CUDA_UNROLL], y[ORB_CUDA_UNROLL];
#pragma unroll
        for (int u = 0; u < ORB_CUDA_UNROLL; u++) {
            x[u].v = va[p + u * nthreads];
            y[u].v = two_src ? vb[p + u * nthreads] : x[u].v;
        }
#pragma unroll
        for (int u = 0; u < ORB_CUDA_UNROLL; u++) {
#pragma unroll
            for (size_t j = 0; j < per; j++)
                x[u].e[j] = reduce_elem<T, Op>(x[u].e[j], y[u].e[j], two_src, pd);
        }
#pragma unroll
        for (int u = 0; u < ORB_CUDA_UNROLL; u++) {
            v1[p + u * nthreads] = x[u].v;
            if (v2)
                v2[p + u * nthreads] = x[u].v;
        }
    }
    for (; p < npacks; p += nthreads) {
        Pack<R> x, y;
        x.v = va[p];
        y.v = two_src ? vb[p] : x.v;
#pragma unroll
        for (size_t j = 0; j < per; j++)
            x.e[j] = reduce_elem<T, Op>(x.e[j], y.e[j], two_src, pd);
        v1[p] = x.v;
        if (v2)
            v2[p] = x.v;
    }

    for (size_t i = head + npacks * per + tid; i < n; i += nthreads) {
        R r = reduce_elem<T, Op>(a[i], two_src ? b[i] : a[i], two_src, pd);
        d1[i] = r;
        if (d2)
            d2[i] = r;
    }
}

} /* namespace orb_cuda */

#endif /* __CUDACC__ || ORB_CUDA_EMU */

#endif
