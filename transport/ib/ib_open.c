/* Device, port and GID for this rank: ORBIT_NET, ORBIT_IB_HCA, ORBIT_IB_GID_INDEX. When ib is
 * not available the endpoint stays, with off_why saying why (told at INFO, or as the error
 * when ORBIT_NET=ib asked for it). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/param.h"
#include "core/proc.h"
#include "transport/ib/ib_device.h"
#include "transport/ib/ib_impl.h"

static const char *link_name(int ll) { return ll == IBV_LINK_LAYER_ETHERNET ? "RoCE" : "InfiniBand"; }

/* With several usable ports, ranks of a host spread over them by local rank (the launcher's). */
static int local_rank(void)
{
    int l = orb_env_local_rank();
    return l < 0 ? 0 : l;
}

static orb_status_t pick_gid(ib_ep_t *e, char *err, size_t errlen)
{
    int forced = orb_param_num_state(ORB_PARAM_IB_GID_INDEX) == ORB_PARAM_STATE_SET;
    int idx = (int)orb_param_num(ORB_PARAM_IB_GID_INDEX);
    if (forced && (idx < 0 || idx >= e->pattr.gid_tbl_len)) {
        snprintf(err, errlen, "rank %d: ORBIT_IB_GID_INDEX=%d is outside %s port %d's GID table (0..%d)", e->rank, idx,
                 e->dev_name, e->port, e->pattr.gid_tbl_len - 1);
        return ORB_ERR_INVALID_ARG;
    }
    if (!forced) {
        if (e->pattr.link_layer == IBV_LINK_LAYER_ETHERNET) {
            idx = orb_ib_pick_gid("/sys", e->dev_name, e->port, e->pattr.gid_tbl_len, e->gid_desc,
                                  sizeof e->gid_desc, e->off_why, sizeof e->off_why);
            if (idx < 0)
                return ORB_OK;
        } else {
            idx = 0;
        }
    }
    if (e->v->query_gid(e->ctx, (uint8_t)e->port, idx, &e->gid) != 0) {
        snprintf(e->off_why, sizeof e->off_why, "%s port %d: GID %d cannot be read", e->dev_name, e->port, idx);
        return ORB_OK;
    }
    static const uint8_t zero[16];
    if (forced && memcmp(e->gid.raw, zero, 16) == 0) {
        snprintf(err, errlen, "rank %d: ORBIT_IB_GID_INDEX=%d: that entry of %s port %d's GID table is empty (list them "
                 "with ibv_devinfo -v)", e->rank, idx, e->dev_name, e->port);
        return ORB_ERR_INVALID_ARG;
    }
    e->gid_index = idx;
    if (!e->gid_desc[0])
        snprintf(e->gid_desc, sizeof e->gid_desc, "%s GID index %d", forced ? "ORBIT_IB_GID_INDEX:" : "", idx);
    return ORB_OK;
}

/* Walk the devices and their ports; keep the ones ORBIT_IB_HCA selects and that are ACTIVE. */
static orb_status_t pick_port(ib_ep_t *e, char *err, size_t errlen)
{
    const char *spec = orb_param_str(ORB_PARAM_S_IB_HCA);
    char why[200] = "";
    orb_ib_hca_selects(spec, "", 1, why, sizeof why);
    if (why[0]) {
        snprintf(err, errlen, "rank %d: %s (syntax: mlx5_0:1,mlx5_1 ; ^ to exclude ; = for exact names)", e->rank, why);
        return ORB_ERR_INVALID_ARG;
    }
    int ndev = 0;
    struct ibv_device **list = e->v->get_device_list(&ndev);
    if (!list || ndev == 0) {
        snprintf(e->off_why, sizeof e->off_why, "no RDMA device on this host (ibv_get_device_list found none)");
        if (list)
            e->v->free_device_list(list);
        return ORB_OK;
    }
    char seen[200] = "";
    size_t sl = 0;
    int ncand = 0, want = -1;
    /* two passes: count the candidates, then open the one this local rank gets */
    for (int pass = 0; pass < 2 && !e->ctx; pass++) {
        int k = 0;
        if (pass == 1)
            want = ncand ? local_rank() % ncand : -1;
        for (int d = 0; d < ndev && !e->ctx && (pass == 0 || want >= 0); d++) {
            const char *name = e->v->get_device_name(list[d]);
            struct ibv_context *ctx = e->v->open_device(list[d]);
            if (!ctx)
                continue;
            struct ibv_device_attr da;
            int nports = e->v->query_device(ctx, &da) == 0 ? da.phys_port_cnt : 0;
            int keep = 0;
            for (int p = 1; p <= nports && !keep; p++) {
                struct ibv_port_attr pa;
                if (!orb_ib_hca_selects(spec, name, p, why, sizeof why) || orb_ibv_query_port(e->v, ctx, (uint8_t)p, &pa))
                    continue;
                if (pass == 0 && sl < sizeof seen)
                    sl += (size_t)snprintf(seen + sl, sizeof seen - sl, "%s%s:%d %s", sl ? ", " : "", name, p,
                                           pa.state == IBV_PORT_ACTIVE ? "active" : "not active");
                if (pa.state != IBV_PORT_ACTIVE)
                    continue;
                if (pass == 1 && k == want) {
                    keep = 1;
                    e->ctx = ctx;
                    e->port = p;
                    e->pattr = pa;
                    snprintf(e->dev_name, sizeof e->dev_name, "%s", name);
                }
                k++;
                if (pass == 0)
                    ncand++;
            }
            if (!keep)
                e->v->close_device(ctx);
        }
    }
    e->v->free_device_list(list);
    if (!e->ctx)
        snprintf(e->off_why, sizeof e->off_why, "no active port%s%s%s%s", spec[0] ? " selected by ORBIT_IB_HCA=" : "",
                 spec, seen[0] ? " among " : " (no port matched)", seen);
    else if (ncand > 1)
        ORB_INFO("ib: %d active ports; local rank %d takes %s:%d", ncand, local_rank(), e->dev_name, e->port);
    return ORB_OK;
}

orb_status_t orb_ib_open(ib_ep_t *e, char *err, size_t errlen)
{
    const char *net = orb_param_str(ORB_PARAM_S_NET);
    if (net[0] && strcmp(net, "ib") != 0 && strcmp(net, "tcp") != 0) {
        snprintf(err, errlen, "rank %d: ORBIT_NET=%s is not one of ib, tcp (or empty: ib where it works, else tcp)",
                 e->rank, net);
        return ORB_ERR_INVALID_ARG;
    }
    e->gid_index = -1;
    if (strcmp(net, "tcp") == 0) {
        snprintf(e->off_why, sizeof e->off_why, "ORBIT_NET=tcp");
        ORB_INFO("ib: off (ORBIT_NET=tcp): TCP carries traffic between hosts");
        return ORB_OK;
    }
    char why[256];
    e->v = orb_ibv_load(why, sizeof why);
    if (!e->v) {
        snprintf(e->off_why, sizeof e->off_why, "%s", why);
    } else {
        orb_status_t st = pick_port(e, err, errlen);
        if (st == ORB_OK && e->ctx)
            st = pick_gid(e, err, errlen);
        if (st != ORB_OK)
            return st;
        if (e->ctx && !e->off_why[0]) {
            e->pd = e->v->alloc_pd(e->ctx);
            if (!e->pd)
                snprintf(e->off_why, sizeof e->off_why, "%s: cannot allocate a protection domain", e->dev_name);
        }
    }
    if (e->off_why[0]) {
        orb_ib_close(e);
        if (strcmp(net, "ib") == 0) {
            snprintf(err, errlen, "rank %d: ORBIT_NET=ib, but RDMA is not usable here: %s", e->rank, e->off_why);
            return ORB_ERR_UNSUPPORTED;
        }
        ORB_INFO("ib: off (%s): TCP carries traffic between hosts", e->off_why);
        return ORB_OK;
    }
    ORB_INFO("ib: %s port %d, %s, MTU %d, %s; GPU buffers between hosts: %s", e->dev_name, e->port,
             link_name(e->pattr.link_layer), 128 << e->pattr.active_mtu, e->gid_desc,
             e->v->reg_dmabuf_mr ? "dmabuf registration available in libibverbs, but the device path does not span "
                                   "hosts yet (docs/gpu.md)"
                                 : "the device path does not span hosts yet (docs/gpu.md)");
    return ORB_OK;
}

void orb_ib_close(ib_ep_t *e)
{
    if (e->pd)
        e->v->dealloc_pd(e->pd);
    e->pd = NULL;
    if (e->ctx)
        e->v->close_device(e->ctx);
    e->ctx = NULL;
}
