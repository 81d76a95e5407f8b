/* Status strings and the names of dtypes and ops. */
#include "orbit.h"

#include "core/dtype.h"

const char *orb_strerror(orb_status_t status)
{
    switch (status) {
#define ORB_STATUS_MSG_(name, value, msg) \
    case name:                            \
        return msg;
        ORB_STATUS_MAP(ORB_STATUS_MSG_)
#undef ORB_STATUS_MSG_
    }
    return "unknown status";
}

const char *orb_status_name(orb_status_t status)
{
    switch (status) {
#define ORB_STATUS_NAME_(name, value, msg) \
    case name:                             \
        return #name;
        ORB_STATUS_MAP(ORB_STATUS_NAME_)
#undef ORB_STATUS_NAME_
    }
    return "ORB_ERR_UNKNOWN";
}

static const char *const dtype_names[ORB_NUM_DTYPES] = {
    "int8", "uint8", "int32", "uint32", "int64", "uint64", "float16", "bfloat16", "float32", "float64",
};
static const char *const op_names[ORB_NUM_OPS] = {"sum", "prod", "min", "max", "avg"};

const char *orb_dtype_name(orb_dtype_t dtype)
{
    return ((unsigned)dtype < ORB_NUM_DTYPES) ? dtype_names[dtype] : "unknown-dtype";
}

size_t orb_dtype_size(orb_dtype_t dtype) { return orb_dtype_bytes(dtype); }

const char *orb_op_name(orb_op_t op)
{
    return ((unsigned)op < ORB_NUM_OPS) ? op_names[op] : "unknown-op";
}
