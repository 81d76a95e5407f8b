/* The parts of the ib transport that need no RDMA device, on any host:
 *   hca     ORBIT_IB_HCA selection (NCCL_IB_HCA syntax) and its error messages
 *   gid     the RoCE v2 GID choice, against a made-up sysfs tree
 *   record  the connection-record check: a valid record passes, each damaged field is named
 * Prints "N passed, N failed"; exits 1 on any failure. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "transport/ib/ib_device.h"
#include "transport/ib/ib_wire.h"

static int passed, failed;

static void check(int ok, const char *what)
{
    if (ok) {
        passed++;
    } else {
        failed++;
        fprintf(stderr, "FAIL: %s\n", what);
    }
}

static int sel(const char *spec, const char *dev, int port)
{
    char why[256] = "";
    int r = orb_ib_hca_selects(spec, dev, port, why, sizeof why);
    if (why[0]) {
        fprintf(stderr, "unexpected error for \"%s\": %s\n", spec, why);
        return -1;
    }
    return r;
}

static void bad_spec(const char *spec, const char *want)
{
    char why[256] = "", what[400];
    int r = orb_ib_hca_selects(spec, "mlx5_0", 1, why, sizeof why);
    snprintf(what, sizeof what, "ORBIT_IB_HCA=\"%s\" is refused with \"%s\" (got %d, \"%s\")", spec, want, r, why);
    check(r == 0 && strstr(why, want) != NULL, what);
}

static void test_hca(void)
{
    check(sel("", "mlx5_0", 1) == 1, "empty spec selects every port");
    check(sel("mlx5", "mlx5_0", 1) == 1 && sel("mlx5", "mlx5_1", 2) == 1, "a name is a prefix");
    check(sel("mlx5", "rxe0", 1) == 0, "a prefix does not select another family");
    check(sel("=mlx5", "mlx5_0", 1) == 0 && sel("=mlx5_0", "mlx5_0", 1) == 1, "= makes names exact");
    check(sel("mlx5_0:1", "mlx5_0", 1) == 1 && sel("mlx5_0:1", "mlx5_0", 2) == 0, ":port selects one port");
    check(sel("mlx5_0:1,mlx5_1:1", "mlx5_1", 1) == 1 && sel("mlx5_0:1,mlx5_1:1", "mlx5_2", 1) == 0,
          "a list selects its members only");
    check(sel("^mlx5_1", "mlx5_1", 1) == 0 && sel("^mlx5_1", "mlx5_0", 1) == 1, "^ excludes");
    check(sel("^=mlx5_0:2", "mlx5_0", 2) == 0 && sel("^=mlx5_0:2", "mlx5_0", 1) == 1 &&
              sel("^=mlx5_0:2", "mlx5_00", 2) == 1,
          "^= excludes one exact port");
    /* "mlx5_1" must not match a prefix of itself the other way round */
    check(sel("mlx5_10", "mlx5_1", 1) == 0, "a longer name does not select a shorter device");
    bad_spec("mlx5_0:", "the port after ':' must be a number 1..255");
    bad_spec("mlx5_0:x", "the port after ':' must be a number 1..255");
    bad_spec("mlx5_0:0", "the port after ':' must be a number 1..255");
    bad_spec("mlx5_0,,mlx5_1", "empty entry");
    bad_spec(":1", "has a port but no device name");
}

/* ---- a made-up sysfs ---------------------------------------------------------------- */

static char root[256];

static void put(const char *rel, const char *text)
{
    char path[512], dir[512];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    snprintf(dir, sizeof dir, "%s", path);
    for (char *p = dir + strlen(root) + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            mkdir(dir, 0700);
            *p = '/';
        }
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        exit(1);
    }
    fprintf(f, "%s\n", text);
    fclose(f);
}

static void gid(int i, const char *type, const char *g, const char *ndev)
{
    char rel[128];
    snprintf(rel, sizeof rel, "class/infiniband/rxe0/ports/1/gids/%d", i);
    put(rel, g);
    if (type) {
        snprintf(rel, sizeof rel, "class/infiniband/rxe0/ports/1/gid_attrs/types/%d", i);
        put(rel, type);
        snprintf(rel, sizeof rel, "class/infiniband/rxe0/ports/1/gid_attrs/ndevs/%d", i);
        put(rel, ndev);
    }
}

static void test_gid(void)
{
    snprintf(root, sizeof root, "%s/orbit-ib-sysfs-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(root)) {
        perror("mkdtemp");
        exit(1);
    }
    put("class/net/eth0/operstate", "up");
    put("class/net/down0/operstate", "down");
    put("class/net/dummy0/operstate", "unknown");
    const char *v4 = "0000:0000:0000:0000:0000:ffff:0a4d:0001"; /* 10.77.0.1 */
    gid(0, "IB/RoCE v1", v4, "eth0");                                 /* v1: not routable */
    gid(1, "RoCE v2", "fe80:0000:0000:0000:5054:00ff:fe12:3456", "eth0"); /* link-local v6 */
    gid(2, "RoCE v2", "0000:0000:0000:0000:0000:ffff:0a4d:0002", "down0"); /* interface down */
    gid(3, NULL, "0000:0000:0000:0000:0000:0000:0000:0000", NULL);         /* unused entry */
    gid(4, "RoCE v2", v4, "eth0");
    char desc[128] = "", why[300] = "";
    int i = orb_ib_pick_gid(root, "rxe0", 1, 8, desc, sizeof desc, why, sizeof why);
    check(i == 4, "the first RoCE v2 GID with IPv4 on an up interface is picked (4)");
    check(strcmp(desc, "10.77.0.1 on eth0") == 0, "its description names the address and the interface");
    /* "unknown" (dummy, lo) counts as up */
    gid(2, "RoCE v2", "0000:0000:0000:0000:0000:ffff:0a4d:0002", "dummy0");
    i = orb_ib_pick_gid(root, "rxe0", 1, 8, desc, sizeof desc, why, sizeof why);
    check(i == 2 && strcmp(desc, "10.77.0.2 on dummy0") == 0, "an interface in state unknown counts as up");
    /* none usable: the reason counts what was seen */
    gid(2, "RoCE v2", "0000:0000:0000:0000:0000:ffff:0a4d:0002", "down0");
    i = orb_ib_pick_gid(root, "rxe0", 1, 4, desc, sizeof desc, why, sizeof why);
    check(i == -1 && strstr(why, "rxe0 port 1 has no usable RoCE v2 GID (2 RoCE v2, 1 with IPv4") &&
              strstr(why, "ORBIT_IB_GID_INDEX"),
          "no usable GID: -1 with the counts and the setting to use");
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    if (system(cmd) != 0)
        fprintf(stderr, "warning: could not remove %s\n", root);
}

/* ---- records ------------------------------------------------------------------------ */

enum { NR = 3, NCH = 2, SLOTS = 8 };
#define STRIDE ((uint64_t)64 + 4096)

static void make_rec(void *rec, int rank)
{
    memset(rec, 0, orb_ib_rec_bytes(NR, NCH));
    orb_ib_head_t h = {.magic = ORB_IB_MAGIC, .version = ORB_IB_VERSION, .link_layer = 2, .rank = rank,
                       .nranks = NR, .nchannels = NCH, .nslots = SLOTS, .slot_stride = STRIDE, .rkey = 0x1234,
                       .port = 1, .mtu = 3, .gid_index = 1};
    memcpy(rec, &h, sizeof h);
    for (int to = 0; to < NR; to++)
        for (int ch = 0; ch < NCH; ch++) {
            orb_ib_qprec_t e = {.qpn = 0x11 + (uint32_t)(to * NCH + ch), .psn = 0xabcdef, .recv_addr = 0x10000,
                                .mail_addr = 0x20040};
            memcpy(orb_ib_rec_entry(rec, NCH, to, ch), &e, sizeof e);
        }
}

static void expect_bad(void *rec, size_t len, const char *want, const char *what)
{
    char why[400] = "", msg[600];
    orb_status_t st = orb_ib_rec_check(rec, len, 1, 0, NR, NCH, SLOTS, STRIDE, 1, why, sizeof why);
    snprintf(msg, sizeof msg, "%s: refused naming \"%s\" (got %d, \"%s\")", what, want, st, why);
    check(st == ORB_ERR_PROTOCOL && strstr(why, want) != NULL, msg);
}

static void test_record(void)
{
    const size_t len = orb_ib_rec_bytes(NR, NCH);
    char *rec = malloc(len), why[400];
    make_rec(rec, 1);
    check(orb_ib_rec_check(rec, len, 1, 0, NR, NCH, SLOTS, STRIDE, 1, why, sizeof why) == ORB_OK,
          "a valid record passes");
    expect_bad(rec, len - 1, "short of", "a truncated record");
    orb_ib_head_t *h = (orb_ib_head_t *)rec;
#define FIELD(stmt, want, what) \
    do {                        \
        make_rec(rec, 1);       \
        stmt;                   \
        expect_bad(rec, len, want, what); \
    } while (0)
    FIELD(h->magic ^= 1, "different orbit builds?", "bad magic");
    FIELD(h->version++, "different orbit builds?", "other version");
    FIELD(h->rank = 2, "says rank 2 of 3", "a record sent under another rank");
    FIELD(h->nchannels = 4, "with 4 channels", "another channel count");
    FIELD(h->nslots = 16, "ORBIT_SHM_SLOTS", "another slot count");
    FIELD(h->slot_stride += 64, "ORBIT_SHM_SLOT_BYTES", "another slot size");
    FIELD(h->link_layer = 7, "link layer 7", "unknown link layer");
    FIELD(h->mtu = 6, "MTU code 6", "MTU out of range");
    FIELD(h->rkey = 0, "memory key 0", "no memory key");
    FIELD(h->gid_index = -1, "GID index -1", "RoCE without a GID");
    FIELD(orb_ib_rec_entry(rec, NCH, 0, 1)->qpn = 0, "QP number 0", "no QP for me on channel 1");
    FIELD(orb_ib_rec_entry(rec, NCH, 0, 0)->qpn = 0x1000000, "QP number 16777216", "a QP number over 24 bits");
    FIELD(orb_ib_rec_entry(rec, NCH, 0, 0)->psn = 0x1000000, "PSN 16777216", "a PSN over 24 bits");
    FIELD(orb_ib_rec_entry(rec, NCH, 0, 1)->recv_addr = 0x10008, "64-byte aligned", "a misaligned slot address");
    FIELD(orb_ib_rec_entry(rec, NCH, 0, 0)->mail_addr = 0, "64-byte aligned", "no mail address");
#undef FIELD
    /* entries for other ranks are not this rank's business */
    make_rec(rec, 1);
    orb_ib_rec_entry(rec, NCH, 2, 0)->qpn = 0;
    check(orb_ib_rec_check(rec, len, 1, 0, NR, NCH, SLOTS, STRIDE, 1, why, sizeof why) == ORB_OK,
          "another rank's entry is not checked");
    free(rec);
}

int main(int argc, char **argv)
{
    const char *what = argc > 1 ? argv[1] : "all";
    if (!strcmp(what, "hca") || !strcmp(what, "all"))
        test_hca();
    if (!strcmp(what, "gid") || !strcmp(what, "all"))
        test_gid();
    if (!strcmp(what, "record") || !strcmp(what, "all"))
        test_record();
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
