/* orbit-info: the build's features and every environment knob with its value and help;
 * --markdown: the knobs as the table of docs/env.md (the test env-doc keeps the two equal). */
#include <stdio.h>
#include <string.h>

#include "core/param.h"
#include "kernels/reduce.h"
#include "orbit.h"

/* One table cell: a '|' would end the cell early. */
static void md_cell(const char *s)
{
    for (; *s; s++) {
        if (*s == '|')
            fputc('\\', stdout);
        fputc(*s, stdout);
    }
}

static void md_row(const char *env, const char *def, const char *help)
{
    printf("| `%s` | ", env);
    if (*def) {
        printf("`");
        md_cell(def);
        printf("`");
    } else {
        printf("(empty)");
    }
    printf(" | ");
    md_cell(help);
    printf(" |\n");
}

static void print_markdown(void)
{
    printf("# Environment variables\n\n"
           "<!-- Generated from core/param.h by `build/tools/orbit-info --markdown > docs/env.md`;\n"
           "     the test env-doc fails when this file differs. Do not edit by hand. -->\n\n"
           "Every setting of liborbit, declared once in `core/param.h`. `build/tools/orbit-info` prints\n"
           "them with their current values. An empty value counts as unset unless its line says otherwise.\n\n"
           "| variable | default | meaning |\n| --- | --- | --- |\n");
    char def[32];
#define ORB_MD_NUM_(id, env, d, help)                                                          \
    snprintf(def, sizeof def, "%g", (double)(d));                                               \
    md_row(env, def, help);
    ORB_PARAM_NUM_MAP(ORB_MD_NUM_)
#undef ORB_MD_NUM_
#define ORB_MD_STR_(id, env, d, help) md_row(env, d, help);
    ORB_PARAM_STR_MAP(ORB_MD_STR_)
#undef ORB_MD_STR_
    printf("\nLaunchers' variables are not orbit settings; `orb_comm_init_env` reads them to find\n"
           "the rank, the world size and rank 0: `RANK`, `WORLD_SIZE`, `LOCAL_RANK`, `MASTER_ADDR`,\n"
           "`MASTER_PORT` (torchrun, orbitrun); `OMPI_COMM_WORLD_RANK/SIZE/LOCAL_RANK` (Open MPI);\n"
           "`SLURM_PROCID/NTASKS/LOCALID` (Slurm). On one host `MASTER_ADDR` may be left out.\n");
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "--markdown")) {
        print_markdown();
        return 0;
    }
    if (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
        printf("usage: orbit-info [--markdown]\n  Prints orbit's version, features and environment variables;\n"
               "  --markdown: the variables as a markdown table (docs/env.md).\n");
        return 0;
    }
    printf("orbit %d.%d\n", ORBIT_VERSION_MAJOR, ORBIT_VERSION_MINOR);
    printf("  float16 kernels: %s\n", orb_kernel_half_impl());
    printf("  transports: shm (same host), tcp (other hosts)\n\nEnvironment variables:\n");
    orb_param_print_all(stdout);
    return 0;
}
