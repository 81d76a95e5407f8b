/* The AVX2 + F16C flavour, chosen at run time on CPUs that have both. Every function
 * carries the target attribute, so the rest of the library stays baseline ISA. The plain
 * types are the compiler-vectorised loops of reduce_loops.h; float16 / bfloat16 are
 * written here with intrinsics so that widening, op and narrowing stay in registers. */
#include "reduce_impl.h"

#ifdef ORB_KERNELS_HAVE_AVX2

#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>

#define ORB_KTARGET __attribute__((target("avx2,f16c")))
#define ORB_KSET orb_kernels_avx2
#define ORB_KHALF_IMPL "f16c"
#define ORB_KHALF_OWN

#include "reduce_loops.h"

/* ---- eight float32 lanes: the element ops of reduce_loops.h, lane for lane --------- */

static inline ORB_KTARGET __m256 orb_v_sum(__m256 x, __m256 y) { return _mm256_add_ps(x, y); }
static inline ORB_KTARGET __m256 orb_v_prod(__m256 x, __m256 y) { return _mm256_mul_ps(x, y); }
static inline ORB_KTARGET __m256 orb_v_first(__m256 x, __m256 y) { (void)y; return x; }

/* Same selects as orb_min_f32 / orb_max_f32, in the same order, so NaN payloads match. */
static inline ORB_KTARGET __m256 orb_v_nan_pick(__m256 r, __m256 x, __m256 y)
{
    r = _mm256_blendv_ps(r, y, _mm256_cmp_ps(y, y, _CMP_UNORD_Q));
    return _mm256_blendv_ps(r, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
}

static inline ORB_KTARGET __m256 orb_v_min(__m256 x, __m256 y)
{
    __m256 lo = _mm256_blendv_ps(y, x, _mm256_cmp_ps(x, y, _CMP_LT_OQ));
    __m256 r = _mm256_blendv_ps(lo, _mm256_or_ps(x, y), _mm256_cmp_ps(x, y, _CMP_EQ_OQ));
    return orb_v_nan_pick(r, x, y);
}

static inline ORB_KTARGET __m256 orb_v_max(__m256 x, __m256 y)
{
    __m256 hi = _mm256_blendv_ps(y, x, _mm256_cmp_ps(x, y, _CMP_GT_OQ));
    __m256 r = _mm256_blendv_ps(hi, _mm256_and_ps(x, y), _mm256_cmp_ps(x, y, _CMP_EQ_OQ));
    return orb_v_nan_pick(r, x, y);
}

/* ---- eight 16-bit elements <-> eight float32 lanes ------------------------------------ */

static inline ORB_KTARGET __m256 orb_v_ld_f16(const uint16_t *p)
{
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p));
}

/* NaN lanes become the float32 quiet NaN first, which VCVTPS2PH turns into 0x7e00: the
 * canonical NaN of orb_f2h_kernel. */
static inline ORB_KTARGET void orb_v_st_f16(uint16_t *p, __m256 v)
{
    v = _mm256_blendv_ps(v, _mm256_castsi256_ps(_mm256_set1_epi32(0x7fc00000)),
                         _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    _mm_storeu_si128((__m128i *)p, _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
}

static inline ORB_KTARGET float orb_s_ld_f16(uint16_t h) { return _cvtsh_ss(h); }
static inline ORB_KTARGET uint16_t orb_s_st_f16(float f)
{
    return f != f ? 0x7e00 : (uint16_t)_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT);
}

static inline ORB_KTARGET __m256 orb_v_ld_bf16(const uint16_t *p)
{
    __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)p));
    return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
}

/* orb_f2b_kernel lane for lane, then the eight low halves packed into 128 bits. */
static inline ORB_KTARGET void orb_v_st_bf16(uint16_t *p, __m256 v)
{
    __m256i x = _mm256_castps_si256(v);
    __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(1));
    __m256i rounded = _mm256_srli_epi32(
        _mm256_add_epi32(_mm256_add_epi32(x, _mm256_set1_epi32(0x7fff)), lsb), 16);
    __m256i isnan = _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    __m256i r = _mm256_blendv_epi8(rounded, _mm256_set1_epi32(0x7fc0), isnan);
    /* packus per 128-bit lane gives r0-3 r0-3 | r4-7 r4-7; qwords 0 and 2 are r0-7 */
    __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0x08);
    _mm_storeu_si128((__m128i *)p, _mm256_castsi256_si128(packed));
}

/* ---- the kernels: 16 elements per step (two vectors in flight), scalar tail ------------ */

/* All loads of a step come before its stores, so exact aliasing of a destination with a
 * source is safe without a separate loop. The post-division and second-output tests are
 * loop-invariant; the compiler unswitches them. */
#define ORB_VHALF(name, VLD, VST, SLD, SST, VOP, SOP)                                          \
    static ORB_KTARGET void name(void *d1, void *d2, const void *a, const void *b, size_t n, \
                                 int pd)                                                      \
    {                                                                                         \
        const uint16_t *pa = a, *pb = b;                                                      \
        uint16_t *p1 = d1, *p2 = d2;                                                          \
        const int div = pd > 1;                                                               \
        const float sp = (float)pd;                                                           \
        const __m256 vp = _mm256_set1_ps(sp);                                                 \
        size_t i = 0;                                                                         \
        for (; i + 16 <= n; i += 16) {                                                        \
            __m256 r0 = VOP(VLD(pa + i), VLD(pb + i));                                        \
            __m256 r1 = VOP(VLD(pa + i + 8), VLD(pb + i + 8));                                \
            if (div) {                                                                        \
                r0 = _mm256_div_ps(r0, vp);                                                   \
                r1 = _mm256_div_ps(r1, vp);                                                   \
            }                                                                                 \
            VST(p1 + i, r0);                                                                  \
            VST(p1 + i + 8, r1);                                                              \
            if (p2 != NULL) {                                                                 \
                VST(p2 + i, r0);                                                              \
                VST(p2 + i + 8, r1);                                                          \
            }                                                                                 \
        }                                                                                     \
        for (; i < n; i++) {                                                                  \
            float r = SOP(SLD(pa[i]), SLD(pb[i]));                                            \
            if (div)                                                                          \
                r /= sp;                                                                      \
            p1[i] = SST(r);                                                                   \
            if (p2 != NULL)                                                                   \
                p2[i] = SST(r);                                                               \
        }                                                                                     \
    }

#define ORB_VHALF_ALL_OPS(sfx, VLD, VST, SLD, SST)                                            \
    ORB_VHALF(orb_k_sum_##sfx, VLD, VST, SLD, SST, orb_v_sum, orb_sum_f32)                   \
    ORB_VHALF(orb_k_prod_##sfx, VLD, VST, SLD, SST, orb_v_prod, orb_prod_f32)                \
    ORB_VHALF(orb_k_min_##sfx, VLD, VST, SLD, SST, orb_v_min, orb_min_f32)                   \
    ORB_VHALF(orb_k_max_##sfx, VLD, VST, SLD, SST, orb_v_max, orb_max_f32)                   \
    ORB_VHALF(orb_k_first_##sfx, VLD, VST, SLD, SST, orb_v_first, orb_first_f32)

ORB_VHALF_ALL_OPS(f16, orb_v_ld_f16, orb_v_st_f16, orb_s_ld_f16, orb_s_st_f16)
ORB_VHALF_ALL_OPS(bf16, orb_v_ld_bf16, orb_v_st_bf16, orb_b2f, orb_f2b_kernel)

#include "reduce_table.h"

#endif
