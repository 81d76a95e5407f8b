#include "transport/cma.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "transport/bootstrap.h"

static _Atomic uint64_t token_word; /* read by peers through process_vm_readv */

uint64_t orb_cma_token(void)
{
    uint64_t t = atomic_load(&token_word);
    if (t)
        return t;
    if (orb_random_bytes(&t, sizeof t) != ORB_OK) { /* no entropy: a probe still must not match by chance */
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        t = ((uint64_t)getpid() << 32) ^ (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20);
    }
    t |= 1; /* never 0: 0 means "not drawn yet" */
    uint64_t none = 0;
    atomic_compare_exchange_strong(&token_word, &none, t); /* racing threads keep the first */
    return atomic_load(&token_word);
}

uint64_t orb_cma_token_addr(void)
{
    (void)orb_cma_token();
    return (uint64_t)(uintptr_t)&token_word;
}

int orb_cma_probe(int32_t pid, uint64_t addr, uint64_t token)
{
    uint64_t got = 0;
    struct iovec local = {&got, sizeof got}, remote = {(void *)(uintptr_t)addr, sizeof got};
    return pid > 0 && process_vm_readv(pid, &local, 1, &remote, 1, 0) == (ssize_t)sizeof got && got == token;
}

orb_status_t orb_cma_read(int32_t pid, void *dst, uint64_t addr, size_t bytes, char *err, size_t errlen)
{
    char *d = dst;
    while (bytes) { /* a read may stop short (at a page the other side unmapped, or a signal) */
        struct iovec local = {d, bytes}, remote = {(void *)(uintptr_t)addr, bytes};
        ssize_t n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
        if (n > 0) {
            d += n;
            addr += (uint64_t)n;
            bytes -= (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        int e = n < 0 ? errno : EFAULT;
        snprintf(err, errlen, "single-copy read of %zu bytes at 0x%llx from pid %d failed: %s%s", bytes,
                 (unsigned long long)addr, (int)pid, strerror(e),
                 e == ESRCH ? " (the process is gone)" : " (ORBIT_CMA_BYTES=0 turns single-copy reads off)");
        return e == ESRCH ? ORB_ERR_PEER_LOST : ORB_ERR_INTERNAL;
    }
    return ORB_OK;
}
