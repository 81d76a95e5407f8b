/* How often a waiting executor yields the CPU (orb_exec_env_t.idle_mask: every idle_mask + 1
 * idle passes, ORBIT_YIELD_PASSES, comm_spin.c), with no processes: rank 0's executor waits for
 * one small piece from rank 1 on a connection that lives in this file and hands the piece over
 * only at its POLLS-th look, and the test counts the executor's looks and its sched_yield
 * calls (linked with --wrap=sched_yield). Each idle pass looks once (one lane, one receive), so
 * a waiting rank that yields every k-th pass yields POLLS / k times, give or take the passes
 * around the start and the end (the first idle pass tells held releases instead, the last one
 * finds the piece): at most SLACK apart. For the general executor (orb_exec_run) and the
 * eager path (orb_exec_eager), every 1st, 4th and 16th pass; while still spinning (spin_s
 * not over) neither yields at all. The piece's bytes are checked in the output.
 * Prints each failure and "N failed"; exits 1 on any failure. */
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "collectives/exec.h"
#include "tests/common/check.h"
#include "tests/common/exec_stubs.h"

#define POLLS 4096
#define SLACK 4
#define PIECE 64
#define NSLOTS 4
#define CALL 9

static long yields;
int __wrap_sched_yield(void);
int __wrap_sched_yield(void)
{
    yields++;
    return 0; /* the test runs alone: nothing to yield to, and no need to */
}

/* ---- rank 1's connection: the piece comes at the POLLS-th look ---------------------------- */

static struct {
    orb_conn_t c;
    orb_fifo_ctrl_t ctrl;
    _Alignas(64) char slots[NSLOTS][sizeof(orb_slot_hdr_t) + PIECE];
    long polls;
} m;

static int32_t piece_val(size_t i) { return (int32_t)(7919 * (i + 3)); }

static orb_slot_hdr_t *mock_recv_acquire(orb_conn_t *c)
{
    if (c->pos != 0 || ++m.polls < POLLS)
        return NULL;
    orb_slot_hdr_t *h = (orb_slot_hdr_t *)m.slots[0];
    *h = (orb_slot_hdr_t){.seq = CALL, .nbytes = PIECE, .sender = 1, .step = 0};
    int32_t *p = (int32_t *)(h + 1);
    for (size_t i = 0; i < PIECE / 4; i++)
        p[i] = piece_val(i);
    return h;
}

static void mock_recv_release(orb_conn_t *c) { c->pos++; }

static const orb_conn_ops_t mock_ops = {
    .name = "mock", .recv_acquire = mock_recv_acquire, .recv_release = mock_recv_release};

static void env_sleep(void *ctx, uint32_t seen, double max_s)
{
    (void)ctx;
    (void)seen;
    (void)max_s;
}

static orb_exec_env_t env_for(orb_conn_t *recv, orb_conn_t *send, double spin_s, unsigned idle_mask)
{
    memset(&m, 0, sizeof m);
    m.c = (orb_conn_t){.ops = &mock_ops, .peer = 1, .channel = 0, .ctrl = &m.ctrl, .slots = (char *)m.slots,
                       .slot_stride = sizeof m.slots[0], .slot_bytes = PIECE, .nslots = NSLOTS};
    recv[1] = m.c;
    yields = 0;
    /* yield_s far beyond the test: it never goes to sleep, and a slow machine changes nothing */
    return (orb_exec_env_t){.rank = 0, .nranks = 2, .nchannels = 1, .send = send, .recv = recv, .arm = stub_arm,
                            .disarm = stub_disarm, .sleep = env_sleep, .check = stub_check,
                            .post_error = stub_post_error, .slot_bytes = PIECE, .timeout_s = 1e6, .spin_s = spin_s,
                            .yield_s = 1e6, .idle_mask = idle_mask};
}

static int output_exact(const int32_t *out)
{
    for (size_t i = 0; i < PIECE / 4; i++)
        if (out[i] != piece_val(i))
            return 0;
    return 1;
}

/* yields as the policy says: none while spinning, else one every idle_mask + 1 looks */
static void check_yields(const char *path, double spin_s, unsigned idle_mask)
{
    const long want = spin_s > 0 ? 0 : POLLS / (long)(idle_mask + 1);
    const long lo = spin_s > 0 ? 0 : want - SLACK, hi = spin_s > 0 ? 0 : want + SLACK;
    CHECK(m.polls == POLLS, "%s, every %u passes, spin %g s: the piece taken at look %d (looked %ld times)", path,
          idle_mask + 1, spin_s, POLLS, m.polls);
    CHECK(yields >= lo && yields <= hi, "%s, every %u passes, spin %g s: %ld yields in %ld looks, want %ld..%ld", path,
          idle_mask + 1, spin_s, yields, m.polls, lo, hi);
}

static void case_general(double spin_s, unsigned idle_mask)
{
    orb_conn_t recv[2] = {{0}}, send[2] = {{0}};
    orb_exec_env_t env = env_for(recv, send, spin_s, idle_mask);
    static int32_t in[PIECE / 4], out[PIECE / 4];
    memset(out, 0, sizeof out);
    orb_step_t step = {.kind = ORB_STEP_RECV, .dst_off = 0, .send_peer = -1, .recv_peer = 1, .count = PIECE / 4};
    orb_plan_t plan = {.nlanes = 1};
    plan.lanes[0].steps = &step;
    plan.lanes[0].nsteps = 1;
    orb_exec_op_t op = {.plan = &plan, .in = in, .out = out, .dtype = ORB_INT32, .op = ORB_SUM,
                        .sig = {.seq = CALL}, .sync_next = -1, .sync_prev = -1};
    char err[256] = "";
    orb_status_t st = orb_exec_run(&env, &op, 1, err, sizeof err);
    CHECK(st == ORB_OK, "orb_exec_run, every %u passes: the run ends well (%s %s)", idle_mask + 1, orb_status_name(st),
          err);
    CHECK(output_exact(out), "orb_exec_run, every %u passes: the piece is in the output", idle_mask + 1);
    check_yields("orb_exec_run", spin_s, idle_mask);
}

static void case_eager(double spin_s, unsigned idle_mask)
{
    orb_conn_t recv[2] = {{0}}, send[2] = {{0}};
    orb_exec_env_t env = env_for(recv, send, spin_s, idle_mask);
    static int32_t out[PIECE / 4];
    memset(out, 0, sizeof out);
    orb_slot_hdr_t sig = {.seq = CALL};
    orb_eager_op_t op = {.peer = 1, .sends = 0, .dst = out, .bytes = PIECE, .sig = &sig, .vouch = ORB_VOUCH_NONE};
    char err[256] = "";
    const int left = orb_exec_eager(&env, &op, 1, err, sizeof err);
    CHECK(left == 0 && op.done, "orb_exec_eager, every %u passes: the receive is done (%d left, %s)", idle_mask + 1,
          left, err);
    CHECK(output_exact(out), "orb_exec_eager, every %u passes: the piece is in the output", idle_mask + 1);
    check_yields("orb_exec_eager", spin_s, idle_mask);
}

int main(void)
{
    const unsigned masks[] = {0, 3, 15};
    for (size_t k = 0; k < sizeof masks / sizeof *masks; k++) {
        case_general(0, masks[k]);
        case_eager(0, masks[k]);
    }
    /* still spinning (spin_s far beyond the test): no yield at all, whatever the mask */
    case_general(1e6, 3);
    case_eager(1e6, 3);
    printf("%d failed\n", failures);
    return failures ? 1 : 0;
}
