/* Every environment knob, declared once with its default and help text
 * (NCCL_PARAM / ucx_info -c habit). `orbit-info` prints them all. */
#ifndef ORB_CORE_PARAM_H
#define ORB_CORE_PARAM_H

/* X(id, env name, default, help) for numeric knobs. */
#define ORB_PARAM_NUM_MAP(X)                                                                  \
    X(INIT_TIMEOUT, "ORBIT_INIT_TIMEOUT", 120, "seconds init waits for every rank to arrive") \
    X(TIMEOUT, "ORBIT_TIMEOUT", 600, "seconds a call may wait without progress before ORB_ERR_TIMEOUT") \
    X(CHECK, "ORBIT_CHECK", 1, "1: check that all ranks call the same collective (signature in every message); 0: off (piece sizes are still checked)") \
    X(SHM_SLOTS, "ORBIT_SHM_SLOTS", 8, "large slots per shared-memory FIFO (per peer and channel); the same on every rank; pieces larger than a small slot go through them, at most this many in flight: deeper FIFOs cost large calls (docs/perf.md)")  \
    X(SHM_SMALL_SLOTS, "ORBIT_SHM_SMALL_SLOTS", 128, "small slots (1 KiB of payload each) per shared-memory FIFO, for pieces that fit one: the small calls and the handshakes; the same on every rank; a rooted call's root runs as many calls ahead as the deeper of a FIFO's two rings, at most 256 (0: no small ring, every piece in a large slot)")  \
    X(SHM_RELEASE_BATCH, "ORBIT_SHM_RELEASE_BATCH", 16, "shared memory: while a sender's next small piece is already in, its receiver tells it of the small slots read every this many (at most a quarter of ORBIT_SHM_SMALL_SLOTS), and before it waits for anything; at once otherwise: fewer trips of the FIFO's tail line between cores (docs/transports.md); 0 or 1: after every piece; may differ between ranks")  \
    X(SHM_SLOT_BYTES, "ORBIT_SHM_SLOT_BYTES", 262144, "bytes of payload per shared-memory slot; the same on every rank") \
    X(NCHANNELS, "ORBIT_NCHANNELS", 2, "channels (independent FIFO sets) per peer pair, 2..8; the same on every rank") \
    X(CHUNK_BYTES, "ORBIT_CHUNK_BYTES", 0, "pipeline chunk in bytes (0: the tuner decides)")  \
    X(EAGER_BYTES, "ORBIT_EAGER_BYTES", 1024, "send/recv of at most this many bytes (at most 1024, nor more than ORBIT_CHUNK_BYTES) in host memory, alone or in a group, go as one piece straight through the transport, past the plan cache and the general executor, as MPI's eager sends do; so do broadcast, scatter, gather and reduce of two ranks over shared memory alone, with at most this many bytes a block; the piece is the one the plan would send, so ranks may differ; 0: off, every call planned") \
    X(SPIN_US, "ORBIT_SPIN_US", 20, "microseconds a waiting rank spins before it starts yielding (unset: 20, or 0 when this host has more ranks than CPUs between them)") \
    X(CMA_BYTES, "ORBIT_CMA_BYTES", 0, "calls whose input is at least this many bytes, and smaller than ORBIT_STREAM_BYTES, send it to ranks on the same host as addresses the receiver reads with one copy (process_vm_readv), where the pair allows it (0: from the link calibration, ORBIT_CALIBRATE: 64 KiB where pieces of 64 KiB in the caches, sent both ways at once, went faster with one copy than through the slots, else twice the L2 cache's size, read from the machine; from twice the L2 on only where the one copy of pieces from memory measured at least as fast as two through the slots; -1: never, always two copies through the shared-memory slots); reductions and gather always go through the slots") \
    X(WINDOWS, "ORBIT_WINDOWS", 1, "1: ranks on the same host map each other's windows (orb_mem_alloc) at init, and a call whose input (or output) lies in one and is not written by the call (out of place, or an in-place broadcast's root) sends its pieces of 4 KiB or more from there as addresses, read (or reduced) in place by the receiver, whatever the collective and size; 0: windows are ordinary buffers") \
    X(CALIBRATE, "ORBIT_CALIBRATE", 1, "the tuner's price of a hop inside a host: 1: measured at init over the shared-memory ring (token rounds, a chain of slot-sized pieces, the same pieces read with one copy, and pieces of 64 KiB in the caches exchanged both ways through the slots and with one copy, which decide where ORBIT_CMA_BYTES=0 sends single-copy pieces), cached per host (ORBIT_CALIB_FILE): the first 3 jobs of a shape measure and keep the best figures seen, later ones read them; 2: measured again, the cache's line started afresh; 0: the transport's constants") \
    X(STREAM_BYTES, "ORBIT_STREAM_BYTES", 0, "calls whose output is at least this many bytes write it with non-temporal stores, past the caches (0: read from the machine: the last-level cache's size for calls in place, and for calls that copy or all-reduce into an output of their own (all-gather and gather in place too), or reduce or reduce-scatter into one from at least that much input, a quarter of the cache's share of each rank on the host, at least twice the L2; -1: never)") \
    X(YIELD_US, "ORBIT_YIELD_US", 2000, "microseconds a waiting rank yields the CPU before it sleeps on a futex") \
    X(YIELD_PASSES, "ORBIT_YIELD_PASSES", 16, "a waiting rank looks at its connections this many times between two yields (and two reads of the clock), 1..1024, rounded down to a power of two (unset: 16, or 4 when this host has more than twice as many ranks as CPUs between them: the peer waited for is then seldom running, and every look spent spinning keeps it off this core)") \
    X(BIND, "ORBIT_BIND", 1, "1: bind each rank to its share of its NUMA node's cores (the whole node when it has more ranks than cores); 2: the whole node; 0: off")      \
    X(NSOCKS, "ORBIT_NSOCKS", 0, "TCP data connections per peer pair and channel (0: 1 with cubic/reno, 2 with a paced congestion control)") \
    X(TCP_DIRECT_BYTES, "ORBIT_TCP_DIRECT_BYTES", 65536, "TCP: pieces of at least this many bytes that a call sends from its input or output go to the socket straight from that buffer, not copied into a slot first (a call in a group only from a buffer no call of the group writes; a call alone also from one its plan writes, in place: a piece not yet sent is copied into its slot before the call writes over it); 0: always through the slot") \
    X(TCP_PLACE, "ORBIT_TCP_PLACE", 1, "TCP: 1: pieces a call copies unchanged into its buffers (an all-gather, the second half of an all-reduce, a broadcast received) are read from the socket straight to their place there, not into a slot first (those that came before the call asked for them still go through slots); 0: always through the slot; each rank's own choice") \
    X(IB_GID_INDEX, "ORBIT_IB_GID_INDEX", -1, "RoCE GID index to use (unset: the first RoCE v2 GID with an IPv4 address on an up interface)") \
    X(IB_TIMEOUT, "ORBIT_IB_TIMEOUT", 16, "RDMA ack timeout exponent: 4.096 us * 2^N per try, 7 retries (16: a silent peer is declared lost after about 2 s)") \
    X(TRACE_STEPS, "ORBIT_TRACE_STEPS", 0, "1: the tracer (ORBIT_TRACE) also records each plan step per channel: when it started, how long it waited for the peer, moved and reduced data (device calls: each lane's kernel start and end)") \
    X(TRACE_CALLS, "ORBIT_TRACE_CALLS", 65536, "calls the tracer's ring holds per communicator (about 90 bytes each); older ones are dropped and counted") \
    X(TRACE_STEP_RECORDS, "ORBIT_TRACE_STEP_RECORDS", 262144, "plan steps the tracer's ring holds per communicator with ORBIT_TRACE_STEPS=1 (64 bytes each)") \
    X(FLIGHT_CALLS, "ORBIT_FLIGHT_CALLS", 32, "calls the flight recorder keeps per communicator, printed after an error that ends the communicator (0: off)") \
    X(DETERMINISTIC, "ORBIT_DETERMINISTIC", 0, "1: all-reduce, reduce and reduce-scatter add in rank order, bitwise the same whatever algorithm, chunk, channels, ring or buffers (orb_comm_set_deterministic changes it per communicator); 0: the fastest plan")

/* X(id, env name, default, help) for text knobs. */
#define ORB_PARAM_STR_MAP(X)                                                                  \
    X(DEBUG, "ORBIT_DEBUG", "WARN", "log level: NONE, WARN, INFO (interface, topology and ring at init, each call's algorithm), TRACE")                     \
    X(TRACE, "ORBIT_TRACE", "", "trace every call of every communicator into this directory (orbit-<comm>-r<rank>.trace, written at destroy, exit and on the first error; merge with orbit-trace DIR)") \
    X(ALGO, "ORBIT_ALGO", "", "force an algorithm: ring, tree, direct, hier, bruck, ordered, doubling (empty: the tuner decides; reductions on 3 ranks or more in deterministic mode always run ordered)")    \
    X(SECRET, "ORBIT_SECRET", "", "32 hex digits shared by all ranks for orb_comm_init_env (orbitrun sets it; empty: derived from MASTER_ADDR and MASTER_PORT)") \
    X(SOCKET_CC, "ORBIT_SOCKET_CC", "cubic", "TCP congestion control for orbit's sockets (system, or set but empty: keep the host's default)") \
    X(NET, "ORBIT_NET", "", "transport between hosts: ib (RDMA verbs; init fails where it cannot work), tcp; empty: ib for pairs where both hosts have a working port and the connection test passes, else tcp") \
    X(IB_HCA, "ORBIT_IB_HCA", "", "RDMA devices and ports to use, NCCL_IB_HCA syntax: mlx5_0:1,mlx5_1 (prefixes), =name for exact names, ^ first to exclude; empty: every active port") \
    X(SOCKET_IFNAME, "ORBIT_SOCKET_IFNAME", "", "interfaces for sockets: names or prefixes, comma separated, ^ to exclude, = for an exact name") \
    X(BOOTSTRAP_BIND_ANY, "ORBIT_BOOTSTRAP_BIND_ANY", "0", "1: rank 0 listens on every interface, not only the id's address") \
    X(HOSTID, "ORBIT_HOSTID", "", "this host's identity: ranks with equal ids share memory (empty: hostname, boot id and network namespace); set it when different hosts look alike") \
    X(TOPO_FILE, "ORBIT_TOPO_FILE", "", "hwloc XML to use instead of discovering this machine") \
    X(TOPO_DUMP, "ORBIT_TOPO_DUMP", "", "write the topology the communicator used to this path") \
    X(CALIB_FILE, "ORBIT_CALIB_FILE", "", "where ORBIT_CALIBRATE keeps its measurements, one line per host, boot and job shape (empty: $XDG_CACHE_HOME/orbit/links.txt, else ~/.cache/orbit/links.txt; none: no file, measure at every init)") \
    X(CPU_KERNELS, "ORBIT_CPU_KERNELS", "auto", "CPU reduction loops: auto (AVX2+F16C where the CPU has them), portable (baseline x86-64 / any ISA)") \
    X(CUDA_PROTO, "ORBIT_CUDA_PROTO", "", "device protocol: ll (data and flag in one store), simple (slots); empty: by size") \
    X(SLOT_STORES, "ORBIT_SLOT_STORES", "auto", "how pieces are written into a same-host peer's shared-memory slots: auto (ordinary stores; past the caches, non-temporal, while timed copies run under a third of the calibrated link rate, as between cores that share no cache), cached (always ordinary), stream (always non-temporal); each rank decides for its own sends")

typedef enum {
#define ORB_PARAM_ENUM_(id, env, def, help) ORB_PARAM_##id,
    ORB_PARAM_NUM_MAP(ORB_PARAM_ENUM_)
#undef ORB_PARAM_ENUM_
        ORB_PARAM_NUM_COUNT
} orb_param_num_t;

typedef enum {
#define ORB_PARAM_ENUM_(id, env, def, help) ORB_PARAM_S_##id,
    ORB_PARAM_STR_MAP(ORB_PARAM_ENUM_)
#undef ORB_PARAM_ENUM_
        ORB_PARAM_STR_COUNT
} orb_param_str_t;

/* Whether a knob's variable is in the environment with a value, set but empty, or absent.
 * orb_param_num/_str read an empty value as unset; a knob whose default depends on the
 * machine (ORBIT_SPIN_US) or for which empty means something (ORBIT_SOCKET_CC) asks this. */
typedef enum { ORB_PARAM_STATE_UNSET = 0, ORB_PARAM_STATE_EMPTY, ORB_PARAM_STATE_SET } orb_param_state_t;
orb_param_state_t orb_param_num_state(orb_param_num_t id);
orb_param_state_t orb_param_str_state(orb_param_str_t id);

/* Value of a numeric knob (environment read each call: cheap, and tests change it). A
 * value that does not parse falls back to the default with a warning. */
double orb_param_num(orb_param_num_t id);
const char *orb_param_str(orb_param_str_t id);
/* Print every knob, its current value and help to fp (a FILE *). */
void orb_param_print_all(void *fp);

#endif
