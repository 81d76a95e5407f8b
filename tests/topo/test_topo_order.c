/* Rank-order independence: whatever order the ranks join in (the order of the descriptions
 * handed to orb_topo_place), every output is the same. */
#include "topo_test.h"

static uint32_t rnd_state = 777;
static uint32_t rnd(void)
{
    rnd_state = rnd_state * 1103515245u + 12345u;
    return (rnd_state >> 8) & 0xffffff;
}

static void same_host(const orb_topo_host_t *a, const orb_topo_host_t *b, const char *what)
{
    int n = a->ndev, ok = b->ndev == n && a->nports == b->nports;
    ok = ok && !memcmp(a->ring, b->ring, (size_t)n * sizeof *a->ring);
    ok = ok && !memcmp(a->tree, b->tree, (size_t)n * sizeof *a->tree);
    ok = ok && !memcmp(a->ports, b->ports, (size_t)a->nports * sizeof *a->ports);
    ok = ok && !strcmp(a->explain, b->explain);
    for (int i = 0; ok && i < n; i++)
        ok = a->dev[i].rank == b->dev[i].rank && a->dev[i].nic == b->dev[i].nic && a->dev[i].numa == b->dev[i].numa;
    if (!ok) {
        fprintf(stderr, "%s: result depends on the order ranks joined in\n--- first\n%s--- then\n%s", what,
                a->explain, b->explain);
        test_failures++;
    }
}

/* Places r in its given order, then in 20 shuffled orders, and compares. */
static void shuffled(orb_topo_t *t, orb_topo_rank_t *r, int n, const char *what)
{
    orb_topo_host_t *first = NULL, *h = NULL;
    CHECK_EQ_INT(orb_topo_place(t, r, n, &first), ORB_OK);
    for (int s = 0; s < 20 && first; s++) {
        for (int i = n - 1; i > 0; i--) {
            int j = (int)(rnd() % (unsigned)(i + 1));
            orb_topo_rank_t x = r[i];
            r[i] = r[j];
            r[j] = x;
        }
        CHECK_EQ_INT(orb_topo_place(t, r, n, &h), ORB_OK);
        if (h)
            same_host(first, h, what);
        orb_topo_host_free(h);
        h = NULL;
    }
    orb_topo_host_free(first);
}

int main(void)
{
    static const char *const files[] = {"dgx2-16xV100-nvswitch.xml", "power8-4xP100-nvlink.xml",
                                        "jureca-dc-4xA100-4xHDR.xml", "sierra-power9-4xV100.xml",
                                        "vm-2socket-nopci.xml"};
    static const int ids[] = {10, 3, 7, 42, 0, 5, 99, 12, 8, 1, 2, 4, 6, 9, 11, 13}; /* global ranks */
    for (size_t f = 0; f < sizeof files / sizeof *files; f++) {
        orb_topo_t *t = test_load(files[f]);
        char bus[16][ORB_TOPO_BUSID_LEN];
        int ng = orb_topo_gpus(t, bus, 16);
        orb_topo_rank_t r[16];
        /* GPU ranks with scattered global rank ids, bus ids in mixed case. */
        for (int i = 0; i < ng; i++) {
            r[i].rank = ids[i];
            snprintf(r[i].desc, sizeof r[i].desc, "%s%.15s", i % 2 ? "GPU:" : "", bus[i]);
            if (i % 3 == 0)
                for (char *c = r[i].desc; *c; c++)
                    if (*c >= 'a' && *c <= 'f')
                        *c = (char)(*c - 'a' + 'A');
        }
        if (ng > 0)
            shuffled(t, r, ng, files[f]);
        /* Unbound CPU ranks, spread round-robin over NUMA nodes. */
        for (int i = 0; i < 12; i++) {
            r[i].rank = ids[i];
            snprintf(r[i].desc, sizeof r[i].desc, "cpu");
        }
        shuffled(t, r, 12, files[f]);
        orb_topo_free(t);
    }
    if (test_failures)
        fprintf(stderr, "%d check(s) failed\n", test_failures);
    return test_failures ? 1 : 0;
}
