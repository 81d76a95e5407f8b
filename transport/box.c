#include "transport/box.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "transport/segment.h"

#define BOX_MAGIC 0x4f52424fu /* "ORBO" */
#define BOX_VERSION 1
#define BOX_BYTES 4096

_Static_assert(sizeof(orb_box_t) <= BOX_BYTES, "the box fits its page");

static long futex(_Atomic uint32_t *addr, int op, uint32_t val, const struct timespec *ts)
{
    /* Not FUTEX_PRIVATE: the word lives in memory shared between processes. */
    return syscall(SYS_futex, (uint32_t *)addr, op, val, ts, NULL, 0);
}

/* This process is registered for MEMBARRIER_CMD_GLOBAL_EXPEDITED: a sleeper's membarrier
 * fences its threads (see box.h). Set once, before any box exists. */
static int light_self;
static pthread_once_t light_once = PTHREAD_ONCE_INIT;

static void light_init(void)
{
    const long cmds = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0);
    const long need = MEMBARRIER_CMD_GLOBAL_EXPEDITED | MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED;
    light_self = cmds > 0 && (cmds & need) == need &&
                 syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED, 0) == 0;
}

void orb_box_wake(orb_box_t *b)
{
    if (light_self && atomic_load_explicit(&b->light, memory_order_relaxed))
        atomic_signal_fence(memory_order_seq_cst); /* the sleeper's membarrier fences this CPU */
    else
        atomic_thread_fence(memory_order_seq_cst);
    if (atomic_load_explicit(&b->waiters, memory_order_relaxed)) {
        atomic_fetch_add_explicit(&b->doorbell, 1, memory_order_seq_cst);
        futex(&b->doorbell, FUTEX_WAKE, INT_MAX, NULL);
    }
}

uint32_t orb_box_arm(orb_box_t *b)
{
    const uint32_t seen = atomic_load_explicit(&b->doorbell, memory_order_seq_cst);
    atomic_fetch_add_explicit(&b->waiters, 1, memory_order_seq_cst);
    /* A failure (none is documented once registered) turns the light wakes off for good: this
     * sleep may then miss a wake-up until its timeout, later ones cannot. */
    if (atomic_load_explicit(&b->light, memory_order_relaxed) &&
        syscall(SYS_membarrier, MEMBARRIER_CMD_GLOBAL_EXPEDITED, 0) != 0)
        atomic_store_explicit(&b->light, 0, memory_order_seq_cst);
    return seen;
}

void orb_box_disarm(orb_box_t *b) { atomic_fetch_sub_explicit(&b->waiters, 1, memory_order_seq_cst); }

void orb_box_wait(orb_box_t *b, uint32_t seen, double timeout_s)
{
    struct timespec ts = {(time_t)timeout_s, (long)((timeout_s - (double)(time_t)timeout_s) * 1e9)};
    if (atomic_load_explicit(&b->doorbell, memory_order_seq_cst) == seen)
        futex(&b->doorbell, FUTEX_WAIT, seen, &ts);
    orb_box_disarm(b);
}

void orb_box_post(orb_box_t *b, int from, orb_status_t st, const char *msg)
{
    int32_t expect = 0;
    /* Claim the box with a placeholder, write the message, then publish the status. */
    if (atomic_compare_exchange_strong(&b->err_status, &expect, (int32_t)ORB_ERR_IN_PROGRESS)) {
        b->err_from = from;
        snprintf(b->err_msg, sizeof b->err_msg, "%s", msg);
        atomic_store(&b->err_status, (int32_t)st);
    }
    orb_box_wake(b);
}

orb_status_t orb_box_error(const orb_box_t *b, char *msg, size_t len)
{
    int32_t posted = atomic_load(&b->err_status);
    if (posted == 0 || posted == ORB_ERR_IN_PROGRESS)
        return ORB_OK;
    snprintf(msg, len, "%s", b->err_msg);
    return (orb_status_t)posted;
}

orb_status_t orb_box_create(orb_box_t **out, const char *name, int rank, int nranks, char *err, size_t errlen)
{
    *out = NULL;
    int fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
    if (fd < 0) {
        snprintf(err, errlen, "cannot create shared memory %s: %s (is /dev/shm mounted and writable?)", name,
                 strerror(errno));
        return ORB_ERR_SYSTEM;
    }
    if (ftruncate(fd, BOX_BYTES) != 0) {
        snprintf(err, errlen, "cannot size shared memory %s to %d bytes: %s", name, BOX_BYTES, strerror(errno));
        close(fd);
        shm_unlink(name);
        return ORB_ERR_NO_MEMORY;
    }
    void *p = mmap(NULL, BOX_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) {
        snprintf(err, errlen, "cannot map shared memory %s: %s", name, strerror(errno));
        shm_unlink(name);
        return ORB_ERR_NO_MEMORY;
    }
    orb_box_t *b = p;
    b->rank = rank;
    b->nranks = nranks;
    b->version = BOX_VERSION;
    pthread_once(&light_once, light_init);
    b->light = light_self;
    atomic_thread_fence(memory_order_release);
    b->magic = BOX_MAGIC;
    *out = b;
    return ORB_OK;
}

orb_status_t orb_box_attach(orb_box_t **out, const char *name, int peer, int nranks, char *err, size_t errlen)
{
    void *p;
    orb_status_t st = orb_segment_map_peer(name, peer, BOX_BYTES, &p, err, errlen);
    *out = NULL;
    if (st != ORB_OK)
        return st;
    orb_box_t *b = p;
    if (b->magic != BOX_MAGIC || b->version != BOX_VERSION || b->rank != peer || b->nranks != nranks) {
        snprintf(err, errlen, "rank %d's shared memory %s is not what it should be (another job with the same secret?)",
                 peer, name);
        munmap(p, BOX_BYTES);
        return ORB_ERR_PROTOCOL;
    }
    *out = b;
    return ORB_OK;
}

void orb_box_unlink(const char *name) { shm_unlink(name); }

void orb_box_release(orb_box_t *b, int close)
{
    if (!b)
        return;
    if (close) {
        atomic_store(&b->closed, 1);
        orb_box_wake(b);
    }
    munmap(b, BOX_BYTES);
}
