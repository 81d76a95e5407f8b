/* How the CPU emulator schedules work (tools/cuda_emu), rule by rule, each shown both ways:
 * the hang real CUDA would have, and the same program completing with the rule off.
 *
 *   1. hardware queues: streams share CUDA_DEVICE_MAX_CONNECTIONS queues, round-robin
 *   2. allocations wait for all the device's work of the process (ORBIT_CUDA_EMU_ALLOC_SYNC)
 *   3. lazy loading: a kernel's first launch waits likewise (CUDA_MODULE_LOADING)
 *   4. processes take turns on a device in time slices, unless MPS (ORBIT_CUDA_EMU_MPS)
 *
 * Every case runs in a fresh exec'd process with its settings. A kernel that would spin
 * forever on a real GPU gives up at a deadline and says so ("hung"), so every case ends on
 * its own; the driver also kills a case that outlives its limit. */
#include "emu.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

enum { COMPLETED = 0, HUNG = 10, ERROR = 20 };

static int failures = 0, checks = 0;

using Clock = std::chrono::steady_clock;
static double ms_since(Clock::time_point t0)
{
    return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

/* ---- one process: a kernel spins until a flag is set, or gives up at its deadline -------- */

static std::atomic<int> g_flag{0}, g_seen{0}; /* seen: 1 the flag, 2 gave up */

static void k_spin(int deadline_ms)
{
    if (threadIdx.x != 0)
        return;
    const Clock::time_point t0 = Clock::now();
    while (!g_flag.load()) {
        if (ms_since(t0) > deadline_ms) {
            g_seen = 2;
            return;
        }
        __nanosleep(100);
    }
    g_seen = 1;
}

static void k_set(int) { g_flag = 1; }
static void k_set_lazy(int) { g_flag = 1; } /* a kernel of its own, for the first launch */

static int preload(void (*k)(int))
{
    cudaFuncAttributes a;
    return cudaFuncGetAttributes(&a, k) == cudaSuccess && a.maxThreadsPerBlock == 1024 ? 0 : ERROR;
}

static int verdict()
{
    if (cudaDeviceSynchronize() != cudaSuccess)
        return ERROR;
    return g_seen == 1 ? COMPLETED : g_seen == 2 ? HUNG : ERROR;
}

#define TRY(x)                                                                                     \
    do {                                                                                           \
        if ((x) != cudaSuccess) {                                                                  \
            fprintf(stderr, "%s:%d: %s failed\n", __FILE__, __LINE__, #x);                       \
            return ERROR;                                                                          \
        }                                                                                          \
    } while (0)

/* Rule 1. Streams are created in order (the NULL stream holds queue 0); the kernel on stream
 * `spin` spins until the kernel on stream `set` runs. */
static int case_queues(int nstreams, int spin, int set, int deadline, bool blocking)
{
    if (preload(k_spin) || preload(k_set))
        return ERROR;
    std::vector<cudaStream_t> s((size_t)nstreams);
    for (auto &x : s)
        TRY(cudaStreamCreateWithFlags(&x, blocking ? cudaStreamDefault : cudaStreamNonBlocking));
    TRY(orb_emu_launch_kernel(dim3(1), dim3(32), 0, s[(size_t)spin], k_spin, deadline));
    TRY(orb_emu_launch_kernel(dim3(1), dim3(32), 0, s[(size_t)set], k_set, 0));
    return verdict();
}

/* Rule 2: another thread queues the spinning kernel; this thread makes the call, then sets
 * the flag the kernel waits for. */
static int case_alloc(const char *call, int deadline)
{
    if (preload(k_spin))
        return ERROR;
    cudaStream_t s;
    TRY(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    void *d = nullptr, *h = nullptr;
    static char reg[8192];
    TRY(cudaMalloc(&d, 64));
    TRY(cudaMallocHost(&h, 64));
    TRY(cudaHostRegister(reg + 4096, 4096, 0));
    cudaError_t e = cudaSuccess;
    std::thread([&] { e = orb_emu_launch_kernel(dim3(1), dim3(32), 0, s, k_spin, deadline); }).join();
    TRY(e);
    void *p = nullptr;
    const std::string c = call;
    if (c == "malloc")
        e = cudaMalloc(&p, 256);
    else if (c == "malloc-managed")
        e = cudaMallocManaged(&p, 256, cudaMemAttachGlobal);
    else if (c == "malloc-host")
        e = cudaMallocHost(&p, 256);
    else if (c == "host-alloc")
        e = cudaHostAlloc(&p, 256, cudaHostAllocMapped);
    else if (c == "host-register")
        e = cudaHostRegister(reg, 4096, cudaHostRegisterMapped);
    else if (c == "host-unregister")
        e = cudaHostUnregister(reg + 4096);
    else if (c == "free-host")
        e = cudaFreeHost(h);
    else if (c == "free")
        e = cudaFree(d);
    else if (c == "memset-async") /* no synchronisation: the control */
        e = cudaMemsetAsync(d, 1, 64, s);
    else
        return ERROR;
    TRY(e);
    g_flag = 1;
    return verdict();
}

/* Rule 3: the kernel that sets the flag is launched for the first time while k_spin spins on
 * another stream (of another hardware queue). */
static int case_lazy(const char *how, int deadline)
{
    cudaStream_t a, b;
    TRY(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
    TRY(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
    const std::string h = how;
    if (h == "preload") {
        if (preload(k_set_lazy))
            return ERROR;
    } else if (h == "launched-before") { /* an earlier launch loaded it */
        TRY(orb_emu_launch_kernel(dim3(1), dim3(32), 0, b, k_set_lazy, 0));
        TRY(cudaDeviceSynchronize());
        g_flag = 0;
    } else if (h == "preload-while-spinning") { /* loading is the same wait, wherever it is */
        TRY(orb_emu_launch_kernel(dim3(1), dim3(32), 0, a, k_spin, deadline));
        if (preload(k_set_lazy))
            return ERROR;
        g_flag = 1;
        return verdict();
    } else if (h != "first") {
        return ERROR;
    }
    TRY(orb_emu_launch_kernel(dim3(1), dim3(32), 0, a, k_spin, deadline));
    TRY(orb_emu_launch_kernel(dim3(1), dim3(32), 0, b, k_set_lazy, 0));
    return verdict();
}

/* ---- two processes on one device: words in IPC memory ----------------------------------- */

enum { W_TICK = 0, W_SEEN = 2, W_ROUND = 4, NWORDS = 8 };

static long long ld(const long long *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
static void st(long long *p, long long v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }

/* Ping-pong: round r of one side waits for round r of the other. Completes under time slices
 * (each hand-over waits for a slice to end) as with MPS. */
static void k_pingpong(long long *w, int role, int rounds, int deadline_ms)
{
    if (threadIdx.x != 0)
        return;
    const Clock::time_point t0 = Clock::now();
    for (int r = 1; r <= rounds; r++) {
        st(&w[W_ROUND + role], r);
        while (ld(&w[W_ROUND + 1 - role]) < r) {
            if (ms_since(t0) > deadline_ms)
                return;
            __nanosleep(100);
        }
    }
    st(&w[W_SEEN + role], 1);
}

/* Each side must see the other run while it runs: it ticks, passes a yield point, then watches
 * the other's tick through 5 ms without yielding. Under time slices the other is stopped at
 * its yield point all that time, so neither ever sees it; with MPS both do. */
static void k_together(long long *w, int role, int, int deadline_ms)
{
    if (threadIdx.x != 0)
        return;
    const Clock::time_point t0 = Clock::now();
    long long *seen = &w[W_SEEN + role], *other_seen = &w[W_SEEN + 1 - role], *other = &w[W_TICK + 1 - role];
    while (ms_since(t0) < deadline_ms && !(ld(seen) && ld(other_seen))) {
        __atomic_fetch_add(&w[W_TICK + role], 1, __ATOMIC_ACQ_REL);
        __nanosleep(100);
        if (ld(seen))
            continue;
        const long long c0 = ld(other);
        const Clock::time_point w0 = Clock::now();
        while (ms_since(w0) < 5)
            ;
        if (ld(other) != c0)
            st(seen, 1);
    }
}

static int peer_main(const char *kind, int role, const char *hex, int deadline)
{
    cudaIpcMemHandle_t hd;
    for (size_t i = 0; i < sizeof hd.reserved; i++) {
        unsigned v;
        sscanf(hex + 2 * i, "%2x", &v);
        hd.reserved[i] = (char)v;
    }
    void *p = nullptr;
    TRY(cudaIpcOpenMemHandle(&p, hd, cudaIpcMemLazyEnablePeerAccess));
    long long *w = (long long *)p;
    cudaStream_t s;
    TRY(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    const std::string k = kind;
    if (k == "pingpong")
        TRY(orb_emu_launch_kernel(dim3(1), dim3(32), 0, s, k_pingpong, w, role, 40, deadline));
    else if (k == "together")
        TRY(orb_emu_launch_kernel(dim3(1), dim3(32), 0, s, k_together, w, role, 0, deadline));
    else
        return ERROR;
    TRY(cudaStreamSynchronize(s));
    return ld(&w[W_SEEN + role]) ? COMPLETED : HUNG;
}

/* Compute mode EXCLUSIVE_PROCESS: "hold" makes a context and keeps it until stdin closes;
 * "try" makes one and says whether it was refused. */
static int excl_main(const char *what)
{
    if (!strcmp(what, "hold")) {
        void *p;
        TRY(cudaMalloc(&p, 64));
        if (write(1, "r", 1) != 1)
            return ERROR;
        char c;
        while (read(0, &c, 1) > 0)
            ;
        return COMPLETED;
    }
    void *p;
    const cudaError_t e = cudaMalloc(&p, 64);
    if (e == cudaSuccess)
        return COMPLETED;
    return e == cudaErrorDevicesUnavailable && cudaGetLastError() == cudaErrorDevicesUnavailable ? HUNG : ERROR;
}

/* ---- the driver ------------------------------------------------------------------------- */

static const char *self_path;

/* Run self with args in a fresh process whose environment has env added; its exit status,
 * or -1 if it had to be killed after limit_s. */
static pid_t spawn(const std::vector<std::string> &args, const std::vector<std::string> &env, int in_fd = -1,
                   int out_fd = -1)
{
    pid_t pid = fork();
    if (pid == 0) {
        for (const std::string &e : env)
            putenv(strdup(e.c_str()));
        if (in_fd >= 0)
            dup2(in_fd, 0);
        if (out_fd >= 0)
            dup2(out_fd, 1);
        std::vector<char *> argv;
        argv.push_back((char *)self_path);
        for (const std::string &a : args)
            argv.push_back((char *)a.c_str());
        argv.push_back(nullptr);
        alarm(60); /* the last resort: each case ends by itself well before */
        execv(self_path, argv.data());
        _exit(99);
    }
    return pid;
}

static int reap(pid_t pid, int limit_s)
{
    const Clock::time_point t0 = Clock::now();
    int status = 0;
    for (;;) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid)
            break;
        if (ms_since(t0) > limit_s * 1000.0) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            return -1;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : -2;
}

static const char *name_of(int r)
{
    return r == COMPLETED ? "completed" : r == HUNG ? "hung" : r == -1 ? "killed" : "error";
}

static void expect(const char *what, int got, int want, double ms)
{
    checks++;
    const bool ok = got == want;
    failures += !ok;
    printf("%-4s %-62s %-9s (%s expected) %6.0f ms\n", ok ? "ok" : "FAIL", what, name_of(got), name_of(want), ms);
    fflush(stdout);
}

/* The deadlines: a kernel that hangs on a real GPU spins this long here, then gives up. */
constexpr int HANG_MS = 1000;    /* where the hang is expected: it is certain, not timed */
constexpr int FINISH_MS = 20000; /* where completion is expected: returns as soon as it does */

static void run(const char *what, std::vector<std::string> args, const std::vector<std::string> &env, int want)
{
    args.push_back(std::to_string(want == HUNG ? HANG_MS : FINISH_MS));
    const Clock::time_point t0 = Clock::now();
    const int got = reap(spawn(args, env), 50);
    expect(what, got, want, ms_since(t0));
}

static std::string to_hex(const cudaIpcMemHandle_t &h)
{
    std::string s;
    char b[3];
    for (size_t i = 0; i < sizeof h.reserved; i++) {
        snprintf(b, sizeof b, "%02x", (unsigned char)h.reserved[i]);
        s += b;
    }
    return s;
}

/* Two processes on one emulated device, each a kernel of kind; want: both sides' verdict. */
static void run_pair(const char *what, const char *kind, const std::vector<std::string> &env, int want)
{
    long long *w = nullptr;
    if (cudaMalloc((void **)&w, NWORDS * sizeof *w) != cudaSuccess) {
        expect(what, ERROR, want, 0);
        return;
    }
    memset(w, 0, NWORDS * sizeof *w);
    cudaIpcMemHandle_t h;
    cudaIpcGetMemHandle(&h, w);
    const std::string hex = to_hex(h), dl = std::to_string(want == HUNG ? 1500 : FINISH_MS);
    const Clock::time_point t0 = Clock::now();
    pid_t a = spawn({"--peer", kind, "0", hex, dl}, env), b = spawn({"--peer", kind, "1", hex, dl}, env);
    const int ra = reap(a, 50), rb = reap(b, 50);
    const double ms = ms_since(t0);
    expect(what, ra == rb ? ra : ERROR, want, ms);
    cudaFree(w);
}

static void run_exclusive(const char *what, const std::vector<std::string> &env, int want)
{
    int to_hold[2], from_hold[2];
    if (pipe2(to_hold, O_CLOEXEC) || pipe2(from_hold, O_CLOEXEC)) { /* only the holder gets them */
        expect(what, ERROR, want, 0);
        return;
    }
    const Clock::time_point t0 = Clock::now();
    pid_t hold = spawn({"--excl", "hold"}, env, to_hold[0], from_hold[1]);
    close(to_hold[0]);
    close(from_hold[1]);
    char c = 0;
    int r = ERROR;
    if (read(from_hold[0], &c, 1) == 1) /* the holder has its context */
        r = reap(spawn({"--excl", "try"}, env), 50);
    close(to_hold[1]);
    close(from_hold[0]);
    const int rh = reap(hold, 50);
    const double ms = ms_since(t0);
    expect(what, rh == COMPLETED ? r : ERROR, want, ms);
}

int main(int argc, char **argv)
{
    if (argc >= 2 && !strcmp(argv[1], "--case")) {
        const std::string c = argv[2];
        const int dl = atoi(argv[argc - 1]);
        if (c == "queues" && argc == 8)
            return case_queues(atoi(argv[3]), atoi(argv[4]), atoi(argv[5]), dl, !strcmp(argv[6], "blocking"));
        if (c == "alloc" && argc == 5)
            return case_alloc(argv[3], dl);
        if (c == "lazy" && argc == 5)
            return case_lazy(argv[3], dl);
        return ERROR;
    }
    if (argc == 6 && !strcmp(argv[1], "--peer"))
        return peer_main(argv[2], atoi(argv[3]), argv[4], atoi(argv[5]));
    if (argc == 3 && !strcmp(argv[1], "--excl"))
        return excl_main(argv[2]);
    self_path = "/proc/self/exe";
    static char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = 0;
        self_path = exe;
    }
    /* the cases set what they test; nothing of the caller's leaks in */
    for (const char *v : {"CUDA_DEVICE_MAX_CONNECTIONS", "CUDA_MODULE_LOADING", "CUDA_MPS_PIPE_DIRECTORY",
                          "ORBIT_CUDA_EMU_HW_QUEUES", "ORBIT_CUDA_EMU_ALLOC_SYNC", "ORBIT_CUDA_EMU_MPS",
                          "ORBIT_CUDA_EMU_TIME_SLICE_US", "ORBIT_CUDA_EMU_COMPUTE_MODE", "ORBIT_CUDA_EMU_GPU_KEY"})
        unsetenv(v);
    const Clock::time_point t0 = Clock::now();

    /* 1. hardware queues */
    const std::string q1 = "CUDA_DEVICE_MAX_CONNECTIONS=1", q2 = "CUDA_DEVICE_MAX_CONNECTIONS=2";
    run("queues: 1 queue, spin on A, set on B", {"--case", "queues", "2", "0", "1", "nonblocking"}, {q1}, HUNG);
    run("queues: 1 queue, blocking streams", {"--case", "queues", "2", "0", "1", "blocking"}, {q1}, HUNG);
    run("queues: 2 queues, A and B on queues 1 and 0", {"--case", "queues", "2", "0", "1", "nonblocking"}, {q2},
        COMPLETED);
    run("queues: 2 queues, A and C share queue 1 (round-robin)", {"--case", "queues", "3", "0", "2", "nonblocking"},
        {q2}, HUNG);
    run("queues: 3 queues, A and C on queues 1 and 0", {"--case", "queues", "3", "0", "2", "nonblocking"},
        {"CUDA_DEVICE_MAX_CONNECTIONS=3"}, COMPLETED);
    run("queues: default 8 queues, 9 streams: 1st and 9th share", {"--case", "queues", "9", "0", "8", "nonblocking"},
        {}, HUNG);
    run("queues: default 8 queues, 8 streams", {"--case", "queues", "8", "0", "7", "nonblocking"}, {}, COMPLETED);
    run("queues: 1 queue, rule off (ORBIT_CUDA_EMU_HW_QUEUES=0)", {"--case", "queues", "2", "0", "1", "nonblocking"},
        {q1, "ORBIT_CUDA_EMU_HW_QUEUES=0"}, COMPLETED);

    /* 2. allocations */
    for (const char *call : {"malloc", "malloc-managed", "malloc-host", "host-alloc", "host-register",
                             "host-unregister", "free-host", "free"})
        run((std::string("alloc: ") + call + " while a kernel spins").c_str(), {"--case", "alloc", call}, {}, HUNG);
    run("alloc: control, memset-async while a kernel spins", {"--case", "alloc", "memset-async"}, {}, COMPLETED);
    for (const char *call : {"malloc", "host-register", "free-host"})
        run((std::string("alloc: ") + call + ", rule off (ORBIT_CUDA_EMU_ALLOC_SYNC=0)").c_str(),
            {"--case", "alloc", call}, {"ORBIT_CUDA_EMU_ALLOC_SYNC=0"}, COMPLETED);
    run("alloc: free, rule off: cudaFree still waits (documented)", {"--case", "alloc", "free"},
        {"ORBIT_CUDA_EMU_ALLOC_SYNC=0"}, HUNG);

    /* 3. lazy loading */
    run("lazy: first launch while a kernel spins", {"--case", "lazy", "first"}, {}, HUNG);
    run("lazy: CUDA_MODULE_LOADING=LAZY, the same", {"--case", "lazy", "first"}, {"CUDA_MODULE_LOADING=LAZY"}, HUNG);
    run("lazy: loaded at setup by cudaFuncGetAttributes", {"--case", "lazy", "preload"}, {}, COMPLETED);
    run("lazy: loaded by an earlier launch", {"--case", "lazy", "launched-before"}, {}, COMPLETED);
    run("lazy: cudaFuncGetAttributes while a kernel spins", {"--case", "lazy", "preload-while-spinning"}, {}, HUNG);
    run("lazy: CUDA_MODULE_LOADING=EAGER", {"--case", "lazy", "first"}, {"CUDA_MODULE_LOADING=EAGER"}, COMPLETED);

    /* 4. processes: time slices */
    run_pair("slices: ping-pong between two processes (hand-overs)", "pingpong", {}, COMPLETED);
    run_pair("slices: ping-pong, 200 us slices", "pingpong", {"ORBIT_CUDA_EMU_TIME_SLICE_US=200"}, COMPLETED);
    run_pair("slices: ping-pong with MPS", "pingpong", {"ORBIT_CUDA_EMU_MPS=1"}, COMPLETED);
    run_pair("slices: two kernels that must run together", "together", {}, HUNG);
    run_pair("slices: the same with MPS (ORBIT_CUDA_EMU_MPS=1)", "together", {"ORBIT_CUDA_EMU_MPS=1"}, COMPLETED);
    run_pair("slices: the same with CUDA_MPS_PIPE_DIRECTORY", "together", {"CUDA_MPS_PIPE_DIRECTORY=/tmp/mps"},
             COMPLETED);
    run_exclusive("compute mode exclusive_process: a second context is refused",
                  {"ORBIT_CUDA_EMU_COMPUTE_MODE=exclusive_process"}, HUNG);
    run_exclusive("compute mode default: a second context is fine", {}, COMPLETED);

    printf("%d checks, %d failures (%.1f s)\n", checks, failures, ms_since(t0) / 1000);
    return failures ? 1 : 0;
}
