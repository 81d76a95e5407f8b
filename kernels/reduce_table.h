/* The table of one flavour, after reduce_loops.h (and the flavour's own float16 /
 * bfloat16 kernels when ORB_KHALF_OWN is set); needs ORB_KSET and ORB_KHALF_IMPL. */
#define ORB_KROW(sfx)                                                                         \
    {                                                                                         \
        [ORB_KOP_SUM] = orb_k_sum_##sfx, [ORB_KOP_PROD] = orb_k_prod_##sfx,                   \
        [ORB_KOP_MIN] = orb_k_min_##sfx, [ORB_KOP_MAX] = orb_k_max_##sfx,                     \
        [ORB_KOP_FIRST] = orb_k_first_##sfx,                                                  \
    }

const struct orb_kernel_set ORB_KSET = {
    .half_impl = ORB_KHALF_IMPL,
    .loop = {
        [ORB_INT8] = ORB_KROW(i8),
        [ORB_UINT8] = ORB_KROW(u8),
        [ORB_INT32] = ORB_KROW(i32),
        [ORB_UINT32] = ORB_KROW(u32),
        [ORB_INT64] = ORB_KROW(i64),
        [ORB_UINT64] = ORB_KROW(u64),
        [ORB_FLOAT16] = ORB_KROW(f16),
        [ORB_BFLOAT16] = ORB_KROW(bf16),
        [ORB_FLOAT32] = ORB_KROW(f32),
        [ORB_FLOAT64] = ORB_KROW(f64),
    },
};
