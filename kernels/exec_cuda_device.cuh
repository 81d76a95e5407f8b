/* Device code of the executor (exec_cuda.h), shared by the translation units that
 * instantiate it: exec_cuda.cu (calls without reductions) and one exec_cuda_<type>.cu per
 * pair of dtypes, so that nvcc compiles the 41 kernels in parallel. Internal to kernels/. */
#ifndef ORB_KERNELS_EXEC_CUDA_DEVICE_CUH
#define ORB_KERNELS_EXEC_CUDA_DEVICE_CUH

#include <stdio.h>
#include <string.h>
#include <time.h>

#include <type_traits>

#include "cuda_launch.h"
#include "exec_cuda.h"
#include "reduce_cuda.h"

namespace orb_cuda_exec {

using namespace orb_cuda;

/* Internal to each translation unit: nvcc gives __device__ functions host stubs, which would
 * otherwise be defined once per file that includes this header. */
namespace {

constexpr int NT = ORB_CUDA_THREADS;

/* ---- memory accesses with explicit scope ---------------------------------------------- */

/* Flags cross processes and devices (peer memory, mapped host memory): system scope. The
 * instructions take global addresses; generic pointers are converted first. The emulator
 * (ORB_CUDA_EMU) runs the same protocol with the compiler's atomics: each 8-byte half of an
 * LL line is one atomic store, which is all the protocol asks of the 16-byte store. */
#ifndef ORB_CUDA_EMU
__device__ __forceinline__ unsigned long long gaddr(const void *p)
{
    return (unsigned long long)__cvta_generic_to_global(p);
}

__device__ __forceinline__ uint64_t ld_acquire(const uint64_t *p)
{
    uint64_t v;
    asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(gaddr(p)) : "memory");
    return v;
}

__device__ __forceinline__ void st_release(uint64_t *p, uint64_t v)
{
    asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(gaddr(p)), "l"(v) : "memory");
}

__device__ __forceinline__ int32_t ld_volatile(const int32_t *p) { return *(const volatile int32_t *)p; }

/* One LL line: each 8-byte half {data, flag} is written by one store, so a reader that sees
 * both flags sees both data words. */
__device__ __forceinline__ void ll_store(void *p, uint64_t data, uint32_t flag)
{
    asm volatile("st.volatile.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(gaddr(p)), "r"((uint32_t)data),
                 "r"(flag), "r"((uint32_t)(data >> 32)), "r"(flag)
                 : "memory");
}

__device__ __forceinline__ uint4 ll_load(const void *p)
{
    uint4 v;
    asm volatile("ld.volatile.global.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(gaddr(p))
                 : "memory");
    return v;
}

/* Wall-clock nanoseconds: the SM clock (clock64) changes with boost and time slicing, and
 * ORBIT_TIMEOUT is in seconds of real time. */
__device__ __forceinline__ uint64_t now_ns()
{
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}
#else
inline uint64_t ld_acquire(const uint64_t *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
inline void st_release(uint64_t *p, uint64_t v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }
inline int32_t ld_volatile(const int32_t *p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }

inline void ll_store(void *p, uint64_t data, uint32_t flag)
{
    uint64_t *w = (uint64_t *)p; /* little-endian: {data lo, flag}, {data hi, flag} */
    __atomic_store_n(&w[0], (data & 0xffffffffull) | (uint64_t)flag << 32, __ATOMIC_RELEASE);
    __atomic_store_n(&w[1], (data >> 32) | (uint64_t)flag << 32, __ATOMIC_RELEASE);
}

inline uint4 ll_load(const void *p)
{
    const uint64_t *w = (const uint64_t *)p;
    const uint64_t a = __atomic_load_n(&w[0], __ATOMIC_ACQUIRE), b = __atomic_load_n(&w[1], __ATOMIC_ACQUIRE);
    uint4 v;
    v.x = (uint32_t)a, v.y = (uint32_t)(a >> 32), v.z = (uint32_t)b, v.w = (uint32_t)(b >> 32);
    return v;
}

/* %globaltimer's stand-in: CLOCK_REALTIME, whose epoch is not CLOCK_MONOTONIC's either, so
 * the tracer's alignment of kernel stamps to the host clock (cuda_trace.c) is exercised here
 * as on a GPU. The timeouts only take differences of it. */
inline uint64_t now_ns()
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
#endif

/* LL flags: never 0, so the zeroed memory of a fresh FIFO never looks written. */
__device__ __forceinline__ uint32_t ll_flag(unsigned long long pos) { return (uint32_t)(pos % 0xffffffffull) + 1; }

/* ---- one lane ----------------------------------------------------------------------------- */

struct OpNone { /* a launch without reductions: the typed path is not compiled */
};

struct Lane {
    const orb_cuda_launch_t *L;
    const orb_cuda_op_t *op;
    int opi, ch, proto;
    unsigned long long *spos, *rpos; /* shared [nranks]: next position per peer */
    int *err;                        /* shared: nonzero once the block fails */
    orb_slot_hdr_t *hdr;             /* shared: the incoming piece header */
    uint32_t step, piece;
};

struct Piece {
    int kind;
    int send_peer, recv_peer;
    const char *src; /* the step's source buffer at this piece */
    char *dst;       /* the output at this piece */
    uint32_t n;      /* elements */
    int pd;          /* post-division, 0 when none */
    bool handshake;
};

__device__ void hdr_store(volatile orb_slot_hdr_t *d, const orb_slot_hdr_t &s)
{
    const uint64_t *w = (const uint64_t *)&s;
    volatile uint64_t *o = (volatile uint64_t *)d;
    for (int i = 0; i < 8; i++)
        o[i] = w[i];
}

__device__ orb_slot_hdr_t out_hdr(const Lane &ln, uint32_t nbytes)
{
    orb_slot_hdr_t h = ln.op->sig;
    h.nbytes = nbytes;
    h.step = ln.step;
    h.sender = ln.L->rank;
    return h;
}

/* Record the rank's first failure in its control page and raise every rank's abort word,
 * so nobody waits for this lane any more. Called by one thread. */
__device__ void raise_error(const Lane &ln, int status, int peer, int waiting, uint32_t want_nbytes,
                            const orb_slot_hdr_t *got)
{
    const orb_cuda_launch_t &L = *ln.L;
    atomicCAS(ln.err, 0, status);
    if (atomicCAS(&L.dev->err_claim, 0, 1) == 0) {
        volatile orb_cuda_err_t *e = &L.ctrl->err;
        e->rank = L.rank;
        e->peer = peer;
        e->waiting = waiting;
        e->op_index = ln.opi;
        e->channel = ln.ch;
        e->step = ln.step;
        e->piece = ln.piece;
        e->want_nbytes = want_nbytes;
        e->proto = ln.proto;
        hdr_store(&e->want, out_hdr(ln, want_nbytes));
        if (got)
            hdr_store(&e->got, *got);
        __threadfence_system();
        e->status = status;
    }
    for (int p = 0; p < L.nranks; p++) {
        volatile orb_cuda_ctrl_t *c = L.peer_ctrl[p];
        if (c->abort_status == 0) {
            c->abort_from = L.rank;
            __threadfence_system();
            c->abort_status = status;
        }
    }
    __threadfence_system();
}

/* A bounded wait: the caller polls its condition and calls check() when it does not hold.
 * Nonzero return: stop (ORB_ERR_TIMEOUT: this lane timed out and must say so; anything else:
 * somebody else already failed). */
struct Spin {
    uint64_t t0 = 0;
    uint32_t n = 0;
    __device__ int check(const Lane &ln)
    {
        if (++n > 1024)
            __nanosleep(64); /* leave issue slots to the co-resident blocks we wait for */
        if ((n & 255) != 0)
            return 0;
        if (*(volatile int *)ln.err)
            return -1;
        if (ld_volatile(&ln.L->ctrl->abort_status))
            return ORB_ERR_ABORTED;
        uint64_t t = now_ns();
        if (t0 == 0)
            t0 = t;
        else if (t - t0 > ln.L->timeout_ns)
            return ORB_ERR_TIMEOUT;
        return 0;
    }
};

__device__ bool sig_equal(const orb_slot_hdr_t &a, const orb_slot_hdr_t &b)
{
    return a.seq == b.seq && a.count == b.count && a.coll == b.coll && a.dtype == b.dtype && a.op == b.op &&
           a.root == b.root;
}

/* Thread 0, once the incoming header is in ln.hdr: does it belong to this piece? */
__device__ void check_header(const Lane &ln, const Piece &pc, uint32_t nbytes)
{
    const orb_slot_hdr_t &got = *ln.hdr;
    bool sig = (ln.L->check_signatures || pc.handshake) && !sig_equal(got, ln.op->sig);
    if (got.nbytes != nbytes || sig)
        raise_error(ln, ORB_ERR_MISMATCH, pc.recv_peer, ORB_CUDA_WAIT_NONE, nbytes, &got);
}

/* ---- the data movement of one piece ----------------------------------------------------- */

/* Plain copies move elements of esz bytes: the vector path needs every pointer aligned alike.
 * Not inlined: one copy of the code serves every kernel (compile time, instruction cache). */
__device__ __noinline__ void copy_elems(char *d1, char *d2, const char *a, uint32_t n, uint32_t esz)
{
    switch (esz) {
    case 1: reduce_copy<uint8_t, OpFirst>(d1, d2, a, nullptr, n, 0, threadIdx.x, NT); break;
    case 2: reduce_copy<uint16_t, OpFirst>(d1, d2, a, nullptr, n, 0, threadIdx.x, NT); break;
    case 4: reduce_copy<uint32_t, OpFirst>(d1, d2, a, nullptr, n, 0, threadIdx.x, NT); break;
    default: reduce_copy<uint64_t, OpFirst>(d1, d2, a, nullptr, n, 0, threadIdx.x, NT); break;
    }
}

/* What a step does comes from kernels/step.h, as for the CPU executor and the checker. */
__device__ bool reduces(int kind) { return (orb_step_props(kind) & ORB_STEP_REDUCES) != 0; }
/* A step that neither receives nor sends: no FIFO, no protocol, no pieces. */
__device__ bool local(int kind) { return (orb_step_props(kind) & (ORB_STEP_RECVS | ORB_STEP_SENDS)) == 0; }

template <typename T, typename Op>
__device__ __noinline__ void reduce_typed(char *d1, char *d2, const char *a, const char *b, uint32_t n, int pd)
{
    reduce_copy<T, Op>(d1, d2, a, b, n, pd, threadIdx.x, NT);
}

/* Every thread of the block: dst and/or fwd = post(op(src, in)) or post(src or in). */
template <typename T, typename Op>
__device__ void move_simple(const Lane &ln, const Piece &pc, const char *in, char *fwd)
{
    const bool red = reduces(pc.kind);
    const char *a = red ? pc.src : (in ? in : pc.src);
    const char *b = red ? in : nullptr;
    char *d1 = pc.dst ? pc.dst : fwd;
    char *d2 = pc.dst ? fwd : nullptr;
    if (pc.n == 0 || (local(pc.kind) && d1 == a && pc.pd <= 1))
        return;
    if (b == nullptr && pc.pd <= 1) {
        copy_elems(d1, d2, a, pc.n, ln.op->esize);
        return;
    }
    if constexpr (std::is_same<Op, OpNone>::value) {
        if (threadIdx.x == 0)
            raise_error(ln, ORB_ERR_INTERNAL, -1, ORB_CUDA_WAIT_NONE, 0, nullptr);
    } else {
        reduce_typed<T, Op>(d1, d2, a, b, pc.n, pc.pd);
    }
}

/* Up to 8 bytes of whole elements at p (element-aligned), little-endian in the word. The
 * word is built with shifts, never written through a narrower pointer: C++ forbids that
 * aliasing, and g++ -O2 (the CPU emulator) did return the untouched zero for it. */
__device__ __forceinline__ uint64_t load_part(const char *p, uint32_t nbytes, uint32_t esz)
{
    if (nbytes == 8 && ((uintptr_t)p & 7) == 0)
        return *(const uint64_t *)p;
    uint64_t v = 0;
    if (esz == 4 && ((uintptr_t)p & 3) == 0) {
        for (uint32_t i = 0; i < nbytes; i += 4)
            v |= (uint64_t) * (const uint32_t *)(p + i) << (8 * i);
    } else if (esz == 2 && ((uintptr_t)p & 1) == 0) {
        for (uint32_t i = 0; i < nbytes; i += 2)
            v |= (uint64_t) * (const uint16_t *)(p + i) << (8 * i);
    } else {
        for (uint32_t i = 0; i < nbytes; i++)
            v |= (uint64_t)(unsigned char)p[i] << (8 * i);
    }
    return v;
}

__device__ __forceinline__ void store_part(char *p, uint64_t v, uint32_t nbytes, uint32_t esz)
{
    if (nbytes == 8 && ((uintptr_t)p & 7) == 0) {
        *(uint64_t *)p = v;
        return;
    }
    if (esz == 4 && ((uintptr_t)p & 3) == 0) {
        for (uint32_t i = 0; i < nbytes; i += 4)
            *(uint32_t *)(p + i) = (uint32_t)(v >> (8 * i));
    } else if (esz == 2 && ((uintptr_t)p & 1) == 0) {
        for (uint32_t i = 0; i < nbytes; i += 2)
            *(uint16_t *)(p + i) = (uint16_t)(v >> (8 * i));
    } else {
        for (uint32_t i = 0; i < nbytes; i++)
            p[i] = (char)(v >> (8 * i));
    }
}

/* One LL line's worth (8 bytes) of post(op(a, b)), or post(a) when b is absent. */
template <typename T, typename Op>
__device__ __forceinline__ uint64_t line_op(uint64_t a, uint64_t b, bool two, int pd, uint32_t nbytes)
{
    if constexpr (std::is_same<Op, OpNone>::value) {
        return a;
    } else {
        typedef typename Elem<T>::Raw R;
        union {
            uint64_t u;
            R e[8 / sizeof(R)];
        } x, y;
        x.u = a;
        y.u = b;
        for (uint32_t j = 0; j < nbytes / sizeof(R); j++)
            x.e[j] = reduce_elem<T, Op>(x.e[j], two ? y.e[j] : x.e[j], two, pd);
        return x.u;
    }
}

/* ---- pieces --------------------------------------------------------------------------------- */

__device__ orb_cuda_conn_t *conn_of(const Lane &ln, int peer)
{
    return &ln.L->conns[(size_t)peer * (size_t)ln.L->nchannels + (size_t)ln.ch];
}

/* Thread 0: wait until slot pos of the send FIFO is free (its use nslots earlier is done). */
__device__ int wait_free(const Lane &ln, const uint64_t *done, unsigned long long pos, int peer)
{
    const uint32_t ns = ln.L->nslots;
    if (pos < ns)
        return 0;
    Spin sp;
    int st = 0;
    while (ld_acquire(done) < pos + 1 - ns && !(st = sp.check(ln))) {
    }
    if (st == ORB_ERR_TIMEOUT)
        raise_error(ln, st, peer, ORB_CUDA_WAIT_SLOT, 0, nullptr);
    else if (st)
        atomicCAS(ln.err, 0, st);
    return st;
}

template <typename T, typename Op>
__device__ void piece_simple(const Lane &ln, const Piece &pc)
{
    const orb_cuda_launch_t &L = *ln.L;
    const uint64_t stride = L.stride[ORB_CUDA_PROTO_SIMPLE];
    const bool recv = pc.recv_peer >= 0, send = pc.send_peer >= 0;
    const uint32_t nbytes = pc.n * ln.op->esize;
    orb_cuda_conn_t *rc = recv ? conn_of(ln, pc.recv_peer) : nullptr;
    orb_cuda_conn_t *sc = send ? conn_of(ln, pc.send_peer) : nullptr;
    const unsigned long long rq = recv ? ln.rpos[pc.recv_peer] : 0, sq = send ? ln.spos[pc.send_peer] : 0;
    char *rslot = recv ? rc->recv[ORB_CUDA_PROTO_SIMPLE].fifo + (rq % L.nslots) * stride : nullptr;
    char *sslot = send ? sc->send[ORB_CUDA_PROTO_SIMPLE].fifo + (sq % L.nslots) * stride : nullptr;

    if (threadIdx.x == 0 && (recv || send)) {
        int st = 0;
        if (recv) {
            const uint64_t *ready = (const uint64_t *)(rslot + sizeof(orb_slot_hdr_t));
            Spin sp;
            while (ld_acquire(ready) != rq + 1 && !(st = sp.check(ln))) {
            }
            if (st == ORB_ERR_TIMEOUT) {
                raise_error(ln, st, pc.recv_peer, ORB_CUDA_WAIT_DATA, nbytes, nullptr);
            } else if (st) {
                atomicCAS(ln.err, 0, st);
            } else {
                *ln.hdr = *(const orb_slot_hdr_t *)rslot;
                check_header(ln, pc, nbytes);
            }
        }
        if (send && !*ln.err)
            wait_free(ln, sc->send[ORB_CUDA_PROTO_SIMPLE].done + sq % L.nslots, sq, pc.send_peer);
    }
    __syncthreads();
    if (*ln.err)
        return;
    move_simple<T, Op>(ln, pc, recv ? rslot + ORB_CUDA_SLOT_HDR : nullptr, send ? sslot + ORB_CUDA_SLOT_HDR : nullptr);
    __syncthreads();
    if (threadIdx.x == 0) {
        if (send) {
            *(orb_slot_hdr_t *)sslot = out_hdr(ln, nbytes);
            __threadfence_system(); /* payload and header before the ready word */
            st_release((uint64_t *)(sslot + sizeof(orb_slot_hdr_t)), sq + 1);
            ln.spos[pc.send_peer] = sq + 1;
        }
        if (recv) {
            __threadfence_system(); /* the block's reads of the slot before handing it back */
            st_release(rc->recv[ORB_CUDA_PROTO_SIMPLE].done + rq % L.nslots, rq + 1);
            ln.rpos[pc.recv_peer] = rq + 1;
        }
    }
    __syncthreads();
}

/* Wait for one LL line with the flag; 0 and the 8 data bytes, or nonzero (err is set). */
__device__ int ll_wait(const Lane &ln, const char *line, uint32_t flag, uint64_t *data, int peer, uint32_t nbytes)
{
    Spin sp;
    int st = 0;
    uint4 v;
    while (((v = ll_load(line)).y != flag || v.w != flag) && !(st = sp.check(ln))) {
    }
    if (st == ORB_ERR_TIMEOUT)
        raise_error(ln, st, peer, ORB_CUDA_WAIT_DATA, nbytes, nullptr);
    else if (st)
        atomicCAS(ln.err, 0, st);
    *data = (uint64_t)v.x | (uint64_t)v.z << 32;
    return st;
}

template <typename T, typename Op>
__device__ void piece_ll(const Lane &ln, const Piece &pc)
{
    const orb_cuda_launch_t &L = *ln.L;
    const uint64_t stride = L.stride[ORB_CUDA_PROTO_LL];
    const uint32_t esz = ln.op->esize;
    const bool recv = pc.recv_peer >= 0, send = pc.send_peer >= 0;
    const uint32_t nbytes = pc.n * esz;
    orb_cuda_conn_t *rc = recv ? conn_of(ln, pc.recv_peer) : nullptr;
    orb_cuda_conn_t *sc = send ? conn_of(ln, pc.send_peer) : nullptr;
    const unsigned long long rq = recv ? ln.rpos[pc.recv_peer] : 0, sq = send ? ln.spos[pc.send_peer] : 0;
    const char *rline = recv ? rc->recv[ORB_CUDA_PROTO_LL].fifo + (rq % L.nslots) * stride : nullptr;
    char *sline = send ? sc->send[ORB_CUDA_PROTO_LL].fifo + (sq % L.nslots) * stride : nullptr;
    const uint32_t rflag = ll_flag(rq), sflag = ll_flag(sq);
    const int t = threadIdx.x;

    /* the free outgoing slot and the incoming header first: a mismatched piece may never
     * fill the lines this rank expects */
    if (t == 0 && send)
        wait_free(ln, sc->send[ORB_CUDA_PROTO_LL].done + sq % L.nslots, sq, pc.send_peer);
    if (recv && t < ORB_CUDA_LL_HDR_LINES) {
        uint64_t w;
        if (ll_wait(ln, rline + t * ORB_CUDA_LL_LINE, rflag, &w, pc.recv_peer, nbytes) == 0)
            memcpy((char *)ln.hdr + 8 * t, &w, 8); /* not through a uint64_t *: aliasing */
    }
    __syncthreads();
    if (t == 0 && recv && !*ln.err)
        check_header(ln, pc, nbytes);
    __syncthreads();
    if (*ln.err)
        return;

    if (send && t < ORB_CUDA_LL_HDR_LINES) {
        const orb_slot_hdr_t h = out_hdr(ln, nbytes);
        uint64_t w;
        memcpy(&w, (const char *)&h + 8 * t, 8);
        ll_store(sline + t * ORB_CUDA_LL_LINE, w, sflag);
    }
    const bool red = reduces(pc.kind);
    const uint32_t nlines = (nbytes + 7) / 8;
    for (uint32_t l = t; l < nlines; l += NT) {
        const uint32_t off = l * 8, part = nbytes - off < 8 ? nbytes - off : 8;
        uint64_t in = 0;
        if (recv && ll_wait(ln, rline + (ORB_CUDA_LL_HDR_LINES + l) * ORB_CUDA_LL_LINE, rflag, &in, pc.recv_peer,
                            nbytes) != 0)
            break;
        uint64_t a = (red || !recv) ? load_part(pc.src + off, part, esz) : in;
        uint64_t r = a;
        if (red || pc.pd > 1) {
            if constexpr (std::is_same<Op, OpNone>::value) {
                raise_error(ln, ORB_ERR_INTERNAL, -1, ORB_CUDA_WAIT_NONE, 0, nullptr);
                break;
            } else {
                r = line_op<T, Op>(a, in, red, pc.pd, part);
            }
        }
        if (pc.dst && !(local(pc.kind) && pc.dst == pc.src && pc.pd <= 1))
            store_part(pc.dst + off, r, part, esz);
        if (send)
            ll_store(sline + (ORB_CUDA_LL_HDR_LINES + l) * ORB_CUDA_LL_LINE, r, sflag);
    }
    __syncthreads();
    if (*ln.err)
        return;
    if (t == 0) {
        if (recv) {
            __threadfence_system();
            st_release(rc->recv[ORB_CUDA_PROTO_LL].done + rq % L.nslots, rq + 1);
            ln.rpos[pc.recv_peer] = rq + 1;
        }
        if (send)
            ln.spos[pc.send_peer] = sq + 1;
    }
    __syncthreads();
}

template <typename T, typename Op>
__device__ void run_piece(const Lane &ln, const Piece &pc)
{
    if (local(pc.kind)) { /* no FIFO, no protocol */
        move_simple<T, Op>(ln, pc, nullptr, nullptr);
        __syncthreads();
    } else if (ln.proto == ORB_CUDA_PROTO_LL) {
        piece_ll<T, Op>(ln, pc);
    } else {
        piece_simple<T, Op>(ln, pc);
    }
}

template <typename T, typename Op>
__device__ void run_lane(Lane &ln)
{
    const orb_cuda_op_t &op = *ln.op;
    const uint32_t esz = op.esize;
    if (ln.ch == 0 && op.sync_next >= 0) { /* signature handshake: an empty piece each way */
        ln.step = UINT32_MAX;
        ln.piece = 0;
        Piece hs = {ORB_STEP_SEND, op.sync_next, -1, nullptr, nullptr, 0, 0, true};
        run_piece<T, Op>(ln, hs);
        if (*ln.err)
            return;
        hs = {ORB_STEP_RECV, -1, op.sync_prev, nullptr, nullptr, 0, 0, true};
        run_piece<T, Op>(ln, hs);
        if (*ln.err)
            return;
    }
    const orb_step_t *steps = op.steps + op.lane_off[ln.ch];
    for (uint32_t s = 0; s < op.lane_n[ln.ch]; s++) {
        const orb_step_t st = steps[s];
        const int kind = st.kind;
        const unsigned props = orb_step_props(kind);
        const bool has_src = (props & ORB_STEP_READS_SRC) != 0;
        const bool has_dst = (props & ORB_STEP_WRITES_DST) != 0;
        const bool recv = (props & ORB_STEP_RECVS) != 0;
        const bool send = (props & ORB_STEP_SENDS) != 0;
        const int peer_bad = (recv && (st.recv_peer < 0 || st.recv_peer >= ln.L->nranks || st.recv_peer == ln.L->rank)) ||
                             (send && (st.send_peer < 0 || st.send_peer >= ln.L->nranks || st.send_peer == ln.L->rank));
        if (peer_bad || props == 0) {
            if (threadIdx.x == 0)
                raise_error(ln, ORB_ERR_INTERNAL, -1, ORB_CUDA_WAIT_NONE, 0, nullptr);
            __syncthreads();
            return;
        }
        ln.step = s;
        ln.piece = 0;
        const char *srcbuf = st.src_buf == ORB_BUF_INPUT ? op.in : st.src_buf == ORB_BUF_OUTPUT ? op.out : op.scratch;
        char *dstbuf = (st.flags & ORB_STEP_DST_SCRATCH) ? op.scratch : op.out;
        for (size_t done = 0; done < st.count; ln.piece++) {
            size_t n = st.count - done;
            if (!local(kind) && n > op.piece_elems)
                n = op.piece_elems;
            Piece pc;
            pc.kind = kind;
            pc.send_peer = send ? st.send_peer : -1;
            pc.recv_peer = recv ? st.recv_peer : -1;
            pc.src = has_src ? srcbuf + (st.src_off + done) * esz : nullptr;
            pc.dst = has_dst ? dstbuf + (st.dst_off + done) * esz : nullptr;
            pc.n = (uint32_t)n;
            pc.pd = (st.flags & ORB_STEP_POSTOP) ? op.postdiv : 0;
            pc.handshake = false;
            run_piece<T, Op>(ln, pc);
            if (*ln.err)
                return;
            done += n;
        }
    }
}

/* Pieces an op puts on each connection of lane ch before op opi starts: its lanes then
 * begin at those positions, so calls of a group share connections without waiting for each
 * other (the slots themselves keep the order). */
__device__ void add_earlier_ops(const orb_cuda_launch_t &L, int opi, int ch, int proto, unsigned long long *spos,
                                unsigned long long *rpos)
{
    for (int i = 0; i < opi; i++) {
        const orb_cuda_op_t &o = L.ops[i];
        if (o.proto != proto || ch >= o.nlanes)
            continue;
        const orb_step_t *st = o.steps + o.lane_off[ch];
        for (uint32_t k = threadIdx.x; k < o.lane_n[ch]; k += NT) {
            if (local(st[k].kind))
                continue;
            unsigned long long pieces = (st[k].count + o.piece_elems - 1) / o.piece_elems;
            const unsigned props = orb_step_props(st[k].kind);
            if (props & ORB_STEP_RECVS)
                atomicAdd(&rpos[st[k].recv_peer], pieces);
            if (props & ORB_STEP_SENDS)
                atomicAdd(&spos[st[k].send_peer], pieces);
        }
        if (ch == 0 && o.sync_next >= 0 && threadIdx.x == 0) {
            atomicAdd(&spos[o.sync_next], 1ull);
            atomicAdd(&rpos[o.sync_prev], 1ull);
        }
    }
}

template <typename T, typename Op>
__global__ void __launch_bounds__(NT, 1) exec_kernel(const __grid_constant__ orb_cuda_launch_t L)
{
    ORB_CUDA_DYNAMIC_SHARED(unsigned long long, s_pos); /* spos, rpos, and both at the start */
    __shared__ int s_err, s_last;
    __shared__ orb_slot_hdr_t s_hdr;

    int b = blockIdx.x, opi = 0;
    while (opi < L.nops - 1 && b >= L.ops[opi].nlanes) {
        b -= L.ops[opi].nlanes;
        opi++;
    }
    const orb_cuda_op_t &op = L.ops[opi];
    const int ch = b, proto = op.proto, R = L.nranks;
    unsigned long long *spos = s_pos, *rpos = s_pos + R, *s0 = s_pos + 2 * R, *r0 = s_pos + 3 * R;
    for (int p = threadIdx.x; p < R; p += NT) {
        const orb_cuda_conn_t *c = &L.conns[(size_t)p * L.nchannels + ch];
        spos[p] = c->send_pos[proto];
        rpos[p] = c->recv_pos[proto];
    }
    if (threadIdx.x == 0)
        s_err = 0;
    __syncthreads();
    add_earlier_ops(L, opi, ch, proto, spos, rpos);
    __syncthreads();
    for (int p = threadIdx.x; p < R; p += NT) {
        s0[p] = spos[p];
        r0[p] = rpos[p];
    }
    if (threadIdx.x == 0 && ld_volatile(&L.ctrl->abort_status))
        s_err = ORB_ERR_ABORTED; /* an earlier failure: move nothing */
    __syncthreads();

    /* The tracer's stamps (exec_cuda.h) bracket the lane alone: its start after the block's
     * setup above, its end before the position bookkeeping below. */
    if (L.stamps && threadIdx.x == 0)
        L.stamps[2 * blockIdx.x] = now_ns();
    Lane ln = {&L, &op, opi, ch, proto, spos, rpos, &s_err, &s_hdr, 0, 0};
    if (!s_err)
        run_lane<T, Op>(ln);
    __syncthreads();
    if (L.stamps && threadIdx.x == 0)
        L.stamps[2 * blockIdx.x + 1] = now_ns();

    /* Positions: this block's pieces go to pending; the last block of the launch folds them
     * in, after every block has read the starting values. */
    for (int p = threadIdx.x; p < R; p += NT) {
        orb_cuda_conn_t *c = &L.conns[(size_t)p * L.nchannels + ch];
        if (spos[p] != s0[p])
            atomicAdd(&c->send_pend[proto], spos[p] - s0[p]);
        if (rpos[p] != r0[p])
            atomicAdd(&c->recv_pend[proto], rpos[p] - r0[p]);
    }
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0)
        s_last = atomicAdd(&L.dev->blocks_done, 1u) == gridDim.x - 1;
    __syncthreads();
    if (!s_last)
        return;
    __threadfence();
    for (int k = threadIdx.x; k < R * L.nchannels; k += NT) {
        orb_cuda_conn_t *c = &L.conns[k];
        for (int pr = 0; pr < ORB_CUDA_NPROTOS; pr++) {
            c->send_pos[pr] += atomicExch(&c->send_pend[pr], 0ull);
            c->recv_pos[pr] += atomicExch(&c->recv_pend[pr], 0ull);
        }
    }
    __syncthreads();
    if (threadIdx.x == 0)
        atomicExch(&L.dev->blocks_done, 0u);
}

/* blocks == 0: load the kernel into the context instead of launching it (orb_cuda_exec_load). */
template <typename T, typename Op>
cudaError_t launch_kernel(const orb_cuda_launch_t &L, int blocks, size_t smem, cudaStream_t stream)
{
    auto kernel = exec_kernel<T, Op>;
    if (blocks == 0)
        return ORB_CUDA_LOAD(kernel);
    return ORB_CUDA_LAUNCH(kernel, blocks, NT, smem, stream, L);
}

/* The four kernels of one dtype (avg is sum with a post-division). */
template <typename T>
cudaError_t launch_dtype(const orb_cuda_launch_t &L, int blocks, size_t smem, cudaStream_t stream)
{
    switch (L.op) {
    case ORB_SUM:
    case ORB_AVG: return launch_kernel<T, OpSum>(L, blocks, smem, stream);
    case ORB_PROD: return launch_kernel<T, OpProd>(L, blocks, smem, stream);
    case ORB_MIN: return launch_kernel<T, OpMin>(L, blocks, smem, stream);
    case ORB_MAX: return launch_kernel<T, OpMax>(L, blocks, smem, stream);
    default: return cudaErrorInvalidValue;
    }
}

} /* namespace */

/* Defined by exec_cuda_<type>.cu. */
cudaError_t launch_int8(const orb_cuda_launch_t &L, int blocks, size_t smem, cudaStream_t stream);
cudaError_t launch_uint8(const orb_cuda_launch_t &L, int blocks, size_t smem, cudaStream_t stream);
cudaError_t launch_int32(const orb_cuda_launch_t &L, int blocks, size_t smem, cudaStream_t stream);
cudaError_t launch_uint32(const orb_cuda_launch_t &L, int blocks, size_t smem, cudaStream_t stream);
cudaError_t launch_int64(const orb_cuda_launch_t &L, int blocks, size_t smem, cudaStream_t stream);
cudaError_t launch_uint64(const orb_cuda_launch_t &L, int blocks, size_t smem, cudaStream_t stream);
cudaError_t launch_float16(const orb_cuda_launch_t &L, int blocks, size_t smem, cudaStream_t stream);
cudaError_t launch_bfloat16(const orb_cuda_launch_t &L, int blocks, size_t smem, cudaStream_t stream);
cudaError_t launch_float32(const orb_cuda_launch_t &L, int blocks, size_t smem, cudaStream_t stream);
cudaError_t launch_float64(const orb_cuda_launch_t &L, int blocks, size_t smem, cudaStream_t stream);

} /* namespace orb_cuda_exec */

#endif
