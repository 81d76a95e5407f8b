#include "layout.h"

int bench_counts_flat(size_t bytes, size_t elem_size, int nranks, bench_counts_t *c)
{
    (void)nranks;
    c->count = bytes / elem_size;
    c->send_elems = c->recv_elems = c->count;
    c->bytes = c->count * elem_size;
    return c->count > 0;
}

int bench_counts_gathered(size_t bytes, size_t elem_size, int nranks, bench_counts_t *c)
{
    c->count = bytes / elem_size / (size_t)nranks;
    c->send_elems = c->count;
    c->recv_elems = c->count * (size_t)nranks;
    c->bytes = c->recv_elems * elem_size;
    return c->count > 0;
}

int bench_counts_scattered(size_t bytes, size_t elem_size, int nranks, bench_counts_t *c)
{
    c->count = bytes / elem_size / (size_t)nranks;
    c->send_elems = c->count * (size_t)nranks;
    c->recv_elems = c->count;
    c->bytes = c->send_elems * elem_size;
    return c->count > 0;
}

int bench_counts_exchanged(size_t bytes, size_t elem_size, int nranks, bench_counts_t *c)
{
    c->count = bytes / elem_size / (size_t)nranks;
    c->send_elems = c->recv_elems = c->count * (size_t)nranks;
    c->bytes = c->send_elems * elem_size;
    return c->count > 0;
}

void bench_place_flat(bench_call_t *call, void *sendbuf, void *recvbuf, size_t elem_size,
                      int rank, int inplace)
{
    (void)elem_size;
    (void)rank;
    call->sendbuf = inplace ? recvbuf : sendbuf;
    call->recvbuf = recvbuf;
}

void bench_place_gathered(bench_call_t *call, void *sendbuf, void *recvbuf, size_t elem_size,
                          int rank, int inplace)
{
    call->sendbuf = inplace ? (char *)recvbuf + (size_t)rank * call->count * elem_size : sendbuf;
    call->recvbuf = recvbuf;
}

void bench_place_scattered(bench_call_t *call, void *sendbuf, void *recvbuf, size_t elem_size,
                           int rank, int inplace)
{
    call->sendbuf = sendbuf;
    call->recvbuf = inplace ? (char *)sendbuf + (size_t)rank * call->count * elem_size : recvbuf;
}
