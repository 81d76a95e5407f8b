/* Binding the calling thread to its share of its device's NUMA node (and leaving it alone when asked to,
 * or when the topology is not this machine's), and ORBIT_TOPO_DUMP. */
#include <sched.h>
#include <unistd.h>

#include "topo_test.h"
#ifdef ORB_HAVE_HWLOC
#include <hwloc.h>
#endif

static int affinity_count(cpu_set_t *set)
{
    CPU_ZERO(set);
    if (sched_getaffinity(0, sizeof *set, set) != 0)
        return -1;
    return CPU_COUNT(set);
}

static void this_machine(void)
{
    orb_topo_t *t = NULL;
    CHECK_EQ_INT(orb_topo_load(NULL, &t), ORB_OK);
    if (!t)
        return;
    char desc[ORB_TOPO_DESC_LEN], note[256];
    CHECK_EQ_INT(orb_topo_self_desc(t, desc, sizeof desc), ORB_OK);
    CHECK(!strncmp(desc, "cpu", 3));
    orb_topo_rank_t r = {.rank = 5};
    snprintf(r.desc, sizeof r.desc, "%s", desc);
    orb_topo_host_t *h = NULL;
    CHECK_EQ_INT(orb_topo_place(t, &r, 1, &h), ORB_OK);
    if (!h) {
        orb_topo_free(t);
        return;
    }
    CHECK_EQ_INT(orb_topo_bind(t, h, 6, note, sizeof note), ORB_ERR_INVALID_ARG); /* not placed */
    cpu_set_t before, after;
    int n0 = affinity_count(&before);

    setenv("ORBIT_BIND", "0", 1);
    CHECK_EQ_INT(orb_topo_bind(t, h, 5, note, sizeof note), ORB_OK);
    CHECK(strstr(note, "ORBIT_BIND=0: not bound") != NULL);
    CHECK_EQ_INT(affinity_count(&after), n0);
    unsetenv("ORBIT_BIND");

#ifdef ORB_HAVE_HWLOC
    if (!orb_topo_is_this_machine(t)) {
        printf("hwloc did not read this machine (%s): binding not checked\n", orb_topo_note(t));
    } else {
        /* ORBIT_BIND=2: the node's cores, which include every CPU it may run on now. */
        setenv("ORBIT_BIND", "2", 1);
        CHECK_EQ_INT(orb_topo_bind(t, h, 5, note, sizeof note), ORB_OK);
        unsetenv("ORBIT_BIND");
        printf("%s\n", note);
        CHECK(strstr(note, "bound to NUMA node") != NULL);
        sched_setaffinity(0, sizeof before, &before);
        /* Default: the only rank on the node gets all of it, as its share. */
        CHECK_EQ_INT(orb_topo_bind(t, h, 5, note, sizeof note), ORB_OK);
        printf("%s\n", note);
        CHECK(strstr(note, "bound to share 1 of 1 of NUMA node") != NULL);
        CHECK(affinity_count(&after) >= 1);
        hwloc_bitmap_t node = hwloc_bitmap_alloc();
        CHECK_EQ_INT(hwloc_bitmap_list_sscanf(node, h->dev[0].cpus), 0);
        for (int c = 0; c < CPU_SETSIZE; c++)
            if (CPU_ISSET(c, &after))
                CHECK(hwloc_bitmap_isset(node, (unsigned)c));
        hwloc_bitmap_free(node);
        /* Already pinned inside the node: the pin stays. */
        int first = -1;
        for (int c = 0; c < CPU_SETSIZE && first < 0; c++)
            if (CPU_ISSET(c, &after))
                first = c;
        if (n0 > 1 && first >= 0) {
            cpu_set_t one;
            CPU_ZERO(&one);
            CPU_SET(first, &one);
            CHECK_EQ_INT(sched_setaffinity(0, sizeof one, &one), 0);
            CHECK_EQ_INT(orb_topo_bind(t, h, 5, note, sizeof note), ORB_OK);
            CHECK(strstr(note, "already bound inside NUMA node") != NULL);
            CHECK_EQ_INT(affinity_count(&after), 1);
            CHECK(CPU_ISSET(first, &after));
            sched_setaffinity(0, sizeof before, &before);
        }
    }
#else
    CHECK_EQ_INT(orb_topo_bind(t, h, 5, note, sizeof note), ORB_OK);
    CHECK(strstr(note, "built without hwloc") != NULL);
    setenv("ORBIT_TOPO_DUMP", "/tmp/orbit-topo-never-written.xml", 1);
    CHECK_EQ_INT(orb_topo_dump(t, NULL), ORB_ERR_UNSUPPORTED);
    unsetenv("ORBIT_TOPO_DUMP");
#endif
    orb_topo_host_free(h);
    orb_topo_free(t);
}

#ifdef ORB_HAVE_HWLOC
/* Several CPU ranks on one node split its cores: disjoint, non-empty shares while there are
 * enough cores, the whole node for everyone once the ranks outnumber them. */
static void shares(void)
{
    orb_topo_t *t = NULL;
    CHECK_EQ_INT(orb_topo_load(NULL, &t), ORB_OK);
    if (!t || !orb_topo_is_this_machine(t)) {
        printf("hwloc did not read this machine: shares not checked\n");
        orb_topo_free(t);
        return;
    }
    cpu_set_t before, got[2];
    affinity_count(&before);
    char desc[ORB_TOPO_DESC_LEN], note[256];
    CHECK_EQ_INT(orb_topo_self_desc(t, desc, sizeof desc), ORB_OK);
    orb_topo_rank_t r[64];
    for (int n = 2; n <= 64; n *= 4) {
        for (int i = 0; i < n; i++) {
            r[i].rank = i;
            snprintf(r[i].desc, sizeof r[i].desc, "%s", desc);
        }
        orb_topo_host_t *h = NULL;
        CHECK_EQ_INT(orb_topo_place(t, r, n, &h), ORB_OK);
        if (!h)
            break;
        int ncores = h->dev[0].ncores, same_node = 1;
        for (int i = 1; i < n; i++)
            same_node &= h->dev[i].numa == h->dev[0].numa;
        for (int i = 0; i < 2; i++) {
            CHECK_EQ_INT(orb_topo_bind(t, h, i, note, sizeof note), ORB_OK);
            printf("%d ranks, %d cores: %s\n", n, ncores, note);
            affinity_count(&got[i]);
            CHECK(CPU_COUNT(&got[i]) >= 1);
            sched_setaffinity(0, sizeof before, &before);
        }
        if (same_node && n <= ncores) {
            cpu_set_t both;
            CPU_AND(&both, &got[0], &got[1]);
            CHECK(CPU_COUNT(&both) == 0);
            CHECK(strstr(note, "share 2 of") != NULL);
        } else if (same_node) {
            CHECK(CPU_EQUAL(&got[0], &got[1]));
            CHECK(strstr(note, "ranks share it") != NULL);
        }
        orb_topo_host_free(h);
    }
    orb_topo_free(t);
}

static void xml_and_dump(void)
{
    orb_topo_t *t = test_load("jureca-dc-4xA100-4xHDR.xml");
    orb_topo_host_t *h = test_place_gpus(t, NULL, 0);
    char note[256];
    cpu_set_t before, after;
    int n0 = affinity_count(&before);
    CHECK_EQ_INT(orb_topo_bind(t, h, 0, note, sizeof note), ORB_OK);
    CHECK(strstr(note, "not this machine: not bound") != NULL);
    CHECK_EQ_INT(affinity_count(&after), n0);

    /* The dump is the topology the communicator used: it loads back to the same ring. */
    char path[256];
    const char *dir = getenv("TMPDIR");
    snprintf(path, sizeof path, "%s/orbit-topo-dump-%d.xml", dir && *dir ? dir : "/tmp", (int)getpid());
    CHECK_EQ_INT(orb_topo_dump(t, NULL), ORB_OK); /* ORBIT_TOPO_DUMP unset: nothing */
    CHECK(access(path, F_OK) != 0);
    setenv("ORBIT_TOPO_DUMP", path, 1);
    CHECK_EQ_INT(orb_topo_dump(t, NULL), ORB_OK);
    unsetenv("ORBIT_TOPO_DUMP");
    orb_topo_t *back = NULL;
    CHECK_EQ_INT(orb_topo_load(path, &back), ORB_OK);
    if (back) {
        orb_topo_host_t *h2 = test_place_gpus(back, NULL, 0);
        CHECK_EQ_INT(h2->ndev, 4);
        CHECK(!memcmp(h->ring, h2->ring, 4 * sizeof *h->ring));
        CHECK_EQ_INT(h2->nnics, 4);
        CHECK_EQ_INT(h2->dev[0].nic, h->dev[0].nic);
        orb_topo_host_free(h2);
        orb_topo_free(back);
    }
    unlink(path);
    orb_topo_host_free(h);
    orb_topo_free(t);
}
#endif

/* The checks below are about a process nobody pinned. A launcher or `taskset -c 0` may have
 * pinned this one (orbit then rightly leaves it alone: "already bound"), so widen the mask to
 * every CPU first; the kernel keeps only those a cpuset allows, which is what unpinned means. */
static void unpin(void)
{
    cpu_set_t all, now;
    CPU_ZERO(&all);
    long n = sysconf(_SC_NPROCESSORS_CONF);
    for (long c = 0; c < n && c < CPU_SETSIZE; c++)
        CPU_SET((int)c, &all);
    int before = affinity_count(&now);
    if (sched_setaffinity(0, sizeof all, &all) != 0)
        perror("test_topo_bind: sched_setaffinity (checks run with the mask as it is)");
    int after = affinity_count(&now);
    if (after != before)
        printf("started pinned to %d CPU(s); unpinned to %d\n", before, after);
}

int main(void)
{
    unpin();
    this_machine();
#ifdef ORB_HAVE_HWLOC
    shares();
    xml_and_dump();
#endif
    if (test_failures)
        fprintf(stderr, "%d check(s) failed\n", test_failures);
    return test_failures ? 1 : 0;
}
