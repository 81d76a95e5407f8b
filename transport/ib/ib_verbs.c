#include "transport/ib/ib_verbs.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static orb_ibv_t table;
static char load_why[256];
static int loaded; /* 1: table complete */
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void load(void)
{
    void *h = dlopen("libibverbs.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(load_why, sizeof load_why, "libibverbs.so.1 cannot be loaded (%s): install rdma-core's libibverbs1",
                 dlerror());
        return;
    }
    struct {
        const char *name;
        void **slot;
        int optional;
    } syms[] = {
#define SYM(f, n, o) {n, (void **)&table.f, o}
        SYM(get_device_list, "ibv_get_device_list", 0), SYM(free_device_list, "ibv_free_device_list", 0),
        SYM(get_device_name, "ibv_get_device_name", 0), SYM(open_device, "ibv_open_device", 0),
        SYM(close_device, "ibv_close_device", 0), SYM(query_device, "ibv_query_device", 0),
        SYM(query_port_compat, "ibv_query_port", 0), SYM(query_gid, "ibv_query_gid", 0),
        SYM(alloc_pd, "ibv_alloc_pd", 0), SYM(dealloc_pd, "ibv_dealloc_pd", 0), SYM(reg_mr, "ibv_reg_mr", 0),
        SYM(dereg_mr, "ibv_dereg_mr", 0), SYM(create_comp_channel, "ibv_create_comp_channel", 0),
        SYM(destroy_comp_channel, "ibv_destroy_comp_channel", 0), SYM(create_cq, "ibv_create_cq", 0),
        SYM(destroy_cq, "ibv_destroy_cq", 0), SYM(create_qp, "ibv_create_qp", 0),
        SYM(modify_qp, "ibv_modify_qp", 0), SYM(destroy_qp, "ibv_destroy_qp", 0),
        SYM(get_cq_event, "ibv_get_cq_event", 0), SYM(ack_cq_events, "ibv_ack_cq_events", 0),
        SYM(get_async_event, "ibv_get_async_event", 0), SYM(ack_async_event, "ibv_ack_async_event", 0),
        SYM(wc_status_str, "ibv_wc_status_str", 0), SYM(event_type_str, "ibv_event_type_str", 0),
        SYM(reg_dmabuf_mr, "ibv_reg_dmabuf_mr", 1),
#undef SYM
    };
    for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
        *syms[i].slot = dlsym(h, syms[i].name);
        if (!*syms[i].slot && !syms[i].optional) {
            snprintf(load_why, sizeof load_why, "libibverbs.so.1 has no %s (too old?)", syms[i].name);
            return; /* the handle stays: nothing else uses it, and unloading a half-used library is worse */
        }
    }
    loaded = 1;
}

const orb_ibv_t *orb_ibv_load(char *why, size_t len)
{
    pthread_once(&once, load);
    if (!loaded) {
        snprintf(why, len, "%s", load_why);
        return NULL;
    }
    return &table;
}

int orb_ibv_query_port(const orb_ibv_t *v, struct ibv_context *ctx, uint8_t port, struct ibv_port_attr *attr)
{
    struct verbs_context *vctx = verbs_get_ctx_op(ctx, query_port);
    if (vctx)
        return vctx->query_port(ctx, port, attr, sizeof *attr);
    memset(attr, 0, sizeof *attr);
    return v->query_port_compat(ctx, port, (struct _compat_ibv_port_attr *)attr);
}
