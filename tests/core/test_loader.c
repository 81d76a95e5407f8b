/* core/loader.h: the lock-free "nothing loaded since the mark" test against real dlopen and
 * dlclose of two modules built for it (probe.c). Every verdict is this process's own. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/loader.h"

#include "../common/check.h"

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s PROBE_A.so PROBE_B.so\n", argv[0]);
        return 2;
    }
    const char *a = argv[1], *b = argv[2];
    if (dlopen(a, RTLD_LAZY | RTLD_NOLOAD) || dlopen(b, RTLD_LAZY | RTLD_NOLOAD)) {
        fprintf(stderr, "the probes are loaded before the test loads them\n");
        return 1;
    }

    const unsigned long long g0 = orb_loader_generation();
    CHECK(orb_loader_unchanged() == 0, "no mark yet, so no claim");
    CHECK(orb_loader_mark(g0) == 1, "marking at the current generation %llu", g0);
    CHECK(orb_loader_unchanged() == 1, "nothing loaded since the mark");

    void *ha = dlopen(a, RTLD_NOW | RTLD_LOCAL);
    CHECK(ha != NULL, "dlopen %s: %s", a, dlerror());
    const unsigned long long g1 = orb_loader_generation();
    CHECK(g1 > g0, "a load raises the generation (%llu -> %llu)", g0, g1);
    CHECK(orb_loader_unchanged() == 0, "%s was loaded after the mark", a);
    CHECK(orb_loader_mark(g1 + 7) == 0, "a generation that is not the loader's is refused");
    CHECK(orb_loader_unchanged() == 0, "after a refused mark no claim is made");

    CHECK(orb_loader_mark(g1) == 1, "marking again after the load");
    CHECK(orb_loader_unchanged() == 1, "nothing loaded since the second mark");

    void *hb = dlopen(b, RTLD_NOW | RTLD_LOCAL);
    CHECK(hb != NULL, "dlopen %s: %s", b, dlerror());
    CHECK(orb_loader_unchanged() == 0, "%s was loaded after the second mark", b);
    CHECK(hb && dlclose(hb) == 0, "dlclose %s", b);
    CHECK(dlopen(b, RTLD_LAZY | RTLD_NOLOAD) == NULL, "%s is unloaded by its dlclose", b);
    CHECK(orb_loader_unchanged() == 1, "what was loaded since the mark is gone again");

    /* The marked object ended the list: it must stay loaded, or its l_next would be read
     * from freed memory. */
    CHECK(ha && dlclose(ha) == 0, "dlclose %s", a);
    void *still = dlopen(a, RTLD_LAZY | RTLD_NOLOAD);
    CHECK(still != NULL, "the marked object %s stays loaded after its dlclose (RTLD_NODELETE)", a);
    if (still)
        dlclose(still);
    CHECK(orb_loader_unchanged() == 1, "still nothing loaded since the mark");
    CHECK(orb_loader_generation() > g1, "every load counts, unloaded or not");

    if (failures) {
        fprintf(stderr, "test_loader: %d check(s) failed\n", failures);
        return 1;
    }
    printf("test_loader: OK\n");
    return 0;
}
