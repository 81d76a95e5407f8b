#include "tcp_wire.h"

#include <stdio.h>

/* Below this a payload is not worth cutting: one frame costs a syscall on each side. */
#define STRIPE_MIN_BYTES (64u << 10)
#define STRIPE_ALIGN 4096u

orb_status_t orb_tcp_hello_check(const orb_tcp_hello_t *h, const uint8_t *secret, int me, int nranks,
                                 int nchannels, uint32_t nslots, uint64_t slot_bytes, char *why, size_t whylen)
{
    if (h->magic != ORB_TCP_HELLO_MAGIC || h->version != ORB_TCP_VERSION) {
        snprintf(why, whylen, "not an orbit TCP hello (magic %08x, version %u)", h->magic, h->version);
        return ORB_ERR_PROTOCOL;
    }
    if (!orb_secret_equal(h->secret, secret)) {
        snprintf(why, whylen, "wrong secret (a rank of another job?)");
        return ORB_ERR_PROTOCOL;
    }
    if (h->to != me || h->from < 0 || h->from >= me || h->nranks != nranks) {
        snprintf(why, whylen, "hello from rank %d of %d to rank %d does not fit this rank (%d of %d)", h->from,
                 h->nranks, h->to, me, nranks);
        return ORB_ERR_PROTOCOL;
    }
    if (h->nsocks < 1 || h->nsocks > ORB_TCP_MAX_NSOCKS || h->channel < -1 || h->channel >= h->nchannels ||
        h->stripe < 0 || h->stripe >= h->nsocks) {
        snprintf(why, whylen, "hello from rank %d names socket %d.%d of %d x %d", h->from, h->channel, h->stripe,
                 h->nchannels, h->nsocks);
        return ORB_ERR_PROTOCOL;
    }
    if (h->nchannels != nchannels || h->nslots != nslots || h->slot_bytes != slot_bytes) {
        snprintf(why, whylen, "rank %d uses %d channels x %u slots x %llu bytes, rank %d uses %d x %u x %llu: set "
                              "ORBIT_NCHANNELS / ORBIT_SHM_SLOTS / ORBIT_SHM_SLOT_BYTES alike on every rank",
                 h->from, h->nchannels, h->nslots, (unsigned long long)h->slot_bytes, me, nchannels, nslots,
                 (unsigned long long)slot_bytes);
        return ORB_ERR_MISMATCH;
    }
    return ORB_OK;
}

orb_status_t orb_tcp_frame_check(const orb_tcp_frame_t *f, uint64_t slot_bytes, char *why, size_t whylen)
{
    if (f->magic != ORB_TCP_FRAME_MAGIC) {
        snprintf(why, whylen, "bad frame magic %08x: the stream is out of step", f->magic);
        return ORB_ERR_PROTOCOL;
    }
    if (f->hdr.nbytes > slot_bytes || f->off > f->hdr.nbytes || f->len > f->hdr.nbytes - f->off) {
        snprintf(why, whylen, "frame of %u bytes at %u of a %u-byte piece does not fit %llu-byte slots", f->len,
                 f->off, f->hdr.nbytes, (unsigned long long)slot_bytes);
        return ORB_ERR_PROTOCOL;
    }
    return ORB_OK;
}

void orb_tcp_stripe(uint32_t nbytes, int nsocks, int k, uint32_t *off, uint32_t *len)
{
    if (nsocks <= 1 || nbytes < STRIPE_MIN_BYTES) {
        *off = 0;
        *len = k == 0 ? nbytes : 0;
        return;
    }
    uint32_t part = (nbytes + (uint32_t)nsocks - 1) / (uint32_t)nsocks;
    part = (part + STRIPE_ALIGN - 1) / STRIPE_ALIGN * STRIPE_ALIGN;
    uint64_t lo = (uint64_t)part * (uint32_t)k, hi = lo + part;
    if (lo > nbytes)
        lo = nbytes;
    if (hi > nbytes)
        hi = nbytes;
    *off = (uint32_t)lo;
    *len = (uint32_t)(hi - lo);
}
