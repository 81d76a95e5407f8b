/* Which RDMA device, port and GID a rank uses: the parts that need no verbs calls, so they
 * can be tested against a made-up sysfs tree. */
#ifndef ORB_TRANSPORT_IB_DEVICE_H
#define ORB_TRANSPORT_IB_DEVICE_H

#include <stddef.h>

/* Whether ORBIT_IB_HCA's spec selects port `port` of device `dev` (NCCL_IB_HCA syntax):
 * comma-separated names, each with an optional ":port"; a name matches as a prefix unless the
 * list starts with "=" (exact); "^" first excludes the listed ones instead. Empty: every one.
 * A malformed spec selects nothing and fills why. */
int orb_ib_hca_selects(const char *spec, const char *dev, int port, char *why, size_t len);

/* The GID index for RoCE v2 on dev:port, read from sysfs under root ("/sys" normally): the
 * first "RoCE v2" GID holding an IPv4 address (::ffff:a.b.c.d) whose interface is up, else
 * -1 with why. desc gets "10.0.0.1 on eth0". */
int orb_ib_pick_gid(const char *root, const char *dev, int port, int ngids, char *desc, size_t desclen, char *why,
                    size_t len);

#endif
