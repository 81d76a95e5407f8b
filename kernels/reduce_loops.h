/* Loops of one orb_kernel_set: included once per instruction-set flavour, with
 *   ORB_KTARGET      function attribute for the flavour (empty for the baseline)
 *   ORB_KHALF_OWN    defined when the flavour writes its own float16 / bfloat16 kernels
 * then reduce_table.h builds the table. Every function here is static, so each flavour
 * gets its own copies compiled for its ISA. */
#include <stdint.h>
#include <string.h>

#include "half.h"
#include "reduce_impl.h"

/* ---- element ops --------------------------------------------------------------------- */

/* Integer sum/prod in the unsigned type: wraps, never signed overflow. uint8 operands
 * promote to int, whose range holds 255 * 255, so that stays defined too. */
#define ORB_INT_OPS(sfx, T, U)                                                                \
    static inline ORB_KTARGET T orb_sum_##sfx(T x, T y) { return (T)(U)((U)x + (U)y); }      \
    static inline ORB_KTARGET T orb_prod_##sfx(T x, T y) { return (T)(U)((U)x * (U)y); }     \
    static inline ORB_KTARGET T orb_min_##sfx(T x, T y) { return y < x ? y : x; }            \
    static inline ORB_KTARGET T orb_max_##sfx(T x, T y) { return y > x ? y : x; }            \
    static inline ORB_KTARGET T orb_first_##sfx(T x, T y) { (void)y; return x; }

ORB_INT_OPS(i8, int8_t, uint8_t)
ORB_INT_OPS(u8, uint8_t, uint8_t)
ORB_INT_OPS(i32, int32_t, uint32_t)
ORB_INT_OPS(u32, uint32_t, uint32_t)
ORB_INT_OPS(i64, int64_t, uint64_t)
ORB_INT_OPS(u64, uint64_t, uint64_t)

/* Float min/max: NaN propagates (any NaN operand gives NaN, like torch.minimum); -0 and +0
 * are ordered (min gives -0, max gives +0) so the result never depends on operand order.
 * Equal values have equal bits except for the two zeros, so OR / AND of the bits picks
 * the right zero and is the identity otherwise. Only selects, no arithmetic on the NaN
 * path: GCC will not if-convert (so not vectorise) an add that may trap. */
#define ORB_FLOAT_OPS(sfx, T, B)                                                              \
    static inline ORB_KTARGET B orb_bits_##sfx(T x) { B u; memcpy(&u, &x, sizeof u); return u; } \
    static inline ORB_KTARGET T orb_of_##sfx(B u) { T x; memcpy(&x, &u, sizeof x); return x; } \
    static inline ORB_KTARGET T orb_sum_##sfx(T x, T y) { return x + y; }                   \
    static inline ORB_KTARGET T orb_prod_##sfx(T x, T y) { return x * y; }                  \
    static inline ORB_KTARGET T orb_min_##sfx(T x, T y)                                     \
    {                                                                                         \
        T lo = x < y ? x : y;                                                                 \
        T r = x == y ? orb_of_##sfx(orb_bits_##sfx(x) | orb_bits_##sfx(y)) : lo;             \
        r = y != y ? y : r;                                                                   \
        return x != x ? x : r;                                                                \
    }                                                                                         \
    static inline ORB_KTARGET T orb_max_##sfx(T x, T y)                                     \
    {                                                                                         \
        T hi = x > y ? x : y;                                                                 \
        T r = x == y ? orb_of_##sfx(orb_bits_##sfx(x) & orb_bits_##sfx(y)) : hi;             \
        r = y != y ? y : r;                                                                   \
        return x != x ? x : r;                                                                \
    }                                                                                         \
    static inline ORB_KTARGET T orb_first_##sfx(T x, T y) { (void)y; return x; }

ORB_FLOAT_OPS(f32, float, uint32_t)
ORB_FLOAT_OPS(f64, double, uint64_t)

/* ---- post-division (avg) --------------------------------------------------------------- */

/* Integers divide in 64 bits (postdiv may not fit the element type); C truncates toward
 * zero. Floats divide by postdiv converted once to the element type. */
#define ORB_POST_NONE(r, p) (r)
#define ORB_POST_SDIV(r, p) ((r) / (p))

/* ---- loops ------------------------------------------------------------------------------ */

/* d = ST(POST(OPF(LD(a), LD(b)))): LD widens an element to the compute type (identity,
 * or float16/bfloat16 -> float32), W is the type post-division works in, ST narrows back.
 * Four loops per (type, op, post): restrict for distinct buffers, plain pointers when a
 * destination is a source (the compiler then versions the loop on a run-time overlap test
 * that lets exact aliasing through to the vector code), each with one or two outputs. */
#define ORB_LOOPS(name, T, W, LD, ST, OPF, POST)                                              \
    static ORB_KTARGET void name##_r1(T *restrict d, const T *restrict a,                   \
                                      const T *restrict b, size_t n, W p)                    \
    {                                                                                         \
        (void)p;                                                                              \
        for (size_t i = 0; i < n; i++)                                                        \
            d[i] = ST(POST((W)OPF(LD(a[i]), LD(b[i])), p));                                   \
    }                                                                                         \
    static ORB_KTARGET void name##_g1(T *d, const T *a, const T *b, size_t n, W p)           \
    {                                                                                         \
        (void)p;                                                                              \
        for (size_t i = 0; i < n; i++)                                                        \
            d[i] = ST(POST((W)OPF(LD(a[i]), LD(b[i])), p));                                   \
    }                                                                                         \
    static ORB_KTARGET void name##_r2(T *restrict d, T *restrict e, const T *restrict a,    \
                                      const T *restrict b, size_t n, W p)                    \
    {                                                                                         \
        (void)p;                                                                              \
        for (size_t i = 0; i < n; i++) {                                                      \
            T r = ST(POST((W)OPF(LD(a[i]), LD(b[i])), p));                                    \
            d[i] = r;                                                                         \
            e[i] = r;                                                                         \
        }                                                                                     \
    }                                                                                         \
    static ORB_KTARGET void name##_g2(T *d, T *e, const T *a, const T *b, size_t n, W p)     \
    {                                                                                         \
        (void)p;                                                                              \
        for (size_t i = 0; i < n; i++) {                                                      \
            T r = ST(POST((W)OPF(LD(a[i]), LD(b[i])), p));                                    \
            d[i] = r;                                                                         \
            e[i] = r;                                                                         \
        }                                                                                     \
    }

#define ORB_LOOPS_PICK(name, p)                                                               \
    do {                                                                                      \
        if (d2 == NULL) {                                                                     \
            if (alias)                                                                        \
                name##_g1(d1, a, b, n, p);                                                    \
            else                                                                              \
                name##_r1(d1, a, b, n, p);                                                    \
        } else {                                                                              \
            if (alias)                                                                        \
                name##_g2(d1, d2, a, b, n, p);                                                \
            else                                                                              \
                name##_r2(d1, d2, a, b, n, p);                                                \
        }                                                                                     \
    } while (0)

/* One table entry: the loops without and with post-division, picked per call. */
#define ORB_KERNEL(name, T, W, LD, ST, OPF)                                                   \
    ORB_LOOPS(name##_n, T, W, LD, ST, OPF, ORB_POST_NONE)                                     \
    ORB_LOOPS(name##_d, T, W, LD, ST, OPF, ORB_POST_SDIV)                                     \
    static ORB_KTARGET void name(void *d1, void *d2, const void *a, const void *b, size_t n, \
                                 int pd)                                                      \
    {                                                                                         \
        int alias = d1 == a || d1 == b || (d2 != NULL && (d2 == a || d2 == b));              \
        if (pd > 1)                                                                           \
            ORB_LOOPS_PICK(name##_d, (W)pd);                                                  \
        else                                                                                  \
            ORB_LOOPS_PICK(name##_n, (W)0);                                                   \
    }

#define ORB_ID(x) (x)

/* Plain types: W is the wide integer (or the float type itself); ST casts back. */
#define ORB_PLAIN_ALL_OPS(sfx, T, W)                                                          \
    static inline ORB_KTARGET T orb_st_##sfx(W x) { return (T)x; }                           \
    ORB_KERNEL(orb_k_sum_##sfx, T, W, ORB_ID, orb_st_##sfx, orb_sum_##sfx)                    \
    ORB_KERNEL(orb_k_prod_##sfx, T, W, ORB_ID, orb_st_##sfx, orb_prod_##sfx)                  \
    ORB_KERNEL(orb_k_min_##sfx, T, W, ORB_ID, orb_st_##sfx, orb_min_##sfx)                    \
    ORB_KERNEL(orb_k_max_##sfx, T, W, ORB_ID, orb_st_##sfx, orb_max_##sfx)                    \
    ORB_KERNEL(orb_k_first_##sfx, T, W, ORB_ID, orb_st_##sfx, orb_first_##sfx)

ORB_PLAIN_ALL_OPS(i8, int8_t, int64_t)
ORB_PLAIN_ALL_OPS(u8, uint8_t, uint64_t)
ORB_PLAIN_ALL_OPS(i32, int32_t, int64_t)
ORB_PLAIN_ALL_OPS(u32, uint32_t, uint64_t)
ORB_PLAIN_ALL_OPS(i64, int64_t, int64_t)
ORB_PLAIN_ALL_OPS(u64, uint64_t, uint64_t)
ORB_PLAIN_ALL_OPS(f32, float, float)
ORB_PLAIN_ALL_OPS(f64, double, double)

/* float16 / bfloat16: widen to float32, compute and divide there, round once; any NaN
 * result is the canonical quiet NaN (half.h). */
#define ORB_HALF_ALL_OPS(sfx, LD, ST)                                                         \
    ORB_KERNEL(orb_k_sum_##sfx, uint16_t, float, LD, ST, orb_sum_f32)                         \
    ORB_KERNEL(orb_k_prod_##sfx, uint16_t, float, LD, ST, orb_prod_f32)                       \
    ORB_KERNEL(orb_k_min_##sfx, uint16_t, float, LD, ST, orb_min_f32)                         \
    ORB_KERNEL(orb_k_max_##sfx, uint16_t, float, LD, ST, orb_max_f32)                         \
    ORB_KERNEL(orb_k_first_##sfx, uint16_t, float, LD, ST, orb_first_f32)

#ifndef ORB_KHALF_OWN
ORB_HALF_ALL_OPS(f16, orb_h2f, orb_f2h_kernel)
ORB_HALF_ALL_OPS(bf16, orb_b2f, orb_f2b_kernel)
#endif
