/* How a waiting rank waits (comm/comm_spin.c, orb_comm_wait_policy): how long it spins
 * before yielding and every how many idle passes it yields, from the ranks on its host, the
 * CPUs between them and the settings. A pure function, checked against figures worked out by
 * hand from the rule in core/param.h (ORBIT_SPIN_US: 20 us, 0 with more ranks than CPUs;
 * ORBIT_YIELD_PASSES: 16, 4 with more than twice as many ranks as CPUs; a set value wins,
 * clamped to 1..1024 and rounded down to a power of two), so a changed rule fails here; and
 * that a communicator's executor waits by its policy (orb_comm_exec_env copies it).
 *   test_wait_policy
 * Prints each failure and exits 1 on any. */
#include <stdio.h>
#include <stdlib.h>

#include "comm/comm_impl.h"

static int failed;

/* spin_us and passes as the rule gives them; passes is idle_mask + 1 */
static void want(const char *spin_env, const char *passes_env, int nlocal, int ncpu, double spin_us, unsigned passes)
{
    if (spin_env)
        setenv("ORBIT_SPIN_US", spin_env, 1);
    else
        unsetenv("ORBIT_SPIN_US");
    if (passes_env)
        setenv("ORBIT_YIELD_PASSES", passes_env, 1);
    else
        unsetenv("ORBIT_YIELD_PASSES");
    orb_wait_policy_t w = {.spin_s = -1, .idle_mask = 12345};
    orb_comm_wait_policy(nlocal, ncpu, &w);
    if (w.spin_s * 1e6 < spin_us - 1e-9 || w.spin_s * 1e6 > spin_us + 1e-9 || w.idle_mask != passes - 1) {
        printf("FAIL ORBIT_SPIN_US=%s ORBIT_YIELD_PASSES=%s, %d ranks on %d CPUs: spin %g us, yield every %u "
               "passes; want %g us, every %u\n",
               spin_env ? spin_env : "(unset)", passes_env ? passes_env : "(unset)", nlocal, ncpu, w.spin_s * 1e6,
               w.idle_mask + 1, spin_us, passes);
        failed = 1;
    }
}

int main(void)
{
    /* the host decides */
    want(NULL, NULL, 1, 1, 20, 16);
    want(NULL, NULL, 2, 2, 20, 16);  /* a rank a CPU */
    want(NULL, NULL, 2, 16, 20, 16); /* CPUs to spare */
    want(NULL, NULL, 3, 2, 0, 16);   /* more ranks than CPUs: no spin */
    want(NULL, NULL, 4, 2, 0, 16);   /* twice as many: still every 16th */
    want(NULL, NULL, 5, 2, 0, 4);    /* more than twice */
    want(NULL, NULL, 8, 2, 0, 4);
    want(NULL, NULL, 64, 4, 0, 4);
    want(NULL, NULL, 8, 0, 20, 16); /* no CPU count: taken as not oversubscribed */
    /* set but empty: as unset */
    want("", "", 8, 2, 0, 4);
    /* ORBIT_YIELD_PASSES set: wins over the host, clamped, rounded down to a power of two */
    want(NULL, "16", 8, 2, 0, 16);
    want(NULL, "1", 2, 2, 20, 1);
    want(NULL, "7", 2, 2, 20, 4);
    want(NULL, "8", 3, 2, 0, 8);
    want(NULL, "1024", 8, 2, 0, 1024);
    want(NULL, "5000", 8, 2, 0, 1024);
    want(NULL, "0", 8, 2, 0, 1);
    want(NULL, "-3", 2, 2, 20, 1);
    want(NULL, "2.9", 2, 2, 20, 2);
    /* a value that does not parse: the registry's default (16, as its warning says) */
    want(NULL, "many", 8, 2, 0, 16);
    /* ORBIT_SPIN_US set: wins, the passes still by the host */
    want("5", NULL, 8, 2, 5, 4);
    want("0", NULL, 2, 2, 0, 16);
    /* the executor of a communicator waits as its policy says */
    struct orb_comm *c = calloc(1, sizeof *c);
    if (!c)
        return 2;
    c->nranks = 1;
    c->wait = (orb_wait_policy_t){.spin_s = 3e-6, .idle_mask = 7};
    orb_comm_exec_env(c);
    if (c->env.spin_s != 3e-6 || c->env.idle_mask != 7) {
        printf("FAIL orb_comm_exec_env: the executor spins %g us and yields every %u passes; the policy says 3 us, "
               "every 8\n",
               c->env.spin_s * 1e6, c->env.idle_mask + 1);
        failed = 1;
    }
    free(c);
    if (!failed)
        printf("wait policy: 22 cases as the rule says, and the executor waits by it\n");
    return failed;
}
