/* A dtype's size, inline: the library asks it several times on every call, and orbit.h's
 * orb_dtype_size is an exported function (a call through the PLT each time). */
#ifndef ORB_CORE_DTYPE_H
#define ORB_CORE_DTYPE_H

#include <stddef.h>

#include "orbit.h"

/* Bytes of one element; 0 for a value outside orb_dtype_t. */
static inline size_t orb_dtype_bytes(orb_dtype_t dtype)
{
    static const unsigned char sizes[ORB_NUM_DTYPES] = {1, 1, 4, 4, 8, 8, 2, 2, 4, 8};
    return (unsigned)dtype < ORB_NUM_DTYPES ? sizes[dtype] : 0;
}

#endif
