#include "blas.h"

#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The value of --threads, parsed ahead of the real option parser (default 1). */
static const char *threads_arg(int argc, char **argv)
{
    const char *v = "1";
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
            v = argv[i + 1];
        else if (strncmp(argv[i], "--threads=", 10) == 0)
            v = argv[i] + 10;
    }
    return atoi(v) > 0 ? v : "1";
}

static int wants_avx512_kernels(void)
{
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    const char *core = openblas_get_corename();
    if (!core || (strcmp(core, "Haswell") != 0 && strcmp(core, "Zen") != 0))
        return 0;
    __builtin_cpu_init();
    /* libgcc's checks include the OS saving the AVX-512 register state */
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
           __builtin_cpu_supports("avx512cd");
#else
    return 0;
#endif
}

void orb_train_blas_prepare(int argc, char **argv)
{
    if (getenv("ORB_TRAIN_BLAS_PREPARED"))
        return;
    int changed = 0;
    if (!getenv("OPENBLAS_NUM_THREADS")) {
        setenv("OPENBLAS_NUM_THREADS", threads_arg(argc, argv), 1);
        changed = 1;
    }
    if (!getenv("OPENBLAS_CORETYPE") && wants_avx512_kernels()) {
        setenv("OPENBLAS_CORETYPE", "SkylakeX", 1);
        changed = 1;
    }
    if (!changed)
        return;
    setenv("ORB_TRAIN_BLAS_PREPARED", "1", 1);
    execv("/proc/self/exe", argv);
    /* exec failed: run on as loaded */
}

void orb_train_blas_set_threads(int threads)
{
    openblas_set_num_threads(threads);
}

const char *orb_train_blas_describe(void)
{
    static char buf[128];
    const char *cfg = openblas_get_config(), *core = openblas_get_corename();
    const char *ver = strstr(cfg, "OpenBLAS ");
    int n = 0;
    if (ver)
        sscanf(ver, "OpenBLAS %*s%n", &n);
    snprintf(buf, sizeof buf, "%.*s, %s kernels", n > 0 ? n : 8, ver ? ver : "OpenBLAS", core ? core : "?");
    return buf;
}
