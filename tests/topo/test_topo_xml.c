/* Discovery and rings on the real machine exports in tests/data: exact link classes and
 * bandwidths read by eye from lstopo, rings checked against brute force (<= 10 devices)
 * or against the group bound (16 GPUs), on GPU ranks and CPU ranks. */
#include <unistd.h>

#include "topo_test.h"

static void check_cls(const orb_topo_host_t *h, int a, int b, orb_topo_class_t c, uint32_t bw)
{
    int n = h->ndev;
    if (h->cls[a * n + b] != c || h->bw[a * n + b] != bw || h->cls[b * n + a] != c) {
        fprintf(stderr, "%s: link %d-%d is %s %u MB/s, want %s %u\n", h->source, a, b,
                orb_topo_class_name(h->cls[a * n + b]), h->bw[a * n + b], orb_topo_class_name(c), bw);
        test_failures++;
    }
}

static void check_ring_is(const orb_topo_host_t *h, const int *want)
{
    for (int k = 0; k < h->ndev; k++)
        if (h->ring[k] != want[k]) {
            fprintf(stderr, "%s: ring[%d] = %d, want %d\n", h->source, k, h->ring[k], want[k]);
            test_failures++;
            return;
        }
}

/* The ring of h is as good as the best of all rings (n <= 10). */
static void check_brute(const orb_topo_host_t *h)
{
    int n = h->ndev;
    CHECK(h->optimized);
    CHECK(is_permutation(h->ring_dev, n));
    judge_t got = judge_ring(n, h->bw, h->cls, h->ring_dev), best = judge_brute_force(n, h->bw, h->cls);
    if (got.bw != best.bw || got.cls != best.cls || got.hops != best.hops) {
        fprintf(stderr, "%s (%d devices): ring has slowest %u/%s x%d, best is %u/%s x%d\n", h->source, n, got.bw,
                orb_topo_class_name((orb_topo_class_t)got.cls), got.hops, best.bw,
                orb_topo_class_name((orb_topo_class_t)best.cls), best.hops);
        test_failures++;
    }
    CHECK_EQ_INT(h->score.lower_bound, best.hops);
}

static void check_subset(orb_topo_t *t, const int *pick, int n)
{
    orb_topo_host_t *h = test_place_gpus(t, pick, n);
    check_brute(h);
    orb_topo_host_free(h);
}

/* A copy of an XML without its NVLink matrix, to see the PCIe ladder underneath. */
static orb_topo_t *load_without_nvlink(const char *file, char *tmp, size_t tmplen)
{
    char path[1024];
    test_data_path(path, sizeof path, file);
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    static char buf[1 << 20];
    size_t len = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[len] = '\0';
    char *a = strstr(buf, "<distances2hetero"), *b = a ? strstr(a, "</distances2hetero>") : NULL;
    if (!b)
        return NULL;
    b += strlen("</distances2hetero>");
    const char *dir = getenv("TMPDIR");
    snprintf(tmp, tmplen, "%s/orbit-topo-XXXXXX", dir && *dir ? dir : "/tmp");
    int fd = mkstemp(tmp);
    if (fd < 0)
        return NULL;
    f = fdopen(fd, "wb");
    fwrite(buf, 1, (size_t)(a - buf), f);
    fwrite(b, 1, strlen(b), f);
    fclose(f);
    orb_topo_t *t = NULL;
    if (orb_topo_load(tmp, &t) != ORB_OK)
        return NULL;
    return t;
}

static void dgx2(void)
{
    orb_topo_t *t = test_load("dgx2-16xV100-nvswitch.xml");
    CHECK_EQ_INT(orb_topo_gpus(t, NULL, 0), 16);
    orb_topo_host_t *h = test_place_gpus(t, NULL, 0);
    CHECK_EQ_INT(h->ndev, 16);
    CHECK(!strcmp(h->dev[0].busid, "0000:34:00.0"));
    CHECK(!strcmp(h->dev[0].name, "nvml0"));
    CHECK(!strcmp(h->dev[15].busid, "0000:e7:00.0"));
    CHECK_EQ_INT(h->dev[0].numa, 0);
    CHECK_EQ_INT(h->dev[15].numa, 1);
    CHECK(!strcmp(h->dev[8].cpus, "24-25"));
    CHECK_EQ_INT(h->dev[8].ncores, 2);
    /* Six NVSwitches per baseboard, 25 GB/s to each: 150 GB/s inside a plane, none across. */
    check_cls(h, 0, 1, ORB_TOPO_NVL, 150000);
    check_cls(h, 0, 7, ORB_TOPO_NVL, 150000);
    check_cls(h, 8, 15, ORB_TOPO_NVL, 150000);
    check_cls(h, 0, 8, ORB_TOPO_SYS, 10000);
    check_cls(h, 7, 15, ORB_TOPO_SYS, 10000);
    int want[16];
    for (int k = 0; k < 16; k++)
        want[k] = k;
    check_ring_is(h, want);
    CHECK_EQ_INT(h->exact, 0); /* 16 > ORB_TOPO_EXACT_MAX: greedy + 2-opt */
    CHECK_EQ_INT(h->score.cls, ORB_TOPO_SYS);
    CHECK_EQ_INT(h->score.hops, 2);
    CHECK_EQ_INT(h->score.lower_bound, 2); /* two sockets joined only by SYS */
    CHECK(strstr(h->explain, "crosses sockets twice (7->8, 15->0)") != NULL);
    CHECK_EQ_INT(h->nnics, 0);
    CHECK_EQ_INT(h->nports, 1);
    CHECK_EQ_INT(h->ports[0].nic, -1);
    orb_topo_host_free(h);
    /* Subsets small enough for brute force. */
    int s1[] = {0, 1, 2, 3, 4, 8, 9, 10, 11, 12}, s2[] = {15, 0, 9, 6}, s3[] = {0, 8, 1, 9, 2, 10, 3};
    check_subset(t, s1, 10);
    check_subset(t, s2, 4);
    check_subset(t, s3, 7);
    orb_topo_free(t);

    /* The PCIe ladder under the NVLink matrix. */
    char tmp[1024];
    t = load_without_nvlink("dgx2-16xV100-nvswitch.xml", tmp, sizeof tmp);
    CHECK(t != NULL);
    if (!t)
        return;
    h = test_place_gpus(t, NULL, 0);
    check_cls(h, 0, 1, ORB_TOPO_PIX, 15753);  /* 34:00 and 36:00 share a switch */
    check_cls(h, 0, 2, ORB_TOPO_PXB, 15753);  /* 39:00 is under the next switch down */
    check_cls(h, 0, 4, ORB_TOPO_NODE, 15753); /* 57:00 is under another host bridge */
    check_cls(h, 0, 8, ORB_TOPO_SYS, 10000);
    CHECK_EQ_INT(h->score.hops, 2);
    CHECK_EQ_INT(h->score.lower_bound, 2);
    orb_topo_host_free(h);
    int s4[] = {0, 1, 2, 3, 4, 5, 8, 9, 12, 13}, s5[] = {0, 2, 4, 6, 1, 3, 5, 7}, s6[] = {0, 4, 8, 12, 2, 6};
    check_subset(t, s4, 10);
    check_subset(t, s5, 8);
    check_subset(t, s6, 6);
    /* Four GPUs of one socket, two per switch pair: the ring keeps switch partners together. */
    int s7[] = {0, 4, 1, 5};
    h = test_place_gpus(t, s7, 4);
    int want7[] = {0, 2, 1, 3}; /* 34:00 36:00 | 57:00 59:00 (ranks 0,2 and 1,3) */
    check_ring_is(h, want7);
    CHECK(strstr(h->explain, "crosses host bridges twice (2->1, 3->0)") != NULL);
    orb_topo_host_free(h);
    orb_topo_free(t);
    unlink(tmp);
}

static void power8(void)
{
    orb_topo_t *t = test_load("power8-4xP100-nvlink.xml");
    orb_topo_host_t *h = test_place_gpus(t, NULL, 0);
    CHECK_EQ_INT(h->ndev, 4);
    CHECK(!strcmp(h->dev[2].busid, "000a:01:00.0"));
    CHECK(!strcmp(h->dev[2].name, "cuda2"));
    check_cls(h, 0, 1, ORB_TOPO_NVL, 40000);
    check_cls(h, 2, 3, ORB_TOPO_NVL, 40000);
    check_cls(h, 1, 2, ORB_TOPO_SYS, 10000);
    int want[] = {0, 1, 2, 3};
    check_ring_is(h, want);
    CHECK_EQ_INT(h->score.hops, 2);
    check_brute(h);
    orb_topo_host_free(h);
    orb_topo_free(t);
}

static void jureca(void)
{
    orb_topo_t *t = test_load("jureca-dc-4xA100-4xHDR.xml");
    orb_topo_host_t *h = test_place_gpus(t, NULL, 0);
    CHECK_EQ_INT(h->ndev, 4);
    /* No CUDA/NVML OS device in this export: found by PCI class 0302 and vendor 0x10de. */
    CHECK(!strcmp(h->dev[0].busid, "0000:03:00.0"));
    CHECK(!strcmp(h->dev[0].name, ""));
    CHECK_EQ_INT(h->dev[0].numa, 3);
    CHECK_EQ_INT(h->dev[1].numa, 1);
    CHECK_EQ_INT(h->dev[2].numa, 7);
    CHECK_EQ_INT(h->dev[3].numa, 5);
    CHECK_EQ_INT(h->dev[0].ncores, 16);
    CHECK(!strcmp(h->dev[0].cpus, "48-63,176-191"));
    check_cls(h, 0, 1, ORB_TOPO_PKG, 20000);
    check_cls(h, 2, 3, ORB_TOPO_PKG, 20000);
    check_cls(h, 0, 2, ORB_TOPO_SYS, 10000);
    int want[] = {0, 1, 2, 3};
    check_ring_is(h, want);
    check_brute(h);
    CHECK(strstr(h->explain, "crosses sockets twice (1->2, 3->0)") != NULL);
    orb_topo_host_free(h);
    /* CPU ranks: one per NUMA node (8), and 10 spread round-robin. */
    for (int n = 8; n <= 10; n += 2) {
        orb_topo_rank_t r[10];
        for (int i = 0; i < n; i++) {
            r[i].rank = i;
            char cpus[48] = "";
            if (n == 8) /* bound to node i's PUs */
                orb_topo_numa_nodes(t, i, cpus, sizeof cpus);
            snprintf(r[i].desc, sizeof r[i].desc, "cpu%s%s", cpus[0] ? ":" : "", cpus);
        }
        CHECK_EQ_INT(orb_topo_place(t, r, n, &h), ORB_OK);
        CHECK_EQ_INT(h->dev[1].numa, 1);
        CHECK_EQ_INT(h->dev[n - 1].numa, (n - 1) % 8);
        check_brute(h);
        CHECK_EQ_INT(h->score.cls, ORB_TOPO_SYS);
        CHECK_EQ_INT(h->score.hops, 2);
        orb_topo_host_free(h);
    }
    orb_topo_free(t);
}

static void sierra(void)
{
    orb_topo_t *t = test_load("sierra-power9-4xV100.xml");
    orb_topo_host_t *h = test_place_gpus(t, NULL, 0);
    CHECK_EQ_INT(h->ndev, 4);
    CHECK(!strcmp(h->dev[0].busid, "0004:04:00.0"));
    CHECK(!strcmp(h->dev[3].busid, "0035:04:00.0"));
    CHECK_EQ_INT(h->dev[0].numa, 0);
    CHECK_EQ_INT(h->dev[3].numa, 8);
    check_cls(h, 0, 1, ORB_TOPO_PHB, 12000); /* no link speed in the export: nominal PCIe */
    check_cls(h, 0, 3, ORB_TOPO_SYS, 10000);
    int want[] = {0, 1, 2, 3};
    check_ring_is(h, want);
    check_brute(h);
    orb_topo_host_free(h);
    orb_topo_free(t);
}

int main(void)
{
    dgx2();
    power8();
    jureca();
    sierra();
    if (test_failures)
        fprintf(stderr, "%d check(s) failed\n", test_failures);
    return test_failures ? 1 : 0;
}
