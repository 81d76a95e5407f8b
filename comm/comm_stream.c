/* When a call writes its output with non-temporal stores (kernels/copy_stream.c): when
 * the output is at least as large as this machine's last-level cache, it has left the cache
 * before anyone reads it, so the ordinary store's read of every line first is wasted memory
 * bandwidth. The size comes from the machine (ORBIT_STREAM_BYTES overrides it); it only
 * changes how this rank writes its own memory, so ranks need not agree on it. */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#include "comm/comm_impl.h"
#include "core/log.h"
#include "core/param.h"

/* The last-level cache this rank's core sees, in bytes; 0 when the system does not say.
 * The kernel's view (sysfs) first: in a VM, CPUID (what sysconf reads) may describe the
 * host's whole L3 (64 MiB on an 8-CCX EPYC) rather than the 8 MiB a core shares. */
static size_t llc_bytes(void)
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
        if (ok && level > best_level) {
            best_level = level;
            best = (size_t)kib << 10;
        }
    }
    if (best)
        return best;
    long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE), l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
    return l3 > 0 ? (size_t)l3 : l2 > 0 ? (size_t)l2 : 0;
}

size_t orb_comm_stream_bytes(void)
{
    static _Atomic size_t cached; /* 0: not decided yet; SIZE_MAX: never stream */
    size_t v = atomic_load_explicit(&cached, memory_order_relaxed);
    if (v)
        return v;
    const double env = orb_param_num(ORB_PARAM_STREAM_BYTES);
    const size_t llc = llc_bytes();
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
