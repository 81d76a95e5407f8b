/* The CPU executor: runs plans on host buffers over transport connections.
 *
 * One call runs one or more operations (a group) to completion. Lanes of all operations
 * progress together, non-blocking, piece by piece; when nothing can move the executor spins
 * for spin_s (ORBIT_SPIN_US; 0 when the host has more ranks than CPUs), yields the CPU for
 * ORBIT_YIELD_US (the peer it waits for may need this core; every idle_mask + 1 idle passes,
 * ORBIT_YIELD_PASSES), then sleeps on the doorbell. A futex wake costs
 * tens of microseconds on a busy machine: two ranks that each sleep as soon as the other is
 * a little late fall into a convoy where every call pays that twice. Connections shared by several
 * operations of a group are used in issue order, so the pieces of one call never interleave
 * with another's on the same FIFO. */
#ifndef ORB_COLLECTIVES_EXEC_H
#define ORB_COLLECTIVES_EXEC_H

#include "collectives/plan.h"
#include "core/trace.h"
#include "transport/transport.h"

typedef struct {
    const orb_plan_t *plan;
    const void *in;
    void *out;
    void *scratch; /* plan->scratch_count elements, NULL when it needs none */
    orb_dtype_t dtype;
    orb_op_t op;
    int postdiv;        /* divisor applied by POSTOP steps (avg: nranks), else 0 */
    orb_slot_hdr_t sig; /* seq, count, coll, dtype, op, root of this call */
    /* Signature handshake before the plan (-1: none): an empty piece to sync_next and one from
     * sync_prev on channel 0. Rooted calls need it: ranks that disagree on the root could
     * otherwise all wait to receive, or all send and return, without one mismatched piece. */
    int sync_next, sync_prev;
    uint64_t trace_id; /* the call's id in the tracer's records (env->trace) */
    int stream_out;    /* copies into out bypass the caches (an output larger than they are) */
    /* Pieces from in (out) may travel as addresses on connections whose orb_conn_t.addr_kind
     * is among these (ORB_ADDR_* bits; 0: none): the call never writes that buffer, or
     * guard_writes is set and only connections that can take a piece back (settle) are among
     * them. */
    unsigned addr_in, addr_out;
    /* The plan may write where a piece still waits to leave as an address: before each write
     * the executor settles the lanes whose unsent address pieces it would overwrite. */
    int guard_writes;
    /* progress, owned by the executor */
    size_t step[ORB_MAX_CHANNELS];
    size_t done[ORB_MAX_CHANNELS];
    /* per lane, the connection and position of its last piece sent as an address: the call
     * ends only once its reader (orb_conn_t.addr_kind) has released it */
    orb_conn_t *cma_conn[ORB_MAX_CHANNELS];
    uint64_t cma_pos[ORB_MAX_CHANNELS];
    /* per lane, the connection whose pieces it asked to be written straight into this call's
     * buffer (orb_conn_ops_t.recv_place; NULL: none) and the step + 1 it asked for */
    orb_conn_t *place_conn[ORB_MAX_CHANNELS];
    size_t place_step[ORB_MAX_CHANNELS];
    /* with guard_writes: the bytes [addr_lo, addr_hi) span the lane's address pieces that may
     * not have left yet (empty: addr_lo == addr_hi) */
    uintptr_t addr_lo[ORB_MAX_CHANNELS], addr_hi[ORB_MAX_CHANNELS];
    int sync_sent, sync_recvd;
    /* The handshake's piece from sync_prev may stay due after the call (env->due): set for
     * rooted calls, whose senders otherwise wait a hop for a neighbour that has nothing to
     * send them. */
    int sync_defer;
    /* Set by orb_exec_run where the run has this call alone: the handshake rides on lane 0's
     * first piece (ORB_PIECE_SYNC) instead of a piece of its own, where that piece goes to
     * sync_next before the lane receives anything (ORB_SYNC_ON_FIRST: no rank waits for it on
     * a handshake of its own) or right after its first receive, from sync_prev
     * (ORB_SYNC_AFTER_RECV: a chain's forwarder, whose own piece would take a FIFO slot a
     * call; after ORB_EXEC_UNMERGE_S with nothing in from sync_prev it goes as a piece of its
     * own). */
    int sync_merge;
    /* Set by orb_exec_run for a rooted call of two ranks over shared memory whose data goes
     * one way only (ORB_VOUCH_*): the rank that receives checks the sender's signature on
     * every piece and sends no handshake of its own (ORB_SYNC_VOUCH, unless it waits
     * ORB_EXEC_UNMERGE_S: then a LATE one); the rank that sends expects none. An empty
     * handshake piece the other way was a third of a small rooted call's time. So too the
     * last and first ranks of a chain of 3 or more (ORB_VOUCH_CHAIN below). */
    int vouch;
} orb_exec_op_t;

/* orb_exec_op_t.vouch */
/* ORB_VOUCH_CHAIN: the first rank of a chain of 3 ranks or more (a broadcast's or scatter's root,
 * a reduce's or gather's ring neighbour after the root), whose last rank (its ring neighbour
 * before it) vouches (ORB_VOUCH_CHECKS) and sends it nothing: while it waits for room, a piece
 * from that neighbour (but a LATE handshake) means the two disagreed (strays, exec_cpu.c). */
enum { ORB_VOUCH_NONE = 0, ORB_VOUCH_CHECKS = 1, ORB_VOUCH_TRUSTED = 2, ORB_VOUCH_CHAIN = 3 };

/* Handshake pieces that calls returned without (sync_defer), per peer in call order, all on
 * channel 0. Every later run takes those that are in before anything else from that peer on
 * that channel and checks them; a run that may not defer (a call that is not rooted, the
 * device path's orb_host_settle, orb_comm_destroy) does not end before every one is in and
 * agrees, and a rooted call defers only while at most max stay due: as many as a FIFO has
 * slots (a root further ahead would wait for a slot anyway, and one held back sooner leaves
 * the FIFO's depth unused), at most ORB_EXEC_DUE_CAP. So a rank that disagreed is found within
 * that many calls (sooner by the error a peer posts), and a rank returns ORB_OK only if every
 * piece it received carried its own signature, as before. */
#define ORB_EXEC_DUE_CAP 256 /* a power of two: the ring's index is taken modulo it. 64 until
                               * 2026-12-07: with more ranks than CPUs the window is how many calls
                               * a rank gets through in one turn on a CPU (docs/perf.md) */
#define ORB_EXEC_HIST_CAP 256 /* (orb_exec_due_t.hist_sig) a power of two, as above */

enum { ORB_SYNC_ON_FIRST = 1, ORB_SYNC_AFTER_RECV = 2, ORB_SYNC_VOUCH = 3 }; /* orb_exec_op_t.sync_merge */
/* How long a run waits for the receive a handshake is to ride after (ORB_SYNC_AFTER_RECV)
 * before sending it as a piece of its own: far above a hop's wait with more ranks than CPUs
 * (milliseconds at most), far below ORBIT_TIMEOUT. */
#define ORB_EXEC_UNMERGE_S 0.02
typedef struct {
    int n;    /* entries due, oldest first from head (a ring: the oldest goes first, mostly) */
    int head; /* where the oldest is */
    int mixed; /* entries of more than one peer since the ring was last empty */
    int max;   /* how many may stay due: the FIFOs' slots, at most ORB_EXEC_DUE_CAP (0: none) */
    int peer[ORB_EXEC_DUE_CAP];
    orb_slot_hdr_t sig[ORB_EXEC_DUE_CAP];
    /* Calls that sent to a peer who vouches (ORB_VOUCH_TRUSTED) return with no handshake due:
     * the peer checks their pieces. What is left of them: the last such call's end on
     * channel 0 to confirm_peer (confirm_pos, 0: none), which a run that may not defer waits
     * to see taken (a peer that disagreed never takes it, and its own pieces then wait here
     * unreceived: both are named); and their signatures (hist_sig, by call number modulo
     * ORB_EXEC_HIST_CAP), to name this rank's call when a piece of the peer's for it turns up
     * later: as many as a FIFO's small ring (128 by default) holds calls in flight, and more. */
    int confirm_peer;
    uint64_t confirm_pos, confirm_seq;
    orb_slot_hdr_t hist_sig[ORB_EXEC_HIST_CAP];
} orb_exec_due_t;

/* A call that sends to a vouching peer (ORB_VOUCH_TRUSTED), the general executor's or the eager
 * path's: its signature goes into the history as it starts sending ... */
static inline void orb_exec_vouched_call(orb_exec_due_t *d, const orb_slot_hdr_t *sig)
{
    d->hist_sig[sig->seq % ORB_EXEC_HIST_CAP] = *sig;
}

/* ... and once its last piece to peer is posted (the connection's position now pos), that
 * piece is the one a run that may not defer waits to see taken. */
static inline void orb_exec_vouched_end(orb_exec_due_t *d, int peer, uint64_t pos, uint64_t seq)
{
    d->confirm_peer = peer;
    d->confirm_pos = pos;
    d->confirm_seq = seq;
}

/* How many handshakes a root may leave due with FIFOs of nslots slots. */
static inline int orb_exec_due_max(unsigned nslots) { return nslots < ORB_EXEC_DUE_CAP ? (int)nslots : ORB_EXEC_DUE_CAP; }

/* Entry i (0: the oldest) of d's ring. */
static inline int orb_exec_due_at(const orb_exec_due_t *d, int i) { return (d->head + i) % ORB_EXEC_DUE_CAP; }

/* A piece smaller than a page is cheaper to copy through a slot than to read with a system call. */
#define ORB_CMA_MIN_PIECE 4096

/* What the executor needs from the communicator. */
typedef struct {
    int rank, nranks, nchannels;
    int check_signatures;
    orb_conn_t *send; /* [peer * nchannels + ch] */
    orb_conn_t *recv;
    void *ctx;
    /* Sleeping: arm (the doorbell's value to sleep on), look once more, then sleep (which
     * disarms) or disarm: transport/box.h says why the look must come after arming. */
    uint32_t (*arm)(void *ctx);
    void (*disarm)(void *ctx);
    void (*sleep)(void *ctx, uint32_t seen, double max_s);
    /* Optional: about to wait for anything, tell the senders of the slots read and not told yet
     * (transport/endpoint.h, orb_transport_t.flush) */
    void (*flush)(void *ctx);
    /* Slow-path health check: abort, errors posted by peers, lost peers. `waiting_on` lists
     * the peers the blocked lanes wait for (n of them). Returns ORB_OK to keep waiting. */
    orb_status_t (*check)(void *ctx, const int *waiting_on, int n, char *err, size_t errlen);
    /* Tell a peer this call failed (mismatch), so it fails too instead of waiting. */
    void (*post_error)(void *ctx, int peer, orb_status_t st, const char *msg);
    size_t slot_bytes; /* payload per slot, for messages */
    double timeout_s;
    double spin_s;  /* busy-wait this long, */
    double yield_s; /* then sched_yield this long (the peer may need our core), then sleep */
    unsigned idle_mask; /* ... reading the clock (and yielding) every idle_mask + 1 idle passes (a power of two) */
    /* ORBIT_TRACE_STEPS: each finished step is recorded here (NULL: off); its `time` has room
     * for the operations of the run */
    orb_trace_steps_t *trace;
    orb_exec_due_t *due; /* NULL: every call waits for its handshake */
} orb_exec_env_t;

/* Runs ops[0..nops) to the end (nops may be 0: only what is due, env->due). */
orb_status_t orb_exec_run(const orb_exec_env_t *env, orb_exec_op_t *ops, int nops, char *err,
                          size_t errlen);

/* The eager path (exec_eager.c): a send or receive of one small piece, the whole call, moved
 * straight through channel 0's connection to or from peer. Its piece is the one the call's
 * plan would move (one step on lane 0, the tuner's rule for calls of at most
 * ORB_TUNER_ONE_PIECE bytes) with the same header, so either side may take either path. The
 * header's step, which no receiver reads, says 0.
 *
 * A rooted call of two ranks over shared memory (broadcast, scatter, gather, reduce) is one
 * such piece too, with the vouching run_ops_n would set up (orb_exec_op_t.vouch): the rank
 * that sends (ORB_VOUCH_TRUSTED) puts the handshake on it (ORB_PIECE_SYNC), keeps its
 * signature in env->due's history and leaves the piece there to be confirmed, as a run
 * does; the rank that receives (ORB_VOUCH_CHECKS) takes a piece with the handshake on it. The
 * root's own block moves locally (own, from mine), after its piece went or came; a reduce's
 * root folds the piece into mine instead (reduces). */
typedef struct {
    int peer;
    int sends;       /* 1: to peer; 0: from peer */
    const void *src; /* sends */
    void *dst;       /* receives */
    uint32_t bytes;  /* at least 1 */
    const orb_slot_hdr_t *sig; /* the call's, which outlives the op */
    int vouch;        /* ORB_VOUCH_*: NONE for send/recv */
    const void *mine; /* the root's own block, or NULL */
    void *own;        /* where it goes (may be mine: in place) */
    int reduces;      /* receives: dst = op(mine, the piece), count elements of dtype */
    orb_dtype_t dtype;
    orb_op_t op;
    int postdiv;
    size_t count;
    int done; /* set by orb_exec_eager */
} orb_eager_op_t;

/* Runs ops[0..n) as far as the eager path takes them, each on its connection in issue order:
 * a send where its FIFO has a slot free, a receive whose piece comes in while this spins and
 * yields as the general executor would (env->spin_s, env->yield_s). The rest (a full FIFO, a
 * piece with flags: a handshake, a late one, an address, but the handshake on a vouched
 * piece; a peer that takes longer) is left not done for orb_exec_run, which then starts from
 * the first piece not moved. A rooted call's op (vouch set) comes alone (n = 1). Returns how
 * many are left, or ORB_ERR_MISMATCH (negative) where a receive finds a plain data piece of
 * another size or signature, named in err as the general executor's quick lane names it (at
 * once: a peer that found it too may tell every rank before a later look here). Only where
 * nothing is due (env->due): the general executor takes what is due before a peer's data.
 * (The general executor then spins and yields afresh before it sleeps: a receive that waits
 * that long burns up to twice ORBIT_YIELD_US first. Handing it the time spent would change
 * orb_exec_run for every caller; with more ranks than CPUs the yield is what lets the peer in.) */
int orb_exec_eager(const orb_exec_env_t *env, orb_eager_op_t *ops, int n, char *err, size_t errlen);

/* The data piece got from peer does not match this rank's call sig (or its size want_bytes):
 * both calls named in err and posted to the peer (env->post_error). Returns ORB_ERR_MISMATCH. */
orb_status_t orb_exec_data_mismatch(const orb_exec_env_t *env, const orb_slot_hdr_t *sig, const orb_slot_hdr_t *got,
                                    size_t want_bytes, int peer, char *err, size_t errlen);

/* Do two signatures name the same call? */
static inline int orb_exec_sig_equal(const orb_slot_hdr_t *a, const orb_slot_hdr_t *b)
{
    return a->seq == b->seq && a->count == b->count && a->coll == b->coll && a->dtype == b->dtype &&
           a->op == b->op && a->root == b->root;
}

/* "allreduce #12 (count 1024, float32, sum)" */
void orb_exec_describe_sig(const orb_slot_hdr_t *sig, char *buf, size_t len);

#endif
