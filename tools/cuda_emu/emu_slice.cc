/* Processes that share an emulated GPU take turns in time slices (emu.h).
 *
 * Without MPS a GPU runs the kernels of one process's context at a time: contexts take turns
 * in time slices, so a kernel that spins waiting for another process's kernel sees it
 * progress only in that process's slices, and two kernels that need each other running at
 * the same moment never both run. Per device, a small shared file
 * (/dev/shm/orbit-cuda-emu-v1-UID-KEY-gpuD) holds the owner word (the process whose kernels
 * may run, and since when) and a slot per process: its pid, how many of its grids run, and
 * whether one of its blocks waits for the device. A block starts only while its process owns
 * the device and stops at every yield point (__nanosleep) while it does not. The owner hands
 * the device to a waiting process at a yield point once its slice is over, and gives it up
 * when its last grid ends; a waiter takes a device that is free or whose owner runs nothing
 * or has died. Blocks stop only at yield points: code between two of them runs on. The last
 * process of a file removes it at exit; files of killed runs are removed by the next process
 * that opens one (no live process in their slots).
 *
 * Settings: ORBIT_CUDA_EMU_TIME_SLICE_US (default 2000); MPS (ORBIT_CUDA_EMU_MPS=1 or
 * CUDA_MPS_PIPE_DIRECTORY set): no slices, kernels of processes run side by side;
 * ORBIT_CUDA_EMU_GPU_KEY: which processes share the emulated GPUs (default: the session, so
 * each meson test has its own, and the ranks orbitrun starts share it);
 * ORBIT_CUDA_EMU_COMPUTE_MODE=exclusive_process: one process per device at a time. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <mutex>

#include "emu.h"

namespace orb_emu {

namespace {

constexpr int kSlots = 64;
constexpr int kMaxDevices = 256;

struct Slot {
    std::atomic<int32_t> pid;     /* 0: free */
    std::atomic<int32_t> running; /* grids of this process running on the device */
    std::atomic<int32_t> want;    /* a block of this process waits for the device */
    int32_t pad;
};

struct Shared {
    std::atomic<uint64_t> owner; /* pid << 32 | start of its slice in 10 us units; 0: free */
    std::atomic<uint32_t> gen;   /* futex word: changes with every change of owner */
    uint32_t pad;
    Slot slot[kSlots];
};
static_assert(std::atomic<uint64_t>::is_always_lock_free && std::atomic<int32_t>::is_always_lock_free,
              "the shared words must be lock-free to work across processes");

struct Dev {
    std::mutex mu; /* opening */
    Shared *sh = nullptr;
    int fd = -1;
    int slot = -1;
    pid_t pid = 0; /* the process that registered the slot (a forked child registers anew) */
    bool broken = false; /* the file could not be made: said once, the device is not shared */
    char path[160];
};

Dev devs[kMaxDevices];
thread_local Dev *t_dev; /* the device of the block this thread runs, while it runs */

int env_num(const char *name, long dflt, long lo, long hi)
{
    const char *s = getenv(name);
    if (!s || !*s)
        return (int)dflt;
    char *end = nullptr;
    long v = strtol(s, &end, 10);
    if (*end || v < lo || v > hi) {
        fprintf(stderr, "orbit CUDA emulator: %s=%s is out of range [%ld, %ld]; using %ld\n", name, s, lo, hi, dflt);
        return (int)dflt;
    }
    return (int)v;
}

bool mps()
{
    static const bool on = [] {
        const char *pipe = getenv("CUDA_MPS_PIPE_DIRECTORY");
        return env_num("ORBIT_CUDA_EMU_MPS", 0, 0, 1) != 0 || (pipe && *pipe);
    }();
    return on;
}

uint32_t slice_units() /* in 10 us */
{
    static const uint32_t u = (uint32_t)(env_num("ORBIT_CUDA_EMU_TIME_SLICE_US", 2000, 10, 60000000) + 9) / 10;
    return u;
}

bool exclusive_process()
{
    static const bool on = [] {
        const char *e = getenv("ORBIT_CUDA_EMU_COMPUTE_MODE");
        if (e && !strcmp(e, "exclusive_process"))
            return true;
        if (e && *e && strcmp(e, "default"))
            fprintf(stderr, "orbit CUDA emulator: ORBIT_CUDA_EMU_COMPUTE_MODE=%s is not default or "
                            "exclusive_process; using default\n", e);
        return false;
    }();
    return on;
}

uint32_t now_units()
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint32_t)((uint64_t)ts.tv_sec * 100000u + (uint64_t)ts.tv_nsec / 10000u);
}

uint64_t pack(pid_t pid, uint32_t t) { return (uint64_t)(uint32_t)pid << 32 | t; }
pid_t pid_of(uint64_t o) { return (pid_t)(o >> 32); }
bool expired(uint64_t o) { return (uint32_t)(now_units() - (uint32_t)o) > slice_units(); }

bool dead(pid_t pid) { return kill(pid, 0) != 0 && errno == ESRCH; }

void futex_wait(std::atomic<uint32_t> *w, uint32_t val, long ns)
{
    struct timespec ts = {0, ns};
    syscall(SYS_futex, reinterpret_cast<uint32_t *>(w), FUTEX_WAIT, val, &ts, nullptr, 0);
}

void bump(Shared &s)
{
    s.gen.fetch_add(1, std::memory_order_acq_rel);
    syscall(SYS_futex, reinterpret_cast<uint32_t *>(&s.gen), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

/* Whether the process holding the device can still use it: it has a slot, a running grid and
 * is alive. */
bool holder_busy(Shared &s, pid_t pid)
{
    for (Slot &x : s.slot)
        if (x.pid.load(std::memory_order_acquire) == pid)
            return x.running.load(std::memory_order_acquire) > 0 && !dead(pid);
    return false;
}

/* The next process after slot me, round-robin, with a block waiting for the device. */
int next_waiter(Shared &s, int me)
{
    for (int i = 1; i < kSlots; i++) {
        Slot &x = s.slot[(me + i) % kSlots];
        if (x.pid.load(std::memory_order_acquire) != 0 && x.want.load(std::memory_order_acquire) &&
            x.running.load(std::memory_order_acquire) > 0)
            return (me + i) % kSlots;
    }
    return -1;
}

/* Return once this process owns the device, handing it on first if our slice is over and
 * another process waits. */
void acquire(Dev &d)
{
    Shared &s = *d.sh;
    Slot &me = s.slot[d.slot];
    for (;;) {
        const uint32_t g = s.gen.load(std::memory_order_acquire);
        uint64_t o = s.owner.load(std::memory_order_acquire);
        const pid_t holder = pid_of(o);
        if (holder == d.pid) {
            if (me.want.load(std::memory_order_relaxed))
                me.want.store(0, std::memory_order_release);
            if (!expired(o))
                return;
            const int w = next_waiter(s, d.slot);
            if (w < 0) { /* nobody waits: a new slice */
                s.owner.compare_exchange_strong(o, pack(d.pid, now_units()));
                return;
            }
            if (s.owner.compare_exchange_strong(o, pack(s.slot[w].pid.load(), now_units())))
                bump(s);
            continue; /* now wait for our turn */
        }
        if (!me.want.load(std::memory_order_relaxed))
            me.want.store(1, std::memory_order_release);
        if (holder == 0 || !holder_busy(s, holder)) {
            if (s.owner.compare_exchange_strong(o, pack(d.pid, now_units()))) {
                me.want.store(0, std::memory_order_release);
                bump(s);
                return;
            }
            continue;
        }
        futex_wait(&s.gen, g, 5000000); /* woken by the next change of owner */
    }
}

void on_exit_release();

constexpr const char *kDir = "/dev/shm", *kPrefix = "orbit-cuda-emu-v1-";

/* Whether any live process has a slot in the file. */
bool in_use(const Shared &s)
{
    for (const Slot &y : s.slot) {
        const pid_t pid = y.pid.load();
        if (pid != 0 && !dead(pid))
            return true;
    }
    return false;
}

/* Once per process: remove this user's files that no live process uses (left by runs killed
 * before their exit handler ran). A file being set up is locked and skipped. */
void sweep_stale()
{
    char prefix[64];
    snprintf(prefix, sizeof prefix, "%s%u-", kPrefix, (unsigned)getuid());
    DIR *dir = opendir(kDir);
    if (!dir)
        return;
    while (struct dirent *e = readdir(dir)) {
        if (strncmp(e->d_name, prefix, strlen(prefix)) != 0)
            continue;
        char path[512];
        snprintf(path, sizeof path, "%s/%s", kDir, e->d_name);
        int fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
            continue;
        struct stat sb;
        if (flock(fd, LOCK_EX | LOCK_NB) == 0 && fstat(fd, &sb) == 0 && sb.st_nlink > 0 &&
            (size_t)sb.st_size >= sizeof(Shared)) {
            void *p = mmap(nullptr, sizeof(Shared), PROT_READ, MAP_SHARED, fd, 0);
            if (p != MAP_FAILED) {
                if (!in_use(*static_cast<const Shared *>(p)))
                    unlink(path);
                munmap(p, sizeof(Shared));
            }
        }
        close(fd); /* drops the lock */
    }
    closedir(dir);
}

/* The device's shared file, opened and our slot registered on first use (per process). Null
 * under MPS, or when the file cannot be made (then the device is not shared: a warning). */
Dev *dev_get(int device, bool *refused = nullptr)
{
    if (mps() || device < 0 || device >= kMaxDevices)
        return nullptr;
    Dev &d = devs[device];
    const pid_t me = getpid();
    std::lock_guard<std::mutex> lk(d.mu);
    if (d.sh && d.pid == me)
        return &d;
    if (d.broken)
        return nullptr;
    if (d.sh) { /* a forked child: the parent's mapping and slot are not ours */
        d.sh = nullptr;
        d.slot = -1;
        d.fd = -1;
    }
    char key[64];
    const char *k = getenv("ORBIT_CUDA_EMU_GPU_KEY");
    if (k && *k) {
        size_t n = 0;
        for (; k[n] && n + 1 < sizeof key; n++)
            key[n] = (isalnum((unsigned char)k[n]) || k[n] == '-' || k[n] == '_') ? k[n] : '_';
        key[n] = 0;
    } else {
        snprintf(key, sizeof key, "s%d", (int)getsid(0));
    }
    static std::once_flag swept;
    std::call_once(swept, sweep_stale);
    snprintf(d.path, sizeof d.path, "%s/%s%u-%s-gpu%d", kDir, kPrefix, (unsigned)getuid(), key, device);
    for (int attempt = 0; attempt < 100; attempt++) {
        int fd = open(d.path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
        if (fd < 0)
            break;
        struct stat sb;
        if (flock(fd, LOCK_EX) != 0 || fstat(fd, &sb) != 0) {
            close(fd);
            break;
        }
        if (sb.st_nlink == 0) { /* the last user removed it as we opened it: open the new one */
            close(fd);
            continue;
        }
        if ((size_t)sb.st_size < sizeof(Shared) && ftruncate(fd, 4096) != 0) {
            close(fd);
            break;
        }
        void *p = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (p == MAP_FAILED) {
            close(fd);
            break;
        }
        Shared *sh = static_cast<Shared *>(p);
        int slot = -1;
        bool other = false;
        for (int i = 0; i < kSlots; i++) {
            const pid_t pid = sh->slot[i].pid.load();
            if (pid != 0 && pid != me && !dead(pid))
                other = true;
            else if (slot < 0 && (pid == 0 || pid == me || dead(pid)))
                slot = i;
        }
        if ((exclusive_process() && other) || slot < 0) {
            flock(fd, LOCK_UN);
            munmap(p, 4096);
            close(fd);
            if (slot < 0)
                fprintf(stderr, "orbit CUDA emulator: more than %d processes on emulated device %d\n", kSlots, device);
            if (refused)
                *refused = true;
            return nullptr;
        }
        sh->slot[slot].running.store(0);
        sh->slot[slot].want.store(0);
        sh->slot[slot].pid.store(me);
        flock(fd, LOCK_UN);
        d.sh = sh;
        d.fd = fd;
        d.slot = slot;
        d.pid = me;
        static std::once_flag once;
        std::call_once(once, [] { atexit(on_exit_release); });
        return &d;
    }
    fprintf(stderr, "orbit CUDA emulator: cannot share %s (%s); processes do not take turns on device %d\n",
            d.path, strerror(errno), device);
    d.broken = true;
    return nullptr;
}

/* At exit: give the devices up, free our slots, and remove a file nobody else uses. */
void on_exit_release()
{
    const pid_t me = getpid();
    for (Dev &d : devs) {
        if (!d.sh || d.pid != me)
            continue;
        Shared &s = *d.sh;
        Slot &x = s.slot[d.slot];
        x.running.store(0);
        x.want.store(0);
        uint64_t o = s.owner.load();
        if (pid_of(o) == me && s.owner.compare_exchange_strong(o, 0))
            bump(s);
        if (flock(d.fd, LOCK_EX) != 0)
            continue;
        x.pid.store(0);
        if (!in_use(s))
            unlink(d.path);
        flock(d.fd, LOCK_UN);
    }
}

} /* namespace */

bool device_open(int device)
{
    if (!exclusive_process())
        return true;
    bool refused = false;
    dev_get(device, &refused);
    return !refused;
}

void slice_grid_begin(int device)
{
    if (Dev *d = dev_get(device))
        d->sh->slot[d->slot].running.fetch_add(1, std::memory_order_acq_rel);
}

void slice_grid_end(int device)
{
    Dev *d = dev_get(device);
    if (!d)
        return;
    Shared &s = *d->sh;
    Slot &me = s.slot[d->slot];
    if (me.running.fetch_sub(1, std::memory_order_acq_rel) != 1)
        return;
    me.want.store(0, std::memory_order_release);
    uint64_t o = s.owner.load(std::memory_order_acquire);
    if (pid_of(o) == d->pid && s.owner.compare_exchange_strong(o, 0))
        bump(s); /* our last grid ended: the device is free for the others at once */
}

void slice_block_begin(int device)
{
    t_dev = dev_get(device);
    if (t_dev)
        acquire(*t_dev);
}

void slice_block_end() { t_dev = nullptr; }

void yield_point()
{
    Dev *d = t_dev;
    if (d) {
        const uint64_t o = d->sh->owner.load(std::memory_order_relaxed);
        if (pid_of(o) != d->pid || expired(o))
            acquire(*d);
    }
    sched_yield();
}

} /* namespace orb_emu */
