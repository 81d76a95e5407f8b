#include "shm.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "core/log.h"

#define SHM_MAGIC 0x4f52534du /* "ORSM" */
#define SHM_VERSION 1
#define HDR_BYTES 4096

_Static_assert(sizeof(orb_shm_hdr_t) <= HDR_BYTES, "header fits its page");

static size_t round_up(size_t v, size_t a) { return (v + a - 1) / a * a; }

static orb_fifo_ctrl_t *fifo_at(orb_shm_hdr_t *h, size_t fifo_bytes, int nch, int src, int ch)
{
    return (orb_fifo_ctrl_t *)((char *)h + HDR_BYTES + ((size_t)src * (size_t)nch + (size_t)ch) * fifo_bytes);
}

/* ---- the ops table ------------------------------------------------------------------ */

static orb_slot_hdr_t *shm_send_acquire(orb_conn_t *c)
{
    uint64_t tail = atomic_load_explicit(&c->ctrl->tail, memory_order_acquire);
    if (c->pos - tail >= c->nslots)
        return NULL;
    return (orb_slot_hdr_t *)(c->slots + (c->pos % c->nslots) * c->slot_stride);
}

static void shm_send_post(orb_conn_t *c)
{
    atomic_store_explicit(&c->ctrl->head, ++c->pos, memory_order_release);
    orb_shm_ring(c->wake);
}

static orb_slot_hdr_t *shm_recv_acquire(orb_conn_t *c)
{
    uint64_t head = atomic_load_explicit(&c->ctrl->head, memory_order_acquire);
    if (head == c->pos)
        return NULL;
    return (orb_slot_hdr_t *)(c->slots + (c->pos % c->nslots) * c->slot_stride);
}

static void shm_recv_release(orb_conn_t *c)
{
    atomic_store_explicit(&c->ctrl->tail, ++c->pos, memory_order_release);
    orb_shm_ring(c->wake);
}

const orb_transport_ops_t orb_shm_ops = {
    .name = "shm",
    .send_acquire = shm_send_acquire,
    .send_post = shm_send_post,
    .recv_acquire = shm_recv_acquire,
    .recv_release = shm_recv_release,
};

/* ---- doorbell ----------------------------------------------------------------------- */

static long futex(_Atomic uint32_t *addr, int op, uint32_t val, const struct timespec *ts)
{
    /* Not FUTEX_PRIVATE: the word lives in memory shared between processes. */
    return syscall(SYS_futex, (uint32_t *)addr, op, val, ts, NULL, 0);
}

void orb_shm_ring(orb_shm_hdr_t *h)
{
    atomic_fetch_add_explicit(&h->doorbell, 1, memory_order_seq_cst);
    if (atomic_load_explicit(&h->waiters, memory_order_seq_cst))
        futex(&h->doorbell, FUTEX_WAKE, INT_MAX, NULL);
}

void orb_shm_wait(orb_shm_t *s, uint32_t seen, double timeout_s)
{
    struct timespec ts = {(time_t)timeout_s, (long)((timeout_s - (double)(time_t)timeout_s) * 1e9)};
    atomic_fetch_add_explicit(&s->self->waiters, 1, memory_order_seq_cst);
    if (atomic_load_explicit(&s->self->doorbell, memory_order_seq_cst) == seen)
        futex(&s->self->doorbell, FUTEX_WAIT, seen, &ts);
    atomic_fetch_sub_explicit(&s->self->waiters, 1, memory_order_seq_cst);
}

void orb_shm_post_error(orb_shm_t *s, int peer, orb_status_t st, const char *msg)
{
    orb_shm_hdr_t *h = s->peers ? s->peers[peer] : NULL;
    if (!h)
        return;
    int32_t expect = 0;
    /* Claim the box with a placeholder, write the message, then publish the status. */
    if (atomic_compare_exchange_strong(&h->err_status, &expect, (int32_t)ORB_ERR_IN_PROGRESS)) {
        h->err_from = s->rank;
        snprintf(h->err_msg, sizeof h->err_msg, "%s", msg);
        atomic_store(&h->err_status, (int32_t)st);
    }
    orb_shm_ring(h);
}

/* ---- segments ----------------------------------------------------------------------- */

orb_status_t orb_shm_create(orb_shm_t *s, const char *name, int rank, int nranks, int nchannels,
                            uint32_t nslots, size_t slot_bytes, char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    s->rank = rank;
    s->nranks = nranks;
    s->nchannels = nchannels;
    s->nslots = nslots;
    s->slot_bytes = slot_bytes;
    s->fifo_bytes = round_up(sizeof(orb_fifo_ctrl_t) + (size_t)nslots * (sizeof(orb_slot_hdr_t) + slot_bytes), 4096);
    s->seg_bytes = HDR_BYTES + (size_t)nranks * (size_t)nchannels * s->fifo_bytes;
    snprintf(s->name, sizeof s->name, "%s", name);
    s->peers = calloc((size_t)nranks, sizeof *s->peers);
    if (!s->peers)
        return ORB_ERR_NO_MEMORY;
    int fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
    if (fd < 0) {
        snprintf(err, errlen, "cannot create shared memory %s: %s (is /dev/shm mounted and writable?)",
                 name, strerror(errno));
        free(s->peers);
        return ORB_ERR_SYSTEM;
    }
    /* ftruncate is sparse: only the FIFOs that carry data take pages. */
    if (ftruncate(fd, (off_t)s->seg_bytes) != 0) {
        snprintf(err, errlen, "cannot size shared memory %s to %zu bytes: %s", name, s->seg_bytes, strerror(errno));
        close(fd);
        shm_unlink(name);
        free(s->peers);
        return ORB_ERR_NO_MEMORY;
    }
    void *p = mmap(NULL, s->seg_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) {
        snprintf(err, errlen, "cannot map shared memory %s: %s", name, strerror(errno));
        shm_unlink(name);
        free(s->peers);
        return ORB_ERR_NO_MEMORY;
    }
    s->self = p;
    s->self->rank = rank;
    s->self->nranks = nranks;
    s->self->nchannels = nchannels;
    s->self->nslots = nslots;
    s->self->slot_bytes = slot_bytes;
    s->self->fifo_bytes = s->fifo_bytes;
    s->self->version = SHM_VERSION;
    atomic_thread_fence(memory_order_release);
    s->self->magic = SHM_MAGIC;
    s->peers[rank] = s->self;
    return ORB_OK;
}

orb_status_t orb_shm_attach(orb_shm_t *s, int peer, const char *peer_name, char *err, size_t errlen)
{
    int fd = shm_open(peer_name, O_RDWR | O_CLOEXEC, 0);
    if (fd < 0) {
        snprintf(err, errlen, "cannot open rank %d's shared memory %s: %s (if the ranks are on different "
                              "hosts that look alike, give each host its own ORBIT_HOSTID)",
                 peer, peer_name, strerror(errno));
        return ORB_ERR_SYSTEM;
    }
    void *p = mmap(NULL, s->seg_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) {
        snprintf(err, errlen, "cannot map rank %d's shared memory: %s", peer, strerror(errno));
        return ORB_ERR_NO_MEMORY;
    }
    orb_shm_hdr_t *h = p;
    if (h->magic != SHM_MAGIC || h->version != SHM_VERSION || h->rank != peer || h->nranks != s->nranks) {
        snprintf(err, errlen, "rank %d's shared memory %s is not what it should be (another job with the same secret?)",
                 peer, peer_name);
        munmap(p, s->seg_bytes);
        return ORB_ERR_PROTOCOL;
    }
    if (h->nchannels != s->nchannels || h->nslots != s->nslots || h->slot_bytes != s->slot_bytes) {
        snprintf(err, errlen, "rank %d uses %d channels x %u slots x %llu bytes, rank %d uses %d x %u x %zu: "
                              "set ORBIT_NCHANNELS / ORBIT_SHM_SLOTS / ORBIT_SHM_SLOT_BYTES alike on every rank",
                 peer, h->nchannels, h->nslots, (unsigned long long)h->slot_bytes, s->rank, s->nchannels,
                 s->nslots, s->slot_bytes);
        munmap(p, s->seg_bytes);
        return ORB_ERR_MISMATCH;
    }
    s->peers[peer] = h;
    return ORB_OK;
}

void orb_shm_unlink(orb_shm_t *s)
{
    if (!s->unlinked && s->self) {
        shm_unlink(s->name);
        s->unlinked = 1;
    }
}

void orb_shm_connect(orb_shm_t *s, int peer, int ch, orb_conn_t *send, orb_conn_t *recv)
{
    size_t stride = sizeof(orb_slot_hdr_t) + s->slot_bytes;
    orb_fifo_ctrl_t *out = fifo_at(s->peers[peer], s->fifo_bytes, s->nchannels, s->rank, ch);
    orb_fifo_ctrl_t *in = fifo_at(s->self, s->fifo_bytes, s->nchannels, peer, ch);
    *send = (orb_conn_t){.ops = &orb_shm_ops, .peer = peer, .channel = ch, .ctrl = out,
                         .slots = (char *)(out + 1), .slot_stride = stride, .slot_bytes = s->slot_bytes,
                         .nslots = s->nslots, .pos = atomic_load(&out->head), .wake = s->peers[peer]};
    *recv = (orb_conn_t){.ops = &orb_shm_ops, .peer = peer, .channel = ch, .ctrl = in,
                         .slots = (char *)(in + 1), .slot_stride = stride, .slot_bytes = s->slot_bytes,
                         .nslots = s->nslots, .pos = atomic_load(&in->tail), .wake = s->peers[peer]};
}

void orb_shm_destroy(orb_shm_t *s)
{
    if (!s->peers)
        return;
    if (s->self) {
        atomic_store(&s->self->closed, 1);
        for (int r = 0; r < s->nranks; r++)
            if (s->peers[r] && r != s->rank)
                orb_shm_ring(s->peers[r]); /* wake anyone still waiting on us */
    }
    orb_shm_unlink(s);
    for (int r = 0; r < s->nranks; r++)
        if (s->peers[r])
            munmap(s->peers[r], s->seg_bytes);
    free(s->peers);
    s->peers = NULL;
    s->self = NULL;
}
