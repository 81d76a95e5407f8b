/* orbit-info: the build's features and every environment knob with its value and help. */
#include <stdio.h>
#include <string.h>

#include "core/param.h"
#include "kernels/reduce.h"
#include "orbit.h"

int main(int argc, char **argv)
{
    if (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
        printf("usage: orbit-info\n  Prints orbit's version, features and environment variables.\n");
        return 0;
    }
    printf("orbit %d.%d\n", ORBIT_VERSION_MAJOR, ORBIT_VERSION_MINOR);
    printf("  float16 kernels: %s\n", orb_kernel_half_impl());
    printf("  transports: shm (same host), tcp (other hosts)\n\nEnvironment variables:\n");
    orb_param_print_all(stdout);
    return 0;
}
