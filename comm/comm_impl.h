/* The communicator behind the opaque orb_comm_t. Internal to liborbit. */
#ifndef ORB_COMM_IMPL_H
#define ORB_COMM_IMPL_H

#include <stdatomic.h>
#include <stdint.h>

#include "collectives/exec.h"
#include "collectives/plan.h"
#include "core/trace.h"
#include "topo/topo.h"
#include "transport/bootstrap.h"
#include "transport/box.h"
#include "transport/endpoint.h"

#define ORB_COMM_MAGIC 0x4f52434du /* "ORCM" */
#define ORB_PLAN_CACHE 16
#define ORB_MAX_TRANSPORTS 4
#define ORB_ERRMSG_BYTES 1536 /* every error text of the comm layer fits */

/* The pieces the link calibration (comm_calib.c) times from the caches, through the slots and
 * with one copy: small enough that nothing of that size is latency-bound (a piece takes some
 * microseconds), large enough that a system call and its page pins are a small part of it.
 * Where the one copy wins there, calls of this size send single-copy pieces (comm_cma.c). */
#define ORB_CALIB_HOT_BYTES ((size_t)64 << 10)

/* What a call looks like to the tuner; the cache maps it to the tuner's choice and the plan. */
typedef struct {
    orb_coll_t coll;
    size_t count;
    size_t elem_size;
    int root;
    orb_op_t op;
    /* alltoallv: its vectors (4 * nranks, c->vec while looked up) and their hash */
    const size_t *vec;
    uint64_t vhash;
    int deterministic; /* reductions on a communicator in deterministic mode (else 0) */
    int device;        /* device buffers: the CPU caches do not bound the chunk (comm_plan.c) */
} orb_call_key_t;

typedef struct {
    orb_call_key_t key; /* key.vec points at vec below once cached */
    size_t *vec;
    orb_plan_t plan;
    double predicted_us;
    char reason[160];
    uint64_t used;
    int valid;
} orb_plan_cache_entry_t;

/* How a waiting rank waits on this host (comm_spin.c) */
typedef struct {
    double spin_s;      /* spin this long before yielding (ORBIT_SPIN_US; 0 with more ranks than CPUs) */
    unsigned idle_mask; /* yield (and read the clock) every idle_mask + 1 idle passes (ORBIT_YIELD_PASSES) */
} orb_wait_policy_t;

struct orb_comm {
    uint32_t magic;
    int rank, nranks, local_rank;
    int nchannels;
    uint32_t nslots;
    size_t slot_bytes;
    uint32_t nsmall; /* small slots per shared-memory FIFO (transport/shm/shm.h) */
    uint32_t release_batch; /* ORBIT_SHM_RELEASE_BATCH (transport/shm/shm.c) */
    size_t cma_bytes; /* calls with this much input send pieces as addresses (single copy); 0: never */
    size_t cma_upto;  /* ... and less than this (at most orb_comm_stream_bytes: streamed calls copy) */
    struct orb_peer_windows **peer_windows; /* [rank]: its windows mapped here (transport/window.h); NULL: not */
    int window_readers;                     /* shared-memory peers that map this rank's windows */
    size_t stream_copy_bytes; /* outputs bypass the caches where orb_stream_copy_span reaches
                               * this size (orb_stream_copy_bytes), never above orb_comm_stream_bytes(),
                               * from which the others do */
    size_t eager_bytes; /* send/recv of at most this many bytes take the eager path (0: none; comm_health.c) */
    uint32_t eager_colls; /* bit ORB_COLL_*: which take it: send and recv, and where their pieces
                           * vouch, two ranks' rooted calls alone (comm_health.c) */
    size_t local_send_bytes; /* the smallest piece some connection's transport sends from the caller's
                              * buffer itself (ORB_ADDR_LOCAL: tcp); 0: none does */
    double timeout_s;
    orb_wait_policy_t wait;
    int check_signatures;
    int deterministic; /* reductions in rank order (ORBIT_DETERMINISTIC, orb_comm_set_deterministic) */
    orb_bootstrap_t bs;
    char box_name[64];  /* this rank's shared-memory name prefix; its box goes by it */
    int box_linked;     /* the box's name is still in /dev/shm */
    orb_box_t *box;     /* this rank's doorbell and error box */
    orb_box_t **boxes;  /* every rank's box as mapped here; NULL for ranks on other hosts */
    orb_endpoint_t *ep[ORB_MAX_TRANSPORTS]; /* orb_transports[i]'s endpoint */
    int8_t *tp_of;      /* index in orb_transports of the transport that connects each rank (-1: me) */
    struct orb_cuda_state *cuda; /* device path, set up by the first device call */
    orb_topo_t *topo;
    orb_topo_host_t *topo_host;
    orb_conn_t *send, *recv;
    int *ring;
    int ring_next, ring_prev; /* this rank's neighbours on ring (derived once at init) */
    int nhosts;
    int host_ranks; /* ranks on this rank's host, this one included (ring_by_host) */
    int host_cpus;  /* the CPUs they may run on between them (orb_comm_wait_setup; 0: unknown) */
    int *host_of; /* dense host index of every rank (hosts in order of their lowest rank) */
    orb_link_cost_t link_intra; /* what the tuner prices inside a host and between hosts: the */
    orb_link_cost_t link_inter; /* same on every rank (comm_links.c) */
    orb_link_cost_t shm_measured; /* the shared-memory hop as measured or cached at init */
    int shm_measured_how;         /* 0: not measured (the transport's constants); 1: measured; 2: cached */
    double shm_single_gbps;       /* a slot-sized single-copy read (process_vm_readv), measured with
                                     shm_measured; 0: not measured (comm_cma.c then keeps its size) */
    double shm_hot_slots_gbps;    /* pieces of ORB_CALIB_HOT_BYTES from the caches through the slots, and read with */
    double shm_hot_single_gbps;   /* one copy from the peer (comm_calib.c); 0: not measured */
    uint64_t seq;
    uint64_t plan_clock;
    /* The cache entries of the last call and of the last call of another shape: a loop of one
     * shape, or of two in turn (a send and a recv, a broadcast and an all-reduce), looks there
     * first. */
    int plan_last, plan_prev;
    orb_plan_cache_entry_t cache[ORB_PLAN_CACHE];
    orb_exec_env_t env;
    orb_exec_due_t due; /* handshake pieces rooted calls returned without (env.due) */
    _Atomic int aborted;
    _Atomic int async_error;
    orb_status_t broken; /* set by a failure that leaves the FIFOs in an unknown state */
    uint8_t barrier_byte;
    void *scratch; /* output room for non-roots of reduce/gather */
    size_t scratch_bytes;
    size_t *vec; /* the running alltoallv's vectors, packed (4 * nranks) */
    size_t *vec_peer; /* what the peers said they send and expect (orb_call_check_vectors) */
    char last_error[ORB_ERRMSG_BYTES];
    /* tracing (comm_trace.c) */
    struct orb_comm_tracer *tracer; /* NULL: not tracing */
    orb_trace_ring_t flight;        /* the flight recorder: the last calls */
    orb_trace_clock_t flight_clock;
    uint64_t trace_next_id;
    int flight_dumped;              /* printed once, at the first error that ends the comm */
    int64_t clock_offset_ns, clock_err_ns; /* rank 0's clock = mine + offset, within +- err */
};

/* The size of the calibration's pieces in the caches: ORB_CALIB_HOT_BYTES, or a slot where
 * slots are smaller (ORBIT_SHM_SLOT_BYTES), what the figures and the logs that quote them say. */
static inline size_t orb_calib_hot_bytes(const struct orb_comm *c)
{
    return c->slot_bytes < ORB_CALIB_HOT_BYTES ? c->slot_bytes : ORB_CALIB_HOT_BYTES;
}

/* Remember the detail of a failure (also logged at WARN). Returns st. */
orb_status_t orb_comm_fail(struct orb_comm *c, orb_status_t st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* ORB_OK if c is a live communicator; otherwise fills the thread's error. */
orb_status_t orb_comm_check_handle(struct orb_comm *c, const char *fn);
/* The tuner's choice and the plan for a call (cached per call shape). */
orb_status_t orb_comm_plan(struct orb_comm *c, const orb_call_key_t *key, const orb_plan_cache_entry_t **entry,
                           char *why, size_t whylen);
/* The link costs the tuner prices (c->link_intra, link_inter), agreed by every rank at init
 * from the transports that connect each rank's peers and each host's topology. */
orb_status_t orb_comm_price_links(struct orb_comm *c, double deadline, char *err, size_t errlen);
/* Topology at init: fills c->ring (every rank the same), binds this rank. */
orb_status_t orb_comm_order_ranks(struct orb_comm *c, double deadline, char *err, size_t errlen);
void orb_comm_topo_free(struct orb_comm *c);
/* Error text for calls that have no communicator to hold it (init, bad handles). */
void orb_set_thread_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The same for a fixed text, async-signal-safe (a byte copy: no formatting, no log). */
void orb_set_thread_error_fixed(const char *msg);
/* The thread's error text (what orb_comm_last_error(NULL) returns). */
char *orb_thread_error(void);

/* Init in two phases (orb_comm_start runs both):
 * bootstrap: this rank's box and transport endpoints (their cards), the rendezvous with every
 * rank through id; build: map the boxes of this host's ranks, let each
 * transport connect the peers it reaches first, order the ranks by topology, set the
 * executor up. Both leave err and return the status; comm_free undoes either. */
orb_status_t orb_comm_bootstrap(struct orb_comm *c, const orb_unique_id_t *id, char *err, size_t errlen);
orb_status_t orb_comm_build(struct orb_comm *c, char *err, size_t errlen);
void orb_comm_free(struct orb_comm *c);
/* The per-communicator settings (channels, FIFO shape, timeout, signature checks) from the
 * settings registry (core/param.h): what a new communicator starts with. A split's child
 * takes its parent's instead (comm_split.c). */
void orb_comm_settings_from_params(struct orb_comm *c);
/* Bootstrap, build and register c (rank, nranks and the settings already set): the whole
 * init from an id. On failure c is freed and err says why (never empty). */
orb_status_t orb_comm_start(struct orb_comm *c, const orb_unique_id_t *id, char *err, size_t errlen);
/* The live-communicator registry: every call checks its handle against it. */
int orb_comm_live_add(struct orb_comm *c);
void orb_comm_live_remove(struct orb_comm *c);
/* fn on every live communicator, the registry locked (at exit: the tracer's last write). */
void orb_comm_live_each(void (*fn)(struct orb_comm *c));
/* How a waiting rank waits on this host, into c->wait (collective: the CPU masks of the
 * host's ranks are exchanged). */
orb_status_t orb_comm_wait_setup(struct orb_comm *c, double deadline);
/* The rule it applies: nlocal ranks on this host, ncpu CPUs between them, and the settings */
void orb_comm_wait_policy(int nlocal, int ncpu, orb_wait_policy_t *w);
/* The executor's view of the communicator: doorbell, sleep, health, error delivery. */
void orb_comm_exec_env(struct orb_comm *c);
/* Tell every sender of the slots this rank has read and not told yet (endpoint.h, flush):
 * what the executor does before it waits (its env's flush) */
void orb_comm_flush_held(struct orb_comm *c);
/* Is rank p a peer this rank reaches through shared memory (on its host)? */
/* Do the byte ranges [a, a + alen) and [b, b + blen) share a byte? (A NULL or empty range never does.) */
static inline int orb_ranges_overlap(const void *a, size_t alen, const void *b, size_t blen)
{
    const char *x = a, *y = b;
    return x && y && alen && blen && x < y + blen && y < x + alen;
}

static inline int orb_comm_peer_shm(const struct orb_comm *c, int p)
{
    return p != c->rank && c->tp_of[p] >= 0 && orb_transports[c->tp_of[p]] == &orb_shm_transport;
}
/* The tuner's intra-host link measured on this machine, or cached (comm_calib.c). Collective. */
orb_status_t orb_comm_calibrate(struct orb_comm *c, double spin_s, double deadline, char *err, size_t errlen);
/* Which shared-memory peers single-copy reads may use, agreed at init (comm_cma.c). Collective. */
orb_status_t orb_comm_cma_setup(struct orb_comm *c, double deadline, char *err, size_t errlen);
/* How this rank writes into its shared-memory peers' slots (ORBIT_SLOT_STORES; comm_slot_stores.c). */
orb_status_t orb_comm_slot_stores_setup(struct orb_comm *c, char *err, size_t errlen);
/* Output bytes from which a call's output bypasses the caches (comm_cache.c); SIZE_MAX: never. */
size_t orb_comm_stream_bytes(void);
/* The size (orb_stream_copy_span's) from which a call's output bypasses the caches:
 * ORBIT_STREAM_BYTES when set (> 0), else a quarter of the last-level cache's share of
 * host_ranks ranks, at least twice the L2 and at most the whole cache; SIZE_MAX: never. */
size_t orb_stream_copy_bytes(double env, size_t llc, size_t l2, int host_ranks);
/* The bytes that decide whether a call's output bypasses the caches from orb_stream_copy_bytes
 * (comm_cache.c), or 0: it waits for the whole cache's size. A call that writes an output of its
 * own and never reads it: copies with input and output apart and the all-reduce likewise, by
 * their output; all-gather and gather in place too; reduce and reduce-scatter with input and
 * output apart by their input, which they read beside it (n times the reduce-scatter's output).
 * 0 for the barrier and other calls in place. */
size_t orb_stream_copy_span(orb_coll_t coll, const void *in, size_t in_bytes, const void *out, size_t out_bytes);
/* c->stream_copy_bytes for this rank's host, logged at INFO (comm_cache.c). */
void orb_comm_stream_setup(struct orb_comm *c);
/* Input bytes from which a call sends pieces as addresses (comm_cache.c); 0: never. */
size_t orb_comm_cma_threshold(void);
/* The L2 cache of this rank's core in bytes (comm_cache.c); 0 when the system does not say. */
size_t orb_comm_l2_bytes(void);
/* Hex digits to bytes (unique ids, ORBIT_SECRET); 0 on success. */
int orb_comm_parse_hex(const char *s, uint8_t *out, size_t n);

#endif
