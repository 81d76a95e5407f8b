/* GPU/NIC pairing on the machines with HCAs, the ports other hosts use, and the global
 * multi-host order built from them. */
#include "topo_test.h"

static const char *nic_of(const orb_topo_host_t *h, const char *busid)
{
    for (int i = 0; i < h->ndev; i++)
        if (!strcmp(h->dev[i].busid, busid))
            return h->dev[i].nic >= 0 ? h->nics[h->dev[i].nic].name : "(none)";
    return "(no such GPU)";
}

#define CHECK_NIC(h, bus, name)                                                                  \
    do {                                                                                         \
        const char *got_ = nic_of(h, bus);                                                       \
        if (strcmp(got_, name)) {                                                                \
            fprintf(stderr, "%s:%d: GPU %s gets NIC %s, want %s\n", __FILE__, __LINE__, bus, got_, name); \
            test_failures++;                                                                     \
        }                                                                                        \
    } while (0)

/* No NIC is nearer to any GPU than the one it got, and no two GPUs share one. */
static void check_nearest_distinct(const orb_topo_host_t *h)
{
    for (int i = 0; i < h->ndev; i++) {
        CHECK(h->dev[i].nic >= 0);
        for (int k = 0; k < h->nnics; k++)
            CHECK(h->nic_cls[i * h->nnics + k] >= h->dev[i].nic_class);
        for (int j = 0; j < i; j++)
            CHECK(h->dev[i].nic != h->dev[j].nic);
    }
}

static void jureca(void)
{
    orb_topo_t *t = test_load("jureca-dc-4xA100-4xHDR.xml");
    orb_topo_host_t *h = test_place_gpus(t, NULL, 0);
    /* Four HDR HCAs; the two Ethernet ports are left out since RDMA HCAs exist. */
    CHECK_EQ_INT(h->nnics, 4);
    for (int k = 0; k < h->nnics; k++)
        CHECK(h->nics[k].rdma);
    /* Each A100 shares a PCIe switch with one HCA. */
    CHECK_NIC(h, "0000:03:00.0", "mlx5_1");
    CHECK_NIC(h, "0000:44:00.0", "mlx5_0");
    CHECK_NIC(h, "0000:84:00.0", "mlx5_3");
    CHECK_NIC(h, "0000:c4:00.0", "mlx5_2");
    for (int i = 0; i < h->ndev; i++)
        CHECK_EQ_INT(h->dev[i].nic_class, ORB_TOPO_PIX);
    check_nearest_distinct(h);
    CHECK(strstr(h->explain, "NIC mlx5_0 (0000:43:00.0, NUMA node 1) serves GPU 1 (same PCIe switch)") != NULL);
    /* One port per HCA, entered at the GPU beside it. */
    CHECK_EQ_INT(h->nports, 4);
    for (int p = 0; p < h->nports; p++) {
        int entry = h->ring_dev[h->ports[p].start];
        CHECK_EQ_INT(h->dev[entry].nic, h->ports[p].nic);
    }
    /* Two such hosts: each channel's global ring enters each host at the GPU beside that
     * channel's HCA, and the four channels use four different HCAs. */
    orb_topo_rank_t r[4];
    char bus[4][ORB_TOPO_BUSID_LEN];
    orb_topo_gpus(t, bus, 4);
    for (int i = 0; i < 4; i++) {
        r[i].rank = 4 + i;
        snprintf(r[i].desc, sizeof r[i].desc, "%s", bus[i]);
    }
    orb_topo_host_t *h2 = NULL;
    CHECK_EQ_INT(orb_topo_place(t, r, 4, &h2), ORB_OK);
    orb_topo_hostring_t v[2];
    orb_topo_hostring_of(h, &v[0]);
    orb_topo_hostring_of(h2, &v[1]);
    int used[4] = {0};
    for (int c = 0; c < 8; c++) {
        int order[8];
        CHECK_EQ_INT(orb_topo_global_order(v, 2, c, order, 8), ORB_OK);
        CHECK(is_permutation(order, 8));
        for (int k = 0; k < 4; k++)
            CHECK(order[k] < 4 && order[4 + k] >= 4); /* hosts chained in host order */
        int nic = h->ports[c % 4].nic;
        CHECK_EQ_INT(h->dev[orb_topo_host_find(h, order[0])].nic, nic);
        CHECK_EQ_INT(h2->dev[orb_topo_host_find(h2, order[4])].nic, h2->ports[c % 4].nic);
        if (c < 4)
            used[nic]++;
        /* The host's chain is its ring, entered at the port and walked one way. */
        for (int k = 0; k + 1 < 4; k++) {
            int a = orb_topo_host_find(h, order[k]), b = orb_topo_host_find(h, order[k + 1]);
            int pa = 0;
            while (h->ring_dev[pa] != a)
                pa++;
            CHECK(h->ring_dev[(pa + 1) % 4] == b || h->ring_dev[(pa + 3) % 4] == b);
        }
    }
    for (int k = 0; k < 4; k++)
        CHECK_EQ_INT(used[k], 1);
    /* The first channel leaves the host out of its slowest hop: one socket crossing inside. */
    int order[8], cross = 0;
    orb_topo_global_order(v, 2, 0, order, 8);
    for (int k = 0; k + 1 < 4; k++) {
        int a = orb_topo_host_find(h, order[k]), b = orb_topo_host_find(h, order[k + 1]);
        cross += h->cls[a * 4 + b] == ORB_TOPO_SYS;
    }
    CHECK_EQ_INT(cross, 1);
    /* Bad views are refused. */
    CHECK_EQ_INT(orb_topo_global_order(v, 2, 0, order, 7), ORB_ERR_INVALID_ARG);
    CHECK_EQ_INT(orb_topo_global_order(v, 0, 0, order, 8), ORB_ERR_INVALID_ARG);
    CHECK_EQ_INT(orb_topo_global_order(v, 2, -1, order, 8), ORB_ERR_INVALID_ARG);
    orb_topo_host_free(h2);
    /* Two GPUs of one socket: only their two HCAs carry channels. */
    int pick[] = {0, 1};
    orb_topo_host_t *h3 = test_place_gpus(t, pick, 2);
    CHECK_EQ_INT(h3->nports, 2);
    orb_topo_host_free(h3);
    orb_topo_host_free(h);
    orb_topo_free(t);
}

static void sierra(void)
{
    orb_topo_t *t = test_load("sierra-power9-4xV100.xml");
    orb_topo_host_t *h = test_place_gpus(t, NULL, 0);
    CHECK_EQ_INT(h->nnics, 4);
    /* In this export no HCA shares a switch or host bridge with a GPU (GPUs in PCI domains
     * 0004/0035, HCAs in 0003/0033): the nearest are on the GPU's NUMA node, one port of the
     * dual-port HCA per GPU. */
    CHECK_NIC(h, "0004:04:00.0", "mlx5_0");
    CHECK_NIC(h, "0004:05:00.0", "mlx5_1");
    CHECK_NIC(h, "0035:03:00.0", "mlx5_2");
    CHECK_NIC(h, "0035:04:00.0", "mlx5_3");
    for (int i = 0; i < h->ndev; i++) {
        CHECK_EQ_INT(h->dev[i].nic_class, ORB_TOPO_NODE);
        CHECK_EQ_INT(h->nics[h->dev[i].nic].numa, h->dev[i].numa);
    }
    check_nearest_distinct(h);
    orb_topo_host_free(h);
    orb_topo_free(t);
}

static void no_nic(void)
{
    orb_topo_t *t = test_load("power8-4xP100-nvlink.xml");
    orb_topo_host_t *h = test_place_gpus(t, NULL, 0);
    CHECK_EQ_INT(h->nnics, 0);
    CHECK_EQ_INT(h->nports, 1);
    CHECK_EQ_INT(h->ports[0].nic, -1);
    /* Entered after its slowest hop (3->0): the chain is 0 1 2 3. */
    orb_topo_hostring_t v;
    orb_topo_hostring_of(h, &v);
    int order[4];
    CHECK_EQ_INT(orb_topo_global_order(&v, 1, 5, order, 4), ORB_OK);
    for (int k = 0; k < 4; k++)
        CHECK_EQ_INT(order[k], k);
    orb_topo_host_free(h);
    orb_topo_free(t);
}

int main(void)
{
    jureca();
    sierra();
    no_nic();
    if (test_failures)
        fprintf(stderr, "%d check(s) failed\n", test_failures);
    return test_failures ? 1 : 0;
}
