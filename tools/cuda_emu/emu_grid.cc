/* Grids on the CPU (emu.h): blocks on OS threads, a block's threads as fibers.
 *
 * A fiber runs until it calls __syncthreads or returns, so one pass over a block's fibers
 * brings every live one to the barrier, which then opens: the barrier needs no counting and
 * the block's shared memory (static thread_local, cuda_emu.h) needs no locking. Blocks that
 * wait for each other (the executor's lanes, across ranks) each get an OS thread whenever the
 * grid fits the emulated SMs, as a GPU keeps them resident at one block per SM. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

#include "emu.h"

thread_local uint3 threadIdx, blockIdx;
thread_local dim3 blockDim, gridDim;

namespace orb_emu {

namespace {

constexpr size_t STACK = 64 << 10; /* per fiber; untouched pages cost nothing */
constexpr int MAX_THREADS = 1024;

/* ---- the context switch: callee-saved registers and the stack pointer ------------------- */

#if defined(__x86_64__)
/* switch_to(&save, next): push the callee-saved registers, leave sp in *save, take next's. */
extern "C" void orb_emu_switch(void **save, void *next);
asm(".text\n"
    ".globl orb_emu_switch\n"
    ".type orb_emu_switch,@function\n"
    "orb_emu_switch:\n"
    "  pushq %rbp\n  pushq %rbx\n  pushq %r12\n  pushq %r13\n  pushq %r14\n  pushq %r15\n"
    "  movq %rsp, (%rdi)\n"
    "  movq %rsi, %rsp\n"
    "  popq %r15\n  popq %r14\n  popq %r13\n  popq %r12\n  popq %rbx\n  popq %rbp\n"
    "  ret\n"
    ".size orb_emu_switch, .-orb_emu_switch\n"
    ".section .note.GNU-stack,\"\",@progbits\n"
    ".text\n");

/* A fresh fiber's stack as orb_emu_switch leaves it: six registers, then the entry as the
 * return address; entry starts with sp = 8 mod 16, as after a call. */
void *fiber_prepare(char *stack, size_t size, void (*entry)())
{
    uintptr_t top = ((uintptr_t)stack + size) & ~(uintptr_t)15;
    void **sp = (void **)(top - 64);
    for (int i = 0; i < 6; i++)
        sp[i] = nullptr;
    sp[6] = (void *)entry;
    sp[7] = nullptr;
    return sp;
}
#else
#error "the CUDA emulator's fibers are written for x86-64"
#endif

/* ThreadSanitizer follows each fiber as a thread of its own (its shadow call stack must
 * switch with the real one); a switch synchronises, so only the traffic between blocks and
 * ranks, which the protocol orders with atomics, is checked. */
#if defined(__SANITIZE_THREAD__)
extern "C" {
void *__tsan_get_current_fiber(void);
void *__tsan_create_fiber(unsigned flags);
void __tsan_destroy_fiber(void *fiber);
void __tsan_switch_to_fiber(void *fiber, unsigned flags);
}
void *tsan_current() { return __tsan_get_current_fiber(); }
void *tsan_create() { return __tsan_create_fiber(0); }
void tsan_destroy(void *f) { __tsan_destroy_fiber(f); }
void tsan_switch(void *f) { __tsan_switch_to_fiber(f, 0); }
#else
void *tsan_current() { return nullptr; }
void *tsan_create() { return nullptr; }
void tsan_destroy(void *) {}
void tsan_switch(void *) {}
#endif

/* ---- fiber stacks, kept for the next grid ------------------------------------------------ */

struct Stacks {
    char *base = nullptr;
    int n = 0;
};

std::mutex stacks_mu;
std::vector<Stacks> stacks_free;

Stacks stacks_get(int n)
{
    {
        std::lock_guard<std::mutex> g(stacks_mu);
        for (size_t i = 0; i < stacks_free.size(); i++)
            if (stacks_free[i].n >= n) {
                Stacks s = stacks_free[i];
                stacks_free.erase(stacks_free.begin() + (long)i);
                return s;
            }
    }
    Stacks s;
    s.n = std::max(n, 32);
    void *p = mmap(nullptr, STACK * (size_t)s.n, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
    if (p == MAP_FAILED) {
        perror("orbit CUDA emulator: mmap of fiber stacks");
        abort();
    }
    s.base = (char *)p;
    for (int i = 0; i < s.n; i++) /* a guard page under each stack: an overflow faults */
        mprotect(s.base + STACK * (size_t)i, (size_t)sysconf(_SC_PAGESIZE), PROT_NONE);
    return s;
}

void stacks_put(Stacks s)
{
    std::lock_guard<std::mutex> g(stacks_mu);
    stacks_free.push_back(s);
}

/* ---- one OS thread's blocks ---------------------------------------------------------------- */

struct Fiber {
    void *sp;
    bool done, at_barrier;
    void *tsan;
};

struct Runner {
    const std::function<void()> *body;
    dim3 block;
    int nthreads, cur;
    std::vector<Fiber> f;
    void *sched_sp, *sched_tsan;
    std::vector<unsigned long long> smem;
    std::vector<int> seq; /* the order fibers run in between barriers */ /* dynamic shared memory, 8-byte aligned */
};

thread_local Runner *runner;

void fiber_entry()
{
    Runner *r = runner;
    (*r->body)();
    r->f[r->cur].done = true;
    tsan_switch(r->sched_tsan);
    orb_emu_switch(&r->f[r->cur].sp, r->sched_sp);
    abort(); /* a finished fiber is never resumed */
}

/* ORBIT_CUDA_EMU_ORDER: the order a block's fibers run between two barriers: forward
 * (default), reverse or random. A GPU promises none, so code that needs a barrier it lacks
 * gives different answers in different orders. */
enum class Order { forward, reverse, random };

Order fiber_order()
{
    static const Order o = [] {
        const char *e = getenv("ORBIT_CUDA_EMU_ORDER");
        if (e && !strcmp(e, "reverse"))
            return Order::reverse;
        if (e && !strcmp(e, "random"))
            return Order::random;
        if (e && *e && strcmp(e, "forward"))
            fprintf(stderr, "orbit CUDA emulator: ORBIT_CUDA_EMU_ORDER=%s is not forward, reverse or random; "
                            "using forward\n", e);
        return Order::forward;
    }();
    return o;
}

uint3 unflatten(unsigned i, dim3 d)
{
    uint3 u;
    u.x = i % d.x;
    u.y = i / d.x % d.y;
    u.z = i / (d.x * d.y);
    return u;
}

void run_block(Runner &r, Stacks &st, unsigned b)
{
    blockIdx = unflatten(b, gridDim);
    for (int t = 0; t < r.nthreads; t++)
        r.f[t] = {fiber_prepare(st.base + STACK * (size_t)t, STACK, fiber_entry), false, false, tsan_create()};
    /* poisoned: a read before any write sees garbage, not a zero that hides the bug */
    std::fill(r.smem.begin(), r.smem.end(), 0xbadbadbadbadbadbull);
    const Order order = fiber_order();
    std::vector<int> &seq = r.seq;
    static thread_local uint64_t rng = 0x9e3779b97f4a7c15ull ^ (uint64_t)pthread_self();
    for (int live = r.nthreads; live > 0;) {
        if (order == Order::random)
            for (int i = r.nthreads - 1; i > 0; i--) { /* Fisher-Yates, xorshift64 */
                rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
                std::swap(seq[(size_t)i], seq[(size_t)(rng % (uint64_t)(i + 1))]);
            }
        for (int t : seq) {
            if (r.f[t].done || r.f[t].at_barrier)
                continue;
            r.cur = t;
            threadIdx = unflatten((unsigned)t, r.block);
            tsan_switch(r.f[t].tsan);
            orb_emu_switch(&r.sched_sp, r.f[t].sp);
        }
        live = 0; /* every live fiber is at the barrier now: open it */
        for (int t = 0; t < r.nthreads; t++) {
            r.f[t].at_barrier = false;
            live += !r.f[t].done;
        }
    }
    for (int t = 0; t < r.nthreads; t++)
        tsan_destroy(r.f[t].tsan);
}

} /* namespace */

void syncthreads()
{
    Runner *r = runner;
    Fiber &me = r->f[r->cur];
    me.at_barrier = true;
    tsan_switch(r->sched_tsan);
    orb_emu_switch(&me.sp, r->sched_sp);
}

void *dynamic_smem() { return runner->smem.data(); }

void grid_run(dim3 grid, dim3 block, size_t dynamic_smem, const std::function<void()> &body, int device)
{
    const unsigned nblocks = grid.x * grid.y * grid.z;
    const int nthreads = (int)(block.x * block.y * block.z);
    if (nblocks == 0 || nthreads < 1 || nthreads > MAX_THREADS)
        return; /* orb_emu_launch refused it already */
    /* co-resident while the grid fits the SMs; beyond, blocks queue as on a full GPU */
    const unsigned nos = std::min<unsigned>(nblocks, (unsigned)sm_count());
    std::atomic<unsigned> next(0);
    auto work = [&] {
        gridDim = grid;
        blockDim = block;
        Runner r;
        r.body = &body;
        r.block = block;
        r.nthreads = nthreads;
        r.cur = 0;
        r.f.resize((size_t)nthreads);
        r.sched_sp = nullptr;
        r.sched_tsan = tsan_current();
        r.smem.resize((dynamic_smem + 7) / 8 + 1);
        r.seq.resize((size_t)nthreads);
        for (int t = 0; t < nthreads; t++)
            r.seq[(size_t)t] = fiber_order() == Order::reverse ? nthreads - 1 - t : t;
        runner = &r;
        Stacks st = stacks_get(nthreads);
        for (unsigned b; (b = next.fetch_add(1)) < nblocks;) {
            slice_block_begin(device); /* a block starts in its process's time slice */
            run_block(r, st, b);
            slice_block_end();
        }
        stacks_put(st);
        runner = nullptr;
    };
    slice_grid_begin(device);
    if (nos == 1) {
        work();
    } else {
        std::vector<std::thread> th;
        th.reserve(nos);
        for (unsigned i = 0; i < nos; i++)
            th.emplace_back(work);
        for (auto &t : th)
            t.join();
    }
    slice_grid_end(device);
}

} /* namespace orb_emu */
