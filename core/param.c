#include "param.h"

#include <stdio.h>
#include <stdlib.h>

#include "log.h"

static const struct {
    const char *env;
    double def;
    const char *help;
} num_params[] = {
#define ORB_PARAM_ROW_(id, env, def, help) {env, def, help},
    ORB_PARAM_NUM_MAP(ORB_PARAM_ROW_)
#undef ORB_PARAM_ROW_
};

static const struct {
    const char *env;
    const char *def;
    const char *help;
} str_params[] = {
#define ORB_PARAM_ROW_(id, env, def, help) {env, def, help},
    ORB_PARAM_STR_MAP(ORB_PARAM_ROW_)
#undef ORB_PARAM_ROW_
};

static orb_param_state_t state_of(const char *env)
{
    const char *s = getenv(env);
    return !s ? ORB_PARAM_STATE_UNSET : *s ? ORB_PARAM_STATE_SET : ORB_PARAM_STATE_EMPTY;
}

orb_param_state_t orb_param_num_state(orb_param_num_t id) { return state_of(num_params[id].env); }

orb_param_state_t orb_param_str_state(orb_param_str_t id) { return state_of(str_params[id].env); }

double orb_param_num(orb_param_num_t id)
{
    const char *s = getenv(num_params[id].env);
    if (!s || !*s)
        return num_params[id].def;
    char *end;
    double v = strtod(s, &end);
    if (*end != '\0' || v != v) {
        ORB_WARN("%s=\"%s\" is not a number; using the default %g", num_params[id].env, s,
                 num_params[id].def);
        return num_params[id].def;
    }
    return v;
}

const char *orb_param_str(orb_param_str_t id)
{
    const char *s = getenv(str_params[id].env);
    return (s && *s) ? s : str_params[id].def;
}

void orb_param_print_all(void *fpv)
{
    FILE *fp = fpv;
    for (size_t i = 0; i < sizeof num_params / sizeof num_params[0]; i++) {
        const char *s = getenv(num_params[i].env);
        fprintf(fp, "%-26s = %-10s (default %g)\n    %s\n", num_params[i].env, s ? s : "(unset)",
                num_params[i].def, num_params[i].help);
    }
    for (size_t i = 0; i < sizeof str_params / sizeof str_params[0]; i++) {
        const char *s = getenv(str_params[i].env);
        fprintf(fp, "%-26s = %-10s (default \"%s\")\n    %s\n", str_params[i].env,
                s ? s : "(unset)", str_params[i].def, str_params[i].help);
    }
}
