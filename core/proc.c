#include "proc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "param.h"

uint64_t orb_hash64(const void *data, size_t len, uint64_t seed)
{
    const unsigned char *p = data;
    uint64_t h = 1469598103934665603ull ^ seed; /* FNV-1a, then a final mix */
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 1099511628211ull;
    }
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    return h;
}

/* state (field 3) and starttime (field 22) of /proc/pid/stat; -1 if unreadable */
static int read_stat(pid_t pid, char *state, uint64_t *start)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    char *p = strrchr(buf, ')'); /* the command name may contain spaces */
    if (!p || p[1] != ' ')
        return -1;
    *state = p[2];
    p += 2;
    for (int field = 3; field < 22; field++) {
        p = strchr(p, ' ');
        if (!p)
            return -1;
        p++;
    }
    *start = strtoull(p, NULL, 10);
    return 0;
}

uint64_t orb_proc_start_time(pid_t pid)
{
    char st;
    uint64_t start = 0;
    return read_stat(pid, &st, &start) == 0 ? start : 0;
}

int orb_proc_alive(pid_t pid, uint64_t start)
{
    char st;
    uint64_t s;
    if (read_stat(pid, &st, &s) != 0)
        return 0;
    if (st == 'Z' || st == 'X' || st == 'x')
        return 0;
    return start == 0 || s == start;
}

int orb_boot_id(char *buf, size_t len)
{
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");
    if (!f || len == 0) {
        if (f)
            fclose(f);
        return -1;
    }
    int ok = fgets(buf, (int)len, f) != NULL;
    fclose(f);
    if (!ok)
        return -1;
    buf[strcspn(buf, "\n")] = 0;
    return 0;
}

uint64_t orb_host_id(void)
{
    const char *env = orb_param_str(ORB_PARAM_S_HOSTID);
    if (*env)
        return orb_hash64(env, strlen(env), 7);
    char buf[512] = {0};
    size_t n = 0;
    gethostname(buf, 128);
    n = strlen(buf);
    char boot[64];
    if (orb_boot_id(boot, sizeof boot) == 0) /* hashed with its newline, as it always was */
        n += (size_t)snprintf(buf + n, sizeof buf - n, "%s\n", boot);
    struct stat sb;
    if (stat("/proc/self/ns/net", &sb) == 0)
        n += (size_t)snprintf(buf + n, sizeof buf - n, "/%llu", (unsigned long long)sb.st_ino);
    return orb_hash64(buf, n, 11);
}

int orb_env_local_rank(void)
{
    static const char *const vars[] = {"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID", "MPI_LOCALRANKID"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *s = getenv(vars[i]);
        if (!s || !*s)
            continue;
        char *end;
        long v = strtol(s, &end, 10);
        return *end || v < 0 || v > 1 << 20 ? -1 : (int)v;
    }
    return -1;
}
