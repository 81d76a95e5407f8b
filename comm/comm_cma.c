/* Which same-host peers this rank may read with single-copy reads (transport/cma.h), agreed
 * at init: every rank shows where its random token lives, reads every shared-memory peer's,
 * and tells the others which reads worked. A pair uses it in one direction only when the
 * reader could read the writer: a sender never posts an address its receiver cannot follow.
 * Collective (two all-gathers), whatever ORBIT_CMA_BYTES says, so every rank takes the same
 * path through init. The size it starts from by itself (twice the L2) assumes the kernel's
 * one copy beats two through the slots once a call no longer fits the caches; where the link
 * calibration (comm_calib.c) measured it slower, no pieces go single-copy unless
 * ORBIT_CMA_BYTES names a size, and where it measured the one copy faster for pieces in the
 * caches too (ORB_CALIB_HOT_BYTES), calls send them from that size on. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/comm_impl.h"
#include "core/log.h"
#include "core/param.h"
#include "transport/cma.h"
#include "transport/window.h"

typedef struct {
    uint64_t addr, token;
    int32_t win_fd; /* this process's window table (window.h); -1: none */
    int32_t pad;
} cma_card_t;

#define CAN_READ 1u /* can[r * n + p]: rank r reads rank p with single copies */
#define CAN_MAP 2u  /* ... and maps its windows */

orb_status_t orb_comm_cma_setup(struct orb_comm *c, double deadline, char *err, size_t errlen)
{
    const int n = c->nranks, me = c->rank;
    const size_t base = orb_comm_cma_threshold(); /* ORBIT_CMA_BYTES, else twice the L2 */
    const int on = base > 0, by_size = orb_param_num(ORB_PARAM_CMA_BYTES) == 0;
    /* every rank has the same figures (agreed by the calibration), so the same verdict */
    const double single = c->shm_single_gbps, slots = c->shm_measured.beta_gbps;
    const double hot_single = c->shm_hot_single_gbps, hot_slots = c->shm_hot_slots_gbps;
    /* from memory (twice the L2 on): slower than the slots, then none from there; in the
     * caches: faster, then from ORB_CALIB_HOT_BYTES (up to twice the L2 where slower beyond) */
    const int slower = on && by_size && c->shm_measured_how && single > 0 && single < slots;
    const int hot = on && by_size && c->shm_measured_how && hot_slots > 0 && hot_single > hot_slots &&
                    base > ORB_CALIB_HOT_BYTES;
    const size_t threshold = hot ? ORB_CALIB_HOT_BYTES : base, upto = !slower ? SIZE_MAX : hot ? base : 0;
    cma_card_t *cards = calloc((size_t)n, sizeof *cards);
    uint8_t *can = calloc((size_t)n * (size_t)n, 1); /* CAN_READ, CAN_MAP */
    c->peer_windows = calloc((size_t)n, sizeof *c->peer_windows);
    if (!cards || !can || !c->peer_windows) {
        free(cards);
        free(can);
        snprintf(err, errlen, "no memory for the single-copy table of %d ranks", n);
        return ORB_ERR_NO_MEMORY;
    }
    char werr[200] = "";
    const int windows = orb_param_num(ORB_PARAM_WINDOWS) != 0;
    cards[me] = (cma_card_t){on ? orb_cma_token_addr() : 0, on ? orb_cma_token() : 0,
                             windows ? orb_window_table_fd(werr, sizeof werr) : -1, 0};
    if (windows && cards[me].win_fd < 0)
        ORB_WARN("rank %d: %s; peers will read its windows (orb_mem_alloc) with single copies", me, werr);
    orb_status_t st = orb_bootstrap_allgather(&c->bs, cards, sizeof *cards, deadline);
    int readable = 0, local = 0, mapped = 0;
    for (int p = 0; st == ORB_OK && p < n; p++) {
        const int shm = orb_comm_peer_shm(c, p);
        local += shm;
        if (on && shm && cards[p].addr && orb_cma_probe(c->bs.cards[p].pid, cards[p].addr, cards[p].token)) {
            can[(size_t)me * (size_t)n + (size_t)p] |= CAN_READ;
            readable++;
        }
        if (windows && shm && cards[p].win_fd >= 0) {
            c->peer_windows[p] = orb_peer_windows_open(c->bs.cards[p].pid, cards[p].win_fd, werr, sizeof werr);
            if (c->peer_windows[p]) {
                can[(size_t)me * (size_t)n + (size_t)p] |= CAN_MAP;
                mapped++;
            } else
                ORB_INFO("rank %d: rank %d's windows go through the slots or single copies: %s", me, p, werr);
        }
    }
    if (st == ORB_OK)
        st = orb_bootstrap_allgather(&c->bs, can, (size_t)n, deadline);
    if (st != ORB_OK) {
        snprintf(err, errlen, "a rank left while the single-copy table was exchanged");
        free(cards);
        free(can);
        return st;
    }
    int writable = 0;
    c->window_readers = 0;
    for (int p = 0; p < n; p++) {
        const unsigned mine = can[(size_t)me * (size_t)n + (size_t)p], theirs = can[(size_t)p * (size_t)n + (size_t)me];
        const int i_read = (mine & CAN_READ) != 0, p_reads = (theirs & CAN_READ) != 0, p_maps = (theirs & CAN_MAP) != 0;
        writable += p_reads;
        c->window_readers += p_maps; /* (never set for this rank itself: not a shared-memory peer) */
        if (!orb_comm_peer_shm(c, p)) /* other transports set their own (tcp: ORB_ADDR_LOCAL) */
            continue;
        for (int ch = 0; ch < c->nchannels; ch++) {
            orb_conn_t *s = &c->send[(size_t)p * (size_t)c->nchannels + (size_t)ch];
            orb_conn_t *r = &c->recv[(size_t)p * (size_t)c->nchannels + (size_t)ch];
            r->cma_pid = i_read ? c->bs.cards[p].pid : 0;
            r->windows = c->peer_windows[p];
            s->addr_kind = (p_reads && on && upto ? ORB_ADDR_PEER : 0u) | (p_maps ? ORB_ADDR_WINDOW : 0u);
            s->addr_min = ORB_CMA_MIN_PIECE;
        }
    }
    char from[160] = "", below[64] = "";
    if (hot)
        snprintf(from, sizeof from, " (pieces of %zu KiB in the caches, sent both ways at once: one copy %.2f GB/s, "
                 "the slots %.2f GB/s)", orb_calib_hot_bytes(c) >> 10, hot_single, hot_slots);
    if (upto != SIZE_MAX)
        snprintf(below, sizeof below, ", below %zu,", upto);
    if (slower && local)
        ORB_INFO("rank %d: no single-copy pieces%s: the kernel's one copy measured %.2f GB/s against %.2f GB/s "
                 "through the slots (ORBIT_CMA_BYTES=%zu sends them anyway)", me, hot ? " from memory" : "", single,
                 slots, base);
    if (upto && on && local)
        ORB_INFO("rank %d: calls of %zu input bytes or more%s send single-copy pieces%s: it reads %d of its %d "
                 "shared-memory peers, %d read it%s", me, threshold, below, from, readable, local, writable,
                 readable < local ? " (the others refused process_vm_readv: ptrace rules or another PID namespace)"
                                  : "");
    if (windows && local)
        ORB_INFO("rank %d: maps the windows (orb_mem_alloc) of %d of its %d shared-memory peers, %d map its own", me,
                 mapped, local, c->window_readers);
    c->cma_bytes = writable && upto ? threshold : 0;
    const size_t streamed = orb_comm_stream_bytes(); /* from there the slot path streams its output */
    c->cma_upto = upto < streamed ? upto : streamed;
    /* the transports that send pieces from the caller's buffer themselves (tcp), from which size */
    c->local_send_bytes = 0;
    for (size_t i = 0; i < (size_t)n * (size_t)c->nchannels; i++) {
        const size_t b = c->send[i].addr_min;
        if (c->send[i].addr_kind == ORB_ADDR_LOCAL && (!c->local_send_bytes || b < c->local_send_bytes))
            c->local_send_bytes = b;
    }
    free(cards);
    free(can);
    return ORB_OK;
}
