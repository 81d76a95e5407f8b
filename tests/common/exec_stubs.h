/* The communicator callbacks an orb_exec_env_t needs, for tests that run the executor alone on
 * connections of their own: no doorbell to arm, no health to check, no peer to tell. A test
 * supplies its own `sleep` (what happens while the executor waits is what it tests).
 * Header-only. */
#ifndef ORB_TESTS_EXEC_STUBS_H
#define ORB_TESTS_EXEC_STUBS_H

#include "collectives/exec.h"

static inline uint32_t stub_arm(void *ctx)
{
    (void)ctx;
    return 0;
}

static inline void stub_disarm(void *ctx) { (void)ctx; }

static inline orb_status_t stub_check(void *ctx, const int *waiting_on, int n, char *err, size_t errlen)
{
    (void)ctx;
    (void)waiting_on;
    (void)n;
    (void)err;
    (void)errlen;
    return ORB_OK;
}

static inline void stub_post_error(void *ctx, int peer, orb_status_t st, const char *msg)
{
    (void)ctx;
    (void)peer;
    (void)st;
    (void)msg;
}

#endif
