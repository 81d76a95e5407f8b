/* Graceful without data: GPUs that the topology does not show (a VM with no PCI data, or a
 * build without hwloc) still get a valid ring, in rank order, with a one-line note; CPU
 * ranks on a VM are spread over its NUMA nodes; bad input is refused. */
#include "topo_test.h"

static void check_rank_order(const orb_topo_host_t *h, const char *why)
{
    CHECK_EQ_INT(h->optimized, 0);
    for (int k = 0; k < h->ndev; k++) {
        CHECK_EQ_INT(h->ring[k], k);
        CHECK_EQ_INT(h->tree[k], k);
    }
    CHECK(strstr(h->note, "ring follows rank order: ") == h->note);
    CHECK(strstr(h->note, why) != NULL);
    CHECK(strchr(h->note, '\n') == NULL);
    /* The explanation carries the note once, on a line of its own. */
    const char *a = strstr(h->explain, "\nnote: ring follows rank order");
    CHECK(a != NULL && strstr(a + 2, "note: ring follows") == NULL);
    if (test_failures)
        fprintf(stderr, "%s", h->explain);
}

static orb_topo_host_t *place_fake_gpus(orb_topo_t *t)
{
    /* Joined out of order, with bus ids no machine here has. */
    static const char *const bus[] = {"0000:ff:1f.7", "0000:fe:00.0", "0000:3b:00.0", "0000:5e:00.0"};
    static const int ids[] = {3, 1, 0, 2};
    orb_topo_rank_t r[4];
    orb_topo_host_t *h = NULL;
    for (int i = 0; i < 4; i++) {
        r[i].rank = ids[i];
        snprintf(r[i].desc, sizeof r[i].desc, "gpu:%s", bus[i]);
    }
    CHECK_EQ_INT(orb_topo_place(t, r, 4, &h), ORB_OK);
    return h;
}

static void this_machine(void)
{
    orb_topo_t *t = NULL;
    CHECK_EQ_INT(orb_topo_load(NULL, &t), ORB_OK);
    if (!t)
        return;
    orb_topo_host_t *h = place_fake_gpus(t);
#ifdef ORB_HAVE_HWLOC
    if (h && orb_topo_note(t)[0] == '\0')
        check_rank_order(h, "no PCI data for GPU");
    else if (h)
        check_rank_order(h, orb_topo_note(t)); /* hwloc could not read this machine */
#else
    if (h)
        check_rank_order(h, "built without hwloc");
#endif
    orb_topo_host_free(h);
    orb_topo_free(t);
}

#ifdef ORB_HAVE_HWLOC
static void vm_xml(void)
{
    orb_topo_t *t = test_load("vm-2socket-nopci.xml");
    CHECK_EQ_INT(orb_topo_gpus(t, NULL, 0), 0);
    CHECK_EQ_INT(orb_topo_numa_nodes(t, 0, NULL, 0), 2);
    orb_topo_host_t *h = place_fake_gpus(t);
    if (h)
        check_rank_order(h, "no PCI data for GPU 0000:3b:00.0 and others in");
    orb_topo_host_free(h);

    /* Unbound CPU ranks 0-3 go to NUMA nodes 0,1,0,1: the ring crosses sockets twice. */
    orb_topo_rank_t r[4];
    for (int i = 0; i < 4; i++) {
        r[i].rank = i;
        snprintf(r[i].desc, sizeof r[i].desc, "cpu");
    }
    CHECK_EQ_INT(orb_topo_place(t, r, 4, &h), ORB_OK);
    if (h) {
        int want[] = {0, 1, 3, 2}; /* nodes 0 1 | 1 0 */
        CHECK_EQ_INT(h->optimized, 1);
        for (int k = 0; k < 4; k++)
            CHECK_EQ_INT(h->ring[k], want[k]);
        CHECK_EQ_INT(h->dev[1].numa, 1);
        CHECK_EQ_INT(h->score.cls, ORB_TOPO_SYS);
        CHECK_EQ_INT(h->score.hops, 2);
        CHECK_EQ_INT(h->nports, 1);
        CHECK_EQ_INT(h->ports[0].nic, -1);
        CHECK(strstr(h->explain, "NICs: none found") != NULL);
        orb_topo_host_free(h);
    }
    /* Bound CPU ranks follow their binding. */
    snprintf(r[0].desc, sizeof r[0].desc, "cpu:2-3");
    snprintf(r[1].desc, sizeof r[1].desc, "cpu:1");
    CHECK_EQ_INT(orb_topo_place(t, r, 2, &h), ORB_OK);
    if (h) {
        CHECK_EQ_INT(h->dev[0].numa, 1);
        CHECK_EQ_INT(h->dev[1].numa, 0);
        CHECK(!strcmp(h->dev[0].cpus, "2-3"));
        orb_topo_host_free(h);
    }
    /* Refused: unreadable descriptions, a rank twice, nothing to place. */
    snprintf(r[0].desc, sizeof r[0].desc, "gpu:zz");
    h = NULL;
    CHECK_EQ_INT(orb_topo_place(t, r, 2, &h), ORB_ERR_INVALID_ARG);
    CHECK(h == NULL);
    snprintf(r[0].desc, sizeof r[0].desc, "tpu:0");
    CHECK_EQ_INT(orb_topo_place(t, r, 2, &h), ORB_ERR_INVALID_ARG);
    snprintf(r[0].desc, sizeof r[0].desc, "cpu");
    r[1].rank = r[0].rank;
    CHECK_EQ_INT(orb_topo_place(t, r, 2, &h), ORB_ERR_INVALID_ARG);
    CHECK_EQ_INT(orb_topo_place(t, r, 0, &h), ORB_ERR_INVALID_ARG);
    orb_topo_free(t);

    /* An XML that is not there is an error, not a silent fallback. */
    orb_topo_t *bad = NULL;
    CHECK_EQ_INT(orb_topo_load("/nonexistent/topology.xml", &bad), ORB_ERR_INVALID_ARG);
    CHECK(bad == NULL);
}
#endif

int main(void)
{
    this_machine();
#ifdef ORB_HAVE_HWLOC
    vm_xml();
#endif
    if (test_failures)
        fprintf(stderr, "%d check(s) failed\n", test_failures);
    return test_failures ? 1 : 0;
}
