#include "kernels/step.h"

static const char *const step_names[ORB_NUM_STEP_KINDS] = {
#define STEP_NAME_(id, name, props) name,
    ORB_STEP_MAP(STEP_NAME_)
#undef STEP_NAME_
};

const char *orb_step_kind_name(orb_step_kind_t kind)
{
    return ((unsigned)kind < ORB_NUM_STEP_KINDS) ? step_names[kind] : "unknown-step";
}
