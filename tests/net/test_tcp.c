/* The TCP transport on its own: two ranks as threads of this process, talking over loopback
 * through net.h and the connection ops, no communicator around them.
 *
 *   test_tcp wire      the wire checks and the stripe split, no sockets
 *   test_tcp data      pieces of every size both ways on every channel, FIFO wrap-around,
 *                      flow control with a slow reader (run with ORBIT_NSOCKS=1 and >1); also
 *                      with pieces posted as addresses in the sender (ORB_PIECE_REMOTE), which
 *                      must arrive as ordinary pieces
 *   test_tcp settle    address pieces the sockets could not take yet are copied into their
 *                      slots by settle: the sender's buffer changed afterwards, the reader
 *                      still gets what it held when the pieces were posted
 *   test_tcp guard     the executor (exec_cpu.c) on rank 0 runs a send from a buffer as an
 *                      address piece the full socket cannot take yet, then a receive into the
 *                      same bytes: it must settle the piece before it writes, so rank 1 gets
 *                      what the buffer held when the send was posted (an in-place all-to-all
 *                      on a congested link)
 *   test_tcp place     pieces the receiver asked for (recv_place) land at its addresses, whole,
 *                      striped or not; pieces of another size or call, flagged, not asked
 *                      for, or asked for and withdrawn stay in their slots; nothing else
 *                      is written to the buffer. Then a request withdrawn halfway through its
 *                      piece (the test writes the frames on the socket itself and stops in the
 *                      middle): the rest of the piece, the stripe begun and a later one, goes to
 *                      its slot, and the buffer keeps only what came before the withdrawal
 *   test_tcp errors    a posted error reaches on_error; a peer that leaves in good order is
 *                      lost only to a rank that waits for it; a crashed one at once (< 5 s)
 *   test_tcp handshake strangers at the listener are dropped; a settings mismatch fails both
 *                      sides with the reason
 * Prints "N passed, N failed". */
#include <arpa/inet.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "collectives/exec.h"
#include "core/clock.h"
#include "tests/common/exec_stubs.h"
#include "transport/tcp/tcp.h"
#include "transport/tcp/tcp_impl.h" /* the withdrawal check writes frames on a data socket itself */
#include "transport/tcp/tcp_wire.h"

#define NCH 2

static int passed, failed;

static void check(int ok, const char *what)
{
    if (ok) {
        passed++;
    } else {
        failed++;
        fprintf(stderr, "FAIL: %s\n", what);
    }
}

/* ---- one side ------------------------------------------------------------------------- */

typedef struct {
    int rank;
    orb_tcp_t *net;
    orb_card_t cards[2];
    orb_conn_t send[2 * NCH], recv[2 * NCH];
    _Atomic int wakes, errors;
    _Atomic int err_from, err_status;
    char err_msg[256];
    /* connect's outcome, run on its own thread */
    size_t slot_bytes;
    uint32_t nslots;
    orb_status_t st;
    char err[512];
} side_t;

static const uint8_t secret[ORB_SECRET_BYTES] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};

static void on_wake(void *arg)
{
    side_t *s = arg;
    atomic_fetch_add(&s->wakes, 1);
}

static void on_error(void *arg, int from, orb_status_t st, const char *msg)
{
    side_t *s = arg;
    snprintf(s->err_msg, sizeof s->err_msg, "%s", msg);
    atomic_store(&s->err_from, from);
    atomic_store(&s->err_status, st);
    atomic_fetch_add(&s->errors, 1);
}

static orb_status_t side_create(side_t *s, int rank, uint32_t nslots, size_t slot_bytes)
{
    memset(s, 0, sizeof *s);
    s->rank = rank;
    s->nslots = nslots;
    s->slot_bytes = slot_bytes;
    orb_tcp_callbacks_t cb = {.wake = on_wake, .on_error = on_error, .arg = s};
    s->cards[rank].rank = rank;
    snprintf(s->cards[rank].hostname, sizeof s->cards[rank].hostname, "side%d", rank);
    char err[256] = "";
    orb_status_t st = orb_tcp_create(&s->net, rank, 2, NCH, nslots, slot_bytes, secret, &cb, &s->cards[rank], err,
                                     sizeof err);
    if (st != ORB_OK)
        fprintf(stderr, "orb_tcp_create: %s\n", err);
    return st;
}

static void *connect_main(void *arg)
{
    side_t *s = arg;
    int peer = 1 - s->rank;
    s->st = orb_tcp_connect(s->net, s->cards, &peer, 1, s->send, s->recv, orb_now() + 10, s->err, sizeof s->err);
    return NULL;
}

/* Connect a and b to each other (cards exchanged by hand, as the bootstrap would). */
static void connect_pair(side_t *a, side_t *b)
{
    a->cards[1] = b->cards[1];
    b->cards[0] = a->cards[0];
    pthread_t ta, tb;
    pthread_create(&ta, NULL, connect_main, a);
    pthread_create(&tb, NULL, connect_main, b);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
}

static int make_pair(side_t *a, side_t *b, uint32_t nslots, size_t slot_bytes)
{
    if (side_create(a, 0, nslots, slot_bytes) != ORB_OK || side_create(b, 1, nslots, slot_bytes) != ORB_OK)
        return -1;
    connect_pair(a, b);
    if (a->st != ORB_OK || b->st != ORB_OK) {
        fprintf(stderr, "connect: rank 0: %s / rank 1: %s\n", a->err, b->err);
        return -1;
    }
    return 0;
}

/* ---- wire ----------------------------------------------------------------------------- */

static int mode_wire(void)
{
    char why[256];
    orb_tcp_hello_t h = {.magic = ORB_TCP_HELLO_MAGIC, .version = ORB_TCP_VERSION, .from = 0, .to = 1, .nranks = 2,
                         .channel = 1, .stripe = 1, .nchannels = 2, .nsocks = 2, .nslots = 8, .slot_bytes = 4096};
    memcpy(h.secret, secret, sizeof secret);
    check(orb_tcp_hello_check(&h, secret, 1, 2, 2, 8, 4096, why, sizeof why) == ORB_OK, "a good hello passes");
    orb_tcp_hello_t b = h;
    b.secret[3] ^= 1;
    check(orb_tcp_hello_check(&b, secret, 1, 2, 2, 8, 4096, why, sizeof why) == ORB_ERR_PROTOCOL &&
              strstr(why, "secret"), "a wrong secret is a stranger");
    b = h;
    b.magic = 0x47455420; /* "GET " */
    check(orb_tcp_hello_check(&b, secret, 1, 2, 2, 8, 4096, why, sizeof why) == ORB_ERR_PROTOCOL, "bad magic");
    b = h;
    b.to = 0;
    check(orb_tcp_hello_check(&b, secret, 1, 2, 2, 8, 4096, why, sizeof why) == ORB_ERR_PROTOCOL, "wrong addressee");
    b = h;
    b.from = 1;
    check(orb_tcp_hello_check(&b, secret, 1, 2, 2, 8, 4096, why, sizeof why) == ORB_ERR_PROTOCOL,
          "only the lower rank connects");
    b = h;
    b.stripe = 2;
    check(orb_tcp_hello_check(&b, secret, 1, 2, 2, 8, 4096, why, sizeof why) == ORB_ERR_PROTOCOL, "stripe range");
    b = h;
    b.nsocks = ORB_TCP_MAX_NSOCKS + 1;
    check(orb_tcp_hello_check(&b, secret, 1, 2, 2, 8, 4096, why, sizeof why) == ORB_ERR_PROTOCOL, "nsocks range");
    b = h;
    b.slot_bytes = 8192;
    check(orb_tcp_hello_check(&b, secret, 1, 2, 2, 8, 4096, why, sizeof why) == ORB_ERR_MISMATCH &&
              strstr(why, "ORBIT_SHM_SLOT_BYTES"), "a settings mismatch names the knobs");

    orb_tcp_frame_t f = {.magic = ORB_TCP_FRAME_MAGIC, .len = 100, .off = 50, .hdr = {.nbytes = 150}};
    check(orb_tcp_frame_check(&f, 4096, why, sizeof why) == ORB_OK, "a good frame passes");
    f.len = 101;
    check(orb_tcp_frame_check(&f, 4096, why, sizeof why) == ORB_ERR_PROTOCOL, "frame past its piece");
    f = (orb_tcp_frame_t){.magic = ORB_TCP_FRAME_MAGIC, .len = 0, .off = 0, .hdr = {.nbytes = 4097}};
    check(orb_tcp_frame_check(&f, 4096, why, sizeof why) == ORB_ERR_PROTOCOL, "piece larger than a slot");
    f = (orb_tcp_frame_t){.magic = ORB_TCP_FRAME_MAGIC, .len = 0xffffffffu, .off = 2, .hdr = {.nbytes = 4}};
    check(orb_tcp_frame_check(&f, 4096, why, sizeof why) == ORB_ERR_PROTOCOL, "no overflow in off + len");
    f.magic = 0;
    check(orb_tcp_frame_check(&f, 4096, why, sizeof why) == ORB_ERR_PROTOCOL, "frame magic");

    /* The stripes of any size tile it exactly, in order, and stripe 0 is never empty when
     * the piece is not. */
    int tiled = 1;
    for (int ns = 1; ns <= ORB_TCP_MAX_NSOCKS; ns++)
        for (uint32_t n = 0; n < (4u << 20); n = n * 3 + 1 + (n & 7)) {
            uint32_t next = 0;
            for (int k = 0; k < ns; k++) {
                uint32_t off, len;
                orb_tcp_stripe(n, ns, k, &off, &len);
                if (len && off != next)
                    tiled = 0;
                if (k == 0 && n && !len)
                    tiled = 0;
                next = len ? off + len : next;
            }
            if (next != n)
                tiled = 0;
        }
    check(tiled, "stripes tile every piece size");
    return 0;
}

/* ---- data ----------------------------------------------------------------------------- */

#define NPIECES 600

static uint32_t piece_len(int from, int ch, int i, size_t slot_bytes)
{
    uint32_t x = (uint32_t)(i * 2654435761u) ^ (uint32_t)(from * 977 + ch * 131);
    switch (i % 5) {
    case 0:
        return 0;
    case 1:
        return x % 64;
    case 2:
        return (uint32_t)slot_bytes;
    default:
        return x % (uint32_t)(slot_bytes + 1);
    }
}

static uint8_t piece_byte(int from, int ch, int i, uint32_t k) { return (uint8_t)(from * 31 + ch * 7 + i * 13 + k * 3 + (k >> 9)); }

typedef struct {
    side_t *s;
    int slow;   /* the receiver dawdles: the sender's FIFO and the sockets fill up */
    int direct; /* pieces of 2 KiB and more go as addresses of src, one buffer a slot */
    uint8_t *src[NCH];
    int bad;
} pump_t;

static void *pump_main(void *arg)
{
    pump_t *p = arg;
    side_t *s = p->s;
    int peer = 1 - s->rank;
    int sent[NCH] = {0}, got[NCH] = {0};
    double deadline = orb_now() + 60;
    while (orb_now() < deadline) {
        int busy = 0, left = 0;
        for (int ch = 0; ch < NCH; ch++) {
            orb_conn_t *sc = &s->send[peer * NCH + ch], *rc = &s->recv[peer * NCH + ch];
            if (sent[ch] < NPIECES) {
                left = 1;
                orb_slot_hdr_t *h = sc->ops->send_acquire(sc, s->slot_bytes);
                if (h) {
                    uint32_t n = piece_len(s->rank, ch, sent[ch], s->slot_bytes);
                    /* the slot this piece takes was released, so was the buffer of the piece
                     * nslots before it: the same one */
                    const int remote = p->direct && n >= 2048;
                    uint8_t *d = remote ? p->src[ch] + (size_t)(sent[ch] % (int)s->nslots) * s->slot_bytes
                                        : (uint8_t *)(h + 1);
                    for (uint32_t k = 0; k < n; k++)
                        d[k] = piece_byte(s->rank, ch, sent[ch], k);
                    *h = (orb_slot_hdr_t){.seq = (uint64_t)sent[ch], .nbytes = n, .step = (uint32_t)ch,
                                          .sender = s->rank, .flags = remote ? ORB_PIECE_REMOTE : 0,
                                          .addr = remote ? (uint64_t)(uintptr_t)d : 0};
                    sc->ops->send_post(sc);
                    sent[ch]++;
                    busy = 1;
                }
            }
            if (got[ch] < NPIECES) {
                left = 1;
                if (p->slow && (got[ch] % 50) == 25)
                    usleep(2000);
                orb_slot_hdr_t *h = rc->ops->recv_acquire(rc);
                if (h) {
                    uint32_t n = piece_len(peer, ch, got[ch], s->slot_bytes);
                    const uint8_t *d = (const uint8_t *)(h + 1);
                    int ok = h->seq == (uint64_t)got[ch] && h->nbytes == n && h->sender == peer &&
                             h->step == (uint32_t)ch && h->flags == 0 && h->addr == 0;
                    for (uint32_t k = 0; ok && k < n; k++)
                        ok = d[k] == piece_byte(peer, ch, got[ch], k);
                    if (!ok && p->bad++ < 5)
                        fprintf(stderr, "rank %d: piece %d of channel %d from rank %d is wrong (seq %llu, %u bytes)\n",
                                s->rank, got[ch], ch, peer, (unsigned long long)h->seq, h->nbytes);
                    rc->ops->recv_release(rc);
                    got[ch]++;
                    busy = 1;
                }
            }
        }
        if (!left)
            return NULL;
        if (!busy)
            sched_yield();
    }
    p->bad += 1000;
    fprintf(stderr, "rank %d: stuck: sent %d/%d, got %d/%d\n", s->rank, sent[0], sent[1], got[0], got[1]);
    return NULL;
}

static int mode_data(void)
{
    static const struct {
        uint32_t nslots;
        size_t slot_bytes;
        int slow, direct;
    } cfg[] = {{2, 4096, 0, 0},         {8, 256 << 10, 0, 0}, {3, 200 << 10, 1, 0},
               {2, 4096, 0, 1},         {8, 256 << 10, 0, 1}, {3, 200 << 10, 1, 1}};
    for (size_t i = 0; i < sizeof cfg / sizeof cfg[0]; i++) {
        side_t a, b;
        if (make_pair(&a, &b, cfg[i].nslots, cfg[i].slot_bytes) != 0) {
            check(0, "connect a pair");
            return 1;
        }
        pump_t pa = {.s = &a, .slow = cfg[i].slow, .direct = cfg[i].direct},
               pb = {.s = &b, .slow = cfg[i].slow, .direct = cfg[i].direct};
        for (int ch = 0; ch < NCH; ch++) {
            pa.src[ch] = malloc(cfg[i].nslots * cfg[i].slot_bytes);
            pb.src[ch] = malloc(cfg[i].nslots * cfg[i].slot_bytes);
            if (!pa.src[ch] || !pb.src[ch]) {
                check(0, "memory for the address pieces");
                return 1;
            }
        }
        pthread_t ta, tb;
        pthread_create(&ta, NULL, pump_main, &pa);
        pthread_create(&tb, NULL, pump_main, &pb);
        pthread_join(ta, NULL);
        pthread_join(tb, NULL);
        char what[160];
        snprintf(what, sizeof what, "%d pieces each way on %d channels, %u slots of %zu bytes%s%s: all intact",
                 NPIECES, NCH, cfg[i].nslots, cfg[i].slot_bytes, cfg[i].slow ? ", slow reader" : "",
                 cfg[i].direct ? ", large ones posted as addresses" : "");
        check(pa.bad == 0 && pb.bad == 0, what);
        int lost = -1;
        check(orb_tcp_check(a.net, &lost) == ORB_OK && orb_tcp_check(b.net, &lost) == ORB_OK, "nobody lost");
        orb_tcp_destroy(a.net);
        orb_tcp_destroy(b.net);
        for (int ch = 0; ch < NCH; ch++) {
            free(pa.src[ch]);
            free(pb.src[ch]);
        }
    }
    return 0;
}

/* ---- settle --------------------------------------------------------------------------- */

/* Rank 0 posts slot-sized pieces on sc while the reader takes nothing, until the FIFO has stayed
 * full for half a second (the sockets and the reader's FIFO hold what they can) or max are
 * posted. Piece k holds src + k * stride: as that address (ORB_PIECE_REMOTE) or copied into the
 * slot. Returns how many it posted. */
static size_t fill_channel(orb_conn_t *sc, size_t slot, size_t max, const uint8_t *src, size_t stride,
                           int as_address)
{
    size_t posted = 0;
    double full_since = 0;
    while (posted < max) {
        orb_slot_hdr_t *h = sc->ops->send_acquire(sc, slot);
        if (!h) {
            if (!full_since)
                full_since = orb_now();
            else if (orb_now() - full_since > 0.5)
                break;
            usleep(1000);
            continue;
        }
        full_since = 0;
        const uint8_t *p = src + posted * stride;
        *h = (orb_slot_hdr_t){.seq = posted, .nbytes = (uint32_t)slot};
        if (as_address) {
            h->flags = ORB_PIECE_REMOTE;
            h->addr = (uint64_t)(uintptr_t)p;
        } else {
            memcpy(h + 1, p, slot);
        }
        sc->ops->send_post(sc);
        posted++;
    }
    return posted;
}

#define SETTLE_SRC (64u << 20) /* far more than the sockets and the reader's FIFO can hold */

static uint8_t settle_byte(size_t off) { return (uint8_t)(off * 7 + (off >> 11) * 13 + 5); }

static int mode_settle(void)
{
    const uint32_t nslots = 4;
    const size_t slot = 256 << 10;
    side_t a, b;
    if (make_pair(&a, &b, nslots, slot) != 0) {
        check(0, "connect a pair");
        return 1;
    }
    uint8_t *src = malloc(SETTLE_SRC);
    if (!src) {
        check(0, "memory for the source");
        return 1;
    }
    for (size_t k = 0; k < SETTLE_SRC; k++)
        src[k] = settle_byte(k);
    /* Rank 0 posts address pieces on channel 0 while rank 1 reads nothing, until its FIFO has
     * stayed full for half a second: the sockets and rank 1's FIFO hold what they can. */
    orb_conn_t *sc = &a.send[1 * NCH + 0], *rc = &b.recv[0 * NCH + 0];
    const size_t posted = fill_channel(sc, slot, SETTLE_SRC / slot, src, slot, 1);
    const uint64_t unsent = sc->pos - atomic_load(&sc->ctrl->tail);
    char what[200];
    snprintf(what, sizeof what, "%zu pieces posted, %llu of them not yet taken by the socket", posted,
             (unsigned long long)unsent);
    check(posted < SETTLE_SRC / slot && unsent > 0, what);
    sc->ops->settle(sc);
    memset(src, 0xEE, SETTLE_SRC); /* the caller reuses its buffer */
    size_t got = 0, bad = 0;
    double deadline = orb_now() + 30;
    while (got < posted && orb_now() < deadline) {
        orb_slot_hdr_t *h = rc->ops->recv_acquire(rc);
        if (!h) {
            sched_yield();
            continue;
        }
        int ok = h->seq == got && h->nbytes == slot && h->flags == 0 && h->addr == 0;
        const uint8_t *d = (const uint8_t *)(h + 1);
        for (size_t k = 0; ok && k < slot; k++)
            ok = d[k] == settle_byte(got * slot + k);
        if (!ok && bad++ < 3)
            fprintf(stderr, "piece %zu (of %zu, the last %llu settled) is wrong\n", got, posted,
                    (unsigned long long)unsent);
        rc->ops->recv_release(rc);
        got++;
    }
    snprintf(what, sizeof what, "all %zu pieces arrive with the bytes they had when posted (got %zu, %zu wrong)",
             posted, got, bad);
    check(got == posted && bad == 0, what);
    orb_tcp_destroy(a.net);
    orb_tcp_destroy(b.net);
    free(src);
    return 0;
}

/* ---- the executor's write guard ------------------------------------------------------- */

static _Atomic int exec_waits; /* set once rank 0's executor has nothing left but to wait */

static void env_sleep(void *ctx, uint32_t seen, double max_s)
{
    (void)ctx;
    (void)seen;
    (void)max_s;
    atomic_store(&exec_waits, 1);
    sched_yield();
}

static uint8_t guard_byte(int from, size_t k) { return (uint8_t)(from ? 0xA0 + k % 31 : 1 + (k * 13 + (k >> 10)) % 0x7f); }

typedef struct {
    orb_conn_t *rc; /* rank 1's side of channel 0 from rank 0 */
    size_t backlog, slot;
    size_t got, bad_last;
    int last_ok;
} drain_t;

/* Rank 1 reads nothing until rank 0's executor only waits (its write is done), then all:
 * the backlog, then the piece the executor sent as an address. */
static void *drain_main(void *arg)
{
    drain_t *d = arg;
    const double deadline = orb_now() + 30;
    while (!atomic_load(&exec_waits) && orb_now() < deadline)
        usleep(1000);
    while (d->got < d->backlog + 1 && orb_now() < deadline) {
        orb_slot_hdr_t *h = d->rc->ops->recv_acquire(d->rc);
        if (!h) {
            sched_yield();
            continue;
        }
        if (d->got == d->backlog) { /* the executor's piece */
            const uint8_t *p = (const uint8_t *)(h + 1);
            d->last_ok = h->nbytes == d->slot;
            for (size_t k = 0; k < d->slot; k++)
                if (p[k] != guard_byte(0, k))
                    d->bad_last++;
            d->last_ok = d->last_ok && d->bad_last == 0;
        }
        d->rc->ops->recv_release(d->rc);
        d->got++;
    }
    return NULL;
}

static int mode_guard(void)
{
    const uint32_t nslots = 2;
    const size_t slot = 8 << 20; /* more than a socket takes at once when it opens again */
    side_t a, b;
    if (make_pair(&a, &b, nslots, slot) != 0) {
        check(0, "connect a pair");
        return 1;
    }
    orb_conn_t *sc = &a.send[1 * NCH + 0], *back = &b.send[0 * NCH + 0];
    orb_conn_t *arc = &a.recv[1 * NCH + 0], *brc = &b.recv[0 * NCH + 0];
    char what[256];
    snprintf(what, sizeof what, "rank 0's connection sends from the buffer from %zu bytes (ORB_ADDR_LOCAL)",
             sc->addr_min);
    check(sc->addr_kind == ORB_ADDR_LOCAL && sc->addr_min > 0 && sc->addr_min <= slot, what);
    uint8_t *buf = malloc(slot), *fill = malloc(slot);
    if (!buf || !fill) {
        check(0, "memory for the buffers");
        return 1;
    }
    /* rank 1's piece for rank 0, there before rank 0's call starts */
    orb_slot_hdr_t *h = back->ops->send_acquire(back, slot);
    *h = (orb_slot_hdr_t){.nbytes = (uint32_t)slot, .sender = 1};
    for (size_t k = 0; k < slot; k++)
        ((uint8_t *)(h + 1))[k] = guard_byte(1, k);
    back->ops->send_post(back);
    /* Rank 0 fills channel 0 with ordinary pieces while rank 1 reads nothing, until its FIFO
     * has stayed full for half a second. Rank 1 then takes pieces one at a time until one of
     * rank 0's slots opens: the sockets are full again behind it, a piece still waits in the
     * FIFO, and the executor's piece will wait behind that one (a slot is more than a socket
     * takes when it opens again). Rank 1 takes nothing more until the executor only waits. */
    memset(fill, 0x11, slot);
    const size_t backlog = fill_channel(sc, slot, SIZE_MAX, fill, 0, 0);
    const double deadline = orb_now() + 30;
    size_t taken = 0;
    int opened = 0, arrived = 0;
    while (!opened && taken < backlog && orb_now() < deadline) {
        if (!brc->ops->recv_acquire(brc)) {
            usleep(1000);
            continue;
        }
        brc->ops->recv_release(brc);
        taken++;
        for (double t0 = orb_now(); !(opened = sc->ops->send_acquire(sc, slot) != NULL) && orb_now() - t0 < 1;)
            usleep(1000);
    }
    while (!(arrived = atomic_load(&arc->ctrl->head) != arc->pos) && orb_now() < deadline)
        usleep(1000);
    const uint64_t ahead = sc->pos - atomic_load(&sc->ctrl->tail);
    snprintf(what, sizeof what, "%zu pieces posted, %zu taken: a slot opened (%d) with %llu still to go ahead, "
             "rank 1's piece arrived (%d)", backlog, taken, opened, (unsigned long long)ahead, arrived);
    check(opened && ahead > 0 && arrived, what);

    /* Rank 0: send buf[0, slot) to rank 1, then receive rank 1's piece into the same bytes. */
    for (size_t k = 0; k < slot; k++)
        buf[k] = guard_byte(0, k);
    orb_step_t steps[2] = {
        {.kind = ORB_STEP_SEND, .src_buf = ORB_BUF_INPUT, .send_peer = 1, .recv_peer = -1, .count = slot},
        {.kind = ORB_STEP_RECV, .src_buf = ORB_BUF_INPUT, .send_peer = -1, .recv_peer = 1, .count = slot}};
    orb_plan_t plan = {.nlanes = 1};
    plan.lanes[0].steps = steps;
    plan.lanes[0].nsteps = 2;
    orb_exec_op_t op = {.plan = &plan, .in = buf, .out = buf, .dtype = ORB_UINT8, .op = ORB_SUM, .sync_next = -1,
                        .sync_prev = -1, .addr_in = ORB_ADDR_LOCAL, .addr_out = ORB_ADDR_LOCAL, .guard_writes = 1};
    orb_exec_env_t env = {.rank = 0, .nranks = 2, .nchannels = NCH, .check_signatures = 0, .send = a.send,
                          .recv = a.recv, .arm = stub_arm, .disarm = stub_disarm, .sleep = env_sleep,
                          .check = stub_check, .post_error = stub_post_error, .slot_bytes = slot, .timeout_s = 30, .spin_s = 0, .idle_mask = 15,
                          .yield_s = 50e-6};
    drain_t d = {.rc = brc, .backlog = backlog - taken, .slot = slot};
    pthread_t t;
    pthread_create(&t, NULL, drain_main, &d);
    char err[512] = "";
    orb_status_t st = orb_exec_run(&env, &op, 1, err, sizeof err);
    pthread_join(t, NULL);
    size_t wrong = 0;
    for (size_t k = 0; k < slot; k++)
        wrong += buf[k] != guard_byte(1, k);
    snprintf(what, sizeof what, "the run ends (%s %s) with rank 1's piece in the buffer (%zu bytes wrong)",
             orb_status_name(st), err, wrong);
    check(st == ORB_OK && wrong == 0, what);
    snprintf(what, sizeof what,
             "rank 1 gets the buffer as it was when the send was posted (%zu of %zu pieces came; %zu bytes of the "
             "last wrong)", d.got, d.backlog + 1, d.bad_last);
    check(d.got == d.backlog + 1 && d.last_ok, what);
    orb_tcp_destroy(a.net);
    orb_tcp_destroy(b.net);
    free(buf);
    free(fill);
    return 0;
}

/* ---- errors and departures ------------------------------------------------------------ */

static int wait_for(_Atomic int *v, double secs)
{
    double end = orb_now() + secs;
    while (!atomic_load(v) && orb_now() < end)
        usleep(1000);
    return atomic_load(v);
}

static orb_status_t wait_check(side_t *s, int *lost, double secs, double *took)
{
    double t0 = orb_now(), end = t0 + secs;
    orb_status_t st;
    while ((st = orb_tcp_check(s->net, lost)) == ORB_OK && orb_now() < end)
        usleep(1000);
    *took = orb_now() - t0;
    return st;
}

static int mode_errors(void)
{
    side_t a, b;
    if (make_pair(&a, &b, 4, 4096) != 0) {
        check(0, "connect a pair");
        return 1;
    }
    orb_tcp_post_error(a.net, 1, ORB_ERR_MISMATCH, "rank 0 called allreduce but rank 1 called broadcast");
    check(wait_for(&b.errors, 5) == 1 && atomic_load(&b.err_from) == 0 &&
              atomic_load(&b.err_status) == ORB_ERR_MISMATCH && strstr(b.err_msg, "called broadcast"),
          "a posted error reaches the peer's on_error, from and status intact");
    orb_tcp_destroy(a.net);
    orb_tcp_destroy(b.net);

    /* Good order: rank 0 leaves. Rank 1 waits for nothing from it: not lost... */
    if (make_pair(&a, &b, 4, 4096) != 0) {
        check(0, "connect a pair");
        return 1;
    }
    orb_tcp_destroy(a.net);
    int lost = -1;
    double took;
    check(wait_check(&b, &lost, 0.5, &took) == ORB_OK, "a peer that left in good order is not lost to an idle rank");
    /* ...until it waits for a piece from it. */
    orb_conn_t *rc = &b.recv[0 * NCH + 1];
    check(rc->ops->recv_acquire(rc) == NULL, "nothing arrives from a peer that left");
    check(wait_check(&b, &lost, 5, &took) == ORB_ERR_PEER_LOST && lost == 0,
          "a rank waiting for a peer that left hears it is lost");
    orb_tcp_destroy(b.net);

    /* Looked, found nothing, then the peer's last piece arrived and it left: the piece is
     * ours to take, so the peer is not lost yet (want_rx is stale); after that it is. */
    if (make_pair(&a, &b, 4, 4096) != 0) {
        check(0, "connect a pair");
        return 1;
    }
    rc = &b.recv[0 * NCH + 1];
    check(rc->ops->recv_acquire(rc) == NULL, "nothing yet");
    orb_conn_t *sc = &a.send[1 * NCH + 1];
    orb_slot_hdr_t *sh = sc->ops->send_acquire(sc, 100);
    check(sh != NULL, "a free slot to send the last piece");
    if (sh) {
        memset(sh, 0, sizeof *sh);
        sh->nbytes = 100;
        memset(sh + 1, 0x5a, 100);
        sc->ops->send_post(sc);
    }
    orb_tcp_destroy(a.net); /* writes the piece, says goodbye, closes */
    usleep(300 * 1000);     /* the piece and the end of the sockets reach b's thread */
    check(wait_check(&b, &lost, 0.3, &took) == ORB_OK,
          "a peer that left after its last piece arrived is not lost while the piece waits");
    orb_slot_hdr_t *rh = rc->ops->recv_acquire(rc);
    check(rh && rh->nbytes == 100 && ((unsigned char *)(rh + 1))[99] == 0x5a, "and the piece is there");
    if (rh)
        rc->ops->recv_release(rc);
    check(rc->ops->recv_acquire(rc) == NULL, "nothing more from it");
    lost = -1;
    check(wait_check(&b, &lost, 5, &took) == ORB_ERR_PEER_LOST && lost == 0, "then it is lost to a rank waiting");
    orb_tcp_destroy(b.net);

    /* A crash (no goodbye): lost at once, waiting or not. */
    if (make_pair(&a, &b, 4, 4096) != 0) {
        check(0, "connect a pair");
        return 1;
    }
    orb_tcp_set_aborted(b.net); /* an aborted rank leaves without flushing or saying goodbye */
    orb_tcp_destroy(b.net);
    lost = -1;
    orb_status_t st = wait_check(&a, &lost, 10, &took);
    check(st == ORB_ERR_PEER_LOST && lost == 1 && took < 5, "a peer gone without goodbye is lost within 5 s");
    check(atomic_load(&a.wakes) > 0, "and the executor was woken to notice");
    orb_tcp_destroy(a.net);
    return 0;
}

/* ---- handshake ------------------------------------------------------------------------ */

typedef struct {
    orb_card_t card;
    int done;
} stranger_t;

static void *stranger_main(void *arg)
{
    stranger_t *s = arg;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(s->card.port)};
    memcpy(&a.sin_addr, s->card.addr, 4);
    /* one that speaks HTTP, one with a wrong secret, one that says nothing and leaves */
    for (int kind = 0; kind < 3; kind++) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        if (connect(fd, (struct sockaddr *)&a, sizeof a) == 0) {
            if (kind == 0) {
                const char get[] = "GET / HTTP/1.0\r\n\r\n";
                ssize_t n = send(fd, get, sizeof get - 1, MSG_NOSIGNAL);
                (void)n;
            } else if (kind == 1) {
                orb_tcp_hello_t h = {.magic = ORB_TCP_HELLO_MAGIC, .version = ORB_TCP_VERSION, .from = 0, .to = 1,
                                     .nranks = 2, .channel = -1, .nchannels = NCH, .nsocks = 1, .nslots = 4,
                                     .slot_bytes = 4096};
                ssize_t n = send(fd, &h, sizeof h, MSG_NOSIGNAL); /* secret all zero */
                (void)n;
            }
            usleep(20000);
        }
        close(fd);
    }
    s->done = 1;
    return NULL;
}

static int mode_handshake(void)
{
    side_t a, b;
    if (side_create(&a, 0, 4, 4096) != ORB_OK || side_create(&b, 1, 4, 4096) != ORB_OK) {
        check(0, "create");
        return 1;
    }
    /* Strangers knock on rank 1's door before rank 0 connects. */
    stranger_t st = {.card = b.cards[1]};
    pthread_t ts;
    pthread_create(&ts, NULL, stranger_main, &st);
    pthread_join(ts, NULL);
    connect_pair(&a, &b);
    check(a.st == ORB_OK && b.st == ORB_OK, "strangers at the listener do not disturb the handshake");
    int lost = -1;
    check(orb_tcp_check(b.net, &lost) == ORB_OK, "and nobody is lost");
    orb_tcp_destroy(a.net);
    orb_tcp_destroy(b.net);

    /* Settings that differ: both sides fail, with the reason. */
    if (side_create(&a, 0, 4, 4096) != ORB_OK || side_create(&b, 1, 4, 8192) != ORB_OK) {
        check(0, "create");
        return 1;
    }
    connect_pair(&a, &b);
    check(b.st == ORB_ERR_MISMATCH && strstr(b.err, "ORBIT_SHM_SLOT_BYTES"), "the acceptor names the mismatch");
    check(a.st == ORB_ERR_MISMATCH && strstr(a.err, "refused"), "the connector hears why it was refused");
    if (a.st != ORB_ERR_MISMATCH)
        fprintf(stderr, "connector: %s: %s\n", orb_status_name(a.st), a.err);
    orb_tcp_destroy(a.net);
    orb_tcp_destroy(b.net);
    return 0;
}

/* ---- pieces written straight into the receiver's buffer ------------------------------ */

#define PLACE_SLOT (256u << 10) /* striped over the sockets when there are several */
#define PLACE_N 7

static uint8_t place_byte(int k, size_t i) { return (uint8_t)(0x10 + k * 0x21 + (i * 7 + (i >> 12)) % 97); }

/* Wait for the receiver's next piece (NULL after 10 s). */
static orb_slot_hdr_t *place_next(orb_conn_t *rc)
{
    for (double t0 = orb_now(); orb_now() - t0 < 10;) {
        orb_slot_hdr_t *h = rc->ops->recv_acquire(rc);
        if (h)
            return h;
        usleep(200);
    }
    return NULL;
}

/* A withdrawal (recv_place with n < 0: the call failed and returns) while a piece is halfway
 * into the caller's buffer. The transport's own sender cannot be stopped mid-piece, so the
 * test writes the frames on rank 1's data socket itself: the piece at position 0 in two frames
 * of half its size each, the first cut after WD_CUT bytes. Once those bytes are in the buffer
 * (the receiver is then inside the first frame, its request taken), rank 0 withdraws, and only
 * then does the rest come. What must hold: the piece arrives whole in size and not flagged
 * placed; what came after the withdrawal, the first frame's rest (the stripe that was writing
 * into the buffer) and the second frame (a stripe begun after it), is in the slot; the buffer
 * holds the first WD_CUT bytes and nothing past them. */
#define WD_CUT 40000u

static int place_withdrawn_midway(void)
{
    side_t a, b;
    if (make_pair(&a, &b, 8, PLACE_SLOT) != 0) {
        check(0, "connect a pair");
        return 1;
    }
    orb_conn_t *rc = &a.recv[1 * NCH + 0];
    const orb_tcp_chan_t *sch = &b.net->chans[(size_t)b.net->peer_index[0] * NCH + 0];
    const int fd = sch->socks[0].fd;
    const uint32_t bytes = PLACE_SLOT, half = PLACE_SLOT / 2;
    uint8_t *dst = malloc(PLACE_SLOT), *payload = malloc(PLACE_SLOT);
    if (!dst || !payload) {
        check(0, "memory for the buffer");
        return 1;
    }
    memset(dst, 0x5a, PLACE_SLOT);
    for (size_t i = 0; i < bytes; i++)
        payload[i] = place_byte(3, i);
    const orb_slot_hdr_t hdr = {.seq = 9, .nbytes = bytes, .sender = 1};
    orb_place_t w = {.pos = rc->pos, .call = 9, .dst = (char *)dst, .bytes = bytes};
    rc->ops->recv_place(rc, &w, 1);
    orb_tcp_frame_t f1 = {.magic = ORB_TCP_FRAME_MAGIC, .len = half, .off = 0, .seq = (uint32_t)rc->pos, .hdr = hdr};
    orb_tcp_frame_t f2 = f1;
    f2.off = half;
    const double until = orb_now() + 10;
    int ok = orb_sock_send_all(fd, &f1, sizeof f1, until) == ORB_OK &&
             orb_sock_send_all(fd, payload, WD_CUT, until) == ORB_OK;
    /* The receiver has taken the first WD_CUT bytes when its stripe has half - WD_CUT left to
     * read; the rx lock, under which it reads, orders its writes before the test's look. */
    orb_tcp_chan_t *rch = &a.net->chans[(size_t)a.net->peer_index[1] * NCH + 0];
    const orb_tcp_sock_t *rs = &rch->socks[0];
    int arrived = 0;
    for (double t0 = orb_now(); ok && !arrived && orb_now() - t0 < 10;) {
        if (orb_tcp_trylock(&rch->rx_lock)) {
            arrived = rs->rx_busy && rs->rx_left == half - WD_CUT && memcmp(dst, payload, WD_CUT) == 0;
            orb_tcp_unlock(&rch->rx_lock);
        }
        if (!arrived)
            usleep(200);
    }
    check(arrived, "the first bytes of a requested piece go straight into the buffer");
    rc->ops->recv_place(rc, NULL, -1);
    ok = ok && arrived && orb_sock_send_all(fd, payload + WD_CUT, half - WD_CUT, until) == ORB_OK &&
         orb_sock_send_all(fd, &f2, sizeof f2, until) == ORB_OK &&
         orb_sock_send_all(fd, payload + half, half, until) == ORB_OK;
    check(ok, "the test writes the frames on the socket");
    orb_slot_hdr_t *h = ok ? place_next(rc) : NULL;
    check(h != NULL, "the piece withdrawn halfway arrives");
    if (h) {
        size_t wrong = 0;
        for (size_t i = WD_CUT; i < bytes; i++)
            wrong += ((const uint8_t *)(h + 1))[i] != payload[i];
        char what[256];
        snprintf(what, sizeof what,
                 "withdrawn halfway: %u bytes (want %u), flags %u (want 0: not placed), %zu of the bytes "
                 "after the withdrawal wrong in the slot",
                 h->nbytes, bytes, h->flags, wrong);
        check(h->nbytes == bytes && h->flags == 0 && wrong == 0, what);
        rc->ops->recv_release(rc);
    }
    size_t stray = 0, first = SIZE_MAX;
    for (size_t i = 0; i < PLACE_SLOT; i++)
        if (dst[i] != (i < WD_CUT ? payload[i] : 0x5a) && stray++ == 0)
            first = i;
    char what[200];
    snprintf(what, sizeof what,
             "after the withdrawal nothing lands in the buffer (%zu bytes wrong, the first at %zu; %u came before)",
             stray, first, WD_CUT);
    check(stray == 0, what);
    orb_tcp_destroy(a.net);
    orb_tcp_destroy(b.net);
    free(dst);
    free(payload);
    return 0;
}

/* Rank 0 asks for positions 0..5 of channel 0 to go to its buffer, then rank 1 sends: the
 * pieces that match the request (call, size, no flag but the handshake's) land there, whole,
 * at their addresses, stripes and all; one of another size, of another call, or flagged late
 * goes into its slot, and so does one nobody asked for. Then a request withdrawn before its
 * piece comes leaves that piece in its slot. */
static int mode_place(void)
{
    setenv("ORBIT_TCP_PLACE", "1", 1); /* (the default, whatever the caller's environment says) */
    side_t a, b;
    if (make_pair(&a, &b, 8, PLACE_SLOT) != 0) {
        check(0, "connect a pair");
        return 1;
    }
    orb_conn_t *rc = &a.recv[1 * NCH + 0], *sc = &b.send[0 * NCH + 0];
    check(rc->ops->recv_place != NULL, "the tcp connection takes requests to place pieces");
    const size_t total = (size_t)PLACE_N * PLACE_SLOT;
    uint8_t *dst = malloc(total);
    if (!dst || !rc->ops->recv_place) {
        check(0, "memory for the buffer");
        return 1;
    }
    memset(dst, 0x5a, total);
    /* what rank 1 sends at each position, and what rank 0 asks for there */
    const struct {
        uint64_t call, want_call;
        uint32_t bytes, want_bytes, flags;
        int placed;
    } c[PLACE_N] = {
        {7, 7, PLACE_SLOT, PLACE_SLOT, 0, 1},                        /* as asked */
        {7, 7, PLACE_SLOT / 2, PLACE_SLOT, 0, 0},                    /* another size */
        {7, 8, PLACE_SLOT, PLACE_SLOT, 0, 0},                        /* another call */
        {7, 7, PLACE_SLOT, PLACE_SLOT, ORB_PIECE_LATE, 0},           /* a flag the receiver must see */
        {7, 7, 20000, 20000, ORB_PIECE_SYNC, 1},                     /* an odd size, the handshake on it */
        {7, 0, PLACE_SLOT, 0, 0, 0},                                 /* nobody asked */
        {7, 7, PLACE_SLOT, PLACE_SLOT, 0, 0},                        /* asked, then withdrawn */
    };
    orb_place_t want[PLACE_N - 1];
    int nw = 0;
    for (int k = 0; k < PLACE_N - 1; k++)
        if (c[k].want_bytes)
            want[nw++] = (orb_place_t){.pos = rc->pos + (uint64_t)k, .call = c[k].want_call,
                                       .dst = (char *)dst + (size_t)k * PLACE_SLOT, .bytes = c[k].want_bytes};
    rc->ops->recv_place(rc, want, nw);
    for (int k = 0; k < PLACE_N; k++) {
        if (k == PLACE_N - 1) { /* the last: asked for, withdrawn, and only then sent */
            orb_place_t w = {.pos = rc->pos, .call = c[k].want_call, .dst = (char *)dst + (size_t)k * PLACE_SLOT,
                             .bytes = c[k].want_bytes};
            rc->ops->recv_place(rc, &w, 1);
            rc->ops->recv_place(rc, NULL, -1);
        }
        orb_slot_hdr_t *sh = NULL;
        for (double t0 = orb_now(); !(sh = sc->ops->send_acquire(sc, c[k].bytes)) && orb_now() - t0 < 10;)
            usleep(200);
        if (!sh) {
            check(0, "room to send");
            return 1;
        }
        *sh = (orb_slot_hdr_t){.seq = c[k].call, .nbytes = c[k].bytes, .flags = c[k].flags, .sender = 1};
        for (size_t i = 0; i < c[k].bytes; i++)
            ((uint8_t *)(sh + 1))[i] = place_byte(k, i);
        sc->ops->send_post(sc);
        if (k < PLACE_N - 2)
            continue; /* the first six go out together; the last after its request is gone */
        for (int j = k == PLACE_N - 2 ? 0 : k; j <= k; j++) {
            orb_slot_hdr_t *h = place_next(rc);
            char what[256];
            if (!h) {
                snprintf(what, sizeof what, "piece %d arrives", j);
                check(0, what);
                return 1;
            }
            const int placed = (h->flags & ORB_PIECE_PLACED) != 0;
            const uint8_t *at = placed ? (const uint8_t *)(uintptr_t)h->addr : (const uint8_t *)(h + 1);
            size_t wrong = 0;
            for (size_t i = 0; i < c[j].bytes; i++)
                wrong += at[i] != place_byte(j, i);
            snprintf(what, sizeof what,
                     "piece %d (%u bytes, call %llu, flags %u): %s (should be %s), %zu bytes wrong where it is", j,
                     c[j].bytes, (unsigned long long)c[j].call, c[j].flags, placed ? "placed" : "in its slot",
                     c[j].placed ? "placed" : "in its slot", wrong);
            check(placed == c[j].placed && h->nbytes == c[j].bytes && (h->flags & ~ORB_PIECE_PLACED) == c[j].flags &&
                      (!placed || h->addr == (uint64_t)(uintptr_t)(dst + (size_t)j * PLACE_SLOT)) && wrong == 0,
                  what);
            rc->ops->recv_release(rc);
        }
    }
    /* the buffer: the placed pieces' bytes, nothing anywhere else */
    size_t stray = 0, first = SIZE_MAX;
    for (int k = 0; k < PLACE_N; k++)
        for (size_t i = 0; i < PLACE_SLOT; i++) {
            const uint8_t w = c[k].placed && i < c[k].bytes ? place_byte(k, i) : 0x5a;
            if (dst[(size_t)k * PLACE_SLOT + i] != w && stray++ == 0)
                first = (size_t)k * PLACE_SLOT + i;
        }
    char what[200];
    snprintf(what, sizeof what,
             "the buffer holds the placed pieces and nothing else (%zu bytes wrong, the first at %zu)", stray, first);
    check(stray == 0, what);
    orb_tcp_destroy(a.net);
    orb_tcp_destroy(b.net);
    free(dst);
    return place_withdrawn_midway();
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: test_tcp wire|data|settle|guard|place|errors|handshake\n");
        return 2;
    }
    setenv("ORBIT_SOCKET_IFNAME", "lo", 0); /* both "hosts" are this one */
    int rc;
    if (!strcmp(argv[1], "wire"))
        rc = mode_wire();
    else if (!strcmp(argv[1], "data"))
        rc = mode_data();
    else if (!strcmp(argv[1], "settle"))
        rc = mode_settle();
    else if (!strcmp(argv[1], "guard"))
        rc = mode_guard();
    else if (!strcmp(argv[1], "place"))
        rc = mode_place();
    else if (!strcmp(argv[1], "errors"))
        rc = mode_errors();
    else if (!strcmp(argv[1], "handshake"))
        rc = mode_handshake();
    else {
        fprintf(stderr, "test_tcp: unknown mode %s\n", argv[1]);
        return 2;
    }
    printf("%d passed, %d failed\n", passed, failed);
    return rc || failed ? 1 : 0;
}
