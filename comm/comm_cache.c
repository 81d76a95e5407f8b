/* The thresholds that follow from this machine's caches (each overridable by its setting):
 * - streaming stores (kernels/copy_stream.c): an output at least as large as the last-level
 *   cache has left the cache before anyone reads it, so an ordinary store's read of every
 *   line first is wasted memory bandwidth. A call that copies into an output of its own
 *   (not in place), or all-reduces into one, has its input, its output and the slots of every
 *   rank on the host in the cache at once, and loses it much sooner: such calls stream from
 *   a quarter of each host rank's share of the cache, but not below twice the L2 (2 ranks on
 *   the Zen 4 VM's 32 MiB L3: from 4 MiB, where all-gather, all-to-all, gather, scatter and
 *   send/recv ran 1.4-2.0x faster at 16 MiB, all-to-all and send/recv 1.3x at 4 MiB, all-reduce
 *   1.5x at 8 MiB, docs/perf.md). All-gather and gather in place as well (1.2-2.0x at 8-16
 *   MiB): what they write, the other ranks' blocks, they never read. Other calls in place read
 *   what they write, or find it in the cache at the next call (all-to-all in place at 8 MiB
 *   streamed: 0.44x; broadcast 0.73-1.14x; reduce 0.32x): those stream from the whole cache's
 *   size. Reduce and reduce-scatter out of place stream once their input reaches the same
 *   size: the input, read beside the output (n times a reduce-scatter's), is what fills the
 *   cache. On the Intel VM (300 MiB L3: from 37.5 MiB) 64 MiB calls took 0.90x (reduce) and
 *   0.94x (reduce-scatter) of the time, and streaming from 4 MiB instead cost 1.13-1.18x at
 *   4-16 MiB (docs/perf.md); on the Zen 4 VM reduce 8 MiB streamed took 0.88x. It only changes
 *   how a rank writes its own memory, so ranks need not agree on it.
 * - single-copy reads (transport/cma.h): up to about the L2 cache's size a copy through a
 *   slot, both ranks copying at once from the caches, beats a system call that pins the
 *   sender's pages and copies alone (2-rank calls of 512 KiB on a 512 KiB-L2 Zen 1: even or
 *   worse, send/recv 1.4x slower; from 1 MiB mostly 1.2-2.7x faster), so from twice the L2
 *   size up to the last-level cache's (coll_host.c says why not beyond), whatever the
 *   copies' streaming threshold: where pieces go single-copy, the kernel writes the output.
 *   Only the sender decides, per call. */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#include "comm/comm_impl.h"
#include "core/log.h"
#include "core/param.h"

/* The cache of that level (0: the last) this rank's core sees, in bytes; 0 when the system
 * does not say. The kernel's view (sysfs) first: in a VM, CPUID (what sysconf reads) may
 * describe the host's whole L3 (64 MiB on an 8-CCX EPYC) rather than the 8 MiB a core shares. */
static size_t cache_bytes(int want)
{
    size_t best = 0;
    int best_level = 0;
    for (int i = 0; i < 8; i++) {
        char path[96];
        int level = 0;
        unsigned long kib = 0;
        char unit = 0;
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/level", i);
        FILE *f = fopen(path, "r");
        if (!f)
            break;
        int ok = fscanf(f, "%d", &level) == 1;
        fclose(f);
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
        if (!ok || !(f = fopen(path, "r")))
            continue;
        ok = fscanf(f, "%lu%c", &kib, &unit) == 2 && unit == 'K';
        fclose(f);
        if (ok && (want ? level == want : level > best_level)) {
            best_level = level;
            best = (size_t)kib << 10;
        }
    }
    if (best)
        return best;
    long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE), l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
    if (want == 2)
        return l2 > 0 ? (size_t)l2 : 0;
    return l3 > 0 ? (size_t)l3 : l2 > 0 ? (size_t)l2 : 0;
}

size_t orb_comm_stream_bytes(void)
{
    static _Atomic size_t cached; /* 0: not decided yet; SIZE_MAX: never stream */
    size_t v = atomic_load_explicit(&cached, memory_order_relaxed);
    if (v)
        return v;
    const double env = orb_param_num(ORB_PARAM_STREAM_BYTES);
    const size_t llc = cache_bytes(0);
    if (env < 0)
        v = SIZE_MAX;
    else if (env > 0)
        v = (size_t)env;
    else
        v = llc ? llc : SIZE_MAX;
    if (v == SIZE_MAX)
        ORB_INFO("outputs are written through the caches (%s)",
                 env < 0 ? "ORBIT_STREAM_BYTES=-1" : "the system does not tell the last-level cache's size");
    else
        ORB_INFO("outputs of %zu bytes or more bypass the caches (%s)", v,
                 env > 0 ? "ORBIT_STREAM_BYTES" : "the last-level cache's size");
    atomic_store_explicit(&cached, v, memory_order_relaxed); /* racing callers store the same */
    return v;
}

size_t orb_comm_l2_bytes(void) { return cache_bytes(2); }

size_t orb_stream_copy_bytes(double env, size_t llc, size_t l2, int host_ranks)
{
    if (env < 0 || (env == 0 && !llc))
        return SIZE_MAX;
    if (env > 0)
        return (size_t)env;
    const size_t share = llc / (4 * (size_t)(host_ranks > 0 ? host_ranks : 1));
    const size_t floor = 2 * (l2 ? l2 : (size_t)256 << 10); /* slots and output in a core's own caches */
    return share > floor ? share : floor < llc ? floor : llc;
}

size_t orb_stream_copy_span(orb_coll_t coll, const void *in, size_t in_bytes, const void *out, size_t out_bytes)
{
    if (coll == ORB_COLL_BARRIER || !out || !out_bytes)
        return 0;
    if (coll == ORB_COLL_ALLGATHER || coll == ORB_COLL_GATHER)
        return out_bytes; /* in place too: the rank's own block is where it goes, the others only written */
    if (in == out || orb_ranges_overlap(in, in_bytes, out, out_bytes))
        return 0;
    return coll == ORB_COLL_REDUCE || coll == ORB_COLL_REDUCE_SCATTER ? in_bytes : out_bytes;
}

void orb_comm_stream_setup(struct orb_comm *c)
{
    const int host_ranks = c->host_ranks;
    const double env = orb_param_num(ORB_PARAM_STREAM_BYTES);
    const size_t whole = orb_comm_stream_bytes();
    c->stream_copy_bytes = orb_stream_copy_bytes(env, cache_bytes(0), cache_bytes(2), host_ranks);
    if (c->stream_copy_bytes > whole) /* never later than the others (coll_host.c tests it first) */
        c->stream_copy_bytes = whole;
    if (c->stream_copy_bytes != SIZE_MAX && env == 0)
        ORB_INFO("rank %d: copies and all-reduces into an output of their own bypass the caches from %zu bytes, and "
                 "reductions into one from that much input (a quarter of the last-level cache's share of %d rank%s "
                 "on this host, at least twice the L2)",
                 c->rank, c->stream_copy_bytes, host_ranks, host_ranks > 1 ? "s" : "");
}

size_t orb_comm_cma_threshold(void)
{
    const double env = orb_param_num(ORB_PARAM_CMA_BYTES);
    if (env < 0)
        return 0;
    if (env > 0)
        return (size_t)env;
    const size_t l2 = cache_bytes(2);
    return 2 * (l2 ? l2 : (size_t)256 << 10); /* (256 KiB: the L2 of most x86 cores of the last decade) */
}
