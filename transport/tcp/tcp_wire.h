/* What the TCP transport puts on the wire: the handshake of every socket, the frames that
 * carry slots, and the error notices of the control socket. Fixed layouts, little-endian
 * hosts only (like the bootstrap). The checks are separate functions so that a fuzzer can
 * reach them without sockets. */
#ifndef ORB_TRANSPORT_TCP_WIRE_H
#define ORB_TRANSPORT_TCP_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "orbit.h"
#include "transport/bootstrap.h"
#include "transport/transport.h"

#define ORB_TCP_HELLO_MAGIC 0x4f524254u /* "ORBT" */
#define ORB_TCP_ACK_MAGIC 0x4f524241u   /* "ORBA" */
#define ORB_TCP_FRAME_MAGIC 0x4f524246u /* "ORBF" */
#define ORB_TCP_ERROR_MAGIC 0x4f524245u /* "ORBE" */
#define ORB_TCP_BYE_MAGIC 0x4f524259u   /* "ORBY" */
#define ORB_TCP_VERSION 1
#define ORB_TCP_MAX_NSOCKS 8

/* The first bytes on every socket, from the connecting rank (the lower one of the pair). */
typedef struct {
    uint32_t magic;
    uint16_t version;
    uint16_t pad;
    uint8_t secret[ORB_SECRET_BYTES];
    int32_t from, to, nranks;
    int32_t channel; /* -1: the pair's control socket */
    int32_t stripe;
    int32_t nchannels;
    int32_t nsocks; /* data sockets per channel, chosen by the connector */
    uint32_t nslots;
    uint64_t slot_bytes;
} orb_tcp_hello_t;

/* The acceptor's answer: status 0 = welcome, else why it refused (a setting differs). */
typedef struct {
    uint32_t magic;
    int32_t status;
    int32_t rank;
    char why[244];
} orb_tcp_ack_t;

/* One frame on a data socket: this preamble, then len bytes that belong at offset off of
 * the payload of slot number seq (mod 2^32) of the channel's FIFO. With several sockets per
 * channel a large slot is cut into stripes, one frame per socket; every frame repeats the
 * slot header, so whichever arrives first tells the receiver the slot's size. */
typedef struct {
    uint32_t magic;
    uint32_t len;
    uint32_t off;
    uint32_t seq;
    orb_slot_hdr_t hdr;
} orb_tcp_frame_t;

/* On the control socket after the handshake: a failure the sender wants us to know
 * (ORB_TCP_ERROR_MAGIC), or that it destroyed its communicator in good order and flushed
 * everything it had to send (ORB_TCP_BYE_MAGIC, len 0). */
typedef struct {
    uint32_t magic;
    int32_t status;
    int32_t from;
    uint32_t len; /* bytes of message that follow, at most ORB_TCP_ERROR_MAX */
} orb_tcp_error_t;
#define ORB_TCP_ERROR_MAX 1024

_Static_assert(sizeof(orb_tcp_frame_t) == 80, "frame preamble layout");

/* ORB_OK when a hello is an authentic orbit hello of this job addressed to rank `me`;
 * ORB_ERR_PROTOCOL (a stranger: drop it) or ORB_ERR_MISMATCH (our own job, other settings:
 * refuse with why) otherwise. */
orb_status_t orb_tcp_hello_check(const orb_tcp_hello_t *h, const uint8_t *secret, int me, int nranks,
                                 int nchannels, uint32_t nslots, uint64_t slot_bytes, char *why, size_t whylen);
/* ORB_OK when a frame preamble is well formed for slots of slot_bytes payload. */
orb_status_t orb_tcp_frame_check(const orb_tcp_frame_t *f, uint64_t slot_bytes, char *why, size_t whylen);
/* Which part of a payload of nbytes goes on stripe k of nsocks: [*off, *off + *len). Small
 * payloads go whole on stripe 0; stripe 0 always carries a frame, the others only when
 * their part is not empty. */
void orb_tcp_stripe(uint32_t nbytes, int nsocks, int k, uint32_t *off, uint32_t *len);

#endif
