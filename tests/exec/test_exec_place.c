/* The CPU executor's requests to write received pieces straight into the call's buffers
 * (orb_conn_ops_t.recv_place, exec_cpu.c place_ask), with no processes and no sockets: rank
 * 0's executor runs hand-built lanes against one connection from rank 1 that lives in this
 * file. The connection places a piece the way a socket transport does, at the earliest
 * moment one can: every piece of the run arrives the first time the executor waits, and each
 * one a request names (its position, call and size) goes to the requested address instead of
 * its slot, whose payload is then poison.
 *
 *   - which pieces are asked for: the RECV steps' among the next positions, each at its own
 *     address and size (the table of requests is compared entry by entry), and no step whose
 *     bytes an earlier step still reads or writes: in place (a later RECV lands where an
 *     earlier reduction reads its src) and out of place (where an earlier step writes);
 *   - the outputs, exact, against plain arithmetic, with the bytes around them untouched: a
 *     piece written early where an earlier step still reads, or taken from its (poisoned)
 *     slot although it was placed, shows here;
 *   - a run that fails (a piece that never comes: ORBIT_TIMEOUT's error) withdraws its
 *     requests before it returns;
 *   - a piece that is passed on (RECV_COPY_SEND) is placed too, and goes on as its address in
 *     the output where the call allows sends from there, else copied into the outgoing slot;
 *   - a group of two operations asks for nothing (their pieces may share a connection).
 * Prints "N failed"; exits 1 on any failure. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collectives/exec.h"
#include "tests/common/check.h"
#include "tests/common/exec_stubs.h"

#define PIECE 16384 /* bytes: the slot, and at least what the executor asks to place */
#define ELEMS (PIECE / 4)
#define NSLOTS 16
#define MAXP 16
#define CALL 5
#define POISON 0x7f7f7f7f
#define UNTOUCHED 0x55555555

/* ---- rank 1's connection to rank 0 ---------------------------------------------------- */

typedef struct {
    orb_conn_t c;
    orb_fifo_ctrl_t ctrl;
    _Alignas(64) char slots[NSLOTS][sizeof(orb_slot_hdr_t) + PIECE];
    uint32_t bytes[MAXP]; /* the pieces rank 1 sends, in order */
    int npieces, deliver_max;
    int delivered;
    orb_place_t want[MAXP]; /* the latest request for each position (bytes 0: none) */
    orb_place_t log[64];    /* every requested entry, in order */
    int log_at[64];         /* and how many pieces had come when it was asked for */
    int nlog, requests, withdrawn, withdrawn_after;
} mock_t;

static mock_t m;

/* What rank 1's piece k holds at element i. */
static int32_t piece_val(int k, size_t i) { return (int32_t)(1000003 * (k + 1) + (int32_t)(i * 7) % 100000); }

static orb_slot_hdr_t *slot_of(uint64_t pos) { return (orb_slot_hdr_t *)m.slots[pos % NSLOTS]; }

static void deliver_all(void)
{
    for (; m.delivered < m.npieces && m.delivered < m.deliver_max; m.delivered++) {
        const int k = m.delivered;
        orb_slot_hdr_t *h = slot_of((uint64_t)k);
        *h = (orb_slot_hdr_t){.seq = CALL, .nbytes = m.bytes[k], .sender = 1, .step = (uint32_t)k};
        int32_t *p = (int32_t *)(h + 1);
        const orb_place_t *w = &m.want[k];
        int32_t *to = p;
        if (w->bytes && w->pos == (uint64_t)k && w->call == h->seq && w->bytes == h->nbytes) {
            to = (int32_t *)w->dst;
            h->flags |= ORB_PIECE_PLACED;
            h->addr = (uint64_t)(uintptr_t)w->dst;
            for (size_t i = 0; i < PIECE / 4; i++)
                p[i] = POISON;
        }
        for (size_t i = 0; i < m.bytes[k] / 4; i++)
            to[i] = piece_val(k, i);
    }
}

static orb_slot_hdr_t *mock_recv_acquire(orb_conn_t *c)
{
    return c->pos < (uint64_t)m.delivered ? slot_of(c->pos) : NULL;
}

static void mock_recv_release(orb_conn_t *c)
{
    memset(slot_of(c->pos), 0xee, sizeof m.slots[0]);
    c->pos++;
}

static void mock_recv_place(orb_conn_t *c, const orb_place_t *want, int n)
{
    (void)c;
    if (n < 0) {
        m.withdrawn++;
        m.withdrawn_after = m.requests;
        memset(m.want, 0, sizeof m.want);
        return;
    }
    m.requests++;
    for (int k = 0; k < n; k++) {
        if (want[k].pos < MAXP)
            m.want[want[k].pos] = want[k];
        if (m.nlog < 64) {
            m.log_at[m.nlog] = m.delivered;
            m.log[m.nlog++] = want[k];
        }
    }
}

/* ---- rank 0's connection to rank 1, for steps that pass pieces on: a socket that takes each
 * piece the moment it is posted, reading it from its slot or, posted as an address, from there */

typedef struct {
    orb_conn_t c;
    orb_fifo_ctrl_t ctrl;
    _Alignas(64) char slots[NSLOTS][sizeof(orb_slot_hdr_t) + PIECE];
    int n;
    uint32_t flags[MAXP];
    uint64_t addr[MAXP];
    size_t wrong[MAXP]; /* bytes that differ from the piece received at the same position */
} tx_mock_t;

static tx_mock_t tx;

static orb_slot_hdr_t *mock_send_acquire(orb_conn_t *c, size_t bytes)
{
    (void)bytes;
    return (orb_slot_hdr_t *)tx.slots[c->pos % NSLOTS];
}

static void mock_send_post(orb_conn_t *c)
{
    const orb_slot_hdr_t *h = (const orb_slot_hdr_t *)tx.slots[c->pos % NSLOTS];
    const int k = tx.n++;
    if (k < MAXP) {
        const int32_t *p =
            (h->flags & ORB_PIECE_REMOTE) ? (const int32_t *)(uintptr_t)h->addr : (const int32_t *)(h + 1);
        tx.flags[k] = h->flags;
        tx.addr[k] = h->addr;
        for (size_t i = 0; i < h->nbytes / 4; i++)
            tx.wrong[k] += p[i] != piece_val(k, i);
    }
    c->pos++;
    atomic_store(&c->ctrl->tail, c->pos); /* gone: the slot and the address are free again */
}

static const orb_conn_ops_t mock_ops = {.name = "mock",
                                        .send_acquire = mock_send_acquire,
                                        .send_post = mock_send_post,
                                        .recv_acquire = mock_recv_acquire,
                                        .recv_release = mock_recv_release,
                                        .recv_place = mock_recv_place};

static void mock_reset(const uint32_t *bytes, int n, int deliver_max)
{
    memset(&m, 0, sizeof m);
    m.c = (orb_conn_t){.ops = &mock_ops, .peer = 1, .channel = 0, .ctrl = &m.ctrl, .slots = (char *)m.slots,
                       .slot_stride = sizeof m.slots[0], .slot_bytes = PIECE, .nslots = NSLOTS};
    memcpy(m.bytes, bytes, sizeof *bytes * (size_t)n);
    m.npieces = n;
    m.deliver_max = deliver_max;
    memset(&tx, 0, sizeof tx);
    tx.c = (orb_conn_t){.ops = &mock_ops, .peer = 1, .channel = 0, .ctrl = &tx.ctrl, .slots = (char *)tx.slots,
                        .slot_stride = sizeof tx.slots[0], .slot_bytes = PIECE, .nslots = NSLOTS,
                        .addr_kind = ORB_ADDR_LOCAL, .addr_min = PIECE};
}

/* ---- the communicator around rank 0's executor ---------------------------------------- */

static void env_sleep(void *ctx, uint32_t seen, double max_s)
{
    (void)ctx;
    (void)seen;
    (void)max_s;
    deliver_all(); /* everything rank 1 sends comes the first time rank 0 waits */
}

static orb_status_t run(orb_exec_op_t *ops, int nops, double timeout_s, char *err, size_t errlen)
{
    orb_conn_t recv[2] = {{0}, m.c}, send[2] = {{0}, tx.c};
    orb_exec_env_t env = {.rank = 0, .nranks = 2, .nchannels = 1, .send = send, .recv = recv, .arm = stub_arm,
                          .disarm = stub_disarm, .sleep = env_sleep, .check = stub_check, .post_error = stub_post_error,
                          .slot_bytes = PIECE, .timeout_s = timeout_s, .spin_s = 0, .yield_s = 0, .idle_mask = 15};
    orb_status_t st = orb_exec_run(&env, ops, nops, err, errlen);
    m.c.pos = recv[1].pos;
    return st;
}

/* A plan of one lane of n steps. */
static orb_plan_t one_lane(orb_step_t *steps, size_t n)
{
    orb_plan_t plan = {.nlanes = 1};
    plan.lanes[0].steps = steps;
    plan.lanes[0].nsteps = n;
    return plan;
}

static orb_exec_op_t op_for(const orb_plan_t *plan, const void *in, void *out)
{
    return (orb_exec_op_t){.plan = plan, .in = in, .out = out, .dtype = ORB_INT32, .op = ORB_SUM,
                           .sig = {.seq = CALL}, .sync_next = -1, .sync_prev = -1};
}

/* ---- the cases ------------------------------------------------------------------------ */

#define BUF_ELEMS (8 * ELEMS)

/* Out of place, no overlap: a reduction of 2 pieces into out[0, 2), then a RECV of 2.5 pieces
 * into out[3, 5.5): asked for as the run starts, at their own addresses. */
static void case_ahead(void)
{
    static int32_t in[BUF_ELEMS], out[BUF_ELEMS];
    for (size_t i = 0; i < BUF_ELEMS; i++) {
        in[i] = (int32_t)(i % 1000);
        out[i] = UNTOUCHED;
    }
    const size_t half = ELEMS / 2;
    orb_step_t steps[2] = {
        {.kind = ORB_STEP_RECV_REDUCE_COPY, .src_buf = ORB_BUF_INPUT, .src_off = 0, .dst_off = 0, .send_peer = -1,
         .recv_peer = 1, .count = 2 * ELEMS},
        {.kind = ORB_STEP_RECV, .dst_off = 3 * ELEMS, .send_peer = -1, .recv_peer = 1, .count = 2 * ELEMS + half}};
    orb_plan_t plan = one_lane(steps, 2);
    const uint32_t bytes[5] = {PIECE, PIECE, PIECE, PIECE, PIECE / 2};
    mock_reset(bytes, 5, 5);
    orb_exec_op_t op = op_for(&plan, in, out);
    char err[512] = "";
    orb_status_t st = run(&op, 1, 10, err, sizeof err);
    CHECK(st == ORB_OK, "ahead: the run ends well (%s %s)", orb_status_name(st), err);
    /* the requests: positions 2, 3, 4 (the RECV's pieces) at out + 3, 4, 5 pieces */
    int placed_ok = m.want[2].bytes == PIECE && m.want[3].bytes == PIECE && m.want[4].bytes == PIECE / 2 &&
                    m.want[0].bytes == 0 && m.want[1].bytes == 0;
    for (int k = 2; k < 5; k++)
        placed_ok = placed_ok && m.want[k].pos == (uint64_t)k && m.want[k].call == CALL &&
                    m.want[k].dst == (char *)(out + (size_t)(k + 1) * ELEMS);
    CHECK(placed_ok,
          "ahead: the RECV's three pieces are asked for at out + 3, 4, 5 pieces (%d request(s), %d entries; "
          "position 2: %llu bytes at out + %td)",
          m.requests, m.nlog, (unsigned long long)m.want[2].bytes, m.want[2].dst ? (int32_t *)m.want[2].dst - out : -1);
    size_t wrong = 0, first = SIZE_MAX;
    for (size_t i = 0; i < BUF_ELEMS; i++) {
        int32_t want = UNTOUCHED;
        if (i < 2 * ELEMS)
            want = in[i] + piece_val((int)(i / ELEMS), i % ELEMS);
        else if (i >= 3 * ELEMS && i < 5 * ELEMS + half)
            want = piece_val(2 + (int)((i - 3 * ELEMS) / ELEMS), (i - 3 * ELEMS) % ELEMS);
        if (out[i] != want && wrong++ == 0)
            first = i;
    }
    CHECK(wrong == 0, "ahead: the output is exact, the rest untouched (%zu wrong, the first at element %zu)",
          wrong, first);
    CHECK(m.withdrawn == 0, "ahead: a run that ends well withdraws nothing");
}

/* A later RECV lands where an earlier step reads (in place: its src) or writes (out of place:
 * its dst): it may not be asked for until that step is done. */
static void case_overlap(int inplace)
{
    static int32_t in[BUF_ELEMS], out[BUF_ELEMS];
    int32_t *buf_in = inplace ? out : in;
    for (size_t i = 0; i < BUF_ELEMS; i++) {
        in[i] = (int32_t)(i % 1000);
        out[i] = inplace ? (int32_t)(i % 1000) : UNTOUCHED;
    }
    /* in place: reduce in[0, 2) into out[4, 6), then receive into out[0, 2) = in[0, 2);
     * out of place: reduce in[0, 2) into out[0, 2), then receive into out[0, 2) */
    const size_t rdst = inplace ? 4 * ELEMS : 0;
    orb_step_t steps[2] = {
        {.kind = ORB_STEP_RECV_REDUCE_COPY, .src_buf = ORB_BUF_INPUT, .src_off = 0, .dst_off = rdst, .send_peer = -1,
         .recv_peer = 1, .count = 2 * ELEMS},
        {.kind = ORB_STEP_RECV, .dst_off = 0, .send_peer = -1, .recv_peer = 1, .count = 2 * ELEMS}};
    orb_plan_t plan = one_lane(steps, 2);
    const uint32_t bytes[4] = {PIECE, PIECE, PIECE, PIECE};
    mock_reset(bytes, 4, 4);
    orb_exec_op_t op = op_for(&plan, buf_in, out);
    char err[512] = "";
    orb_status_t st = run(&op, 1, 10, err, sizeof err);
    const char *how = inplace ? "overlap, in place" : "overlap, out of place";
    CHECK(st == ORB_OK, "%s: the run ends well (%s %s)", how, orb_status_name(st), err);
    int asked = 0;
    for (int k = 0; k < m.nlog; k++)
        asked += m.log[k].pos >= 2 && m.log[k].pos < 4 && m.log_at[k] == 0;
    CHECK(asked == 0, "%s: the RECV's pieces are not asked for before the reduction's have come (%d entries early)",
          how, asked);
    size_t wrong = 0, first = SIZE_MAX;
    for (size_t i = 0; i < BUF_ELEMS; i++) {
        int32_t want = inplace ? (int32_t)(i % 1000) : UNTOUCHED;
        if (i < 2 * ELEMS)
            want = piece_val(2 + (int)(i / ELEMS), i % ELEMS);
        else if (inplace && i >= 4 * ELEMS && i < 6 * ELEMS)
            want = (int32_t)((i - 4 * ELEMS) % 1000) + piece_val((int)((i - 4 * ELEMS) / ELEMS), i % ELEMS);
        if (out[i] != want && wrong++ == 0)
            first = i;
    }
    CHECK(wrong == 0, "%s: the output is exact (%zu wrong, the first at element %zu)", how, wrong, first);
}

/* RECV_COPY_SEND (a ring's all-gather): the pieces are placed in the output and passed on from
 * there as its address where the call lets the transport send from its output, else copied
 * into the outgoing slots; either way the next rank gets each piece's bytes. */
static void case_forward(int from_output)
{
    static int32_t out[BUF_ELEMS];
    for (size_t i = 0; i < BUF_ELEMS; i++)
        out[i] = UNTOUCHED;
    orb_step_t steps[1] = {
        {.kind = ORB_STEP_RECV_COPY_SEND, .dst_off = ELEMS, .send_peer = 1, .recv_peer = 1, .count = 3 * ELEMS}};
    orb_plan_t plan = one_lane(steps, 1);
    const uint32_t bytes[3] = {PIECE, PIECE, PIECE};
    mock_reset(bytes, 3, 3);
    orb_exec_op_t op = op_for(&plan, out, out);
    op.addr_out = from_output ? ORB_ADDR_LOCAL : 0;
    char err[512] = "";
    orb_status_t st = run(&op, 1, 10, err, sizeof err);
    const char *how = from_output ? "forward, from the output" : "forward, through the slots";
    CHECK(st == ORB_OK, "%s: the run ends well (%s %s)", how, orb_status_name(st), err);
    int placed = 0;
    for (int k = 0; k < 3; k++)
        placed += m.want[k].bytes == PIECE && m.want[k].dst == (char *)(out + (size_t)(k + 1) * ELEMS);
    CHECK(placed == 3, "%s: all three pieces asked for at their places (%d)", how, placed);
    size_t wrong = 0, first = SIZE_MAX;
    for (size_t i = 0; i < BUF_ELEMS; i++) {
        const int32_t want = i >= ELEMS && i < 4 * ELEMS ? piece_val((int)(i / ELEMS) - 1, i % ELEMS) : UNTOUCHED;
        if (out[i] != want && wrong++ == 0)
            first = i;
    }
    CHECK(wrong == 0, "%s: the output is exact (%zu wrong, the first at element %zu)", how, wrong, first);
    CHECK(tx.n == 3, "%s: three pieces passed on (%d)", how, tx.n);
    for (int k = 0; k < 3 && k < tx.n; k++) {
        const int as_addr = (tx.flags[k] & ORB_PIECE_REMOTE) != 0;
        const uint64_t at = (uint64_t)(uintptr_t)(out + (size_t)(k + 1) * ELEMS);
        CHECK(as_addr == from_output && (!as_addr || tx.addr[k] == at) && tx.wrong[k] == 0,
              "%s: piece %d passed on %s (flags %u, at out + %td), %zu bytes wrong", how, k,
              as_addr ? "as an address" : "in its slot", tx.flags[k],
              as_addr ? (int32_t *)(uintptr_t)tx.addr[k] - out : -1, tx.wrong[k]);
    }
}

/* A piece that never comes: the run fails (ORBIT_TIMEOUT) and withdraws what it asked for. */
static void case_fail(void)
{
    static int32_t out[BUF_ELEMS];
    orb_step_t steps[1] = {{.kind = ORB_STEP_RECV, .dst_off = 0, .send_peer = -1, .recv_peer = 1, .count = 3 * ELEMS}};
    orb_plan_t plan = one_lane(steps, 1);
    const uint32_t bytes[3] = {PIECE, PIECE, PIECE};
    mock_reset(bytes, 3, 2);
    orb_exec_op_t op = op_for(&plan, out, out);
    char err[512] = "";
    orb_status_t st = run(&op, 1, 0.2, err, sizeof err);
    CHECK(st == ORB_ERR_TIMEOUT && strstr(err, "no progress") && strstr(err, "rank 1"),
          "fail: the run times out waiting for rank 1 (%s: %s)", orb_status_name(st), err);
    CHECK(m.requests >= 1 && m.withdrawn == 1 && m.withdrawn_after == m.requests,
          "fail: it asked (%d request(s)), then withdrew (%d time(s), after request %d)", m.requests, m.withdrawn,
          m.withdrawn_after);
}

/* Two operations grouped: the executor cannot tell which pieces are whose on a shared
 * connection ahead of time, so it asks for none. */
static void case_group(void)
{
    static int32_t out1[BUF_ELEMS], out2[BUF_ELEMS];
    orb_step_t s1[1] = {{.kind = ORB_STEP_RECV, .dst_off = 0, .send_peer = -1, .recv_peer = 1, .count = 2 * ELEMS}};
    orb_step_t s2[1] = {{.kind = ORB_STEP_RECV, .dst_off = 0, .send_peer = -1, .recv_peer = 1, .count = 2 * ELEMS}};
    orb_plan_t p1 = one_lane(s1, 1), p2 = one_lane(s2, 1);
    const uint32_t bytes[4] = {PIECE, PIECE, PIECE, PIECE};
    mock_reset(bytes, 4, 4);
    orb_exec_op_t ops[2] = {op_for(&p1, out1, out1), op_for(&p2, out2, out2)};
    char err[512] = "";
    orb_status_t st = run(ops, 2, 10, err, sizeof err);
    size_t wrong = 0;
    for (size_t i = 0; i < 2 * ELEMS; i++)
        wrong += (out1[i] != piece_val((int)(i / ELEMS), i % ELEMS)) +
                 (out2[i] != piece_val(2 + (int)(i / ELEMS), i % ELEMS));
    CHECK(st == ORB_OK && m.requests == 0 && wrong == 0,
          "group: ends well (%s %s), asks for nothing (%d request(s)), exact (%zu wrong)", orb_status_name(st), err,
          m.requests, wrong);
}

int main(void)
{
    case_ahead();
    case_overlap(1);
    case_overlap(0);
    case_forward(1);
    case_forward(0);
    case_fail();
    case_group();
    printf("%d failed\n", failures);
    return failures ? 1 : 0;
}
