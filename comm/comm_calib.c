/* The tuner's price of a hop inside a host, measured on this machine instead of taken from
 * the shared-memory transport's constants (which were one machine's tuning): at init, over
 * the real shared-memory connections around the ring,
 *   alpha: a token passed around the ring; a round's time over its n hops (the wake-up
 *          latency of a hop, spin or yield as the ranks wait in calls: more ranks than CPUs
 *          make it the scheduler's hand-over);
 *   beta:  slot-sized pieces sent down the ring as a broadcast chain forwards them (copied
 *          from memory into the next rank's slot, out of it into memory on the other side);
 *          the steady interval between pieces t gives beta = slot / (t - alpha);
 *   single: the same pieces read with one copy by the kernel (process_vm_readv, what a
 *          single-copy piece costs its receiver, transport/cma.h), from this rank's own
 *          buffer: where it is slower than beta, comm_cma.c sends no single-copy pieces;
 *   hot:   pieces of ORB_CALIB_HOT_BYTES from a buffer that stays in the caches, every rank
 *          sending to the next and receiving from the previous at once, through the slots,
 *          then as addresses the next rank reads with one copy, as calls of a few hundred KiB
 *          move them: where the one copy is faster, comm_cma.c sends single-copy pieces from
 *          ORB_CALIB_HOT_BYTES on instead of from twice the L2.
 * Each figure is the median of its rounds, pieces or reads: a preemption or another
 * process's burst lands in a few of them and does not move it. The mean did (2 ranks on the
 * 2-core Zen 3 VM beside two busy processes: beta 0.25-0.47 GB/s in 3 of 8 inits, where the
 * median gave 4.0-8.5), and with more ranks than CPUs the rare long rounds of ranks taking
 * turns ruled it (4 ranks on 2 CPUs: 5.2-13.4 us a hop, 0.24-0.59 GB/s, against medians of
 * 1.9-2.6 us and 0.7-5.2 GB/s, where an 8-byte all-reduce of two hops took 5.8-6.0 us and a
 * 16 MiB broadcast chain ran at 2.0-2.6 GB/s). Every rank times what it sees; the worst of
 * them is agreed (largest alpha, smallest beta), so every rank prices alike. Cached per host
 * in a file, keyed by boot, ranks on the host, CPUs and FIFO geometry: the first CALIB_JOBS
 * jobs of a shape each measure and keep the best figures seen (load only ever makes a hop look
 * slower, and a job started beside others, as tests and CI start them, would otherwise price
 * the machine for the rest of the boot by one busy moment); later jobs read them, skip the
 * measurement and choose alike from run to run. ORBIT_CALIBRATE: 1 (the cache, else measure
 * and keep the best), 2 (measure and start the cache's line afresh), 0 (the transport's
 * constants). Only where every peer is on this host over shared memory: elsewhere the
 * constants stand (the network's price is the transport's). */
#include <errno.h>
#include <math.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "comm/comm_impl.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/median.h"
#include "core/param.h"
#include "core/proc.h"
#include "core/relax.h"
#include "transport/cma.h"

enum { WARM_ROUNDS = 16, MAX_ROUNDS = 256 };
enum { CALIB_JOBS = 3 }; /* jobs of a shape that measure before the cache's best is trusted */
#define ROUND_BUDGET_S 0.01 /* the token stops going round after this long */

typedef struct {
    double alpha_us, beta_gbps;
    double single_gbps; /* 0: the read failed (then single-copy pieces keep their size) */
    double hot_slots_gbps, hot_single_gbps; /* 0: not measured, or a read failed */
} calib_fig_t;

typedef struct {
    int32_t can;      /* every peer of this rank is on this host, over shared memory */
    int32_t cached;   /* this rank found the key in the cache, measured by CALIB_JOBS jobs */
    int32_t jobs;     /* how many jobs measured the cache's figures (0: no line) */
    int32_t pad;
    calib_fig_t prior; /* the cache's figures, when jobs > 0 */
    calib_fig_t now;   /* measured by this job; alpha 0: not measured */
} calib_view_t;

/* ---- the cache ------------------------------------------------------------------------ */

static void cache_path(char *buf, size_t len)
{
    const char *set = orb_param_str(ORB_PARAM_S_CALIB_FILE);
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    if (set[0])
        snprintf(buf, len, "%s", set);
    else if (xdg && xdg[0])
        snprintf(buf, len, "%s/orbit/links.txt", xdg);
    else if (home && home[0])
        snprintf(buf, len, "%s/.cache/orbit/links.txt", home);
    else
        buf[0] = 0;
}

static void cache_key(const struct orb_comm *c, int oversubscribed, char *buf, size_t len)
{
    char boot[64]; /* in the host id too, unless ORBIT_HOSTID replaces it */
    if (orb_boot_id(boot, sizeof boot) != 0)
        snprintf(boot, sizeof boot, "unknown");
    snprintf(buf, len, "v4 host=%016llx boot=%s ranks=%d cpus=%ld over=%d slot=%zu slots=%u",
             (unsigned long long)c->bs.cards[c->rank].host_id, boot, c->nranks, sysconf(_SC_NPROCESSORS_ONLN),
             oversubscribed, c->slot_bytes, c->nslots);
}

/* How many jobs measured the key's figures, and the figures, when the file has a well-formed
 * line for it; 0 otherwise. A malformed line for the key is reported and ignored (measured
 * again, then replaced). */
static int cache_read(const char *path, const char *key, calib_fig_t *fig)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    char line[512];
    int found = 0;
    const size_t kl = strlen(key);
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, key, kl) != 0 || line[kl] != ' ')
            continue;
        double a, b, g, hs, hg;
        int jobs;
        if (sscanf(line + kl,
                   " alpha_us=%lf beta_gbps=%lf single_gbps=%lf hot_slots_gbps=%lf hot_single_gbps=%lf jobs=%d", &a,
                   &b, &g, &hs, &hg, &jobs) == 6 &&
            isfinite(a) && isfinite(b) && isfinite(g) && isfinite(hs) && isfinite(hg) && a > 0 && b > 0 && g >= 0 &&
            hs >= 0 && hg >= 0 && jobs > 0) {
            *fig = (calib_fig_t){a, b, g, hs, hg};
            found = jobs;
        } else {
            ORB_WARN("%s: unreadable calibration line for this host; measuring again (ORBIT_CALIB_FILE)", path);
        }
    }
    fclose(f);
    return found;
}

/* Replace key's line (write a temporary file, rename it over): concurrent jobs never see a
 * half-written file; the last writer wins. Failures only cost the next job a measurement. */
static void cache_write(const char *path, const char *key, const calib_fig_t *fig, int jobs)
{
    char dir[4096], tmp[4200];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash && slash != dir) {
        *slash = 0;
        char *p = dir + 1;
        for (;; p++) { /* mkdir -p */
            if (*p == '/' || *p == 0) {
                char was = *p;
                *p = 0;
                if (mkdir(dir, 0755) != 0 && errno != EEXIST)
                    return;
                *p = was;
                if (!was)
                    break;
            }
        }
    }
    snprintf(tmp, sizeof tmp, "%s.%d.tmp", path, (int)getpid());
    FILE *out = fopen(tmp, "w");
    if (!out)
        return;
    FILE *in = fopen(path, "r");
    const size_t kl = strlen(key);
    if (in) {
        char line[512];
        while (fgets(line, sizeof line, in))
            if (!(strncmp(line, key, kl) == 0 && line[kl] == ' ') && strchr(line, '\n'))
                fputs(line, out);
        fclose(in);
    }
    fprintf(out, "%s alpha_us=%.4f beta_gbps=%.4f single_gbps=%.4f hot_slots_gbps=%.4f hot_single_gbps=%.4f jobs=%d\n",
            key, fig->alpha_us, fig->beta_gbps, fig->single_gbps, fig->hot_slots_gbps, fig->hot_single_gbps, jobs);
    if (fclose(out) != 0 || rename(tmp, path) != 0)
        unlink(tmp);
}

/* ---- the measurement ------------------------------------------------------------------ */

/* One turn of waiting as ranks wait in calls (spin, or yield at once when the host has more
 * ranks than CPUs), the k-th: 1 once the deadline has passed (looked at every 1024th). */
static int wait_turn(unsigned k, int yield, double deadline)
{
    if (yield)
        sched_yield();
    else
        orb_cpu_relax();
    return (k & 1023) == 0 && orb_now() > deadline;
}

/* A slot to send a piece of `bytes` into (send) or a full one (recv); NULL past the deadline.
 * (It tells nothing held back before it waits, as the executor does: no receiver holds any
 * here. Shared memory holds releases back only while the next piece is already in, and the
 * token goes round alone; every other piece is a slot's or more, in the large slots.) */
static orb_slot_hdr_t *wait_slot(orb_conn_t *conn, int send, size_t bytes, int yield, double deadline)
{
    for (unsigned k = 1;; k++) {
        orb_slot_hdr_t *h = send ? conn->ops->send_acquire(conn, bytes) : conn->ops->recv_acquire(conn);
        if (h)
            return h;
        if (wait_turn(k, yield, deadline))
            return NULL;
    }
}

static void post(orb_conn_t *sc, orb_slot_hdr_t *h, int rank, uint32_t round, uint64_t last, uint32_t nbytes)
{
    const orb_slot_hdr_t hdr = {.step = round, .count = last, .nbytes = nbytes, .sender = rank};
    orb_piece_hdr_put(h, &hdr);
    sc->ops->send_post(sc);
}

/* The median interval between consecutive times t[0..n) (overwrites t); 0 when there is none. */
static double median_interval(double *t, int n)
{
    if (n < 2)
        return 0;
    for (int i = 1; i < n; i++)
        t[i - 1] = t[i] - t[i - 1];
    return orb_median(t, n - 1);
}

/* single: the pieces of whole read with one copy each, as a receiver reads a single-copy
 * piece (this process's own pages: the kernel pins and copies them as it would a peer's), into
 * a buffer of their size, touched first. The ranks do it at about the same time, as they
 * would read their peers' pieces. Three passes, the last timed, piece by piece: the kernel's
 * first pins of a page cost more (passes of 6 MiB on the Zen 3 VM: 1.0, 3.5, then 5.0 GB/s),
 * and a call's buffers are a training loop's, read again every step. GB/s at the median
 * piece's time, or 0 when a read or the memory failed. */
static double single_read(const char *whole, size_t bytes, int pieces)
{
    char *to = malloc(bytes * (size_t)pieces), err[256];
    double *t = malloc(sizeof *t * (size_t)pieces);
    if (!to || !t) {
        free(to);
        free(t);
        return 0;
    }
    memset(to, 0, bytes * (size_t)pieces);
    for (int pass = 0; pass < 3; pass++)
        for (int p = 0; p < pieces; p++) {
            const double t0 = orb_now();
            if (orb_cma_read((int32_t)getpid(), to + (size_t)p * bytes,
                             (uint64_t)(uintptr_t)(whole + (size_t)p * bytes), bytes, err, sizeof err) != ORB_OK) {
                free(to);
                free(t);
                return 0;
            }
            t[p] = orb_now() - t0;
        }
    const double m = orb_median(t, pieces);
    free(to);
    free(t);
    return m > 0 ? (double)bytes / m / 1e9 : 0;
}

/* hot: pieces of `bytes` exchanged around the ring, every rank sending to the next and
 * receiving from the previous at once (an all-gather's step, a send/recv pair), from one
 * buffer written once (what a call of some hundred KiB sends from stays in the caches):
 * through the slots (each rank copies in what it sends and out what it receives: single 0)
 * or as the address of that buffer, which the next rank reads with one copy (single 1, as a
 * single-copy piece is read: the reader's system call, the writer's pages pinned, the lines
 * fetched from its core; each rank copies once). A one-way chain would not tell the two
 * apart: there the slots' two copies run on two cores at once. GB/s at the median interval
 * between pieces; *gbps 0 when a read failed (the peer's pages are closed to this rank:
 * single-copy pieces then never go its way either). */
static orb_status_t hot_exchange(struct orb_comm *c, int single, size_t bytes, int yield, double deadline,
                                 double *gbps)
{
    const int nch = c->nchannels;
    orb_conn_t *sc = &c->send[(size_t)c->ring_next * (size_t)nch], *rc = &c->recv[(size_t)c->ring_prev * (size_t)nch];
    const int32_t prev_pid = c->bs.cards[c->ring_prev].pid;
    const int pieces = 3 * (int)c->nslots, warm = (int)c->nslots;
    char *src = malloc(bytes), *dst = malloc(bytes), cerr[256];
    double *done = malloc(sizeof *done * (size_t)pieces);
    *gbps = 0;
    if (!src || !dst || !done) {
        free(src);
        free(dst);
        free(done);
        return ORB_ERR_NO_MEMORY;
    }
    memset(src, c->rank + 1, bytes);
    memset(dst, 0, bytes);
    int ndone = 0, failed = 0;
    orb_status_t st = ORB_OK;
    for (int p = 0; p < pieces; p++) {
        orb_slot_hdr_t *in, *out;
        if (!(out = wait_slot(sc, 1, bytes, yield, deadline))) {
            st = ORB_ERR_TIMEOUT;
            break;
        }
        if (!single)
            memcpy(out + 1, src, bytes);
        const orb_slot_hdr_t hdr = {.step = (uint32_t)p, .nbytes = single ? 0 : (uint32_t)bytes, .sender = c->rank,
                                    .addr = single ? (uint64_t)(uintptr_t)src : 0};
        orb_piece_hdr_put(out, &hdr);
        sc->ops->send_post(sc);
        if (!(in = wait_slot(rc, 0, 0, yield, deadline))) {
            st = ORB_ERR_TIMEOUT;
            break;
        }
        if (!single)
            memcpy(dst, in + 1, bytes);
        else if (failed || !in->addr || orb_cma_read(prev_pid, dst, in->addr, bytes, cerr, sizeof cerr) != ORB_OK)
            failed = 1; /* (the exchange goes on: the others wait for this rank's pieces) */
        rc->ops->recv_release(rc);
        if (p >= warm)
            done[ndone++] = orb_now();
    }
    /* src is read from this process until the next rank has released its last piece */
    for (unsigned k = 1; st == ORB_OK && single && !orb_conn_released(sc, sc->pos); k++)
        if (wait_turn(k, yield, deadline))
            st = ORB_ERR_TIMEOUT;
    const double t = median_interval(done, ndone);
    if (st == ORB_OK && !failed && t > 0)
        *gbps = (double)bytes / t / 1e9;
    free(src);
    free(dst);
    free(done);
    return st;
}

/* The token round (alpha) and the chain (beta) around the ring, from this rank's view: each
 * the median of its intervals. */
static orb_status_t measure(struct orb_comm *c, int yield, double deadline, calib_fig_t *fig, char *err,
                            size_t errlen)
{
    const int n = c->nranks, nch = c->nchannels;
    int pos = 0;
    while (c->ring[pos] != c->rank)
        pos++;
    orb_conn_t *sc = &c->send[(size_t)c->ring_next * (size_t)nch], *rc = &c->recv[(size_t)c->ring_prev * (size_t)nch];
    const char *lost = "rank %d: the calibration of the links stalled waiting for rank %d (ORBIT_CALIBRATE=0 skips it)";
    *fig = (calib_fig_t){0, 0, 0, 0, 0};

    /* alpha: rounds of a token; the first rank says which round is the last. at[]: when the
     * token came back (the first rank, which also notes the timed rounds' start) or arrived
     * (the others), from round WARM_ROUNDS on: the intervals are rounds. */
    double at[MAX_ROUNDS + 1], t_first = 0;
    int nat = 0;
    uint64_t last = 0;
    for (uint32_t r = 0; !last; r++) {
        orb_slot_hdr_t *h;
        if (pos == 0) {
            const double now = orb_now();
            if (r == WARM_ROUNDS)
                at[nat++] = t_first = now;
            last = r + 1 >= MAX_ROUNDS || (r > WARM_ROUNDS && now - t_first > ROUND_BUDGET_S);
            if (!(h = wait_slot(sc, 1, 0, yield, deadline)))
                goto stalled_next;
            post(sc, h, c->rank, r, last, 0);
            if (!(h = wait_slot(rc, 0, 0, yield, deadline)))
                goto stalled_prev;
            rc->ops->recv_release(rc);
            if (r >= WARM_ROUNDS)
                at[nat++] = orb_now();
        } else {
            if (!(h = wait_slot(rc, 0, 0, yield, deadline)))
                goto stalled_prev;
            last = h->count;
            rc->ops->recv_release(rc);
            if (r >= WARM_ROUNDS && nat <= MAX_ROUNDS)
                at[nat++] = orb_now();
            if (!(h = wait_slot(sc, 1, 0, yield, deadline)))
                goto stalled_next;
            post(sc, h, c->rank, r, last, 0);
        }
    }
    fig->alpha_us = median_interval(at, nat) * 1e6 / n;

    /* beta: pieces of a slot down the ring from its first rank, copied on as a chain does,
     * each from and to its own place in a buffer of all of them (touched first): what a
     * large call moves comes from memory and goes back to it, not from the caches */
    const size_t bytes = c->slot_bytes;
    const int pieces = 3 * (int)c->nslots, warm = (int)c->nslots;
    char *whole = malloc(bytes * (size_t)pieces);
    double *done = malloc(sizeof *done * (size_t)pieces);
    if (!whole || !done) {
        free(whole);
        free(done);
        snprintf(err, errlen, "rank %d: no memory for the %zu-byte calibration buffer", c->rank, bytes * (size_t)pieces);
        return ORB_ERR_NO_MEMORY;
    }
    memset(whole, c->rank + 1, bytes * (size_t)pieces);
    /* the first pass over the slots faults their pages in (the segment grows lazily): the
     * clock starts after it */
    int ndone = 0;
    for (int p = 0; p < pieces; p++) {
        orb_slot_hdr_t *in = NULL, *out = NULL;
        char *buf = whole + (size_t)p * bytes;
        if (pos > 0 && !(in = wait_slot(rc, 0, 0, yield, deadline)))
            goto stalled_prev_buf;
        if (in) /* out of the slot into this rank's buffer */
            memcpy(buf, in + 1, bytes);
        if (pos < n - 1) {
            if (!(out = wait_slot(sc, 1, bytes, yield, deadline)))
                goto stalled_next_buf;
            memcpy(out + 1, buf, bytes);
            post(sc, out, c->rank, (uint32_t)p, 0, (uint32_t)bytes);
        }
        if (in)
            rc->ops->recv_release(rc);
        if (p >= warm)
            done[ndone++] = orb_now();
    }
    const double piece_us = median_interval(done, ndone) * 1e6;
    fig->beta_gbps = piece_us > fig->alpha_us ? (double)bytes / (piece_us - fig->alpha_us) / 1e3
                                              : piece_us > 0 ? (double)bytes / piece_us / 1e3 : 0;
    fig->single_gbps = single_read(whole, bytes, pieces);
    free(whole);
    free(done);
    const size_t hot = orb_calib_hot_bytes(c);
    orb_status_t st = hot_exchange(c, 0, hot, yield, deadline, &fig->hot_slots_gbps);
    if (st == ORB_OK)
        st = hot_exchange(c, 1, hot, yield, deadline, &fig->hot_single_gbps);
    if (st == ORB_ERR_NO_MEMORY)
        snprintf(err, errlen, "rank %d: no memory for the calibration's %zu-byte pieces", c->rank, hot);
    else if (st != ORB_OK)
        snprintf(err, errlen, "rank %d: the calibration of the links stalled waiting for rank %d or %d "
                              "(ORBIT_CALIBRATE=0 skips it)", c->rank, c->ring_prev, c->ring_next);
    return st;
stalled_next_buf:
    free(whole);
    free(done);
stalled_next:
    snprintf(err, errlen, lost, c->rank, c->ring_next);
    return ORB_ERR_TIMEOUT;
stalled_prev_buf:
    free(whole);
    free(done);
stalled_prev:
    snprintf(err, errlen, lost, c->rank, c->ring_prev);
    return ORB_ERR_TIMEOUT;
}

/* The worst figures of the ranks' (largest alpha, smallest beta and single copy): every rank
 * prices alike. Ranks without a figure (0) do not count for alpha and beta; a failed
 * single-copy read (0) does. */
static calib_fig_t worst_of(const calib_view_t *all, int n, int prior)
{
    double alpha = 0, beta = INFINITY, single = INFINITY, hs = INFINITY, hg = INFINITY;
    for (int r = 0; r < n; r++) {
        const calib_fig_t *f = prior ? &all[r].prior : &all[r].now;
        if (f->alpha_us > 0)
            alpha = fmax(alpha, f->alpha_us);
        if (f->beta_gbps > 0)
            beta = fmin(beta, f->beta_gbps);
        single = fmin(single, f->single_gbps);
        hs = fmin(hs, f->hot_slots_gbps);
        hg = fmin(hg, f->hot_single_gbps);
    }
    return (calib_fig_t){alpha, isfinite(beta) ? beta : 0, isfinite(single) && single > 0 ? single : 0,
                         isfinite(hs) ? hs : 0, isfinite(hg) ? hg : 0};
}

static int believable(const calib_fig_t *f) { return f->alpha_us > 0 && f->alpha_us < 1e6 && f->beta_gbps > 0; }

orb_status_t orb_comm_calibrate(struct orb_comm *c, double spin_s, double deadline, char *err, size_t errlen)
{
    const int mode = (int)orb_param_num(ORB_PARAM_CALIBRATE);
    if (mode <= 0 || c->nranks < 2)
        return ORB_OK;
    calib_view_t *all = calloc((size_t)c->nranks, sizeof *all);
    if (!all) {
        snprintf(err, errlen, "no memory for the link calibration of %d ranks", c->nranks);
        return ORB_ERR_NO_MEMORY;
    }
    calib_view_t *mine = &all[c->rank];
    mine->can = 1;
    for (int r = 0; r < c->nranks; r++)
        if (r != c->rank && !orb_comm_peer_shm(c, r))
            mine->can = 0;
    char path[4096], key[256];
    cache_path(path, sizeof path);
    const int oversubscribed = spin_s == 0, use_file = path[0] && strcmp(path, "none") != 0;
    cache_key(c, oversubscribed, key, sizeof key);
    if (mine->can && mode == 1 && use_file) /* 2 starts the line afresh: no prior */
        mine->jobs = cache_read(path, key, &mine->prior);
    mine->cached = mine->jobs >= CALIB_JOBS;
    orb_status_t st = orb_bootstrap_allgather(&c->bs, all, sizeof *all, deadline);
    int can = 1, cached = 1;
    for (int r = 0; st == ORB_OK && r < c->nranks; r++) {
        can &= all[r].can;
        cached &= all[r].cached;
    }
    if (st == ORB_OK && can && !cached) { /* every rank measures, or none */
        st = measure(c, oversubscribed, deadline, &mine->now, err, errlen);
        if (st == ORB_OK)
            st = orb_bootstrap_allgather(&c->bs, all, sizeof *all, deadline);
        else if (st == ORB_ERR_TIMEOUT && !err[0])
            snprintf(err, errlen, "rank %d: the link calibration did not finish", c->rank);
    }
    if (st != ORB_OK) {
        if (!err[0])
            snprintf(err, errlen, "a rank left while the links were calibrated");
        free(all);
        return st;
    }
    if (can) {
        /* The ranks read one file; their lines differ only when another job wrote it between
         * their reads: the line of most jobs stands, the same on every rank (when cached,
         * every rank has one). */
        int from = -1;
        for (int r = 0; r < c->nranks; r++)
            if (all[r].jobs > 0 && (from < 0 || all[r].jobs > all[from].jobs))
                from = r;
        calib_fig_t fig = worst_of(all, c->nranks, cached);
        int jobs = cached ? all[from].jobs : 1;
        if (!cached && from >= 0 && believable(&fig) && believable(&all[from].prior)) { /* the best of both */
            const calib_fig_t *p = &all[from].prior;
            fig = (calib_fig_t){fmin(fig.alpha_us, p->alpha_us), fmax(fig.beta_gbps, p->beta_gbps),
                                fmax(fig.single_gbps, p->single_gbps), fmax(fig.hot_slots_gbps, p->hot_slots_gbps),
                                fmax(fig.hot_single_gbps, p->hot_single_gbps)};
            jobs = all[from].jobs + 1;
        }
        if (believable(&fig)) {
            c->shm_measured = (orb_link_cost_t){fig.alpha_us, fig.beta_gbps, 0, 0}; /* the L2 and the load: comm_links.c */
            c->shm_measured_how = cached ? 2 : 1;
            c->shm_single_gbps = fig.single_gbps;
            c->shm_hot_slots_gbps = fig.hot_slots_gbps;
            c->shm_hot_single_gbps = fig.hot_single_gbps;
            if (!cached && c->rank == c->ring[0] && use_file)
                cache_write(path, key, &fig, jobs);
            char best[64] = "";
            if (jobs > 1)
                snprintf(best, sizeof best, ", best of %d jobs", jobs);
            ORB_INFO("rank %d: tuner links inside this host: %.3f us, %.2f GB/s, single copy %.2f GB/s; pieces of %zu "
                     "KiB in the caches %.2f GB/s through the slots, %.2f GB/s single copy (%s%s%s)",
                     c->rank, fig.alpha_us, fig.beta_gbps, fig.single_gbps, orb_calib_hot_bytes(c) >> 10,
                     fig.hot_slots_gbps, fig.hot_single_gbps,
                     cached ? "from the cache " : "measured at init", cached ? path : "", best);
        } else {
            ORB_WARN("rank %d: the link calibration gave %.3g us, %.3g GB/s: not believable, the transport's "
                     "constants stand", c->rank, fig.alpha_us, fig.beta_gbps);
        }
    }
    free(all);
    return ORB_OK;
}
