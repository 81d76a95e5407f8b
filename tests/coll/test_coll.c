/* The collective matrix, run as N real processes under orbitrun:
 *   orbitrun -n N -- test_coll [--coll NAME[,NAME..]|all] [--skip NAME[,NAME..]] [--algo ring|tree|auto]
 *                              [--seed S] [--quick]
 * Every rank builds every rank's input from (seed, rank, element), so the expected output is
 * computed here independently of orbit: integers exactly (with two's-complement wrap),
 * floats in double with a tolerance derived from the dtype and nranks. Inputs are multiples
 * of 1/128 so that they are exact in every float type. Each rank judges only its own results
 * (never through orbit): it prints "rank R: N passed, N failed (of E cases)" and exits 1 on a
 * failure of its own or when it ran another number of cases than the matrix has; orbitrun
 * exits non-zero when any rank does. Also checked: the element past the largest buffer region
 * the call may touch stays untouched, and an out-of-place call leaves its send buffer as it
 * was. */
#include <malloc.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "orbit.h"

static int nranks, rank;
static orb_comm_t comm;
static unsigned long long seed = 1;
static long passed, failed, ran;

/* ---- an independent view of the dtypes ------------------------------------------------ */

static size_t esize(orb_dtype_t t)
{
    static const size_t s[] = {1, 1, 4, 4, 8, 8, 2, 2, 4, 8};
    return s[t];
}
static int is_float(orb_dtype_t t) { return t >= ORB_FLOAT16; }
static int is_signed_int(orb_dtype_t t) { return t == ORB_INT8 || t == ORB_INT32 || t == ORB_INT64; }
static int bits(orb_dtype_t t) { return (int)esize(t) * 8; }

static double half_bits_to_double(uint16_t h)
{
    int s = h >> 15, e = (h >> 10) & 31, m = h & 1023;
    double v;
    if (e == 0)
        v = ldexp(m, -24);
    else if (e == 31)
        v = m ? NAN : INFINITY;
    else
        v = ldexp(m + 1024, e - 25);
    return s ? -v : v;
}

/* exact for the multiples of 2^-7 in [-256, 256] that the test uses */
static uint16_t double_to_half_bits_exact(double v)
{
    if (v == 0)
        return signbit(v) ? 0x8000 : 0;
    uint16_t s = v < 0 ? 0x8000 : 0;
    v = fabs(v);
    int e;
    double f = frexp(v, &e); /* v = f * 2^e, f in [0.5, 1) */
    int m = (int)ldexp(f, 11); /* 11 significant bits */
    return (uint16_t)(s | (uint16_t)((e + 14) << 10) | (uint16_t)(m - 1024));
}

static double load(orb_dtype_t t, const void *p, size_t i)
{
    switch (t) {
    case ORB_FLOAT16:
        return half_bits_to_double(((const uint16_t *)p)[i]);
    case ORB_BFLOAT16: {
        uint32_t u = (uint32_t)((const uint16_t *)p)[i] << 16;
        float f;
        memcpy(&f, &u, 4);
        return f;
    }
    case ORB_FLOAT32:
        return ((const float *)p)[i];
    case ORB_FLOAT64:
        return ((const double *)p)[i];
    default:
        return 0;
    }
}

static void store_float(orb_dtype_t t, void *p, size_t i, double v)
{
    switch (t) {
    case ORB_FLOAT16:
        ((uint16_t *)p)[i] = double_to_half_bits_exact(v);
        break;
    case ORB_BFLOAT16: {
        float f = (float)v;
        uint32_t u;
        memcpy(&u, &f, 4);
        ((uint16_t *)p)[i] = (uint16_t)(u >> 16);
        break;
    }
    case ORB_FLOAT32:
        ((float *)p)[i] = (float)v;
        break;
    default:
        ((double *)p)[i] = v;
    }
}

static uint64_t load_int(orb_dtype_t t, const void *p, size_t i)
{
    switch (esize(t)) {
    case 1:
        return ((const uint8_t *)p)[i];
    case 4:
        return ((const uint32_t *)p)[i];
    default:
        return ((const uint64_t *)p)[i];
    }
}

static void store_int(orb_dtype_t t, void *p, size_t i, uint64_t v)
{
    switch (esize(t)) {
    case 1:
        ((uint8_t *)p)[i] = (uint8_t)v;
        break;
    case 4:
        ((uint32_t *)p)[i] = (uint32_t)v;
        break;
    default:
        ((uint64_t *)p)[i] = v;
    }
}

static int64_t as_signed(orb_dtype_t t, uint64_t v)
{
    int b = bits(t);
    if (b == 64)
        return (int64_t)v;
    v &= (1ull << b) - 1;
    if (v >> (b - 1))
        return (int64_t)(v | ~((1ull << b) - 1));
    return (int64_t)v;
}

static uint64_t wrap(orb_dtype_t t, uint64_t v) { return bits(t) == 64 ? v : v & ((1ull << bits(t)) - 1); }

/* ---- inputs ------------------------------------------------------------------------- */

static uint64_t mix(uint64_t x)
{
    x ^= x >> 31;
    x *= 0x7fb5d329728ea185ull;
    x ^= x >> 27;
    x *= 0x81dadef4bc2dd44dull;
    x ^= x >> 33;
    return x;
}

/* integer "k" for (rank, element): small, so sums stay in range */
static int64_t kval(int r, size_t i, orb_op_t op, orb_dtype_t t)
{
    uint64_t h = mix(seed * 0x9e3779b97f4a7c15ull + (uint64_t)r * 0x632be59bd9b4e019ull + i);
    if (is_float(t)) {
        if (op == ORB_PROD) { /* magnitudes in [0.5, 1.5], random sign: products stay tame */
            int64_t k = 64 + (int64_t)(h % 129);
            return (h >> 40) & 1 ? -k : k;
        }
        return (int64_t)(h % 257) - 128; /* k/128 in [-1, 1] */
    }
    if (op == ORB_PROD)
        return (int64_t)(h % 5) - (is_signed_int(t) ? 2 : 0) + (is_signed_int(t) ? 0 : 0);
    if (is_signed_int(t))
        return (int64_t)(h % 33) - 16;
    return (int64_t)(h % 33);
}

/* The caches below belong to one rank: per-thread where ranks are threads (thread_ranks.h). */
#ifndef RANK_LOCAL
#define RANK_LOCAL
#endif

/* kval's six forms: what it computes depends on (op, t) only through this */
static inline int kform(orb_op_t op, orb_dtype_t t)
{
    if (is_float(t))
        return op == ORB_PROD ? 0 : 1;
    if (op == ORB_PROD)
        return is_signed_int(t) ? 2 : 3;
    return is_signed_int(t) ? 4 : 5;
}

/* Every rank's k for one window of elements, per form, computed by kval once. A reduction's
 * reference reads nranks of them per element, and the window recurs across dtypes, ops, roots,
 * both buffer forms and collectives: recomputing them per read was most of the matrix's time
 * (8 ranks: 70% of the CPU went to kval, fill and the reference, 2% to orbit). */
static RANK_LOCAL struct {
    size_t lo, n;
    int16_t *k; /* k[(i - lo) * nranks + r]: a reference reads one element's ks together; |k| <= 192 */
} kwin[6];

static void kwin_set(orb_op_t op, orb_dtype_t t, size_t lo, size_t n)
{
    int f = kform(op, t);
    if (kwin[f].k && kwin[f].lo == lo && kwin[f].n == n)
        return;
    free(kwin[f].k);
    kwin[f].k = n ? malloc(sizeof *kwin[f].k * n * (size_t)nranks) : NULL;
    if (!kwin[f].k)
        return; /* kv computes every k afresh */
    for (size_t j = 0; j < n; j++)
        for (int r = 0; r < nranks; r++)
            kwin[f].k[j * (size_t)nranks + (size_t)r] = (int16_t)kval(r, lo + j, op, t);
    kwin[f].lo = lo;
    kwin[f].n = n;
}

/* Form f's window from element i on (every rank's k of element i, then of i + 1, ...), or NULL
 * when the window does not hold all of [i, i + n); n >= 1. */
static inline const int16_t *kwin_at(int f, size_t i, size_t n)
{
    const size_t off = i - kwin[f].lo; /* i < lo wraps to a large value */
    if (!kwin[f].k || off >= kwin[f].n || n > kwin[f].n - off)
        return NULL;
    return kwin[f].k + off * (size_t)nranks;
}

/* kval, from the window where it holds element i */
static inline int64_t kv(int r, size_t i, orb_op_t op, orb_dtype_t t)
{
    const int16_t *w = kwin_at(kform(op, t), i, 1);
    return w ? w[r] : kval(r, i, op, t);
}

/* An element's bytes for each k kval makes (-192..192), per dtype: k/128 for the floats, k
 * for the integers; the first esize(t) bytes of each entry. */
static RANK_LOCAL uint64_t kbytes[ORB_NUM_DTYPES][385];

static void kbytes_init(void)
{
    for (int t = 0; t < ORB_NUM_DTYPES; t++)
        for (int k = -192; k <= 192; k++) {
            if (is_float((orb_dtype_t)t))
                store_float((orb_dtype_t)t, &kbytes[t][k + 192], 0, (double)k / 128.0);
            else
                store_int((orb_dtype_t)t, &kbytes[t][k + 192], 0, (uint64_t)k);
        }
}

/* This rank's own k over elements [0, n) of its input, per form. Reduce-scatter, all-to-all
 * and scatter fill count * nranks elements, and the window above holds only this rank's
 * block of them: hashing the rest afresh in every case was a tenth of the 8-rank matrix. */
static RANK_LOCAL struct {
    size_t n;
    int16_t *k;
} kown[6];

static const int16_t *kown_get(orb_op_t op, orb_dtype_t t, size_t n)
{
    int f = kform(op, t);
    if (kown[f].k && kown[f].n >= n)
        return kown[f].k;
    free(kown[f].k);
    kown[f].n = 0;
    kown[f].k = n ? malloc(sizeof *kown[f].k * n) : NULL;
    if (!kown[f].k)
        return NULL; /* fill computes every k afresh */
    for (size_t i = 0; i < n; i++)
        kown[f].k[i] = (int16_t)kval(rank, i, op, t);
    kown[f].n = n;
    return kown[f].k;
}

/* Rank r's elements [base, base + n) as the dtype's bytes. The ks come from the window or from
 * this rank's own cache when one holds them all (a stride between consecutive elements),
 * from kval otherwise. */
static void fill(orb_dtype_t t, orb_op_t op, int r, void *buf, size_t n, size_t base)
{
    const size_t es = esize(t);
    const int f = kform(op, t);
    const int16_t *k = NULL;
    size_t stride = 1;
    if (n && (k = kwin_at(f, base, n))) {
        k += r;
        stride = (size_t)nranks;
    } else if (n && r == rank) {
        k = kown_get(op, t, base + n);
        if (k)
            k += base;
    }
    const uint64_t *tab = kbytes[t] + 192;
    unsigned char *p = buf;
#define FILL_LOOP(ES)                                                                                          \
    if (k)                                                                                                     \
        for (size_t i = 0; i < n; i++)                                                                         \
            memcpy(p + (ES) * i, &tab[k[i * stride]], (ES));                                                   \
    else                                                                                                       \
        for (size_t i = 0; i < n; i++)                                                                         \
            memcpy(p + (ES) * i, &tab[kval(r, base + i, op, t)], (ES));
    switch (es) { /* constant sizes: memcpy inlined */
    case 1:
        FILL_LOOP(1)
        break;
    case 2:
        FILL_LOOP(2)
        break;
    case 4:
        FILL_LOOP(4)
        break;
    default:
        FILL_LOOP(8)
    }
#undef FILL_LOOP
}

/* ---- reference ---------------------------------------------------------------------- */

typedef struct {
    double v, absum; /* float reference and sum of |terms| for the tolerance */
    uint64_t u;      /* integer reference */
} ref_t;

/* The reduction of one element's ks, k[0..nranks) (rank order), as the dtype computes it:
 * floats in double, integers with two's-complement wrap. The dtype and op are decided once per
 * element, not per rank: this loop runs nranks times for every element a reduction outputs. */
static ref_t reduce_ks(orb_dtype_t t, orb_op_t op, const int16_t *k)
{
    ref_t R = {0, 0, 0};
    const size_t n = (size_t)nranks;
#define KX(r) ((double)k[r] / 128.0)
    if (is_float(t)) {
        double v = KX(0), absum = fabs(v);
        switch (op) {
        case ORB_SUM:
        case ORB_AVG:
            for (size_t r = 1; r < n; r++) {
                v += KX(r);
                absum += fabs(KX(r));
            }
            break;
        case ORB_PROD:
            for (size_t r = 1; r < n; r++) {
                v *= KX(r);
                absum += fabs(KX(r));
            }
            break;
        case ORB_MIN:
            for (size_t r = 1; r < n; r++) {
                v = KX(r) < v ? KX(r) : v;
                absum += fabs(KX(r));
            }
            break;
        default:
            for (size_t r = 1; r < n; r++) {
                v = KX(r) > v ? KX(r) : v;
                absum += fabs(KX(r));
            }
        }
        R.v = op == ORB_AVG ? v / nranks : v;
        R.absum = absum;
        return R;
    }
#undef KX
    const uint64_t m = bits(t) == 64 ? ~0ull : (1ull << bits(t)) - 1; /* wrap(t, .) */
#define KU(r) ((uint64_t)(int64_t)k[r] & m)
    uint64_t u = KU(0);
    switch (op) {
    case ORB_SUM:
    case ORB_AVG:
        for (size_t r = 1; r < n; r++)
            u = (u + KU(r)) & m;
        break;
    case ORB_PROD:
        for (size_t r = 1; r < n; r++)
            u = (u * KU(r)) & m;
        break;
    default:
        for (size_t r = 1; r < n; r++) {
            uint64_t x = KU(r);
            if (is_signed_int(t)) {
                int64_t a = as_signed(t, u), b = as_signed(t, x);
                u = wrap(t, (uint64_t)((op == ORB_MIN) ? (b < a ? b : a) : (b > a ? b : a)));
            } else {
                u = (op == ORB_MIN) ? (x < u ? x : u) : (x > u ? x : u);
            }
        }
    }
#undef KU
    if (op == ORB_AVG)
        u = is_signed_int(t) ? wrap(t, (uint64_t)(as_signed(t, u) / nranks)) : u / (uint64_t)nranks;
    R.u = u;
    return R;
}

/* Element idx's reference, its ks from the window or from kval. */
static ref_t reduce_ref(orb_dtype_t t, orb_op_t op, size_t idx)
{
    const int16_t *w = kwin_at(kform(op, t), idx, 1);
    if (w)
        return reduce_ks(t, op, w);
    int16_t ks[64] = {0}, *kp = nranks <= 64 ? ks : malloc(sizeof *kp * (size_t)nranks);
    if (!kp) {
        fprintf(stderr, "FAIL rank %d/%d: test out of memory for a reference\n", rank, nranks);
        exit(1);
    }
    for (int r = 0; r < nranks; r++)
        kp[r] = (int16_t)kval(r, idx, op, t);
    ref_t R = reduce_ks(t, op, kp);
    if (kp != ks)
        free(kp);
    return R;
}

/* One (dtype, op)'s reference over one window of elements, kept: a reduction is checked for
 * every root and both buffer forms against the same values. NULL when out of memory. */
static RANK_LOCAL struct {
    orb_dtype_t t;
    orb_op_t op;
    size_t lo, n;
    ref_t *R;
} rwin;

static const ref_t *rwin_get(orb_dtype_t t, orb_op_t op, size_t lo, size_t n)
{
    if (rwin.R && rwin.t == t && rwin.op == op && rwin.lo == lo && rwin.n == n)
        return rwin.R;
    free(rwin.R);
    rwin.R = n ? malloc(sizeof *rwin.R * n) : NULL;
    if (!rwin.R)
        return NULL;
    for (size_t j = 0; j < n; j++)
        rwin.R[j] = reduce_ref(t, op, lo + j);
    rwin.t = t;
    rwin.op = op;
    rwin.lo = lo;
    rwin.n = n;
    return rwin.R;
}

static double unit_roundoff(orb_dtype_t t)
{
    switch (t) {
    case ORB_FLOAT16:
        return ldexp(1, -11);
    case ORB_BFLOAT16:
        return ldexp(1, -8);
    case ORB_FLOAT32:
        return ldexp(1, -24);
    default:
        return ldexp(1, -53);
    }
}

/* u: unit_roundoff(t), which the caller computes once per case */
static int close_enough(orb_op_t op, double u, double got, const ref_t *R)
{
    if (op == ORB_MIN || op == ORB_MAX)
        return got == R->v;
    double tol;
    if (op == ORB_PROD)
        tol = (nranks + 1) * u * fabs(R->v) * 1.01;
    else
        tol = (nranks + 1) * u * R->absum / (op == ORB_AVG ? nranks : 1) + u * fabs(R->v);
    return fabs(got - R->v) <= tol;
}

/* ---- one case ----------------------------------------------------------------------- */

static const char *coll_names[] = {"allreduce", "broadcast", "reduce",   "gather",  "allgather", "reduce_scatter",
                                   "sendrecv",  "alltoall",  "alltoallv", "scatter"};
enum { C_ALLREDUCE, C_BCAST, C_REDUCE, C_GATHER, C_ALLGATHER, C_RS, C_SENDRECV, C_ALLTOALL, C_ALLTOALLV, C_SCATTER,
       C_COUNT };

/* ---- alltoallv's vectors, from (sender, receiver, count) alone ------------------------ */

/* Elements rank s sends to rank d: uneven, zero for some pairs, never zero to itself. */
static size_t vcount(int s, int d, size_t count)
{
    return count * (size_t)((3 * s + 5 * d) % 4) / 2 + (s == d);
}

/* Rank s's blocks in its send buffer: in reverse peer order, a one-element gap after each. */
static size_t vsdispl(int s, int d, size_t count)
{
    size_t at = 0;
    for (int j = nranks - 1; j > d; j--)
        at += vcount(s, j, count) + 1;
    return at;
}

/* Rank d's blocks in its receive buffer: in peer order, a two-element gap after each. */
static size_t vrdispl(int d, int s, size_t count)
{
    size_t at = 0;
    for (int i = 0; i < s; i++)
        at += vcount(i, d, count) + 2;
    return at;
}

static void vsizes(size_t count, size_t *in_n, size_t *out_n)
{
    *in_n = vsdispl(rank, 0, count) + vcount(rank, 0, count);
    *out_n = vrdispl(rank, nranks - 1, count) + vcount(nranks - 1, rank, count);
}

/* Whose element lands at output i of this rank's alltoallv, and which of theirs; -1 for a gap. */
static int vsource(size_t i, size_t count, size_t *src_idx)
{
    for (int q = 0; q < nranks; q++) {
        size_t rd = vrdispl(rank, q, count), rc = vcount(q, rank, count);
        if (i >= rd && i - rd < rc) {
            *src_idx = vsdispl(q, rank, count) + (i - rd);
            return q;
        }
    }
    return -1;
}

/* Data movement: whose element lands at output i of this rank, and which of theirs (src_idx);
 * -1 for a reduction's output (src_idx: the element reduced) and an alltoallv gap. */
static int moved_source(int c, size_t i, size_t count, int root, size_t *src_idx)
{
    *src_idx = i;
    switch (c) {
    case C_BCAST:
        return root;
    case C_GATHER:
    case C_ALLGATHER:
        *src_idx = i % count;
        return (int)(i / count);
    case C_SENDRECV:
        return (rank + nranks - 1) % nranks;
    case C_RS:
        *src_idx = (size_t)rank * count + i;
        return -1;
    case C_ALLTOALL: /* block b came from rank b's block for this rank */
        *src_idx = (size_t)rank * count + i % count;
        return (int)(i / count);
    case C_SCATTER:
        *src_idx = (size_t)rank * count + i;
        return root;
    case C_ALLTOALLV:
        return vsource(i, count, src_idx);
    default:
        return -1;
    }
}

static int op_applies(int c, orb_op_t op)
{
    if (c == C_ALLREDUCE || c == C_REDUCE || c == C_RS)
        return 1;
    return op == ORB_SUM; /* data movement only: op is irrelevant */
}

static void report(int c, orb_dtype_t t, orb_op_t op, size_t count, int root, int inplace, const char *what)
{
    failed++;
    if (failed <= 10)
        fprintf(stderr, "FAIL rank %d/%d: %s dtype=%s op=%s count=%zu root=%d %s seed=%llu: %s\n", rank, nranks,
                coll_names[c], orb_dtype_name(t), orb_op_name(op), count, root, inplace ? "in-place" : "out-of-place",
                seed, what);
}

/* Data movement: does the output hold, block by block, the source ranks' elements as fill()
 * makes them? Yes settles the case. No (or no memory) leaves it to the per-element loop in
 * run_case, which counts and locates what is wrong and compares values, not bytes (-0 for 0
 * would pass there). Comparing whole blocks with memcmp is what keeps the 1 Mi cases cheap. */
static RANK_LOCAL struct {
    size_t cap;
    unsigned char *b;
} expect;

static int moved_blocks_match(int c, orb_dtype_t t, orb_op_t op, const unsigned char *res, size_t count,
                              size_t out_n, int root)
{
    const size_t es = esize(t);
    if (c == C_ALLTOALLV || c == C_ALLREDUCE || c == C_REDUCE || c == C_RS || count == 0)
        return 0; /* alltoallv's blocks and gaps, reductions: the per-element loop */
    const size_t nblocks = out_n / count; /* each block one source rank's run of elements */
    if (count * es > expect.cap) {
        unsigned char *b = realloc(expect.b, count * es);
        if (!b)
            return 0;
        expect.b = b;
        expect.cap = count * es;
    }
    for (size_t b = 0; b < nblocks; b++) {
        size_t idx0;
        const int src = moved_source(c, b * count, count, root, &idx0);
        fill(t, op, src, expect.b, count, idx0);
        if (memcmp(res + (size_t)b * count * es, expect.b, count * es) != 0)
            return 0;
    }
    return 1;
}

/* Where the loops that look for a byte other than 0xA5 may start: n when all n bytes are 0xA5
 * (the first is, and each equals the next), 0 otherwise. memcmp, not a byte loop: the
 * non-root's untouched output of a 1 Mi gather is 8 Mi elements. */
static size_t first_changed(const unsigned char *p, size_t n)
{
    return n == 0 || (p[0] == 0xA5 && memcmp(p, p + 1, n - 1) == 0) ? n : 0;
}

static void run_case(int c, orb_dtype_t t, orb_op_t op, size_t count, int root, int inplace)
{
    ran++;
    const size_t es = esize(t);
    size_t in_n = count, out_n = count;
    if (c == C_GATHER || c == C_ALLGATHER || c == C_ALLTOALL)
        out_n = count * (size_t)nranks;
    if (c == C_RS || c == C_ALLTOALL || c == C_SCATTER)
        in_n = count * (size_t)nranks;
    if (c == C_ALLTOALLV)
        vsizes(count, &in_n, &out_n);
    size_t big = (in_n > out_n ? in_n : out_n) + 1;
    unsigned char *inb = malloc(big * es), *outb = malloc(big * es);
    if (!inb || !outb) {
        report(c, t, op, count, root, inplace, "test out of memory");
        free(inb);
        free(outb);
        return;
    }
    memset(outb, 0xA5, big * es);
    /* the elements the check reads: one block of count, at this rank's block for these */
    if (c != C_ALLTOALLV)
        kwin_set(op, t, c == C_RS || c == C_ALLTOALL || c == C_SCATTER ? (size_t)rank * count : 0, count);
    void *send = inb, *recv = outb;
    /* this rank's input, at its place for the in-place layouts */
    fill(t, op, rank, inb, in_n, 0);
    if (inplace) {
        if (c == C_GATHER || c == C_ALLGATHER) {
            memcpy(outb + (size_t)rank * count * es, inb, count * es);
            send = outb + (size_t)rank * count * es;
        } else if (c == C_RS || c == C_SCATTER) { /* scatter: only the root has this form */
            memcpy(outb, inb, in_n * es);
            send = outb;
            recv = outb + (size_t)rank * count * es;
        } else {
            memcpy(outb, inb, in_n * es);
            send = outb;
        }
    }
    /* out-of-place: a copy of the send buffer, to show the call left it alone */
    unsigned char *again = NULL;
    if (!inplace && in_n > 0 && !(c == C_SCATTER && rank != root) && (again = malloc(in_n * es)))
        memcpy(again, inb, in_n * es);
    orb_status_t st = ORB_OK;
    switch (c) {
    case C_ALLREDUCE:
        st = orb_allreduce(send, recv, count, t, op, comm, NULL);
        break;
    case C_BCAST:
        st = orb_broadcast(send, recv, count, t, root, comm, NULL);
        break;
    case C_REDUCE:
        st = orb_reduce(send, recv, count, t, op, root, comm, NULL);
        break;
    case C_GATHER:
        st = orb_gather(send, recv, count, t, root, comm, NULL);
        break;
    case C_ALLGATHER:
        st = orb_allgather(send, recv, count, t, comm, NULL);
        break;
    case C_RS:
        st = orb_reduce_scatter(send, recv, count, t, op, comm, NULL);
        break;
    case C_ALLTOALL:
        st = orb_alltoall(send, recv, count, t, comm, NULL);
        break;
    case C_ALLTOALLV: {
        size_t *v = malloc(4 * (size_t)nranks * sizeof *v);
        if (!v) {
            report(c, t, op, count, root, inplace, "test out of memory");
            free(inb);
            free(again);
            free(outb);
            return;
        }
        for (int j = 0; j < nranks; j++) {
            v[j] = vcount(rank, j, count);
            v[nranks + j] = vsdispl(rank, j, count);
            v[2 * nranks + j] = vcount(j, rank, count);
            v[3 * nranks + j] = vrdispl(rank, j, count);
        }
        st = orb_alltoallv(send, v, v + nranks, recv, v + 2 * nranks, v + 3 * nranks, t, comm, NULL);
        free(v);
        break;
    }
    case C_SCATTER: /* a non-root's sendbuf is not read: NULL must do */
        st = orb_scatter(rank == root || inplace ? send : NULL, recv, count, t, root, comm, NULL);
        break;
    case C_SENDRECV: { /* ring shift: send to the next rank, receive from the previous one */
        if (nranks == 1)
            break;
        orb_group_start();
        orb_send(send, count, t, (rank + 1) % nranks, comm, NULL);
        orb_recv(recv, count, t, (rank + nranks - 1) % nranks, comm, NULL);
        st = orb_group_end();
        break;
    }
    }
    if (st != ORB_OK) {
        char what[1700];
        snprintf(what, sizeof what, "returned %s: %s", orb_status_name(st), orb_comm_last_error(comm));
        report(c, t, op, count, root, inplace, what);
        free(inb);
        free(again);
        free(outb);
        return;
    }
    /* check */
    const unsigned char *res = recv;
    long wrong = 0;
    size_t first = 0;
    int has_output = !((c == C_REDUCE || c == C_GATHER) && rank != root) && !(c == C_SENDRECV && nranks == 1);
    const size_t rlo = c == C_RS ? (size_t)rank * count : 0;
    const ref_t *refs = has_output && (c == C_ALLREDUCE || c == C_REDUCE || c == C_RS) ? rwin_get(t, op, rlo, count)
                                                                                       : NULL;
    int settled = 0; /* a fast path below decided every element */
    if (has_output && refs) { /* a reduction: element i's reference is refs[i] */
        settled = 1;
        const double u = unit_roundoff(t);
        for (size_t i = 0; i < out_n; i++) {
            int ok = is_float(t) ? close_enough(op, u, load(t, res, i), &refs[i]) : load_int(t, res, i) == refs[i].u;
            if (!ok && wrong++ == 0)
                first = i;
        }
    } else if (has_output && out_n > 0) {
        settled = moved_blocks_match(c, t, op, res, count, out_n, root);
    }
    for (size_t i = 0; has_output && !settled && i < out_n; i++) {
        size_t src_idx;
        const int src_rank = moved_source(c, i, count, root, &src_idx); /* data movement: whose element */
        int ok;
        if (c == C_ALLTOALLV && src_rank < 0) { /* a gap between blocks: never written */
            ok = 1;
            for (size_t b = 0; b < es; b++)
                ok &= res[i * es + b] == 0xA5;
        } else if (src_rank >= 0) {
            int64_t k = kv(src_rank, src_idx, op, t);
            if (is_float(t))
                ok = load(t, res, i) == (double)k / 128.0;
            else
                ok = load_int(t, res, i) == wrap(t, (uint64_t)k);
        } else {
            ref_t R = refs ? refs[src_idx - rlo] : reduce_ref(t, op, src_idx);
            if (is_float(t))
                ok = close_enough(op, unit_roundoff(t), load(t, res, i), &R);
            else
                ok = load_int(t, res, i) == R.u;
        }
        if (!ok && wrong++ == 0)
            first = i;
    }
    if (!has_output && !inplace) { /* a non-root's recvbuf must stay untouched */
        for (size_t i = first_changed(outb, big * es); i < big * es; i++)
            if (outb[i] != 0xA5) {
                wrong++;
                first = i / es;
                break;
            }
    }
    /* the guard: one element past the largest region the call may touch (output, or the
     * in-place input that shares the buffer) */
    const char *also = "";
    size_t legal = (in_n > out_n ? in_n : out_n) * es;
    for (size_t i = legal + first_changed(outb + legal, big * es - legal); i < big * es; i++)
        if (outb[i] != 0xA5) {
            also = "; wrote past the end of the buffer";
            wrong++;
            break;
        }
    /* out-of-place: the send buffer is input only */
    if (again && memcmp(again, inb, in_n * es) != 0) {
        also = "; changed the (out-of-place) send buffer";
        wrong++;
    }
    free(again);
    if (wrong) {
        char what[256];
        snprintf(what, sizeof what, "%ld wrong elements, first at %zu%s", wrong, first, also);
        report(c, t, op, count, root, inplace, what);
    } else {
        passed++;
    }
    free(inb);
    free(outb);
}

/* Is name one of the comma-separated names in list? */
static int listed(const char *list, const char *name)
{
    const size_t n = strlen(name);
    for (const char *p = list; *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == n && !strncmp(p, name, n))
            return 1;
        if (!e)
            break;
        p = e + 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    /* the large cases' buffers come back from the heap, not as fresh pages from mmap every case */
    mallopt(M_MMAP_THRESHOLD, 512 << 20);
    mallopt(M_TRIM_THRESHOLD, 1024 << 20);
    const char *only = "all", *skip = "";
    int quick = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--coll") && i + 1 < argc)
            only = argv[++i];
        else if (!strcmp(argv[i], "--skip") && i + 1 < argc)
            skip = argv[++i];
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
            seed = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--algo") && i + 1 < argc)
            setenv("ORBIT_ALGO", argv[++i], 1);
        else if (!strcmp(argv[i], "--quick"))
            quick = 1;
        else {
            fprintf(stderr, "usage: test_coll [--coll NAME[,NAME...]|all] [--skip NAME[,NAME...]] [--algo ring|tree] "
                            "[--seed S] [--quick]\n");
            return 2;
        }
    }
    orb_status_t st = orb_comm_init_env(&comm);
    if (st != ORB_OK) {
        fprintf(stderr, "init failed: %s: %s\n", orb_status_name(st), orb_comm_last_error(NULL));
        return 1;
    }
    orb_comm_rank(comm, &rank);
    orb_comm_size(comm, &nranks);
    kbytes_init();
    const size_t counts[] = {0, 1, 5, 7, 1000, 1023, (1u << 20) + 3};
    const int ncounts = quick ? 5 : 7;
    /* pass 0 counts the matrix's cases, pass 1 runs them: a case that returns without a
     * verdict, or a loop that stops early, shows as a difference */
    long expected = 0;
    /* counts outermost: the k windows (kwin_set) then serve every collective, dtype and op */
    for (int pass = 0; pass < 2; pass++)
    for (int ci = 0; ci < ncounts; ci++)
    for (int c = 0; c < C_COUNT; c++) {
        if ((strcmp(only, "all") && !listed(only, coll_names[c])) || listed(skip, coll_names[c]))
            continue;
        int roots[3] = {0, nranks - 1, nranks / 2};
        int nroots = (c == C_BCAST || c == C_REDUCE || c == C_GATHER || c == C_SCATTER) ? 3 : 1;
        const int block = c == C_GATHER || c == C_ALLGATHER || c == C_RS || c == C_ALLTOALL || c == C_ALLTOALLV ||
                          c == C_SCATTER;
        for (int t = 0; t < ORB_NUM_DTYPES; t++)
            for (int op = 0; op < ORB_NUM_OPS; op++) {
                if (!op_applies(c, (orb_op_t)op))
                    continue;
                {
                    size_t count = counts[ci];
                    /* the 1 Mi case: every dtype with sum, every op with float32/int32 */
                    if (count > 4096 && op != ORB_SUM && t != ORB_FLOAT32 && t != ORB_INT32)
                        continue;
                    if (count > 4096 && block && t != ORB_FLOAT32 && t != ORB_UINT8)
                        continue;
                    for (int ri = 0; ri < nroots; ri++) {
                        if (ri > 0 && roots[ri] == roots[0])
                            continue;
                        if (ri == 2 && roots[2] == roots[1])
                            continue;
                        /* send/recv has no in-place form: one buffer cannot be sent from and received into */
                        /* alltoallv has none either */
                        for (int inplace = 0; inplace < (c == C_SENDRECV || c == C_ALLTOALLV ? 1 : 2); inplace++) {
                            if (pass == 0)
                                expected++;
                            else
                                run_case(c, (orb_dtype_t)t, (orb_op_t)op, count, roots[ri], inplace);
                        }
                    }
                }
            }
    }
    /* this rank's own verdict: nothing here goes through orbit */
    int bad = failed > 0;
    if (ran != expected || passed + failed != ran) {
        fprintf(stderr, "FAIL rank %d/%d: ran %ld cases with %ld verdicts, the matrix has %ld\n", rank, nranks, ran,
                passed + failed, expected);
        bad = 1;
    }
    if (expected == 0) {
        fprintf(stderr, "FAIL rank %d/%d: --coll %s selects no case\n", rank, nranks, only);
        bad = 1;
    }
    printf("rank %d: %ld passed, %ld failed (of %ld cases)\n", rank, passed, failed, expected);
    for (int f = 0; f < 6; f++) {
        free(kwin[f].k);
        kwin[f].k = NULL;
    }
    for (int f = 0; f < 6; f++) {
        free(kown[f].k);
        kown[f].k = NULL;
        kown[f].n = 0;
    }
    free(rwin.R);
    rwin.R = NULL;
    free(expect.b);
    expect.b = NULL;
    expect.cap = 0;
    orb_comm_destroy(comm);
    return bad ? 1 : 0;
}
