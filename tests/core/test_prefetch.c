/* core/prefetch.h: the CPUID test that decides whether shared memory's senders issue PREFETCHW
 * (transport/shm/shm.c) against the kernel's own reading of the same bit ("3dnowprefetch" in
 * /proc/cpuinfo's flags): a wrong yes would run an instruction the CPU may not have. Then the
 * hint on lines this process and a child both write: it moves no data. Every verdict is this
 * process's own (the child's by its exit status). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/prefetch.h"

#define LINES 64

#include "../common/check.h"

/* 1 / 0: the first "flags" line of /proc/cpuinfo names / lacks the flag; -1: no such line. */
static int kernel_flag(const char *flag)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return -1;
    static char line[16384];
    int found = -1;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "flags", 5) != 0)
            continue;
        found = 0;
        for (char *tok = strtok(strchr(line, ':') ? strchr(line, ':') + 1 : line, " \t\n"); tok;
             tok = strtok(NULL, " \t\n"))
            if (strcmp(tok, flag) == 0)
                found = 1;
        break;
    }
    fclose(f);
    return found;
}

int main(void)
{
#if !defined(__x86_64__) && !defined(__i386__)
    printf("SKIP: not x86: the write prefetch needs no CPUID test here\n");
    return 77;
#else
    const int kernel = kernel_flag("3dnowprefetch");
    if (kernel < 0) {
        printf("SKIP: /proc/cpuinfo has no flags line to check CPUID against\n");
        return 77;
    }
    const int ours = orb_cpu_prefetchw();
    CHECK(ours == kernel, "orb_cpu_prefetchw() says %d, the kernel's flags %s 3dnowprefetch", ours,
          kernel ? "name" : "do not name");
    printf("PREFETCHW: %s (kernel: %s)\n", ours ? "yes" : "no", kernel ? "yes" : "no");
    if (!ours)
        return failures ? 1 : 0;

    /* Lines another process writes while this one takes them for writing: each holds its
     * writer's values afterwards, whatever the hint did to the lines' owners. */
    unsigned char *m = mmap(NULL, (size_t)LINES * 64 * 2, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    CHECK(m != MAP_FAILED, "mmap");
    if (m == MAP_FAILED)
        return 1;
    unsigned char *mine = m, *theirs = m + (size_t)LINES * 64;
    for (int i = 0; i < LINES * 64; i++)
        mine[i] = (unsigned char)(i * 7 + 1);
    pid_t pid = fork();
    if (pid == 0) {
        int bad = 0;
        for (int round = 0; round < 1000; round++)
            for (int i = 0; i < LINES * 64; i++)
                theirs[i] = (unsigned char)(i * 13 + round);
        for (int i = 0; i < LINES * 64; i++)
            bad += theirs[i] != (unsigned char)(i * 13 + 999);
        _exit(bad ? 1 : 0);
    }
    CHECK(pid > 0, "fork");
    for (int round = 0; round < 1000; round++)
        for (int l = 0; l < LINES; l++) {
            orb_prefetch_write(mine + (size_t)l * 64);
            orb_prefetch_write(theirs + (size_t)l * 64);
        }
    int status = 0;
    if (pid > 0) {
        waitpid(pid, &status, 0);
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child's lines changed under the hint (status %d)",
              status);
    }
    int bad = 0;
    for (int i = 0; i < LINES * 64; i++)
        bad += mine[i] != (unsigned char)(i * 7 + 1) || theirs[i] != (unsigned char)(i * 13 + 999);
    CHECK(bad == 0, "%d bytes differ from what their writers wrote", bad);
    munmap(m, (size_t)LINES * 64 * 2);
    if (failures)
        return 1;
    printf("ok: CPUID agrees with the kernel; the hint moved no data\n");
    return 0;
#endif
}
