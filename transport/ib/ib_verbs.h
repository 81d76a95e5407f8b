/* libibverbs, loaded at run time: a binary built with verbs headers runs on a machine without
 * libibverbs.so.1 or without RDMA devices, and says why ib is off instead of failing to start.
 * Only the exported entry points go through this table; the data path (post_send, post_recv,
 * poll_cq, req_notify_cq) is inline in verbs.h and calls the provider through the context. */
#ifndef ORB_TRANSPORT_IB_VERBS_H
#define ORB_TRANSPORT_IB_VERBS_H

#include <stddef.h>

#include <infiniband/verbs.h>

typedef struct {
    struct ibv_device **(*get_device_list)(int *n);
    void (*free_device_list)(struct ibv_device **list);
    const char *(*get_device_name)(struct ibv_device *dev);
    struct ibv_context *(*open_device)(struct ibv_device *dev);
    int (*close_device)(struct ibv_context *ctx);
    int (*query_device)(struct ibv_context *ctx, struct ibv_device_attr *attr);
    int (*query_port_compat)(struct ibv_context *ctx, uint8_t port, struct _compat_ibv_port_attr *attr);
    int (*query_gid)(struct ibv_context *ctx, uint8_t port, int index, union ibv_gid *gid);
    struct ibv_pd *(*alloc_pd)(struct ibv_context *ctx);
    int (*dealloc_pd)(struct ibv_pd *pd);
    struct ibv_mr *(*reg_mr)(struct ibv_pd *pd, void *addr, size_t len, int access);
    int (*dereg_mr)(struct ibv_mr *mr);
    struct ibv_comp_channel *(*create_comp_channel)(struct ibv_context *ctx);
    int (*destroy_comp_channel)(struct ibv_comp_channel *ch);
    struct ibv_cq *(*create_cq)(struct ibv_context *ctx, int cqe, void *cq_ctx, struct ibv_comp_channel *ch,
                                int vector);
    int (*destroy_cq)(struct ibv_cq *cq);
    struct ibv_qp *(*create_qp)(struct ibv_pd *pd, struct ibv_qp_init_attr *attr);
    int (*modify_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask);
    int (*destroy_qp)(struct ibv_qp *qp);
    int (*get_cq_event)(struct ibv_comp_channel *ch, struct ibv_cq **cq, void **cq_ctx);
    void (*ack_cq_events)(struct ibv_cq *cq, unsigned int n);
    int (*get_async_event)(struct ibv_context *ctx, struct ibv_async_event *ev);
    void (*ack_async_event)(struct ibv_async_event *ev);
    const char *(*wc_status_str)(enum ibv_wc_status st);
    const char *(*event_type_str)(enum ibv_event_type ev);
    /* optional (rdma-core >= 34): GPUDirect RDMA on a dmabuf of device memory */
    struct ibv_mr *(*reg_dmabuf_mr)(struct ibv_pd *pd, uint64_t off, size_t len, uint64_t iova, int fd, int access);
} orb_ibv_t;

/* The table, loaded once (thread-safe); NULL with why filled when libibverbs is missing. */
const orb_ibv_t *orb_ibv_load(char *why, size_t len);

/* ibv_query_port without the exported compat symbol's size limits (what verbs.h's inline does). */
int orb_ibv_query_port(const orb_ibv_t *v, struct ibv_context *ctx, uint8_t port, struct ibv_port_attr *attr);

#endif
