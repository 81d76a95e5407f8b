#include "transport/ib/ib_wire.h"

#include <stdio.h>
#include <string.h>

size_t orb_ib_rec_bytes(int nranks, int nchannels)
{
    return sizeof(orb_ib_head_t) + (size_t)nranks * (size_t)nchannels * sizeof(orb_ib_qprec_t);
}

orb_ib_qprec_t *orb_ib_rec_entry(void *rec, int nchannels, int to, int ch)
{
    return (orb_ib_qprec_t *)((char *)rec + sizeof(orb_ib_head_t)) + (size_t)to * (size_t)nchannels + (size_t)ch;
}

orb_status_t orb_ib_rec_check(const void *rec, size_t len, int from, int me, int nranks, int nchannels,
                              uint32_t nslots, uint64_t slot_stride, int need_qp, char *why, size_t whylen)
{
    if (nranks < 1 || nchannels < 1 || me < 0 || me >= nranks || len < orb_ib_rec_bytes(nranks, nchannels)) {
        snprintf(why, whylen, "the RDMA connection record of rank %d is %zu bytes, short of %zu", from, len,
                 orb_ib_rec_bytes(nranks, nchannels));
        return ORB_ERR_PROTOCOL;
    }
    orb_ib_head_t h;
    memcpy(&h, rec, sizeof h);
#define BAD(...) (snprintf(why, whylen, __VA_ARGS__), ORB_ERR_PROTOCOL)
    if (h.magic != ORB_IB_MAGIC || h.version != ORB_IB_VERSION)
        return BAD("the RDMA connection record of rank %d has magic %08x version %u, expected %08x version %u "
                   "(different orbit builds?)", from, h.magic, h.version, ORB_IB_MAGIC, ORB_IB_VERSION);
    if (h.rank != from || h.nranks != nranks || h.nchannels != nchannels)
        return BAD("the RDMA connection record from rank %d says rank %d of %d with %d channels, expected rank %d "
                   "of %d with %d", from, h.rank, h.nranks, h.nchannels, from, nranks, nchannels);
    if (h.nslots != nslots || h.slot_stride != slot_stride)
        return BAD("rank %d uses %u slots of %llu bytes, this rank %u of %llu: set ORBIT_SHM_SLOTS and "
                   "ORBIT_SHM_SLOT_BYTES the same on every rank", from, h.nslots,
                   (unsigned long long)h.slot_stride, nslots, (unsigned long long)slot_stride);
    if (h.link_layer != 1 && h.link_layer != 2)
        return BAD("rank %d's RDMA port has link layer %u (neither InfiniBand nor Ethernet)", from, h.link_layer);
    if (h.mtu < 1 || h.mtu > 5)
        return BAD("rank %d's RDMA MTU code %u is outside 1..5", from, h.mtu);
    if (h.port < 1 || h.rkey == 0)
        return BAD("rank %d's RDMA record has port %u and memory key %u", from, h.port, h.rkey);
    if (h.link_layer == 2 && (h.gid_index < 0 || h.gid_index > 65535))
        return BAD("rank %d's RoCE GID index %d is out of range", from, h.gid_index);
    if (!need_qp)
        return ORB_OK;
    for (int ch = 0; ch < nchannels; ch++) {
        orb_ib_qprec_t e;
        memcpy(&e, orb_ib_rec_entry((void *)(uintptr_t)rec, nchannels, me, ch), sizeof e);
        if (e.qpn == 0 || e.qpn > 0xffffff || e.psn > 0xffffff)
            return BAD("rank %d's RDMA record has QP number %u, PSN %u for rank %d channel %d (24-bit, QP nonzero)",
                       from, e.qpn, e.psn, me, ch);
        if (e.recv_addr == 0 || e.mail_addr == 0 || (e.recv_addr | e.mail_addr) % 64)
            return BAD("rank %d's RDMA record gives addresses %#llx / %#llx for rank %d channel %d (nonzero, "
                       "64-byte aligned)", from, (unsigned long long)e.recv_addr,
                       (unsigned long long)e.mail_addr, me, ch);
    }
#undef BAD
    return ORB_OK;
}
