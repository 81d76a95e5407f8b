/* The communicator's plan cache: the tuner's choice and the plan for each call shape. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collectives/tuner.h"
#include "comm/comm_impl.h"
#include "comm/comm_trace.h"

static int key_equal(const orb_call_key_t *a, const orb_call_key_t *b, int nranks)
{
    return a->coll == b->coll && a->count == b->count && a->elem_size == b->elem_size && a->root == b->root &&
           a->op == b->op && a->deterministic == b->deterministic && a->device == b->device && a->vhash == b->vhash &&
           (!a->vec || !b->vec || memcmp(a->vec, b->vec, 4 * (size_t)nranks * sizeof *a->vec) == 0);
}

/* The tuner runs once per call shape (ORBIT_ALGO / ORBIT_CHUNK_BYTES are read then): the
 * 8-byte path is a cache hit, not a model evaluation. */
orb_status_t orb_comm_plan(struct orb_comm *c, const orb_call_key_t *key, const orb_plan_cache_entry_t **entry,
                           char *why, size_t whylen)
{
    orb_plan_cache_entry_t *last = &c->cache[c->plan_last], *prev = &c->cache[c->plan_prev];
    if (last->valid && key_equal(&last->key, key, c->nranks)) {
        last->used = ++c->plan_clock;
        *entry = last;
        return ORB_OK;
    }
    if (prev->valid && key_equal(&prev->key, key, c->nranks)) {
        const int i = c->plan_prev;
        c->plan_prev = c->plan_last;
        c->plan_last = i;
        prev->used = ++c->plan_clock;
        *entry = prev;
        return ORB_OK;
    }
    int victim = 0;
    for (int i = 0; i < ORB_PLAN_CACHE; i++) {
        orb_plan_cache_entry_t *e = &c->cache[i];
        if (e->valid && key_equal(&e->key, key, c->nranks)) {
            e->used = ++c->plan_clock;
            c->plan_prev = c->plan_last;
            c->plan_last = i;
            *entry = e;
            return ORB_OK;
        }
        if (!e->valid || e->used < c->cache[victim].used)
            victim = i;
        if (!e->valid)
            break;
    }
    orb_tuner_choice_t ch;
    memset(&ch, 0, sizeof ch);
    /* The links every rank agreed on at init (comm_links.c). One NIC per host: the TCP
     * transport does not spread a host's connections over several. */
    orb_tuner_hosts_t hosts = {.nhosts = c->nhosts, .host_of = c->host_of, .inter = c->link_inter, .nics = 1};
    /* Host calls: chunks that keep a FIFO's worth in the L2 (the tuner); device calls keep the
     * slot-sized chunks they were measured with (no GPU here to measure another), and their
     * ranks' work is the device's, not the CPUs' (no chain for ranks that share CPUs) */
    orb_link_cost_t intra = c->link_intra;
    if (key->device)
        intra.ranks_per_cpu = 0;
    orb_status_t st = orb_tuner_choose_det(key->coll, key->count, key->elem_size, c->nranks, &intra, &hosts,
                                           c->slot_bytes, key->device ? 0 : (int)c->nslots, c->nchannels,
                                           key->deterministic, &ch);
    if (st != ORB_OK) {
        snprintf(why, whylen, "%s", ch.reason[0] ? ch.reason : orb_strerror(st));
        return st;
    }
    orb_plan_cache_entry_t *e = &c->cache[victim];
    if (e->valid)
        orb_plan_free(&e->plan);
    orb_comm_trace_plan_gone(c, &e->plan); /* the tracer's memo of that plan's transports */
    e->valid = 0;
    if (key->vec) { /* the plan reads the vectors for as long as it is cached */
        size_t bytes = 4 * (size_t)c->nranks * sizeof *key->vec;
        if (!e->vec && !(e->vec = malloc(bytes))) {
            snprintf(why, whylen, "no memory for the vectors of the plan");
            return ORB_ERR_NO_MEMORY;
        }
        memcpy(e->vec, key->vec, bytes);
    }
    orb_plan_args_t args = {
        .coll = key->coll, .algo = ch.algo, .nranks = c->nranks, .rank = c->rank, .root = key->root,
        .count = key->count, .op = key->op, .chunk_elems = ch.chunk_elems, .nchannels = ch.nchannels,
        .ring = c->ring, .nhosts = c->nhosts, .host_of = c->host_of, .vec = key->vec ? e->vec : NULL,
    };
    st = orb_plan_build(&e->plan, &args);
    if (st != ORB_OK) {
        snprintf(why, whylen, "cannot build the %s plan (%s)", orb_algo_name(ch.algo), orb_strerror(st));
        return st;
    }
    e->key = *key;
    if (key->vec)
        e->key.vec = e->vec;
    e->predicted_us = ch.predicted_us;
    snprintf(e->reason, sizeof e->reason, "%s", ch.reason);
    e->valid = 1;
    e->used = ++c->plan_clock;
    c->plan_prev = c->plan_last;
    c->plan_last = victim;
    *entry = e;
    return ORB_OK;
}
