/* orb_mem_alloc / orb_mem_free: windows (transport/window.h) behind the public API. */
#include "comm/comm_impl.h"
#include "transport/window.h"

orb_status_t orb_mem_alloc(void **ptr, size_t bytes)
{
    if (!ptr) {
        orb_set_thread_error("orb_mem_alloc: ptr (the output pointer) is NULL");
        return ORB_ERR_INVALID_ARG;
    }
    *ptr = NULL;
    if (!bytes) {
        orb_set_thread_error("orb_mem_alloc: bytes is 0: ask for at least one byte");
        return ORB_ERR_INVALID_ARG;
    }
    char err[ORB_ERRMSG_BYTES];
    const orb_status_t st = orb_window_alloc(bytes, ptr, err, sizeof err);
    if (st != ORB_OK)
        orb_set_thread_error("orb_mem_alloc(%zu bytes): %s", bytes, err);
    return st;
}

orb_status_t orb_mem_free(void *ptr)
{
    if (!ptr)
        return ORB_OK; /* as free(NULL) */
    char err[ORB_ERRMSG_BYTES];
    const orb_status_t st = orb_window_free(ptr, err, sizeof err);
    if (st != ORB_OK)
        orb_set_thread_error("orb_mem_free: %s", err);
    return st;
}
