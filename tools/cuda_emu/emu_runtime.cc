/* The CUDA emulator's runtime calls: the cuda* functions orbit and its tests use, with the
 * prototypes of <cuda_runtime_api.h>, implemented on the CPU.
 *
 * - "Device memory" is a shared mapping of a memfd, so other processes can map it through
 *   IPC handles; host memory is ordinary memory. One address space: a device pointer is a
 *   host pointer.
 * - Streams run on hardware queues, as on a GPU: a device's streams in a process share
 *   CUDA_DEVICE_MAX_CONNECTIONS queues (round-robin), each a worker thread that runs its
 *   jobs in submission order, so kernels of streams on different queues run at the same time
 *   and may spin-wait on each other, and a job at the head of a queue holds back every
 *   stream on it. Per-stream counters give stream order and synchronisation.
 * - The implicit synchronisations that make such waits deadlock on a GPU: allocations and a
 *   kernel's first (lazy) load wait for all the device's work of the process.
 * - The legacy NULL stream's ordering with blocking streams is kept with sequence numbers:
 *   an operation carries a snapshot of the counters it must wait for.
 * - Stream capture records the operations into a graph instead of running them; a graph
 *   launch runs the recorded operations in order as one operation of the stream.
 *
 * Global state is allocated once and never freed, and the workers are never joined at exit:
 * a process that exits with streams still busy must not hang or tear down state that a
 * worker still uses. */

#include "emu.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

namespace {

/* ---- limits of the emulated device ------------------------------------------------------ */

constexpr size_t kGlobalMem = size_t(16) << 30;
constexpr size_t kSmemPerBlock = size_t(48) << 10;
constexpr size_t kSmemPerBlockOptin = size_t(227) << 10;
constexpr int kMaxThreadsPerBlock = 1024;
constexpr int kMaxBlockDim[3] = {1024, 1024, 64};
constexpr unsigned kMaxGridDim[3] = {2147483647u, 65535u, 65535u};

int env_int(const char *name, int dflt, int lo, int hi)
{
    const char *s = getenv(name);
    if (!s || !*s)
        return dflt;
    char *end = nullptr;
    long v = strtol(s, &end, 10);
    if (*end || v < lo || v > hi)
        return dflt;
    return (int)v;
}

/* ---- per-thread state --------------------------------------------------------------------- */

thread_local cudaError_t t_last_error = cudaSuccess;
thread_local int t_device = 0;
thread_local cudaStreamCaptureMode t_capture_mode = cudaStreamCaptureModeGlobal;

/* Every failing call goes through here, so the error is also the thread's last error. */
cudaError_t fail(cudaError_t e)
{
    t_last_error = e;
    return e;
}

bool valid_device(int d) { return d >= 0 && d < orb_emu::device_count(); }

/* A call that needs the current device's context (CUDA makes it on the first such call). */
cudaError_t open_context(int device)
{
    return orb_emu::device_open(device) ? cudaSuccess : fail(cudaErrorDevicesUnavailable);
}

/* ---- streams, events and graphs ----------------------------------------------------------- */

using Op = std::function<void()>;

/* One recording of an event: completed by the operation that cudaEventRecord queued (or by
 * the record node of a launched graph). A new recording replaces the event's current one, so
 * work that waits for the old recording is not affected by a later cudaEventRecord. */
struct Record {
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    std::chrono::steady_clock::time_point when;

    void complete()
    {
        std::lock_guard<std::mutex> lk(mu);
        when = std::chrono::steady_clock::now();
        done = true;
        cv.notify_all();
    }
    void wait()
    {
        std::unique_lock<std::mutex> lk(mu);
        cv.wait(lk, [this] { return done; });
    }
    bool is_done()
    {
        std::lock_guard<std::mutex> lk(mu);
        return done;
    }
};

struct Event {
    unsigned flags = 0;
    std::shared_ptr<Record> rec; /* guarded by State::mu; null until first recorded */
};

/* A captured operation. Event records and waits are resolved when the graph is launched, so
 * every launch records the event anew and waits for the recording current at that time. */
struct Node {
    enum Kind { Plain, RecordEvent, WaitEvent } kind = Plain;
    Op fn;                        /* Plain */
    std::shared_ptr<Event> event; /* RecordEvent, WaitEvent */
};

struct Graph {
    std::vector<Node> nodes;
};

struct Exec {
    std::vector<Node> nodes;
};

struct Stream;

/* "Wait until stream s has completed its first seq operations." */
struct Dep {
    std::shared_ptr<Stream> s;
    uint64_t seq;
};

/* One operation of a stream, queued on the stream's hardware queue. */
struct Job {
    std::shared_ptr<Stream> stream; /* whose counter it completes */
    std::vector<Dep> deps;
    Op fn;
};

/* A hardware queue (a "connection" of CUDA_DEVICE_MAX_CONNECTIONS): one worker thread runs
 * the jobs of every stream assigned to it in submission order, so a job at the head (a
 * kernel that spins, a wait for an event) holds back every later job of every stream on the
 * queue, as a GPU's hardware queue does. */
struct Queue {
    int device = 0;
    std::mutex mu; /* jobs and counters */
    std::condition_variable work_cv, done_cv;
    std::deque<Job> jobs;
    uint64_t enqueued = 0, completed = 0;
    bool stop = false; /* a destroyed stream's own queue (ORBIT_CUDA_EMU_HW_QUEUES=0) */

    void wait_for(uint64_t seq)
    {
        std::unique_lock<std::mutex> lk(mu);
        done_cv.wait(lk, [&] { return completed >= seq; });
    }
    uint64_t enqueued_now()
    {
        std::lock_guard<std::mutex> lk(mu);
        return enqueued;
    }
    bool drained()
    {
        std::lock_guard<std::mutex> lk(mu);
        return stop && completed == enqueued;
    }
};

struct Stream {
    int device = 0;
    bool blocking = true; /* cudaStreamDefault: orders with the legacy NULL stream */
    bool legacy = false;
    unsigned flags = 0;
    std::shared_ptr<Queue> queue; /* fixed at creation */

    std::mutex mu; /* counters */
    std::condition_variable done_cv;
    uint64_t enqueued = 0, completed = 0;

    /* guarded by State::mu */
    std::shared_ptr<Graph> capture;
    unsigned long long capture_id = 0;

    void wait_for(uint64_t seq)
    {
        std::unique_lock<std::mutex> lk(mu);
        done_cv.wait(lk, [&] { return completed >= seq; });
    }
    uint64_t enqueued_now()
    {
        std::lock_guard<std::mutex> lk(mu);
        return enqueued;
    }
    bool idle()
    {
        std::lock_guard<std::mutex> lk(mu);
        return completed == enqueued;
    }
};

void queue_main(std::shared_ptr<Queue> q)
{
    for (;;) {
        Job job;
        {
            std::unique_lock<std::mutex> lk(q->mu);
            q->work_cv.wait(lk, [&] { return q->stop || !q->jobs.empty(); });
            if (q->jobs.empty())
                return; /* stopped and drained */
            job = std::move(q->jobs.front());
            q->jobs.pop_front();
        }
        for (const Dep &d : job.deps)
            d.s->wait_for(d.seq);
        t_device = q->device; /* work on a stream runs "on" its device */
        if (job.fn)
            job.fn();
        std::shared_ptr<Stream> s = std::move(job.stream);
        job = Job(); /* release what the operation held before announcing completion */
        {
            std::lock_guard<std::mutex> lk(s->mu);
            s->completed++;
            s->done_cv.notify_all();
        }
        std::lock_guard<std::mutex> lk(q->mu);
        q->completed++;
        q->done_cv.notify_all();
    }
}

/* CUDA_DEVICE_MAX_CONNECTIONS (the real variable, 1-32, default 8): hardware queues per device
 * and process. ORBIT_CUDA_EMU_HW_QUEUES=0 gives every stream a queue of its own instead. */
int max_connections()
{
    static const int n = env_int("CUDA_DEVICE_MAX_CONNECTIONS", 8, 1, 32);
    return n;
}

bool hw_queues()
{
    static const bool on = env_int("ORBIT_CUDA_EMU_HW_QUEUES", 1, 0, 1) != 0;
    return on;
}

/* A device's context in this process: its hardware queues and its legacy NULL stream, made
 * on first use. The NULL stream exists from the context's start, so it takes queue 0 and the
 * created streams take 1, 2, ... round-robin. */
struct Context {
    std::vector<std::shared_ptr<Queue>> hw; /* started on first assignment */
    std::vector<std::shared_ptr<Queue>> own; /* ORBIT_CUDA_EMU_HW_QUEUES=0: one per stream */
    unsigned next = 0;
    std::shared_ptr<Stream> legacy;
};

/* Lock order: State::mu, then one Queue::mu or one Stream::mu at a time (never both).
 * Loader::load_mu is taken before State::mu, never under it. Record::mu, MemState::mu,
 * PeerState::mu and Loader::set_mu are never held together with another lock, and no lock
 * is held while an operation runs. */
struct State {
    std::mutex mu;
    std::unordered_map<Stream *, std::shared_ptr<Stream>> streams; /* created, not destroyed */
    std::vector<std::shared_ptr<Stream>> retired; /* destroyed with work still queued */
    std::vector<std::unique_ptr<Context>> ctx;    /* per device, lazily */
    std::unordered_map<Event *, std::shared_ptr<Event>> events;
    std::unordered_map<Graph *, std::shared_ptr<Graph>> graphs;
    std::unordered_map<Exec *, std::shared_ptr<Exec>> execs;
    unsigned long long next_capture_id = 1;
};

State &st()
{
    static State *s = new State(); /* never destroyed: workers may outlive main */
    return *s;
}

bool is_null_stream(cudaStream_t h)
{
    return h == nullptr || h == cudaStreamLegacy || h == cudaStreamPerThread;
}

/* A queue and its worker, which is never joined (see the top of the file). May throw. */
std::shared_ptr<Queue> start_queue(int device)
{
    auto q = std::make_shared<Queue>();
    q->device = device;
    std::thread(queue_main, q).detach();
    return q;
}

/* The queue a new stream of the context gets. Needs State::mu. May throw. */
std::shared_ptr<Queue> assign_queue_locked(Context &c, int device)
{
    if (!hw_queues()) {
        c.own.push_back(start_queue(device));
        return c.own.back();
    }
    size_t i = c.next++ % c.hw.size();
    if (!c.hw[i])
        c.hw[i] = start_queue(device);
    return c.hw[i];
}

std::shared_ptr<Stream> make_stream_locked(Context &c, int device, unsigned flags, bool legacy)
{
    auto s = std::make_shared<Stream>();
    s->device = device;
    s->flags = flags;
    s->blocking = legacy || !(flags & cudaStreamNonBlocking);
    s->legacy = legacy;
    s->queue = assign_queue_locked(c, device);
    return s;
}

/* The device's context, made with its NULL stream on first use. Needs State::mu. May throw. */
Context &ctx_locked(int device)
{
    State &g = st();
    if (g.ctx.size() < (size_t)orb_emu::device_count())
        g.ctx.resize((size_t)orb_emu::device_count());
    std::unique_ptr<Context> &c = g.ctx[(size_t)device];
    if (!c) {
        auto n = std::make_unique<Context>();
        n->hw.resize((size_t)max_connections());
        n->legacy = make_stream_locked(*n, device, 0, true);
        c = std::move(n);
    }
    return *c;
}

/* The stream a handle names, or null for a handle that is not live. Needs State::mu. */
std::shared_ptr<Stream> lookup_stream_locked(cudaStream_t h)
{
    State &g = st();
    if (is_null_stream(h))
        return ctx_locked(t_device).legacy;
    auto it = g.streams.find(reinterpret_cast<Stream *>(h));
    return it == g.streams.end() ? nullptr : it->second;
}

/* f(stream) under the state lock for a getter: out must not be NULL, the stream must live. */
template <class F> cudaError_t with_stream(cudaStream_t h, const void *out, F f)
{
    if (!out)
        return fail(cudaErrorInvalidValue);
    std::lock_guard<std::mutex> lk(st().mu);
    std::shared_ptr<Stream> s = lookup_stream_locked(h);
    if (!s)
        return fail(cudaErrorInvalidResourceHandle);
    f(*s);
    return cudaSuccess;
}

/* Every stream of the process that may still have work: the live ones, the destroyed ones
 * not yet drained (dropped here once drained) and the NULL streams. Needs State::mu. */
template <class F> void each_stream_locked(F f)
{
    State &g = st();
    for (auto &kv : g.streams)
        f(kv.second);
    size_t k = 0;
    for (size_t i = 0; i < g.retired.size(); i++)
        if (!g.retired[i]->idle()) {
            f(g.retired[i]);
            g.retired[k++] = g.retired[i];
        }
    g.retired.resize(k);
    for (auto &c : g.ctx)
        if (c)
            f(c->legacy);
}

/* What an operation queued now on s must wait for, beyond s's own order: the legacy
 * semantics between the NULL stream and the blocking streams of its device. Needs State::mu,
 * which also makes the snapshot and the push one step for other submitters. */
std::vector<Dep> legacy_deps_locked(const std::shared_ptr<Stream> &s)
{
    std::vector<Dep> deps;
    if (s->legacy) {
        each_stream_locked([&](const std::shared_ptr<Stream> &t) {
            if (t->device != s->device || !t->blocking || t->legacy)
                return;
            std::lock_guard<std::mutex> lk(t->mu);
            if (t->completed < t->enqueued)
                deps.push_back({t, t->enqueued});
        });
    } else if (s->blocking) {
        const auto &l = ctx_locked(s->device).legacy;
        std::lock_guard<std::mutex> lk(l->mu);
        if (l->completed < l->enqueued)
            deps.push_back({l, l->enqueued});
    }
    return deps;
}

void push_locked(const std::shared_ptr<Stream> &s, Op fn)
{
    Job job;
    job.stream = s;
    job.deps = legacy_deps_locked(s);
    job.fn = std::move(fn);
    {
        std::lock_guard<std::mutex> lk(s->mu);
        s->enqueued++;
    }
    Queue &q = *s->queue;
    std::lock_guard<std::mutex> lk(q.mu);
    q.jobs.push_back(std::move(job));
    q.enqueued++;
    q.work_cv.notify_one();
}

/* Turn a node into the operation that runs it, taking the event's state now. Needs State::mu. */
Op resolve_node_locked(const Node &n)
{
    switch (n.kind) {
    case Node::RecordEvent: {
        auto rec = std::make_shared<Record>();
        n.event->rec = rec;
        return [rec] { rec->complete(); };
    }
    case Node::WaitEvent: {
        std::shared_ptr<Record> rec = n.event->rec;
        if (!rec)
            return Op(); /* never recorded: nothing to wait for */
        return [rec] { rec->wait(); };
    }
    case Node::Plain:
        break;
    }
    return n.fn;
}

/* Queue a node on a stream, or add it to the graph the stream captures. */
cudaError_t submit(cudaStream_t h, Node node)
{
    State &g = st();
    std::lock_guard<std::mutex> lk(g.mu);
    std::shared_ptr<Stream> s = lookup_stream_locked(h);
    if (!s)
        return fail(cudaErrorInvalidResourceHandle);
    if (s->capture) {
        s->capture->nodes.push_back(std::move(node));
        return cudaSuccess;
    }
    push_locked(s, resolve_node_locked(node));
    return cudaSuccess;
}

/* Block the calling thread until every stream matching pred has finished what was queued on
 * it before this call. */
template <class Pred> void wait_streams(Pred pred)
{
    std::vector<Dep> deps;
    {
        std::lock_guard<std::mutex> lk(st().mu);
        each_stream_locked([&](const std::shared_ptr<Stream> &s) {
            if (pred(*s))
                deps.push_back({s, s->enqueued_now()});
        });
    }
    for (const Dep &d : deps)
        d.s->wait_for(d.seq);
}

/* Block the calling thread until all work this process queued on the device before the call
 * has completed: every queue of the device's context (destroyed streams' work included). */
void wait_device(int device)
{
    std::vector<std::pair<std::shared_ptr<Queue>, uint64_t>> w;
    {
        State &g = st();
        std::lock_guard<std::mutex> lk(g.mu);
        if ((size_t)device >= g.ctx.size() || !g.ctx[(size_t)device])
            return; /* no context: nothing queued */
        Context &c = *g.ctx[(size_t)device];
        size_t k = 0;
        for (size_t i = 0; i < c.own.size(); i++)
            if (!c.own[i]->drained())
                c.own[k++] = c.own[i];
        c.own.resize(k);
        for (auto *v : {&c.hw, &c.own})
            for (auto &q : *v)
                if (q)
                    w.push_back({q, q->enqueued_now()});
    }
    for (auto &x : w)
        x.first->wait_for(x.second);
}

/* A synchronous copy or set is an operation of the device's NULL stream: it starts after the
 * NULL stream's and the blocking streams' earlier work. It then runs on the calling thread. */
void wait_null_stream_order(int device)
{
    wait_streams([device](const Stream &s) { return s.device == device && s.blocking; });
}

/* ---- implicit synchronisations: allocation and module loading ----------------------------- */

/* ORBIT_CUDA_EMU_ALLOC_SYNC (default 1): the allocation calls wait for all work this process
 * queued on the device, as the CUDA programming guide's "implicit synchronization" lists
 * (a page-locked host memory allocation, a device memory allocation); cudaFreeHost and
 * cudaHostUnregister unmap memory from the device and wait likewise in practice, and a
 * program that leans on any of them not waiting hangs on some GPU, driver or load. 0: only
 * cudaFree waits (documented, and it must: the emulator unmaps the memory). */
bool alloc_sync()
{
    static const bool on = env_int("ORBIT_CUDA_EMU_ALLOC_SYNC", 1, 0, 1) != 0;
    return on;
}

void alloc_wait(int device)
{
    if (alloc_sync())
        wait_device(device);
}

/* CUDA_MODULE_LOADING (the real variable): LAZY, the default since CUDA 12.2, loads a kernel
 * at its first launch in the context, and loading may synchronise the context: the launch
 * first waits for all work queued on the device by this process. EAGER loads everything when
 * the context starts. cudaFuncGetAttributes loads the function (the usual way to load kernels
 * at setup). */
bool lazy_loading()
{
    static const bool lazy = [] {
        const char *e = getenv("CUDA_MODULE_LOADING");
        if (e && !strcmp(e, "EAGER"))
            return false;
        if (e && *e && strcmp(e, "LAZY"))
            fprintf(stderr, "orbit CUDA emulator: CUDA_MODULE_LOADING=%s is not LAZY or EAGER; using LAZY\n", e);
        return true;
    }();
    return lazy;
}

struct Loader {
    std::mutex set_mu;  /* loaded */
    std::mutex load_mu; /* held while loading: the context's loader lock */
    std::set<std::pair<int, const void *>> loaded; /* (device, function) */

    bool is_loaded(int device, const void *f)
    {
        std::lock_guard<std::mutex> lk(set_mu);
        return loaded.count({device, f}) != 0;
    }
};

Loader &loader()
{
    static Loader *l = new Loader();
    return *l;
}

/* Load function f in the device's context, if lazy loading has not yet: a context-wide wait. */
void load_function(int device, const void *f)
{
    if (!f || !lazy_loading())
        return;
    Loader &l = loader();
    if (l.is_loaded(device, f))
        return;
    std::lock_guard<std::mutex> lk(l.load_mu);
    if (l.is_loaded(device, f))
        return;
    wait_device(device);
    std::lock_guard<std::mutex> ls(l.set_mu);
    l.loaded.insert({device, f});
}

std::shared_ptr<Event> lookup_event_locked(cudaEvent_t h)
{
    auto &ev = st().events;
    auto it = ev.find(reinterpret_cast<Event *>(h));
    return it == ev.end() ? nullptr : it->second;
}

/* ---- memory registry ---------------------------------------------------------------------- */

enum class Kind { Device, Host, Ipc, Managed };

struct Range {
    size_t size = 0;     /* bytes the caller asked for (the registered extent) */
    size_t mapped = 0;   /* bytes mapped (page multiple), for munmap */
    Kind kind = Kind::Device;
    int device = 0;
    int fd = -1;         /* Device/Managed: the memfd, kept open for IPC */
    bool owned = false;  /* Host: allocated here (cudaMallocHost/cudaHostAlloc), not registered */
    uint64_t serial = 0; /* Device: identity for IPC; Ipc: the exporter's */
    pid_t pid = 0;       /* Ipc: the exporter */
    int refs = 0;        /* Ipc: opens of the same handle share one mapping */
};

struct MemState {
    std::mutex mu;
    std::map<uintptr_t, Range> ranges; /* by base address; ranges never overlap */
    uint64_t next_serial = 1;
};

MemState &mem()
{
    static MemState *m = new MemState();
    return *m;
}

/* The range containing p, or end(). Needs MemState::mu. */
std::map<uintptr_t, Range>::iterator find_range_locked(const void *p)
{
    auto &r = mem().ranges;
    uintptr_t a = (uintptr_t)p;
    auto it = r.upper_bound(a);
    if (it == r.begin())
        return r.end();
    --it;
    return a - it->first < it->second.size ? it : r.end();
}

/* The range that starts at p, if ok(range) accepts it: copied to *out, and removed from the
 * registry when take is set. The base-address lookups of free, unregister and IPC. */
template <class Ok> bool base_range(const void *p, Ok ok, Range *out, bool take)
{
    MemState &m = mem();
    std::lock_guard<std::mutex> lk(m.mu);
    auto it = m.ranges.find((uintptr_t)p);
    if (!p || it == m.ranges.end() || !ok(it->second))
        return false;
    *out = it->second;
    if (take)
        m.ranges.erase(it);
    return true;
}

/* Whether [p, p+n) lies inside one registered range. */
bool inside_registered(const void *p, size_t n)
{
    MemState &m = mem();
    std::lock_guard<std::mutex> lk(m.mu);
    auto it = find_range_locked(p);
    if (it == m.ranges.end())
        return false;
    return n <= it->second.size - ((uintptr_t)p - it->first);
}

size_t page_round(size_t n)
{
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    return (n + pg - 1) / pg * pg;
}

/* Every allocation keeps a memfd open: lift the soft descriptor limit once. */
void raise_fd_limit()
{
    static std::once_flag once;
    std::call_once(once, [] {
        struct rlimit rl;
        if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
            rl.rlim_cur = rl.rlim_max;
            (void)setrlimit(RLIMIT_NOFILE, &rl);
        }
    });
}

cudaError_t alloc_shared(void **p, size_t size, Kind kind)
{
    if (!p)
        return fail(cudaErrorInvalidValue);
    if (size == 0) {
        *p = nullptr;
        return cudaSuccess;
    }
    if (size > kGlobalMem)
        return fail(cudaErrorMemoryAllocation);
    raise_fd_limit();
    size_t mapped = page_round(size);
    int fd = memfd_create("orbit-cuda-emu", MFD_CLOEXEC);
    if (fd < 0)
        return fail(cudaErrorMemoryAllocation);
    void *a = MAP_FAILED;
    if (ftruncate(fd, (off_t)mapped) == 0)
        a = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (a == MAP_FAILED) {
        close(fd);
        return fail(cudaErrorMemoryAllocation);
    }
    Range r;
    r.size = size;
    r.mapped = mapped;
    r.kind = kind;
    r.device = t_device;
    r.fd = fd;
    MemState &m = mem();
    {
        std::lock_guard<std::mutex> lk(m.mu);
        r.serial = m.next_serial++;
        m.ranges[(uintptr_t)a] = r;
    }
    *p = a;
    return cudaSuccess;
}

cudaError_t alloc_host(void **p, size_t size)
{
    if (!p)
        return fail(cudaErrorInvalidValue);
    if (size == 0) {
        *p = nullptr;
        return cudaSuccess;
    }
    size_t mapped = page_round(size);
    void *a = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (a == MAP_FAILED)
        return fail(cudaErrorMemoryAllocation);
    Range r;
    r.size = size;
    r.mapped = mapped;
    r.kind = Kind::Host;
    r.device = t_device;
    r.owned = true;
    MemState &m = mem();
    std::lock_guard<std::mutex> lk(m.mu);
    m.ranges[(uintptr_t)a] = r;
    *p = a;
    return cudaSuccess;
}

/* What an IPC handle carries: enough for another process to map the memfd through /proc. */
struct IpcHandle {
    uint64_t magic;
    int32_t pid;
    int32_t fd;
    int32_t device;
    int32_t pad;
    uint64_t size;
    uint64_t mapped;
    uint64_t serial;
};
constexpr uint64_t kIpcMagic = 0x6f7262656d75ULL ^ 0x4950430000000000ULL; /* "orbemu", "IPC" */
static_assert(sizeof(IpcHandle) <= sizeof(cudaIpcMemHandle_t), "IPC handle must fit 64 bytes");

/* ---- peers -------------------------------------------------------------------------------- */

struct PeerState {
    std::mutex mu;
    std::set<std::pair<int, int>> enabled; /* (device, peer) */
};

PeerState &peers()
{
    static PeerState *p = new PeerState();
    return *p;
}

/* ---- error names -------------------------------------------------------------------------- */

struct ErrorText {
    cudaError_t code;
    const char *name;
    const char *text;
};

#define E(code, text) {code, #code, text}
const ErrorText kErrors[] = {
    E(cudaSuccess, "no error"),
    E(cudaErrorInvalidValue, "invalid argument"),
    E(cudaErrorMemoryAllocation, "out of memory"),
    E(cudaErrorInitializationError, "initialization error"),
    E(cudaErrorCudartUnloading, "driver shutting down"),
    E(cudaErrorInvalidConfiguration, "invalid configuration argument"),
    E(cudaErrorInvalidPitchValue, "invalid pitch argument"),
    E(cudaErrorInvalidSymbol, "invalid device symbol"),
    E(cudaErrorInvalidHostPointer, "invalid host pointer"),
    E(cudaErrorInvalidDevicePointer, "invalid device pointer"),
    E(cudaErrorInvalidMemcpyDirection, "invalid copy direction for memcpy"),
    E(cudaErrorMissingConfiguration, "__global__ function call is not configured"),
    E(cudaErrorInsufficientDriver, "CUDA driver version is insufficient for CUDA runtime version"),
    E(cudaErrorInvalidDeviceFunction, "invalid device function"),
    E(cudaErrorNoDevice, "no CUDA-capable device is detected"),
    E(cudaErrorInvalidDevice, "invalid device ordinal"),
    E(cudaErrorStartupFailure, "startup failure in cuda runtime"),
    E(cudaErrorInvalidKernelImage, "device kernel image is invalid"),
    E(cudaErrorDeviceUninitialized, "invalid device context"),
    E(cudaErrorMapBufferObjectFailed, "mapping of buffer object failed"),
    E(cudaErrorUnmapBufferObjectFailed, "unmapping of buffer object failed"),
    E(cudaErrorNoKernelImageForDevice, "no kernel image is available for execution on the device"),
    E(cudaErrorPeerAccessUnsupported, "peer access is not supported between these two devices"),
    E(cudaErrorOperatingSystem, "OS call failed or operation not supported on this OS"),
    E(cudaErrorInvalidResourceHandle, "invalid resource handle"),
    E(cudaErrorIllegalState, "the operation cannot be performed in the present state"),
    E(cudaErrorNotReady, "device not ready"),
    E(cudaErrorIllegalAddress, "an illegal memory access was encountered"),
    E(cudaErrorLaunchOutOfResources, "too many resources requested for launch"),
    E(cudaErrorLaunchTimeout, "the launch timed out and was terminated"),
    E(cudaErrorPeerAccessAlreadyEnabled, "peer access is already enabled"),
    E(cudaErrorPeerAccessNotEnabled, "peer access has not been enabled"),
    E(cudaErrorContextIsDestroyed, "context is destroyed"),
    E(cudaErrorAssert, "device-side assert triggered"),
    E(cudaErrorTooManyPeers, "peer mapping resources exhausted"),
    E(cudaErrorHostMemoryAlreadyRegistered, "part or all of the requested memory range is already mapped"),
    E(cudaErrorHostMemoryNotRegistered, "pointer does not correspond to a registered memory region"),
    E(cudaErrorIllegalInstruction, "an illegal instruction was encountered"),
    E(cudaErrorMisalignedAddress, "misaligned address"),
    E(cudaErrorLaunchFailure, "unspecified launch failure"),
    E(cudaErrorCooperativeLaunchTooLarge, "too many blocks in cooperative launch"),
    E(cudaErrorNotPermitted, "operation not permitted"),
    E(cudaErrorNotSupported, "operation not supported"),
    E(cudaErrorStreamCaptureUnsupported, "operation not permitted when stream is capturing"),
    E(cudaErrorStreamCaptureInvalidated, "operation failed due to a previous error during capture"),
    E(cudaErrorStreamCaptureUnmatched, "capture was not initiated in this stream"),
    E(cudaErrorStreamCaptureImplicit,
      "operation would make the legacy stream depend on a capturing blocking stream"),
    E(cudaErrorStreamCaptureWrongThread,
      "attempt to terminate a thread-local capture sequence from another thread"),
    E(cudaErrorTimeout, "wait operation timed out"),
    E(cudaErrorDevicesUnavailable, "CUDA-capable device(s) is/are busy or unavailable"),
    E(cudaErrorUnknown, "unknown error"),
};
#undef E

const ErrorText *error_text(cudaError_t e)
{
    for (const ErrorText &t : kErrors)
        if (t.code == e)
            return &t;
    return nullptr;
}

/* ---- checks of copies and sets ---------------------------------------------------------- */

/* Call-time checks of a copy: the side that claims to be device memory must be registered. */
cudaError_t check_copy(void *dst, const void *src, size_t count, cudaMemcpyKind kind)
{
    if ((int)kind < (int)cudaMemcpyHostToHost || (int)kind > (int)cudaMemcpyDefault)
        return cudaErrorInvalidMemcpyDirection;
    if (count == 0)
        return cudaSuccess;
    if (!dst || !src)
        return cudaErrorInvalidValue;
    bool dev_dst = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
    bool dev_src = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
    if ((dev_dst && !inside_registered(dst, count)) || (dev_src && !inside_registered(src, count)))
        return cudaErrorInvalidValue;
    return cudaSuccess;
}

cudaError_t check_set(void *p, size_t count)
{
    if (count == 0)
        return cudaSuccess;
    return p && inside_registered(p, count) ? cudaSuccess : cudaErrorInvalidValue;
}

/* ---- event state -------------------------------------------------------------------------- */

/* The event's current recording; false for a handle that is not live. */
bool event_record(cudaEvent_t event, std::shared_ptr<Record> *rec, unsigned *flags = nullptr)
{
    std::lock_guard<std::mutex> lk(st().mu);
    std::shared_ptr<Event> e = lookup_event_locked(event);
    if (!e)
        return false;
    *rec = e->rec;
    if (flags)
        *flags = e->flags;
    return true;
}

/* ---- PCI bus ids -------------------------------------------------------------------------- */

/* Parse one hex field of s ending at stop (or at the string's end when stop is 0). */
bool hex_field(const char *&s, char stop, unsigned *out)
{
    unsigned v = 0;
    int n = 0;
    for (; *s && *s != stop; s++, n++) {
        int c = *s, d;
        if (c >= '0' && c <= '9')
            d = c - '0';
        else if (c >= 'a' && c <= 'f')
            d = c - 'a' + 10;
        else if (c >= 'A' && c <= 'F')
            d = c - 'A' + 10;
        else
            return false;
        if (n >= 8)
            return false;
        v = v * 16 + (unsigned)d;
    }
    if (n == 0 || *s != stop)
        return false;
    if (stop)
        s++;
    *out = v;
    return true;
}

} /* namespace */

/* ---- the emulator's own interface (emu.h) ---------------------------------------------- */

namespace orb_emu {

int sm_count()
{
    static const int n = env_int("ORBIT_CUDA_EMU_SMS", 32, 1, 1 << 16);
    return n;
}

int device_count()
{
    static const int n = env_int("ORBIT_CUDA_EMU_DEVICES", 1, 1, 255); /* bus ids are 8 bits */
    return n;
}

} /* namespace orb_emu */

cudaError_t orb_emu_launch(dim3 grid, dim3 block, size_t dynamic_smem, cudaStream_t stream,
                           std::function<void()> body, const void *func)
{
    const unsigned g[3] = {grid.x, grid.y, grid.z}, b[3] = {block.x, block.y, block.z};
    unsigned long long threads = 1;
    for (int i = 0; i < 3; i++) {
        if (g[i] == 0 || b[i] == 0 || g[i] > kMaxGridDim[i] || b[i] > (unsigned)kMaxBlockDim[i])
            return fail(cudaErrorInvalidConfiguration);
        threads *= b[i];
    }
    if (threads > (unsigned long long)kMaxThreadsPerBlock || dynamic_smem > kSmemPerBlockOptin)
        return fail(cudaErrorInvalidConfiguration);
    if (open_context(t_device) != cudaSuccess)
        return cudaErrorDevicesUnavailable;
    /* the kernel keeps the device it was launched for, also when replayed from a graph */
    int device;
    {
        std::lock_guard<std::mutex> lk(st().mu);
        std::shared_ptr<Stream> s = lookup_stream_locked(stream);
        if (!s)
            return fail(cudaErrorInvalidResourceHandle);
        device = s->device;
    }
    /* a launch into a capture loads the kernel too: the graph's node needs it */
    load_function(device, func);
    Node n;
    n.fn = [grid, block, dynamic_smem, device, body = std::move(body)] {
        t_device = device;
        orb_emu::grid_run(grid, block, dynamic_smem, body, device);
    };
    return submit(stream, std::move(n));
}

/* ---- the CUDA runtime API --------------------------------------------------------------- */

extern "C" {

/* errors */

cudaError_t cudaGetLastError(void)
{
    cudaError_t e = t_last_error;
    t_last_error = cudaSuccess;
    return e;
}

cudaError_t cudaPeekAtLastError(void) { return t_last_error; }

const char *cudaGetErrorString(cudaError_t error)
{
    const ErrorText *t = error_text(error);
    return t ? t->text : "unknown error";
}

const char *cudaGetErrorName(cudaError_t error)
{
    const ErrorText *t = error_text(error);
    return t ? t->name : "unrecognized error code";
}

/* devices */

cudaError_t cudaGetDeviceCount(int *count)
{
    if (!count)
        return fail(cudaErrorInvalidValue);
    *count = orb_emu::device_count();
    return cudaSuccess;
}

cudaError_t cudaSetDevice(int device)
{
    if (!valid_device(device))
        return fail(cudaErrorInvalidDevice);
    if (open_context(device) != cudaSuccess) /* CUDA 12 makes the primary context here */
        return cudaErrorDevicesUnavailable;
    t_device = device;
    return cudaSuccess;
}

cudaError_t cudaGetDevice(int *device)
{
    if (!device)
        return fail(cudaErrorInvalidValue);
    *device = t_device;
    return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *prop, int device)
{
    if (!prop)
        return fail(cudaErrorInvalidValue);
    if (!valid_device(device))
        return fail(cudaErrorInvalidDevice);
    memset(prop, 0, sizeof *prop);
    snprintf(prop->name, sizeof prop->name, "orbit CUDA emulator (CPU)");
    /* a stable per-ordinal UUID: processes that share an emulated device see the same one,
     * and different devices differ (orbit tells "same GPU" from "peer GPU" by it) */
    memcpy(prop->uuid.bytes, "orbemu-cpu-dev", 14);
    prop->uuid.bytes[15] = (char)device;
    prop->totalGlobalMem = kGlobalMem;
    prop->multiProcessorCount = orb_emu::sm_count();
    prop->major = 9;
    prop->minor = 0;
    prop->warpSize = 32;
    prop->maxThreadsPerBlock = kMaxThreadsPerBlock;
    for (int i = 0; i < 3; i++) {
        prop->maxThreadsDim[i] = kMaxBlockDim[i];
        prop->maxGridSize[i] = (int)kMaxGridDim[i];
    }
    prop->sharedMemPerBlock = kSmemPerBlock;
    prop->sharedMemPerBlockOptin = kSmemPerBlockOptin;
    prop->pciDomainID = 0;
    prop->pciBusID = device + 1;
    prop->pciDeviceID = 0;
    prop->unifiedAddressing = 1;
    prop->canMapHostMemory = 1;
    prop->concurrentKernels = 1;
    return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int *value, enum cudaDeviceAttr attr, int device)
{
    if (!value)
        return fail(cudaErrorInvalidValue);
    if (!valid_device(device))
        return fail(cudaErrorInvalidDevice);
    switch (attr) {
    case cudaDevAttrMultiProcessorCount: *value = orb_emu::sm_count(); break;
    case cudaDevAttrComputeCapabilityMajor: *value = 9; break;
    case cudaDevAttrComputeCapabilityMinor: *value = 0; break;
    case cudaDevAttrWarpSize: *value = 32; break;
    case cudaDevAttrMaxThreadsPerBlock: *value = kMaxThreadsPerBlock; break;
    case cudaDevAttrCanMapHostMemory: *value = 1; break;
    case cudaDevAttrUnifiedAddressing: *value = 1; break;
    case cudaDevAttrPciBusId: *value = device + 1; break;
    case cudaDevAttrPciDeviceId: *value = 0; break;
    case cudaDevAttrPciDomainId: *value = 0; break;
    case cudaDevAttrMaxSharedMemoryPerBlock: *value = (int)kSmemPerBlock; break;
    default: return fail(cudaErrorInvalidValue);
    }
    return cudaSuccess;
}

cudaError_t cudaDeviceGetPCIBusId(char *pciBusId, int len, int device)
{
    if (!pciBusId || len <= 0)
        return fail(cudaErrorInvalidValue);
    if (!valid_device(device))
        return fail(cudaErrorInvalidDevice);
    snprintf(pciBusId, (size_t)len, "0000:%02x:00.0", (unsigned)(device + 1));
    return cudaSuccess;
}

cudaError_t cudaDeviceGetByPCIBusId(int *device, const char *pciBusId)
{
    if (!device || !pciBusId)
        return fail(cudaErrorInvalidValue);
    /* "dddd:bb:dd.f" or "bb:dd.f" */
    unsigned domain = 0, bus = 0, dev = 0, fn = 0;
    const char *s = pciBusId;
    bool ok;
    if (strchr(s, ':') != strrchr(s, ':'))
        ok = hex_field(s, ':', &domain) && hex_field(s, ':', &bus);
    else
        ok = hex_field(s, ':', &bus);
    ok = ok && hex_field(s, '.', &dev) && hex_field(s, '\0', &fn);
    if (!ok || domain != 0 || dev != 0 || fn != 0 || bus < 1 || !valid_device((int)bus - 1))
        return fail(cudaErrorInvalidDevice);
    *device = (int)bus - 1;
    return cudaSuccess;
}

/* ORBIT_CUDA_EMU_PEER=0: devices that cannot reach each other (no P2P, as across some PCIe
 * root complexes), so the host-staged FIFOs run. */
bool peer_capable()
{
    static const bool p = env_int("ORBIT_CUDA_EMU_PEER", 1, 0, 1) != 0;
    return p;
}

cudaError_t cudaDeviceCanAccessPeer(int *canAccessPeer, int device, int peerDevice)
{
    if (!canAccessPeer)
        return fail(cudaErrorInvalidValue);
    if (!valid_device(device) || !valid_device(peerDevice))
        return fail(cudaErrorInvalidDevice);
    *canAccessPeer = device != peerDevice && peer_capable();
    return cudaSuccess;
}

cudaError_t cudaDeviceEnablePeerAccess(int peerDevice, unsigned int flags)
{
    int me = t_device;
    if (!valid_device(peerDevice) || peerDevice == me)
        return fail(cudaErrorInvalidDevice);
    if (flags != 0)
        return fail(cudaErrorInvalidValue);
    if (!peer_capable())
        return fail(cudaErrorPeerAccessUnsupported);
    PeerState &p = peers();
    std::lock_guard<std::mutex> lk(p.mu);
    if (!p.enabled.insert({me, peerDevice}).second)
        return fail(cudaErrorPeerAccessAlreadyEnabled);
    return cudaSuccess;
}

cudaError_t cudaDeviceDisablePeerAccess(int peerDevice)
{
    int me = t_device;
    if (!valid_device(peerDevice) || peerDevice == me)
        return fail(cudaErrorInvalidDevice);
    PeerState &p = peers();
    std::lock_guard<std::mutex> lk(p.mu);
    if (!p.enabled.erase({me, peerDevice}))
        return fail(cudaErrorPeerAccessNotEnabled);
    return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize(void)
{
    if (open_context(t_device) != cudaSuccess)
        return cudaErrorDevicesUnavailable;
    wait_device(t_device);
    return cudaSuccess;
}

/* functions: what an sm_90 kernel of the emulator reports, and the load that lazy loading
 * would do at the first launch (done here once, the same context-wide wait) */
cudaError_t cudaFuncGetAttributes(struct cudaFuncAttributes *attr, const void *func)
{
    if (!attr)
        return fail(cudaErrorInvalidValue);
    if (!func)
        return fail(cudaErrorInvalidDeviceFunction);
    load_function(t_device, func);
    memset(attr, 0, sizeof *attr);
    attr->maxThreadsPerBlock = kMaxThreadsPerBlock;
    attr->numRegs = 32;
    attr->ptxVersion = 90;
    attr->binaryVersion = 90;
    attr->maxDynamicSharedSizeBytes = (int)kSmemPerBlock;
    attr->preferredShmemCarveout = -1;
    return cudaSuccess;
}

cudaError_t cudaDriverGetVersion(int *driverVersion)
{
    if (!driverVersion)
        return fail(cudaErrorInvalidValue);
    *driverVersion = CUDART_VERSION;
    return cudaSuccess;
}

cudaError_t cudaRuntimeGetVersion(int *runtimeVersion)
{
    if (!runtimeVersion)
        return fail(cudaErrorInvalidValue);
    *runtimeVersion = CUDART_VERSION;
    return cudaSuccess;
}

/* memory */

cudaError_t cudaMalloc(void **devPtr, size_t size)
{
    if (open_context(t_device) != cudaSuccess)
        return cudaErrorDevicesUnavailable;
    if (devPtr && size)
        alloc_wait(t_device);
    return alloc_shared(devPtr, size, Kind::Device);
}

cudaError_t cudaMallocManaged(void **devPtr, size_t size, unsigned int flags)
{
    if (open_context(t_device) != cudaSuccess)
        return cudaErrorDevicesUnavailable;
    if (flags != cudaMemAttachGlobal && flags != cudaMemAttachHost)
        return fail(cudaErrorInvalidValue);
    if (devPtr && size)
        alloc_wait(t_device);
    return alloc_shared(devPtr, size, Kind::Managed);
}

cudaError_t cudaFree(void *devPtr)
{
    if (!devPtr)
        return cudaSuccess;
    auto allocated = [](const Range &r) { return r.kind == Kind::Device || r.kind == Kind::Managed; };
    Range r;
    if (!base_range(devPtr, allocated, &r, false))
        return fail(cudaErrorInvalidValue);
    /* like the real cudaFree: queued work that may still use the memory finishes first */
    wait_device(r.device);
    if (!base_range(devPtr, allocated, &r, true))
        return fail(cudaErrorInvalidValue); /* freed by another thread meanwhile */
    munmap(devPtr, r.mapped);
    close(r.fd);
    return cudaSuccess;
}

/* The stream-ordered allocator: not among the implicit synchronisations (that is what it is
 * for). The memory exists at once here; on a GPU it becomes usable in the stream's order,
 * which no correct program can tell apart. */
cudaError_t cudaMallocAsync(void **devPtr, size_t size, cudaStream_t stream)
{
    if (open_context(t_device) != cudaSuccess)
        return cudaErrorDevicesUnavailable;
    {
        std::lock_guard<std::mutex> lk(st().mu);
        if (!lookup_stream_locked(stream))
            return fail(cudaErrorInvalidResourceHandle);
    }
    return alloc_shared(devPtr, size, Kind::Device);
}

/* Freed when the stream reaches it: work queued before it on the stream may still use it. */
cudaError_t cudaFreeAsync(void *devPtr, cudaStream_t stream)
{
    if (!devPtr)
        return cudaSuccess;
    auto allocated = [](const Range &r) { return r.kind == Kind::Device; };
    Range r;
    if (!base_range(devPtr, allocated, &r, false))
        return fail(cudaErrorInvalidValue);
    Node n;
    n.fn = [devPtr] {
        Range taken;
        auto dev = [](const Range &x) { return x.kind == Kind::Device; };
        if (base_range(devPtr, dev, &taken, true)) {
            munmap(devPtr, taken.mapped);
            close(taken.fd);
        }
    };
    return submit(stream, std::move(n));
}

cudaError_t cudaMallocHost(void **ptr, size_t size)
{
    if (open_context(t_device) != cudaSuccess)
        return cudaErrorDevicesUnavailable;
    if (ptr && size)
        alloc_wait(t_device);
    return alloc_host(ptr, size);
}

cudaError_t cudaHostAlloc(void **pHost, size_t size, unsigned int flags)
{
    if (open_context(t_device) != cudaSuccess)
        return cudaErrorDevicesUnavailable;
    (void)flags; /* portable / mapped / write-combined: all the same on the CPU */
    if (pHost && size)
        alloc_wait(t_device);
    return alloc_host(pHost, size);
}

cudaError_t cudaFreeHost(void *ptr)
{
    if (!ptr)
        return cudaSuccess;
    Range r;
    auto owned = [](const Range &x) { return x.kind == Kind::Host && x.owned; };
    if (!base_range(ptr, owned, &r, false))
        return fail(cudaErrorInvalidValue);
    alloc_wait(t_device);
    if (!base_range(ptr, owned, &r, true))
        return fail(cudaErrorInvalidValue); /* freed by another thread meanwhile */
    munmap(ptr, r.mapped);
    return cudaSuccess;
}

cudaError_t cudaHostRegister(void *ptr, size_t size, unsigned int flags)
{
    if (open_context(t_device) != cudaSuccess)
        return cudaErrorDevicesUnavailable;
    (void)flags;
    if (!ptr || size == 0)
        return fail(cudaErrorInvalidValue);
    uintptr_t a = (uintptr_t)ptr;
    if (a + size < a)
        return fail(cudaErrorInvalidValue);
    alloc_wait(t_device);
    MemState &m = mem();
    std::lock_guard<std::mutex> lk(m.mu);
    /* overlap: a range starting before the end whose end lies after the start */
    auto it = m.ranges.lower_bound(a + size);
    if (it != m.ranges.begin()) {
        --it;
        if (it->first + it->second.size > a)
            return fail(cudaErrorHostMemoryAlreadyRegistered);
    }
    Range r;
    r.size = size;
    r.kind = Kind::Host;
    r.device = t_device;
    m.ranges[a] = r;
    return cudaSuccess;
}

cudaError_t cudaHostUnregister(void *ptr)
{
    Range r;
    auto registered = [](const Range &x) { return x.kind == Kind::Host && !x.owned; };
    if (!base_range(ptr, registered, &r, false))
        return fail(cudaErrorHostMemoryNotRegistered);
    alloc_wait(t_device);
    if (!base_range(ptr, registered, &r, true))
        return fail(cudaErrorHostMemoryNotRegistered);
    return cudaSuccess;
}

cudaError_t cudaHostGetDevicePointer(void **pDevice, void *pHost, unsigned int flags)
{
    if (!pDevice || !pHost || flags != 0)
        return fail(cudaErrorInvalidValue);
    MemState &m = mem();
    std::lock_guard<std::mutex> lk(m.mu);
    auto it = find_range_locked(pHost);
    if (it == m.ranges.end() || it->second.kind != Kind::Host)
        return fail(cudaErrorInvalidValue);
    *pDevice = pHost; /* one address space */
    return cudaSuccess;
}

cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *attributes, const void *ptr)
{
    if (!attributes)
        return fail(cudaErrorInvalidValue);
    memset(attributes, 0, sizeof *attributes);
    void *p = const_cast<void *>(ptr);
    MemState &m = mem();
    std::lock_guard<std::mutex> lk(m.mu);
    auto it = find_range_locked(ptr);
    if (!ptr || it == m.ranges.end()) {
        /* pageable memory: not an error since CUDA 11 */
        attributes->type = cudaMemoryTypeUnregistered;
        attributes->device = -2;
        attributes->hostPointer = p;
        return cudaSuccess;
    }
    const Range &r = it->second;
    attributes->device = r.device;
    switch (r.kind) {
    case Kind::Device:
    case Kind::Ipc:
        attributes->type = cudaMemoryTypeDevice;
        attributes->devicePointer = p;
        break;
    case Kind::Managed:
        attributes->type = cudaMemoryTypeManaged;
        attributes->devicePointer = attributes->hostPointer = p;
        break;
    case Kind::Host:
        attributes->type = cudaMemoryTypeHost;
        attributes->devicePointer = attributes->hostPointer = p;
        break;
    }
    return cudaSuccess;
}

/* copies and sets */


cudaError_t cudaMemcpy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind)
{
    if (open_context(t_device) != cudaSuccess)
        return cudaErrorDevicesUnavailable;
    cudaError_t e = check_copy(dst, src, count, kind);
    if (e != cudaSuccess)
        return fail(e);
    wait_null_stream_order(t_device);
    if (count)
        memmove(dst, src, count);
    return cudaSuccess;
}

cudaError_t cudaMemset(void *devPtr, int value, size_t count)
{
    if (open_context(t_device) != cudaSuccess)
        return cudaErrorDevicesUnavailable;
    cudaError_t e = check_set(devPtr, count);
    if (e != cudaSuccess)
        return fail(e);
    wait_null_stream_order(t_device);
    if (count)
        memset(devPtr, value, count);
    return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind,
                            cudaStream_t stream)
{
    cudaError_t e = check_copy(dst, src, count, kind);
    if (e != cudaSuccess)
        return fail(e);
    /* Pageable host memory, as the real runtime treats it: a source is staged before the
     * call returns (the caller may reuse it at once), a destination is filled before the call
     * returns. */
    const bool host_src = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyHostToHost || kind == cudaMemcpyDefault;
    const bool host_dst = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyHostToHost || kind == cudaMemcpyDefault;
    const bool stage_src = count && host_src && !inside_registered(src, count);
    const bool wait_dst = count && host_dst && !inside_registered(dst, count);
    Node n;
    if (stage_src) {
        auto staged = std::make_shared<std::vector<char>>((const char *)src, (const char *)src + count);
        n.fn = [dst, staged] { memmove(dst, staged->data(), staged->size()); };
    } else {
        n.fn = [dst, src, count] {
            if (count)
                memmove(dst, src, count);
        };
    }
    if ((e = submit(stream, std::move(n))) != cudaSuccess || !wait_dst)
        return e;
    cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(stream, &cs) == cudaSuccess && cs == cudaStreamCaptureStatusNone)
        return cudaStreamSynchronize(stream);
    return cudaSuccess;
}

cudaError_t cudaMemsetAsync(void *devPtr, int value, size_t count, cudaStream_t stream)
{
    cudaError_t e = check_set(devPtr, count);
    if (e != cudaSuccess)
        return fail(e);
    Node n;
    n.fn = [devPtr, value, count] {
        if (count)
            memset(devPtr, value, count);
    };
    return submit(stream, std::move(n));
}

/* streams */

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *pStream, unsigned int flags)
{
    if (open_context(t_device) != cudaSuccess)
        return cudaErrorDevicesUnavailable;
    if (!pStream || (flags & ~(unsigned)cudaStreamNonBlocking))
        return fail(cudaErrorInvalidValue);
    std::shared_ptr<Stream> s;
    {
        std::lock_guard<std::mutex> lk(st().mu);
        try {
            s = make_stream_locked(ctx_locked(t_device), t_device, flags, false);
        } catch (const std::exception &) {
            return fail(cudaErrorMemoryAllocation);
        }
        st().streams[s.get()] = s;
    }
    *pStream = reinterpret_cast<cudaStream_t>(s.get());
    return cudaSuccess;
}

cudaError_t cudaStreamCreate(cudaStream_t *pStream) { return cudaStreamCreateWithFlags(pStream, cudaStreamDefault); }

/* Returns at once, as CUDA's does: work still queued on the stream completes later (the
 * stream is kept as retired until then, so device-wide waits still see it). */
cudaError_t cudaStreamDestroy(cudaStream_t stream)
{
    State &g = st();
    std::lock_guard<std::mutex> lk(g.mu);
    auto it = g.streams.find(reinterpret_cast<Stream *>(stream));
    if (is_null_stream(stream) || it == g.streams.end())
        return fail(cudaErrorInvalidResourceHandle);
    std::shared_ptr<Stream> s = it->second;
    g.streams.erase(it);
    s->capture.reset(); /* an unfinished capture ends with the stream */
    if (!s->idle())
        g.retired.push_back(s);
    if (!hw_queues()) { /* the stream's own queue: its worker drains it, then exits */
        std::lock_guard<std::mutex> lq(s->queue->mu);
        s->queue->stop = true;
        s->queue->work_cv.notify_one();
    }
    return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream)
{
    /* the NULL stream's work also waits for the blocking streams' earlier work */
    if (is_null_stream(stream)) {
        wait_null_stream_order(t_device);
        return cudaSuccess;
    }
    std::shared_ptr<Stream> s;
    uint64_t seq;
    {
        std::lock_guard<std::mutex> lk(st().mu);
        s = lookup_stream_locked(stream);
        if (!s)
            return fail(cudaErrorInvalidResourceHandle);
        if (s->capture)
            return fail(cudaErrorStreamCaptureUnsupported);
        seq = s->enqueued_now();
    }
    s->wait_for(seq);
    return cudaSuccess;
}

cudaError_t cudaStreamQuery(cudaStream_t stream)
{
    std::lock_guard<std::mutex> lk(st().mu);
    std::shared_ptr<Stream> s = lookup_stream_locked(stream);
    if (!s)
        return fail(cudaErrorInvalidResourceHandle);
    if (s->capture)
        return fail(cudaErrorStreamCaptureUnsupported);
    std::lock_guard<std::mutex> lk2(s->mu);
    /* "not ready" is a status, not an error: it is not the last error */
    return s->completed == s->enqueued ? cudaSuccess : cudaErrorNotReady;
}

cudaError_t cudaStreamGetFlags(cudaStream_t hStream, unsigned int *flags)
{
    return with_stream(hStream, flags, [&](Stream &s) { *flags = s.flags; });
}

cudaError_t cudaStreamGetDevice(cudaStream_t hStream, int *device)
{
    return with_stream(hStream, device, [&](Stream &s) { *device = s.device; });
}

cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void *userData)
{
    if (!fn)
        return fail(cudaErrorInvalidValue);
    Node n;
    n.fn = [fn, userData] { fn(userData); };
    return submit(stream, std::move(n));
}

/* events */

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned int flags)
{
    if (open_context(t_device) != cudaSuccess)
        return cudaErrorDevicesUnavailable;
    if (!event)
        return fail(cudaErrorInvalidValue);
    auto e = std::make_shared<Event>();
    e->flags = flags;
    {
        std::lock_guard<std::mutex> lk(st().mu);
        st().events[e.get()] = e;
    }
    *event = reinterpret_cast<cudaEvent_t>(e.get());
    return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t *event) { return cudaEventCreateWithFlags(event, cudaEventDefault); }

cudaError_t cudaEventDestroy(cudaEvent_t event)
{
    std::lock_guard<std::mutex> lk(st().mu);
    if (!st().events.erase(reinterpret_cast<Event *>(event)))
        return fail(cudaErrorInvalidResourceHandle);
    return cudaSuccess; /* queued records and waits hold their own references */
}

/* A record or a wait of a live event, queued on (or captured from) stream. */
static cudaError_t submit_event(cudaStream_t stream, cudaEvent_t event, Node::Kind kind)
{
    Node n;
    n.kind = kind;
    {
        std::lock_guard<std::mutex> lk(st().mu);
        n.event = lookup_event_locked(event);
    }
    if (!n.event)
        return fail(cudaErrorInvalidResourceHandle);
    return submit(stream, std::move(n));
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream)
{
    return submit_event(stream, event, Node::RecordEvent);
}

cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags)
{
    (void)flags;
    return submit_event(stream, event, Node::WaitEvent);
}


cudaError_t cudaEventSynchronize(cudaEvent_t event)
{
    std::shared_ptr<Record> rec;
    if (!event_record(event, &rec))
        return fail(cudaErrorInvalidResourceHandle);
    if (rec)
        rec->wait();
    return cudaSuccess;
}

cudaError_t cudaEventQuery(cudaEvent_t event)
{
    std::shared_ptr<Record> rec;
    if (!event_record(event, &rec))
        return fail(cudaErrorInvalidResourceHandle);
    return !rec || rec->is_done() ? cudaSuccess : cudaErrorNotReady;
}

cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end)
{
    if (!ms)
        return fail(cudaErrorInvalidValue);
    std::shared_ptr<Record> a, b;
    unsigned fa = 0, fb = 0;
    if (!event_record(start, &a, &fa) || !event_record(end, &b, &fb))
        return fail(cudaErrorInvalidResourceHandle);
    if (!a || !b || ((fa | fb) & cudaEventDisableTiming))
        return fail(cudaErrorInvalidResourceHandle);
    if (!a->is_done() || !b->is_done())
        return fail(cudaErrorNotReady);
    std::chrono::steady_clock::time_point ta, tb;
    {
        std::lock_guard<std::mutex> lk(a->mu);
        ta = a->when;
    }
    {
        std::lock_guard<std::mutex> lk(b->mu);
        tb = b->when;
    }
    *ms = std::chrono::duration<float, std::milli>(tb - ta).count();
    return cudaSuccess;
}

/* stream capture and graphs */

cudaError_t cudaStreamBeginCapture(cudaStream_t stream, enum cudaStreamCaptureMode mode)
{
    if (mode != cudaStreamCaptureModeGlobal && mode != cudaStreamCaptureModeThreadLocal &&
        mode != cudaStreamCaptureModeRelaxed)
        return fail(cudaErrorInvalidValue);
    State &g = st();
    std::lock_guard<std::mutex> lk(g.mu);
    if (is_null_stream(stream))
        return fail(cudaErrorStreamCaptureUnsupported);
    std::shared_ptr<Stream> s = lookup_stream_locked(stream);
    if (!s)
        return fail(cudaErrorInvalidResourceHandle);
    if (s->capture)
        return fail(cudaErrorIllegalState);
    s->capture = std::make_shared<Graph>();
    s->capture_id = g.next_capture_id++;
    return cudaSuccess;
}

cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t *pGraph)
{
    if (!pGraph)
        return fail(cudaErrorInvalidValue);
    State &g = st();
    std::lock_guard<std::mutex> lk(g.mu);
    std::shared_ptr<Stream> s = lookup_stream_locked(stream);
    if (!s)
        return fail(cudaErrorInvalidResourceHandle);
    if (!s->capture)
        return fail(cudaErrorIllegalState);
    std::shared_ptr<Graph> graph = std::move(s->capture);
    s->capture.reset();
    g.graphs[graph.get()] = graph;
    *pGraph = reinterpret_cast<cudaGraph_t>(graph.get());
    return cudaSuccess;
}

cudaError_t cudaStreamIsCapturing(cudaStream_t stream, enum cudaStreamCaptureStatus *pCaptureStatus)
{
    return with_stream(stream, pCaptureStatus, [&](Stream &s) {
        *pCaptureStatus = s.capture ? cudaStreamCaptureStatusActive : cudaStreamCaptureStatusNone;
    });
}

cudaError_t cudaStreamGetCaptureInfo(cudaStream_t stream, enum cudaStreamCaptureStatus *captureStatus_out,
                                     unsigned long long *id_out, cudaGraph_t *graph_out,
                                     const cudaGraphNode_t **dependencies_out,
                                     const cudaGraphEdgeData **edgeData_out, size_t *numDependencies_out)
{
    return with_stream(stream, captureStatus_out, [&](Stream &s) {
        const bool on = s.capture != nullptr;
        *captureStatus_out = on ? cudaStreamCaptureStatusActive : cudaStreamCaptureStatusNone;
        if (id_out)
            *id_out = on ? s.capture_id : 0;
        if (graph_out)
            *graph_out = on ? reinterpret_cast<cudaGraph_t>(s.capture.get()) : nullptr;
        /* captured work forms a chain: node handles are not modelled */
        if (dependencies_out)
            *dependencies_out = nullptr;
        if (edgeData_out)
            *edgeData_out = nullptr;
        if (numDependencies_out)
            *numDependencies_out = 0;
    });
}

cudaError_t cudaThreadExchangeStreamCaptureMode(enum cudaStreamCaptureMode *mode)
{
    if (!mode)
        return fail(cudaErrorInvalidValue);
    std::swap(*mode, t_capture_mode);
    return cudaSuccess;
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t *pGraphExec, cudaGraph_t graph, unsigned long long flags)
{
    (void)flags;
    if (!pGraphExec)
        return fail(cudaErrorInvalidValue);
    State &g = st();
    std::lock_guard<std::mutex> lk(g.mu);
    auto it = g.graphs.find(reinterpret_cast<Graph *>(graph));
    if (it == g.graphs.end())
        return fail(cudaErrorInvalidValue);
    auto exec = std::make_shared<Exec>();
    exec->nodes = it->second->nodes;
    g.execs[exec.get()] = exec;
    *pGraphExec = reinterpret_cast<cudaGraphExec_t>(exec.get());
    return cudaSuccess;
}

cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t *pGraphExec, cudaGraph_t graph, unsigned long long flags)
{
    return cudaGraphInstantiate(pGraphExec, graph, flags);
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t graphExec, cudaStream_t stream)
{
    State &g = st();
    std::lock_guard<std::mutex> lk(g.mu);
    auto it = g.execs.find(reinterpret_cast<Exec *>(graphExec));
    if (it == g.execs.end())
        return fail(cudaErrorInvalidValue);
    std::shared_ptr<Stream> s = lookup_stream_locked(stream);
    if (!s)
        return fail(cudaErrorInvalidResourceHandle);
    const std::vector<Node> &nodes = it->second->nodes;
    if (s->capture) { /* a graph launched into a capture becomes part of it */
        s->capture->nodes.insert(s->capture->nodes.end(), nodes.begin(), nodes.end());
        return cudaSuccess;
    }
    std::vector<Op> ops;
    ops.reserve(nodes.size());
    for (const Node &n : nodes)
        ops.push_back(resolve_node_locked(n));
    push_locked(s, [ops = std::move(ops)] {
        for (const Op &op : ops)
            if (op)
                op();
    });
    return cudaSuccess;
}

cudaError_t cudaGraphDestroy(cudaGraph_t graph)
{
    std::lock_guard<std::mutex> lk(st().mu);
    if (!st().graphs.erase(reinterpret_cast<Graph *>(graph)))
        return fail(cudaErrorInvalidValue);
    return cudaSuccess;
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t graphExec)
{
    std::lock_guard<std::mutex> lk(st().mu);
    if (!st().execs.erase(reinterpret_cast<Exec *>(graphExec)))
        return fail(cudaErrorInvalidValue);
    return cudaSuccess;
}

/* IPC between processes that share the emulated GPU */

cudaError_t cudaIpcGetMemHandle(cudaIpcMemHandle_t *handle, void *devPtr)
{
    if (!handle || !devPtr)
        return fail(cudaErrorInvalidValue);
    IpcHandle h;
    memset(&h, 0, sizeof h);
    Range r;
    if (!base_range(devPtr, [](const Range &x) { return x.kind == Kind::Device; }, &r, false))
        return fail(cudaErrorInvalidValue);
    h.magic = kIpcMagic;
    h.pid = (int32_t)getpid();
    h.fd = r.fd;
    h.device = r.device;
    h.size = r.size;
    h.mapped = r.mapped;
    h.serial = r.serial;
    memset(handle, 0, sizeof *handle);
    memcpy(handle->reserved, &h, sizeof h);
    return cudaSuccess;
}

cudaError_t cudaIpcOpenMemHandle(void **devPtr, cudaIpcMemHandle_t handle, unsigned int flags)
{
    (void)flags;
    if (!devPtr)
        return fail(cudaErrorInvalidValue);
    IpcHandle h;
    memcpy(&h, handle.reserved, sizeof h);
    /* the real runtime refuses a handle of the own process too (it has no InvalidContext) */
    if (h.magic != kIpcMagic || h.pid == (int32_t)getpid() || h.fd < 0 || h.size == 0 || h.mapped < h.size)
        return fail(cudaErrorInvalidValue);
    MemState &m = mem();
    {
        /* the same allocation opened again: share the mapping, counted */
        std::lock_guard<std::mutex> lk(m.mu);
        for (auto &kv : m.ranges) {
            Range &r = kv.second;
            if (r.kind == Kind::Ipc && r.pid == h.pid && r.serial == h.serial) {
                r.refs++;
                *devPtr = (void *)kv.first;
                return cudaSuccess;
            }
        }
    }
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/fd/%d", (int)h.pid, (int)h.fd);
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0)
        return fail(cudaErrorMapBufferObjectFailed);
    struct stat sb;
    void *a = MAP_FAILED;
    if (fstat(fd, &sb) == 0 && (uint64_t)sb.st_size >= h.mapped)
        a = mmap(nullptr, (size_t)h.mapped, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (a == MAP_FAILED)
        return fail(cudaErrorMapBufferObjectFailed);
    Range r;
    r.size = (size_t)h.size;
    r.mapped = (size_t)h.mapped;
    r.kind = Kind::Ipc;
    r.device = valid_device(h.device) ? h.device : t_device; /* the memory's own device */
    r.serial = h.serial;
    r.pid = h.pid;
    r.refs = 1;
    {
        std::lock_guard<std::mutex> lk(m.mu);
        for (auto &kv : m.ranges) { /* lost a race with another opener of the same handle */
            Range &o = kv.second;
            if (o.kind == Kind::Ipc && o.pid == h.pid && o.serial == h.serial) {
                o.refs++;
                *devPtr = (void *)kv.first;
                munmap(a, r.mapped);
                return cudaSuccess;
            }
        }
        m.ranges[(uintptr_t)a] = r;
    }
    *devPtr = a;
    return cudaSuccess;
}

cudaError_t cudaIpcCloseMemHandle(void *devPtr)
{
    MemState &m = mem();
    size_t mapped;
    {
        std::lock_guard<std::mutex> lk(m.mu);
        auto it = m.ranges.find((uintptr_t)devPtr);
        if (!devPtr || it == m.ranges.end() || it->second.kind != Kind::Ipc)
            return fail(cudaErrorInvalidValue);
        if (--it->second.refs > 0)
            return cudaSuccess;
        mapped = it->second.mapped;
        m.ranges.erase(it);
    }
    munmap(devPtr, mapped);
    return cudaSuccess;
}

} /* extern "C" */
