#include "transport/ib/ib_device.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int orb_ib_hca_selects(const char *spec, const char *dev, int port, char *why, size_t len)
{
    if (!spec || !spec[0])
        return 1;
    int exclude = 0, exact = 0;
    if (*spec == '^')
        exclude = 1, spec++;
    if (*spec == '=')
        exact = 1, spec++;
    int hit = 0;
    char item[128];
    for (const char *p = spec; *p;) {
        size_t n = strcspn(p, ",");
        if (n == 0 || n >= sizeof item) {
            snprintf(why, len, "ORBIT_IB_HCA has an %s entry near \"%.40s\"", n ? "overlong" : "empty", p);
            return 0;
        }
        memcpy(item, p, n);
        item[n] = 0;
        p += n + (p[n] == ',');
        int want_port = 0;
        char *colon = strchr(item, ':');
        if (colon) {
            char *end;
            long v = strtol(colon + 1, &end, 10);
            if (colon[1] == 0 || *end || v < 1 || v > 255) {
                snprintf(why, len, "ORBIT_IB_HCA entry \"%s\": the port after ':' must be a number 1..255", item);
                return 0;
            }
            want_port = (int)v;
            *colon = 0;
        }
        if (!item[0]) {
            snprintf(why, len, "ORBIT_IB_HCA entry has a port but no device name");
            return 0;
        }
        int name_ok = exact ? strcmp(item, dev) == 0 : strncmp(item, dev, strlen(item)) == 0;
        if (name_ok && (!want_port || want_port == port))
            hit = 1;
    }
    return exclude ? !hit : hit;
}

/* The first line of a sysfs file, without its newline; 0 when it cannot be read. */
static int read_line(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    int ok = fgets(buf, (int)len, f) != NULL;
    fclose(f);
    if (ok)
        buf[strcspn(buf, "\n")] = 0;
    return ok;
}

/* "0000:0000:0000:0000:0000:ffff:0a4d:0001" -> "10.77.0.1"; 0 when not IPv4-mapped. */
static int gid_ipv4(const char *gid, char *out, size_t len)
{
    unsigned g[8];
    if (sscanf(gid, "%4x:%4x:%4x:%4x:%4x:%4x:%4x:%4x", &g[0], &g[1], &g[2], &g[3], &g[4], &g[5], &g[6], &g[7]) != 8)
        return 0;
    if (g[0] || g[1] || g[2] || g[3] || g[4] || g[5] != 0xffff)
        return 0;
    snprintf(out, len, "%u.%u.%u.%u", g[6] >> 8, g[6] & 0xff, g[7] >> 8, g[7] & 0xff);
    return 1;
}

int orb_ib_pick_gid(const char *root, const char *dev, int port, int ngids, char *desc, size_t desclen, char *why,
                    size_t len)
{
    char path[512], type[64], gid[64], ndev[64], state[32], ip[32];
    int roce2 = 0, v4 = 0;
    for (int i = 0; i < ngids; i++) {
        snprintf(path, sizeof path, "%s/class/infiniband/%s/ports/%d/gid_attrs/types/%d", root, dev, port, i);
        if (!read_line(path, type, sizeof type) || strcmp(type, "RoCE v2") != 0)
            continue; /* unused entries cannot be read */
        roce2++;
        snprintf(path, sizeof path, "%s/class/infiniband/%s/ports/%d/gids/%d", root, dev, port, i);
        if (!read_line(path, gid, sizeof gid) || !gid_ipv4(gid, ip, sizeof ip))
            continue;
        v4++;
        snprintf(path, sizeof path, "%s/class/infiniband/%s/ports/%d/gid_attrs/ndevs/%d", root, dev, port, i);
        if (!read_line(path, ndev, sizeof ndev))
            continue;
        snprintf(path, sizeof path, "%s/class/net/%s/operstate", root, ndev);
        /* dummy, lo and some virtual NICs report "unknown" while they carry traffic */
        if (!read_line(path, state, sizeof state) || (strcmp(state, "up") != 0 && strcmp(state, "unknown") != 0))
            continue;
        snprintf(desc, desclen, "%s on %s", ip, ndev);
        return i;
    }
    snprintf(why, len,
             "%s port %d has no usable RoCE v2 GID (%d RoCE v2, %d with IPv4, none on an up interface): give the "
             "interface an IPv4 address, or pick one with ORBIT_IB_GID_INDEX",
             dev, port, roce2, v4);
    return -1;
}
