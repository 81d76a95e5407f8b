/* What ranks exchange over the bootstrap to connect their RC queue pairs: one record per
 * rank, a head (the port, GID, memory key and FIFO geometry) and one entry per (peer,
 * channel) with the QP number, the first PSN and where the peer may write. Validated field by
 * field before use (tests/fuzz): a damaged record is an error, never a wild RDMA write. */
#ifndef ORB_TRANSPORT_IB_WIRE_H
#define ORB_TRANSPORT_IB_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "orbit.h"

#define ORB_IB_MAGIC 0x4f524942u /* "ORIB" */
#define ORB_IB_VERSION 1
#define ORB_IB_MAIL_BYTES 256 /* an error message written into the peer */

typedef struct {
    uint32_t magic;
    uint16_t version;
    uint8_t link_layer; /* IBV_LINK_LAYER_INFINIBAND (1) or _ETHERNET (2) */
    uint8_t usable;     /* phase 2: 1 when every QP this rank set up passed its test */
    int32_t rank, nranks, nchannels;
    uint32_t nslots;
    uint64_t slot_stride;
    uint32_t rkey;
    uint16_t lid;
    uint8_t port;
    uint8_t mtu; /* enum ibv_mtu, 1 (256 B) .. 5 (4 KiB) */
    int32_t gid_index;
    uint8_t gid[16];
} orb_ib_head_t;

typedef struct {
    uint32_t qpn; /* 0: this rank does not connect that peer over ib */
    uint32_t psn;
    uint64_t recv_addr; /* nslots slots of slot_stride bytes the peer writes into */
    uint64_t mail_addr; /* ORB_IB_MAIL_BYTES for an error message */
} orb_ib_qprec_t;

/* Bytes of one rank's record. */
size_t orb_ib_rec_bytes(int nranks, int nchannels);
/* The entry of rank `to`, channel ch in a record. */
orb_ib_qprec_t *orb_ib_rec_entry(void *rec, int nchannels, int to, int ch);

/* Check rank `from`'s record (len bytes) as seen by rank `me`: header fields, geometry equal
 * to ours, and, when need_qp, a valid entry for every channel to me. ORB_ERR_PROTOCOL with
 * why naming the field otherwise. */
orb_status_t orb_ib_rec_check(const void *rec, size_t len, int from, int me, int nranks, int nchannels,
                              uint32_t nslots, uint64_t slot_stride, int need_qp, char *why, size_t whylen);

#endif
