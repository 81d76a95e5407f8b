#include "transport/shm/shm.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/log.h"
#include "core/prefetch.h"
#include "core/proc.h"
#include "transport/segment.h"
#include "transport/endpoint.h"

#define SHM_MAGIC 0x4f52534du /* "ORSM" */
#define SHM_VERSION 2
#define HDR_BYTES 4096

_Static_assert(sizeof(orb_shm_hdr_t) <= HDR_BYTES, "header fits its page");

static size_t round_up(size_t v, size_t a) { return (v + a - 1) / a * a; }

static orb_fifo_ctrl_t *fifo_at(orb_shm_hdr_t *h, size_t fifo_bytes, int nch, int src, int ch)
{
    return (orb_fifo_ctrl_t *)((char *)h + HDR_BYTES + ((size_t)src * (size_t)nch + (size_t)ch) * fifo_bytes);
}

/* ---- the ops table ------------------------------------------------------------------ */

/* The receiver polls the stamp of the slot it waits for (orb_slot_hdr_t.stamp), not the
 * FIFO's head, and the sender reads the receiver's tail only when its last reading says the
 * ring is full. A cache line that moves between cores costs 100-300 ns: a small piece used to
 * cost the receiver two such misses in turn (the head, then the slot) and the sender one more
 * (the tail the receiver had just written); now the receiver's first look at the slot is the
 * only one. A stamp is the piece's place in the FIFO + 1, whichever ring it went through, and
 * each ring's slots hold headers only, at fixed places: the one slot whose stamp is the next
 * place is the next piece. */
/* Is a ring of n slots, pos of them posted, full? Reads the receiver's count of the ring's
 * released slots (tail) only when the one last read (seen) says so. */
static inline int ring_full(uint64_t pos, uint64_t *seen, _Atomic uint64_t *tail, uint32_t n)
{
    if (pos - *seen < n)
        return 0;
    *seen = atomic_load_explicit(tail, memory_order_acquire);
    return pos - *seen >= n;
}

/* ---- releases told in batches ------------------------------------------------------- */

/* A receiver that told its sender of every slot it read stored into the line the sender reads
 * when its small ring looks full, which is every call once the sender runs a ring ahead (a
 * root's back-to-back small calls): each store then waited for that line to come back from the
 * far core, the stores after it waited in line, and the receiver, the slower side already, got
 * slower still (docs/perf.md, 2026-12-07). So while the sender's next piece is already in, a
 * receiver tells it of the small slots it read only every batch of them (recv_release);
 * otherwise at once, as before: a receiver that has taken all there is holds nothing back, so
 * a peer waiting for its last piece to be taken (orb_host_settle), or a rank that leaves, finds
 * it told. One that holds some back will be back for the piece that waits; if it waits for
 * anything else first, it tells them before it waits (the endpoint's flush, from the
 * executor's idle pass), or a sender blocked on those slots could wait on it while it waits in
 * turn. The endpoint lists the connections holding some back. */
struct orb_held {
    int n;
    orb_conn_t **conn; /* as many as the endpoint has receive connections */
};

static void tell(orb_conn_t *c)
{
    c->told = c->pos;
    atomic_store_explicit(&c->ctrl->tail_small, c->pos_small, memory_order_release);
    atomic_store_explicit(&c->ctrl->tail, c->pos, memory_order_release);
    orb_box_wake(c->wake);
}

static orb_slot_hdr_t *shm_send_acquire(orb_conn_t *c, size_t bytes)
{
    if (c->nsmall && bytes <= ORB_SHM_SMALL_BYTES) {
        if (ring_full(c->pos_small, &c->small_seen, &c->ctrl->tail_small, c->nsmall))
            return NULL;
        c->in_small = 1;
        return c->cur_small;
    }
    if (ring_full(c->pos_large, &c->tail_seen, &c->ctrl->tail_large, c->nslots))
        return NULL;
    c->in_small = 0;
    return c->cur;
}

/* The slot just sent or taken is done with: its ring's position and slot move on together
 * (without a divide), and the FIFO's. Returns the ring's new position. */
static uint64_t advance(orb_conn_t *c)
{
    c->pos++;
    if (c->in_small) {
        c->cur_small = (orb_slot_hdr_t *)((char *)c->cur_small + ORB_SHM_SMALL_STRIDE);
        if (c->cur_small == (orb_slot_hdr_t *)(c->small + (size_t)c->nsmall * ORB_SHM_SMALL_STRIDE))
            c->cur_small = (orb_slot_hdr_t *)c->small;
        return ++c->pos_small;
    }
    c->cur = (orb_slot_hdr_t *)((char *)c->cur + c->slot_stride);
    if (c->cur == (orb_slot_hdr_t *)(c->slots + (size_t)c->nslots * c->slot_stride))
        c->cur = (orb_slot_hdr_t *)c->slots;
    return ++c->pos_large;
}

/* The next small slot was last read by the receiver, so its lines sit in the receiver's cache:
 * the next piece's stores into them wait for that core to give them up, the stores after them
 * wait in line, and the first load that must see one of those (a struct copied with wider loads
 * than it was stored with: the front end's first act in the next call) waits for the lot. On
 * the 2-core Intel VM, whose cores share no cache, one such load took a fifth of a broadcast
 * root's samples. Asked for now, the lines move while the call returns. Two lines, the header and
 * the payload's first: taking all a piece of the last one's size fills cost more at 512 B than
 * it saved (docs/perf.md, 2026-12-07). Whether the CPU runs the prefetch: one answer a process,
 * set at every connect (the same each time; relaxed, so a plain load here). */
static _Atomic int shm_prefetchw;

static void shm_send_post(orb_conn_t *c)
{
    __atomic_store_n(&(c->in_small ? c->cur_small : c->cur)->stamp, c->pos + 1, __ATOMIC_RELEASE);
    advance(c);
    if (c->in_small && atomic_load_explicit(&shm_prefetchw, memory_order_relaxed)) {
        orb_prefetch_write(c->cur_small);
        orb_prefetch_write((const char *)c->cur_small + sizeof(orb_slot_hdr_t));
    }
    orb_box_wake(c->wake);
}

static orb_slot_hdr_t *shm_recv_acquire(orb_conn_t *c)
{
    const uint64_t want = c->pos + 1;
    if (c->nsmall && __atomic_load_n(&c->cur_small->stamp, __ATOMIC_ACQUIRE) == want) {
        c->in_small = 1;
        return c->cur_small;
    }
    if (__atomic_load_n(&c->cur->stamp, __ATOMIC_ACQUIRE) == want) {
        c->in_small = 0;
        return c->cur;
    }
    c->waited = 1;
    return NULL;
}

static void shm_recv_release(orb_conn_t *c)
{
    const int small = c->in_small;
    const uint64_t ring = advance(c);
    /* held back: a small slot, fewer than batch untold, and the next piece already in the small
     * ring (a sender a ring ahead; a receiver that has taken a call's last piece tells at once,
     * so a peer that waits for it to be taken, or a rank that leaves now, leaves nothing untold).
     * Only a receiver that found this piece at its first look asks: one that waited for it is
     * not behind, and its look at the next slot would take that line from the sender, who took
     * it for writing after its last post (send_post), just before the sender writes it. */
    const int waited = c->waited;
    c->waited = 0;
    if (small && !waited && c->pos - c->told < c->batch &&
        __atomic_load_n(&c->cur_small->stamp, __ATOMIC_RELAXED) == c->pos + 1) {
        if (!c->on_held) {
            c->held->conn[c->held->n++] = c;
            c->on_held = 1;
        }
        return;
    }
    if (!small)
        atomic_store_explicit(&c->ctrl->tail_large, ring, memory_order_release);
    tell(c);
}

const orb_conn_ops_t orb_shm_conn_ops = {
    .name = "shm",
    .send_acquire = shm_send_acquire,
    .send_post = shm_send_post,
    .recv_acquire = shm_recv_acquire,
    .recv_release = shm_recv_release,
    .tail_is_receivers = 1,
};

/* ---- segments ----------------------------------------------------------------------- */

typedef struct {
    int rank, nranks, nchannels;
    uint32_t nslots, nsmall;
    size_t slot_bytes;
    size_t fifo_bytes, seg_bytes;
    char name[80];
    int unlinked;
    orb_shm_hdr_t *self;
    orb_shm_hdr_t **peers;     /* mapped segments; NULL for ranks it does not connect */
    orb_box_t *box;            /* mine */
    orb_box_t *const *boxes;   /* every rank's, as the communicator maps them */
    const orb_card_t *cards;   /* from connect: pids and host names for liveness */
    uint32_t release_batch;    /* ORBIT_SHM_RELEASE_BATCH */
    struct orb_held held;      /* receive connections holding releases back */
} shm_ep_t;

static void shm_unlink_own(shm_ep_t *s)
{
    if (!s->unlinked && s->self) {
        shm_unlink(s->name);
        s->unlinked = 1;
    }
}

static void shm_destroy(orb_endpoint_t *ep)
{
    shm_ep_t *s = (shm_ep_t *)ep;
    if (!s)
        return;
    shm_unlink_own(s);
    for (int r = 0; r < s->nranks && s->peers; r++)
        if (s->peers[r])
            munmap(s->peers[r], s->seg_bytes);
    free(s->peers);
    free(s->held.conn);
    free(s);
}

static orb_status_t shm_create(orb_endpoint_t **out, const orb_transport_args_t *a, orb_card_t *card, char *err,
                               size_t errlen)
{
    (void)card; /* peers find the segment by the card's name prefix */
    *out = NULL;
    shm_ep_t *s = calloc(1, sizeof *s);
    if (!s)
        return ORB_ERR_NO_MEMORY;
    s->rank = a->rank;
    s->nranks = a->nranks;
    s->nchannels = a->nchannels;
    s->nslots = a->nslots;
    s->slot_bytes = a->slot_bytes;
    s->nsmall = a->nsmall;
    s->release_batch = a->release_batch;
    s->box = a->box;
    s->boxes = a->boxes;
    /* the control lines, the large slots, the small ring */
    s->fifo_bytes = round_up(sizeof(orb_fifo_ctrl_t) + (size_t)a->nslots * (sizeof(orb_slot_hdr_t) + a->slot_bytes) +
                                 (size_t)a->nsmall * ORB_SHM_SMALL_STRIDE,
                             4096);
    s->seg_bytes = HDR_BYTES + (size_t)a->nranks * (size_t)a->nchannels * s->fifo_bytes;
    snprintf(s->name, sizeof s->name, "%s-fifo", a->name);
    s->peers = calloc((size_t)a->nranks, sizeof *s->peers);
    if (!s->peers) {
        free(s);
        return ORB_ERR_NO_MEMORY;
    }
    s->unlinked = 1; /* nothing to unlink until the segment exists */
    int fd = shm_open(s->name, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
    if (fd < 0) {
        snprintf(err, errlen, "cannot create shared memory %s: %s (is /dev/shm mounted and writable?)",
                 s->name, strerror(errno));
        shm_destroy((orb_endpoint_t *)s);
        return ORB_ERR_SYSTEM;
    }
    s->unlinked = 0;
    /* ftruncate is sparse: only the FIFOs that carry data take pages. */
    if (ftruncate(fd, (off_t)s->seg_bytes) != 0) {
        snprintf(err, errlen, "cannot size shared memory %s to %zu bytes: %s", s->name, s->seg_bytes,
                 strerror(errno));
        close(fd);
        shm_destroy((orb_endpoint_t *)s);
        return ORB_ERR_NO_MEMORY;
    }
    void *p = mmap(NULL, s->seg_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) {
        snprintf(err, errlen, "cannot map shared memory %s: %s", s->name, strerror(errno));
        shm_destroy((orb_endpoint_t *)s);
        return ORB_ERR_NO_MEMORY;
    }
    s->self = p;
    s->self->rank = a->rank;
    s->self->nranks = a->nranks;
    s->self->nchannels = a->nchannels;
    s->self->nslots = a->nslots;
    s->self->slot_bytes = a->slot_bytes;
    s->self->nsmall = a->nsmall;
    s->self->fifo_bytes = s->fifo_bytes;
    s->self->version = SHM_VERSION;
    atomic_thread_fence(memory_order_release);
    s->self->magic = SHM_MAGIC;
    s->peers[a->rank] = s->self;
    *out = (orb_endpoint_t *)s;
    return ORB_OK;
}

static int shm_reaches(const orb_card_t *me, const orb_card_t *peer) { return me->host_id == peer->host_id; }

static orb_status_t attach(shm_ep_t *s, int peer, const char *prefix, char *err, size_t errlen)
{
    char name[80];
    snprintf(name, sizeof name, "%s-fifo", prefix);
    void *p;
    orb_status_t st = orb_segment_map_peer(name, peer, s->seg_bytes, &p, err, errlen);
    if (st != ORB_OK)
        return st;
    orb_shm_hdr_t *h = p;
    /* (the ranks' settings agreed on their cards at init, comm_init.c: a FIFO geometry that
     * differs here is not a setting's, and reading past it would not be safe) */
    if (h->magic != SHM_MAGIC || h->version != SHM_VERSION || h->rank != peer || h->nranks != s->nranks ||
        h->nchannels != s->nchannels || h->nslots != s->nslots || h->slot_bytes != s->slot_bytes ||
        h->nsmall != s->nsmall) {
        snprintf(err, errlen, "rank %d's shared memory %s is not what it should be (another job with the same secret?)",
                 peer, name);
        munmap(p, s->seg_bytes);
        return ORB_ERR_PROTOCOL;
    }
    s->peers[peer] = h;
    return ORB_OK;
}

static orb_status_t shm_connect(orb_endpoint_t *ep, const orb_card_t *cards, const int *peers, int npeers,
                                orb_conn_t *send, orb_conn_t *recv, double deadline, char *err, size_t errlen)
{
    (void)deadline; /* every segment exists before the bootstrap completes */
    shm_ep_t *s = (shm_ep_t *)ep;
    s->cards = cards;
    for (int i = 0; i < npeers; i++) {
        orb_status_t st = attach(s, peers[i], cards[peers[i]].shm_name, err, errlen);
        if (st != ORB_OK)
            return st;
    }
    const size_t stride = sizeof(orb_slot_hdr_t) + s->slot_bytes, large = (size_t)s->nslots * stride;
    atomic_store_explicit(&shm_prefetchw, orb_cpu_prefetchw(), memory_order_relaxed);
    /* a batch of at most a quarter of the ring: the sender, told of it, has that much room while
     * three quarters of a ring of pieces still wait */
    uint32_t batch = s->release_batch < s->nsmall / 4 ? s->release_batch : s->nsmall / 4;
    if (npeers > 0 && batch > 1) {
        free(s->held.conn);
        s->held.n = 0;
        if (!(s->held.conn = calloc((size_t)npeers * (size_t)s->nchannels, sizeof *s->held.conn)))
            batch = 0; /* (then every release is told at once: nothing is lost but the batching) */
    }
    if (batch < 2)
        batch = 0;
    for (int i = 0; i < npeers; i++) {
        int peer = peers[i];
        for (int ch = 0; ch < s->nchannels; ch++) {
            size_t ci = (size_t)peer * (size_t)s->nchannels + (size_t)ch;
            orb_fifo_ctrl_t *out = fifo_at(s->peers[peer], s->fifo_bytes, s->nchannels, s->rank, ch);
            orb_fifo_ctrl_t *in = fifo_at(s->self, s->fifo_bytes, s->nchannels, peer, ch);
            char *os = (char *)(out + 1), *is = (char *)(in + 1);
            send[ci] = (orb_conn_t){.ops = &orb_shm_conn_ops, .peer = peer, .channel = ch, .ctrl = out,
                                    .slots = os, .cur = (orb_slot_hdr_t *)os, .slot_stride = stride,
                                    .slot_bytes = s->slot_bytes, .nslots = s->nslots, .wake = s->boxes[peer],
                                    .small = os + large, .cur_small = (orb_slot_hdr_t *)(os + large),
                                    .nsmall = s->nsmall};
            recv[ci] = (orb_conn_t){.ops = &orb_shm_conn_ops, .peer = peer, .channel = ch, .ctrl = in,
                                    .slots = is, .cur = (orb_slot_hdr_t *)is, .slot_stride = stride,
                                    .slot_bytes = s->slot_bytes, .nslots = s->nslots, .wake = s->boxes[peer],
                                    .small = is + large, .cur_small = (orb_slot_hdr_t *)(is + large),
                                    .nsmall = s->nsmall, .batch = batch, .held = &s->held};
        }
    }
    return ORB_OK;
}

static void shm_ready(orb_endpoint_t *ep) { shm_unlink_own((shm_ep_t *)ep); }

static void shm_flush(orb_endpoint_t *ep)
{
    struct orb_held *h = &((shm_ep_t *)ep)->held;
    for (int i = 0; i < h->n; i++) {
        orb_conn_t *c = h->conn[i];
        if (c->told != c->pos) /* (one told at a batch since it was listed: nothing left) */
            tell(c);
        c->on_held = 0;
    }
    h->n = 0;
}

static void shm_post_error(orb_endpoint_t *ep, int peer, orb_status_t st, const char *msg)
{
    shm_ep_t *s = (shm_ep_t *)ep;
    if (s->peers[peer] && s->boxes[peer])
        orb_box_post(s->boxes[peer], s->rank, st, msg);
}

/* Rank p left (destroyed its communicator, or died) while this rank waited. A rank that failed
 * posted its error to every box before it left: ours, read again now, says why (the caller's
 * look at it may have come just before the post); else p's own box does. ORB_OK: neither. */
static orb_status_t why_left(const shm_ep_t *s, int p, char *err, size_t len)
{
    orb_status_t st = orb_box_error(s->box, err, len);
    return st != ORB_OK ? st : orb_box_error(s->boxes[p], err, len);
}

static orb_status_t shm_check_alive(orb_endpoint_t *ep, const int *waiting_on, int n, int *lost, char *err,
                                    char *note, size_t len)
{
    shm_ep_t *s = (shm_ep_t *)ep;
    note[0] = 0;
    for (int i = 0; i < n; i++) {
        int p = waiting_on[i];
        if (p != s->rank && s->peers[p] && atomic_load(&s->boxes[p]->closed)) {
            *lost = p;
            orb_status_t st = why_left(s, p, err, len);
            if (st != ORB_OK)
                return st;
            snprintf(err, len, "rank %d (%s) destroyed its communicator while rank %d still waited for it: "
                               "did it skip a collective call?",
                     p, s->cards[p].hostname, s->rank);
            return ORB_ERR_PEER_LOST;
        }
    }
    for (int p = 0; p < s->nranks; p++) {
        if (p == s->rank || !s->peers[p])
            continue;
        const orb_card_t *cd = &s->cards[p];
        if (atomic_load(&s->boxes[p]->closed) || orb_proc_alive(cd->pid, cd->pid_start))
            continue;
        *lost = p;
        /* A survivor that reported a loss and exited is not the loss: whoever noticed first
         * posted it to us before leaving (our box names the rank that died), or its own box
         * says why it left */
        orb_status_t st = why_left(s, p, err, len);
        if (st != ORB_OK)
            return st;
        snprintf(err, len, "rank %d (pid %d on %s) died while rank %d waited in a collective", p, cd->pid,
                 cd->hostname, s->rank);
        snprintf(note, len, "rank %d (pid %d on %s) died (noticed by rank %d)", p, cd->pid, cd->hostname,
                 s->rank);
        return ORB_ERR_PEER_LOST;
    }
    return ORB_OK;
}

static void shm_abort(orb_endpoint_t *ep) { (void)ep; /* nothing to flush: the box wakes the executor */ }

/* A slot hand-over between cores costs about a cache-line round trip plus polling, a few
 * hundred ns to ~2 us; a copy through a shared slot runs at a fraction of memcpy speed since
 * every byte is written once and read once more. Defaults until measured (docs/transports.md). */
const orb_transport_t orb_shm_transport = {
    .name = "shm",
    .link = {.alpha_us = 1.5, .beta_gbps = 8.0},
    .create = shm_create,
    .reaches = shm_reaches,
    .connect = shm_connect,
    .ready = shm_ready,
    .flush = shm_flush,
    .post_error = shm_post_error,
    .check_alive = shm_check_alive,
    .abort = shm_abort,
    .destroy = shm_destroy,
};
