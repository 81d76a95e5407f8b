/* Orders derived from the ring: the tree order, the ports through which other hosts reach
 * this one, and the global multi-host order. */
#include <stdlib.h>
#include <string.h>

#include "topo_priv.h"

static int hop_is_slowest(const orb_topo_host_t *h, int a, int b)
{
    int n = h->ndev;
    return h->bw[a * n + b] == h->score.bw && h->cls[a * n + b] == h->score.cls;
}

/* Position k whose hop ring[k] -> ring[k+1] is the last slowest one in ring order. */
static int slowest_cut(const orb_topo_host_t *h)
{
    int n = h->ndev;
    for (int k = n - 1; k >= 0; k--)
        if (hop_is_slowest(h, h->ring_dev[k], h->ring_dev[(k + 1) % n]))
            return k;
    return n - 1;
}

void orb_topo_order_tree(orb_topo_host_t *h)
{
    /* The tree walks a chain: the ring without its slowest hop keeps the same bottleneck at
     * worst, with one slow crossing fewer. Rank order stays rank order. */
    int n = h->ndev, cut = h->optimized ? slowest_cut(h) : n - 1;
    for (int k = 0; k < n; k++)
        h->tree[k] = h->ring[(cut + 1 + k) % n];
}

/* How near device i is to NIC k: its class, then whether the NIC was assigned to it. */
static int nic_key(const orb_topo_host_t *h, int i, int k)
{
    return (int)h->nic_cls[i * h->nnics + k] * 2 + (h->dev[i].nic != k);
}

void orb_topo_order_ports(orb_topo_host_t *h)
{
    int n = h->ndev;
    h->nports = 0;
    for (int k = 0; k < h->nnics; k++) {
        /* Only NICs that serve a rank here carry a channel: the others are nearer to GPUs
         * this communicator does not use. */
        int served = 0;
        for (int i = 0; i < n; i++)
            served |= h->dev[i].nic == k;
        if (!served)
            continue;
        int best = 0;
        for (int p = 1; p < n; p++) {
            int i = h->ring_dev[p], b = h->ring_dev[best];
            if (nic_key(h, i, k) < nic_key(h, b, k) || (nic_key(h, i, k) == nic_key(h, b, k) && i < b))
                best = p;
        }
        /* Exit: the ring neighbour nearer a NIC of its own (traffic leaves through that NIC);
         * when both are as near, the one whose hop to the entry is slower, so the host's
         * chain leaves that hop out; then the one nearer this NIC. */
        int entry = h->ring_dev[best], prev = h->ring_dev[(best + n - 1) % n], next = h->ring_dev[(best + 1) % n];
        int dir = 1;
        orb_topo_class_t op = h->dev[prev].nic >= 0 ? h->dev[prev].nic_class : ORB_TOPO_NET;
        orb_topo_class_t on = h->dev[next].nic >= 0 ? h->dev[next].nic_class : ORB_TOPO_NET;
        uint32_t bp = h->bw[prev * n + entry], bn = h->bw[entry * n + next];
        orb_topo_class_t cp = h->cls[prev * n + entry], cn = h->cls[entry * n + next];
        if (n > 2) {
            if (on != op)
                dir = on < op ? -1 : 1;
            else if (bn != bp || cn != cp)
                dir = bn < bp || (bn == bp && cn > cp) ? -1 : 1;
            else
                dir = nic_key(h, next, k) < nic_key(h, prev, k) ? -1 : 1;
        }
        orb_topo_port_t *pt = &h->ports[h->nports++];
        pt->start = best;
        pt->dir = dir;
        pt->nic = k;
        memcpy(pt->nic_name, h->nics[k].name, sizeof pt->nic_name);
    }
    if (h->nports == 0) {
        /* No NIC: other hosts reach this one over whatever the network stack picks; enter
         * after the slowest hop so that hop is the one left out. */
        int cut = h->optimized ? slowest_cut(h) : n - 1;
        h->ports[0].start = (cut + 1) % n;
        h->ports[0].dir = 1;
        h->ports[0].nic = -1;
        h->ports[0].nic_name[0] = '\0';
        h->nports = 1;
    }
}

void orb_topo_hostring_of(const orb_topo_host_t *h, orb_topo_hostring_t *out)
{
    out->nranks = h->ndev;
    out->ring = h->ring;
    out->nports = h->nports;
    out->ports = h->ports;
}

orb_status_t orb_topo_global_order(const orb_topo_hostring_t *hosts, int nhosts, int channel,
                                   int *out, int outlen)
{
    if (!hosts || nhosts <= 0 || channel < 0 || !out)
        return ORB_ERR_INVALID_ARG;
    int total = 0;
    for (int h = 0; h < nhosts; h++) {
        if (hosts[h].nranks <= 0 || !hosts[h].ring || hosts[h].nports <= 0 || !hosts[h].ports)
            return ORB_ERR_INVALID_ARG;
        total += hosts[h].nranks;
    }
    if (total > outlen)
        return ORB_ERR_INVALID_ARG;
    int k = 0;
    for (int h = 0; h < nhosts; h++) {
        const orb_topo_hostring_t *x = &hosts[h];
        const orb_topo_port_t *p = &x->ports[channel % x->nports];
        int n = x->nranks, dir = p->dir < 0 ? -1 : 1;
        if (p->start < 0 || p->start >= n)
            return ORB_ERR_INVALID_ARG;
        for (int i = 0; i < n; i++)
            out[k++] = x->ring[((p->start + dir * i) % n + n) % n];
    }
    return ORB_OK;
}
